"""Rebuilds tests/roots/libs-*/ (the output is committed; run by hand after changing a case).

Reads the real cu13 wheels of a torch 2.14.1 venv (its site-packages: the first argument,
default the repository's .venv from `make test-venv`) for headers, METADATA and
torch/version.py, and tests/data/libs for the rest.
Usage: python3 tests/data/libs/make_roots.py [SITE_PACKAGES]
"""
import os, shutil, sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
ROOTS = REPO / "tests" / "roots"
DATA = REPO / "tests" / "data" / "libs"
SRC = Path(sys.argv[1]) if len(sys.argv) > 1 else next((REPO / ".venv" / "lib").glob("python3*/site-packages"))
SP = "opt/venv/lib/python3.11/site-packages"

def w(root, rel, content, mode="w"):
    p = ROOTS / root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)

def link(root, rel, target):
    p = ROOTS / root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.is_symlink() or p.exists():
        p.unlink()
    os.symlink(target, p)

def nccl_lib(version, cuda):
    # stand-in: the real embedded string between NUL bytes, as in .rodata
    return b"\x7fELF stand-in for libnccl (fwdoctor test fixture)\x00%s\x00NCCL version %s+cuda%s\x00" % (b"\x00" * 64, version.encode(), cuda.encode())

def metadata_head(dist, lines=3):
    return "".join((SRC / dist / "METADATA").read_text().splitlines(True)[:lines])

def venv(root):
    # torch 2.14.1+cu130 as the wheel lays it out: real version.py, real METADATA header + Requires-Dist lines
    w(root, "opt/venv/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.7\n")
    w(root, "usr/bin/python3.11", "#!/bin/sh\n# stand-in for the interpreter (fwdoctor test fixture); nothing runs under --root\n")
    os.chmod(ROOTS / root / "usr/bin/python3.11", 0o755)
    link(root, "opt/venv/bin/python", "/usr/bin/python3.11")
    link(root, "opt/venv/bin/python3", "python")
    w(root, f"{SP}/torch/__init__.py", "")
    w(root, f"{SP}/torch/version.py", (SRC / "torch/version.py").read_text())
    meta = (SRC / "torch-2.14.1.dist-info/METADATA").read_text().splitlines(True)
    w(root, f"{SP}/torch-2.14.1.dist-info/METADATA", "".join(meta[:3] + [l for l in meta if l.startswith("Requires-Dist:")]))
    # the cu13 cuDNN and NCCL wheels torch pins
    w(root, f"{SP}/nvidia_cudnn_cu13-9.24.0.43.dist-info/METADATA", metadata_head("nvidia_cudnn_cu13-9.24.0.43.dist-info"))
    w(root, f"{SP}/nvidia/cudnn/include/cudnn_version.h", (SRC / "nvidia/cudnn/include/cudnn_version.h").read_text())
    w(root, f"{SP}/nvidia/cudnn/lib/libcudnn.so.9", b"\x7fELF stand-in for libcudnn.so.9 (fwdoctor test fixture)\n")
    w(root, f"{SP}/nvidia_nccl_cu13-2.30.7.dist-info/METADATA", metadata_head("nvidia_nccl_cu13-2.30.7.dist-info"))
    w(root, f"{SP}/nvidia/nccl/include/nccl.h", (DATA / "nccl-2.30.7.h").read_text())
    w(root, f"{SP}/nvidia/nccl/lib/libnccl.so.2", nccl_lib("2.30.7", "13.3"))

def env(root, extra=""):
    w(root, "fixture.env", "# fwdoctor test fixture: the environment of tests/roots/%s\nVIRTUAL_ENV=/opt/venv\nPATH=/opt/venv/bin:/usr/bin:/bin\n%s" % (root, extra))

def readme(root, text):
    w(root, "README.fixture", text.strip() + "\n\nLayout copied from a real torch 2.14.1+cu130 venv (nvidia-cudnn-cu13 9.24.0.43, nvidia-nccl-cu13 2.30.7); headers and torch/version.py are verbatim, libraries are stand-ins holding the real version strings (tests/data/libs/README.md).\n")

for d in ROOTS.glob("libs-*"):
    shutil.rmtree(d) if d.is_dir() else d.unlink()

# 1. clean: what torch installs and nothing else (near-miss for every id)
r = "libs-clean"; venv(r); env(r); readme(r, "torch with its own cuDNN and NCCL wheels only: no cuDNN/NCCL finding.")

# 2. a stale cu12 cuDNN dist-info beside the cu13 one torch pins
r = "libs-cudnn-cu12-beside-cu13"; venv(r); env(r)
w(r, f"{SP}/nvidia_cudnn_cu12-9.10.2.21.dist-info/METADATA", "Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.10.2.21\n")
readme(r, "nvidia-cudnn-cu12 9.10.2.21 left beside torch cu130's nvidia-cudnn-cu13: cudnn-cuda-mismatch.")

# 3. LD_LIBRARY_PATH with a toolkit-copied cuDNN 9.1.0 ahead of torch's 9.24.0
r = "libs-cudnn-shadowed"; venv(r)
w(r, "usr/local/cuda-12.4/lib64/libcudnn.so.9.1.0", b"\x7fELF stand-in for libcudnn.so.9.1.0 (fwdoctor test fixture)\n")
link(r, "usr/local/cuda-12.4/lib64/libcudnn.so.9", "libcudnn.so.9.1.0")
env(r, "LD_LIBRARY_PATH=/usr/local/cuda-12.4/lib64\n")
readme(r, "LD_LIBRARY_PATH=/usr/local/cuda-12.4/lib64 holds cuDNN 9.1.0 (libcudnn.so.9 -> libcudnn.so.9.1.0): cudnn-shadowed, cudnn-cuda-mismatch (9.1 has no CUDA 13 build), multiple-cudnn.")

# 4. near-miss: LD_LIBRARY_PATH names torch's own cuDNN folder
r = "libs-cudnn-ldpath-own"; venv(r)
env(r, f"LD_LIBRARY_PATH=/{SP}/nvidia/cudnn/lib:/{SP}/nvidia/nccl/lib\n")
readme(r, "LD_LIBRARY_PATH lists torch's own nvidia/cudnn/lib and nvidia/nccl/lib: nothing is shadowed.")

# 5. LD_PRELOAD of the system libnccl 2.21.5 (+cuda12.4) from libnccl2
r = "libs-nccl-preloaded"; venv(r)
w(r, "var/lib/dpkg/status", (DATA / "dpkg-status-cudnn-nccl-constructed").read_text().split("Package: libcudnn8\n")[0] + "\n\n".join(s for s in (DATA / "dpkg-status-cudnn-nccl-constructed").read_text().split("\n\n") if "nccl" in s) + "\n")
w(r, "usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", nccl_lib("2.21.5", "12.4"))
link(r, "usr/lib/x86_64-linux-gnu/libnccl.so.2", "libnccl.so.2.21.5")
env(r, "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libnccl.so.2\n")
readme(r, "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libnccl.so.2 from libnccl2 2.21.5-1+cuda12.4 (dpkg status constructed, see tests/data/libs/README.md): nccl-shadowed, nccl-cuda-mismatch, multiple-nccl.")

# 6. near-miss: LD_PRELOAD of torch's own libnccl
r = "libs-nccl-preload-own"; venv(r)
env(r, f"LD_PRELOAD=/{SP}/nvidia/nccl/lib/libnccl.so.2\n")
readme(r, "LD_PRELOAD names torch's own libnccl.so.2 (a common workaround): nothing is shadowed.")

# 7. cuDNN archive whose header and library disagree
r = "libs-cudnn-header-mismatch"
pre = "usr/local/cudnn-linux-x86_64-8.9.3.28_cuda12-archive"
w(r, f"{pre}/include/cudnn_version.h", (DATA / "cudnn_version-8.9.3-excerpt.h").read_text())
w(r, f"{pre}/lib/libcudnn.so.9.1.0", b"\x7fELF stand-in for libcudnn.so.9.1.0 (fwdoctor test fixture)\n")
link(r, f"{pre}/lib/libcudnn.so.9", "libcudnn.so.9.1.0")
w(r, "fixture.env", "# fwdoctor test fixture\nPATH=/usr/bin:/bin\n")
readme(r, "A cuDNN archive folder whose cudnn_version.h says 8.9.3 while lib/ holds libcudnn.so.9.1.0: cudnn-header-library-mismatch.")

# 8. near-miss: the same archive, consistent
r = "libs-cudnn-header-match"
w(r, f"{pre}/include/cudnn_version.h", (DATA / "cudnn_version-8.9.3-excerpt.h").read_text())
w(r, f"{pre}/lib/libcudnn.so.8.9.3", b"\x7fELF stand-in for libcudnn.so.8.9.3 (fwdoctor test fixture)\n")
link(r, f"{pre}/lib/libcudnn.so.8", "libcudnn.so.8.9.3")
w(r, "fixture.env", "# fwdoctor test fixture\nPATH=/usr/bin:/bin\n")
readme(r, "A cuDNN 8.9.3 archive folder whose header and library agree: no header-library finding.")

# 9. system NCCL: nccl.h 2.30.7 but libnccl 2.21.5
r = "libs-nccl-header-mismatch"
w(r, "usr/include/nccl.h", (DATA / "nccl-2.30.7.h").read_text())
w(r, "usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", nccl_lib("2.21.5", "12.4"))
link(r, "usr/lib/x86_64-linux-gnu/libnccl.so.2", "libnccl.so.2.21.5")
w(r, "fixture.env", "# fwdoctor test fixture\nPATH=/usr/bin:/bin\n")
readme(r, "/usr/include/nccl.h says 2.30.7, /usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5 is 2.21.5: nccl-header-library-mismatch.")

# 10. near-miss: system NCCL consistent
r = "libs-nccl-header-match"
w(r, "usr/include/nccl.h", (DATA / "nccl-2.30.7.h").read_text())
w(r, "usr/lib/x86_64-linux-gnu/libnccl.so.2.30.7", nccl_lib("2.30.7", "13.3"))
link(r, "usr/lib/x86_64-linux-gnu/libnccl.so.2", "libnccl.so.2.30.7")
w(r, "fixture.env", "# fwdoctor test fixture\nPATH=/usr/bin:/bin\n")
readme(r, "System NCCL 2.30.7 whose nccl.h and libnccl agree: no header-library finding.")

# 11. a stale cu12 NCCL wheel beside cu13 torch (the files on disk are the cu13 ones)
r = "libs-nccl-cu12-beside-cu13"; venv(r); env(r)
w(r, f"{SP}/nvidia_nccl_cu12-2.27.3.dist-info/METADATA", "Metadata-Version: 2.1\nName: nvidia-nccl-cu12\nVersion: 2.27.3\n")
readme(r, "nvidia-nccl-cu12 2.27.3 dist-info left beside torch cu130's nvidia-nccl-cu13: nccl-cuda-mismatch.")
print("ok")
