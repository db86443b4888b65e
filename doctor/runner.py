"""The one way fwdoctor runs a program: argv (never a shell), LC_ALL=C, and a timeout.

A hung nvidia-smi or a driver call stuck in the kernel must not hang the doctor, so each
child gets its own process group and the whole group is killed on timeout.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

# The process-tree and signal helpers live in fwdoctor.children (the CLI holds the signal
# handlers without importing subprocess); re-exported for the callers that start children.
from fwdoctor import children
from fwdoctor.children import STOP_SIGNALS, Stop, descendants, end_all_children, ending_tree_on_signals, kill_tree  # noqa: F401 (re-exported)

DEFAULT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int | None  # None when the program never ran or was killed
    stdout: str
    stderr: str
    timed_out: bool = False
    error: str = ""  # why it did not run: "not found", "permission denied", ...

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.error

    def describe_failure(self) -> str:
        """One line saying why the command failed, for `probe-failed` messages."""
        cmd = " ".join(self.argv)
        if self.error:
            return f"{cmd}: {self.error}"
        if self.timed_out:
            return f"{cmd}: no answer within the timeout (killed)"
        tail = (self.stderr or self.stdout).strip().splitlines()[-1:] or [""]
        return f"{cmd}: exit status {self.returncode}: {tail[0][:200]}"


def command_env(base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a child sees: `base` (default: ours) with a C locale forced, so
    that parsers see the same English, dot-decimal output everywhere."""
    env = dict(os.environ if base is None else base)
    env.update(extra or {})
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    return env


def run(
    argv: Sequence[str],
    timeout: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    input_text: str | None = None,
) -> CommandResult:
    """Run `argv` and capture its output. Never raises for the program's own failures."""
    args = tuple(str(a) for a in argv)
    try:
        proc = _popen(
            args,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=command_env(env),
            cwd=cwd,
            start_new_session=True,  # its own process group, so a timeout kills children too
        )
    except OSError as exc:
        return CommandResult(args, None, "", "", error=_spawn_error(exc))
    return _finish(proc, args, input_text, timeout)


def _finish(proc: subprocess.Popen, args: tuple[str, ...], input_text: str | None, timeout: float) -> CommandResult:
    """Wait for a started child (at most `timeout` seconds) and collect its output."""
    try:
        out, err = proc.communicate(input=input_text.encode() if input_text is not None else None, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        out, err = proc.communicate()
        return CommandResult(args, None, _decode(out), _decode(err), timed_out=True)
    except BaseException:
        # Ctrl-C or SIGTERM in the doctor: the child has its own session, so it would
        # outlive us; take its whole tree down before propagating.
        kill_tree(proc.pid)
        proc.wait()
        raise
    finally:
        _forget(proc)
    return CommandResult(args, proc.returncode, _decode(out), _decode(err))


class Started:
    """A child started now and collected later: `run` split in two, for work that should
    begin at once and be read when its turn comes (`check --deep` starts `import torch`
    before anything else, issue 30). The wait and its timeout run in a background thread
    from the start, so the child is killed on time even if nobody asks for it."""

    def __init__(self, argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None, cwd: str | None = None) -> None:
        from fwdoctor.background import Background

        self.argv = tuple(str(a) for a in argv)
        self.pid: int | None = None
        try:
            proc = _popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=command_env(env), cwd=cwd, start_new_session=True)
        except OSError as exc:
            failed = CommandResult(self.argv, None, "", "", error=_spawn_error(exc))
            self._job = Background(lambda: failed)
            return
        self.pid = proc.pid
        self._job = Background(_finish, proc, self.argv, None, timeout)

    def result(self) -> CommandResult:
        """The child's result, as `run` returns it; waits until it ended or timed out."""
        return self._job.result()

    def cancel(self) -> None:
        """End the child's tree now (its answer is no longer wanted)."""
        if self.pid is not None and not self._job.wait(0):
            kill_tree(self.pid)


def _spawn_error(exc: OSError) -> str:
    """Why a command did not start, in the words `run` and `stream` both report."""
    if isinstance(exc, _Refused):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return "not found"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return f"cannot run: {exc.strerror or exc}"


def _decode(data: bytes | None) -> str:
    # Garbage bytes from a broken tool must not raise; parsers treat them as unparseable.
    return (data or b"").decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- streaming
# runner.run fits every short command. Long ones (a torch build, a docker build, an
# all-reduce sweep under torchrun) need two more things: their output line by line while
# they run, and a kill that reaches processes which left our process group. torchrun
# starts each worker with start_new_session=True (torch/distributed/elastic/
# multiprocessing/subprocess_handler/subprocess_handler.py), so killing the launcher's
# group alone would orphan a hung rank: on timeout every descendant is collected from
# /proc first, then each one's group is killed.
TAIL_LINES = 400


@dataclass(frozen=True)
class StreamResult:
    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr_tail: str  # the last TAIL_LINES lines of stderr
    timed_out: bool = False
    error: str = ""
    killed: tuple[int, ...] = field(default_factory=tuple)  # pids killed on timeout

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.error


def _popen(args: tuple[str, ...], **kwargs: object) -> subprocess.Popen:
    # Registered under the lock, so a signal handler's sweep sees it or the start is refused.
    with children._live_lock:
        if children.stopping():
            raise _Refused(children.stopping_error())
        proc = subprocess.Popen(args, **kwargs)  # type: ignore[call-overload]
        children._live[proc.pid] = proc
    return proc


class _Refused(OSError):
    """No child starts once a stop signal came (a plan's next step, a verify step)."""


def _forget(proc: subprocess.Popen) -> None:
    with children._live_lock:
        children._live.pop(proc.pid, None)


def stream(
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str] | None = None,
    on_stderr_line: Callable[[str], None] | None = None,
    cwd: str | None = None,
    merge_stderr: bool = False,
) -> StreamResult:
    """Run a long command, handing each stderr line to `on_stderr_line` as it comes.

    With `merge_stderr` both streams are one (a build log): every line goes to the
    callback and the tail, and `stdout` is empty. On timeout, or when we are interrupted,
    the command, its group and every descendant's group are killed (`kill_tree`).
    """
    args = tuple(str(a) for a in argv)
    try:
        proc = _popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            env=command_env(env),
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return StreamResult(args, None, "", "", error=_spawn_error(exc))

    out_chunks: list[bytes] = []
    tail: deque[str] = deque(maxlen=TAIL_LINES)

    def read_out() -> None:
        assert proc.stdout is not None
        for chunk in iter(lambda: proc.stdout.read(65536), b""):
            out_chunks.append(chunk)

    def read_err() -> None:
        pipe = proc.stdout if merge_stderr else proc.stderr
        assert pipe is not None
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            tail.append(line)
            if on_stderr_line is not None:
                try:
                    on_stderr_line(line)
                except Exception:  # a display problem must not stop the reader
                    pass

    readers = [threading.Thread(target=read_err, daemon=True)]
    if not merge_stderr:
        readers.append(threading.Thread(target=read_out, daemon=True))
    for reader in readers:
        reader.start()
    killed: tuple[int, ...] = ()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        killed = kill_tree(proc.pid)
        proc.wait()
    except BaseException:
        # Ctrl-C: the children are in their own sessions, so the terminal's SIGINT never
        # reached them; take them down with us.
        kill_tree(proc.pid)
        raise
    finally:
        _forget(proc)
    # Grandchildren may keep the pipes open a little after the launcher exits.
    deadline = time.monotonic() + 5.0
    for reader in readers:
        reader.join(timeout=max(0.0, deadline - time.monotonic()))
    stdout = b"".join(out_chunks).decode("utf-8", errors="replace")
    return StreamResult(args, None if timed_out else proc.returncode, stdout, "\n".join(tail), timed_out=timed_out, killed=killed)
