"""`fwdoctor smoke kernel --compile-only`: can the active nvcc build for these GPUs?

For each target architecture, nvcc compiles a small CUDA program (AXPY_CU). A refusal is
reported with nvcc's own words ("nvcc fatal   : Unsupported gpu architecture
'compute_50'", CUDA 13.0 on this project's build machine) and points at
gpu-arch-unsupported-by-toolkit. When a GPU that the target can run on is present, the
binary is also run on it and its output checked.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import Mapping, Sequence

from fwdoctor import runner
from fwdoctor.arch import Target, parse_targets, runs_on
from fwdoctor.probes import cuda as cuda_probe
from fwdoctor.smoke.result import FAIL, PASS, SKIPPED, SmokeResult, failed

COMPILE_TIMEOUT_S = 180.0
RUN_TIMEOUT_S = 60.0
N = 1024

# y = 2*x + y over N floats, x[i] = i, y[i] = 1: every y[i] must be exactly 2*i + 1.
AXPY_CU = r"""
#include <cstdio>
#include <cuda_runtime.h>

__global__ void axpy(int n, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + y[i];
}

static int fail(const char *what, cudaError_t e) {
  printf("fwdoctor-kernel-error %s: %s\n", what, cudaGetErrorString(e));
  return 2;
}

int main() {
  const int n = @N@;
  static float hx[@N@], hy[@N@];
  for (int i = 0; i < n; i++) { hx[i] = (float)i; hy[i] = 1.0f; }
  float *dx = 0, *dy = 0;
  cudaError_t e;
  if ((e = cudaMalloc(&dx, n * sizeof(float))) != cudaSuccess) return fail("cudaMalloc", e);
  if ((e = cudaMalloc(&dy, n * sizeof(float))) != cudaSuccess) return fail("cudaMalloc", e);
  if ((e = cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess) return fail("cudaMemcpy", e);
  if ((e = cudaMemcpy(dy, hy, n * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess) return fail("cudaMemcpy", e);
  axpy<<<(n + 255) / 256, 256>>>(n, dx, dy);
  if ((e = cudaGetLastError()) != cudaSuccess) return fail("kernel launch", e);
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return fail("kernel", e);
  if ((e = cudaMemcpy(hy, dy, n * sizeof(float), cudaMemcpyDeviceToHost)) != cudaSuccess) return fail("cudaMemcpy", e);
  int wrong = 0;
  for (int i = 0; i < n; i++) if (hy[i] != 2.0f * i + 1.0f) wrong++;
  printf("fwdoctor-kernel-ok n=%d wrong=%d\n", n, wrong);
  return wrong ? 1 : 0;
}
""".replace("@N@", str(N))

_RAN = re.compile(r"fwdoctor-kernel-ok n=(\d+) wrong=(\d+)")


@dataclass(frozen=True)
class Nvcc:
    path: str
    release: str | None  # "13.0"
    version: str | None  # "13.0.88"
    found_via: str


def find_nvcc(env: Mapping[str, str]) -> Nvcc | None:
    """CUDA_HOME/bin/nvcc, else nvcc on PATH, else /usr/local/cuda/bin/nvcc."""
    candidates: list[tuple[str, str]] = []
    if env.get("CUDA_HOME"):
        candidates.append((os.path.join(env["CUDA_HOME"], "bin", "nvcc"), "CUDA_HOME"))
    on_path = shutil.which("nvcc", path=env.get("PATH", ""))
    if on_path:
        candidates.append((on_path, "PATH"))
    candidates.append(("/usr/local/cuda/bin/nvcc", "/usr/local/cuda"))
    for path, via in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            release, version = nvcc_version(path, env)
            return Nvcc(path, release, version, via)
    return None


def nvcc_version(path: str, env: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    result = runner.run([path, "--version"], timeout=30, env=env)
    return parse_nvcc_version(result.stdout) if result.ok else (None, None)


def parse_nvcc_version(text: str) -> tuple[str | None, str | None]:
    """'Cuda compilation tools, release 13.0, V13.0.88' -> ('13.0', '13.0.88')."""
    return cuda_probe.parse_nvcc_version(text or "") or (None, None)


def gencode(target: Target) -> str:
    arch = f"compute_{target.major}{target.minor}{target.suffix}"
    code = f"sm_{target.major}{target.minor}{target.suffix}" if target.kind == "sass" else arch
    return f"arch={arch},code={code}"


def nvcc_message(stderr: str, stdout: str = "") -> str:
    """nvcc's own complaint: its `nvcc fatal` / `error` line, else the last line."""
    lines = [line.strip() for line in f"{stderr}\n{stdout}".splitlines() if line.strip()]
    for line in lines:
        if line.startswith("nvcc fatal") or " error" in line or line.startswith("error"):
            return line
    return lines[-1] if lines else ""


def host_gpus(env: Mapping[str, str] | None = None) -> list[dict]:
    """[{index, cc, name}] from nvidia-smi; [] when there is none or it fails."""
    result = runner.run(["nvidia-smi", "--query-gpu=index,compute_cap,name", "--format=csv,noheader"], timeout=30, env=env)
    return parse_query_gpus(result.stdout) if result.ok else []


def parse_query_gpus(text: str) -> list[dict]:
    gpus = []
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) == 3 and parts[0].isdigit() and re.fullmatch(r"\d+\.\d+", parts[1]):
            gpus.append({"index": int(parts[0]), "cc": parts[1], "name": parts[2]})
    return gpus


def compile_targets(nvcc: Nvcc, targets: Sequence[Target], gpus: Sequence[dict], env: Mapping[str, str] | None = None) -> list[SmokeResult]:
    """Compile for each target; run the binary on the first host GPU it can run on."""
    workdir = tempfile.mkdtemp(prefix="fwdoctor-nvcc-")
    try:
        source = os.path.join(workdir, "axpy.cu")
        with open(source, "w", encoding="utf-8") as handle:
            handle.write(AXPY_CU)
        return [_one(nvcc, target, source, workdir, gpus, env) for target in targets]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _one(nvcc: Nvcc, target: Target, source: str, workdir: str, gpus: Sequence[dict], env) -> SmokeResult:
    name = f"compile {target}"
    who = f"nvcc {nvcc.release or '?'} ({nvcc.path})"
    binary = os.path.join(workdir, f"axpy_{target}")
    argv = [nvcc.path, "-gencode", gencode(target), "-o", binary, source]
    details = {"nvcc": nvcc.path, "nvcc_version": nvcc.version, "target": str(target), "argv": argv}
    result = runner.run(argv, timeout=COMPILE_TIMEOUT_S, env=env)
    if result.timed_out:
        return failed(name, f"{who} did not finish compiling for {target} within {COMPILE_TIMEOUT_S:g} s", "timeout", details)
    if not result.ok:
        message = nvcc_message(result.stderr, result.stdout) or result.describe_failure()
        return failed(name, f"{who} refused {target}: {message}", f"{result.stderr}\n{result.stdout}\n{message}", details)
    runnable = [g for g in gpus if runs_on([target], g["cc"])]
    if not runnable:
        why = "no GPU on this host" if not gpus else f"no GPU here runs {target} (host: {', '.join(g['cc'] for g in gpus)})"
        return SmokeResult(name, PASS, f"{who} compiled for {target}; not run: {why}", details={**details, "ran": False})
    gpu = runnable[0]
    run_env = dict(env or os.environ)
    # nvidia-smi numbers GPUs in PCI bus order; CUDA's default order is fastest first.
    run_env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    run_env["CUDA_VISIBLE_DEVICES"] = str(gpu["index"])
    ran = runner.run([binary], timeout=RUN_TIMEOUT_S, env=run_env)
    details = {**details, "ran": True, "gpu": gpu, "output": (ran.stdout or "").strip()[-300:]}
    m = _RAN.search(ran.stdout or "")
    if ran.ok and m and m.group(2) == "0":
        return SmokeResult(name, PASS, f"{who} compiled for {target}; ran on GPU {gpu['index']} ({gpu['name']}, cc {gpu['cc']}): {m.group(1)} results exact", details=details)
    text = f"{ran.stderr}\n{ran.stdout}".strip() or ran.describe_failure()
    if m:
        return failed(name, f"compiled for {target}, but on GPU {gpu['index']} {m.group(2)} of {m.group(1)} results were wrong", text, details)
    return failed(name, f"compiled for {target}, but the program failed on GPU {gpu['index']} ({gpu['cc']}): {text.splitlines()[-1][:200] if text else '?'}", text, details)


def run_compile_only(arch: Sequence[str], env: Mapping[str, str]) -> list[SmokeResult]:
    """The whole --compile-only flow. Raises ValueError for a malformed --arch entry."""
    targets: list[Target] = []
    for entry in arch:
        targets.extend(parse_targets([entry]))
    gpus = host_gpus(env)
    if not targets:
        if not gpus:
            return [SmokeResult("compile", SKIPPED, "no GPU found (nvidia-smi) to pick architectures from: pass --arch CC (e.g. --arch 8.0)")]
        seen = []
        for g in gpus:
            for t in parse_targets([g["cc"]]):
                if t not in seen:
                    seen.append(t)
        targets = seen
    nvcc = find_nvcc(env)
    if nvcc is None:
        return [SmokeResult("compile", FAIL, "no nvcc: looked at $CUDA_HOME/bin/nvcc, nvcc on PATH and /usr/local/cuda/bin/nvcc",
                            diagnosis="toolkit-missing", hint="install a CUDA toolkit, or set CUDA_HOME to one")]
    return compile_targets(nvcc, targets, gpus, env)
