#!/bin/sh
# fwdoctor plan: torch-source: build torch 2.9.1 with CUDA 12.8
set -eu

# torch 2.9.1, CUDA 12.8 (/usr/local/cuda/bin/nvcc), arch 9.0 from --arch
# NCCL: nvidia-nccl-cu12==2.27.5 (pip wheel, fetched into the build prefix); cuDNN: nvidia-cudnn-cu12==9.10.2.21 (pip wheel, fetched into the build prefix)
# Python: every build command runs /fwd/venv/bin/python; setup.py passes it to CMake as -DPython_EXECUTABLE
# MAX_JOBS=25 (cores, capped at ~5 GiB of available memory per nvcc job)
# --docker nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04: the CUDA, g++ and cmake are the image's; /srv/fwd build is mounted at /fwd
# not run by fwdoctor: needs Docker and the NVIDIA container toolkit (--gpus all); the host compiler is not pre-checked

# the in-container build (same plan as without --docker)
mkdir -p '/srv/fwd build'
cat > '/srv/fwd build/in-container.sh' <<'FWDOCTOR_EOF_'
#!/bin/sh
# fwdoctor plan: torch-source: build torch 2.9.1 with CUDA 12.8
set -eu

# torch 2.9.1, CUDA 12.8 (/usr/local/cuda/bin/nvcc), arch 9.0 from --arch
# NCCL: nvidia-nccl-cu12==2.27.5 (pip wheel, fetched into the build prefix); cuDNN: nvidia-cudnn-cu12==9.10.2.21 (pip wheel, fetched into the build prefix)
# Python: every build command runs /fwd/venv/bin/python; setup.py passes it to CMake as -DPython_EXECUTABLE
# MAX_JOBS=25 (cores, capped at ~5 GiB of available memory per nvcc job)

export USE_CUDA=1
export CUDA_HOME=/usr/local/cuda
export CUDA_TOOLKIT_ROOT_DIR=/usr/local/cuda
export CMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc
export CUDACXX=/usr/local/cuda/bin/nvcc
export CUDA_NVCC_EXECUTABLE=/usr/local/cuda/bin/nvcc
export TORCH_CUDA_ARCH_LIST=9.0
export USE_CUDNN=1
export CUDNN_INCLUDE_DIR=/fwd/prefix/cudnn/include
export CUDNN_LIBRARY=/fwd/prefix/cudnn/lib
export USE_NCCL=1
export USE_SYSTEM_NCCL=1
export NCCL_ROOT=/fwd/prefix/nccl
export NCCL_INCLUDE_DIR=/fwd/prefix/nccl/include
export NCCL_LIB_DIR=/fwd/prefix/nccl/lib
export PYTHON_EXECUTABLE=/fwd/venv/bin/python
export Python_EXECUTABLE=/fwd/venv/bin/python
export Python3_EXECUTABLE=/fwd/venv/bin/python
export MAX_JOBS=25
export PYTORCH_BUILD_VERSION=2.9.1+cu128
export PYTORCH_BUILD_NUMBER=0
export PATH=/fwd/venv/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# proves the built torch uses the chosen CUDA, NCCL and cuDNN
mkdir -p /fwd
cat > /fwd/verify_build.py <<'FWDOCTOR_EOF'
#!/usr/bin/env python3
"""Written by fwdoctor build torch: check the installed torch against the build request."""
import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", required=True)
parser.add_argument("--nccl")
parser.add_argument("--cudnn")
parser.add_argument("--arch", required=True)
args = parser.parse_args()

import torch

problems = []
seen = {"torch": torch.__version__, "file": torch.__file__, "cuda": torch.version.cuda}
if torch.version.cuda is None or torch.version.cuda.split(".")[:2] != args.cuda.split(".")[:2]:
    problems.append(f"torch.version.cuda is {torch.version.cuda}, wanted {args.cuda}")
if args.nccl:
    have = ".".join(map(str, torch.cuda.nccl.version()))
    seen["nccl"] = have
    if have.split(".")[:3] != args.nccl.split(".")[:3]:
        problems.append(f"torch.cuda.nccl.version() is {have}, wanted {args.nccl}")
if args.cudnn:
    code = torch.backends.cudnn.version()
    seen["cudnn"] = code
    parts = [int(p) for p in args.cudnn.split(".")[:3]] + [0, 0]
    want = parts[0] * 10000 + parts[1] * 100 + parts[2] if parts[0] >= 9 else parts[0] * 1000 + parts[1] * 100 + parts[2]
    if code != want:
        problems.append(f"torch.backends.cudnn.version() is {code}, wanted {want} ({args.cudnn})")
flags = torch._C._cuda_getArchFlags().split()
seen["arch_flags"] = flags
for entry in filter(None, args.arch.replace(",", ";").split(";")):
    cc = entry.replace("+PTX", "")
    name = "sm_" + cc.replace(".", "")
    if name not in flags:
        problems.append(f"{name} missing from the built arch list {flags}")
    if entry.endswith("+PTX") and "compute_" + cc.replace(".", "") not in flags:
        problems.append(f"compute_{cc.replace('.', '')} (PTX) missing from the built arch list {flags}")
if torch.cuda.is_available():
    x = torch.randn(256, 256, device="cuda")
    seen["matmul"] = float((x @ x).sum().item())
    if args.cudnn:
        conv = torch.nn.Conv2d(3, 8, 3).cuda()
        seen["conv"] = list(conv(torch.randn(1, 3, 16, 16, device="cuda")).shape)
else:
    seen["smoke"] = "skipped: no GPU visible"
seen["problems"] = problems
print(json.dumps(seen, indent=2))
sys.exit(1 if problems else 0)
FWDOCTOR_EOF
chmod 755 /fwd/verify_build.py

apt-get update

apt-get install -y --no-install-recommends git python3 python3-venv python3-dev python3-pip

test -x /fwd/venv/bin/python >/dev/null 2>&1 || python3 -m venv /fwd/venv

# PyTorch v2.9.1 with its submodules
test -e /fwd/src/.git >/dev/null 2>&1 || git clone --branch v2.9.1 --depth 1 --recurse-submodules --shallow-submodules -- https://github.com/pytorch/pytorch.git /fwd/src

# finish any submodule a previous clone left out
git -C /fwd/src submodule update --init --recursive --depth 1

# torch 2.9.1's build requirements into /fwd/venv/bin/python (plus cmake>=3.27, ninja: the host's are missing or too old)
/fwd/venv/bin/python -m pip install -r /fwd/src/requirements.txt 'cmake>=3.27' ninja

# nvidia-nccl-cu12 2.27.5 into the build prefix (headers + library; not into the environment)
test -f /fwd/deps/nccl/nvidia/nccl/lib/libnccl.so.2 >/dev/null 2>&1 || /fwd/venv/bin/python -m pip install --no-deps --target /fwd/deps/nccl nvidia-nccl-cu12==2.27.5

# nccl: a prefix holding only the chosen nccl
mkdir -p /fwd/prefix/nccl/lib

ln -sfn /fwd/deps/nccl/nvidia/nccl/include /fwd/prefix/nccl/include

ln -sf /fwd/deps/nccl/nvidia/nccl/lib/libnccl.so.2 /fwd/prefix/nccl/lib/libnccl.so.2

# the link-time name libnccl.so that CMake's find_library looks for
ln -sf libnccl.so.2 /fwd/prefix/nccl/lib/libnccl.so

# nvidia-cudnn-cu12 9.10.2.21 into the build prefix (headers + library; not into the environment)
test -f /fwd/deps/cudnn/nvidia/cudnn/lib/libcudnn.so.9 >/dev/null 2>&1 || /fwd/venv/bin/python -m pip install --no-deps --target /fwd/deps/cudnn nvidia-cudnn-cu12==9.10.2.21

# cudnn: a prefix holding only the chosen cudnn
mkdir -p /fwd/prefix/cudnn/lib

ln -sfn /fwd/deps/cudnn/nvidia/cudnn/include /fwd/prefix/cudnn/include

ln -sf /fwd/deps/cudnn/nvidia/cudnn/lib/libcudnn.so.9 /fwd/prefix/cudnn/lib/libcudnn.so.9

# the link-time name libcudnn.so that CMake's find_library looks for
ln -sf libcudnn.so.9 /fwd/prefix/cudnn/lib/libcudnn.so

# build the wheel into /fwd/dist (log: /fwd/build.log)
(cd /fwd/src && /fwd/venv/bin/python -m pip wheel . --no-build-isolation --no-deps -v -w /fwd/dist)

# verify
# install the wheel just built (from the dist folder only)
/fwd/venv/bin/python -m pip install --force-reinstall --no-index --find-links /fwd/dist --no-deps torch==2.9.1+cu128

# its Python dependencies and the same NCCL/cuDNN wheels it was built against
/fwd/venv/bin/python -m pip install --find-links /fwd/dist torch==2.9.1+cu128 nvidia-nccl-cu12==2.27.5 nvidia-cudnn-cu12==9.10.2.21

# torch.version.cuda, NCCL, cuDNN and the arch list match the request; GPU smoke tests where a GPU exists
(cd /fwd && /fwd/venv/bin/python /fwd/verify_build.py --cuda 12.8 --arch 9.0 --nccl 2.27.5 --cudnn 9.10.2.21)
FWDOCTOR_EOF_
chmod 755 '/srv/fwd build/in-container.sh'

# the build inside nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04 (script: /srv/fwd build/in-container.sh)
docker run --rm --gpus all -v '/srv/fwd build:/fwd' nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04 sh /fwd/in-container.sh
