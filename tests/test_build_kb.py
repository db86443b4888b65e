"""doctor/kb/build.yaml and its loader: every row cited, version-dependent answers, and a
malformed file named precisely."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from fwdoctor.kb import KB, KB_DIR, KBError
from fwdoctor.kb.build import ROLES, NoBuildData


@pytest.fixture(scope="module")
def build():
    return KB().build


def test_every_row_cites_a_known_source(build):
    kb = KB()
    data = yaml.safe_load((KB_DIR / "build.yaml").read_text())
    known = {**kb.sources, **data["sources"]}
    rows = build.variables + build.build_commands + build.cmake_only_commands + build.pip_wheels
    assert rows and all(key in known for row in rows for key in row.source)


def test_every_variable_has_a_role_the_environment_builder_fills(build):
    assert {row.role for row in build.variables} <= set(ROLES)


def test_the_python_is_exported_in_all_three_spellings_for_every_version(build):
    for torch in ("2.0.1", "2.3.1", "2.4.0", "2.9.1"):
        names = {row.name for row in build.variables_for(torch)}
        assert {"PYTHON_EXECUTABLE", "Python_EXECUTABLE", "Python3_EXECUTABLE"} <= names


def test_setup_py_builds_old_torch_and_pip_builds_new_torch(build):
    assert build.build_command("2.8.0").argv[1] == "setup.py"
    assert build.build_command("2.9.0").argv[1:4] == ("-m", "pip", "wheel")
    assert build.cmake_only_command("2.0.0").argv[-1] == "--cmake-only"


def test_the_cmake_floor_follows_the_torch_version(build):
    assert build.cmake_min("2.1.2") == "3.18"
    assert build.cmake_min("2.10.0") == "3.27"
    with pytest.raises(NoBuildData, match="1.13"):
        build.cmake_min("1.13.1")


def test_pip_wheels_are_known_per_cuda_major(build):
    assert build.pip_wheel("nccl", 13).first == "2.27.7"
    assert build.pip_wheel("cudnn", 11).last == "9.10.2.21"
    assert build.pip_wheel("nccl", 10) is None


def _kb_with(tmp_path: Path, edit) -> KB:
    folder = tmp_path / "kb"
    shutil.copytree(KB_DIR, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    data = yaml.safe_load((folder / "build.yaml").read_text())
    edit(data)
    (folder / "build.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return KB(folder)


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda d: d["variables"][0].update(role="colour"), "variables[0].role"),
        (lambda d: d["variables"][3].pop("source"), "variables[3]"),
        (lambda d: d["build_commands"][0].update(torch="not a spec"), "build_commands[0].torch"),
        (lambda d: d["build_commands"][1].update(torch=">=2.8"), "build_commands"),
        (lambda d: d["cmake_only_commands"][0]["argv"].append("{workdir}"), "cmake_only_commands[0].argv"),
        (lambda d: d["resources"]["gib_per_job"].update(value=0), "resources.gib_per_job.value"),
        (lambda d: d["pip_wheels"][0].update(first="two"), "pip_wheels[0].first"),
        (lambda d: d["variables"].append(dict(d["variables"][0])), "duplicate row for USE_CUDA"),
    ],
)
def test_a_malformed_build_kb_names_the_file_and_the_row(tmp_path, edit, where):
    kb = _kb_with(tmp_path, edit)
    with pytest.raises(KBError) as info:
        kb.build
    assert "build.yaml" in str(info.value) and where in str(info.value)
