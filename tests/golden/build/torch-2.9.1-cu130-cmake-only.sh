#!/bin/sh
# fwdoctor plan: torch-source: build torch 2.9.1 with CUDA 13.0 (cmake only)
set -eu

# torch 2.9.1, CUDA 13.0 (/usr/local/cuda-13.0/bin/nvcc), arch 10.0;12.0+PTX from host GPUs (10.0, 12.0)
# NCCL: nvidia-nccl-cu13==2.28.3 (pip wheel, fetched into the build prefix); cuDNN: whatever CMake finds (not pinned)
# Python: every build command runs /home/ml/.venv/bin/python; setup.py passes it to CMake as -DPython_EXECUTABLE
# MAX_JOBS=40 (cores, capped at ~5 GiB of available memory per nvcc job)
# --cmake-only: afterwards see /home/ml/src/pytorch/build/CMakeCache.txt; run the same command without --cmake-only to build

export USE_CUDA=1
export CUDA_HOME=/usr/local/cuda-13.0
export CUDA_TOOLKIT_ROOT_DIR=/usr/local/cuda-13.0
export CMAKE_CUDA_COMPILER=/usr/local/cuda-13.0/bin/nvcc
export CUDACXX=/usr/local/cuda-13.0/bin/nvcc
export CUDA_NVCC_EXECUTABLE=/usr/local/cuda-13.0/bin/nvcc
export TORCH_CUDA_ARCH_LIST='10.0;12.0+PTX'
export USE_CUDNN=1
export USE_NCCL=1
export USE_SYSTEM_NCCL=1
export NCCL_ROOT=/home/ml/fwd/torch-2.9.1-cu130/prefix/nccl
export NCCL_INCLUDE_DIR=/home/ml/fwd/torch-2.9.1-cu130/prefix/nccl/include
export NCCL_LIB_DIR=/home/ml/fwd/torch-2.9.1-cu130/prefix/nccl/lib
export PYTHON_EXECUTABLE=/home/ml/.venv/bin/python
export Python_EXECUTABLE=/home/ml/.venv/bin/python
export Python3_EXECUTABLE=/home/ml/.venv/bin/python
export MAX_JOBS=40
export PYTORCH_BUILD_VERSION=2.9.1+cu130
export PYTORCH_BUILD_NUMBER=0
export PATH=/home/ml/.venv/bin:/usr/local/cuda-13.0/bin:/usr/local/bin:/usr/bin:/bin

# torch 2.9.1's build requirements into /home/ml/.venv/bin/python
/home/ml/.venv/bin/python -m pip install -r /home/ml/src/pytorch/requirements.txt

# nvidia-nccl-cu13 2.28.3 into the build prefix (headers + library; not into the environment)
test -f /home/ml/fwd/torch-2.9.1-cu130/deps/nccl/nvidia/nccl/lib/libnccl.so.2 >/dev/null 2>&1 || /home/ml/.venv/bin/python -m pip install --no-deps --target /home/ml/fwd/torch-2.9.1-cu130/deps/nccl nvidia-nccl-cu13==2.28.3

# nccl: a prefix holding only the chosen nccl
mkdir -p /home/ml/fwd/torch-2.9.1-cu130/prefix/nccl/lib

ln -sfn /home/ml/fwd/torch-2.9.1-cu130/deps/nccl/nvidia/nccl/include /home/ml/fwd/torch-2.9.1-cu130/prefix/nccl/include

ln -sf /home/ml/fwd/torch-2.9.1-cu130/deps/nccl/nvidia/nccl/lib/libnccl.so.2 /home/ml/fwd/torch-2.9.1-cu130/prefix/nccl/lib/libnccl.so.2

# the link-time name libnccl.so that CMake's find_library looks for
ln -sf libnccl.so.2 /home/ml/fwd/torch-2.9.1-cu130/prefix/nccl/lib/libnccl.so

# configure only (CMake), then stop: inspect build/CMakeCache.txt
(cd /home/ml/src/pytorch && /home/ml/.venv/bin/python setup.py build --cmake-only)
