#!/bin/sh
# fwdoctor plan: cuda-toolkit: install CUDA toolkit 13.0 (pip)
set -eu

# toolkit root (CUDA_HOME): /srv/it's a "test" dir/cu13/nvidia/cu13
# to use it: . /srv/it's a "test" dir/cuda.env.sh

# install NVIDIA's CUDA 13.0 compiler wheels into /srv/it's a "test" dir/cu13 (no root needed; every component pinned to 13.0)
'/srv/it'"'"'s a "test" dir/cu13/nvidia/cu13/bin/nvcc' --version >/dev/null 2>&1 || /usr/bin/python3 -m pip install --target '/srv/it'"'"'s a "test" dir/cu13' 'nvidia-cuda-nvcc==13.0.*' 'nvidia-cuda-runtime==13.0.*' 'nvidia-cuda-crt==13.0.*' 'nvidia-nvvm==13.0.*' 'nvidia-cuda-cccl==13.0.*'

# nvcc.profile links from lib64; the wheels ship lib
test -e '/srv/it'"'"'s a "test" dir/cu13/nvidia/cu13/lib64' >/dev/null 2>&1 || ln -s lib '/srv/it'"'"'s a "test" dir/cu13/nvidia/cu13/lib64'

# environment for CUDA 13.0: source it (. /srv/it's a "test" dir/cuda.env.sh); no rc file is touched
/opt/fwdoctor/bin/python -m recipes.apply same '/srv/it'"'"'s a "test" dir/cuda.env.sh' '# CUDA 13.0 environment, written by fwdoctor. Source it: . FILE
export CUDA_HOME='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13'"'"'
export CUDA_PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13'"'"'
export PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13/bin'"'"'"${PATH:+:$PATH}"
export LD_LIBRARY_PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13/lib64'"'"'"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
' >/dev/null 2>&1 || /opt/fwdoctor/bin/python -m recipes.apply write '/srv/it'"'"'s a "test" dir/cuda.env.sh' 644 '# CUDA 13.0 environment, written by fwdoctor. Source it: . FILE
export CUDA_HOME='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13'"'"'
export CUDA_PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13'"'"'
export PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13/bin'"'"'"${PATH:+:$PATH}"
export LD_LIBRARY_PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13/lib64'"'"'"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
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
# nvcc --version reports release 13.0
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
' '/srv/it'"'"'s a "test" dir/cu13/nvidia/cu13/bin/nvcc' 13.0

# compile and link a kernel (no GPU here: nvcc's default arch)
'/srv/it'"'"'s a "test" dir/cu13/nvidia/cu13/bin/nvcc' '/srv/it'"'"'s a "test" dir/work/fwdoctor-verify.cu' -o '/srv/it'"'"'s a "test" dir/work/fwdoctor-verify'
