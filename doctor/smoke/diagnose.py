"""From the error text a smoke test saw to the diagnosis that explains it.

Pure data and one pure function. Each pattern is the exact text the library prints, so a
smoke failure points at the `fwdoctor explain ID` page that `check` would have raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnosis:
    pattern: re.Pattern[str]
    finding: str | None  # an id from docs/findings.md, or None when no rule covers it
    hint: str


def _d(pattern: str, finding: str | None, hint: str) -> Diagnosis:
    return Diagnosis(re.compile(pattern, re.IGNORECASE), finding, hint)


# First match wins: the more specific texts come first.
DIAGNOSES: tuple[Diagnosis, ...] = (
    # CUDA runtime cudaErrorNoKernelImageForDevice; torch's own warning on import.
    _d(r"no kernel image is available for execution on the device", "gpu-arch-unsupported-by-torch",
       "this torch build has no kernels for the GPU's compute capability; install a wheel whose arch list covers it"),
    _d(r"is not compatible with the current PyTorch installation", "gpu-arch-unsupported-by-torch",
       "this torch build has no kernels for the GPU's compute capability; install a wheel whose arch list covers it"),
    _d(r"CUBLAS_STATUS_ARCH_MISMATCH", "gpu-arch-unsupported-by-torch",
       "cuBLAS has no kernels for this GPU's compute capability"),
    # nvcc's own refusal (seen here: CUDA 13.0 for compute_50/61/70).
    _d(r"Unsupported gpu architecture", "gpu-arch-unsupported-by-toolkit",
       "the active nvcc cannot target this architecture; use a toolkit that still (or already) supports it"),
    _d(r"unsupported GNU version", "host-compiler-unsupported",
       "nvcc rejects the default gcc; point it at a supported one with -ccbin or NVCC_CCBIN"),
    _d(r"Driver/library version mismatch", "driver-library-mismatch",
       "the loaded kernel module and the user-space driver differ; reboot (or reload the nvidia modules)"),
    _d(r"CUDA driver version is insufficient|driver on your system is too old|forward compatibility was attempted", "driver-too-old-for-torch",
       "the driver is older than the CUDA runtime in use; upgrade the driver or install a torch built for an older CUDA"),
    _d(r"Found no NVIDIA driver", "driver-missing",
       "torch sees no NVIDIA driver; install or load it (nvidia-smi must work)"),
    _d(r"Torch not compiled with CUDA enabled", "torch-cpu-build-on-gpu-host",
       "this is a CPU-only torch; install a CUDA build"),
    _d(r"undefined symbol: nccl", "nccl-shadowed",
       "another libnccl was loaded before torch's; check LD_LIBRARY_PATH and LD_PRELOAD"),
    # The gap is bounded: ".*" re-scanned the rest of the line from every repeat of the
    # phrase (quadratic on a long line); NCCL names the /dev/shm path right after it.
    _d(r"Error while creating shared memory segment|No space left on device.{0,200}?shm|Bus error", "shm-too-small",
       "NCCL ran out of /dev/shm; enlarge it (docker run --shm-size=16g, or --ipc=host)"),
    _d(r"an illegal memory access was encountered|illegal address", None,
       "a kernel touched invalid memory: a driver, hardware or library bug; check `dmesg` for Xid errors and rerun with CUDA_LAUNCH_BLOCKING=1"),
    _d(r"CUBLAS_STATUS_\w+", None,
       "cuBLAS failed; rerun with CUBLAS_LOGINFO_DBG=1 and check that torch's bundled cuBLAS is the one loaded"),
    _d(r"out of memory", None,
       "the GPU ran out of memory; other processes may hold it (nvidia-smi)"),
    _d(r"No module named 'torch'", "torch-not-installed",
       "the interpreter under test has no torch; pass the right one with --python"),
)


def diagnose(text: str) -> Diagnosis | None:
    """The first diagnosis whose pattern occurs in `text`, or None."""
    for item in DIAGNOSES:
        if item.pattern.search(text or ""):
            return item
    return None


def first_error_line(text: str, limit: int = 300) -> str:
    """The most telling line of an error text: the one a diagnosis matched, else the last
    non-empty line (tracebacks end with the exception)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    for line in lines:
        if diagnose(line) is not None:
            return line[:limit]
    return lines[-1][:limit] if lines else ""
