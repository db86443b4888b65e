"""What users install: the built wheel, in a fresh venv, used from a folder outside this
repository, beside the packages that used to break it.

PyPI's `torchtune` ships a top-level `recipes` package and PyPI's unrelated `doctor` (a
Flask library) a top-level `doctor`: before fwdoctor became one import package, either
overwrote ours. These tests build the wheel from this checkout, check what it holds, and
run it installed next to both (installed after ours, `--no-deps`, as a user would).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers import REPO
from helpers import run as _run

# The installed-wheel tests download fwdoctor's dependencies and PyPI's `doctor` and `torchtune`.
pytestmark = [pytest.mark.slow, pytest.mark.network]

# The shared wheel and venv (built once per run): tests/wheel_helpers.py.
pytest_plugins = ("wheel_helpers",)


def _source_files() -> set[str]:
    """Every module and data file of the package, by its path inside the wheel."""
    files: set[str] = set()
    for folder, prefix in ((REPO / "doctor", "fwdoctor"), (REPO / "recipes", "fwdoctor/recipes")):
        for path in folder.rglob("*"):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            if path.suffix in (".py", ".yaml", ".md", ".sh"):
                files.add(f"{prefix}/{path.relative_to(folder).as_posix()}")
    return files


def test_the_wheel_holds_one_import_package_and_every_module_and_data_file(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/", 1)[0] for name in names}
    dist_info = {t for t in top if t.endswith(".dist-info")}
    assert top - dist_info == {"fwdoctor"}, f"top-level entries besides fwdoctor: {sorted(top - dist_info - {'fwdoctor'})}"
    missing = sorted(_source_files() - set(names))
    assert not missing, f"in the repository but not in the wheel: {missing}"
    (info,) = dist_info
    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert any(name.endswith("/licenses/LICENSE") for name in names if name.startswith(info))


def _outside(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX")}
    env["HOME"] = str(tmp_path)
    return env


def test_the_installed_wheel_runs_from_outside_the_repository_beside_doctor_and_torchtune(installed, tmp_path):
    fwdoctor = str(installed / "bin" / "fwdoctor")
    env = _outside(tmp_path)
    version = _run([fwdoctor, "--version"], cwd=tmp_path, timeout=60, env=env)
    assert version.stdout.startswith("fwdoctor, version ")
    module = _run([str(installed / "bin" / "python"), "-m", "fwdoctor", "--version"], cwd=tmp_path, timeout=60, env=env)
    assert module.stdout == version.stdout
    chosen = _run([fwdoctor, "select", "torch", "--driver", "580.95.05", "--gpu", "9.0", "--python", "3.12"], cwd=tmp_path, timeout=60, env=env)
    # The answer names a wheel and the command that installs it (what, not which: the
    # shipped KB moves on, and this test is about the installed package working).
    assert re.search(r"^torch \d+\.\d+\.\d+\+cu\d+ ", chosen.stdout, re.M), chosen.stdout
    pasted = re.sub(r" \\\n +", " ", chosen.stdout)  # the command wraps at 80 columns with backslashes, as a shell reads it
    assert re.search(r"install: +pip install torch==\d+\.\d+\.\d+ --index-url https://", pasted), chosen.stdout
    # The others' packages are really there (so the test proves coexistence, not absence).
    # find_spec locates them without importing (they were installed without their deps).
    probe = "from importlib.util import find_spec as f; print(*(f(n).origin for n in ('doctor', 'recipes', 'fwdoctor.recipes')))"
    where = _run([str(installed / "bin" / "python"), "-c", probe], cwd=tmp_path, timeout=60, env=env).stdout.split()
    assert "/site-packages/doctor/" in where[0] and "/site-packages/recipes/" in where[1]
    assert "/site-packages/fwdoctor/recipes/" in where[2]


def test_uninstalling_pypi_doctor_leaves_fwdoctor_whole(installed, tmp_path):
    _run([str(installed / "bin" / "python"), "-m", "pip", "uninstall", "-y", "-q", "doctor", "torchtune"], cwd=tmp_path)
    env = _outside(tmp_path)
    listed = _run([str(installed / "bin" / "fwdoctor"), "list"], cwd=tmp_path, timeout=60, env=env)
    assert "driver-too-old-for-torch" in listed.stdout
    explained = _run([str(installed / "bin" / "fwdoctor"), "explain", "FWD104"], cwd=tmp_path, timeout=60, env=env)
    assert explained.stdout.startswith("driver-too-old-for-torch (FWD104")


def test_the_installed_fwdoctor_looks_at_the_users_python_not_its_own(installed, tmp_path):
    """pipx-style: fwdoctor lives in its own venv, the user works in a project venv. check,
    facts and smoke all mean the project's interpreter ($VIRTUAL_ENV) and say so; a
    --python that does not exist stops with exit 2 naming it."""
    project = tmp_path / "my project"
    project.mkdir()
    _run([sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], cwd=project, timeout=120)
    users_python = str(project / ".venv" / "bin" / "python")
    env = _outside(tmp_path)
    env["VIRTUAL_ENV"] = str(project / ".venv")
    env["PATH"] = f"{project / '.venv' / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    fwdoctor = str(installed / "bin" / "fwdoctor")

    facts = _run([fwdoctor, "facts"], cwd=project, timeout=120, env=env)
    executable = json.loads(facts.stdout)["facts"]["python.executable"]
    assert executable == {"value": users_python, "source": "$VIRTUAL_ENV/bin/python, the active environment"}

    smoke = subprocess.run([fwdoctor, "smoke", "kernel", "--json"], cwd=project, capture_output=True, text=True, timeout=300, env=env)
    report = json.loads(smoke.stdout)
    assert report["python"] == {"path": users_python, "why": "$VIRTUAL_ENV/bin/python, the active environment"}
    assert report["results"][0]["message"] == f"cannot import torch in {users_python}: ModuleNotFoundError: No module named 'torch'"
    assert f"interpreter under test: {users_python}" in smoke.stderr
    assert smoke.returncode == 1

    missing = subprocess.run([fwdoctor, "check", "--python", "/nonexistent/bin/python"], cwd=project, capture_output=True, text=True, timeout=120, env=env)
    assert missing.returncode == 2
    assert "--python /nonexistent/bin/python: no such interpreter" in missing.stderr
    assert "[ok]" not in missing.stdout


def test_the_installed_fwdoctor_plans_for_the_users_python_and_agrees_with_itself(installed, tmp_path):
    """From the installed wheel, in a project outside the repository: check's JSON is stamped
    and opens with the per-layer summary; check's fix and select name the same wheel (on this
    GPU-less machine, the CPU one); a plan for Debian's externally managed /usr/bin/python3
    creates the project's .venv instead of installing into it (PEP 668)."""
    project = tmp_path / "proj"
    project.mkdir()
    _run([sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], cwd=project, timeout=120)
    env = _outside(tmp_path)
    env["VIRTUAL_ENV"] = str(project / ".venv")
    fwdoctor = str(installed / "bin" / "fwdoctor")

    checked = subprocess.run([fwdoctor, "-q", "check", "--json"], cwd=project, capture_output=True, text=True, timeout=120, env=env)
    report = json.loads(checked.stdout)
    assert (report["schema_version"], report["kind"]) == (1, "check")
    python_line = next(row["text"] for row in report["summary"] if row["layer"] == "Python")
    assert f"at {project / '.venv' / 'bin' / 'python'} ($VIRTUAL_ENV/bin/python" in python_line
    (missing,) = [f for f in report["findings"] if f["id"] == "torch-not-installed"]
    fixed = f"{missing['fix']['options']['torch']}+{missing['fix']['options']['variant']}"
    selected = json.loads(_run([fwdoctor, "select", "torch", "--json"], cwd=project, timeout=120, env=env).stdout)["choice"]["version"]
    assert fixed == selected and selected.endswith("+cpu")

    system = "/usr/bin/python3"
    marker = f"/usr/lib/python{sys.version_info[0]}.{sys.version_info[1]}/EXTERNALLY-MANAGED"
    if not os.path.exists(marker):
        pytest.skip(f"needs a Debian-style externally managed {system} ({marker})")
    planned = json.loads(_run([fwdoctor, "install", "torch", "--python", system, "--cuda", "cpu", "--json"], cwd=project, timeout=120, env=env).stdout)
    first = planned["plan"]["steps"][0]["argv"]
    assert first == [system, "-m", "venv", "--", str(project / ".venv")]
    assert planned["plan"]["target_python"] == str(project / ".venv" / "bin" / "python")
