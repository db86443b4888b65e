"""The one way fwdoctor runs a program: argv (never a shell), LC_ALL=C, and a timeout.

A hung nvidia-smi or a driver call stuck in the kernel must not hang the doctor, so each
child gets its own process group and the whole group is killed on timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Mapping, Sequence

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
        proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=command_env(env),
            cwd=cwd,
            start_new_session=True,  # its own process group, so a timeout kills children too
        )
    except FileNotFoundError:
        return CommandResult(args, None, "", "", error="not found")
    except PermissionError:
        return CommandResult(args, None, "", "", error="permission denied")
    except OSError as exc:
        return CommandResult(args, None, "", "", error=f"cannot run: {exc.strerror or exc}")
    try:
        out, err = proc.communicate(input=input_text.encode() if input_text is not None else None, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return CommandResult(args, None, _decode(out), _decode(err), timed_out=True)
    except BaseException:
        # Ctrl-C or SIGTERM in the doctor: the child has its own session, so it would
        # outlive us; take its whole group down before propagating.
        _kill_group(proc)
        proc.wait()
        raise
    return CommandResult(args, proc.returncode, _decode(out), _decode(err))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _decode(data: bytes | None) -> str:
    # Garbage bytes from a broken tool must not raise; parsers treat them as unparseable.
    return (data or b"").decode("utf-8", errors="replace")
