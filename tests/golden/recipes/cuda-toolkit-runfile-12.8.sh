#!/bin/sh
# fwdoctor plan: cuda-toolkit: install CUDA toolkit 12.8 (runfile)
set -eu

# to use it: . /srv/it's a "test" dir/cuda.env.sh

# download the CUDA 12.8 runfile; its sha256 is checked before it is kept
'/srv/it'"'"'s a "test" dir/cuda-12.8/bin/nvcc' --version >/dev/null 2>&1 || /opt/fwdoctor/bin/python -m recipes.download --sha256 610867dcd6d94c4e36c4924f1d01b9db28ec08164e8af6c764f21b84200695f8 https://developer.download.nvidia.com/compute/cuda/12.8.0/local_installers/cuda_12.8.0_570.86.10_linux.run '/srv/it'"'"'s a "test" dir/work/downloads/cuda_12.8.0_570.86.10_linux.run'

# install the toolkit only (no driver) into /srv/it's a "test" dir/cuda-12.8
'/srv/it'"'"'s a "test" dir/cuda-12.8/bin/nvcc' --version >/dev/null 2>&1 || sh '/srv/it'"'"'s a "test" dir/work/downloads/cuda_12.8.0_570.86.10_linux.run' --silent --toolkit '--toolkitpath=/srv/it'"'"'s a "test" dir/cuda-12.8' --no-opengl-libs --no-man-page --override

# keep /usr/local/cuda pointing at /usr/local/cuda-12.4
test /usr/local/cuda -ef /usr/local/cuda-12.4 >/dev/null 2>&1 || ln -sfn /usr/local/cuda-12.4 /usr/local/cuda

# environment for CUDA 12.8: source it (. /srv/it's a "test" dir/cuda.env.sh); no rc file is touched
/opt/fwdoctor/bin/python -m recipes.apply same '/srv/it'"'"'s a "test" dir/cuda.env.sh' '# CUDA 12.8 environment, written by fwdoctor. Source it: . FILE
export CUDA_HOME='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cuda-12.8'"'"'
export CUDA_PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cuda-12.8'"'"'
export PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cuda-12.8/bin'"'"'"${PATH:+:$PATH}"
export LD_LIBRARY_PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cuda-12.8/lib64'"'"'"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
' >/dev/null 2>&1 || /opt/fwdoctor/bin/python -m recipes.apply write '/srv/it'"'"'s a "test" dir/cuda.env.sh' 644 '# CUDA 12.8 environment, written by fwdoctor. Source it: . FILE
export CUDA_HOME='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cuda-12.8'"'"'
export CUDA_PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cuda-12.8'"'"'
export PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cuda-12.8/bin'"'"'"${PATH:+:$PATH}"
export LD_LIBRARY_PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cuda-12.8/lib64'"'"'"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
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
' '/srv/it'"'"'s a "test" dir/cuda-12.8/bin/nvcc' 12.8

# compile and link a kernel for this host's GPUs
'/srv/it'"'"'s a "test" dir/cuda-12.8/bin/nvcc' -gencode arch=compute_70,code=sm_70 -gencode arch=compute_90,code=sm_90 '/srv/it'"'"'s a "test" dir/work/fwdoctor-verify.cu' -o '/srv/it'"'"'s a "test" dir/work/fwdoctor-verify'
