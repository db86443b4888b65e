"""`fwdoctor gate --slurm` on the real one-node Slurm .ci/setup-slurm.sh starts (issue 27):
faults injected through --facts and through the stand-in GPU host (tests/gpuhost: a lost
GPU, a driver/library mismatch, a hung NVML), the node drained with the reason, resumed once
the fault is gone, an admin's drain left alone, a hung check ended by the budget.

Every test leaves the node idle again (the fixture resumes it whatever happened). Skipped
when no Slurm answers here, which strict CI (FWDOCTOR_STRICT=1) turns into a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
from fwdoctor.render.textfit import unwrap

import gpuhost

# A real slurmctld/slurmd/munge and, for three tests, mount namespaces: not in `make test-fast`.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
FWDOCTOR = Path(sys.executable).parent / "fwdoctor"
ROOTS = REPO / "tests" / "roots"
TEST_KB = REPO / "tests" / "kb"
# The stand-in host's findings about this machine's own CUDA toolkit and Python env are not
# the scenario's: the test policy ignores them, so the first cause is the injected fault.
POLICY = """\
drain: [error, gpu-memory-repair-pending]
warn: [warning]
ignore: [torch-not-installed, toolkit-missing, multiple-toolkits, driver-too-old-for-toolkit, gpu-arch-unsupported-by-toolkit,
         cuda-path-inconsistent, torch-toolkit-mismatch, host-compiler-unsupported, torch-cpu-build-on-gpu-host,
         driver-too-old-for-torch, gpu-arch-unsupported-by-torch, python-env-mismatch, user-site-shadowing]
unknown: drain
expect: {gpus: 8}
"""
SHOWN = Path(os.environ.get("FWDOCTOR_GATE_SHOW_NODE", "/tmp/fwdoctor-gate-drained-node.txt"))


def _slurm_problem() -> str | None:
    if shutil.which("scontrol") is None or shutil.which("sinfo") is None:
        return "scontrol/sinfo not installed (run .ci/setup-slurm.sh)"
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 20s (run .ci/setup-slurm.sh)"
    if out.returncode != 0 or not out.stdout.strip():
        return f"slurm is not up: {out.stderr.strip()[:200]} (run .ci/setup-slurm.sh)"
    return None


def show(node: str) -> str:
    return subprocess.run(["scontrol", "show", "node", "-o", node], capture_output=True, text=True, timeout=20, check=True).stdout.strip()


def state(node: str) -> tuple[str, str]:
    line = show(node)
    flags = line.split(" State=", 1)[1].split()[0]
    reason = line.split(" Reason=", 1)[1].rsplit(" [", 1)[0] if " Reason=" in line else ""
    return flags, reason


def scontrol(*args: str) -> None:
    subprocess.run(["scontrol", "update", *args], check=True, capture_output=True, text=True, timeout=20)


@pytest.fixture
def node() -> Iterator[str]:
    problem = _slurm_problem()
    if problem:
        pytest.skip(problem)
    name = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True, timeout=20).stdout.split()[0]
    if "DRAIN" in state(name)[0]:
        scontrol(f"nodename={name}", "state=resume")
    yield name
    if "DRAIN" in state(name)[0]:  # whatever the test did, the node goes back to idle
        scontrol(f"nodename={name}", "state=resume")
    for _ in range(20):
        if "DRAIN" not in state(name)[0]:
            break
        time.sleep(0.5)


def gate(node: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "FWDOCTOR_KB": str(TEST_KB)}
    return subprocess.run([str(FWDOCTOR), "gate", "--slurm", "--node", node, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)


def facts_of(root: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{root}.json"
    out = subprocess.run([str(FWDOCTOR), "facts", "--root", str(ROOTS / root)], capture_output=True, text=True, timeout=60, check=True).stdout
    path.write_text(out)
    return path


def test_an_injected_fault_drains_the_node_with_the_reason_and_its_end_resumes_it(node, tmp_path):
    bad, good = facts_of("driver-mismatch", tmp_path), facts_of("driver-ok", tmp_path)
    log = tmp_path / "gate.log"
    first = gate(node, "--facts", str(bad), "--log", str(log))
    assert first.returncode == 1, first.stdout + first.stderr
    flags, reason = state(node)
    assert "DRAIN" in flags and reason.startswith("fwdoctor: driver-library-mismatch: kernel module nvidia 575.57.08 is loaded")
    SHOWN.write_text(show(node) + "\n")  # the drained node's line, for the closing note
    again = gate(node, "--facts", str(bad), "--log", str(log))
    # The text report is fitted to 80 columns: unwrap it before reading a sentence.
    assert again.returncode == 1 and "already drained by fwdoctor for this cause, nothing to do" in unwrap(again.stdout)
    healed = gate(node, "--facts", str(good), "--log", str(log))
    assert healed.returncode == 0 and "healthy again, resumed" in unwrap(healed.stdout)
    assert "DRAIN" not in state(node)[0]
    logged = log.read_text()
    assert "drained: scontrol update nodename=" in logged and "resumed: scontrol update nodename=" in logged


def test_an_admins_drain_is_never_resumed_nor_rewritten(node, tmp_path):
    bad, good = facts_of("driver-mismatch", tmp_path), facts_of("driver-ok", tmp_path)
    scontrol(f"nodename={node}", "state=drain", "reason=maintenance: PSU swap (ticket 4711)")
    for facts in (good, bad):
        result = gate(node, "--facts", str(facts))
        assert "drained by someone else, left alone" in unwrap(result.stdout), result.stdout + result.stderr
        flags, reason = state(node)
        assert "DRAIN" in flags and reason == "maintenance: PSU swap (ticket 4711)"


def _in_fake_host(scenario: str, node: str, tmp_path: Path, *args: str, timeout: float = 180) -> tuple[int, dict, float]:
    reason = gpuhost.unavailable_reason()
    if reason:
        pytest.skip(reason)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    host = gpuhost.load(gpuhost.SCENARIOS / f"{scenario}.json")
    argv = [str(FWDOCTOR), "gate", "--slurm", "--node", node, "--policy", str(policy), "--json", *args]
    env = {**os.environ, "FWDOCTOR_KB": str(TEST_KB)}
    started = time.monotonic()
    with gpuhost.started(host, argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        out, err = proc.communicate(timeout=timeout)
    took = time.monotonic() - started
    assert out.strip(), err
    return proc.returncode, json.loads(out), took


def test_a_lost_gpu_in_the_stand_in_host_drains_for_the_missing_gpu(node, tmp_path):
    code, body, _ = _in_fake_host("h100x8-r580-lost-gpu", node, tmp_path)
    assert code == 1 and body["verdict"] == "drain"
    assert body["causes"][0]["id"] == "gpu-count-low" and body["causes"][0]["message"].startswith("7 of 8 GPUs answer")
    assert state(node)[1].startswith("fwdoctor: gpu-count-low: 7 of 8 GPUs answer")
    code, body, _ = _in_fake_host("h100x8-r580", node, tmp_path)
    assert code == 0 and body["verdict"] == "ok" and "healthy again, resumed" in body["actions"][0]
    assert "DRAIN" not in state(node)[0]


def test_a_driver_library_mismatch_in_the_stand_in_host_drains(node, tmp_path):
    code, body, _ = _in_fake_host("version-mismatch", node, tmp_path)
    assert code == 1 and body["causes"][0]["id"] == "driver-library-mismatch"
    assert state(node)[1].startswith("fwdoctor: driver-library-mismatch:")


def test_a_hung_nvml_is_ended_by_the_budget_and_drains_as_unknown(node, tmp_path):
    code, body, took = _in_fake_host("hang-init", node, tmp_path, "--budget", "8s")
    assert body["elapsed_s"] <= 8.0, body
    assert took < 8.0 + 10.0, took  # the namespace's setup and the gate's own start come on top
    assert code == 1 and body["verdict"] == "drain"
    assert body["causes"][0]["id"] == "unknown" and "did not finish" in body["causes"][0]["message"]
    assert state(node)[1].startswith("fwdoctor: unknown: facts: the probes did not finish")
