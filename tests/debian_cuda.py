"""A Debian 12 root built from Debian's own CUDA and driver packages, for the slow tests.

    python -m tests.debian_cuda          # build (or reuse) the cached root; prints its path

The packages are downloaded once with `apt-get download` from deb.debian.org (bookworm,
main + contrib + non-free) through a private apt configuration under the cache folder (the
machine's own apt setup is not touched), unpacked with `dpkg-deb -x`, and then given what
dpkg's maintainer scripts would have added:

* /var/lib/dpkg/status: each package's control stanza (`dpkg-deb -f`) with
  "Status: install ok installed", as dpkg writes it;
* the update-alternatives links nvidia-alternative's postinst registers
  (`add_multiarch_slave /usr/lib "" libcuda.so.1 /usr/lib nvidia/current/`): the link
  /usr/lib/x86_64-linux-gnu/libcuda.so.1 -> /etc/alternatives/nvidia--libcuda.so.1-x86_64-linux-gnu
  -> /usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1, the same for libnvidia-ml.so.1,
  and /usr/bin/nvidia-smi -> /etc/alternatives/nvidia--nvidia-smi -> /usr/lib/nvidia/current/nvidia-smi.

Of nvidia-cuda-dev (774 MB) only the headers the probes read are unpacked. A cold cache
takes about a minute here (downloads ~1 GB at ~120 MB/s, then xz decompression of
nvidia-cuda-dev ~35 s). The cache folder is $FWDOCTOR_TEST_CACHE, else
/var/tmp/fwdoctor-debian-cuda; nothing of it is committed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CACHE = Path(os.environ.get("FWDOCTOR_TEST_CACHE") or "/var/tmp/fwdoctor-debian-cuda")
SOURCES = """\
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main contrib non-free
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main contrib non-free
"""
# Pinned: the toolkit and the driver user space the issue was reported with (bookworm
# non-free), and the compilers a `apt install nvidia-cuda-toolkit` on Debian 12 brings
# (gcc 12 is the default; nvidia-cuda-toolkit depends on g++-11 first).
PACKAGES: dict[str, str] = {
    "nvidia-cuda-toolkit": "11.8.89~11.8.0-5~deb12u1",
    "nvidia-cuda-dev": "11.8.89~11.8.0-5~deb12u1",
    "libcudart11.0": "11.8.89~11.8.0-5~deb12u1",
    "nvidia-smi": "535.261.03-1",
    "libcuda1": "535.261.03-1",
    "libnvidia-ml1": "535.261.03-1",
    "nvidia-alternative": "535.261.03-1",
    "gcc": "4:12.2.0-3",
    "gcc-12": "12.2.0-14+deb12u1",
    "gcc-11": "11.3.0-12",
    "g++-11": "11.3.0-12",
}
# Only these members of the big header package (tar member names).
PARTIAL: dict[str, tuple[str, ...]] = {
    "nvidia-cuda-dev": (
        "./usr/include/cuda.h",
        "./usr/include/crt/host_config.h",
        "./usr/include/cuda_runtime_api.h",
        "./usr/include/cuda_runtime.h",
    ),
}
ALTERNATIVES = (
    ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "nvidia--libcuda.so.1-x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1"),
    ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "nvidia--libnvidia-ml.so.1-x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1"),
    ("/usr/bin/nvidia-smi", "nvidia--nvidia-smi", "/usr/lib/nvidia/current/nvidia-smi"),
)
STAMP = "root.complete"


class Unavailable(RuntimeError):
    """The packages cannot be had here (no network to Debian, a pinned version gone)."""


def _run(argv: list[str], timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**os.environ, "LC_ALL": "C"})
    if result.returncode != 0:
        raise Unavailable(f"{' '.join(argv[:3])} ...: {(result.stderr or result.stdout).strip()[-400:]}")
    return result


def _apt_options(cache: Path) -> list[str]:
    apt = cache / "apt"
    return [
        "-o", f"Dir::Etc::SourceList={apt / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/nonexistent",
        "-o", f"Dir::State::Lists={apt / 'lists'}",
        "-o", f"Dir::Cache={apt / 'cache'}",
        "-o", "APT::Sandbox::User=root",
    ]


def download(cache: Path = CACHE) -> dict[str, Path]:
    """{package: its .deb} in cache/debs, downloading what is missing."""
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = {name: next(debs.glob(f"{name}_*.deb"), None) for name in PACKAGES}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
            raise Unavailable("apt-get/dpkg-deb not installed")
        apt = cache / "apt"
        for sub in ("lists/partial", "cache/archives/partial"):
            (apt / sub).mkdir(parents=True, exist_ok=True)
        (apt / "sources.list").write_text(SOURCES)
        _run(["apt-get", *_apt_options(cache), "update"], timeout=300)
        _run(["apt-get", *_apt_options(cache), "download", "--", *(f"{n}={PACKAGES[n]}" for n in missing)], timeout=600, cwd=debs)
        found = {name: next(debs.glob(f"{name}_*.deb"), None) for name in PACKAGES}
    absent = [name for name, path in found.items() if path is None]
    if absent:
        raise Unavailable(f"not downloaded: {', '.join(absent)}")
    return {name: path for name, path in found.items() if path is not None}


def build_root(cache: Path = CACHE) -> Path:
    """The unpacked root (cache/root), built once; raises Unavailable."""
    root = cache / "root"
    if (cache / STAMP).is_file() and root.is_dir():
        return root
    debs = download(cache)
    work = cache / "root.partial"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    stanzas = []
    for name, deb in debs.items():
        if name in PARTIAL:
            tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", "--", str(deb)], stdout=subprocess.PIPE)
            try:
                subprocess.run(["tar", "-x", "-f", "-", "-C", str(work), "--", *PARTIAL[name]], stdin=tar.stdout, check=True, timeout=300)
            finally:
                tar.wait(timeout=300)
        else:
            _run(["dpkg-deb", "-x", "--", str(deb), str(work)], timeout=300)
        control = _run(["dpkg-deb", "-f", "--", str(deb)], timeout=60).stdout.rstrip("\n")
        lines = control.splitlines()
        lines.insert(1, "Status: install ok installed")
        stanzas.append("\n".join(lines))
    status = work / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True, exist_ok=True)
    status.write_text("\n\n".join(stanzas) + "\n")
    for link, name, target in ALTERNATIVES:
        alternative = work / "etc/alternatives" / name
        alternative.parent.mkdir(parents=True, exist_ok=True)
        alternative.symlink_to(target)
        at = work / link.lstrip("/")
        at.parent.mkdir(parents=True, exist_ok=True)
        at.symlink_to(f"/etc/alternatives/{name}")
    shutil.rmtree(root, ignore_errors=True)
    work.rename(root)
    (cache / STAMP).write_text("\n".join(f"{n} {v}" for n, v in PACKAGES.items()) + "\n")
    return root


if __name__ == "__main__":
    try:
        print(build_root())
    except (Unavailable, subprocess.SubprocessError, OSError) as exc:
        print(f"unavailable: {exc}", file=sys.stderr)
        sys.exit(1)
