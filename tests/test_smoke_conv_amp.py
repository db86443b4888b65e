"""`smoke kernel`: conv2d through cuDNN/oneDNN and a mixed-precision training step. On this
machine the real worker runs with `--cpu` (oneDNN, bf16 autocast); the GPU branch is the
same code with device cuda (run by tools/gpu_check.py where a GPU exists)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fwdoctor.runner import CommandResult
from fwdoctor.smoke import kernel
from fwdoctor.smoke.workers import kernel_worker
from helpers import torch_python

DATA = Path(__file__).resolve().parent / "data" / "smoke"
TORCH_PY = torch_python()
CPU_CHECKS = ["matmul_fp32", "matmul_bf16", "elementwise_fp32", "reduction_fp32", "conv2d_fp32_nchw", "conv2d_fp32_nhwc",
              "conv2d_bf16_nchw", "conv2d_bf16_nhwc", "amp_bf16"]


@pytest.mark.slow  # the real worker: torch import, oneDNN warm-up, 12 AMP steps (~15 s on two busy cores)
@pytest.mark.skipif(TORCH_PY is None, reason="no interpreter with torch (make test-venv)")
def test_smoke_kernel_cpu_runs_conv2d_on_onednn_and_an_amp_step(cli):
    result = cli("smoke", "kernel", "--cpu", "--python", TORCH_PY, "--json")
    assert result.exit_code == 0, result.output
    (r,) = json.loads(result.stdout)["results"]
    assert r["test"] == "kernel cpu" and r["status"] == "pass"
    checks = {c["name"]: c for c in r["details"]["checks"]}
    assert list(checks) == CPU_CHECKS
    assert all(c["status"] == "pass" for c in checks.values())
    for name in CPU_CHECKS[4:8]:
        assert checks[name]["backend"] == "Mkldnn" and checks[name]["max_rel_error"] <= checks[name]["tolerance"]
    assert checks["conv2d_fp32_nhwc"]["output_channels_last"] is True
    amp = checks["amp_bf16"]
    assert amp["autocast_dtype"] == "bfloat16" and amp["skipped_steps"] == 0
    assert amp["losses"][-1] <= amp["losses"][0] * (1 - kernel_worker.AMP_MIN_DROP)
    assert "conv2d on Mkldnn" in r["message"]


def test_cpu_flag_refuses_gpu_options(cli):
    result = cli("smoke", "kernel", "--cpu", "--device", "0")
    assert result.exit_code == 2 and "--cpu" in result.output


def test_recorded_cpu_output_is_one_result_naming_every_check():
    out = (DATA / "kernel-worker-cu130-cpu.json").read_text()
    (r,) = kernel.interpret("python", CommandResult(("python",), 0, out, ""), (False, "no /dev/nvidia0"), 60)
    assert r.status == "pass" and r.test == "kernel cpu"
    assert [c["name"] for c in r.details["checks"]] == CPU_CHECKS
    assert r.message.startswith("CPU (2 threads, oneDNN on): matmul_fp32, matmul_bf16")


def test_the_worker_argv_for_cpu_mode():
    argv = kernel.worker_argv("/venv/bin/python", [0], gemm=False, cpu=True)
    assert argv[0] == "/venv/bin/python" and argv[1].endswith("kernel_worker.py") and argv[2:] == ["--cpu", "--no-gemm"]
    assert kernel.worker_argv("/venv/bin/python", [0], cpu=True)[2:] == ["--cpu"]  # the CPU GEMM figure by default


# ----------------------------------------------------------------------------- AMP judged
def steps(losses, finite=None, scales=None):
    finite = finite or [True] * len(losses)
    scales = scales or [65536.0] * len(losses)
    return [{"loss": l, "grads_finite": f, "scale": s, "autocast_dtype": "float16"} for l, f, s in zip(losses, finite, scales)]


def test_a_falling_loss_passes():
    assert kernel_worker.judge_amp(steps([2.3, 2.0, 1.7, 1.5]))["status"] == "pass"


def test_a_scaler_that_skips_every_step_is_stuck():
    n = kernel_worker.AMP_STEPS
    out = kernel_worker.judge_amp(steps([2.3] * n, finite=[False] * n, scales=[65536.0 / 2**i for i in range(n)]))
    assert out["status"] == "fail" and "skipped 12 of 12 steps" in out["why"] and out["skipped_steps"] == n


def test_a_nan_loss_fails_and_a_flat_loss_fails():
    assert kernel_worker.judge_amp(steps([2.3, float("nan"), 1.0]))["why"] == "a loss was inf or NaN"
    flat = kernel_worker.judge_amp(steps([2.3, 2.29, 2.28]))
    assert flat["status"] == "fail" and flat["why"].startswith("the loss did not fall: 2.3 -> 2.28")


def test_an_amp_failure_is_a_failed_kernel_result_with_its_reason():
    data = json.loads((DATA / "kernel-worker-cu130-cpu.json").read_text())
    amp = next(c for c in data["devices"][0]["checks"] if c["name"] == "amp_bf16")
    amp.update(kernel_worker.judge_amp(steps([2.3, 2.29, 2.28])))  # the recorded run, made to stall
    (r,) = kernel.interpret("python", CommandResult(("python",), 0, json.dumps(data), ""), (False, ""), 60)
    assert r.status == "fail" and r.message.startswith("CPU (2 threads, oneDNN on): amp_bf16: the loss did not fall")


# ----------------------------------------------------------------------------- conv2d in the test process
@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def test_conv2d_matches_float64_in_both_layouts(torch):
    gen = torch.Generator().manual_seed(7)
    for channels_last in (False, True):
        seen: dict = {}
        err = kernel_worker.conv2d(torch, torch.device("cpu"), torch.float32, channels_last, gen, seen)
        assert err < kernel_worker.TOLERANCE["conv2d_fp32_nchw"] and seen["backend"] == "Mkldnn"


def test_a_convolution_that_misses_the_expected_library_is_an_error(torch, monkeypatch):
    monkeypatch.setitem(kernel_worker.CONV_BACKEND, "cpu", "Cudnn")
    gen = torch.Generator().manual_seed(7)
    out = kernel_worker.check("conv2d_fp32_nchw", lambda: kernel_worker.conv2d(torch, torch.device("cpu"), torch.float32, False, gen, {}))
    assert out == {"name": "conv2d_fp32_nchw", "status": "error", "error": "RuntimeError: torch dispatched this convolution to Mkldnn, not Cudnn"}


def test_cudnn_version_numbers_read_as_versions():
    assert [kernel.cudnn_version_text(n) for n in (92400, 91002, 8902)] == ["9.24.0", "9.10.2", "8.9.2"]


# ----------------------------------------------------------------------------- the GEMM figure
def test_the_gemm_figure_is_timed_for_its_budget_and_names_what_it_timed(torch):
    result: dict = {"tflops": {}}
    kernel_worker.gemm_figures(torch, torch.device("cpu"), [("fp32", torch.float32), ("bf16", torch.bfloat16)], result)
    gemm = result["gemm"]
    assert result["gemm_tflops"] == result["tflops"]["fp32"] > 0  # the CPU's headline is fp32
    assert result["tflops"]["bf16"] > 0 and "gemm_error" not in result
    assert gemm["dtype"] == "fp32" and gemm["n"] == kernel_worker.GEMM_N["cpu"] and gemm["iters"] >= kernel_worker.GEMM_MIN_ITERS
    assert kernel_worker.GEMM_BUDGET_S <= gemm["seconds"] < 1.0  # short: about the budget, never seconds
    assert result["gemm_tflops"] == pytest.approx(2 * gemm["n"] ** 3 * gemm["iters"] / gemm["seconds"] / 1e12, rel=0.01)


def test_a_gemm_that_raises_leaves_no_figure_and_says_why(torch):
    result: dict = {"tflops": {}}
    kernel_worker.gemm_figures(torch, torch.device("cpu"), [("fp32", torch.bool)], result)  # randn has no bool kernel: it raises
    assert result["gemm_tflops"] is None and result["tflops"]["fp32"] is None and result["gemm_error"]
