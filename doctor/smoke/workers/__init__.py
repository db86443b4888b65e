"""Scripts run by path in the TARGET interpreter (stdlib + torch only; never import doctor).

They live inside the package so that an installed fwdoctor ships them; the parent finds
them with `worker_path(name)` and runs them as files, because the interpreter under test
may not have fwdoctor installed.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def worker_path(name: str) -> str:
    """The file path of worker `name` ("kernel_worker", "allreduce_worker")."""
    path = _HERE / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"fwdoctor worker script missing: {path}")
    return str(path)
