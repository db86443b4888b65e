"""The built wheel of this checkout and a fresh venv with it installed: one build and one
venv per test run, shared by the files that test what users install (test_packaging.py,
test_mcp_server.py). Loaded as a plugin (`pytest_plugins = ("wheel_helpers",)` in each), so
the session-scoped fixtures are registered once and built once however many files ask.

Under pytest-xdist (`make test`) each worker runs session fixtures on its own: the wheel is
built once for the whole run in the run's shared temporary folder, under a file lock, and
the workers that ask later reuse it (issue 30). The venv (`installed`) is changed by the
tests that use it (pip uninstall, the mcp extra), so its files share one xdist group,
"installed-venv": one worker builds it and runs them in order.
"""

from __future__ import annotations

import fcntl
import shutil
import sys
from pathlib import Path

import pytest

from helpers import REPO, run

# The versions the bug was reproduced with (issue: "One fwdoctor package").
CLASHING = ("doctor==3.13.7", "torchtune==0.6.1")


def run_shared_dir(config: pytest.Config, tmp_path_factory) -> Path:
    """A folder shared by the whole test run: the run's basetemp, or in an xdist worker the
    folder that holds each worker's basetemp (popen-gw0, popen-gw1, ...)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if hasattr(config, "workerinput") else base


@pytest.fixture(scope="session")
def wheel(request, tmp_path_factory) -> Path:
    """The wheel of this checkout, built as `pip wheel .` builds it (no editable magic);
    built once per run, whichever xdist worker asks first."""
    shared = run_shared_dir(request.config, tmp_path_factory) / "fwdoctor-wheel"
    shared.mkdir(exist_ok=True)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes; a worker that dies releases it too
        done = sorted(shared.glob("out/fwdoctor-*.whl"))
        if done:
            return done[0]
        return _build_wheel(tmp_path_factory, shared / "out")


def _build_wheel(tmp_path_factory, out: Path) -> Path:
    # Written to a scratch folder, then renamed into `out`: a half-written wheel is never found.
    scratch = tmp_path_factory.mktemp("wheel")
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
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(scratch), str(tree)], cwd=scratch)
    (built,) = scratch.glob("fwdoctor-*.whl")
    out.mkdir()
    return built.rename(out / built.name)


@pytest.fixture(scope="session")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel, then PyPI's `doctor` and `torchtune` on top (no deps)."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    run([*pip, str(wheel)], cwd=venv.parent)
    run([*pip, "--no-deps", *CLASHING], cwd=venv.parent)
    return venv
