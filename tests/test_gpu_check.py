"""tools/gpu_check.py (`make gpu-check`): on this machine, no GPU, the report must say what
was skipped and why, still run the CPU kernel check, and exit 0."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import gpu_check  # noqa: E402
from helpers import torch_python  # noqa: E402

DATA = REPO / "tests" / "data" / "smoke"


def test_out_of_budget_every_step_is_skipped_with_its_reason(tmp_path):
    code = gpu_check.main(["--budget", "0", "--no-image", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "gpu-check.json").read_text())
    assert code == 0 and data["ok"] is True and data["schema"] == "fwdoctor-gpu-check/1"
    steps = {s["name"]: s for s in data["steps"]}
    assert list(steps) == ["check", "kernel", "kernel-cpu", "compile", "allreduce", "image"]
    assert steps["check"]["status"] == "skipped" and steps["check"]["why"].startswith("out of time")
    assert steps["kernel"]["why"] == "GPU count unknown: check --deep gave no answer"
    assert data["skipped"]["image"] == "--no-image"
    md = (tmp_path / "gpu-check.md").read_text()
    assert md.startswith("# fwdoctor gpu-check: PASS") and "| kernel | skipped | 0.0 | GPU count unknown" in md


def test_step_status_from_smoke_results():
    assert gpu_check.smoke_status([{"status": "skipped", "message": "no GPU"}]) == ("skipped", "no GPU")
    assert gpu_check.smoke_status([{"status": "pass"}, {"status": "fail", "test": "kernel gpu1", "message": "GEMM wrong"}]) == ("fail", "kernel gpu1: GEMM wrong")
    assert gpu_check.smoke_status([]) == ("fail", "no result")


def test_figures_quote_the_kernel_and_amp_numbers():
    run = gpu_check.Run(None, 10)
    from fwdoctor.runner import CommandResult
    from fwdoctor.smoke import kernel

    out = (DATA / "kernel-worker-cu130-cpu.json").read_text()
    (r,) = kernel.interpret("python", CommandResult(("python",), 0, out, ""), (False, ""), 60)
    run.add({"name": "kernel-cpu", "status": "pass", "results": [r.to_json()]})
    fig = gpu_check.figures(run)["kernel cpu"]
    assert fig["conv_backends"] == ["Mkldnn"] and fig["amp"]["amp_bf16"]["skipped_steps"] == 0
    assert fig["max_rel_error"] == r.details["max_rel_error"]


@pytest.mark.requires_no_gpu  # a no-GPU path: skipped where a GPU answers
@pytest.mark.slow  # check --deep and the CPU kernel worker for real: ~40 s on two cores
@pytest.mark.skipif(torch_python() is None, reason="no interpreter with torch")
def test_on_this_machine_a_clear_no_gpu_report(tmp_path):
    code = gpu_check.main(["--python", torch_python(), "--no-image", "--budget", "300", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "gpu-check.json").read_text())
    if data["host"]["gpu_count"]:
        pytest.skip("this host has a GPU")
    assert code == 0 and data["ok"]
    steps = {s["name"]: s for s in data["steps"]}
    assert steps["check"]["status"] == "pass" and steps["kernel-cpu"]["status"] == "pass"
    for name in ("kernel", "compile", "allreduce"):
        assert steps[name]["status"] == "skipped" and steps[name]["why"].startswith("no GPU: torch.cuda.device_count() in the interpreter under test is 0")
    assert "**No GPU**" in (tmp_path / "gpu-check.md").read_text()
    assert data["figures"]["kernel cpu"]["conv_backends"] == ["Mkldnn"]


def test_gpu_python_runs_the_check_with_that_interpreter_and_builds_no_venv():
    # A GPU machine that reaches no package index (the H200 of 2026-12-04): the test venv's
    # `pip install` cannot run there, the machine's own Python with torch can.
    import subprocess

    import os

    # Run under `make test` too: a nested make inherits MAKEFLAGS/MAKELEVEL and prints
    # "make[1]: Entering directory" around the plan.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    plan = subprocess.run(["make", "--no-print-directory", "-n", "gpu-check", "GPU_PYTHON=/opt/torch/.venv/bin/python3"], cwd=REPO,
                          capture_output=True, text=True, timeout=60, env=env)
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.strip().splitlines() == [
        "/opt/torch/.venv/bin/python3 tools/gpu_check.py --python /opt/torch/.venv/bin/python3 --out gpu-check-report"]


def test_an_interpreter_without_fwdoctor_is_told_how_to_install_it(tmp_path):
    import subprocess

    # -S: no site-packages, so neither the editable install nor click: fwdoctor is not importable.
    res = subprocess.run([sys.executable, "-S", str(REPO / "tools" / "gpu_check.py"), "--out", str(tmp_path / "out")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert f"fwdoctor is not importable by {sys.executable}" in res.stderr
    assert "pip install --no-index --no-deps --target" in res.stderr and f"GPU_PYTHON={sys.executable}" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "out").exists()
