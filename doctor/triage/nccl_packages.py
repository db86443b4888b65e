"""The NCCL packages a report lists as installed -> nccl.packages: NVIDIA's libnccl2 /
libnccl-dev builds carry the CUDA they were built for in their version ("2.8.4-1+cuda11.2"):

    libnccl2/unknown,now 2.8.4-1+cuda11.2 amd64 [installed]                 (apt list --installed)
    ii  libnccl2    2.22.3-1+cuda12.2    amd64    NVIDIA Collective ...     (dpkg -l)

(NVIDIA/nccl#473's `apt list`; karpathy/llm.c#742's `dpkg -l | grep libnccl`.) Only what is
installed counts: `apt list` rows marked "[installed...]" and dpkg's "ii"/"hi" rows; an
`apt list` row without the mark is a version the repository offers, and an
`apt-get install libnccl2=2.9.8-1+cuda10.2` command is what someone ran or means to run (often
the fix), so neither is read. Repository packages ("nccl-local-repo-ubuntu2204-2.22.3-cuda12.2",
"nccl-repo-...") hold no library and are not read either.

Read by fwdoctor.triage.nccl_fabric (nccl-cuda-mismatch) where the report shows no NCCL
banner with its CUDA: an installed package is what programs built against the system NCCL
(nccl-tests, Caffe, Horovod, ...) load, not what a torch wheel loads (it brings its own).
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_NAME = r"(?P<package>libnccl(?:2|-dev|-static))"
_VERSION = r"(?P<deb>(?P<version>\d{1,2}\.\d{1,3}\.\d{1,3})-\d{1,3}\+cuda(?P<cuda>\d{1,2}\.\d{1,2}))"
# apt list: "name/suite[,suite...] version arch [installed,automatic]"; "now" is the suite of
# a package installed from no configured repository.
_APT_LIST = re.compile(r"^\s*" + _NAME + r"/[\w.,-]{0,80}\s{1,8}" + _VERSION + r"\s{1,8}[\w-]{1,16}\s{1,8}\[installed\b")
# dpkg -l: "ii  name[:arch]  version  arch  description"; the arch suffix may be cut short.
_DPKG = re.compile(r"^\s*(?:ii|hi)\s{1,40}" + _NAME + r"(?::\w{1,16})?\s{1,80}" + _VERSION + r"\s")


def find(lines: Lines) -> list[Fragment]:
    packages: list[dict] = []
    for i, text in enumerate(lines.norm):
        if "libnccl" not in text:
            continue
        found = _APT_LIST.match(text) or _DPKG.match(text)
        if not found:
            continue
        via = "apt list" if found.re is _APT_LIST else "dpkg -l"
        entry = {"package": found["package"], "version": found["version"], "cuda": found["cuda"], "deb_version": found["deb"],
                 "line": i + 1, "via": via}
        if not any(p["package"] == entry["package"] and p["version"] == entry["version"] and p["cuda"] == entry["cuda"] for p in packages):
            packages.append(entry)
    if not packages:
        return []
    frag = Fragment("dpkg/rpm", packages[0]["line"], packages[-1]["line"])
    frag.add("nccl.packages", packages)
    return [frag]
