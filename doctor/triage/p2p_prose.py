"""A report whose NCCL job hangs, and runs once NCCL_P2P_DISABLE=1 is set ->
report.p2p_disable_cures_hang:

    the model "freeze"(stuck) when using 4 or more GPUs ... I confirmed that the model works
    by setting the variable NCCL_P2P_DISABLE =1 .                          (NVIDIA/nccl#631)

Both must be in the report: a line naming NCCL_P2P_DISABLE with a word of it helping
(works, fixed, solved, resolved, helps), and a word of the hang anywhere (hang, hung, freeze,
stuck, deadlock). NCCL's answer to that pair is PCIe ACS (or the IOMMU) redirecting
peer-to-peer traffic (NVIDIA/nccl#631, #199; NCCL's troubleshooting guide), which
`sudo lspci -vvv` settles; an `env` line that merely sets the variable says nothing.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_P2P = re.compile(r"NCCL_P2P_DISABLE")
_CURED = re.compile(r"\b(?:works?|worked|working|fix(?:ed|es)?|solv(?:ed|es)|resolv(?:ed|es)|helps?|helped)\b", re.IGNORECASE)
_HANG = re.compile(r"\b(?:hangs?|hanging|hung|freez(?:e|es|ing)|froze|frozen|stuck|deadlock(?:s|ed)?)\b", re.IGNORECASE)


def find(lines: Lines) -> list[Fragment]:
    cured = next((i for i, t in enumerate(lines.norm) if "NCCL_P2P_DISABLE" in t and _P2P.search(t) and _CURED.search(t)), None)
    if cured is None:
        return []
    hang = next((i for i, t in enumerate(lines.norm) if _HANG.search(t)), None)
    if hang is None:
        return []
    start, end = min(cured, hang) + 1, max(cured, hang) + 1
    frag = Fragment("prose", start, end)
    frag.add("report.p2p_disable_cures_hang", f"report line {hang + 1}: {_HANG.search(lines.norm[hang]).group(0)!r}; "
                                              f"line {cured + 1}: NCCL_P2P_DISABLE helped")
    return [frag]
