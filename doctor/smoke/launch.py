"""Run a launcher (torchrun) whose output must be streamed and whose children must die.

doctor.runner.run fits every short command; the all-reduce sweep needs two things it does
not do: stream stderr lines while the command runs (progress on long sweeps), and kill
processes that left our process group. torchrun starts each worker with
start_new_session=True (torch/distributed/elastic/multiprocessing/subprocess_handler/
subprocess_handler.py), so killing the launcher's group alone would orphan a hung rank.
On timeout we therefore collect every descendant from /proc first, then SIGKILL each
one's process group and the launcher's. Same conventions as runner.run otherwise: argv
only, LC_ALL=C, a timeout, never raises for the program's own failures.
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

from doctor.runner import command_env

TAIL_LINES = 400


@dataclass(frozen=True)
class LaunchResult:
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
    """SIGKILL `pid`'s group and every descendant's group; returns the pids targeted."""
    victims = descendants(pid)
    for victim in [*victims, pid]:
        for kill in (lambda p: os.killpg(os.getpgid(p), signal.SIGKILL), lambda p: os.kill(p, signal.SIGKILL)):
            try:
                kill(victim)
            except (ProcessLookupError, PermissionError, OSError):
                continue
    return tuple([pid, *victims])


def run_streaming(
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str] | None = None,
    on_stderr_line: Callable[[str], None] | None = None,
    cwd: str | None = None,
) -> LaunchResult:
    args = tuple(str(a) for a in argv)
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=command_env(env),
            cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError:
        return LaunchResult(args, None, "", "", error="not found")
    except PermissionError:
        return LaunchResult(args, None, "", "", error="permission denied")
    except OSError as exc:
        return LaunchResult(args, None, "", "", error=f"cannot run: {exc.strerror or exc}")

    out_chunks: list[bytes] = []
    tail: deque[str] = deque(maxlen=TAIL_LINES)

    def read_out() -> None:
        assert proc.stdout is not None
        for chunk in iter(lambda: proc.stdout.read(65536), b""):
            out_chunks.append(chunk)

    def read_err() -> None:
        assert proc.stderr is not None
        for raw in iter(proc.stderr.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            tail.append(line)
            if on_stderr_line is not None:
                try:
                    on_stderr_line(line)
                except Exception:  # a display problem must not stop the reader
                    pass

    readers = [threading.Thread(target=read_out, daemon=True), threading.Thread(target=read_err, daemon=True)]
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
    # Grandchildren may keep the pipes open a little after the launcher exits.
    deadline = time.monotonic() + 5.0
    for reader in readers:
        reader.join(timeout=max(0.0, deadline - time.monotonic()))
    stdout = b"".join(out_chunks).decode("utf-8", errors="replace")
    return LaunchResult(args, None if timed_out else proc.returncode, stdout, "\n".join(tail), timed_out=timed_out, killed=killed)
