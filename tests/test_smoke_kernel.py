"""`smoke kernel`: the no-GPU skip, failure diagnoses, and (marked gpu) real kernels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fwdoctor.host import Host
from fwdoctor.runner import CommandResult
from fwdoctor.smoke import kernel
from fwdoctor.smoke.diagnose import diagnose
from helpers import torch_python

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "smoke"


TORCH_PY = torch_python()
HAS_GPU = kernel.gpu_expected(Host.live_host())[0]


def _ran(stdout: str, returncode: int = 0, stderr: str = "") -> CommandResult:
    return CommandResult(("python", "kernel_worker.py"), returncode, stdout, stderr)


NO_GPU = (False, "no /dev/nvidia0")
HAS_ONE = (True, "/dev/nvidia0 exists")


@pytest.mark.requires_no_gpu  # a no-GPU path: skipped where a GPU answers
@pytest.mark.skipif(TORCH_PY is None, reason="no interpreter with torch (make test-venv)")
def test_without_a_gpu_the_kernel_test_is_skipped_and_exits_0(cli):
    if HAS_GPU:
        pytest.skip("this host has a GPU")
    result = cli("smoke", "kernel", "--python", TORCH_PY, "--json")
    assert result.exit_code == 0
    (r,) = json.loads(result.stdout)["results"]
    assert r["status"] == "skipped"
    assert "no GPU" in r["message"] and "no kernel was run" in r["message"]


def test_recorded_no_gpu_output_is_a_skip_never_a_pass():
    out = (DATA / "kernel-worker-cu130-no-gpu.json").read_text()
    (r,) = kernel.interpret("python", _ran(out), NO_GPU, 60)
    assert r.status == "skipped"
    assert "torch 2.14.1+cu130 sees no CUDA device" in r.message


def test_asking_for_a_device_on_a_host_without_gpus_is_still_a_skip():
    out = (DATA / "kernel-worker-cu130-no-gpu-device0.json").read_text()
    (r,) = kernel.interpret("python", _ran(out), NO_GPU, 60)
    assert r.status == "skipped"
    assert "sees no CUDA device and this host has none" in r.message


def test_a_gpu_torch_cannot_see_fails_with_the_drivers_words():
    out = (DATA / "kernel-worker-cu130-no-gpu.json").read_text()
    (r,) = kernel.interpret("python", _ran(out), HAS_ONE, 60)
    assert r.status == "fail"
    assert r.error.startswith("RuntimeError: Found no NVIDIA driver on your system")
    assert r.diagnosis == "driver-missing"


def test_an_interpreter_without_torch_fails_and_says_so():
    out = (DATA / "kernel-worker-no-torch.json").read_text()
    (r,) = kernel.interpret("python3", _ran(out), HAS_ONE, 60)
    assert r.status == "fail"
    assert r.diagnosis == "torch-not-installed"
    assert "No module named 'torch'" in r.message


def test_real_run_under_an_interpreter_without_torch(cli):
    import shutil

    python3 = shutil.which("python3")
    result = cli("smoke", "kernel", "--python", python3, "--json")
    data = json.loads(result.stdout)["results"][0]
    if data["status"] == "skipped" or "torch" not in data["message"]:
        pytest.skip(f"{python3} has torch")
    assert result.exit_code == 1
    assert data["diagnosis"] == "torch-not-installed"


def _device(checks, **extra):
    # The worker's per-device shape (workers/kernel_worker.py), built here to test the mapping.
    return {"tolerance": {}, "torch": "2.14.1+cu130", "torch_cuda": "13.0", "arch_list": ["sm_75", "sm_80"], "device_count": 1,
            "devices": [{"index": 0, "name": "Tesla P100-PCIE-16GB", "cc": "6.0", "checks": checks, "tflops": {}, **extra}]}


def test_no_kernel_image_points_at_gpu_arch_unsupported_by_torch():
    error = (DATA / "torch-error-no-kernel-image.txt").read_text()
    checks = [{"name": "matmul_fp32", "status": "error", "error": error}, {"name": "matmul_fp16", "status": "error", "error": error}]
    (r,) = kernel.interpret("python", _ran(json.dumps(_device(checks))), HAS_ONE, 60)
    assert r.status == "fail"
    assert r.test == "kernel gpu0"
    assert r.diagnosis == "gpu-arch-unsupported-by-torch"
    assert r.error == "RuntimeError: CUDA error: no kernel image is available for execution on the device"


def test_wrong_answers_without_an_error_fail_with_the_error_and_tolerance():
    checks = [
        {"name": "matmul_fp32", "status": "fail", "max_rel_error": 0.93, "tolerance": 0.002},
        {"name": "reduction_fp32", "status": "pass", "max_rel_error": 1e-7, "tolerance": 1e-4},
    ]
    (r,) = kernel.interpret("python", _ran(json.dumps(_device(checks))), HAS_ONE, 60)
    assert r.status == "fail"
    assert "matmul_fp32 outside tolerance (max rel error 0.93 > 0.002)" in r.message
    assert "Xid" in r.hint


def test_a_passing_gpu_reports_max_error_and_tflops():
    checks = [{"name": n, "status": "pass", "max_rel_error": e, "tolerance": 1} for n, e in (("matmul_fp32", 1e-6), ("matmul_fp16", 3e-4))]
    checks.append({"name": "matmul_bf16", "status": "skipped", "why": "compute capability 6.0 < 8.0: no bf16 tensor cores"})
    (r,) = kernel.interpret("python", _ran(json.dumps(_device(checks, tflops={"fp32": 9.1, "fp16": 18.2}))), HAS_ONE, 60)
    assert r.status == "pass"
    assert "max rel error 0.0003" in r.message
    assert "fp16 18.2 TFLOP/s" in r.message
    assert "skipped matmul_bf16" in r.message


def test_a_hung_worker_is_a_failure_with_what_to_check():
    hung = CommandResult(("python",), None, "", "", timed_out=True)
    (r,) = kernel.interpret("python", hung, HAS_ONE, 5)
    assert r.status == "fail" and "did not finish within 5 s" in r.message
    assert "dmesg" in r.hint


def test_a_crashed_worker_is_diagnosed_from_its_stderr():
    crashed = _ran("", returncode=-6, stderr="terminate called\nCUDA error: an illegal memory access was encountered\n")
    (r,) = kernel.interpret("python", crashed, HAS_ONE, 60)
    assert r.status == "fail"
    assert r.error == "CUDA error: an illegal memory access was encountered"
    assert "CUDA_LAUNCH_BLOCKING=1" in r.hint


def test_garbage_output_is_a_clear_failure_not_a_traceback():
    (r,) = kernel.interpret("python", _ran("{not json\n\x00\xff"), HAS_ONE, 60)
    assert r.status == "fail" and "died" in r.message


@pytest.mark.parametrize(
    ("text", "finding"),
    [
        ("RuntimeError: CUDA error: CUBLAS_STATUS_ARCH_MISMATCH when calling `cublasCreate(handle)`", "gpu-arch-unsupported-by-torch"),
        ("Failed to initialize NVML: Driver/library version mismatch", "driver-library-mismatch"),
        ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040).", "driver-too-old-for-torch"),
        ("AssertionError: Torch not compiled with CUDA enabled", "torch-cpu-build-on-gpu-host"),
        ("undefined symbol: ncclCommRegister", "nccl-shadowed"),
        ("include/crt/host_config.h:143:2: error: #error -- unsupported GNU version! gcc versions later than 12 are not supported!", "host-compiler-unsupported"),
    ],
)
def test_error_texts_map_to_their_diagnosis(text, finding):
    found = diagnose(text)
    assert found is not None and found.finding == finding


def test_every_diagnosis_points_at_a_real_finding_id():
    from fwdoctor.findings import BY_ID
    from fwdoctor.smoke.diagnose import DIAGNOSES

    assert [d.finding for d in DIAGNOSES if d.finding is not None and d.finding not in BY_ID] == []


def test_an_unknown_error_has_no_diagnosis():
    assert diagnose("something else entirely") is None


# --------------------------------------------------------------------------- gpu_expected
def test_driver_device_node_means_a_gpu_is_expected(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "nvidia0").write_text("")
    assert kernel.gpu_expected(Host.at_root(tmp_path)) == (True, "/dev/nvidia0 exists")


def test_an_nvidia_pci_display_device_counts_outside_containers(tmp_path):
    dev = tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:01:00.0"
    dev.mkdir(parents=True)
    (dev / "vendor").write_text("0x10de\n")
    (dev / "class").write_text("0x030200\n")
    assert kernel.gpu_expected(Host.at_root(tmp_path))[0] is True
    (tmp_path / ".dockerenv").write_text("")
    assert kernel.gpu_expected(Host.at_root(tmp_path))[0] is False


def test_an_empty_root_expects_no_gpu(tmp_path):
    assert kernel.gpu_expected(Host.at_root(tmp_path))[0] is False


@pytest.mark.requires_gpu
@pytest.mark.skipif(TORCH_PY is None, reason="no interpreter with torch")
def test_every_gpu_passes_real_kernels_within_tolerance(cli):
    if not HAS_GPU:
        pytest.skip("needs an NVIDIA GPU and driver")
    result = cli("smoke", "kernel", "--python", TORCH_PY, "--json")
    results = json.loads(result.stdout)["results"]
    assert result.exit_code == 0, results
    assert results and all(r["status"] == "pass" for r in results)
    for r in results:
        assert r["details"]["tflops"].get("fp16", 0) > 0
        # the headline figure fleet report compares nodes by: fp16, 4096 x 4096
        assert r["details"]["gemm_tflops"] == r["details"]["tflops"]["fp16"]
        assert r["details"]["gemm"]["dtype"] == "fp16" and r["details"]["gemm"]["n"] == 4096


def test_a_long_line_repeating_an_error_phrase_is_diagnosed_in_linear_time():
    """The shm pattern's unbounded gap re-scanned the rest of the line from every repeat of
    "No space left on device" (187 KB: 18.7 s here); bounded, the whole line takes
    milliseconds, and the real NCCL message is still read."""
    import time

    line = "No space left on device " * 8000
    started = time.perf_counter()
    diagnose(line)
    assert time.perf_counter() - started < 2.0
    found = diagnose("NCCL WARN Error: No space left on device (errno 28) /dev/shm/nccl-abc")
    assert found is not None and found.finding == "shm-too-small"
