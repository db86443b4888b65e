"""Start a command inside a fake GPU host: build the stand-in library, write the world,
`unshare --mount` into a private mount namespace, mount it there (inside.py) and exec the
command. Returns the command's exit status; signals sent to us are passed on to it; the
world's folder is removed afterwards. Nothing outside the namespace changes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from . import world
from .build import build_library, compiler
from .scenario import Scenario

INSIDE = Path(__file__).resolve().with_name("inside.py")
PROBE_TIMEOUT_S = 10.0
STOP_GRACE_S = 5.0
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

_usable: str | None = None


class Unavailable(RuntimeError):
    """This machine cannot host the fake world (not root, no unshare, no overlayfs...)."""


def unavailable_reason() -> str | None:
    """Why the runner cannot work here, or None when it can (checked once per process).

    The words avoid "gpu"/"driver"/"nvml": tests/conftest.py lets strict CI skip only for a
    missing GPU, and this is a missing capability of the machine, which CI must have.
    """
    global _usable
    if _usable is not None:
        return _usable or None
    reason = ""
    if sys.platform != "linux":
        reason = "the fake-host runner needs Linux mount namespaces"
    elif os.geteuid() != 0:
        reason = "the fake-host runner needs root (unshare --mount, overlay and bind mounts)"
    elif shutil.which("unshare") is None:
        reason = "the fake-host runner needs unshare(1) from util-linux"
    elif compiler() is None:
        reason = "the fake-host runner needs a C compiler (gcc or cc)"
    else:
        with tempfile.TemporaryDirectory(prefix="fwdoctor-fakehost-probe-") as tmp:
            probe = [shutil.which("unshare") or "unshare", "--mount", "--propagation", "private", "--",
                     "mount", "-t", "overlay", "overlay", "-o", f"lowerdir={tmp}:/dev", "/dev"]
            try:
                result = subprocess.run(probe, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
                if result.returncode != 0:
                    reason = f"this machine refuses a private mount namespace with an overlay: {(result.stderr or result.stdout).strip()[:200]}"
            except (OSError, subprocess.TimeoutExpired) as exc:
                reason = f"unshare --mount did not run: {exc}"
    _usable = reason
    return reason or None


def exit_status(returncode: int) -> int:
    """A shell's status for a child's return code: 128 + N when killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


@contextmanager
def started(scenario: Scenario, argv: Sequence[str], keep_world: bool = False, **popen: Any) -> Iterator[subprocess.Popen]:
    """Start `argv` inside `scenario`'s host (Popen keywords: cwd, stdout, ...); on leaving,
    a command still running is stopped (SIGTERM, then SIGKILL) and the world removed."""
    reason = unavailable_reason()
    if reason:
        raise Unavailable(reason)
    if not argv:
        raise ValueError("no command to run")
    library = build_library()
    folder = Path(tempfile.mkdtemp(prefix="fwdoctor-gpuhost-"))
    try:
        world.build(scenario, folder, library)
        command = [shutil.which("unshare") or "unshare", "--mount", "--propagation", "private", "--",
                   sys.executable, "-I", "-S", str(INSIDE), str(folder / "manifest.json"), "--", *argv]
        proc = subprocess.Popen(command, **popen)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    finally:
        if keep_world:
            sys.stderr.write(f"gpuhost: world kept in {folder}\n")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def run(scenario: Scenario, argv: Sequence[str], keep_world: bool = False) -> int:
    """Run `argv` inside `scenario`'s host, passing our signals on; return its exit status.

    No time limit here on purpose: the command is the caller's, and so is its limit."""
    with started(scenario, argv, keep_world) as proc:
        previous = {}

        def forward(signum: int, _frame: object) -> None:
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass

        for signum in FORWARDED:
            previous[signum] = signal.signal(signum, forward)
        try:
            return exit_status(proc.wait())
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
