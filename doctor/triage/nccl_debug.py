"""NCCL's own NCCL_DEBUG=INFO lines about its environment -> nccl.env, and the interfaces
its socket transport uses -> nccl.socket_ifaces:

    node1:12345:12345 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0
    node1:12345:12380 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.
    node1:12345:12380 [0] NCCL INFO NET/Socket : Using [0]bond0:192.168.1.161<0> [1]br-05ab815fa14e:172.19.0.1<0>

Read by doctor/smoke/nccl_log.py's parser (the one `smoke allreduce` reads its ranks'
logs with), one line at a time so that each value keeps its line number; a line needs
NCCL's "host:pid:tid [dev] NCCL INFO" prefix, or to start with its "NCCL INFO " where the
paste cut the rest off (NVIDIA/nccl#451, #1190): prose that quotes "X set by environment to
Y" is not read. What NCCL says it was told is
what it used, as good as an `env` dump of the same variables. A "NET/Socket : Using" list
is read with or without the prefix, and where a paste breaks it one "[N]iface:addr<0>" a line
(NVIDIA/nccl#697), those lines too.

What a launcher or a log collector writes in front of NCCL's own prefix is skipped: a rank
tag ("[trainer3]:" of NVIDIA/nccl#1837, mpirun --tag-output's "[1,0]<stdout>:", torchrun's
"[rank0]:", Ray's "(WorkerDict pid=29197) "), a timestamp ("[2026-03-13 22:26:02] ",
NVIDIA/nccl#2013; CloudWatch's "2025-05-16T16:39:51.208-07:00 | ", aws/aws-ofi-nccl#889):
the line is read from its "host:pid:tid [dev] NCCL" on.

The NCCL a run loaded -> nccl.loaded, from the version NCCL prints at init ("NCCL version
2.18.5+cuda12.2": the release and the CUDA it was built with; 2.2x with the "NCCL INFO"
prefix) and the one torch appends to its errors ("..., unhandled system error, NCCL version
2.14.3", no CUDA); every distinct one is kept, since a report may compare two. And the GPUs
nccl-tests lists before it runs -> gpus.list:

    #  Rank  0 Group  0 Pid 648288 on a100-4x-dev device  0 [0x00] NVIDIA A100 80GB PCIe
    #   Rank  0 Pid   1688 on    fastmoe device  0 [0x18] GeForce RTX 2080 Ti      (before 2.12)
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment, gpu_entry
from fwdoctor.triage.text import Lines

_MARK = "set by environment to"
_MAX_VALUE = 200
_SOCKET_USING = re.compile(r"NET/Socket ?: Using(?P<list>.*)$")
_ENTRY_LINE = re.compile(r"^\s*\[\d{1,3}\]\S")
_MAX_ENTRY_LINES = 64  # NCCL lists at most MAX_IFS (16) interfaces; a wrapped list is short
# NCCL's "host:pid:tid [dev] NCCL INFO|WARN" wherever it starts on the line. A host starts where
# its run of name characters does (the look-behind): each run is scanned once, not once per
# character of it.
_NCCL_PREFIX = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{1,253}:\d{1,10}:\d{1,10} \[\d{1,4}\] NCCL (?:INFO|WARN) ")


# NCCL 2.x's banner; torch wrote NCCL 2.10.3 as "NCCL version 21.0.3" (a version code
# misread), which the "2." keeps out.
_BANNER = re.compile(r"\bNCCL version (?P<version>2\.\d{1,3}\.\d{1,3})(?:\+cuda(?P<cuda>\d{1,2}\.\d{1,2}))?")
_TESTS_DEVICE = re.compile(r"^#\s{0,8}Rank\s{1,8}\d{1,6}(?:\s{1,8}Group\s{1,8}\d{1,6})?\s{1,8}Pid\s{1,10}\d{1,10}\s{1,8}on\s{1,40}(?P<host>\S{1,253})"
                           r"\s{1,8}device\s{1,8}(?P<dev>\d{1,4})\s{1,8}\[(?P<bus>[^\]\s]{1,20})\]\s{1,8}(?P<name>\S[^\n]{0,100})$")


def nccl_line(text: str) -> str:
    """The line from NCCL's own prefix on, dropping what a launcher or log collector wrote in
    front of it; the line as it is where it has no such prefix."""
    found = _NCCL_PREFIX.search(text) if " NCCL " in text else None
    return text[found.start():] if found else text


def find(lines: Lines) -> list[Fragment]:
    # The parser is imported only for a report with NCCL's lines in it: triage otherwise
    # loads nothing of the smoke tests (tests/test_import_budget.py).
    env: dict[str, str] = {}
    numbers: list[int] = []
    for i, text in enumerate(lines.norm):
        if _MARK not in text:
            continue
        from fwdoctor.smoke import nccl_log

        said = nccl_log.parse(_own(text))["env"]
        for name, value in said.items():
            env.setdefault(name, str(value)[:_MAX_VALUE])  # ranks repeat it: the first says it
            numbers.append(i + 1)
    out = []
    if env:
        frag = Fragment("NCCL_DEBUG", min(numbers), max(numbers))
        frag.add("nccl.env", env)
        out.append(frag)
    out.extend(_loaded(lines.norm))
    out.extend(_tests_devices(lines.norm))
    sockets = _socket_lists(lines.norm)
    if sockets:
        start, end, ifaces = sockets
        frag = Fragment("NCCL_DEBUG", start, end)
        frag.add("nccl.socket_ifaces", ifaces)
        out.append(frag)
    out.extend(_run(lines.norm))
    return out


def _run(norm: tuple[str, ...]) -> list[Fragment]:
    """nccl.run: the log folded as `smoke allreduce` folds its ranks' logs (nccl_log.summarize:
    the network NCCL chose, each peer's transport, the version, the environment it was told),
    so the rules that judge an all-reduce's log judge a pasted one. Only a log that shows what
    NCCL connected: a "Channel NN/C : a[d] -> b[e] via ..." line (src/transport/p2p.cc, shm.cc,
    net.cc; "Ring NN" before 2.4) or "Using network IB|Socket|<plugin>" (src/init.cc).
    A line whose "host:pid:tid [dev]" the paste cut off ("NCCL INFO Using network Socket",
    NVIDIA/nccl#451) is read as NCCL's own all the same."""
    picked = [i for i, text in enumerate(norm) if "NCCL INFO " in text and (" via " in text or "Using network" in text)]
    if not picked:
        return []
    from fwdoctor.smoke import nccl_log

    # Every NCCL line of the report, launcher prefixes dropped: the version, env and IB lines
    # fold in beside the connections.
    summary = nccl_log.summarize(["\n".join(_own(text) for text in norm if "NCCL" in text)])
    if not (summary["peers"] or summary["network"]):
        return []
    frag = Fragment("NCCL_DEBUG", picked[0] + 1, picked[-1] + 1)
    frag.add("nccl.run", summary)
    return [frag]


def _own(text: str) -> str:
    """NCCL's line from its prefix on; one pasted without the prefix gets a stand-in."""
    line = nccl_line(text).strip()
    return f"report:0:0 [0] {line}" if line.startswith(("NCCL INFO ", "NCCL WARN ")) else line


def _loaded(norm: tuple[str, ...]) -> list[Fragment]:
    """nccl.loaded: {"version", "cuda" (None where the line has none), "versions": every
    distinct one, first seen first, each {"version", "cuda", "line"}}."""
    seen: dict[str, dict] = {}
    for i, text in enumerate(norm):
        found = _banner(norm, i)
        if not found:
            continue
        known = seen.get(found["version"])
        if known is None:
            seen[found["version"]] = {"version": found["version"], "cuda": found["cuda"], "line": i + 1}
        elif known["cuda"] is None and found["cuda"]:
            known["cuda"] = found["cuda"]
    if not seen:
        return []
    entries = list(seen.values())
    lines = [e["line"] for e in entries]
    frag = Fragment("NCCL_DEBUG", min(lines), max(lines))
    frag.add("nccl.loaded", {"version": entries[0]["version"], "cuda": entries[0]["cuda"], "versions": entries})
    return [frag]


def _banner(norm: tuple[str, ...], i: int) -> re.Match[str] | None:
    """The banner on line i, or begun on it and wrapped onto the next: torch's long "NCCL error
    in: ..., internal error, NCCL version 2.14.3" is broken by a terminal or a text box at
    whatever word reaches the width, "NCCL" / "version 2.14.3" (mila-iqia/milabench#183) or
    "NCCL version" / "2.14.3". Only a banner that starts on line i counts there."""
    text = norm[i]
    if "NCCL version" in text:
        found = _BANNER.search(text)
        if found:
            return found
    if i + 1 >= len(norm) or not text.endswith(("NCCL", "NCCL version")):
        return None
    found = _BANNER.search(text + " " + norm[i + 1].strip())
    return found if found and found.start() < len(text) else None


def _tests_devices(norm: tuple[str, ...]) -> list[Fragment]:
    """gpus.list from nccl-tests' "# Rank N ... device D [bus] NAME" lines, one GPU per (host, device)."""
    gpus: dict[tuple[str, str], dict] = {}
    first = last = 0
    for i, text in enumerate(norm):
        found = _TESTS_DEVICE.match(text) if "Rank" in text else None
        if not found:
            continue
        key = (found["host"], found["dev"])
        if key not in gpus:
            gpus[key] = gpu_entry(len(gpus), found["name"].strip(), bus_id=found["bus"])
        first, last = first or i + 1, i + 1
    if not gpus:
        return []
    frag = Fragment("nccl-tests", first, last)
    frag.add("gpus.list", list(gpus.values()))
    return [frag]


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
