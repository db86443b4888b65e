"""The children fwdoctor started, and ending their trees on a stop signal.

Apart from fwdoctor.runner (which starts the children and registers them here) so that the
CLI can hold its signal handlers around every command without importing subprocess:
`triage`, `explain` and a warm `check --facts` start no child, and subprocess with
selectors and signal's friends is ~8 ms of such a command (issue 30). Nothing here starts
a process; fwdoctor.runner re-exports these names.
"""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass
from typing import Any


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
_live: dict[int, Any] = {}  # pid -> its subprocess.Popen (fwdoctor.runner._popen)
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


def stopping() -> bool:
    return _stop is not None and _stop.signum is not None


def stopping_error() -> str:
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
