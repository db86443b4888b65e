"""`fwdoctor smoke kernel`: do real kernels give right answers on every GPU?

workers/kernel_worker.py runs in the interpreter under test (a child process with a
timeout: a broken driver can hang or crash it) and prints JSON; `interpret` turns that
into one SmokeResult per GPU. No GPU is a skip that says so, never a pass. A GPU that the
host has but torch cannot see is a failure with torch's own error text.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from fwdoctor import runner
from fwdoctor.host import Host
from fwdoctor.libraries import library
from fwdoctor.smoke.result import FAIL, PASS, SKIPPED, SmokeResult, failed
from fwdoctor.smoke.workers import worker_path

DEFAULT_TIMEOUT_S = 300.0

HANG_HINT = "a driver call that never returns: check `nvidia-smi` and `dmesg` for Xid errors; rerun with --device N to isolate one GPU"


def gpu_expected(host: Host) -> tuple[bool, str]:
    """Whether this host has an NVIDIA GPU that torch should see, and the evidence.

    The driver's device nodes and /proc entries count; a bare PCI device counts only
    outside containers (sysfs shows the host's GPUs inside a CPU-only container too).
    """
    evidence = driver_gpu_evidence(host)
    if evidence:
        return True, evidence
    if host.exists("/.dockerenv") or host.exists("/run/.containerenv"):
        return False, "in a container without /dev/nvidia0"
    for dev in host.listdir("/sys/bus/pci/devices"):
        base = f"/sys/bus/pci/devices/{dev}"
        try:
            vendor = (host.read_text(f"{base}/vendor") or "").strip()
            klass = (host.read_text(f"{base}/class") or "").strip()
        except OSError:
            continue
        if vendor == "0x10de" and klass.startswith("0x03"):  # display controller: VGA 0x0300, 3D 0x0302
            return True, f"NVIDIA PCI device {dev} (class {klass})"
    return False, "no /dev/nvidia0, no /proc/driver/nvidia/gpus, no NVIDIA display/3D PCI device"


def driver_gpu_evidence(host: Host) -> str | None:
    """What shows the NVIDIA driver has a GPU here (its device node or /proc entries), or None."""
    if host.exists("/dev/nvidia0"):
        return "/dev/nvidia0 exists"
    gpus = host.listdir("/proc/driver/nvidia/gpus")
    if gpus:
        return f"/proc/driver/nvidia/gpus lists {len(gpus)}"
    return None


def worker_argv(python: str, devices: Sequence[int] | None, gemm: bool = True, cpu: bool = False) -> list[str]:
    argv = [python, worker_path("kernel_worker")]
    if cpu:
        argv.append("--cpu")
    for index in () if cpu else devices or ():
        argv += ["--device", str(index)]
    if not gemm:
        argv.append("--no-gemm")
    return argv


def run_worker(python: str, devices: Sequence[int] | None, timeout: float, gemm: bool = True, cpu: bool = False) -> runner.CommandResult:
    return runner.run(worker_argv(python, devices, gemm, cpu), timeout=timeout)


def parse_output(stdout: str) -> dict | None:
    """The worker's JSON (its last non-empty stdout line), or None if there is none."""
    for line in reversed((stdout or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def run(python: str, devices: Sequence[int] | None, timeout: float, host: Host, gemm: bool = True, cpu: bool = False) -> list[SmokeResult]:
    """One result per GPU; with `cpu`, one result for the CPU (the same checks, oneDNN)."""
    result = run_worker(python, devices, timeout, gemm, cpu)
    return interpret(python, result, gpu_expected(host), timeout)


def interpret(python: str, result: runner.CommandResult, expected: tuple[bool, str], timeout: float) -> list[SmokeResult]:
    if result.error:
        return [failed("kernel", f"cannot run {python}: {result.error}", result.error, hint="pass an existing interpreter with --python")]
    if result.timed_out:
        return [SmokeResult("kernel", FAIL, f"the kernel test in {python} did not finish within {timeout:g} s (killed)", error="timeout", hint=HANG_HINT)]
    data = parse_output(result.stdout)
    if data is None:
        text = f"{result.stderr}\n{result.stdout}".strip()
        return [failed("kernel", f"the kernel test in {python} died ({result.describe_failure()})", text or result.describe_failure())]
    if data.get("torch") is None:
        return [failed("kernel", f"cannot import torch in {python}: {data.get('error', '?')}", str(data.get("error", "")))]
    has_gpu, evidence = expected
    devices = data.get("devices") or []
    if data.get("mode") == "cpu":
        return [device_result(data, dev) for dev in devices]
    if not data.get("device_count"):  # also with --device N: no GPU is a skip, not N failures
        if has_gpu:
            why = data.get("init_error") or "torch.cuda.device_count() is 0"
            if data.get("torch_cuda") is None:
                why = f"{why}; torch {data.get('torch')} is a CPU-only build (Torch not compiled with CUDA enabled)"
            return [failed("kernel", f"this host has a GPU ({evidence}) but torch {data.get('torch')} sees none", why)]
        return [SmokeResult("kernel", SKIPPED, f"no GPU: torch {data.get('torch')} sees no CUDA device and this host has none ({evidence}); no kernel was run",
                            details={"torch": data.get("torch"), "torch_cuda": data.get("torch_cuda")},
                            hint="use --compile-only --arch CC to test the CUDA toolkit without a GPU")]
    return [device_result(data, dev) for dev in devices]


def device_result(data: Mapping[str, Any], dev: Mapping[str, Any]) -> SmokeResult:
    index = dev.get("index")
    if index == "cpu":
        test, label = "kernel cpu", f"CPU ({dev.get('threads', '?')} threads, oneDNN {'on' if dev.get('mkldnn') else 'off'})"
    else:
        test = f"kernel gpu{index}"
        label = f"GPU {index} {dev.get('name', '')} (cc {dev.get('cc', '?')})".replace("  ", " ")
    details = {"torch": data.get("torch"), "torch_cuda": data.get("torch_cuda"), "arch_list": data.get("arch_list"), "cudnn": data.get("cudnn"), **dict(dev)}
    if dev.get("error"):
        return failed(test, f"{label}: {dev['error']}", str(dev["error"]), details)
    checks = list(dev.get("checks") or [])
    bad = [c for c in checks if c.get("status") in ("fail", "error")]
    ran = [c for c in checks if c.get("status") in ("pass", "fail")]
    worst = max((float(c.get("max_rel_error", 0.0)) for c in ran), default=0.0)
    details["max_rel_error"] = worst
    tflops = {k: v for k, v in (dev.get("tflops") or {}).items() if v is not None}
    perf = ", ".join(f"{k} {v:g} TFLOP/s" for k, v in tflops.items())
    if bad:
        errors = [c.get("error") for c in bad if c.get("error")]
        names = ", ".join(c["name"] for c in bad)
        if errors:
            return failed(test, f"{label}: {names} raised: {errors[0]}", "\n".join(errors), details)
        amp = [c for c in bad if c.get("why")]
        if amp:  # a training step judged on its own terms (loss, gradients, scaler), not a tolerance
            return SmokeResult(test, FAIL, f"{label}: {amp[0]['name']}: {amp[0]['why']}", details=details, error=amp[0]["why"],
                               hint="mixed precision diverges or overflows: check the GPU (dmesg Xid, nvidia-smi -q ECC) and rerun with --device N")
        worst_bad = max(bad, key=lambda c: float(c.get("max_rel_error", 0.0)))
        return SmokeResult(test, FAIL, f"{label}: {names} outside tolerance (max rel error {float(worst_bad.get('max_rel_error', 0.0)):.3g} > {worst_bad.get('tolerance')})",
                           details=details, error="wrong results", hint="wrong answers without an error: suspect the GPU or driver; check dmesg for Xid errors and the GPU's clocks/ECC (nvidia-smi -q)")
    if not ran:
        return SmokeResult(test, FAIL, f"{label}: no check ran", details=details)
    done = ", ".join(c["name"] for c in ran)
    skipped = [c for c in checks if c.get("status") == "skipped"]
    note = f"; skipped {', '.join(c['name'] for c in skipped)} ({skipped[0].get('why')})" if skipped else ""
    return SmokeResult(test, PASS, f"{label}: {done} within tolerance (max rel error {worst:.2g}){conv_note(data, dev)}{'; GEMM ' + perf if perf else ''}{note}", details=details)


def conv_note(data: Mapping[str, Any], dev: Mapping[str, Any]) -> str:
    """"; conv2d on Cudnn (cuDNN 9.24.0, /path/libcudnn.so.9)": where the convolutions ran."""
    backends = sorted({b for b in (dev.get("conv_backends") or {}).values() if b})
    if not backends:
        return ""
    text = f"; conv2d on {'/'.join(backends)}"
    cudnn = data.get("cudnn") or {}
    if dev.get("index") != "cpu" and cudnn.get("version"):
        text += f" (cuDNN {cudnn_version_text(cudnn['version'])}{', ' + cudnn['library'] if cudnn.get('library') else ''})"
    return text


def cudnn_version_text(number: int) -> str:
    """cudnnGetVersion()'s integer as a dotted version (92400 -> 9.24.0), by the one
    description of cuDNN's version code (fwdoctor.libraries)."""
    return library("cudnn").version_code.decode(int(number)) or str(number)
