"""fwdoctor.interpreter: the one policy for which Python a command means, and the PEP 668
marker the python probe reports. Root-folder hosts are built in tmp_path (a Debian-like
system Python, a venv, a conda env); the live cases run real interpreters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fwdoctor import interpreter
from fwdoctor.cli import main
from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.probes import python as py


def _exe(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)


@pytest.fixture
def world(tmp_path: Path) -> Path:
    """/usr/bin/python3 (3.11, marked EXTERNALLY-MANAGED as Debian 12 ships it),
    /work/.venv (a venv of it) and /opt/conda/envs/t (a conda env)."""
    _exe(tmp_path / "usr/bin/python3")
    (tmp_path / "usr/lib/python3.11/site-packages").mkdir(parents=True)
    (tmp_path / "usr/lib/python3.11/EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=use a venv\n")
    _exe(tmp_path / "work/.venv/bin/python")
    (tmp_path / "work/.venv/pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.2\n")
    (tmp_path / "work/.venv/lib/python3.11/site-packages").mkdir(parents=True)
    _exe(tmp_path / "opt/conda/envs/t/bin/python")
    (tmp_path / "opt/conda/envs/t/conda-meta").mkdir(parents=True)
    return tmp_path


@pytest.mark.parametrize(
    ("env", "requested", "expected"),
    [
        ({"PATH": "/usr/bin"}, None, ("/usr/bin/python3", "first python3 on PATH; no active environment")),
        ({"PATH": "/usr/bin", "VIRTUAL_ENV": "/work/.venv"}, None, ("/work/.venv/bin/python", "$VIRTUAL_ENV/bin/python, the active environment")),
        ({"PATH": "/usr/bin", "CONDA_PREFIX": "/opt/conda/envs/t"}, None, ("/opt/conda/envs/t/bin/python", "$CONDA_PREFIX/bin/python, the active environment")),
        # A venv beats conda's base when both are active (`conda activate` then `source .venv/bin/activate`).
        ({"PATH": "/usr/bin", "VIRTUAL_ENV": "/work/.venv", "CONDA_PREFIX": "/opt/conda/envs/t"}, None, ("/work/.venv/bin/python", "$VIRTUAL_ENV/bin/python, the active environment")),
        # A stale VIRTUAL_ENV (the venv was deleted) falls through to PATH, it is not trusted.
        ({"PATH": "/usr/bin", "VIRTUAL_ENV": "/gone"}, None, ("/usr/bin/python3", "first python3 on PATH; no active environment")),
        ({"PATH": "/usr/bin", "VIRTUAL_ENV": "/work/.venv"}, "/usr/bin/python3", ("/usr/bin/python3", "--python")),
        ({"PATH": "/usr/bin"}, "/work/.venv", ("/work/.venv/bin/python", "--python")),
        ({"PATH": "/usr/bin"}, "python3", ("/usr/bin/python3", "--python")),
        ({"PATH": "/usr/bin"}, "/nonexistent/python", (None, "--python /nonexistent/python: no such interpreter")),
        ({"PATH": "/usr/bin"}, "3.11", (None, "--python 3.11: no such interpreter (a version X.Y plans for another machine: only `select` and `install` take one)")),
        ({"PATH": "/nowhere"}, None, (None, "no python3 or python on PATH and no active environment ($VIRTUAL_ENV, $CONDA_PREFIX)")),
    ],
)
def test_the_policy_in_order(world, env, requested, expected):
    choice = interpreter.choose(Host.at_root(world, env), requested)
    assert (choice.path, choice.why) == expected


def test_fwdoctors_own_interpreter_is_not_a_fallback(world):
    """Nothing on PATH and no environment: no answer, rather than sys.executable."""
    choice = interpreter.choose(Host.at_root(world, {"PATH": "/nowhere"}), None)
    assert choice.path is None
    with pytest.raises(interpreter.InterpreterError, match=r"no interpreter to use: .* pass --python"):
        interpreter.resolve(Host.at_root(world, {"PATH": "/nowhere"}), None)


def test_the_probe_reports_the_pep668_marker_of_a_system_python_and_none_for_its_venv(world):
    system = collect(Host.at_root(world, {"PATH": "/usr/bin"}), py.PROBES)
    assert system["python.externally_managed"] == "/usr/lib/python3.11/EXTERNALLY-MANAGED"
    venv = collect(Host.at_root(world, {"PATH": "/usr/bin", "VIRTUAL_ENV": "/work/.venv"}), py.PROBES)
    assert venv["python.executable"] == "/work/.venv/bin/python"
    assert venv["python.externally_managed"] is None


def test_a_live_python_that_does_not_run_is_named(tmp_path):
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'bad interpreter' >&2\nexit 3\n")
    broken.chmod(0o755)
    not_python = tmp_path / "true"
    not_python.write_text("#!/bin/sh\necho hello\n")
    not_python.chmod(0o755)
    plain = tmp_path / "plain"
    plain.write_text("not executable")
    live = Host.live_host()
    assert interpreter.check_runs(live, sys.executable) is None
    assert interpreter.check_runs(live, str(broken)) == "exit status 3: bad interpreter"
    assert interpreter.check_runs(live, str(not_python)) == "does not answer like a Python interpreter (printed 'hello\\n')"
    assert interpreter.check_runs(live, str(plain)) == "not executable"


@pytest.mark.parametrize("command", [["check"], ["facts"], ["fix"], ["select", "torch"], ["install", "torch"], ["smoke", "kernel"]])
def test_every_command_stops_on_a_python_that_is_not_there(command, tmp_path):
    missing = tmp_path / "no such venv" / "bin" / "python"
    result = CliRunner().invoke(main, [*command, "--python", str(missing)])
    assert result.exit_code == 2, result.output
    assert f"--python {missing}: no such interpreter" in result.output
    assert "[ok]" not in result.output


def test_check_stops_on_a_python_that_does_not_run(tmp_path):
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    result = CliRunner().invoke(main, ["check", "--python", str(broken)])
    assert result.exit_code == 2
    assert f"--python {broken}: cannot run it: exit status 3" in result.output


def test_smoke_defaults_to_the_active_venv_and_says_so(tmp_path):
    venv = tmp_path / "proj venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    result = CliRunner().invoke(main, ["smoke", "kernel", "--json"], env=env)
    target = str(venv / "bin" / "python")
    assert f"interpreter under test: {target} ($VIRTUAL_ENV/bin/python, the active environment)" in result.output
    assert f"cannot import torch in {target}" in result.output
    assert result.exit_code == 1


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        # No environment active: the nearest .venv upward from the working folder, as uv finds it.
        ({"PATH": "/usr/bin", "PWD": "/work/src/pkg"}, "/work/.venv/bin/python"),
        ({"PATH": "/usr/bin", "PWD": "/work"}, "/work/.venv/bin/python"),
        # An active environment still comes first; outside the project, PATH.
        ({"PATH": "/usr/bin", "PWD": "/work/src", "CONDA_PREFIX": "/opt/conda/envs/t"}, "/opt/conda/envs/t/bin/python"),
        ({"PATH": "/usr/bin", "PWD": "/opt"}, "/usr/bin/python3"),
    ],
)
def test_a_projects_venv_is_the_interpreter_when_none_is_active(world, env, expected):
    (world / "work/src/pkg").mkdir(parents=True)
    choice = interpreter.choose(Host.at_root(world, env), None)
    assert choice.path == expected
    if expected.startswith("/work/"):
        assert choice.why.startswith("the project's .venv (the nearest upward from the working folder, as uv finds it)")


def test_a_dot_venv_without_pyvenv_cfg_is_not_an_environment(world):
    (world / "work/.venv/pyvenv.cfg").unlink()
    assert interpreter.choose(Host.at_root(world, {"PATH": "/usr/bin", "PWD": "/work"}), None).path == "/usr/bin/python3"


def test_check_in_a_project_folder_inspects_its_venv_and_says_so(tmp_path, monkeypatch):
    project = tmp_path / "proj"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True, timeout=120)
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    result = CliRunner().invoke(main, ["facts"], env={"VIRTUAL_ENV": None, "CONDA_PREFIX": None})
    document = json.loads(result.stdout)
    executable = document["facts"]["python.executable"]
    assert executable["value"] == str(project / ".venv/bin/python")
    assert executable["source"].startswith("the project's .venv")
