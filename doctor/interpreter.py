"""Which Python a command looks at or acts on: one policy for every command.

`check`, `facts`, `fix`, `select`, `install`, `smoke` and `build` all mean the user's Python,
not the one fwdoctor happens to run in (a pipx install has its own venv):

1. `--python` when given (a path, a command name on PATH, or a venv/conda folder);
2. else the active environment: $VIRTUAL_ENV, then $CONDA_PREFIX;
3. else a project's `.venv`: the nearest one upward from the working folder, as uv finds
   it (a live host's working folder; under --root, $PWD of the given environment);
4. else the first `python3`, then `python`, on PATH.

fwdoctor's own interpreter is never a fallback of its own; it is chosen only when it is the
one these rules find. The choice always carries its reason, and the commands print it.

A `--python` that does not exist is an error naming the path; on a live host one that
exists but does not run (a broken venv whose base Python was removed, a file that is not an
interpreter) is one too, so no command goes on to report "[ok]" about nothing.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass

from fwdoctor.host import Host

# Long enough for a cold interpreter on a loaded machine, short enough that a wedged
# one (an NFS home, a hung sitecustomize) does not stall the command.
RUNS_TIMEOUT_S = 20.0

# -I: no user site, no PYTHON* variables, nothing from the working directory.
_RUNS_ARGV = ("-I", "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])")


class InterpreterError(ValueError):
    """The requested interpreter cannot be used; the message names it."""


@dataclass(frozen=True)
class Choice:
    """The interpreter a command uses (`path`, host view) and why it is that one.
    `path` is None when none could be found; `why` then says what was looked for."""

    path: str | None
    why: str
    requested: bool = False

    def describe(self) -> str:
        return f"{self.path} ({self.why})" if self.path else self.why


def choose(host: Host, requested: str | None) -> Choice:
    """The policy, read from the host's files and environment (works under --root too)."""
    if requested:
        path = requested if "/" in requested else host.which(requested)
        if path and not path.startswith("/") and host.live:
            path = os.path.abspath(path)  # relative to where the user ran fwdoctor
        if path and host.is_dir(path):  # a venv/conda prefix given instead of its interpreter
            path = next((c for c in (posixpath.join(path, "bin", n) for n in ("python", "python3")) if host.is_file(c)), path)
        if path and host.is_file(path):
            return Choice(path, "--python", requested=True)
        hint = " (a version X.Y plans for another machine: only `select` and `install` take one)" if _looks_like_version(requested) else ""
        return Choice(None, f"--python {requested}: no such interpreter{hint}", requested=True)
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = host.env.get(var) or ""
        if not prefix:
            continue
        for name in ("python", "python3"):
            candidate = posixpath.join(prefix, "bin", name)
            if host.is_file(candidate):
                return Choice(candidate, f"${var}/bin/{name}, the active environment")
    project = project_venv(host)
    if project is not None:
        return Choice(project, "the project's .venv (the nearest upward from the working folder, as uv finds it); no active environment")
    for name in ("python3", "python"):
        found = host.which(name)
        if found:
            return Choice(found, f"first {name} on PATH; no active environment")
    return Choice(None, "no python3 or python on PATH and no active environment ($VIRTUAL_ENV, $CONDA_PREFIX)")


def project_venv(host: Host) -> str | None:
    """The interpreter of the nearest `.venv` (with its pyvenv.cfg) in the working folder or
    a folder above it, as `uv pip` finds one; None when there is none."""
    try:
        cwd = os.getcwd() if host.live else host.env.get("PWD")
    except OSError:  # the working folder was removed under us
        return None
    if not cwd or not cwd.startswith("/"):
        return None
    folder = posixpath.normpath(cwd)
    while True:
        venv = posixpath.join(folder, ".venv")
        if host.is_file(posixpath.join(venv, "pyvenv.cfg")):
            for name in ("python", "python3"):
                candidate = posixpath.join(venv, "bin", name)
                if host.is_file(candidate):
                    return candidate
        if folder == "/":
            return None
        folder = posixpath.dirname(folder)


def _looks_like_version(text: str) -> bool:
    parts = text.split(".")
    return 2 <= len(parts) <= 3 and all(p.isdigit() for p in parts)


def check_runs(host: Host, path: str, timeout: float = RUNS_TIMEOUT_S) -> str | None:
    """On a live host: None when `path` starts as a Python, else why it does not."""
    if not host.live:
        return None
    if not os.access(path, os.X_OK):
        return "not executable"
    # Through the probe cache (fwdoctor/probecache.py): whether an ELF interpreter starts
    # and which version it prints is a question about the file, answered again whenever
    # the file (or the symlink's target) changes; a dangling venv link has no identity and
    # always runs. It cost every `check --python` a ~50 ms child (issue 30).
    result = host.run_version([path, *_RUNS_ARGV], timeout=timeout)
    if result is None:
        return None
    if result.error:
        return result.error
    if result.timed_out:
        return f"no answer within {timeout:g} s"
    if not result.ok:
        tail = (result.stderr.strip().splitlines() or [""])[-1][:200]
        return f"exit status {result.returncode}" + (f": {tail}" if tail else "")
    last = (result.stdout.strip().splitlines() or [""])[-1]
    if not last[:1].isdigit():
        return f"does not answer like a Python interpreter (printed {result.stdout[:80]!r})"
    return None


def resolve(host: Host, requested: str | None) -> Choice:
    """The policy for a command about to use the interpreter: raises InterpreterError when
    none is found, or (live host) the one found does not run."""
    choice = choose(host, requested)
    if choice.path is None:
        raise InterpreterError(choice.why if requested else f"no interpreter to use: {choice.why}; pass --python /path/to/python")
    problem = check_runs(host, choice.path)
    if problem is not None:
        label = f"--python {requested}" if requested else choice.describe()
        raise InterpreterError(f"{label}: cannot run it: {problem}")
    return choice
