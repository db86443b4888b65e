"""doctor/probes/python.py: parsers on recorded files, and the probe on fixture roots."""

from __future__ import annotations

from hypothesis import given, strategies as st

from conftest import DATA, ROOTS
from fwdoctor.engine import collect
from fwdoctor.host import Host, load_env_file
from fwdoctor.probes import python as py
from fwdoctor.probes.python import parse_shebang

TORCH_DATA = DATA / "torch"


def facts_for(root: str, env: str = "fixture.env"):
    host = Host.at_root(ROOTS / root, load_env_file(str(ROOTS / root / env)))
    return collect(host, py.PROBES)


def test_a_venv_pip_shebang_names_the_venv_interpreter():
    assert parse_shebang((TORCH_DATA / "pip-shebang-venv.txt").read_text()) == "/work/main/.venv/bin/python3"


def test_a_pyenv_shim_names_no_interpreter_because_it_runs_bash():
    assert parse_shebang((TORCH_DATA / "pip-shebang-pyenv-shim.txt").read_text()) is None


def test_env_and_long_path_shebangs_are_understood():
    assert parse_shebang("#!/usr/bin/env python3\nimport sys\n") == "python3"
    text = "#!/bin/sh\n'''exec' \"/very/long/prefix/bin/python3.11\" \"$0\" \"$@\"\n' '''\n"
    assert parse_shebang(text) == "/very/long/prefix/bin/python3.11"
    assert parse_shebang("no shebang") is None
    assert parse_shebang("#!\n") is None


@given(st.text(max_size=300))
def test_parse_shebang_never_raises_on_arbitrary_text(text):
    result = parse_shebang(text)
    assert result is None or isinstance(result, str)


def test_pyvenv_cfg_gives_the_full_version_and_the_user_site_switch(tmp_path):
    venv = tmp_path / "v"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / "pyvenv.cfg").write_text((TORCH_DATA / "pyvenv-3.11.7.cfg").read_text())
    host = Host.at_root(tmp_path)
    interp = py.describe(host, "/v/bin/python")
    assert (interp.kind, interp.prefix, interp.version) == ("venv", "/v", "3.11.7")
    assert interp.user_site_enabled is False  # include-system-site-packages = false


def test_patchlevel_h_gives_the_full_version_of_a_plain_installation(tmp_path):
    (tmp_path / "opt/py/bin").mkdir(parents=True)
    (tmp_path / "opt/py/bin/python3.11").write_text("")
    (tmp_path / "opt/py/include/python3.11").mkdir(parents=True)
    (tmp_path / "opt/py/include/python3.11/patchlevel.h").write_text((TORCH_DATA / "patchlevel-3.11.7-excerpt.h").read_text())
    (tmp_path / "opt/py/lib/python3.11/site-packages").mkdir(parents=True)
    interp = py.describe(Host.at_root(tmp_path), "/opt/py/bin/python3.11")
    assert interp.version == "3.11.7"
    assert interp.site_packages == ["/opt/py/lib/python3.11/site-packages"]


def test_the_active_venv_is_inspected_and_its_site_packages_listed():
    facts = facts_for("python-env-ok")
    assert facts["python.executable"] == "/opt/venv/bin/python"
    assert facts["python.version"] == "3.11.7"
    assert facts["python.site_packages"] == ["/opt/venv/lib/python3.11/site-packages"]
    assert facts["python.user_site"] is None  # a venv does not read ~/.local


def test_path_commands_show_the_system_python_and_pip_ahead_of_the_venv():
    cmds = facts_for("python-env-mismatch")["python.path_commands"]
    assert cmds["python3"] == {"path": "/usr/bin/python3", "resolved": "/usr/bin/python3.11", "prefix": "/usr"}
    assert cmds["pip"]["interpreter"] == "/usr/bin/python3" and cmds["pip"]["prefix"] == "/usr"
    assert cmds["python"] == {"path": "/opt/venv/bin/python", "resolved": "/opt/venv/bin/python3", "prefix": "/opt/venv"}


def test_a_conda_env_reads_its_version_from_conda_meta_and_sees_the_user_site():
    facts = facts_for("python-user-site-shadow")
    assert facts["python.executable"] == "/opt/conda/bin/python"
    assert facts["python.version"] == "3.11.15"
    assert facts["python.user_site"] == "/home/user/.local/lib/python3.11/site-packages"
    (shadow,) = facts["python.user_site_shadows"]
    assert shadow["package"] == "torch"
    assert (shadow["user_version"], shadow["env_version"]) == ("2.13.0+cpu", "2.14.1")


def test_pythonnousersite_switches_the_user_site_off():
    facts = facts_for("python-user-site-shadow", "nousersite.env")
    assert facts["python.user_site"] is None
    assert facts["python.user_site_shadows"] == []


def test_a_missing_requested_interpreter_is_unknown_with_the_reason(tmp_path):
    from fwdoctor.model import Fact
    from fwdoctor.probes.base import Probe

    host = Host.at_root(tmp_path, {"PATH": "/nowhere"})
    seed = Probe("request", ("request.python",), lambda h, f: [Fact("request.python", "/no/such/python")])
    facts = collect(host, (seed, *py.PROBES))
    assert not facts.known("python.executable")
    assert "no such interpreter" in facts.why("python.executable")
    assert facts.failures == []


def test_a_pyenv_shim_is_followed_to_the_version_pyenv_would_run(tmp_path):
    root = tmp_path
    shims = root / "home/u/.pyenv/shims"
    shims.mkdir(parents=True)
    (shims / "python3").write_text((TORCH_DATA / "pip-shebang-pyenv-shim.txt").read_text())
    (shims / "python3").chmod(0o755)
    (root / "home/u/.pyenv/version").write_text("3.11.7\n")
    prefix = root / "home/u/.pyenv/versions/3.11.7"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin/python3").write_text("")
    (prefix / "include/python3.11").mkdir(parents=True)
    (prefix / "include/python3.11/patchlevel.h").write_text((TORCH_DATA / "patchlevel-3.11.7-excerpt.h").read_text())
    (prefix / "lib/python3.11/site-packages").mkdir(parents=True)
    host = Host.at_root(root, {"PATH": "/home/u/.pyenv/shims:/usr/bin"})
    facts = collect(host, py.PROBES)
    assert facts["python.executable"] == "/home/u/.pyenv/shims/python3"
    assert facts["python.version"] == "3.11.7"
    assert facts["python.site_packages"] == ["/home/u/.pyenv/versions/3.11.7/lib/python3.11/site-packages"]
    assert facts["python.path_commands"]["python3"]["prefix"] == "/home/u/.pyenv/versions/3.11.7"
    # PYENV_VERSION=system leaves the shim unresolved rather than guessing
    assert py.pyenv_target(Host.at_root(root, {"PYENV_VERSION": "system"}), "/home/u/.pyenv/shims/python3") is None


def test_an_environment_folder_given_as_python_means_its_interpreter():
    host = Host.at_root(ROOTS / "python-env-ok", {"PATH": "/usr/bin"})
    assert py.choose_interpreter(host, "/opt/venv") == ("/opt/venv/bin/python", "--python")
