"""A local conda channel of real package files, for the tests that lock, install and check conda
environments without the internet (issue 15, item 5). READY: the API below is usable.

What is real here
    * the package FORMAT: every package is a real conda package file. `.tar.bz2` files are written
      the way conda_package_handling's CondaTarBZ2.create writes them (info/ first, uid/gid/uname
      anonymized, bz2) but with a fixed member order and mtime, so the same inputs give the same
      bytes (conda_package_handling 2.6 orders members by `hash()` of their extension, which
      PYTHONHASHSEED randomizes, so its .tar.bz2 bytes differ run to run; committed locks need
      byte-identical files for their hashes). `.conda` files are made by
      conda_package_handling.api.create itself (its zip members carry the wall-clock time, so
      they are not byte-stable). Each package has info/index.json, info/paths.json (path,
      path_type, sha256, size_in_bytes; paths_version 1), info/about.json, info/files,
      info/link.json (noarch: python only) -- the files conda and rattler read when installing.
    * the INDEX: <channel>/<subdir>/repodata.json is written by py-rattler's own indexer
      (rattler.index.index_fs, the one `rattler-index` and pixi use), from the package files
      (name, version, build, build_number, depends, constrains, md5, sha256, size, timestamp,
      under "packages" / "packages.conda"); noarch/ always exists, as channels must have it.
    * the SOLVER and INSTALLER that use the channel are the real ones (py-rattler's
      rattler.solve / rattler.install, conda-lock's models), over file:// or http://127.0.0.1.

What is NOT real: the payload. No package holds the real software:
    * python: bin/python3.11 is a symlink to the host's interpreter (default /usr/bin/python3.11,
      Debian 12's 3.11.2, so the package says 3.11.2) plus a pyvenv.cfg at the prefix root, the
      way `python -m venv` makes one, so that interpreter uses the prefix's
      lib/python3.11/site-packages. A real conda python has its own binary and no pyvenv.cfg.
    * pytorch: lib/python3.11/site-packages/torch/ holds only __init__.py/version.py
      (__version__, version.cuda) and a torch-2.5.1.dist-info with INSTALLER "conda", as
      conda-forge's pytorch has; no kernels.
    * libstdcxx-ng: lib/libstdc++.so.6 is a tiny real ELF shared object, compiled here with the
      host's cc and a linker version script, that defines the GLIBCXX_3.4 ... GLIBCXX_3.4.N
      version nodes the matching GCC release defines and nothing else, so a binary that needs a
      newer node fails to load with the real loader error (`GLIBCXX_3.4.30' not found).
    * cudnn, nccl, cuda-cudart: tiny real ELF .so files with the real sonames (libcudnn.so.9,
      libnccl.so.2, libcudart.so.12) in conda-forge's places, and the version headers
      (cudnn_version.h, nccl.h) probes read. cuda-nvcc: bin/nvcc is a shell script that prints
      nvcc's --version text, with conda's layout (bin/nvcc, targets/x86_64-linux/{include,lib}).

Metadata is modelled on conda-forge's (names, version/build string shapes, depends):
    * pytorch 2.5.1 builds on conda-forge: `cuda126_py312h1763f6d_306`, with cuda-version 12.6
      `h7480c83_3` and cudnn 9.3.0.75 `h62a6f1c_2` (prefix-dev/pixi#4392 and
      conda-forge/pytorch-cpu-feedstock#315 environment listings);
      `cuda126_generic_py311_h..._216` / `cuda120_py313h267dc64_203`
      (conda-forge/conda-forge-repodata-patches-feedstock#973).
    * build numbers: CUDA variants get +200 and mkl variants +100 so the solver prefers them
      (conda-forge/pytorch-cpu-feedstock recipe/meta.yaml: "Use a higher build number for the
      CUDA variant"). Our builds follow the brief: `cuda126_py311_h<hash>_300`, `cpu_py311_h<hash>_100`.
    * the `h<hash>` parts are OURS (sha1 of name, version and depends), not conda-forge's; the
      cudnn/nccl builds carry `cuda12` in the string (`cuda12_h<hash>_<n>`, as the nvidia
      channel's `cuda12.6` cudnn builds do) besides the `cuda-version >=12,<13.0a0` dependency
      conda-forge uses to tie them to a CUDA major.
    * GLIBCXX nodes per GCC release: "The GNU C++ Library Manual", section "ABI Policy and
      Guidelines" (GCC 11.1.0: GLIBCXX_3.4.29, 12.1.0: 3.4.30, 13.1.0: 3.4.31, 13.2.0: 3.4.32,
      14.1.0: 3.4.33).

API
    make_package(pkg, dest_dir, fmt=".tar.bz2") -> Path      one package file (Pkg describes it)
    index_channel(channel) -> Path                            (re)write every subdir's repodata.json
    build_channel(dest, pkgs, fmt) -> Path                    packages + index
    build_gpu_channel(dest, libstdcxx=..., fmt=...) -> Path   the ready-made "GPU stack" channel
    gpu_stack_packages(...) -> list[Pkg]                      its package list (to edit in a test)
    standin_pip() -> Pkg                                      a pip with version data only (not in the GPU channel)
    file_url(channel) -> "file:///..."
    serve(channel, port=0) -> context manager yielding "http://127.0.0.1:PORT"
    `python -m tests.condachannel build DEST [--with-pip-standin]` / `serve DIR [--port P] [-- CMD ...]` (Makefile).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence, Union

# Fixed time for members and index.json "timestamp" (ms): the same inputs give the same bytes.
EPOCH_S = 1730419200  # 2024-11-01T00:00:00Z, around pytorch 2.5.1's conda-forge builds
TIMESTAMP_MS = EPOCH_S * 1000
HOST_PYTHON = "/usr/bin/python3.11"
HOST_PYTHON_VERSION = "3.11.2"  # Debian 12's python3.11 (the symlink's target)

# GCC release of conda-forge's libstdcxx-ng -> newest GLIBCXX version node its libstdc++.so.6
# defines ("The GNU C++ Library Manual", "ABI Policy and Guidelines").
GLIBCXX_OF_GCC = {"11.2.0": 29, "12.2.0": 30, "13.2.0": 32, "14.2.0": 33}


@dataclass(frozen=True)
class Symlink:
    target: str


@dataclass(frozen=True)
class Executable:
    data: bytes


Payload = Union[bytes, str, Symlink, Executable]


@dataclass(frozen=True)
class Pkg:
    """One conda package: its index.json fields and the files it installs (path -> content)."""

    name: str
    version: str
    build: str
    build_number: int
    depends: tuple[str, ...] = ()
    constrains: tuple[str, ...] = ()
    subdir: str = "linux-64"
    noarch: str = ""  # "" | "generic" | "python"
    files: Mapping[str, Payload] = field(default_factory=dict)
    license: str = "LicenseRef-test"
    summary: str = ""
    track_features: str = ""

    @property
    def stem(self) -> str:
        return f"{self.name}-{self.version}-{self.build}"

    def index_json(self) -> dict:
        doc: dict = {
            "arch": None if self.subdir == "noarch" else "x86_64",
            "build": self.build,
            "build_number": self.build_number,
            "constrains": list(self.constrains),
            "depends": list(self.depends),
            "license": self.license,
            "name": self.name,
            "platform": None if self.subdir == "noarch" else "linux",
            "subdir": self.subdir,
            "timestamp": TIMESTAMP_MS,
            "version": self.version,
        }
        if not doc["constrains"]:
            del doc["constrains"]
        if self.noarch:
            doc["noarch"] = self.noarch
        if self.track_features:
            doc["track_features"] = self.track_features
        return doc


def build_hash(*parts: object) -> str:
    """`h` + 7 hex digits, the shape of conda-build's variant hash (ours: sha1 of the parts)."""
    return "h" + hashlib.sha1(repr(parts).encode()).hexdigest()[:7]


# --------------------------------------------------------------------------- package files
def _content(payload: Payload) -> bytes:
    if isinstance(payload, Executable):
        return payload.data
    if isinstance(payload, str):
        return payload.encode()
    if isinstance(payload, bytes):
        return payload
    raise TypeError(payload)


def _prefix_tree(pkg: Pkg, root: Path) -> list[str]:
    """Write the package's files and info/ under root; the member list, info/ first."""
    paths = []
    for rel in sorted(pkg.files):
        payload = pkg.files[rel]
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(payload, Symlink):
            os.symlink(payload.target, target)
            paths.append({"_path": rel, "path_type": "softlink"})
            continue
        data = _content(payload)
        target.write_bytes(data)
        target.chmod(0o755 if isinstance(payload, Executable) else 0o644)
        paths.append({"_path": rel, "path_type": "hardlink", "sha256": hashlib.sha256(data).hexdigest(),
                      "size_in_bytes": len(data)})
    info = root / "info"
    info.mkdir()
    about = {"home": "https://example.invalid/fwdoctor-test-channel", "license": pkg.license,
             "summary": pkg.summary or f"fwdoctor test stand-in for conda-forge's {pkg.name} (not the real payload)",
             "description": "Built by fwdoctor's tests/condachannel.py; see its docstring."}
    docs = {
        "index.json": pkg.index_json(),
        "paths.json": {"paths": paths, "paths_version": 1},
        "about.json": about,
    }
    if pkg.noarch == "python":
        docs["link.json"] = {"noarch": {"type": "python"}, "package_metadata_version": 1}
    for name, doc in docs.items():
        (info / name).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    (info / "files").write_text("".join(f"{rel}\n" for rel in sorted(pkg.files)))
    members = sorted(f"info/{p.name}" for p in info.iterdir()) + sorted(pkg.files)
    for rel in members:
        os.utime(root / rel, (EPOCH_S, EPOCH_S), follow_symlinks=False)
    return members


def _anonymized(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = EPOCH_S
    return info


def make_package(pkg: Pkg, dest_dir: Path, fmt: str = ".tar.bz2") -> Path:
    """Write `pkg` as <dest_dir>/<name>-<version>-<build><fmt> (fmt ".tar.bz2" or ".conda")."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    out = dest_dir / f"{pkg.stem}{fmt}"
    with tempfile.TemporaryDirectory(prefix="condapkg-") as tmp:
        root = Path(tmp) / "prefix"
        root.mkdir()
        members = _prefix_tree(pkg, root)
        if fmt == ".tar.bz2":
            buffer = io.BytesIO()
            # mtime-free bz2 stream; tarfile's default format (PAX) as conda_package_handling uses.
            with tarfile.open(fileobj=buffer, mode="w:bz2") as tar:
                for rel in members:
                    tar.add(root / rel, arcname=rel, recursive=False, filter=_anonymized)
            out.write_bytes(buffer.getvalue())
        elif fmt == ".conda":
            from conda_package_handling import api

            if out.exists():
                out.unlink()
            api.create(str(root), members, out.name, out_folder=str(dest_dir))
        else:
            raise ValueError(f"unknown conda package format {fmt!r}")
    return out


def index_channel(channel: Path) -> Path:
    """Write repodata.json in every subdir with py-rattler's indexer (noarch/ made if missing)."""
    from rattler.index import index_fs

    (channel / "noarch").mkdir(parents=True, exist_ok=True)
    for stale in channel.glob("*/repodata*"):
        if stale.is_file():
            stale.unlink()
    result = index_fs(channel, write_zst=False, write_shards=False, force=True)
    if asyncio.iscoroutine(result):
        asyncio.run(result)
    shutil.rmtree(channel / ".tmp", ignore_errors=True)  # the indexer's scratch folder
    for repodata in channel.glob("*/repodata.json"):
        # The indexer stamps each record with the wall clock ("indexed_timestamp"); a fixed
        # one and sorted keys make the index's bytes depend on the packages only.
        doc = json.loads(repodata.read_text())
        for key in ("packages", "packages.conda"):
            for record in doc.get(key, {}).values():
                if "indexed_timestamp" in record:
                    record["indexed_timestamp"] = TIMESTAMP_MS
        repodata.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return channel


def build_channel(dest: Path, pkgs: Sequence[Pkg], fmt: str = ".tar.bz2") -> Path:
    for pkg in pkgs:
        make_package(pkg, dest / pkg.subdir, fmt)
    return index_channel(dest)


def file_url(channel: Path) -> str:
    return channel.resolve().as_uri()


# --------------------------------------------------------------------------- ELF payloads
def _cc() -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("tests/condachannel.py compiles its stand-in .so files with cc; none on PATH (apt-get install gcc)")
    return cc


@functools.lru_cache(maxsize=None)
def shared_object(soname: str, symbol: str, version_nodes: tuple[str, ...] = ()) -> bytes:
    """A real ELF shared object with that soname, exporting `symbol` (an int function), and
    the given symbol-version nodes (each exports one marker function), compiled with cc."""
    with tempfile.TemporaryDirectory(prefix="condaso-") as tmp:
        src, out = Path(tmp) / "lib.c", Path(tmp) / "lib.so"
        body = [f"int {symbol}(void) {{ return 0; }}"]
        script = []
        previous = ""
        for index, node in enumerate(version_nodes):
            marker = f"fwdoctor_{node.replace('.', '_').lower()}_{index}"
            body.append(f"int {marker}(void) {{ return {index}; }}")
            script.append(f"{node} {{ global: {marker}; {'' if previous else symbol + '; '}{'' if previous else 'local: *;'} }} {previous};")
            previous = node
        src.write_text("\n".join(body) + "\n")
        argv = [_cc(), "-shared", "-fPIC", "-O0", "-g0", f"-Wl,-soname,{soname}", "-Wl,--build-id=none", "-o", str(out), str(src)]
        if script:
            (Path(tmp) / "lib.map").write_text("\n".join(script) + "\n")
            argv.insert(1, f"-Wl,--version-script={Path(tmp) / 'lib.map'}")
        subprocess.run(argv, check=True, capture_output=True, timeout=120)
        return out.read_bytes()


def libstdcxx_so(newest: int) -> bytes:
    """libstdc++.so.6 defining GLIBCXX_3.4 .. GLIBCXX_3.4.<newest> (and nothing newer)."""
    nodes = ("GLIBCXX_3.4",) + tuple(f"GLIBCXX_3.4.{n}" for n in range(1, newest + 1))
    return shared_object("libstdc++.so.6", "fwdoctor_libstdcxx_stand_in", nodes)


def needs_glibcxx_so(newest: int, soname: str = "libneeds_glibcxx.so") -> bytes:
    """A real ELF shared object that needs symbol version GLIBCXX_3.4.<newest> from
    libstdc++.so.6 (linked against libstdcxx_so(newest)): loading it where the libstdc++.so.6
    found first is older fails with the loader's "version `GLIBCXX_3.4.<newest>' not found"."""
    marker = f"fwdoctor_glibcxx_3_4_{newest}_{newest}"
    with tempfile.TemporaryDirectory(prefix="condaso-") as tmp:
        (Path(tmp) / "libstdc++.so.6").write_bytes(libstdcxx_so(newest))
        (Path(tmp) / "libstdc++.so").symlink_to("libstdc++.so.6")
        src, out = Path(tmp) / "needs.c", Path(tmp) / "needs.so"
        src.write_text(f"int {marker}(void);\nint fwdoctor_needs_glibcxx(void) {{ return {marker}(); }}\n")
        subprocess.run([_cc(), "-shared", "-fPIC", "-O0", "-g0", f"-Wl,-soname,{soname}", "-Wl,--build-id=none",
                        "-Wl,--no-as-needed", "-o", str(out), str(src), f"-L{tmp}", "-lstdc++"],
                       check=True, capture_output=True, timeout=120)
        return out.read_bytes()


# --------------------------------------------------------------------------- the GPU stack
NVCC_SCRIPT = """#!/bin/sh
# fwdoctor test stand-in for conda-forge's cuda-nvcc (not a compiler); prints nvcc's --version text.
case "$1" in
  --version|-V)
    echo "nvcc: NVIDIA (R) Cuda compiler driver"
    echo "Copyright (c) 2005-2024 NVIDIA Corporation"
    echo "Built on Tue_Oct_29_23:50:19_PDT_2024"
    echo "Cuda compilation tools, release {mm}, V{version}"
    echo "Build cuda_{mm}.r{mm}/compiler.35059454_0"
    exit 0;;
esac
echo "nvcc stand-in from fwdoctor's test channel: cannot compile" >&2
exit 1
"""


def _torch_files(version: str, cuda: str | None, py: str) -> dict[str, Payload]:
    site = f"lib/python{py}/site-packages"
    cuda_text = repr(cuda)
    return {
        f"{site}/torch/__init__.py": (
            '"""fwdoctor test stand-in for conda-forge\'s pytorch: version data only, no kernels."""\n'
            "from . import version\n"
            "__version__ = version.__version__\n"
        ),
        f"{site}/torch/version.py": f"__version__ = {version!r}\ncuda = {cuda_text}\ngit_version = 'fwdoctor-test-stand-in'\n",
        f"{site}/torch-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n",
        f"{site}/torch-{version}.dist-info/INSTALLER": "conda\n",
        f"{site}/torch-{version}.dist-info/RECORD": "",
    }


def gpu_stack_packages(*, python: str = HOST_PYTHON_VERSION, python_target: str = HOST_PYTHON,
                       libstdcxx: Sequence[str] = ("11.2.0", "13.2.0"), cuda: str = "12.6",
                       cuda_patch: str = "12.6.85") -> list[Pkg]:
    """The "GPU stack" channel's packages: python 3.11, python_abi, libgcc-ng, libstdcxx-ng
    (one per GCC release in `libstdcxx`), cuda-version, cuda-cudart, cuda-nvcc, cudnn 9, nccl 2.23,
    pytorch 2.5.1 (a CUDA and a CPU build)."""
    py_mm = ".".join(python.split(".")[:2])
    cp = "cp" + py_mm.replace(".", "")
    cuda_major = cuda.split(".")[0]
    cu = "cuda" + cuda.replace(".", "")
    pkgs: list[Pkg] = []

    for gcc in libstdcxx:
        dep = (f"libgcc-ng {gcc}.*",)
        pkgs.append(Pkg("libgcc-ng", gcc, f"{build_hash('libgcc-ng', gcc)}_16", 16,
                        depends=("_libgcc_mutex 0.1 conda_forge",),
                        summary="fwdoctor test stand-in for conda-forge's libgcc-ng (no payload)"))
        pkgs.append(Pkg("libstdcxx-ng", gcc, f"{build_hash('libstdcxx-ng', gcc)}_16", 16, depends=dep,
                        files={"lib/libstdc++.so.6": Symlink(f"libstdc++.so.6.0.{GLIBCXX_OF_GCC[gcc]}"),
                               f"lib/libstdc++.so.6.0.{GLIBCXX_OF_GCC[gcc]}": libstdcxx_so(GLIBCXX_OF_GCC[gcc])},
                        summary=f"fwdoctor test stand-in for conda-forge's libstdcxx-ng {gcc}: a libstdc++.so.6 "
                                f"with GLIBCXX_3.4 .. GLIBCXX_3.4.{GLIBCXX_OF_GCC[gcc]} only"))
    pkgs.append(Pkg("_libgcc_mutex", "0.1", "conda_forge", 0, subdir="linux-64"))
    gcc_floor = f"libstdcxx-ng >={min(libstdcxx)}"

    pkgs.append(Pkg("python_abi", py_mm, f"5_{cp}", 5, constrains=(f"python {py_mm}.* *_cpython",)))
    pkgs.append(Pkg("python", python, f"{build_hash('python', python)}_0_cpython", 0,
                    depends=("libgcc-ng >=11.2", gcc_floor),
                    files={f"bin/python{py_mm}": Symlink(python_target), "bin/python3": Symlink(f"python{py_mm}"),
                           "bin/python": Symlink(f"python{py_mm}"),
                           # python -m venv's marker: the host interpreter uses this prefix's site-packages.
                           "pyvenv.cfg": f"home = {os.path.dirname(python_target)}\ninclude-system-site-packages = false\nversion = {python}\n",
                           f"lib/python{py_mm}/site-packages/README.txt": "conda site-packages\n"},
                    summary=f"fwdoctor test stand-in for conda-forge's python: bin/python{py_mm} -> {python_target}"))

    # cuda-version: conda-forge's metapackage that ties CUDA packages to one CUDA version.
    pkgs.append(Pkg("cuda-version", cuda, "h7480c83_3", 3, subdir="noarch", noarch="generic",
                    constrains=(f"__cuda >={cuda_major}", f"cudatoolkit {cuda}|{cuda}.*")))
    cuda_pin = f"cuda-version >={cuda},<{int(cuda_major) + 1}.0a0"
    major_pin = f"cuda-version >={cuda_major},<{int(cuda_major) + 1}.0a0"
    cudart_so = f"libcudart.so.{cuda_major}"
    pkgs.append(Pkg("cuda-cudart", cuda_patch.rsplit(".", 1)[0] + ".77", f"{build_hash('cuda-cudart', cuda)}_0", 0,
                    depends=(cuda_pin, "libgcc-ng >=11.2", gcc_floor),
                    files={f"targets/x86_64-linux/lib/{cudart_so}.{cuda_patch.rsplit('.', 1)[0]}.77": shared_object(cudart_so, "cudaRuntimeGetVersion"),
                           f"targets/x86_64-linux/lib/{cudart_so}": Symlink(f"{cudart_so}.{cuda_patch.rsplit('.', 1)[0]}.77"),
                           f"lib/{cudart_so}": Symlink(f"../targets/x86_64-linux/lib/{cudart_so}")}))
    pkgs.append(Pkg("cuda-nvcc", cuda_patch, f"{build_hash('cuda-nvcc', cuda_patch)}_0", 0,
                    depends=(cuda_pin, "cuda-cudart"),
                    files={"bin/nvcc": Executable(NVCC_SCRIPT.format(mm=cuda, version=cuda_patch).encode()),
                           "bin/nvcc.profile": "TOP = $(_HERE_)/..\nINCLUDES += \"-I$(TOP)/targets/x86_64-linux/include\"\n"
                                               "LIBRARIES =+ \"-L$(TOP)/targets/x86_64-linux/lib\"\n",
                           "targets/x86_64-linux/include/cuda_runtime_api.h": f"#define CUDART_VERSION {int(cuda_major) * 1000 + int(cuda.split('.')[1]) * 10}\n",
                           "targets/x86_64-linux/lib/stubs/README.txt": "fwdoctor stand-in\n"}))

    cudnn_v = "9.3.0.75"
    pkgs.append(Pkg("cudnn", cudnn_v, f"cuda{cuda_major}_{build_hash('cudnn', cudnn_v, cuda_major)}_2", 2,
                    depends=(major_pin, "libgcc-ng >=11.2", gcc_floor),
                    files={"lib/libcudnn.so.9.3.0": shared_object("libcudnn.so.9", "cudnnGetVersion"),
                           "lib/libcudnn.so.9": Symlink("libcudnn.so.9.3.0"),
                           "include/cudnn_version.h": "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 3\n#define CUDNN_PATCHLEVEL 0\n"
                                                      "#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n"}))
    nccl_v = "2.23.4.1"
    pkgs.append(Pkg("nccl", nccl_v, f"cuda{cuda_major}_{build_hash('nccl', nccl_v, cuda_major)}_3", 3,
                    depends=(major_pin, "libgcc-ng >=11.2", gcc_floor),
                    files={"lib/libnccl.so.2.23.4": shared_object("libnccl.so.2", "ncclGetVersion"),
                           "lib/libnccl.so.2": Symlink("libnccl.so.2.23.4"),
                           "include/nccl.h": "#define NCCL_MAJOR 2\n#define NCCL_MINOR 23\n#define NCCL_PATCH 4\n#define NCCL_SUFFIX \"\"\n"
                                             "#define NCCL_VERSION_CODE 22304\n"}))

    torch = "2.5.1"
    py_pins = (f"python >={py_mm},<{py_mm.split('.')[0]}.{int(py_mm.split('.')[1]) + 1}.0a0", f"python_abi {py_mm}.* *_{cp}")
    cuda_depends = (*py_pins, "__cuda", cuda_pin, "cuda-cudart", "cudnn >=9.3.0.75,<10.0a0", "nccl >=2.23.4.1,<3.0a0",
                    "libgcc-ng >=11.2", gcc_floor)
    pkgs.append(Pkg("pytorch", torch, f"{cu}_py{cp[2:]}_{build_hash('pytorch', torch, cu, cuda_depends)}_300", 300,
                    depends=cuda_depends, files=_torch_files(torch, cuda, py_mm),
                    summary="fwdoctor test stand-in for conda-forge's pytorch (CUDA build): version data only"))
    cpu_depends = (*py_pins, "libgcc-ng >=11.2", gcc_floor)
    pkgs.append(Pkg("pytorch", torch, f"cpu_py{cp[2:]}_{build_hash('pytorch', torch, 'cpu', cpu_depends)}_100", 100,
                    depends=cpu_depends, files=_torch_files(torch, None, py_mm),
                    summary="fwdoctor test stand-in for conda-forge's pytorch (CPU build): version data only"))
    return pkgs


def standin_pip(version: str = "24.2", py: str = "3.11") -> Pkg:
    """A noarch: python `pip` whose payload is version data only (conda-forge's pip is noarch:
    python with its files under site-packages/; tests that need a working pip make one from
    pip's wheel instead, see tests/test_dockerfile_conda.py pip_package). `python -m pip`
    in an environment with this one fails: it is for locks whose image is never built."""
    files: dict[str, Payload] = {
        "site-packages/pip/__init__.py": f'"""fwdoctor test stand-in for conda-forge\'s pip: version data only."""\n__version__ = {version!r}\n',
        f"site-packages/pip-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: pip\nVersion: {version}\n",
        f"site-packages/pip-{version}.dist-info/INSTALLER": "conda\n",
    }
    return Pkg("pip", version, f"pyh{build_hash('pip', version)[1:]}_0", 0, depends=("python >=3.8",), subdir="noarch",
               noarch="python", files=files, summary="fwdoctor test stand-in for conda-forge's pip (version data only)")


def build_gpu_channel(dest: Path, *, fmt: str = ".tar.bz2", **options) -> Path:
    """The ready-made GPU stack channel at `dest` (gpu_stack_packages(**options)), indexed."""
    return build_channel(dest, gpu_stack_packages(**options), fmt)


# --------------------------------------------------------------------------- serving
class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
        pass


@contextlib.contextmanager
def serve(channel: Path, port: int = 0) -> Iterator[str]:
    """Serve `channel` on 127.0.0.1 (port 0: any free one); yields its URL, no trailing slash."""
    handler = functools.partial(_QuietHandler, directory=str(channel))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    cmd: list[str] = []
    if "--" in args_in:
        at = args_in.index("--")
        args_in, cmd = args_in[:at], args_in[at + 1:]
    parser = argparse.ArgumentParser(prog="python -m tests.condachannel")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="write the GPU stack channel into DEST")
    build.add_argument("dest", type=Path)
    build.add_argument("--format", default=".tar.bz2", choices=(".tar.bz2", ".conda"))
    build.add_argument("--with-pip-standin", action="store_true", help="add standin_pip() (lockfiles/conda-cu126-local's channel has it)")
    serve_p = sub.add_parser("serve", help="serve DIR on 127.0.0.1; with `-- CMD ...`, run CMD, then stop")
    serve_p.add_argument("dir", type=Path)
    serve_p.add_argument("--port", type=int, default=0)
    args = parser.parse_args(args_in)
    if args.command == "build":
        extra = [standin_pip()] if args.with_pip_standin else []
        print(build_channel(args.dest, gpu_stack_packages() + extra, args.format))
        return 0
    with serve(args.dir, args.port) as url:
        print(url, flush=True)
        if cmd:
            return subprocess.run(cmd, timeout=3600).returncode
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
