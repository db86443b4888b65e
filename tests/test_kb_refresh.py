"""tools/kb_refresh.py (`make kb-refresh`) against a stand-in of pypi.org's JSON API on
127.0.0.1 (tests/pypi_json_standin.py): new releases are found by comparing with the KB,
their METADATA is read from the PEP 658 file or, without one, from the wheel by HTTP range,
TensorFlow's arch list from build_info.py, and a cited wheel whose sha256 changed is listed
as a moved source. The same tool run against pypi.org is in the issue's closing note."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from fwdoctor.kb import KB_DIR
from tests.pypi_json_standin import serve, wheel

REPO = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("kb_refresh", REPO / "tools" / "kb_refresh.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["kb_refresh"] = module
    spec.loader.exec_module(module)
    return module


TORCH_META = """Metadata-Version: 2.1
Name: torch
Version: 2.99.0
Requires-Python: >=3.11
Requires-Dist: nvidia-cudnn-cu13==9.99.0.1; platform_system == "Linux"
Requires-Dist: nvidia-nccl-cu13==2.99.1; platform_system == "Linux"
Requires-Dist: filelock
"""
TF_META = """Metadata-Version: 2.1
Name: tensorflow
Version: 2.99.0
Requires-Python: >=3.10
"""
TF_BUILD_INFO = ("build_info = collections.OrderedDict([('cuda_compute_capabilities', ['sm_75', 'sm_90', 'compute_120']), "
                 "('cuda_version', '12.9.0'), ('is_cuda_build', True)])\n")
# A wheel the KB cites (frameworks.yaml S-FW-TENSORFLOW-2-20-0), served with other bytes.
CITED = "tensorflow-2.20.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"


@pytest.fixture()
def index(tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    wheel(files, "torch-2.99.0-cp312-cp312-manylinux_2_28_x86_64.whl", TORCH_META)
    wheel(files, "torch-2.99.0-cp313-cp313-manylinux_2_28_x86_64.whl", TORCH_META)
    wheel(files, "torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl", TORCH_META.replace("2.99.0", "2.15.0"))
    # No PEP 658 file: the METADATA and build_info.py come from the wheel by range.
    wheel(files, "tensorflow-2.99.0-cp312-cp312-manylinux_2_27_x86_64.whl", TF_META,
          {"tensorflow/python/platform/build_info.py": TF_BUILD_INFO, "tensorflow/big.bin": "x" * 300_000}, pep658=False)
    wheel(files, CITED, TF_META.replace("2.99.0", "2.20.0"))
    releases = {
        "torch": {"2.15.0": ["torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl"],
                  "2.99.0": ["torch-2.99.0-cp312-cp312-manylinux_2_28_x86_64.whl", "torch-2.99.0-cp313-cp313-manylinux_2_28_x86_64.whl"]},
        "tensorflow": {"2.20.0": [CITED], "2.99.0": ["tensorflow-2.99.0-cp312-cp312-manylinux_2_27_x86_64.whl"]},
    }
    with serve(files, releases) as url:
        yield url


def test_a_new_torch_is_proposed_with_its_pins_pythons_and_source(index):
    tool = _tool()
    report = tool.refresh(tool.Index(index), KB_DIR, ["torch"], check_sources=False)
    [row] = [r for r in report["new_releases"] if r["package"] == "torch"]
    assert row["version"] == "2.99.0" and row["pythons"] == ["3.12", "3.13"]
    assert row["requires_python"] == ">=3.11"
    assert row["requires"]['nvidia-cudnn-cu13 ; platform_system == "Linux"'] == "==9.99.0.1"
    assert row["source"].startswith(f"{index}/files/torch-2.99.0-cp312-cp312-manylinux_2_28_x86_64.whl.metadata (PEP 658; sha256 ")
    assert row["arch_list"] is None and "TODO" in row["arch_note"]
    assert report["newest_known"]["torch"] == "2.15.0"


def test_without_a_pep658_file_the_wheel_is_read_by_range_not_whole(index):
    tool = _tool()
    idx = tool.Index(index)
    report = tool.refresh(idx, KB_DIR, ["tensorflow"], check_sources=False)
    [row] = report["new_releases"]
    assert row["version"] == "2.99.0" and "by HTTP range" in row["source"]
    assert row["arch_list"] == ["sm_75", "sm_90", "compute_120"]
    assert "tensorflow/python/platform/build_info.py by HTTP range" in row["arch_source"]


def test_a_cited_wheel_with_another_sha256_is_a_moved_source(index):
    tool = _tool()
    moved, checked = tool.moved_sources(tool.Index(index), KB_DIR)
    mine = [m for m in moved if m["file"] == CITED]
    assert checked > 10 and {m["source"] for m in mine} == {"S-FW-TENSORFLOW-2-20-0", "S-FW-TENSORFLOW-2-20-0-BUILDINFO"}
    assert all(m["why"].startswith("sha256 is now ") for m in mine)


def test_the_command_writes_a_yaml_proposal_and_prints_what_changed(index, tmp_path, capsys):
    tool = _tool()
    out = tmp_path / "proposal.yaml"
    assert tool.main(["--index", index, "--out", str(out), "--package", "torch", "--package", "tensorflow", "--no-sources"]) == 0
    printed = capsys.readouterr().out
    assert "torch                KB up to 2.15.0       new: 2.99.0" in printed
    assert "+ tensorflow 2.99.0" in printed and "arch ['sm_75', 'sm_90', 'compute_120']" in printed
    data = yaml.safe_load(out.read_text())
    assert {r["package"] for r in data["new_releases"]} == {"torch", "tensorflow"}


def test_a_package_the_index_lacks_is_listed_not_fatal(index):
    tool = _tool()
    report = tool.refresh(tool.Index(index), KB_DIR, ["jax"], check_sources=False)
    assert report["unknown_packages"] == ["jax"] and report["new_releases"] == []
