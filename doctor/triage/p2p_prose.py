"""A report whose NCCL job hangs, and runs once NCCL_P2P_DISABLE=1 is set ->
report.p2p_disable_cures_hang:

    the model "freeze"(stuck) when using 4 or more GPUs ... I confirmed that the model works
    by setting the variable NCCL_P2P_DISABLE =1 .                          (NVIDIA/nccl#631)

Both must be in the report: a line naming NCCL_P2P_DISABLE with a word of it helping
(works, fixed, solved, resolved, helps) that no "not"/"n't" just before negates, and a word of the hang anywhere (hang, hung, freeze,
stuck, deadlock). NCCL's answer to that pair is PCIe ACS (or the IOMMU) redirecting
peer-to-peer traffic (NVIDIA/nccl#631, #199; NCCL's troubleshooting guide), which
`sudo lspci -vvv` settles; an `env` line that merely sets the variable says nothing.

A report whose NCCL job hangs and runs once the IOMMU stops translating ->
report.iommu_change_cures_hang:

    Booting the kernel with `intel_iommu=off` resolved all our problems.    (NVIDIA/nccl#257)
    (basically adding iommu=soft to the kernel command line) ... Everything goes well now.
    I didn't find IOMMU settings in BIOS ... `sudo update-grub` do work.    (NVIDIA/nccl#120)

A line naming an IOMMU switch (iommu=soft|pt|off, intel_iommu=off, amd_iommu=off, VT-d,
"IOMMU") with a word of it working (resolved, solved, fixed, goes well, works now, do work)
that no "not"/"n't" just before negates, and a word of the hang anywhere. NCCL's troubleshooting guide
(section "IOMMU") ties such hangs to an IOMMU translating peer-to-peer traffic, and NVIDIA's
answers on those threads cure them with iommu=soft/pt or the IOMMU off.
"""

from __future__ import annotations

import re
from typing import Callable

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_P2P = re.compile(r"NCCL_P2P_DISABLE")
_CURED = re.compile(r"\b(?:works?|worked|working|fix(?:ed|es)?|solv(?:ed|es)|resolv(?:ed|es)|helps?|helped)\b", re.IGNORECASE)
_HANG = re.compile(r"\b(?:hangs?|hanging|hung|freez(?:e|es|ing)|froze|frozen|stuck|deadlock(?:s|ed)?)\b", re.IGNORECASE)


_IOMMU = re.compile(r"\b(?:(?:intel_|amd_)?iommu\s?=\s?(?:soft|pt|off|0)\b|VT-?d\b|IOMMU\b)", re.IGNORECASE)
_IOMMU_CURED = re.compile(r"\b(?:resolv(?:ed|es)|solv(?:ed|es)|fix(?:ed|es)|goes well|works now|now works|it works|do(?:es)? work|worked|helped)\b",
                          re.IGNORECASE)
# "didnt work" as typed without the apostrophe (ray-project/ray#30333: "Tried `export
# NCCL_IB_DISABLE=1` and `export NCCL_P2P_DISABLE=1`, both didnt work") negates as "didn't" does.
_NEGATED = re.compile(r"n't\b|\b(?:did|does|do|is|was|wo|ca)nt\b|\bnot\b|\bno longer\b|\bnever\b", re.IGNORECASE)
_NEGATION_REACH = 16  # "doesn't work", "did not help": the negation stands just before the word


def _cured(text: str, words: re.Pattern[str] = _IOMMU_CURED) -> bool:
    """A word of it working on the line, not negated just before it."""
    return any(not _NEGATED.search(text[max(0, m.start() - _NEGATION_REACH): m.start()]) for m in words.finditer(text))


def find(lines: Lines) -> list[Fragment]:
    return [*_p2p_disable(lines), *_iommu_change(lines)]


def _iommu_change(lines: Lines) -> list[Fragment]:
    cured = next((i for i, t in enumerate(lines.norm) if _IOMMU.search(t) and _cured(t)), None)
    return _cure_of_hang(lines, cured, "report.iommu_change_cures_hang", lambda i: f"{_IOMMU.search(lines.norm[i]).group(0)!r} helped")


def _p2p_disable(lines: Lines) -> list[Fragment]:
    cured = next((i for i, t in enumerate(lines.norm) if "NCCL_P2P_DISABLE" in t and _P2P.search(t) and _cured(t, _CURED)), None)
    return _cure_of_hang(lines, cured, "report.p2p_disable_cures_hang", lambda i: "NCCL_P2P_DISABLE helped")


def _cure_of_hang(lines: Lines, cured: int | None, key: str, what: Callable[[int], str]) -> list[Fragment]:
    """`key` from the line of a change that cured (`cured`) and the report's first hang line."""
    if cured is None:
        return []
    hang = next((i for i, t in enumerate(lines.norm) if _HANG.search(t)), None)
    if hang is None:
        return []
    frag = Fragment("prose", min(cured, hang) + 1, max(cured, hang) + 1)
    frag.add(key, f"report line {hang + 1}: {_HANG.search(lines.norm[hang]).group(0)!r}; line {cured + 1}: {what(cured)}")
    return [frag]
