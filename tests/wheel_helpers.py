"""The built wheel of this checkout and a fresh venv with it installed: one build and one
venv per test run, shared by the files that test what users install (test_packaging.py,
test_mcp_server.py). Loaded as a plugin (`pytest_plugins = ("wheel_helpers",)` in each), so
the session-scoped fixtures are registered once and built once however many files ask.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from helpers import REPO, run

# The versions the bug was reproduced with (issue: "One fwdoctor package").
CLASHING = ("doctor==3.13.7", "torchtune==0.6.1")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this checkout, built as `pip wheel .` builds it (no editable magic)."""
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy of the checkout's files (tracked and new, not ignored): setuptools
    # builds in the source tree's build/, where files deleted since an earlier build linger
    # and would end up in the wheel.
    tree = tmp_path_factory.mktemp("tree")
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO, timeout=60).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file() and not source.is_symlink():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(tree)], cwd=out)
    (built,) = out.glob("fwdoctor-*.whl")
    return built


@pytest.fixture(scope="session")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel, then PyPI's `doctor` and `torchtune` on top (no deps)."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    run([*pip, str(wheel)], cwd=venv.parent)
    run([*pip, "--no-deps", *CLASHING], cwd=venv.parent)
    return venv
