"""Stack files: validation messages name the file and the field; the CLI exits 2."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from fwdoctor.recipes import stack as stack_mod

REPO = Path(__file__).resolve().parent.parent


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stack.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, field, words",
    [
        ("python: '3.12'\ntorch: '2.14.1'\n", "name", "missing"),
        ("name: Bad Name\npython: '3.12'\ntorch: '2.14.1'\n", "name", "lowercase"),
        ("name: s\npython: 3.1\ntorch: '2.14.1'\n", "python", "quote it"),
        ("name: s\npython: '3.12'\ntorch: '2.14.1+cu130'\n", "torch", "put the variant in 'cuda'"),
        ("name: s\npython: '3.12'\ntorch: banana\n", "torch", "not a version"),
        ("name: s\npython: '3.12'\ntorch: '2.14.1'\ncuda: cu130\n", "cuda", "major.minor"),
        ("name: s\npython: '3.12'\ntorch: '2.14.1'\ngpus: ['sm_86']\n", "gpus", "compute capability"),
        ("name: s\npython: '3.12'\ntorch: '2.14.1'\nrequirements: ['numpy>>1']\n", "requirements", "PEP 508"),
        ("name: s\npython: '3.12'\ntorch: '2.14.1'\nrequirements: ['torch==2.0.0']\n", "requirements", "set torch with 'torch'"),
        ("name: s\npython: '3.12'\ntorch: '2.14.1'\ncompanions: [triton]\n", "companions", "unknown companion"),
        ("name: s\npython: '3.12'\ntorch: '2.14.1'\nmin_driver: latest\n", "min_driver", "driver version"),
        ("name: s\npython: '3.12'\ntorch: '2.14.1'\nflavor: cudnn9-runtime\n", "flavor", "is not one of"),
        ("name: s\npython: '3.12'\ntorch: '2.14.1'\nrequirements: numpy\n", "requirements", "list of strings"),
    ],
)
def test_a_malformed_field_is_reported_with_the_file_and_field_name(tmp_path, text, field, words):
    path = write(tmp_path, text)
    with pytest.raises(stack_mod.StackError) as err:
        stack_mod.load(path)
    message = str(err.value)
    assert str(path) in message and f"field {field!r}" in message and words in message


def test_an_unknown_field_is_named_with_the_known_ones(tmp_path):
    path = write(tmp_path, "name: s\npython: '3.12'\ntorch: '2.14.1'\ncudnn: '9'\n")
    with pytest.raises(stack_mod.StackError, match=r"unknown field 'cudnn' \(known: name, python"):
        stack_mod.load(path)


def test_broken_yaml_is_reported_with_its_line(tmp_path):
    path = write(tmp_path, "name: s\npython: [3.12\n")
    with pytest.raises(stack_mod.StackError, match=r"stack.yaml: line \d+: not valid YAML"):
        stack_mod.load(path)


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path):
    with pytest.raises(stack_mod.StackError, match="expected a mapping"):
        stack_mod.load(write(tmp_path, "- a\n- b\n"))


def test_an_unreadable_stack_file_is_a_clear_message(tmp_path):
    with pytest.raises(stack_mod.StackError, match=r"missing\.yaml: No such file or directory"):
        stack_mod.load(tmp_path / "missing.yaml")


def test_the_cli_exits_2_naming_the_file_and_field_for_a_malformed_stack(tmp_path, cli):
    path = write(tmp_path, "name: s\npython: '3.12'\ntorch: nope\n")
    for args in (["stack", "resolve", str(path)], ["lock", str(path)], ["docker", "generate", str(path)]):
        result = cli(*args)
        assert result.exit_code == 2, args
        assert f"{path}: field 'torch': not a version" in result.output


def test_a_valid_stack_keeps_what_was_written(tmp_path):
    path = write(tmp_path, "name: s1\npython: '3.10'\ntorch: '2.10.0'\ncuda: '12.8'\nos: ubuntu22.04\ngpus: ['8.6']\nrequirements: ['numpy==2.2.6']\n")
    spec = stack_mod.load(path)
    assert (spec.name, spec.python, spec.torch, spec.cuda, spec.os, spec.gpus, spec.requirements) == (
        "s1", "3.10", "2.10.0", "12.8", "ubuntu22.04", ("8.6",), ("numpy==2.2.6",))


def test_the_tool_requirements_locked_into_images_are_fwdoctors_own_dependencies():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {Requirement(r).name.lower() for r in project["dependencies"]}
    assert {Requirement(r).name.lower() for r in stack_mod.TOOL_REQUIREMENTS} == declared


def test_every_committed_stack_file_is_valid():
    files = sorted((REPO / "stacks").glob("*.yaml"))
    assert {f.stem for f in files} >= {"cu130-py312", "cu128-py310", "cu126-pascal", "cpu-py311"}
    for f in files:
        assert stack_mod.load(f).name == f.stem
