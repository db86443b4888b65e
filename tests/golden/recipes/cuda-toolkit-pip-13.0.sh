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
/opt/fwdoctor/bin/python -m fwdoctor.recipes.apply same '/srv/it'"'"'s a "test" dir/cuda.env.sh' ee30fc1a9ff3ad4233aaf6a3f1e006eca6fa91c83659e1f2c1da76e16e8acbbc >/dev/null 2>&1 || /opt/fwdoctor/bin/python -m fwdoctor.recipes.apply write '/srv/it'"'"'s a "test" dir/cuda.env.sh' 644 '# CUDA 13.0 environment, written by fwdoctor. Source it: . FILE
export CUDA_HOME='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13'"'"'
export CUDA_PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13'"'"'
export PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13/bin'"'"'"${PATH:+:$PATH}"
export LD_LIBRARY_PATH='"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/cu13/nvidia/cu13/lib64'"'"'"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
'

# verify
# nvcc --version reports release 13.0
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
' '/srv/it'"'"'s a "test" dir/cu13/nvidia/cu13/bin/nvcc' 13.0

# compile and link a kernel (no GPU here: nvcc's default arch)
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
' '/srv/it'"'"'s a "test" dir/cu13/nvidia/cu13/bin/nvcc' compile
