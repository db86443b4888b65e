"""Compile the stand-in libnvidia-ml (nvml_standin.c) with the host's C compiler.

The library goes to a cache folder keyed by the source's hash (never into the repository):
$FWDOCTOR_GPUHOST_CACHE, else $XDG_CACHE_HOME/fwdoctor-gpuhost, else ~/.cache/fwdoctor-gpuhost.
A second build of the same source is a file lookup.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).resolve().with_name("nvml_standin.c")
SONAME = "libnvidia-ml.so.1"
COMPILE_TIMEOUT_S = 120.0


class BuildError(RuntimeError):
    """The C compiler is missing or rejected the stand-in."""


def compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")


def cache_dir() -> Path:
    if os.environ.get("FWDOCTOR_GPUHOST_CACHE"):
        return Path(os.environ["FWDOCTOR_GPUHOST_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "fwdoctor-gpuhost"


def build_library(cache: Path | None = None) -> Path:
    """The compiled stand-in (built now if this source has not been built before)."""
    cc = compiler()
    if cc is None:
        raise BuildError("no C compiler (gcc or cc) on PATH to build the NVML stand-in")
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source + cc.encode()).hexdigest()[:16]
    folder = (cache or cache_dir()) / digest
    target = folder / "libnvidia-ml.so"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".build-{os.getpid()}.so"  # parallel builds never see a half-written file
    argv = [cc, "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", f"-Wl,-soname,{SONAME}", "-o", str(partial), str(SOURCE)]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"{' '.join(argv)}: {exc}") from None
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        raise BuildError(f"{' '.join(argv)} failed:\n{result.stderr.strip()}")
    os.replace(partial, target)
    return target
