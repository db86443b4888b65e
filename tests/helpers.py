"""Helpers shared by several test files (conftest.py holds the fixtures)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def torch_python() -> str | None:
    """An interpreter with torch: the test venv (`make test-venv`), the one running the
    tests if it has torch, or a scratch venv; None when there is none."""
    if (REPO / ".venv" / ".torch").exists():
        return str(REPO / ".venv" / "bin" / "python")
    if any((Path(sys.prefix) / "lib").glob("python3*/site-packages/torch/version.py")):
        return sys.executable
    if Path("/tmp/venv-torch/bin/python").exists():
        return "/tmp/venv-torch/bin/python"
    return None


def run(argv: list[str], cwd: Path, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `argv`; an AssertionError with the end of its output unless it exits 0."""
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc
