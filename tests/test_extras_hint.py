"""Optional features say what to install before any work starts (issue 29, item 2): from the
installed wheel, with the extra's modules unimportable as in a plain `pip install fwdoctor`
or `pipx install fwdoctor`, each command stops in one line naming both `pip install
'fwdoctor[X]'` and `pipx inject fwdoctor PKG...`, exit 2, and never "internal error"."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import REPO

# The installed-wheel tests download fwdoctor's dependencies (tests/wheel_helpers.py).
pytestmark = [pytest.mark.slow, pytest.mark.network]
pytest_plugins = ("wheel_helpers",)

CONDA = "pip install 'fwdoctor[conda]' (pipx: pipx inject fwdoctor conda-lock py-rattler)"
STACK = "stacks/conda-cu126-local.yaml"  # the committed conda stack, with its lock in lockfiles/


def _fwdoctor(installed: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`fwdoctor ARGS` from the installed wheel in the repository, each extra's modules
    unimportable (the shared venv may have the mcp extra) and no conda executable on PATH."""
    blocked = "import sys\nfor m in ('conda_lock', 'rattler', 'docker', 'mcp'): sys.modules[m] = None\n"
    code = blocked + f"from fwdoctor.cli import main; main({list(args)!r})"
    env = {k: v for k, v in os.environ.items() if k not in ("CONDA_EXE", "MAMBA_EXE", "CONDA_LOCK_CONDA_EXE", "PYTHONPATH")}
    env.update(PATH=f"{installed / 'bin'}:/usr/bin:/bin", HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
    return subprocess.run([str(installed / "bin" / "python"), "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("lock", STACK, "--out", "{tmp}/lock"), f"`fwdoctor lock` of a conda stack ({STACK}) needs conda-lock and py-rattler, not installed: {CONDA}"),
        (("lock", "--check", STACK), f"`fwdoctor lock --check` of a conda stack ({STACK}) needs conda-lock and py-rattler, not installed: {CONDA}"),
        (("docker", "generate", STACK, "--out", "{tmp}/Dockerfile"), f"`fwdoctor docker generate` of a conda stack ({STACK}) needs conda-lock, not installed: {CONDA}"),
        (("check", "--image", "fwdoctor-no-such:tag"), "--image fwdoctor-no-such:tag: the Docker SDK is not installed: pip install 'fwdoctor[docker]' (pipx: pipx inject fwdoctor docker)"),
        (("mcp",), "`fwdoctor mcp` needs the MCP SDK: pip install 'fwdoctor[mcp]' (pipx: pipx inject fwdoctor mcp)"),
    ],
    ids=["lock-conda", "lock-check-conda", "docker-generate-conda", "check-image", "mcp"],
)
def test_a_missing_extra_is_named_for_pip_and_pipx_before_any_work(installed, tmp_path, args, expected):
    proc = _fwdoctor(installed, tmp_path, *(a.format(tmp=tmp_path) for a in args))
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr == f"fwdoctor: error: {expected}\n"
    assert not (tmp_path / "lock").exists() and not (tmp_path / "Dockerfile").exists()  # nothing started
