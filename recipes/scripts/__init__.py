"""Scripts the recipes hand to another interpreter (`python -c TEXT`, or a file a plan
writes), kept as real files so tests lint and run them (tests/test_build_scripts.py).

Each runs on its own in the target environment, with only the standard library and what
it checks (torch, pip, nvcc); a recipe reads one as text with `read`, never imports it.
"""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).resolve().parent


def read(name: str) -> str:
    """The text of recipes/scripts/<name>, exactly as a recipe passes it on."""
    return (FOLDER / name).read_text(encoding="utf-8")
