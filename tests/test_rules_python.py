"""doctor/rules/python.py: valid and invalid examples, as Facts."""

from __future__ import annotations

from fwdoctor.model import Fact, Facts
from fwdoctor.rules import python as rules

VENV_CMDS = {
    "python": {"path": "/opt/venv/bin/python", "resolved": "/usr/bin/python3.11", "prefix": "/opt/venv"},
    "python3": {"path": "/opt/venv/bin/python3", "resolved": "/usr/bin/python3.11", "prefix": "/opt/venv"},
    "pip": {"path": "/opt/venv/bin/pip", "resolved": "/opt/venv/bin/pip", "prefix": "/opt/venv", "interpreter": "/opt/venv/bin/python3"},
}


def facts(cmds, venv=None, conda=None, **extra) -> Facts:
    items = [Fact("python.path_commands", cmds), Fact("python.virtual_env", venv), Fact("python.conda_prefix", conda)]
    items += [Fact(k.replace("__", "."), v) for k, v in extra.items()]
    return Facts(items)


def test_the_venv_first_on_path_is_fine():
    assert rules.python_env_mismatch.evaluate(facts(VENV_CMDS, venv="/opt/venv/"), None) == ([], None)


def test_no_active_environment_is_never_a_mismatch():
    assert rules.python_env_mismatch.evaluate(facts(VENV_CMDS), None) == ([], None)


def test_a_system_pip_ahead_of_the_venv_is_a_warning_naming_it():
    cmds = dict(VENV_CMDS, pip={"path": "/usr/bin/pip", "resolved": "/usr/bin/pip", "prefix": "/usr", "interpreter": "/usr/bin/python3"})
    (finding,), _ = rules.python_env_mismatch.evaluate(facts(cmds, venv="/opt/venv"), None)
    assert finding.severity.value == "warning"
    assert "pip is /usr/bin/pip (runs /usr/bin/python3)" in finding.message
    assert finding.fix.recipe == "env" and "source /opt/venv/bin/activate && hash -r" in finding.fix.commands


def test_a_conda_env_with_another_python_first_says_conda_activate():
    cmds = {"python": {"path": "/usr/bin/python", "resolved": "/usr/bin/python3.11", "prefix": "/usr"}, "python3": None, "pip": None}
    (finding,), _ = rules.python_env_mismatch.evaluate(facts(cmds, conda="/opt/conda/envs/train"), None)
    assert "$CONDA_PREFIX is /opt/conda/envs/train" in finding.message
    assert finding.fix.commands[0] == "conda activate /opt/conda/envs/train && hash -r"


def test_a_venv_on_top_of_conda_base_expects_the_venv():
    (finding,), _ = rules.python_env_mismatch.evaluate(facts(VENV_CMDS, venv="/opt/other", conda="/opt/venv"), None)
    assert "$VIRTUAL_ENV is /opt/other" in finding.message


def test_user_site_copies_of_torch_are_reported_with_both_versions():
    shadow = {"package": "torch", "user": "/home/u/.local/lib/python3.11/site-packages/torch-2.1.0.dist-info", "user_version": "2.1.0",
              "env": "/opt/conda/lib/python3.11/site-packages/torch-2.14.1.dist-info", "env_version": "2.14.1"}
    f = Facts([Fact("python.user_site_shadows", [shadow]), Fact("python.executable", "/opt/conda/bin/python")])
    (finding,), _ = rules.user_site_shadowing.evaluate(f, None)
    assert "torch 2.1.0 (user site) shadows torch 2.14.1" in finding.message
    assert finding.fix.commands[0].startswith("/opt/conda/bin/python -m pip uninstall -y torch")


def test_no_shadows_is_fine():
    assert rules.user_site_shadowing.evaluate(Facts([Fact("python.user_site_shadows", [])]), None) == ([], None)


def test_every_rule_documents_its_four_sections():
    for item in rules.RULES:
        for section in ("What it does", "Why is this bad?", "Example", "Fix"):
            assert section in item.doc, (item.id, section)
