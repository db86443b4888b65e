"""Host C compilers nvcc may use: the default gcc (the one on PATH, which nvcc runs unless
told otherwise with -ccbin) and every other gcc-N installed.

Shell equivalents:
    command -v gcc; gcc -dumpfullversion; ls /usr/bin/gcc-*; ls /usr/lib/gcc/*/

With --root nothing runs: a gcc's version comes from its name along its symlink chain
(/usr/bin/gcc -> gcc-12 -> x86_64-linux-gnu-gcc-12 gives "12"), else from the single
folder under /usr/lib/gcc/<triplet>/ (its name is the version gcc was built as).
"""

from __future__ import annotations

import posixpath
import re
from typing import Iterable

from packaging.version import Version

from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, probe

NAME = "compilers"
LIBGCC_DIRS = ("/usr/lib/gcc", "/usr/lib64/gcc")

_NAME_VERSION = re.compile(r"^(?:[\w.-]+-)?gcc-(\d+(?:\.\d+)*)$")
_DUMP = re.compile(r"^\s*(\d+(?:\.\d+)*)\s*$")


# ----------------------------------------------------------------------------- parsers
def version_from_name(name: str) -> str | None:
    """"gcc-12" / "x86_64-linux-gnu-gcc-12" -> "12"; "gcc" / "gcc-ar-12" -> None."""
    match = _NAME_VERSION.match(posixpath.basename(name))
    return match.group(1) if match else None


def parse_dumpversion(text: str) -> str | None:
    """`gcc -dumpfullversion` -> "12.2.0" (the only line, a bare version)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        return None
    match = _DUMP.match(lines[0])
    return match.group(1) if match else None


# ----------------------------------------------------------------------------- reading
def link_chain(host: Host, path: str, hops: int = 10) -> list[str]:
    """`path` and each symlink target after it (host-view), up to the real file."""
    chain = [path]
    current = path
    for _ in range(hops):
        target = host.readlink(current)
        if target is None:
            break
        current = posixpath.normpath(target if target.startswith("/") else posixpath.join(posixpath.dirname(current), target))
        chain.append(current)
    return chain


def libgcc_versions(host: Host) -> list[str]:
    """Version folders under /usr/lib/gcc/<triplet>/ ("12", "4.8.5")."""
    found = []
    for base in LIBGCC_DIRS:
        for triplet in host.listdir(base):
            for name in host.listdir(posixpath.join(base, triplet)):
                if re.fullmatch(r"\d+(?:\.\d+)*", name) and host.is_dir(posixpath.join(base, triplet, name)):
                    found.append(name)
    return sorted(set(found), key=Version)


def gcc_version(host: Host, path: str, failures: list[ProbeFailure], default: bool = False) -> tuple[str | None, str]:
    """(version, where it came from) for the gcc at `path`; (None, why) if unknown."""
    if host.live:
        for flag in ("-dumpfullversion", "-dumpversion"):  # -dumpfullversion: gcc >= 7
            result = host.run([path, flag])
            if result is None:
                break
            if result.ok:
                version = parse_dumpversion(result.stdout)
                if version:
                    return version, f"{path} {flag}"
            elif result.timed_out or result.error:
                failures.append(ProbeFailure(NAME, result.describe_failure()))
                break
        return None, f"{path} -dumpfullversion gave no version"
    for hop in link_chain(host, path):
        version = version_from_name(hop)
        if version:
            return version, f"{path} -> {hop}" if hop != path else path
    if default:
        versions = libgcc_versions(host)
        if len(versions) == 1:
            return versions[0], f"the only folder under /usr/lib/gcc/*/ ({versions[0]})"
        if versions:
            return None, f"{path} names no version and /usr/lib/gcc/*/ holds several ({', '.join(versions)})"
    return None, f"{path} names no version and nothing runs inside --root"


# ----------------------------------------------------------------------------- the probe
@probe(NAME, provides=("compilers.gcc_default", "compilers.gcc_installed"))
def compilers_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    failures: list[ProbeFailure] = []
    default_path = host.which("gcc")
    default_version: str | None = None
    if default_path is None:
        default_fact = Fact("compilers.gcc_default", None, source="no gcc on PATH")
        default_real = None
    else:
        version, where = gcc_version(host, default_path, failures, default=True)
        default_real, default_version = host.resolve(default_path), version
        if version is None:
            default_fact = Fact.unknown("compilers.gcc_default", f"found {default_path}, but: {where}")
        else:
            default_fact = Fact("compilers.gcc_default", {"path": default_path, "version": version}, source=where)

    installed: list[dict] = []
    seen: set[str] = set()
    for directory in host.path_list("PATH"):
        for path in host.glob(directory, "gcc-[0-9]*"):
            if version_from_name(path) is None or not host.is_executable(path):
                continue
            real = host.resolve(path)
            if real in seen:
                continue
            seen.add(real)
            if host.live and real == default_real:
                # /usr/bin/gcc-12 is the file /usr/bin/gcc runs: its -dumpfullversion was
                # asked already (a failure, too, is already reported).
                version = default_version
            else:
                version, _ = gcc_version(host, path, failures)
            installed.append({"path": path, "version": version or version_from_name(path)})
    if default_fact.is_known and default_fact.value and default_real not in seen:
        installed.insert(0, dict(default_fact.value))
    yield from failures
    yield default_fact
    yield Fact("compilers.gcc_installed", installed, source="gcc-N on PATH" + (" and the default gcc" if default_path else ""))


PROBES: tuple[Probe, ...] = (compilers_probe,)
