#!/bin/sh
# fwdoctor plan: torch-source: build torch 2.3.1 with CUDA 12.1
set -eu

# torch 2.3.1, CUDA 12.1 (/usr/local/cuda-12.1/bin/nvcc), arch 7.0;8.0 from --arch
# NCCL: bundled (third_party/nccl); cuDNN: 8.9.7 at /opt/cudnn-8.9.7/lib/libcudnn.so.8
# Python: every build command runs /opt/envs/py310/bin/python; setup.py passes it to CMake as -DPYTHON_EXECUTABLE
# MAX_JOBS=16 (--jobs)
# the wheel does not carry NCCL/cuDNN from a path: wherever it is used, put /opt/cudnn-8.9.7/lib on LD_LIBRARY_PATH

export USE_CUDA=1
export CUDA_HOME=/usr/local/cuda-12.1
export CUDA_TOOLKIT_ROOT_DIR=/usr/local/cuda-12.1
export CMAKE_CUDA_COMPILER=/usr/local/cuda-12.1/bin/nvcc
export CUDACXX=/usr/local/cuda-12.1/bin/nvcc
export CUDA_NVCC_EXECUTABLE=/usr/local/cuda-12.1/bin/nvcc
export TORCH_CUDA_ARCH_LIST='7.0;8.0'
export USE_CUDNN=1
export CUDNN_INCLUDE_DIR=/scratch/fwd/torch-2.3.1/prefix/cudnn/include
export CUDNN_LIBRARY=/scratch/fwd/torch-2.3.1/prefix/cudnn/lib
export USE_NCCL=1
export USE_SYSTEM_NCCL=0
export PYTHON_EXECUTABLE=/opt/envs/py310/bin/python
export Python_EXECUTABLE=/opt/envs/py310/bin/python
export Python3_EXECUTABLE=/opt/envs/py310/bin/python
export MAX_JOBS=16
export CMAKE_C_COMPILER_LAUNCHER=/usr/bin/ccache
export CMAKE_CXX_COMPILER_LAUNCHER=/usr/bin/ccache
export CMAKE_CUDA_COMPILER_LAUNCHER=/usr/bin/ccache
export DEBUG=1
export PYTORCH_BUILD_VERSION=2.3.1+cu121
export PYTORCH_BUILD_NUMBER=0
export PATH=/opt/envs/py310/bin:/usr/local/cuda-12.1/bin:/usr/local/bin:/usr/bin:/bin

# proves the built torch uses the chosen CUDA, NCCL and cuDNN
mkdir -p /scratch/fwd/torch-2.3.1
cat > /scratch/fwd/torch-2.3.1/verify_build.py <<'FWDOCTOR_EOF'
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
chmod 755 /scratch/fwd/torch-2.3.1/verify_build.py

# torch 2.3.1's build requirements into /opt/envs/py310/bin/python
/opt/envs/py310/bin/python -m pip install -r /home/ml/src/pytorch/requirements.txt

# cudnn: a prefix holding only the chosen cudnn
mkdir -p /scratch/fwd/torch-2.3.1/prefix/cudnn/lib

ln -sfn /opt/cudnn-8.9.7/include /scratch/fwd/torch-2.3.1/prefix/cudnn/include

ln -sf /opt/cudnn-8.9.7/lib/libcudnn.so.8 /scratch/fwd/torch-2.3.1/prefix/cudnn/lib/libcudnn.so.8

# the link-time name libcudnn.so that CMake's find_library looks for
ln -sf libcudnn.so.8 /scratch/fwd/torch-2.3.1/prefix/cudnn/lib/libcudnn.so

# build the wheel into /scratch/fwd/torch-2.3.1/dist (log: /scratch/fwd/torch-2.3.1/build.log)
(cd /home/ml/src/pytorch && /opt/envs/py310/bin/python setup.py bdist_wheel --dist-dir /scratch/fwd/torch-2.3.1/dist)

# verify
# install the wheel just built (from the dist folder only)
/opt/envs/py310/bin/python -m pip install --force-reinstall --no-index --find-links /scratch/fwd/torch-2.3.1/dist --no-deps torch==2.3.1+cu121

# its Python dependencies
/opt/envs/py310/bin/python -m pip install --find-links /scratch/fwd/torch-2.3.1/dist torch==2.3.1+cu121

# torch.version.cuda, NCCL, cuDNN and the arch list match the request; GPU smoke tests where a GPU exists
(cd /scratch/fwd/torch-2.3.1 && env LD_LIBRARY_PATH=/opt/cudnn-8.9.7/lib /opt/envs/py310/bin/python /scratch/fwd/torch-2.3.1/verify_build.py --cuda 12.1 --arch '7.0;8.0' --cudnn 8.9.7)
