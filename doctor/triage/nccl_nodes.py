"""The NCCL release each host of a report loaded, read from NCCL_DEBUG=INFO logs pasted from
several nodes -> nccl.node_versions (issue 26, the nccl-fabric group):

    node-1:525765:525765 [0] NCCL INFO cudaDriverVersion 12000
    NCCL version 2.14.3+cuda11.7
    ...
    node-4:101707:101707 [0] NCCL INFO cudaDriverVersion 12000
    NCCL version 2.19.3+cuda12.3                                       (NVIDIA/nccl#1267)

NCCL prints its banner once per process, with its "host:pid:tid [dev] NCCL INFO" prefix from
2.2x and bare before; a bare banner belongs to the host of the nearest prefixed NCCL line
above it in the same paste (a code fence ends a paste), else just below it. Only a host
whose banners all name one release is read; two hosts with two releases are what NCCL
refuses: every rank sends its version at init and a rank that sees another fails with
"Mismatched NCCL version detected" (NVIDIA/nccl src/init.cc), or, where the wire format
differs further, earlier and in other words (NVIDIA/nccl#1267: "ncclSocketInit: connecting to
address with family 0", fixed by one nvidia-nccl-cu12 on all machines).

The regular check of this is `fwdoctor fleet report` (fwdoctor.fleet.rules' nccl_differs,
from every node's facts); this one reads what a report shows of it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, Rule, rule
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.nccl_debug import nccl_line
from fwdoctor.triage.text import Lines

if TYPE_CHECKING:
    from fwdoctor.kb import KB

_BANNER = re.compile(r"\bNCCL version (?P<version>2\.\d{1,3}\.\d{1,3})(?:\+cuda(?P<cuda>\d{1,2}\.\d{1,2}))?")
_HOST = re.compile(r"^(?P<host>[A-Za-z0-9_.-]{1,253}):\d{1,10}:\d{1,10} \[\d{1,4}\] NCCL (?:INFO|WARN) ")
_FENCE = re.compile(r"^\s*(?:>\s?)*(?:```|~~~)")
_REACH_UP = 40  # a bare banner follows its process's first INFO lines (NCCL_DEBUG, plugin, cudaDriverVersion)
_REACH_DOWN = 4
_MAX_HOSTS = 64


def _host(text: str) -> str | None:
    if " NCCL " not in text:
        return None
    found = _HOST.match(nccl_line(text).strip())
    return found["host"] if found else None


def _banner_host(lines: Lines, i: int) -> str | None:
    """The host the banner on line i (0-based) belongs to, or None where no NCCL line of the
    same paste says it."""
    own = _host(lines.norm[i])
    if own:
        return own
    for step, reach in ((-1, _REACH_UP), (1, _REACH_DOWN)):
        j = i + step
        while 0 <= j < len(lines.norm) and abs(j - i) <= reach and not _FENCE.match(lines.raw[j]):
            host = _host(lines.norm[j])
            if host:
                return host
            j += step
    return None


def find(lines: Lines) -> list[Fragment]:
    """nccl.node_versions: [{"host", "version", "cuda", "line"}], one per host whose banners
    all name one release, first seen first; only where two hosts are shown."""
    hosts: dict[str, dict[str, Any]] = {}
    mixed: set[str] = set()
    for i, text in enumerate(lines.norm):
        if "NCCL version" not in text:
            continue
        found = _BANNER.search(text)
        host = _banner_host(lines, i) if found else None
        if not found or not host:
            continue
        known = hosts.get(host)
        if known is None and len(hosts) < _MAX_HOSTS:
            hosts[host] = {"host": host, "version": found["version"], "cuda": found["cuda"], "line": i + 1}
        elif known is not None and known["version"] != found["version"]:
            mixed.add(host)  # one host, two releases: a before/after, not a node of the job
    nodes = [h for name, h in hosts.items() if name not in mixed]
    if len(nodes) < 2:
        return []
    frag = Fragment("NCCL_DEBUG", min(n["line"] for n in nodes), max(n["line"] for n in nodes))
    frag.add("nccl.node_versions", nodes)
    return [frag]


@rule("fleet-nccl-differs", needs=("nccl.node_versions",))
def nccl_differs_across_hosts(facts: Facts, kb: KB) -> Hit | None:
    """The NCCL_DEBUG=INFO logs of two or more hosts show different NCCL releases (their
    "NCCL version 2.x.y" banners; see fleet-nccl-differs). A warning: the report shows the
    releases, not that those hosts ran one job; NCCL refuses a communicator across releases."""
    nodes = [n for n in facts.get("nccl.node_versions") or [] if isinstance(n, dict)]
    releases = {n["version"] for n in nodes}
    if len(releases) < 2:
        return None
    shown = "; ".join(f"{n['host']}: {n['version']}{'+cuda' + n['cuda'] if n.get('cuda') else ''} (report line {n['line']})" for n in nodes[:8])
    return Hit(
        f"the NCCL logs of {len(nodes)} hosts show {len(releases)} NCCL releases ({shown}): ranks of one job need one NCCL "
        "release, and NCCL refuses a communicator across releases (\"Mismatched NCCL version detected\") or fails earlier in "
        "other words; the report does not show that these hosts ran one job",
        evidence={"nccl.node_versions": nodes},
        fix=FixRef(commands=("python -m pip freeze 2>/dev/null | grep -i nccl; ldconfig -p | grep libnccl   # on every node: the NCCLs installed",
                             "python -c 'import torch; print(torch.cuda.nccl.version())'   # on every node: the NCCL torch loads",
                             "python -m pip install 'nvidia-nccl-cu12==<one version>'   # the same on every node (or one image everywhere)"),
                   note="fwdoctor fleet collect / fleet report compares every node's NCCL at once"),
        severity=Severity.WARNING,
    )


RULES: tuple[Rule, ...] = (nccl_differs_across_hosts,)
