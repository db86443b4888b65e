"""fwdoctor on every Python it says it supports (`requires-python = ">=3.10"`), not only on
the one the test venv runs.

Why: Python 3.13 compiles docstrings differently (it strips their indentation, and its
compiler encodes them as UTF-8): a docstring holding the escape of a lone surrogate, which
3.10-3.12 accept, made `import fwdoctor.schema` raise UnicodeEncodeError on 3.13.0, so every
command died with a traceback there while the whole suite passed on 3.11.

Two layers, each on every other CPython found on this machine (PATH's python3.N and pyenv's
versions, the interpreters users have):
  - every module of the package compiles (seconds; no venv);
  - on the oldest and the newest of them, the built wheel, installed by that Python's pip
    into a fresh venv with its dependencies from the index, runs `check --json`, `triage`,
    a hostile `--root` (a symlink loop) and nvidia-smi CSV holding a NUL byte from a folder
    outside the checkout.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, run

pytest_plugins = ("wheel_helpers",)

FLOOR = (3, 10)  # pyproject.toml's requires-python


def _version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return (int(out[0]), int(out[1])) if len(out) == 2 else None


def other_pythons() -> dict[tuple[int, int], str]:
    """One interpreter per CPython minor >= FLOOR found here, except the one running the tests."""
    candidates = [shutil.which(f"python3.{minor}") for minor in range(FLOOR[1], 20)]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        candidates += [str(p / "bin" / "python3") for p in sorted(pyenv.iterdir()) if re.fullmatch(r"3\.\d+\.\d+", p.name)]
    found: dict[tuple[int, int], str] = {}
    for python in filter(None, candidates):
        version = _version(python) if os.access(python, os.X_OK) else None
        if version and version >= FLOOR and version != sys.version_info[:2]:
            found.setdefault(version, python)
    return found


PYTHONS = other_pythons()
IDS = [f"{major}.{minor}" for major, minor in PYTHONS]
# The install runs on the oldest and the newest found (the ends are where the language and
# the packaging tools change); every one found compiles the package.
ENDS = {v: PYTHONS[v] for v in {min(PYTHONS), max(PYTHONS)}} if PYTHONS else {}

requires_other = pytest.mark.skipif(not PYTHONS, reason="no CPython >= 3.10 other than the test venv's is installed here")


def test_this_machine_has_the_pythons_we_promise() -> None:
    """The checks below run on this machine's other Pythons; where the floor and the newest
    are missing they would pass by skipping. The development and CI machines have pyenv's
    3.10, 3.12 and 3.13: losing them must be seen."""
    if not Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")).is_dir() and not shutil.which("python3.10"):
        pytest.skip("no pyenv and no python3.10 here: the other-Python checks cannot run on this machine")
    assert FLOOR in PYTHONS or sys.version_info[:2] == FLOOR, f"Python {FLOOR[0]}.{FLOOR[1]} not found: {PYTHONS}"
    assert max(PYTHONS, default=(0, 0)) >= (3, 13), f"no Python 3.13 or newer found: {PYTHONS}"


@requires_other
@pytest.mark.parametrize("python", list(PYTHONS.values()), ids=IDS)
def test_every_module_compiles(python: str) -> None:
    code = ("import pathlib, sys\n"
            "bad = []\n"
            "for root in sys.argv[1:]:\n"
            "    for p in sorted(pathlib.Path(root).rglob('*.py')):\n"
            "        try:\n"
            "            compile(p.read_bytes(), str(p), 'exec')\n"
            "        except Exception as exc:\n"
            "            bad.append(f'{p}: {type(exc).__name__}: {exc}')\n"
            "print('\\n'.join(bad)); sys.exit(1 if bad else 0)\n")
    proc = subprocess.run([python, "-c", code, str(REPO / "doctor"), str(REPO / "recipes")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"modules that {python} cannot compile:\n{proc.stdout}{proc.stderr}"


@requires_other
@pytest.mark.slow
@pytest.mark.network
@pytest.mark.parametrize("python", list(ENDS.values()), ids=[f"{a}.{b}" for a, b in ENDS])
def test_installed_wheel_runs(python: str, wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run([python, "-m", "venv", str(venv)], cwd=tmp_path, timeout=300)
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        cwd=tmp_path, timeout=600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "FWDOCTOR_"))}
    env["HOME"] = str(tmp_path / "home")  # its own cache: nothing written by the test venv's run is read
    fwdoctor = str(venv / "bin" / "fwdoctor")
    check = subprocess.run([fwdoctor, "check", "--json", "--python", str(venv / "bin" / "python")], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in check.stderr, check.stderr
    document = json.loads(check.stdout)
    assert document["kind"] == "check"
    assert document["facts"]["python.version"]["value"].startswith(".".join(map(str, _version(python) or ())))
    report = ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). "
              "Please update your GPU driver\nPyTorch version: 2.4.0+cu121\n")
    triage = subprocess.run([fwdoctor, "triage", "--json", "-"], input=report, cwd=elsewhere, env=env,
                            capture_output=True, text=True, timeout=300)
    assert "Traceback" not in triage.stderr, triage.stderr
    ids = {f["id"] for f in json.loads(triage.stdout)["findings"]}
    assert "driver-too-old-for-torch" in ids, ids
    # A symlink loop as --root: 3.11's Path.resolve() raised on it, 3.13's returns it as it is;
    # both must name the loop (it once read "not a directory" on 3.13).
    (tmp_path / "loop-a").symlink_to("loop-b")
    (tmp_path / "loop-b").symlink_to("loop-a")
    loop = subprocess.run([fwdoctor, "check", "--root", str(tmp_path / "loop-a")], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=300)
    assert loop.returncode == 2 and "too many levels of symbolic links" in loop.stderr, (loop.returncode, loop.stderr)
    # nvidia-smi's CSV with a NUL byte: Python 3.10's csv raises "line contains NUL" (3.11 reads
    # it), which escaped the parser as a traceback; on 3.10 it is now an unparseable answer.
    nul = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "from fwdoctor.probes.driver import parse_smi_csv; print(parse_smi_csv('0, A100\\x00\\n', ['index', 'name']))"],
                         cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert nul.returncode == 0 and "Traceback" not in nul.stderr, (nul.returncode, nul.stderr[-2000:])
    if _version(python) == (3, 10):
        assert nul.stdout.strip() == "None", nul.stdout
