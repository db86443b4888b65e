"""Real all-reduce runs: torchrun, gloo on CPU, 2 processes, small sizes.

The interpreter under test is the project venv's torch (CUDA build; gloo runs on CPU),
else /tmp/venv-torch. Every test here starts real processes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fwdoctor.runner import descendants
from fwdoctor.runner import stream
from helpers import torch_python

REPO = Path(__file__).resolve().parents[1]


TORCH_PY = torch_python()
pytestmark = pytest.mark.skipif(TORCH_PY is None, reason="no interpreter with torch (make test-venv)")

SMALL = ("--backend", "gloo", "--nproc", "2", "--max-bytes", "256", "--factor", "4", "--warmup", "1", "--iters", "3", "--quiet")


def _run(cli, *args, env=None):
    result = cli("smoke", "allreduce", "--python", TORCH_PY, *args, env=env)
    return result


def _json(result) -> dict:
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def clean_run():
    """One real 2-rank gloo sweep with progress on, shared by the tests that only read it."""
    from click.testing import CliRunner

    from fwdoctor.cli import main

    args = [a for a in SMALL if a != "--quiet"]
    return CliRunner().invoke(main, ["smoke", "allreduce", "--python", TORCH_PY, *args, "--json"], catch_exceptions=False)


@pytest.mark.slow
def test_two_gloo_ranks_sum_exactly_and_report_every_size(clean_run):
    result = clean_run
    assert result.exit_code == 0, result.output
    r = _json(result)["results"][0]
    assert r["status"] == "pass"
    assert [row["bytes"] for row in r["details"]["rows"]] == [8, 32, 128]
    assert r["details"]["wrong_total"] == 0
    assert r["details"]["world_size"] == 2
    assert r["details"]["backend"] == "gloo"
    assert r["details"]["nccl_version"]  # torch.cuda.nccl.version() of the CUDA build, loaded not used


@pytest.mark.slow
def test_a_corrupted_contribution_is_caught_and_counted_per_size(cli):
    result = _run(cli, *SMALL, "--json", env={"FWDOCTOR_SMOKE_TEST_CORRUPT_RANK": "1"})
    assert result.exit_code == 1
    r = _json(result)["results"][0]
    assert r["status"] == "fail"
    # One element wrong in the sum, seen by each of the 2 ranks, at each of the 3 sizes.
    assert [row["wrong"] for row in r["details"]["rows"]] == [2, 2, 2]
    assert "6 wrong elements" in r["message"]


@pytest.mark.slow
def test_average_busbw_below_min_busbw_exits_1(cli):
    result = _run(cli, *SMALL, "--min-busbw", "1000000")
    assert result.exit_code == 1
    assert "is below --min-busbw 1e+06" in result.stdout
    assert "# average busbw:" in result.stdout  # the table is still shown


@pytest.mark.slow
def test_a_hung_rank_is_killed_by_the_timeout_with_all_its_processes(cli):
    started = time.monotonic()
    result = _run(cli, *SMALL, "--timeout", "20", "--json", env={"FWDOCTOR_SMOKE_TEST_HANG_RANK": "1"})
    assert time.monotonic() - started < 120  # the hook sleeps 10**6 s: only the kill ends it
    assert result.exit_code == 1
    r = _json(result)["results"][0]
    assert "hung and was killed" in r["message"]
    assert "GLOO_SOCKET_IFNAME" in r["hint"]
    pids = r["details"]["killed_pids"]
    assert len(pids) >= 3  # torchrun and its two ranks
    time.sleep(0.5)
    assert [p for p in pids if _alive(p)] == []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie is dead, merely not yet reaped


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_nodes_meet_through_c10d_rendezvous_on_localhost():
    port = _free_port()
    common = [sys.executable, "-m", "fwdoctor", "smoke", "allreduce", "--python", TORCH_PY, "--backend", "gloo", "--nproc", "1",
              "--nnodes", "2", "--rdzv-endpoint", f"127.0.0.1:{port}", "--max-bytes", "64", "--factor", "8",
              "--warmup", "1", "--iters", "2", "--timeout", "120", "--quiet", "--json"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    nodes = [subprocess.Popen([*common, "--node-rank", str(rank)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO, text=True) for rank in (0, 1)]
    outs = []
    for node in nodes:
        out, err = node.communicate(timeout=180)
        assert node.returncode == 0, err[-2000:]
        outs.append(json.loads(out)["results"][0])
    for rank, r in enumerate(outs):
        assert r["status"] == "pass"
        assert r["details"]["world_size"] == 2
        assert r["details"]["nnodes"] == 2
        assert r["details"]["node_rank"] == rank
        assert [row["wrong"] for row in r["details"]["rows"]] == [0, 0]
    assert "(2 nodes)" in outs[0]["message"]


@pytest.mark.slow
def test_progress_lines_go_to_stderr_while_json_stays_clean(clean_run):
    result = clean_run
    assert result.exit_code == 0
    assert json.loads(result.stdout)["results"][0]["status"] == "pass"
    assert "allreduce        8 B:" in result.stderr
    assert "busbw" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--nnodes", "2"), "needs --rdzv-endpoint"),
        (("--nnodes", "2", "--node-rank", "2", "--rdzv-endpoint", "h:1"), "outside 0..1"),
        (("--rdzv-endpoint", "nohostport"), "expected HOST:PORT"),
        (("--max-bytes", "4", "--min-bytes", "8"), "below --min-bytes"),
    ],
)
def test_bad_options_fail_as_the_doctor_with_the_option_named(cli, args, message):
    result = _run(cli, "--backend", "gloo", *args)
    assert result.exit_code == 2
    assert message in result.output


def test_a_missing_interpreter_is_a_doctor_error(cli):
    result = cli("smoke", "allreduce", "--python", "/nonexistent/python", "--backend", "gloo")
    assert result.exit_code == 2
    assert "--python /nonexistent/python: no such interpreter" in result.output


def test_descendants_finds_grandchildren_in_other_sessions():
    # sh starts a sleep in a new session (setsid), like torchrun starts its workers.
    code = "import subprocess, time; subprocess.Popen(['sleep', '30'], start_new_session=True); time.sleep(30)"
    parent = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        found: list[int] = []
        while time.monotonic() < deadline and len(found) < 1:
            found = descendants(parent.pid)
            time.sleep(0.05)
        assert len(found) == 1
        assert os.getsid(found[0]) != os.getsid(parent.pid)
    finally:
        from fwdoctor.runner import kill_tree

        kill_tree(parent.pid)
        parent.wait(timeout=10)


def test_streaming_runner_kills_a_hung_tree_and_keeps_the_stderr_tail():
    code = "import subprocess, sys, time; subprocess.Popen(['sleep', '60'], start_new_session=True); print('started', file=sys.stderr, flush=True); time.sleep(60)"
    seen: list[str] = []
    result = stream([sys.executable, "-c", code], timeout=3, on_stderr_line=seen.append)
    assert result.timed_out and result.returncode is None
    assert seen == ["started"] and result.stderr_tail == "started"
    assert len(result.killed) == 2
    time.sleep(0.3)
    assert [p for p in result.killed if _alive(p)] == []


def test_streaming_runner_reports_a_missing_program_without_raising():
    result = stream(["/nonexistent/torchrun"], timeout=5)
    assert result.error == "not found" and not result.ok


@pytest.mark.requires_gpu
def test_nccl_over_every_visible_gpu_is_exact_and_reports_the_loaded_nccl(cli):
    from fwdoctor.smoke.allreduce import gpu_count

    count, why = gpu_count(TORCH_PY)
    if not count:
        pytest.skip(f"needs an NVIDIA GPU visible to torch ({why or 'torch sees 0'})")
    result = _run(cli, "--max-bytes", "64M", "--factor", "16", "--quiet", "--json")
    r = _json(result)["results"][0]
    assert result.exit_code == 0, r
    assert r["details"]["backend"] == "nccl" and r["details"]["world_size"] == count
    assert r["details"]["wrong_total"] == 0
    assert r["details"]["nccl_version"].count(".") == 2
