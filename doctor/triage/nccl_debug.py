"""NCCL's own NCCL_DEBUG=INFO lines about its environment -> nccl.env, and the interfaces
its socket transport uses -> nccl.socket_ifaces:

    node1:12345:12345 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0
    node1:12345:12380 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.
    node1:12345:12380 [0] NCCL INFO NET/Socket : Using [0]bond0:192.168.1.161<0> [1]br-05ab815fa14e:172.19.0.1<0>

Read by doctor/smoke/nccl_log.py's parser (the one `smoke allreduce` reads its ranks'
logs with), one line at a time so that each value keeps its line number; a line without
NCCL's "host:pid:tid [dev] NCCL INFO" prefix is not read. What NCCL says it was told is
what it used, as good as an `env` dump of the same variables. A "NET/Socket : Using" list
is read with or without the prefix, and where a paste breaks it one "[N]iface:addr<0>" a line
(NVIDIA/nccl#697), those lines too.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_MARK = "set by environment to"
_MAX_VALUE = 200
_SOCKET_USING = re.compile(r"NET/Socket ?: Using(?P<list>.*)$")
_ENTRY_LINE = re.compile(r"^\s*\[\d{1,3}\]\S")
_MAX_ENTRY_LINES = 64  # NCCL lists at most MAX_IFS (16) interfaces; a wrapped list is short


def find(lines: Lines) -> list[Fragment]:
    # The parser is imported only for a report with NCCL's lines in it: triage otherwise
    # loads nothing of the smoke tests (tests/test_import_budget.py).
    env: dict[str, str] = {}
    numbers: list[int] = []
    for i, text in enumerate(lines.norm):
        if _MARK not in text:
            continue
        from fwdoctor.smoke import nccl_log

        said = nccl_log.parse(text)["env"]
        for name, value in said.items():
            env.setdefault(name, str(value)[:_MAX_VALUE])  # ranks repeat it: the first says it
            numbers.append(i + 1)
    out = []
    if env:
        frag = Fragment("NCCL_DEBUG", min(numbers), max(numbers))
        frag.add("nccl.env", env)
        out.append(frag)
    sockets = _socket_lists(lines.norm)
    if sockets:
        start, end, ifaces = sockets
        frag = Fragment("NCCL_DEBUG", start, end)
        frag.add("nccl.socket_ifaces", ifaces)
        out.append(frag)
    return out


def _socket_lists(norm: tuple[str, ...]) -> tuple[int, int, list[dict]] | None:
    """(first line, last line, the interfaces) of every "NET/Socket : Using" list, each
    interface once by name."""
    ifaces: dict[str, dict] = {}
    first = last = 0
    for i, text in enumerate(norm):
        found = _SOCKET_USING.search(text) if "NET/Socket" in text else None
        if not found:
            continue
        listing, end = [found["list"]], i
        while end + 1 < len(norm) and end - i < _MAX_ENTRY_LINES and _ENTRY_LINE.match(norm[end + 1]):
            end += 1
            listing.append(norm[end])
        from fwdoctor.smoke import nccl_log

        for iface in nccl_log.socket_interfaces(" ".join(listing)):
            ifaces.setdefault(iface["iface"], iface)
        first, last = first or i + 1, end + 1
    return (first, last, list(ifaces.values())) if ifaces else None
