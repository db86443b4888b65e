"""Every rule, in report order. Explicit, so grep finds them all."""

from __future__ import annotations

from fwdoctor.rules import build, conda, driver, fabric, frameworks, hardware, knowledge, libs, lifecycle, platform, python, releases, runtime, toolkit, torch, visibility, windows
from fwdoctor.rules.base import Rule

RULES: tuple[Rule, ...] = (
    *driver.RULES,
    # WSL: version 1 (no GPU), a Linux driver installed beside the Windows driver's libraries.
    *windows.RULES,
    # A container started without its GPUs, CUDA_VISIBLE_DEVICES hiding them.
    *visibility.RULES,
    # The driver's branch against NVIDIA's lifecycle table (end of life).
    *lifecycle.RULES,
    # NCCL and driver releases with a known bug fixed in a later release (issue 26).
    *releases.RULES,
    *toolkit.RULES,
    *libs.RULES,
    *python.RULES,
    # The CPU's AVX and the system glibc against what the installed wheels were built for.
    *platform.RULES,
    *torch.RULES,
    # conda envs, judged on their conda-meta records (pytorch build, libstdc++, cuDNN/NCCL).
    *conda.RULES,
    *frameworks.RULES,
    *runtime.RULES,
    # A torch, CUDA minor or driver branch newer than the KB: named, not judged.
    *knowledge.RULES,
    # NVSwitch fabric manager, GPU health, NCCL transports (fabric.RUN_RULES: smoke allreduce).
    *fabric.RULES,
    # PCIe links, IOMMU, ACS, ECC, NVLink, clocks, persistence (hardware.GATE_RULES: `gate` only).
    *hardware.RULES,
    # Source-build pre-flight: "not checked" unless the facts hold a build request
    # (`fwdoctor build torch` judges all of build.RULES).
    *build.CHECK_RULES,
)

# The KB areas the rules above read: `check` loads and validates these up front (while the
# probes run) and leaves the others (source-build variables) to the commands that need them;
# docker is read by rules.report_text (the toolkit releases with a known regression, a small
# area). tests/test_architecture.py keeps this list true.
KB_AREAS: tuple[str, ...] = ("cuda", "gpus", "torch", "libs", "frameworks", "docker")
