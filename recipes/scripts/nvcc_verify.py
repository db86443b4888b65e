import os, subprocess, sys, tempfile
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
