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
/opt/fwdoctor/bin/python -m fwdoctor.recipes.apply same '/srv/it'"'"'s a "test" dir/cuda.env.sh' 9c0625413cd45e664bf919737da13a94b6101456cfb1e192b6a3c45623df47af >/dev/null 2>&1 || /opt/fwdoctor/bin/python -m fwdoctor.recipes.apply write '/srv/it'"'"'s a "test" dir/cuda.env.sh' 644 '# CUDA 12.8 environment, written by fwdoctor. Source it: . FILE
export CUDA_HOME=/usr/local/cuda-12.8
export CUDA_PATH=/usr/local/cuda-12.8
export PATH=/usr/local/cuda-12.8/bin"${PATH:+:$PATH}"
export LD_LIBRARY_PATH=/usr/local/cuda-12.8/lib64"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
'

# verify
# nvcc --version reports release 12.8
/opt/fwdoctor/bin/python -c 'import re, subprocess, sys
nvcc, want = sys.argv[1:3]
try:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                         timeout=60).stdout
except (OSError, subprocess.TimeoutExpired) as exc:
    print(f"{nvcc}: {exc}")
    sys.exit(1)
m = re.search(r"release (\d+\.\d+)", out)
print(out.strip().splitlines()[-1] if out.strip() else f"{nvcc}: no output")
sys.exit(0 if m and m.group(1) == want else 1)
' /usr/local/cuda-12.8/bin/nvcc 12.8

# compile, link and run a kernel on this host's GPUs
/opt/fwdoctor/bin/python -c 'import os, subprocess, sys, tempfile
nvcc, mode, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
src = (
    "#include <cstdio>\n"
    "__global__ void fwdoctor_kernel(int *out) {\n"
    "    out[threadIdx.x] = threadIdx.x;\n"
    "}\n"
    "int main() {\n"
    "    int *d = nullptr;\n"
    "    cudaError_t err = cudaMalloc(&d, 32 * sizeof(int));\n"
    "    if (err == cudaSuccess) {\n"
    "        fwdoctor_kernel<<<1, 32>>>(d);\n"
    "        err = cudaDeviceSynchronize();\n"
    "        cudaFree(d);\n"
    "    }\n"
    "    std::printf(\"kernel: %s\\n\", cudaGetErrorString(err));\n"
    "    return err == cudaSuccess ? 0 : 1;\n"
    "}\n"
)
with tempfile.TemporaryDirectory(prefix="fwdoctor-nvcc-") as tmp:
    cu = os.path.join(tmp, "verify.cu")
    with open(cu, "w") as handle:
        handle.write(src)
    exe = os.path.join(tmp, "verify")
    proc = subprocess.run([nvcc, *flags, cu, "-o", exe], capture_output=True,
                          text=True, timeout=540)
    print(proc.stdout + proc.stderr)
    print("compiled and linked" if proc.returncode == 0
          else f"nvcc failed: exit {proc.returncode}")
    if proc.returncode != 0 or mode != "run":
        sys.exit(proc.returncode)
    ran = subprocess.run([exe], capture_output=True, text=True, timeout=120)
    print(ran.stdout + ran.stderr)
    sys.exit(ran.returncode)
' /usr/local/cuda-12.8/bin/nvcc run -gencode arch=compute_70,code=sm_70 -gencode arch=compute_90,code=sm_90
