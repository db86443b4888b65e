#!/bin/sh
# fwdoctor plan: torch-source: build torch 2.7.1 with CUDA 12.6
set -eu

# torch 2.7.1, CUDA 12.6 (/usr/local/cuda-12.6/bin/nvcc), arch 9.0a from --arch
# NCCL: 2.26.2 at /usr/lib/x86_64-linux-gnu/libnccl.so.2; cuDNN: off (USE_CUDNN=0)
# Python: every build command runs /home/ml/.venv/bin/python; setup.py passes it to CMake as -DPython_EXECUTABLE
# MAX_JOBS=4 (cores, capped at ~5 GiB of available memory per nvcc job)
# the wheel does not carry NCCL/cuDNN from a path: wherever it is used, put /usr/lib/x86_64-linux-gnu on LD_LIBRARY_PATH

export USE_CUDA=1
export CUDA_HOME=/usr/local/cuda-12.6
export CUDA_TOOLKIT_ROOT_DIR=/usr/local/cuda-12.6
export CMAKE_CUDA_COMPILER=/usr/local/cuda-12.6/bin/nvcc
export CUDACXX=/usr/local/cuda-12.6/bin/nvcc
export CUDA_NVCC_EXECUTABLE=/usr/local/cuda-12.6/bin/nvcc
export CUDAHOSTCXX=/usr/bin/g++-13
export CMAKE_CUDA_HOST_COMPILER=/usr/bin/g++-13
export TORCH_CUDA_ARCH_LIST=9.0a
export USE_CUDNN=0
export USE_NCCL=1
export USE_SYSTEM_NCCL=1
export NCCL_ROOT=/home/ml/fwd/torch-2.7.1/prefix/nccl
export NCCL_INCLUDE_DIR=/home/ml/fwd/torch-2.7.1/prefix/nccl/include
export NCCL_LIB_DIR=/home/ml/fwd/torch-2.7.1/prefix/nccl/lib
export PYTHON_EXECUTABLE=/home/ml/.venv/bin/python
export Python_EXECUTABLE=/home/ml/.venv/bin/python
export Python3_EXECUTABLE=/home/ml/.venv/bin/python
export MAX_JOBS=4
export PYTORCH_BUILD_VERSION=2.7.1+cu126
export PYTORCH_BUILD_NUMBER=0
export PATH=/home/ml/.venv/bin:/usr/local/cuda-12.6/bin:/usr/bin:/bin

# proves the built torch uses the chosen CUDA, NCCL and cuDNN
mkdir -p /home/ml/fwd/torch-2.7.1
cat > /home/ml/fwd/torch-2.7.1/verify_build.py <<'FWDOCTOR_EOF'
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
chmod 755 /home/ml/fwd/torch-2.7.1/verify_build.py

# PyTorch v2.7.1 with its submodules
test -e /home/ml/fwd/torch-2.7.1/src/.git >/dev/null 2>&1 || git clone --branch v2.7.1 --depth 1 --recurse-submodules --shallow-submodules -- https://github.com/pytorch/pytorch.git /home/ml/fwd/torch-2.7.1/src

# finish any submodule a previous clone left out
git -C /home/ml/fwd/torch-2.7.1/src submodule update --init --recursive --depth 1

# torch 2.7.1's build requirements into /home/ml/.venv/bin/python (plus ninja: the host's are missing or too old)
/home/ml/.venv/bin/python -m pip install -r /home/ml/fwd/torch-2.7.1/src/requirements.txt ninja

# nccl: a prefix holding only the chosen nccl
mkdir -p /home/ml/fwd/torch-2.7.1/prefix/nccl/lib

ln -sfn /usr/include /home/ml/fwd/torch-2.7.1/prefix/nccl/include

ln -sf /usr/lib/x86_64-linux-gnu/libnccl.so.2 /home/ml/fwd/torch-2.7.1/prefix/nccl/lib/libnccl.so.2

# the link-time name libnccl.so that CMake's find_library looks for
ln -sf libnccl.so.2 /home/ml/fwd/torch-2.7.1/prefix/nccl/lib/libnccl.so

# build the wheel into /home/ml/fwd/torch-2.7.1/dist (log: /home/ml/fwd/torch-2.7.1/build.log)
(cd /home/ml/fwd/torch-2.7.1/src && /home/ml/.venv/bin/python setup.py bdist_wheel --dist-dir /home/ml/fwd/torch-2.7.1/dist)

# verify
# install the wheel just built (from the dist folder only)
/home/ml/.venv/bin/python -m pip install --force-reinstall --no-index --find-links /home/ml/fwd/torch-2.7.1/dist --no-deps torch==2.7.1+cu126

# its Python dependencies
/home/ml/.venv/bin/python -m pip install --find-links /home/ml/fwd/torch-2.7.1/dist torch==2.7.1+cu126

# torch.version.cuda, NCCL, cuDNN and the arch list match the request; GPU smoke tests where a GPU exists
(cd /home/ml/fwd/torch-2.7.1 && env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu /home/ml/.venv/bin/python /home/ml/fwd/torch-2.7.1/verify_build.py --cuda 12.6 --arch 9.0a --nccl 2.26.2)
