"""NCCL's own NCCL_DEBUG=INFO lines about its environment -> nccl.env:

    node1:12345:12345 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0
    node1:12345:12380 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.

Read by doctor/smoke/nccl_log.py's parser (the one `smoke allreduce` reads its ranks'
logs with), one line at a time so that each value keeps its line number; a line without
NCCL's "host:pid:tid [dev] NCCL INFO" prefix is not read. What NCCL says it was told is
what it used, as good as an `env` dump of the same variables.
"""

from __future__ import annotations

from fwdoctor.smoke import nccl_log
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_MARK = "set by environment to"
_MAX_VALUE = 200


def find(lines: Lines) -> list[Fragment]:
    env: dict[str, str] = {}
    numbers: list[int] = []
    for i, text in enumerate(lines.norm):
        if _MARK not in text:
            continue
        said = nccl_log.parse(text)["env"]
        for name, value in said.items():
            env.setdefault(name, str(value)[:_MAX_VALUE])  # ranks repeat it: the first says it
            numbers.append(i + 1)
    if not env:
        return []
    frag = Fragment("NCCL_DEBUG", min(numbers), max(numbers))
    frag.add("nccl.env", env)
    return [frag]
