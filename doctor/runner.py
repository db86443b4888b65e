"""The one way fwdoctor runs a program: argv (never a shell), LC_ALL=C, and a timeout.

A hung nvidia-smi or a driver call stuck in the kernel must not hang the doctor, so each
child gets its own process group and the whole group is killed on timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

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


def descendants(pid: int, proc: str = "/proc") -> list[int]:
    """Every live descendant of `pid`, found through /proc/<pid>/stat parent links."""
    parent_of: dict[int, int] = {}
    try:
        entries = os.listdir(proc)
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, "stat"), encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may contain spaces and parentheses.
        rest = text[text.rfind(")") + 2 :].split()
        if len(rest) >= 2 and rest[1].isdigit():
            parent_of[int(name)] = int(rest[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        for child, parent in parent_of.items():
            if parent == current and child not in found:
                found.append(child)
                frontier.append(child)
    return found


def kill_tree(pid: int) -> tuple[int, ...]:
    """SIGKILL `pid`'s group and every descendant's group; returns the pids targeted.

    The tree is frozen first (SIGSTOP) and collected again until no new process shows
    up: a launcher that forks between our /proc scan and the kill (torchrun starting a
    worker) cannot leave a child we never saw, and a killed parent's children, reparented
    to init, are already on our list.
    """
    victims: list[int] = [pid]
    for _ in range(20):
        for victim in victims:
            _signal_group_and_pid(victim, signal.SIGSTOP)
        found = [p for p in descendants(pid) if p not in victims]
        found += [p for v in victims[1:] for p in descendants(v) if p not in victims and p not in found]
        if not found:
            break
        victims.extend(found)
    for victim in victims:
        _signal_group_and_pid(victim, signal.SIGKILL)
    return tuple(victims)


def _signal_group_and_pid(pid: int, signum: int) -> None:
    own_group = os.getpgrp()
    try:
        group = os.getpgid(pid)
    except OSError:
        group = own_group
    if group != own_group:  # never our own group: that is us and the user's shell job
        try:
            os.killpg(group, signum)
        except OSError:
            pass
    try:
        os.kill(pid, signum)
    except OSError:
        pass


# --------------------------------------------------------------------------- signals
# Every child starts in its own session, so a terminal's Ctrl-C or a scheduler's SIGTERM
# reaches fwdoctor alone. While a command runs (`ending_tree_on_signals`, entered once by
# the CLI), SIGINT, SIGTERM and SIGHUP end the tree of every live child started here
# (from any thread: --deep probes run in the background), refuse new children, and
# raise KeyboardInterrupt in the main thread so the command stops the way Ctrl-C stops
# it (an apply writes its summary); the CLI then exits 128+signal.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_live: dict[int, subprocess.Popen] = {}
_live_lock = threading.RLock()  # re-entered by the handler when it interrupts _popen


@dataclass
class Stop:
    """The signal that is stopping fwdoctor, None while none came."""

    signum: int | None = None

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signum or signal.SIGINT)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum or signal.SIGINT).name


_stop: Stop | None = None


def _popen(args: tuple[str, ...], **kwargs: object) -> subprocess.Popen:
    # Registered under the lock, so a signal handler's sweep sees it or the start is refused.
    with _live_lock:
        if _stopping():
            raise _Refused(_stopping_error())
        proc = subprocess.Popen(args, **kwargs)  # type: ignore[call-overload]
        _live[proc.pid] = proc
    return proc


class _Refused(OSError):
    """No child starts once a stop signal came (a plan's next step, a verify step)."""


def _forget(proc: subprocess.Popen) -> None:
    with _live_lock:
        _live.pop(proc.pid, None)


def _stopping() -> bool:
    return _stop is not None and _stop.signum is not None


def _stopping_error() -> str:
    assert _stop is not None
    return f"not started: fwdoctor is stopping ({_stop.name})"


def end_all_children() -> tuple[int, ...]:
    """Kill the tree of every child started through this module that is still running."""
    with _live_lock:
        pids = list(_live)
    killed: list[int] = []
    for pid in pids:
        killed.extend(kill_tree(pid))
    return tuple(killed)


def _on_signal(signum: int, frame: object) -> None:
    assert _stop is not None
    first = _stop.signum is None
    if first:
        _stop.signum = signum
    end_all_children()
    if first:  # a second signal during the clean-up only kills again
        raise KeyboardInterrupt


class ending_tree_on_signals:
    """While entered (in the main thread), SIGINT/SIGTERM/SIGHUP end every child's tree.

    `as stop`: `stop.signum` is the signal that came (None if none); the previous
    handlers come back on exit, so the CLI can run inside a test process. Nested, it
    hands back the outer one's `Stop` and changes nothing.
    """

    def __enter__(self) -> Stop:
        global _stop
        self.previous: dict[int, object] = {}
        self.outer = _stop
        if _stop is not None:  # nested (apply under the CLI): the outer one stays in charge
            return _stop
        _stop = Stop()
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self.previous[signum] = signal.signal(signum, _on_signal)
        return _stop

    def __exit__(self, *exc: object) -> None:
        global _stop
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        _stop = self.outer


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
