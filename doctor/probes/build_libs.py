"""The NCCL and cuDNN a source build was asked to use (--nccl, --cudnn).

Each is one of: a version (fetched as the nvidia-<lib>-cu<major> pip wheel for the chosen
toolkit's CUDA major), the path of an install, `bundled` (NCCL: third_party/nccl; cuDNN:
whatever CMake finds), or `none` (cuDNN only). For a path this reads, through the shared
scanner of probes/libscan.py, the header's version, the library file and the CUDA major it
was built for. Shell equivalent for a path:
    grep 'define NCCL_\\(MAJOR\\|MINOR\\|PATCH\\)' DIR/include/nccl.h; ls DIR/lib/libnccl.so*
    strings DIR/lib/libnccl.so.2 | grep 'NCCL version'     # "NCCL version 2.30.7+cuda13.3"
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Iterable

from fwdoctor import libraries, versions
from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes import libscan
from fwdoctor.probes.base import Probe, probe
from fwdoctor.probes.build_toolkit import VERSION_LIKE

NAME = "build-libs"
# Where an install keeps its library, in the order looked at.
LIB_SUBDIRS = ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu", "")
_PATH_CUDA = re.compile(r"cuda[-_]?(\d{2})(?:\.\d)?(?:/|$|\b)")


class BadChoice(Exception):
    """An option that names no usable library; the message says why."""


def find_library(host: Host, root: str, lib: str) -> str | None:
    """The library file of an install: the SONAME file (libnccl.so.2, libcudnn.so.9) the
    loader asks for, else the shortest versioned name, else the bare link."""
    spec = libraries.library(lib)
    for sub in LIB_SUBDIRS:
        folder = posixpath.join(root, sub) if sub else root
        found = sorted(libscan.library_files(host, folder, spec))
        if not found:
            continue
        versioned = [path for path, version in found if version is not None]
        sonames = [path for path, version in found if version is not None and posixpath.basename(path) == spec.soname_file(version)]
        chosen = sonames or versioned
        return min(chosen, key=len) if chosen else found[0][0]
    return None


def cuda_major_of(host: Host, lib: str, root: str, library: str) -> tuple[int | None, str]:
    """The CUDA major a library was built for, and how that is known: NCCL says so inside
    libnccl ("NCCL version 2.30.7+cuda13.3"); a pip wheel in its dist-info name
    (nvidia_cudnn_cu12-...); else a toolkit-looking folder name (cuda-12.4)."""
    spec = libraries.library(lib)
    if spec.embedded:
        found = libscan.scan_embedded(host, library)
        major = versions.major(found[1]) if found else None
        if found and major is not None:
            return major, f"\"NCCL version {found[0]}+cuda{found[1]}\" in {posixpath.basename(library)}"
    if root.endswith("/" + spec.pip_dir):
        # The wheel's folder (site-packages/nvidia/nccl): its dist-info sits in site-packages.
        site = root[: -len(spec.pip_dir) - 1] or "/"
        for name in host.listdir(site):
            match = spec.dist_re.match(name)
            major = libraries.pip_cuda_major(match.group(1)) if match else None
            if major is not None:
                return major, name
    match = _PATH_CUDA.search(library)
    if match:
        return int(match.group(1)), f"the path {library}"
    return None, ""


def at_path(host: Host, lib: str, path: str) -> dict[str, Any]:
    """An existing install: a prefix with include/ and lib/ (or lib64/), a pip layout
    (site-packages/nvidia/<lib>) or a site-packages folder holding one."""
    if not host.is_dir(path):
        raise BadChoice(f"--{lib} {path}: not a directory (expected a version, a path or 'bundled')")
    spec = libraries.library(lib)
    for root in (path, posixpath.join(path, spec.pip_dir)):
        header = next((posixpath.join(d, h) for d in (posixpath.join(root, "include"), root) for h in spec.headers if host.is_file(posixpath.join(d, h))), None)
        library = find_library(host, root, lib)
        if header and library:
            text = libscan.read_text_quiet(host, header) or ""
            major, how = cuda_major_of(host, lib, root, library)
            return {"lib": lib, "kind": "path", "path": path, "version": spec.parse_header(text), "include_dir": posixpath.dirname(header),
                    "library_file": library, "cuda_major": major, "cuda_major_source": how}
    # The pre-flight reports what is missing (build-input-missing).
    return {"lib": lib, "kind": "path", "path": path, "version": None, "include_dir": None, "library_file": None, "cuda_major": None, "cuda_major_source": ""}


def choice(host: Host, facts: Facts, lib: str, spec: str) -> dict[str, Any]:
    word = spec.strip().lower()
    if word == "bundled":
        return {"lib": lib, "kind": "bundled"}
    if word == "none":
        if lib == "nccl":
            raise BadChoice("--nccl none: not supported (USE_NCCL=0 drops torch.distributed's NCCL backend); use bundled, a version or a path")
        return {"lib": lib, "kind": "none"}
    if VERSION_LIKE.match(spec.strip()):
        toolkit = facts.get("build.toolkit") or {}
        major = versions.major(str(toolkit["release"])) if toolkit.get("release") else None
        wheel = libraries.library(lib).wheel_for(major) if major else None
        return {"lib": lib, "kind": "pip", "version": spec.strip(), "package": wheel, "cuda_major": major, "cuda_major_source": wheel or ""}
    return at_path(host, lib, spec)


@probe(NAME, provides=("build.nccl", "build.cudnn"))
def build_libs(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    for lib in ("nccl", "cudnn"):
        key, spec = f"build.{lib}", facts.get(f"request.build.{lib}")
        if spec is None:
            yield Fact.unknown(key, f"no --{lib} requested")
            continue
        try:
            value = choice(host, facts, lib, str(spec))
        except BadChoice as exc:
            yield Fact.unknown(key, str(exc))
            continue
        yield Fact(key, value, source=f"--{lib} {spec}")


PROBES: tuple[Probe, ...] = (build_libs,)
