"""The `fwdoctor` command's process policies (fwdoctor.launch.run): the quick exit that skips
the interpreter's teardown only when nothing is left to do at exit, exit codes kept, output
whole, and a closed pipe ending the command quietly.

Each runs the installed package in a child interpreter the way the console script does
(`from fwdoctor.launch import run; run()`), since the exit is the process's own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fwdoctor.cli.errors import EXIT_PIPE_CLOSED

# A witness object in __main__ whose finaliser leaves a mark: the interpreter's teardown
# runs it, os._exit does not. EXTRA is code placed before the command starts.
SCRIPT = """
import os, sys
mark = sys.argv[1]
class Witness:
    # Everything __del__ needs is its own: at teardown the module's globals may be gone.
    def __init__(self):
        self.fd, self.write = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_APPEND), os.write
    def __del__(self):
        self.write(self.fd, b"teardown\\n")
witness = Witness()
{extra}
sys.argv = ["fwdoctor", *sys.argv[2:]]
from fwdoctor.launch import run
run()
"""

ATEXIT = """
import atexit
atexit.register(lambda: open(mark, "a").write("atexit\\n"))
"""

LATE_THREAD = """
import threading, time
def late():
    time.sleep(0.5)
    with open(mark, "a") as handle:
        handle.write("thread\\n")
threading.Thread(target=late).start()
"""

DAEMON_THREAD = """
import threading, time
threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
"""

REPORT = Path(__file__).parent / "data" / "triage" / "01-driver-too-old-fooocus-11040.md"


def _run(tmp_path: Path, *argv: str, extra: str = "", **kwargs) -> tuple[subprocess.CompletedProcess, str]:
    mark = tmp_path / "mark.txt"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    res = subprocess.run([sys.executable, "-c", SCRIPT.format(extra=extra), str(mark), *argv], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, **kwargs)
    return res, mark.read_text() if mark.exists() else ""


@pytest.mark.parametrize(("argv", "code"), [
    (["--version"], 0),
    (["explain", "no-such-finding"], 2),      # the doctor's own error
    (["no-such-command"], 2),                 # click's usage error
    (["triage", str(REPORT)], 1),             # error findings
])
def test_the_quick_exit_keeps_the_exit_code_and_skips_only_the_teardown(tmp_path: Path, argv: list[str], code: int) -> None:
    res, mark = _run(tmp_path, *argv)
    assert res.returncode == code, res.stderr
    assert mark == ""  # the teardown was skipped: os._exit ended the process
    if code == 0:
        assert res.stdout.startswith("fwdoctor, version ")


def test_an_atexit_callback_gets_pythons_own_exit(tmp_path: Path) -> None:
    res, mark = _run(tmp_path, "--version", extra=ATEXIT)
    assert res.returncode == 0, res.stderr
    assert mark.splitlines() == ["atexit", "teardown"]


def test_a_thread_still_running_gets_pythons_own_exit(tmp_path: Path) -> None:
    res, mark = _run(tmp_path, "--version", extra=LATE_THREAD)
    assert res.returncode == 0, res.stderr
    assert mark.splitlines() == ["thread", "teardown"]


def test_a_daemon_thread_does_not_hold_the_quick_exit(tmp_path: Path) -> None:
    # A probe left on a stalled mount runs on in a daemon thread: Python's exit would not wait
    # for it either.
    res, mark = _run(tmp_path, "--version", extra=DAEMON_THREAD)
    assert res.returncode == 0, res.stderr
    assert mark == ""


def test_output_through_a_pipe_is_whole(tmp_path: Path) -> None:
    # `list` prints every finding id: more than one buffer's worth, all flushed before the exit.
    (tmp_path / "quick").mkdir(), (tmp_path / "ordinary").mkdir()
    quick, mark = _run(tmp_path / "quick", "list")
    assert mark == ""
    slow, mark = _run(tmp_path / "ordinary", "list", extra=ATEXIT)  # the ordinary exit, for reference
    assert mark.splitlines() == ["atexit", "teardown"]
    assert quick.returncode == slow.returncode == 0
    assert len(quick.stdout) > 8192 and quick.stdout == slow.stdout
    assert quick.stdout.rstrip().splitlines()[-1] == slow.stdout.rstrip().splitlines()[-1]


@pytest.mark.parametrize("how", ["run", "python -m"])
def test_a_reader_that_leaves_early_ends_the_command_quietly(tmp_path: Path, how: str) -> None:
    """`fwdoctor list | head -1`: exit 141 (128 + SIGPIPE) and nothing on stderr, not an
    "internal error: BrokenPipeError" asking to be reported."""
    if how == "run":
        argv = [sys.executable, "-c", "import sys; sys.argv = ['fwdoctor', 'list']; from fwdoctor.launch import run; run()"]
    else:
        argv = [sys.executable, "-m", "fwdoctor", "list"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    child.stdout.close()  # before the child has started: its first write meets a closed pipe
    try:
        err = child.stderr.read()
        assert child.wait(timeout=120) == EXIT_PIPE_CLOSED
    finally:
        child.kill()
    assert err == b""
