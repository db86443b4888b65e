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
    assert row["arch_list"] is None and "--fatbin" in row["arch_note"]
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


# ----------------------------------------------------------------------------- fatbins
FATBIN_LIB = REPO / "tests" / "data" / "fatbin" / "libk.so"


def test_the_fatbin_reader_lists_cubins_and_ptx_of_a_real_library():
    tool = _tool()
    section = tool.elf_section(FATBIN_LIB.read_bytes(), ".nv_fatbin")
    assert tool.fatbin_targets(section) == ["sm_90", "sm_100", "compute_120"]
    assert tool.elf_section(b"not an elf", ".nv_fatbin") is None


def test_with_fatbin_a_plugin_s_arch_list_is_read_from_its_library(tmp_path):
    tool = _tool()
    files = tmp_path / "files"
    files.mkdir()
    name = "jax_cuda13_plugin-0.99.0-cp312-cp312-manylinux_2_27_x86_64.whl"
    path = wheel(files, name, "Metadata-Version: 2.1\nName: jax-cuda13-plugin\nVersion: 0.99.0\nRequires-Python: >=3.11\n")
    import zipfile
    with zipfile.ZipFile(path, "a") as archive:
        archive.write(FATBIN_LIB, "jax_cuda13_plugin/libk.so")
    with serve(files, {"jax-cuda13-plugin": {"0.99.0": [name]}}) as url:
        without = tool.refresh(tool.Index(url), KB_DIR, ["jax-cuda13-plugin"], check_sources=False)
        with_ = tool.refresh(tool.Index(url), KB_DIR, ["jax-cuda13-plugin"], check_sources=False, fatbin=True)
    assert without["new_releases"][0]["arch_list"] is None and "--fatbin" in without["new_releases"][0]["arch_note"]
    row = with_["new_releases"][0]
    assert row["arch_list"] == ["sm_90", "sm_100", "compute_120"]
    assert "jax_cuda13_plugin/libk.so (sha256 " in row["arch_source"]


LIBTORCH_CUDA = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages" / "torch" / "lib" / "libtorch_cuda.so"


@pytest.mark.slow  # reads the 500 MB library
@pytest.mark.skipif(not LIBTORCH_CUDA.is_file(), reason="no CUDA torch in this venv (make test-venv installs torch 2.14.1+cu130)")
def test_the_fatbin_of_the_test_venv_s_torch_agrees_with_the_kb_row():
    """Two sources for one row: the wheel's own kernels and torch.yaml (S-WHEEL2141)."""
    import torch

    from fwdoctor.kb import KB

    tool = _tool()
    section = tool.elf_section(LIBTORCH_CUDA.read_bytes(), ".nv_fatbin")
    version, variant = torch.__version__.split("+")
    row = next(v for v in KB(KB_DIR).torch.variants() if v.torch == version and v.variant == variant)
    kb = [f"sm_{a.replace('.', '').removesuffix('+PTX')}" for a in row.arch_list]
    kb += [f"compute_{a.replace('.', '').removesuffix('+PTX')}" for a in row.arch_list if a.endswith("+PTX")]
    assert sorted(tool.fatbin_targets(section)) == sorted(kb)
