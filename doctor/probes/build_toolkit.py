"""The CUDA toolkit a source build was asked to use (--cuda): its nvcc, release, the
architectures that nvcc compiles for, and the gcc range its host_config.h accepts.

Shell equivalent:
    ROOT/bin/nvcc --version; ROOT/bin/nvcc --list-gpu-arch
    grep '__GNUC__ [<>]' ROOT/include/crt/host_config.h

`--cuda 12.8` picks, among the toolkits the cuda probe found (cuda.toolkits, the same
discovery `fwdoctor check` uses), the first with an nvcc of that release; `--cuda PATH`
takes the toolkit at PATH (its root, or its bin/nvcc). With --root nothing runs: the
release comes from version.json/version.txt and the arch list is left to the KB.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Iterable

from packaging.version import Version

from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes import cuda as cuda_probe
from fwdoctor.probes.base import Probe, probe
from fwdoctor.versions import major_minor, parse_version

NAME = "build-toolkit"
VERSION_LIKE = re.compile(r"^\d+(\.\d+)+$")

_GNUC_LT = re.compile(r"^\s*#\s*if\s+__GNUC__\s*<\s*(\d+)", re.M)
_ARCH = re.compile(r"\bcompute_(\d+)(\d)[af]?\b")


# ----------------------------------------------------------------------------- parsers
def parse_gpu_arch_list(text: str) -> list[str] | None:
    """`nvcc --list-gpu-arch` (compute_75 ... one per line) -> ["7.5", ...] sorted; None if none."""
    found: list[str] = []
    for m in _ARCH.finditer(text or ""):
        cc = f"{int(m.group(1))}.{m.group(2)}"
        if cc not in found:
            found.append(cc)
    return sorted(found, key=Version) or None


def parse_host_config(text: str) -> tuple[int | None, int | None] | None:
    """crt/host_config.h -> (oldest, newest) gcc major nvcc accepts.

    The newest is the cuda probe's reading (`#if __GNUC__ > 15`); older headers also say
    `#if __GNUC__ < 6`, the oldest. None when the header has no GNU bound at all."""
    text = text or ""
    newest = cuda_probe.parse_host_config(text)
    oldest = [int(x) for x in _GNUC_LT.findall(text)]
    if newest is None and not oldest:
        return None
    return (max(oldest) if oldest else None, int(newest) if newest is not None else None)


def same_release(a: str, b: str) -> bool:
    """Does "12.8" name the toolkit "12.8.93"? Their major.minor agree (False for text that
    is no version)."""
    mine = major_minor(a)
    return mine is not None and mine == major_minor(b)


def _version_key(text: Any) -> Version:
    """A toolkit's version for ordering; one without a readable version sorts first."""
    return parse_version(text) or Version("0")


# ----------------------------------------------------------------------------- reading
class NotAToolkit(Exception):
    """The toolkit named by --cuda cannot be used; the message says why."""


def has_cuda_headers(host: Host, root: str) -> bool:
    return host.is_file(posixpath.join(root, "include", "cuda_runtime.h")) or any(
        host.is_file(posixpath.join(target, "include", "cuda_runtime.h")) for target in host.glob(posixpath.join(root, "targets"), "*")
    )


def release_of(host: Host, root: str, nvcc: str) -> str:
    """nvcc's "release X.Y" on a live host; version.json / version.txt where nothing runs."""
    if host.live:
        result = host.run_version([nvcc, "--version"])
        parsed = cuda_probe.parse_nvcc_version(result.stdout) if result is not None and result.ok else None
        if parsed is None:
            raise NotAToolkit(f"{nvcc} --version: {result.describe_failure() if result is not None and not result.ok else 'no release line'}")
        return parsed[0]
    for name, parse in (("version.json", cuda_probe.parse_version_json), ("version.txt", cuda_probe.parse_version_txt)):
        text = host.read_text(posixpath.join(root, name))
        found = major_minor(parse(text)) if text else None
        if found:
            return found
    raise NotAToolkit(f"{root}: no version.json or version.txt gives its release, and nothing runs inside --root")


def describe(host: Host, root: str, nvcc: str, release: str | None = None) -> dict[str, Any]:
    """The build.toolkit value for the toolkit at `root` (see doctor/FACTS.md)."""
    release = release or release_of(host, root, nvcc)
    archs = None
    if host.live:
        result = host.run_version([nvcc, "--list-gpu-arch"])
        archs = parse_gpu_arch_list(result.stdout) if result is not None and result.ok else None
    header = next((p for p in (posixpath.join(root, d, "crt/host_config.h") for d in cuda_probe.INCLUDE_DIRS) if host.is_file(p)), None)
    bounds = parse_host_config(host.read_text(header) or "") if header else None
    return {
        "root": root,
        "nvcc": nvcc,
        "release": release,
        "gpu_archs": archs,
        "host_gcc_min": bounds[0] if bounds else None,
        "host_gcc_max": bounds[1] if bounds else None,
        "host_config": header,
    }


def at_path(host: Host, spec: str) -> dict[str, Any]:
    """--cuda PATH: a toolkit root, or the nvcc inside one."""
    root = posixpath.dirname(posixpath.dirname(spec)) if host.is_file(spec) else spec.rstrip("/") or "/"
    nvcc = posixpath.join(root, "bin", "nvcc")
    if not host.is_executable(nvcc):
        raise NotAToolkit(f"--cuda {spec}: no executable {nvcc}")
    if not has_cuda_headers(host, root):
        # e.g. /usr/local/bin/nvcc, a wrapper script: its "root" /usr/local is no toolkit
        raise NotAToolkit(f"--cuda {spec}: {root} has no include/cuda_runtime.h; give the toolkit's root (e.g. /usr/local/cuda-12.8)")
    return describe(host, root, nvcc)


def by_version(host: Host, spec: str, toolkits: list[dict[str, Any]]) -> dict[str, Any]:
    """--cuda 12.8: of the discovered toolkits whose nvcc is of that release, the newest
    (12.8.93 before 12.8.61, by version, not by folder name); the first found on a tie."""
    seen: list[str] = []
    matches: list[tuple[dict[str, Any], str]] = []
    for tk in toolkits:
        if not tk.get("nvcc"):
            continue
        release = tk.get("nvcc_release") or major_minor(tk.get("version"))
        if release is None:
            continue
        seen.append(f"{release} at {tk['root']}")
        if same_release(release, spec):
            matches.append((tk, release))
    if matches:
        tk, release = max(matches, key=lambda m: _version_key(m[0].get("version")))
        return describe(host, tk["root"], tk["nvcc"], release)
    found = "; ".join(seen) or "none"
    raise NotAToolkit(f"--cuda {spec}: no such toolkit installed (found: {found}); install it or pass --cuda /path/to/cuda-{spec}")


# ----------------------------------------------------------------------------- the probe
@probe(NAME, provides=("build.toolkit",))
def build_toolkit(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    spec = facts.get("request.build.cuda")
    if not spec:
        yield Fact.unknown("build.toolkit", "no --cuda requested")
        return
    try:
        if "/" in spec:
            value = at_path(host, spec)
        elif not VERSION_LIKE.match(spec):
            raise NotAToolkit(f"--cuda {spec}: expected a version like 12.8 or the path of a toolkit")
        elif not facts.known("cuda.toolkits"):
            raise NotAToolkit(f"--cuda {spec}: the installed toolkits are unknown ({facts.why('cuda.toolkits')})")
        else:
            value = by_version(host, spec, facts["cuda.toolkits"] or [])
    except NotAToolkit as exc:
        yield Fact.unknown("build.toolkit", str(exc))
        return
    yield Fact("build.toolkit", value, source=f"--cuda {spec}: {value['nvcc']}")


PROBES: tuple[Probe, ...] = (build_toolkit,)
