"""doctor/probes/torch.py and torch_deep.py: parsers on recorded files, fuzzing, and the
probes on fixture roots."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from conftest import DATA, ROOTS
from fwdoctor.engine import collect
from fwdoctor.host import Host, load_env_file
from fwdoctor.probes import python as py
from fwdoctor.probes import torch as tp
from fwdoctor.probes import torch_deep as td

TORCH_DATA = DATA / "torch"


def facts_for(root: str, env: str = "fixture.env"):
    host = Host.at_root(ROOTS / root, load_env_file(str(ROOTS / root / env)))
    return collect(host, (*py.PROBES, *tp.PROBES, *td.PROBES), deep=True)


def test_version_py_of_the_cuda_wheel_gives_version_and_cuda():
    info = tp.parse_version_py((TORCH_DATA / "version-2.14.1+cu130.py").read_text())
    assert info["__version__"] == "2.14.1+cu130"
    assert info["cuda"] == "13.0"
    assert info["hip"] is None


def test_version_py_of_the_cpu_wheel_says_no_cuda():
    info = tp.parse_version_py((TORCH_DATA / "version-2.13.0+cpu.py").read_text())
    assert info["__version__"] == "2.13.0+cpu"
    assert "cuda" in info and info["cuda"] is None


def test_the_old_unannotated_version_py_form_is_read_too():
    # torch 1.x wrote `cuda = '11.7'` without the Optional[str] annotation.
    assert tp.parse_version_py("__version__ = '1.13.1+cu117'\ndebug = False\ncuda = '11.7'\n")["cuda"] == "11.7"


def test_metadata_pins_are_read_and_extras_left_out():
    version, requires = tp.parse_metadata((TORCH_DATA / "METADATA-torch-2.14.1").read_text())
    assert version == "2.14.1"
    assert requires["nvidia-cudnn-cu13"] == "==9.24.0.43"
    assert requires["nvidia-nccl-cu13"] == "==2.30.7"
    assert requires["cuda-toolkit"] == "==13.0.3"
    assert "optree" not in requires and "pyyaml" not in requires


def test_the_cpu_wheel_metadata_pins_no_nvidia_packages():
    version, requires = tp.parse_metadata((TORCH_DATA / "METADATA-torch-2.13.0+cpu").read_text())
    assert version == "2.13.0+cpu"
    assert not [name for name in requires if name.startswith(("nvidia", "cuda"))]


@given(st.text(max_size=500))
def test_the_parsers_never_raise_on_arbitrary_text(text):
    assert isinstance(tp.parse_version_py(text), dict)
    version, requires = tp.parse_metadata(text)
    assert version is None or isinstance(version, str)
    assert isinstance(requires, dict)
    data, why = td.parse_child_output(text)
    assert (data is None) == bool(why)


@pytest.mark.usefixtures("use_test_kb")
def test_a_static_probe_of_the_cuda_venv_reports_the_wheel_and_the_kb_arch_list():
    facts = facts_for("torch-driver-ok")
    assert facts["torch.installed"] is True
    assert facts["torch.version"] == "2.14.1+cu130"
    assert facts["torch.cuda"] == "13.0"
    assert facts["torch.location"] == "/opt/venv/lib/python3.11/site-packages/torch"
    assert facts["torch.arch_list"] == ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
    assert "KB torch.yaml" in facts.source("torch.arch_list")
    assert not facts.known("torch.deep")  # nothing runs inside a root folder


def test_the_cpu_build_has_no_cuda_and_an_empty_arch_list():
    facts = facts_for("torch-cpu-on-gpu-host")
    assert facts["torch.cuda"] is None
    assert facts["torch.arch_list"] == []


def test_no_torch_is_a_plain_false_not_an_unknown():
    facts = facts_for("torch-not-installed")
    assert facts["torch.installed"] is False
    assert facts["torch.version"] is None


def test_a_dist_info_without_its_package_is_diagnosed_not_crashed():
    facts = facts_for("torch-half-installed")
    assert facts["torch.installed"] is True
    assert facts["torch.version"] == "2.14.1"  # from METADATA
    assert not facts.known("torch.cuda")
    (failure,) = [f for f in facts.failures if f.probe == "torch"]
    assert "half-installed" in failure.reason and "torch-2.14.1.dist-info" in failure.reason


def test_the_user_site_copy_is_the_one_import_would_load():
    facts = facts_for("python-user-site-shadow")
    assert facts["torch.version"] == "2.13.0+cpu"
    assert facts["torch.location"] == "/home/user/.local/lib/python3.11/site-packages/torch"


def test_an_unofficial_build_has_an_unknown_arch_list_that_says_to_use_deep():
    fact = tp.arch_list_fact("2.5.0a0+git1234abc", "12.4")
    assert not fact.is_known and "--deep" in fact.why


def test_the_recorded_child_output_of_the_cuda_wheel_becomes_torch_deep():
    data, why = td.parse_child_output((TORCH_DATA / "child-2.14.1+cu130-no-gpu.txt").read_text())
    assert why == ""
    deep = td.to_fact_value(data)
    assert deep["imported"] and deep["is_available"] is False and deep["device_count"] == 0
    assert deep["cudnn_version"] == 92400 and deep["nccl_version"] == "2.30.7"
    assert "sm_90" in deep["arch_list"]
    assert any(p.endswith("/nvidia/cudnn/lib/libcudnn.so.9") for p in deep["loaded_libs"])


def test_the_recorded_child_output_without_torch_carries_the_import_error():
    data, _ = td.parse_child_output((TORCH_DATA / "child-no-torch.txt").read_text())
    deep = td.to_fact_value(data)
    assert deep["imported"] is False
    assert deep["error"] == "ModuleNotFoundError: No module named 'torch'"


def test_a_crashed_or_garbled_child_is_a_clear_reason():
    assert td.parse_child_output("Segmentation fault\n") == (None, "the child printed no answer (crashed?)")
    assert td.parse_child_output("FWDOCTOR_JSON:{not json")[0] is None
    assert td.parse_child_output('FWDOCTOR_JSON:{"fatal": "MemoryError"}') == (None, "the child failed: MemoryError")


def test_a_hung_interpreter_is_killed_and_reported(tmp_path, monkeypatch):
    from fwdoctor import deepstart
    from fwdoctor.model import Fact
    from fwdoctor.probes.base import Probe

    hang = tmp_path / "python"
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    monkeypatch.setattr(deepstart, "MIN_TIMEOUT_S", 0.5)  # the child's floor lives where it is started
    host = Host.live_host({"PATH": "/usr/bin:/bin"}, command_timeout=0.5)
    seed = Probe("seed", (), lambda h, f: [Fact("python.executable", str(hang)), Fact("torch.installed", True)])
    facts = collect(host, (seed, *td.PROBES), deep=True)
    (failure,) = facts.failures
    assert "no answer within the timeout" in failure.reason
    assert not facts.known("torch.deep")
