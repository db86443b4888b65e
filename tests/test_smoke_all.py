"""`smoke all`: check --deep, kernel and all-reduce in one run, one JSON report."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from fwdoctor.smoke.result import SmokeResult
from fwdoctor.smoke.suite import SCHEMA, SuiteResult, part_status, render_summary
from helpers import torch_python

REPO = Path(__file__).resolve().parents[1]


TORCH_PY = torch_python()
pytestmark = pytest.mark.usefixtures("use_test_kb")  # the check part judges with the frozen tests/kb


@pytest.mark.slow
@pytest.mark.skipif(TORCH_PY is None, reason="no interpreter with torch (make test-venv)")
def test_all_writes_a_report_with_every_part_and_the_same_exit_code(cli, tmp_path):
    report = tmp_path / "smoke.json"
    result = cli("smoke", "all", "--python", TORCH_PY, "--backend", "gloo", "--nproc", "2", "--max-bytes", "64", "--factor", "8",
                 "--report", str(report))
    data = json.loads(report.read_text())
    assert data["schema"] == SCHEMA
    assert data["exit_code"] == result.exit_code
    assert data["ok"] is (result.exit_code == 0)
    assert set(data) >= {"check", "kernel", "allreduce", "summary", "python", "created"}
    assert "findings" in data["check"] and "facts" in data["check"]
    assert data["python"] == TORCH_PY
    (ar,) = data["allreduce"]
    assert ar["status"] == "pass" and ar["details"]["world_size"] == 2
    assert data["kernel"]  # a result per GPU, or one skip saying there is none
    assert data["summary"]["kernel"] == part_status([SmokeResult(r["test"], r["status"], r["message"]) for r in data["kernel"]])
    assert f"fwdoctor smoke all: {'PASS' if result.exit_code == 0 else 'FAIL'}" in result.stdout
    assert f"report: {report}" in result.stdout


@pytest.mark.slow
@pytest.mark.skipif(TORCH_PY is None, reason="no interpreter with torch (make test-venv)")
def test_all_on_the_cpu_runs_kernel_cpu_and_a_gloo_allreduce(cli, tmp_path):
    report = tmp_path / "smoke.json"
    result = cli("smoke", "all", "--cpu", "--python", TORCH_PY, "--max-bytes", "64", "--factor", "8", "--report", str(report))
    data = json.loads(report.read_text())
    assert data["kernel"] and all(r["details"].get("device") == "cpu" or "cpu" in r["test"] for r in data["kernel"]), data["kernel"]
    (ar,) = data["allreduce"]
    assert ar["details"]["backend"] == "gloo" and ar["details"]["world_size"] == 2
    assert data["exit_code"] == result.exit_code


def test_all_on_the_cpu_refuses_nccl(cli):
    result = cli("smoke", "all", "--cpu", "--backend", "nccl")
    assert result.exit_code == 2 and "--cpu runs on the CPU: its all-reduce is gloo's, not --backend nccl" in result.output


def _suite(check_exit=0, kernel=(), allreduce=()):
    return SuiteResult(python="/usr/bin/python3", check={"exit_code": check_exit, "findings": []}, kernel=list(kernel), allreduce=list(allreduce))


def test_skips_alone_pass_but_are_reported_as_skipped():
    suite = _suite(kernel=[SmokeResult("kernel", "skipped", "no GPU")], allreduce=[SmokeResult("allreduce", "skipped", "no GPU")])
    assert suite.exit_code == 0
    assert suite.summary() == {"check": "pass", "kernel": "skipped", "allreduce": "skipped"}


def test_an_error_finding_from_check_fails_the_suite():
    suite = _suite(check_exit=1, kernel=[SmokeResult("kernel gpu0", "pass", "ok")])
    assert suite.exit_code == 1
    assert suite.to_json()["summary"]["check"] == "fail"


def test_one_failed_test_fails_its_part_and_the_suite():
    kernel = [SmokeResult("kernel gpu0", "pass", "ok"), SmokeResult("kernel gpu1", "fail", "no kernel image")]
    suite = _suite(kernel=kernel)
    assert part_status(kernel) == "fail" and suite.exit_code == 1
    assert "kernel       : fail" in render_summary(suite)


def test_report_json_has_the_documented_shape():
    fixed = dt.datetime(2026, 11, 30, 10, 0, 0, tzinfo=dt.timezone.utc)
    data = _suite(allreduce=[SmokeResult("allreduce", "pass", "fine", details={"avg_busbw_gbps": 1.5})]).to_json(now=lambda: fixed)
    assert data["created"] == "2026-11-30T10:00:00Z"
    assert data["allreduce"][0] == {"test": "allreduce", "status": "pass", "message": "fine", "error": "", "diagnosis": None, "hint": "",
                                    "details": {"avg_busbw_gbps": 1.5}}
    assert data["summary"]["kernel"] == "skipped"  # nothing ran is not a pass


def test_an_unwritable_report_path_is_a_doctor_error(cli, tmp_path):
    if TORCH_PY is None:
        pytest.skip("no interpreter with torch")
    result = cli("smoke", "all", "--python", TORCH_PY, "--no-allreduce", "--report", str(tmp_path / "missing" / "r.json"))
    assert result.exit_code == 2
    assert "--report" in result.output
