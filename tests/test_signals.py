"""Signals end the whole tree (issue 11, item 5).

SIGINT, SIGTERM and SIGHUP to fwdoctor stop it and every process it started, then it
exits 128+signal (130 for Ctrl-C, not 1, the "error findings" code) with one line on
stderr and no traceback. Every test here starts the real `fwdoctor` in its own process
and real children: torchrun with two gloo workers from the project venv's torch, and a
stub interpreter (a shell script) that sleeps where `check --deep` expects Python.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fwdoctor import runner
from helpers import torch_python

REPO = Path(__file__).resolve().parents[1]
TORCH_PY = torch_python()


def _alive(pid: int) -> bool:
    """Running, not a zombie (PID 1 in a container may never reap the orphans)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return False
    return text[text.rfind(")") + 2 :].split()[0] not in ("Z", "X")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _start(*args: str) -> subprocess.Popen:
    # Its own session, as a shell would start a job: the signal goes to fwdoctor only,
    # the way `kill PID` or a scheduler's SIGTERM does.
    return subprocess.Popen([sys.executable, "-m", "fwdoctor", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def _wait_for(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _stop(proc: subprocess.Popen, signum: int) -> tuple[int, str, list[int]]:
    """Collect the tree from /proc, signal fwdoctor alone, wait; returns (exit, stderr, tree)."""
    tree = runner.descendants(proc.pid)
    os.kill(proc.pid, signum)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            runner.kill_tree(proc.pid)
            proc.wait()
        for pid in tree:  # never leave a test's processes behind, whatever happened
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    return proc.returncode, err.decode(errors="replace"), tree


def _sleeping_python(tmp_path: Path) -> Path:
    """A stand-in interpreter: a real program that never answers (a hung driver call)."""
    stub = tmp_path / "python3"
    stub.write_text("#!/bin/sh\nexec sleep 300\n")
    stub.chmod(0o755)
    return stub


def _deep_check(tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    stub = _sleeping_python(tmp_path)
    proc = _start("check", "--deep", "--python", str(stub), "--timeout", "120")

    def sleeping_child() -> bool:
        return any("sleep 300" in _cmdline(pid) for pid in runner.descendants(proc.pid))

    _wait_for(sleeping_child, 60, "the --deep child")
    # The torch child starts first, then the query whether the interpreter runs (issue 30):
    # the stub hangs in both, and the signal must end every one.
    children = [pid for pid in runner.descendants(proc.pid) if "sleep 300" in _cmdline(pid)]
    return proc, children


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_signal_to_check_deep_ends_the_child_and_exits_128_plus_signal(tmp_path: Path, signum: int, code: int) -> None:
    # Before: Ctrl-C exited 1 ("Aborted!") and SIGTERM/SIGHUP left the child sleeping.
    proc, children = _deep_check(tmp_path)
    returncode, err, tree = _stop(proc, signum)
    assert children and set(children) <= set(tree)
    assert returncode == code, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1].startswith("fwdoctor: stopped by " + signal.Signals(signum).name), err
    for child in children:
        _wait_for(lambda: not _alive(child), 5, f"the --deep child {child} to end")


@pytest.mark.slow
@pytest.mark.skipif(TORCH_PY is None, reason="no interpreter with torch (make test-venv)")
def test_sigterm_mid_allreduce_leaves_no_torchrun_or_worker() -> None:
    # Sizes up to 64 MiB and many iterations on 2 CPU cores: minutes of work, so the
    # signal lands while the workers are in the collective.
    proc = _start("smoke", "allreduce", "--python", TORCH_PY, "--backend", "gloo", "--nproc", "2",
                  "--min-bytes", "1M", "--max-bytes", "64M", "--iters", "200", "--warmup", "1", "--timeout", "300")

    def workers_running() -> bool:
        return sum("allreduce_worker" in _cmdline(pid) for pid in runner.descendants(proc.pid)) >= 2

    try:
        _wait_for(workers_running, 120, "two all-reduce workers")
    except AssertionError:
        runner.kill_tree(proc.pid)
        raise
    time.sleep(2.0)  # into the timed loop, past rendezvous
    returncode, err, tree = _stop(proc, signal.SIGTERM)
    assert any("torchrun" in _cmdline(pid) or "torch.distributed.run" in _cmdline(pid) for pid in tree) or len(tree) >= 3
    assert returncode == 143, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]  # what the user is told
    assert lines[-1] == "fwdoctor: stopped by SIGTERM; every process it started was ended", err
    _wait_for(lambda: not any(_alive(pid) for pid in tree), 10, "every process of the tree to end")


def test_runner_refuses_to_start_children_once_stopping() -> None:
    # After the first signal nothing new may start (a plan's next step, a verify step).
    with runner.ending_tree_on_signals() as stop:
        stop.signum = signal.SIGTERM
        result = runner.run(["true"], timeout=5)
        streamed = runner.stream(["true"], timeout=5)
    assert not result.ok and result.error == "not started: fwdoctor is stopping (SIGTERM)"
    assert not streamed.ok and streamed.error == result.error
    assert runner.run(["true"], timeout=5).ok  # the context is over: back to normal


_APPLY = """
import sys
from fwdoctor.recipes.apply import apply_plan
from fwdoctor.recipes.plan import Plan, Step
plan = Plan("test", "a slow step", steps=(
    Step(("sh", "-c", "sleep 300 & sleep 300; wait"), why="a step that forks"),
    Step(("touch", sys.argv[2]), why="must never run"),
))
result = apply_plan(plan, log_path=sys.argv[1], progress=lambda line: print(line, file=sys.stderr, flush=True))
print(result.status, result.message, flush=True)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_apply_ends_the_step_tree_and_runs_no_further_step(tmp_path: Path, signum: int) -> None:
    # Before: SIGHUP killed apply and left the step's sleeps running.
    never = tmp_path / "never"
    proc = subprocess.Popen([sys.executable, "-c", _APPLY, str(tmp_path / "apply.log"), str(never)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)

    def two_sleeps() -> bool:
        return sum("sleep 300" == _cmdline(pid).strip() for pid in runner.descendants(proc.pid)) >= 2

    _wait_for(two_sleeps, 30, "the step's two sleeps")
    tree = runner.descendants(proc.pid)
    os.kill(proc.pid, signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err  # apply_plan returned its summary
    assert out.decode().startswith("interrupted"), out
    assert not never.exists()
    _wait_for(lambda: not any(_alive(pid) for pid in tree), 10, "the step's processes to end")


def test_ctrl_c_while_the_command_line_is_parsed_exits_130_not_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before any command's handlers are in place, click would say "Aborted!" and exit 1
    (the "error findings" code); fwdoctor says it was interrupted and exits 130."""
    from click.testing import CliRunner

    from fwdoctor.cli import Group, main

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Group, "parse_args", interrupted)
    result = CliRunner().invoke(main, ["check"])
    assert result.exit_code == 130
    assert "fwdoctor: interrupted" in result.stderr
    assert "Aborted" not in result.output + result.stderr


def test_ctrl_c_while_a_command_module_imports_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    """A KeyboardInterrupt that no handler of ours saw (the command's module importing)."""
    from click.testing import CliRunner

    import fwdoctor.cli as cli

    def interrupted(name: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.importlib, "import_module", interrupted)
    result = CliRunner().invoke(cli.main, ["check"])
    assert result.exit_code == 130
    assert "fwdoctor: interrupted" in result.stderr
