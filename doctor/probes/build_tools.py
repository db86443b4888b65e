"""The programs a source build runs: the C++ compiler nvcc hands host code to, and
cmake, ninja, ccache and git.

The host compiler is $CUDAHOSTCXX when set (CMake and torch's setup.py pass it to nvcc),
else the g++ first on PATH; every other g++-N on PATH is a candidate to replace it.
cmake and ninja are looked up with the target interpreter's bin/ first, where the plan
pip-installs them when the host's are missing or too old. Shell equivalents:
    command -v g++ && g++ -dumpfullversion; ls $(echo $PATH | tr : ' ') | grep '^g++-[0-9]*$'
    PY_BIN/cmake --version; PY_BIN/ninja --version; command -v ccache git

Under --root nothing runs: a g++'s version comes from its name along its symlink chain
(g++ -> g++-12 gives "12"), else the single folder under /usr/lib/gcc/<triplet>/, and
cmake/ninja versions are unknown (None: the plan installs them).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Callable, Iterable

from fwdoctor.host import DEFAULT_PATH, Host
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes import compilers
from fwdoctor.probes.base import Probe, probe

_CMAKE = re.compile(r"^cmake\d* version (\d+\.\d+(?:\.\d+)?\S*)", re.MULTILINE)
_NINJA = re.compile(r"^(\d+\.\d+(?:\.\d+)?\S*)\s*$")
_GXX_NAME = re.compile(r"^(?:[\w.-]+-)?g\+\+-(\d+(?:\.\d+)*)$")
_GXX_N = re.compile(r"^g\+\+-\d+$")


def gxx_version(host: Host, path: str, failures: list[ProbeFailure], default: bool = False) -> str | None:
    """The version of the g++ at `path` (`-dumpfullversion`, the compilers probe's reading);
    under --root from its name, or for the default one the only /usr/lib/gcc version."""
    if host.live:
        return compilers.gcc_version(host, path, failures)[0]
    for hop in compilers.link_chain(host, path):
        match = _GXX_NAME.match(posixpath.basename(hop))
        if match:
            return match.group(1)
    if default:
        versions = compilers.libgcc_versions(host)
        if len(versions) == 1:
            return versions[0]
    return None


@probe("build-compilers", provides=("build.host_cxx", "build.gxx_installed"))
def build_compilers(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    failures: list[ProbeFailure] = []
    override = host.env.get("CUDAHOSTCXX") or None
    chosen = override or host.which("g++")
    seen: set[str] = set()
    if chosen is None:
        host_cxx: dict[str, Any] | None = None
    else:
        host_cxx = {"path": chosen, "version": gxx_version(host, chosen, failures, default=not override), "from": "CUDAHOSTCXX" if override else "g++ on PATH"}
        seen.add(host.resolve(chosen))
    others: list[dict[str, Any]] = []
    for folder in host.path_list("PATH"):
        for candidate in host.glob(folder, "g++-[0-9]*"):
            if not _GXX_N.match(posixpath.basename(candidate)) or not host.is_executable(candidate):
                continue
            real = host.resolve(candidate)
            if real in seen:
                continue
            seen.add(real)
            others.append({"path": candidate, "version": gxx_version(host, candidate, failures)})
    yield from failures
    yield Fact("build.host_cxx", host_cxx, source="$CUDAHOSTCXX" if override else ("g++ on PATH" if chosen else "no g++ on PATH"))
    yield Fact("build.gxx_installed", others, source="g++-N on PATH")


def parse_cmake_version(text: str) -> str | None:
    """"3.25.1" from `cmake --version` ("cmake version 3.25.1"; cmake3 on RHEL)."""
    match = _CMAKE.search(text)
    return match.group(1) if match else None


def parse_ninja_version(text: str) -> str | None:
    """"1.11.1" from `ninja --version` (the version alone on a line)."""
    match = _NINJA.match(text.strip())
    return match.group(1) if match else None


def tool(host: Host, name: str, search: str, parse: Callable[[str], str | None], failures: list[ProbeFailure]) -> dict[str, Any] | None:
    """{"path", "version"} of the first `name` on `search`; None when there is none. The
    version is None when it cannot be asked (--root) or answered (a hang, an error, text
    that is no version): the plan then installs its own, and `failures` says why."""
    path = host.which(name, path=search)
    if path is None:
        return None
    result = host.run_version([path, "--version"])
    version = None
    if result is not None and not result.ok:
        failures.append(ProbeFailure("build-programs", result.describe_failure()))
    elif result is not None:
        version = parse(result.stdout)
        if version is None:
            first = (result.stdout.strip().splitlines() or [""])[0]
            failures.append(ProbeFailure("build-programs", f"{path} --version: unparseable output: {first[:200]!r}"))
    return {"path": path, "version": version}


@probe("build-programs", provides=("build.cmake", "build.ninja", "build.ccache", "build.git", "build.path"))
def build_programs(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    path = host.env.get("PATH") or DEFAULT_PATH
    python = (facts.get("build.python") or {}).get("executable") or facts.get("request.build.python") or ""
    search = ":".join(filter(None, [posixpath.dirname(python) if "/" in python else "", path]))
    failures: list[ProbeFailure] = []
    yield Fact("build.cmake", tool(host, "cmake", search, parse_cmake_version, failures), source=f"cmake on {search}")
    yield Fact("build.ninja", tool(host, "ninja", search, parse_ninja_version, failures), source=f"ninja on {search}")
    yield from failures
    yield Fact("build.ccache", host.which("ccache", path=path), source="ccache on PATH")
    yield Fact("build.git", host.which("git", path=path), source="git on PATH")
    yield Fact("build.path", path, source="PATH")


PROBES: tuple[Probe, ...] = (build_compilers, build_programs)
