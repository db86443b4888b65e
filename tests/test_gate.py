"""`fwdoctor gate` without a scheduler (issue 27): the policy, the verdict, the budget, the
Slurm decisions against a recorded scontrol, and the CTRF / JUnit / Nagios / NPD outputs.
The real one-node Slurm and the stand-in GPU host are in tests/test_gate_slurm.py."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from fwdoctor import runner
from fwdoctor.gate import policy as gate_policy
from fwdoctor.gate import report, slurm
from fwdoctor.gate.run import Cause, GateResult, Step, verdict_of
from fwdoctor.model import Finding, Severity

ROOTS = Path(__file__).resolve().parent / "roots"
DEFAULT = gate_policy.load(None)


def finding(finding_id: str, severity: str, message: str = "m", **evidence: object) -> Finding:
    return Finding(id=finding_id, severity=Severity(severity), message=message, area="driver", evidence=dict(evidence))


# ----------------------------------------------------------------------------- policy
def test_the_default_policy_parses_and_drains_errors_and_pending_repairs():
    assert DEFAULT.verdict("driver-library-mismatch", "error") == "drain"
    assert DEFAULT.verdict("gpu-memory-repair-pending", "warning") == "drain"  # by id, over its severity
    assert DEFAULT.verdict("pcie-link-degraded", "warning") == "warn"
    assert DEFAULT.verdict("torch-not-installed", "info") is None
    assert DEFAULT.verdict("gpu-mig-enabled", "info") is None
    assert DEFAULT.unknown == "drain"


def test_a_policy_typo_is_an_error_naming_the_key():
    with pytest.raises(gate_policy.PolicyError, match="'gpu-ecc' is neither a severity"):
        gate_policy.parse({"drain": ["gpu-ecc"]})
    with pytest.raises(gate_policy.PolicyError, match="unknown keys"):
        gate_policy.parse({"drian": ["error"]})
    with pytest.raises(gate_policy.PolicyError, match="unknown must be one of"):
        gate_policy.parse({"unknown": "maybe"})


def test_show_policy_prints_the_default_and_checks_a_file(cli, tmp_path):
    result = cli("gate", "--show-policy")
    assert result.exit_code == 0 and yaml.safe_load(result.output)["unknown"] == "drain"
    bad = tmp_path / "p.yaml"
    bad.write_text("drain: [nope]\n")
    result = cli("gate", "--show-policy", "--policy", str(bad))
    assert result.exit_code == 2 and "'nope' is neither a severity" in result.output


# ----------------------------------------------------------------------------- verdict
def test_drains_come_first_then_errors_before_warnings():
    verdict, causes = verdict_of([finding("pcie-link-degraded", "warning", "x8"), finding("nvlink-down", "error", "2 of 18 down")], [], DEFAULT)
    assert verdict == "drain" and [c.id for c in causes] == ["nvlink-down", "pcie-link-degraded"]


def test_an_unfinished_step_and_a_probe_failure_follow_the_unknown_setting():
    steps = [Step("facts", "unknown", 8.0, "the probes did not finish within 6.0 s")]
    assert verdict_of([], steps, DEFAULT)[0] == "drain"
    assert verdict_of([], steps, gate_policy.parse({"unknown": "warn"}))[0] == "warn"
    assert verdict_of([finding("probe-failed", "warning")], [], gate_policy.parse({"unknown": "ignore"}))[0] == "ok"


def test_the_ecc_threshold_decides_whether_a_count_drains():
    one = finding("gpu-ecc-uncorrected", "warning", gpu={"ecc_uncorrected_volatile": 1})
    assert verdict_of([one], [], DEFAULT)[0] == "drain"
    assert verdict_of([one], [], gate_policy.parse({"drain": ["gpu-ecc-uncorrected"], "thresholds": {"ecc_uncorrected_volatile": 4}}))[0] == "warn"


def test_gate_on_fixture_facts_through_the_cli(cli, use_test_kb, tmp_path):
    facts = tmp_path / "bad.json"
    facts.write_text(cli("facts", "--root", str(ROOTS / "driver-mismatch")).stdout)
    result = cli("gate", "--facts", str(facts), "--json")
    body = json.loads(result.stdout)
    assert result.exit_code == 1 and body["verdict"] == "drain"
    assert body["causes"][0]["id"] == "driver-library-mismatch"
    warn = cli("gate", "--root", str(ROOTS / "hw-degraded"), "--budget", "60s")
    assert warn.exit_code == 0 and warn.output.startswith("fwdoctor gate: WARN")
    assert "pcie-link-degraded: GPU 0000:04:00.0: PCIe link at x8" in warn.output


def test_the_expected_gpu_count_comes_from_the_policy(cli, use_test_kb, tmp_path):
    facts = tmp_path / "ok.json"
    facts.write_text(cli("facts", "--root", str(ROOTS / "hw-healthy")).stdout)
    policy = tmp_path / "p.yaml"
    policy.write_text("drain: [error]\nexpect: {gpus: 8}\n")
    body = json.loads(cli("gate", "--facts", str(facts), "--policy", str(policy), "--json").stdout)
    assert body["verdict"] == "drain" and body["causes"][0]["message"] == f"2 of 8 GPUs answer (expected 8 from --policy {policy} expect.gpus)"


def test_the_budget_ends_a_step_that_hangs_and_calls_it_unknown(monkeypatch):
    """A facts child that never answers (a hung NVML) is killed at the deadline."""
    from fwdoctor.gate import run as gate_run

    monkeypatch.setattr(gate_run, "RESERVE_S", 0.5)
    real = runner.run
    monkeypatch.setattr(gate_run.runner, "run", lambda argv, timeout: real(["sleep", "60"], timeout=timeout))
    import time

    started = time.monotonic()
    result = gate_run.run_gate(DEFAULT, 3.0, ["--root", str(ROOTS / "driver-ok")])
    took = time.monotonic() - started
    assert took < 3.0 and result.elapsed_s < 3.0, took
    assert result.verdict == "drain" and result.first_cause.id == "unknown"
    assert "did not finish" in result.first_cause.message


# ----------------------------------------------------------------------------- slurm, recorded
IDLE = ("NodeName=vm Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 State=IDLE ThreadsPerCore=1 Partitions=debug  "
        "CfgTRES=cpu=2,mem=24105M,billing=2 AllocTRES= CapWatts=n/a ExtSensorsTemp=n/s")


def drained(reason: str, state: str = "IDLE+DRAIN") -> str:
    return IDLE.replace("State=IDLE", f"State={state}") + f" Reason={reason} [root@2026-12-03T17:17:18]"


class Scontrol:
    def __init__(self, show: str) -> None:
        self.show, self.calls = show, []

    def __call__(self, argv, timeout):
        self.calls.append(list(argv))
        out = self.show if argv[1] == "show" else ""
        return runner.CommandResult(tuple(argv), 0, out, "")


def test_scontrol_lines_parse_with_and_without_a_reason():
    node = slurm.parse_show_node(drained("maintenance: psu swap"), "vm")
    assert node.flags == ("IDLE", "DRAIN") and node.reason == "maintenance: psu swap" and not node.ours
    assert slurm.parse_show_node(IDLE, "vm").reason == ""
    assert slurm.parse_show_node(drained("x", "DOWN*+DRAIN"), "vm").down


@pytest.mark.parametrize("show, verdict, expect_update, says", [
    (IDLE, "drain", ["scontrol", "update", "nodename=vm", "state=drain", "reason=fwdoctor: nvlink-down: GPU 4"], "drained"),
    (drained("fwdoctor: nvlink-down: GPU 4"), "drain", None, "already drained by fwdoctor"),
    (drained("maintenance: psu swap"), "drain", None, "drained by someone else, left alone"),
    (drained("maintenance: psu swap"), "ok", None, "drained by someone else, left alone"),
    (drained("fwdoctor: nvlink-down: GPU 4"), "ok", ["scontrol", "update", "nodename=vm", "state=resume"], "resumed"),
    (drained("fwdoctor: nvlink-down: GPU 4", "DOWN+DRAIN"), "ok", None, "never resumed"),
    (IDLE, "warn", None, "not drained, nothing to do"),
])
def test_slurm_owns_only_the_drains_it_wrote(show, verdict, expect_update, says):
    scontrol = Scontrol(show)
    log = slurm.act("vm", verdict, "nvlink-down: GPU 4", run=scontrol)
    updates = [c for c in scontrol.calls if c[1] == "update"]
    assert updates == ([expect_update] if expect_update else [])
    assert says in log[0]


def test_a_reason_is_one_printable_line_and_capped():
    text = slurm.reason_text("nvlink-down: GPU 4\n\x1b[31mred" + "x" * 400)
    assert text.startswith("fwdoctor: nvlink-down: GPU 4 [31mred") and "\n" not in text and len(text) == slurm.REASON_MAX


# ----------------------------------------------------------------------------- outputs
def result_of(verdict: str, causes: list[Cause], steps: list[Step]) -> GateResult:
    return GateResult(verdict, 60.0, 2.5, causes=causes, steps=steps, policy="the default policy")


DRAIN = result_of("drain", [Cause("nvlink-down", "error", "GPU 4: 2 of 18 NVLink links down", "drain"),
                            Cause("pcie-link-degraded", "warning", "GPU 1 x8 <&>", "warn")],
                  [Step("facts", "ok", 2.0), Step("judge", "ok", 0.3)])
UNKNOWN = result_of("drain", [Cause("unknown", "error", "facts: did not finish", "drain")], [Step("facts", "unknown", 58.0, "did not finish")])
OK = result_of("ok", [], [Step("facts", "ok", 2.0)])


def test_ctrf_counts_steps_and_causes():
    doc = json.loads(report.render_ctrf(DRAIN, finished=1_800_000_000.0))
    summary = doc["results"]["summary"]
    assert doc["results"]["tool"]["name"] == "fwdoctor gate"
    assert (summary["tests"], summary["passed"], summary["failed"], summary["other"]) == (4, 2, 1, 1)
    assert summary["stop"] - summary["start"] == 2500
    assert {t["status"] for t in doc["results"]["tests"]} <= {"passed", "failed", "skipped", "pending", "other"}


def test_junit_is_xml_a_reader_parses_with_the_drain_as_a_failure():
    root = ET.fromstring(report.render_junit(DRAIN))
    suite = root.find("testsuite")
    assert suite.get("tests") == "4" and suite.get("failures") == "1"
    failure = suite.find("testcase[@name='nvlink-down']/failure")
    assert failure.get("message") == "GPU 4: 2 of 18 NVLink links down"
    assert "GPU 1 x8 <&>" in suite.find("testcase[@name='pcie-link-degraded']/system-out").text  # escaped, read back whole


def test_nagios_and_npd_exit_codes():
    assert [report.exit_code(r, "nagios") for r in (OK, DRAIN, UNKNOWN)] == [0, 2, 3]
    assert [report.exit_code(r, "npd") for r in (OK, DRAIN, UNKNOWN)] == [0, 1, 2]
    assert [report.exit_code(r, "fwdoctor") for r in (OK, DRAIN, UNKNOWN)] == [0, 1, 1]
    warn = result_of("warn", [Cause("pcie-link-degraded", "warning", "x8", "warn")], [])
    assert (report.exit_code(warn, "nagios"), report.exit_code(warn, "npd")) == (1, 0)


def test_the_npd_message_is_one_line_of_at_most_80_characters(cli, use_test_kb, tmp_path):
    facts = tmp_path / "bad.json"
    facts.write_text(cli("facts", "--root", str(ROOTS / "driver-mismatch")).stdout)
    result = cli("gate", "--facts", str(facts), "--exit-codes", "npd")
    assert result.exit_code == 1
    (line,) = result.stdout.splitlines()
    assert len(line) <= 80 and line.startswith("DRAIN: driver-library-mismatch: kernel module nvidia 575.57.08")


# ----------------------------------------------------------------------------- smoke, for CI
def test_smoke_writes_ctrf_and_junit_that_their_readers_parse(cli, monkeypatch):
    from fwdoctor.cli import smoke as smoke_cli
    from fwdoctor.smoke.result import SmokeResult

    results = [SmokeResult("kernel gpu0", "pass", "GPU 0: checks within tolerance"),
               SmokeResult("kernel gpu1", "fail", "GPU 1 failed", error="CUDA error: an illegal memory access <&>"),
               SmokeResult("kernel gpu2", "skipped", "no GPU 2")]
    monkeypatch.setattr(smoke_cli, "kernel_results", lambda *a, **k: results)
    out = cli("smoke", "kernel", "--report-format", "ctrf")
    assert out.exit_code == 1
    doc = json.loads(out.stdout)["results"]
    assert (doc["summary"]["tests"], doc["summary"]["passed"], doc["summary"]["failed"], doc["summary"]["skipped"]) == (3, 1, 1, 1)
    assert doc["tests"][1]["message"] == "CUDA error: an illegal memory access <&>"
    root = ET.fromstring(cli("smoke", "kernel", "--report-format", "junit").stdout)
    suite = root.find("testsuite")
    assert (suite.get("failures"), suite.get("skipped")) == ("1", "1")
    assert suite.find("testcase[@name='kernel gpu1']/failure").get("message") == "CUDA error: an illegal memory access <&>"
