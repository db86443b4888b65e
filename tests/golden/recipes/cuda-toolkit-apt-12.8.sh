#!/bin/sh
# fwdoctor plan: cuda-toolkit: install CUDA toolkit 12.8 (apt)
set -eu

# apt's cuda-toolkit-config-common manages /usr/local/cuda through update-alternatives
# to use it: . /srv/it's a "test" dir/cuda.env.sh

# NVIDIA's CUDA repository must be configured (cuda-keyring from https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/cuda-keyring_1.1-1_all.deb); pass --keyring-sha256 to let fwdoctor set it up
dpkg -s cuda-keyring

# refresh package lists
dpkg -s cuda-toolkit-12-8 >/dev/null 2>&1 || apt-get update

# install cuda-toolkit-12-8 into /usr/local/cuda-12.8
dpkg -s cuda-toolkit-12-8 >/dev/null 2>&1 || apt-get install -y --no-install-recommends cuda-toolkit-12-8

# keep /usr/local/cuda pointing at /usr/local/cuda-12.4
test /usr/local/cuda -ef /usr/local/cuda-12.4 >/dev/null 2>&1 || ln -sfn /usr/local/cuda-12.4 /usr/local/cuda

# environment for CUDA 12.8: source it (. /srv/it's a "test" dir/cuda.env.sh); no rc file is touched
/opt/fwdoctor/bin/python -m recipes.apply same '/srv/it'"'"'s a "test" dir/cuda.env.sh' '# CUDA 12.8 environment, written by fwdoctor. Source it: . FILE
export CUDA_HOME=/usr/local/cuda-12.8
export CUDA_PATH=/usr/local/cuda-12.8
export PATH=/usr/local/cuda-12.8/bin"${PATH:+:$PATH}"
export LD_LIBRARY_PATH=/usr/local/cuda-12.8/lib64"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
' >/dev/null 2>&1 || /opt/fwdoctor/bin/python -m recipes.apply write '/srv/it'"'"'s a "test" dir/cuda.env.sh' 644 '# CUDA 12.8 environment, written by fwdoctor. Source it: . FILE
export CUDA_HOME=/usr/local/cuda-12.8
export CUDA_PATH=/usr/local/cuda-12.8
export PATH=/usr/local/cuda-12.8/bin"${PATH:+:$PATH}"
export LD_LIBRARY_PATH=/usr/local/cuda-12.8/lib64"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
'

# a tiny CUDA program for the verification compile
/opt/fwdoctor/bin/python -m recipes.apply same '/srv/it'"'"'s a "test" dir/work/fwdoctor-verify.cu' '// written by fwdoctor to prove the toolkit compiles and links
#include <cstdio>
__global__ void fwdoctor_kernel(int *out) { out[threadIdx.x] = threadIdx.x; }
int main() {
    int *d = nullptr;
    cudaError_t err = cudaMalloc(&d, 32 * sizeof(int));
    if (err == cudaSuccess) { fwdoctor_kernel<<<1, 32>>>(d); cudaFree(d); }
    std::printf("compiled; runtime says: %s\n", cudaGetErrorString(err));
    return 0;
}
' >/dev/null 2>&1 || /opt/fwdoctor/bin/python -m recipes.apply write '/srv/it'"'"'s a "test" dir/work/fwdoctor-verify.cu' 644 '// written by fwdoctor to prove the toolkit compiles and links
#include <cstdio>
__global__ void fwdoctor_kernel(int *out) { out[threadIdx.x] = threadIdx.x; }
int main() {
    int *d = nullptr;
    cudaError_t err = cudaMalloc(&d, 32 * sizeof(int));
    if (err == cudaSuccess) { fwdoctor_kernel<<<1, 32>>>(d); cudaFree(d); }
    std::printf("compiled; runtime says: %s\n", cudaGetErrorString(err));
    return 0;
}
'

# verify
# nvcc --version reports release 12.8
/opt/fwdoctor/bin/python -c 'import re, subprocess, sys
nvcc, want = sys.argv[1:3]
try:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
except (OSError, subprocess.TimeoutExpired) as exc:
    print(f"{nvcc}: {exc}")
    sys.exit(1)
m = re.search(r"release (\d+\.\d+)", out)
print(out.strip().splitlines()[-1] if out.strip() else f"{nvcc}: no output")
sys.exit(0 if m and m.group(1) == want else 1)
' /usr/local/cuda-12.8/bin/nvcc 12.8

# compile and link a kernel for this host's GPUs
/usr/local/cuda-12.8/bin/nvcc -gencode arch=compute_70,code=sm_70 -gencode arch=compute_90,code=sm_90 '/srv/it'"'"'s a "test" dir/work/fwdoctor-verify.cu' -o '/srv/it'"'"'s a "test" dir/work/fwdoctor-verify'
