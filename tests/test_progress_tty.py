"""Progress for long work (issue 29, item 4): on a terminal (stderr a pseudo-terminal) work
over a second shows click's progress bar with the seconds so far; through a pipe, or with
-q, nothing. Run as a real child on a real pty (the pty module), as a user's shell would."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import TEST_VENV, require_module

REPO = Path(__file__).resolve().parent.parent
VENV_PYTHON = REPO / ".venv" / "bin" / "python"

# A click command that waits ~1.8 s through fwdoctor.cli.output.waiting (-q as the CLI's).
_SLOW = """
import time, click
from fwdoctor.cli.output import configure, waiting

@click.command()
@click.option("-q", "quiet", is_flag=True)
@click.pass_context
def main(ctx, quiet):
    configure(ctx, "auto", quiet, False)
    click.echo(waiting("fwdoctor: slow work", lambda: (time.sleep(1.8), "result")[1]))

main()
"""


def _run(argv: list[str], on_pty: bool, timeout: float = 120) -> tuple[str, str, int]:
    """(stdout, stderr, exit status) of argv with stderr on a new pseudo-terminal (or a pipe)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FWDOCTOR_COLOR")}
    env["TERM"] = "xterm"
    with tempfile.TemporaryFile() as out:
        if not on_pty:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE, env=env, timeout=timeout)
            out.seek(0)
            return out.read().decode(), done.stderr.decode(), done.returncode
        master, slave = pty.openpty()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=slave, env=env)
        os.close(slave)
        chunks: list[bytes] = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        os.close(master)
        code = proc.wait(timeout=timeout)
        out.seek(0)
        return out.read().decode(), b"".join(chunks).decode(errors="replace"), code


def test_slow_work_shows_a_progress_bar_on_a_terminal():
    stdout, stderr, code = _run([sys.executable, "-c", _SLOW], on_pty=True)
    assert code == 0 and stdout == "result\n"
    assert "fwdoctor: slow work  [" in stderr and "] " in stderr and " s" in stderr


@pytest.mark.parametrize("on_pty, quiet", [(False, False), (True, True)], ids=["through a pipe", "with -q"])
def test_no_progress_through_a_pipe_or_with_quiet(on_pty, quiet):
    stdout, stderr, code = _run([sys.executable, "-c", _SLOW, *(["-q"] if quiet else [])], on_pty=on_pty)
    assert code == 0 and stdout == "result\n"
    assert stderr == ""


def test_check_deep_shows_the_torch_import_on_a_terminal_and_nothing_through_a_pipe():
    """The dev venv's torch, imported by `check --deep`'s child (several seconds)."""
    require_module("torch", TEST_VENV)
    argv = [sys.executable, "-m", "fwdoctor", "check", "--deep", "--python", str(VENV_PYTHON)]
    stdout, stderr, _ = _run(argv, on_pty=True)
    assert "fwdoctor: importing torch in a child (--deep)  [" in stderr, stderr
    assert "torch    2." in stdout  # the report itself stays on stdout, bar-free
    assert "importing torch" not in stdout
    _, piped, _ = _run(argv + ["--only", "torch-not-installed"], on_pty=False)
    assert "importing torch" not in piped


def test_each_plan_step_runs_through_the_progress_hook(tmp_path):
    """`install --apply` and `fix --apply` hand every command (pip's included) to the CLI's
    waiting(), which draws the bar on a terminal."""
    from fwdoctor.recipes.apply import apply_plan
    from fwdoctor.recipes.plan import Plan, Step

    seen: list[str] = []

    def waiting(label, func, *args, **kwargs):
        seen.append(label)
        return func(*args, **kwargs)

    plan = Plan("t", "two steps", steps=(Step((sys.executable, "-c", "pass"), why="first"), Step((sys.executable, "-c", "pass"), why="second")))
    result = apply_plan(plan, log_path=str(tmp_path / "log"), waiting=waiting)
    assert result.status == "applied"
    assert seen == [f"[1/2] running {Path(sys.executable).name}", f"[2/2] running {Path(sys.executable).name}"]
