"""Live: judge this machine's torch 2.14.1 CUDA venv, statically and with --deep.

The CUDA 13.0 build imports without a GPU and still reports cuDNN, NCCL and its arch list
(see the Makefile's TEST_TORCH). Skipped where no such venv exists.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CANDIDATES = [Path(sys.prefix), REPO / ".venv", Path("/tmp/venv-torch")]


def _torch_venv() -> Path | None:
    for prefix in CANDIDATES:
        version = prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages" / "torch" / "version.py"
        if (prefix / "bin" / "python").exists() and version.is_file() and "cu130" in version.read_text():
            return prefix
    return None


VENV = _torch_venv()
pytestmark = pytest.mark.skipif(VENV is None, reason="no venv with torch 2.14.1+cu130 here (make test-venv builds one)")


def check(cli, *extra: str) -> dict:
    result = cli("check", "--python", str(VENV / "bin" / "python"), "--json", *extra)
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def deep_report():
    from click.testing import CliRunner

    from fwdoctor.cli import main

    result = CliRunner().invoke(main, ["check", "--python", str(VENV / "bin" / "python"), "--json", "--deep"], catch_exceptions=False)
    return json.loads(result.stdout)


def test_the_static_check_reads_the_real_wheel(cli):
    facts = check(cli)["facts"]
    assert facts["python.executable"]["value"] == str(VENV / "bin" / "python")
    assert facts["python.version"]["value"] == "%d.%d.%d" % sys.version_info[:3]
    assert facts["torch.version"]["value"] == "2.14.1+cu130"
    assert facts["torch.cuda"]["value"] == "13.0"
    assert facts["torch.requires"]["value"]["nvidia-nccl-cu13"] == "==2.30.7"
    assert "sm_90" in facts["torch.arch_list"]["value"]
    assert "torch.deep" not in facts


def test_deep_asks_torch_itself(deep_report):
    facts = deep_report["facts"]
    deep = facts["torch.deep"]["value"]
    assert deep["imported"] is True and deep["version"] == "2.14.1+cu130"
    assert 92400 <= deep["cudnn_version"] < 92500  # torch.backends.cudnn.version() of cuDNN 9.24
    assert deep["nccl_version"] == "2.30.7"
    assert "sm_90" in deep["arch_list"] and "sm_120" in deep["arch_list"]
    assert facts["torch.arch_list"]["source"] == "torch.cuda.get_arch_list() (--deep)"
    assert any(p.endswith("libcudnn.so.9") for p in deep["loaded_libs"])
    assert any(p.endswith("libnccl.so.2") for p in deep["loaded_libs"])


def test_deep_agrees_with_the_kb_row_for_this_wheel(deep_report):
    from fwdoctor.kb import KB
    from fwdoctor.probes.torch import nvcc_names

    row = KB.load().torch.variant_for("2.14.1+cu130")
    deep = deep_report["facts"]["torch.deep"]["value"]
    assert nvcc_names(row.arch_list) == deep["arch_list"]
    assert row.nccl == deep["nccl_version"]
    cudnn = [int(p) for p in row.cudnn.split(".")[:3]]
    assert deep["cudnn_version"] == cudnn[0] * 10000 + cudnn[1] * 100 + cudnn[2]


@pytest.mark.requires_no_gpu  # a no-GPU path: skipped where a GPU answers
def test_without_a_gpu_deep_reports_cuda_unavailable_and_no_devices(deep_report):
    deep = deep_report["facts"]["torch.deep"]["value"]
    if deep["device_count"]:
        pytest.skip("this host has a GPU")
    assert deep["is_available"] is False and deep["device_count"] == 0
    assert not {"torch-not-installed", "probe-failed"} & {f["id"] for f in deep_report["findings"]}


@pytest.mark.requires_gpu
def test_on_a_gpu_host_deep_sees_the_devices(deep_report):
    deep = deep_report["facts"]["torch.deep"]["value"]
    if not deep["device_count"]:
        pytest.skip("no GPU on this host")
    assert deep["is_available"] is True
    assert all(d.get("cc") for d in deep["devices"])
