"""`conda info` (and `mamba info`, `micromamba info`): the virtual packages conda's solver saw.

           virtual packages : __cuda=12.4=0
                              __glibc=2.39=0
                              __linux=6.8.0=0
                 user-agent : conda/24.9.0 ... Linux/5.15.79.1-microsoft-standard-WSL2 ubuntu/20.04.5 glibc/2.31

conda's docs (docs.conda.io, user-guide/tasks/manage-virtual): "__cuda: Maximum version of
CUDA supported by the display driver", "__glibc: Version of glibc supported by the OS".
conda finds __cuda by loading the driver's libcuda and asking cuDriverGetVersion in a child
process (conda.plugins.virtual_packages.cuda), so `__cuda=12.4` is the driver's CUDA, as
nvidia-smi's header is (driver.cuda_version), and says a driver answered; no `__cuda` says
nothing (a CPU host, or a driver libcuda did not load). CONDA_OVERRIDE_CUDA sets __cuda by
hand, so a report that shows it gets no driver facts from here.

Tokens are read wherever they stand ("__cuda=12.4=0", the solver's "__cuda==12.4=0"), so a
paste that wraps, quotes or fences the block still reads; a requirement ("__cuda >=11.8",
"__cuda[version='>=12']") is what a package asks, not what the host has, and is not read.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

# "__cuda=12.4=0" (conda info), "__cuda==12.4=0" (solver messages); a lone "__cuda=12.4" at
# the end of a line is a wrapped paste.
_VIRTUAL = re.compile(r"(?<![\w-])__(?P<name>cuda|glibc|linux)==?(?P<version>\d{1,4}(?:\.\d{1,6}){0,3})(?:=\S{0,40}|$|\s)")
# conda's user-agent: "Linux/5.15.79.1-microsoft-standard-WSL2" is uname's release
_AGENT_KERNEL = re.compile(r"\bLinux/(?P<release>\d{1,3}\.\d{1,3}[\w.+~-]{0,80})")
_AGENT = re.compile(r"^\s*user-agent\s*:")


def find(lines: Lines) -> list[Fragment]:
    if any("CONDA_OVERRIDE_CUDA" in text for text in lines.norm):
        return []  # __cuda was set by hand: not the driver's
    found: dict[str, tuple[int, str]] = {}
    for i, text in enumerate(lines.norm):
        if "__" in text:
            for match in _VIRTUAL.finditer(text):
                found.setdefault(match.group("name"), (i + 1, match.group("version")))
        elif _AGENT.match(text) and "kernel" not in found:
            agent = _AGENT_KERNEL.search(text)
            if agent:
                found["kernel"] = (i + 1, agent.group("release"))
    if not any(name in found for name in ("cuda", "glibc")):
        return []  # a user-agent alone is not a conda info block worth a fragment
    numbers = [n for n, _ in found.values()]
    frag = Fragment("conda info", min(numbers), max(numbers))
    if "cuda" in found:
        line, version = found["cuda"]
        frag.add("driver.cuda_version", version, line)
        frag.add("driver.loaded", True, line)
    if "glibc" in found:
        line, version = found["glibc"]
        frag.add("system.glibc", version, line)
    if "kernel" in found:
        line, release = found["kernel"]
        frag.add("system.kernel", release, line)
    return [frag]
