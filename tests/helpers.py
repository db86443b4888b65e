"""Helpers shared by several test files (conftest.py holds the fixtures)."""

from __future__ import annotations

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
