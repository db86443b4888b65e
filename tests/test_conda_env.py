"""conda environments judged on their conda-meta records (issue 15, item 4): the conda probe's
parsers on real build strings and records (tests/data/conda/NOTE.md), whole `check --root`
runs on tests/roots/conda-envs (one env per trap, each with its near miss), and the rules'
rarer branches on facts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import ROOTS
from fwdoctor.engine import collect
from fwdoctor.host import Host, load_env_file
from fwdoctor.model import Fact, Facts
from fwdoctor.probes import PROBES
from fwdoctor.probes.conda import build_cuda, channel_name, glibcxx_tags, newest, record_name_parts
from fwdoctor.rules.conda import conda_cuda_libs_mismatch, conda_libstdcxx_too_old

pytestmark = pytest.mark.usefixtures("use_test_kb")

DATA = Path(__file__).parent / "data" / "conda"
ROOT = ROOTS / "conda-envs"
OURS = ("conda-cpu-pytorch-on-gpu-host", "conda-pip-torch-over-conda", "conda-libstdcxx-too-old", "conda-user-site-leak", "conda-cuda-libs-mismatch")


# ----------------------------------------------------------------------------- parsers
@pytest.mark.parametrize(
    "build, expected",
    [
        ("cuda118_py39hbf661d7_301", ("cuda", "11.8")),  # conda-forge, DRDMannTurb's lock
        ("cuda126_mkl_py312_h30b5a27_300", ("cuda", "12.6")),  # conda-forge, pixi list (scipy-2025 talk)
        ("cuda129_mkl_py313_h1e53aa0_304", ("cuda", "12.9")),  # conda-forge, carpentries episode
        ("py3.7_cuda10.1.243_cudnn7.6.3_0", ("cuda", "10.1")),  # the pytorch channel (pytorch/pytorch#28321)
        ("py3.6_cuda11.3_cudnn8.2.0_0", ("cuda", "11.3")),  # the pytorch channel (pytorch/pytorch#30664)
        ("py3.8_cpu_0", ("cpu", None)),  # the pytorch channel's CPU build (pytorch/pytorch#69202)
        ("py3.6_cpu_0", ("cpu", None)),
        ("h4f385c5_3", (None, None)),  # not a pytorch build string: says neither
    ],
)
def test_the_build_string_says_cuda_or_cpu(build, expected):
    assert build_cuda(build) == expected


def test_record_file_names_split_into_name_version_build():
    assert record_name_parts("cuda-version-12.9-h4f385c5_3.json") == ("cuda-version", "12.9", "h4f385c5_3")
    assert record_name_parts("pytorch-gpu-2.7.1-cuda129_mkl_h43a4b0b_304.json") == ("pytorch-gpu", "2.7.1", "cuda129_mkl_h43a4b0b_304")
    assert record_name_parts("history") is None and record_name_parts("x.json") is None


def test_channel_urls_read_as_channel_names():
    assert channel_name("https://conda.anaconda.org/conda-forge/") == "conda-forge"  # rattler/pixi
    assert channel_name("https://conda.anaconda.org/pytorch/linux-64") == "pytorch"  # conda
    assert channel_name("https://repo.anaconda.com/pkgs/main/linux-64") == "pkgs/main"
    assert channel_name(None) is None


@pytest.mark.skipif(not Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6").is_file(), reason="no Debian libstdc++ here")
def test_the_glibcxx_scan_reads_the_newest_version_a_real_libstdcxx_defines():
    data = Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6").read_bytes()
    tags = glibcxx_tags(data)
    # Debian 12's GCC 12 libstdc++.so.6.0.30 defines GLIBCXX_3.4 .. 3.4.30 (`strings | grep`).
    assert tags[0] == "3.4" and newest(tags) == "3.4.30" and "3.4.29" in tags


def test_real_pixi_records_fill_conda_packages(tmp_path):
    """Two conda-meta records exactly as pixi wrote them (NOTE.md) in a prefix."""
    meta = tmp_path / "opt" / "env" / "conda-meta"
    meta.mkdir(parents=True)
    for name in ("cuda-version-12.9-h4f385c5_3.json", "pytorch-gpu-2.7.1-cuda129_mkl_h43a4b0b_304.json"):
        shutil.copy(DATA / name, meta / name)
    facts = collect(Host.at_root(tmp_path, {"CONDA_PREFIX": "/opt/env", "PATH": "/usr/bin"}), PROBES)
    assert facts["conda.prefix"] == "/opt/env"
    assert facts["conda.packages"] == {
        "cuda-version": {"version": "12.9", "build": "h4f385c5_3", "channel": "conda-forge", "fn": "cuda-version-12.9-h4f385c5_3.conda"},
        "pytorch-gpu": {"version": "2.7.1", "build": "cuda129_mkl_h43a4b0b_304", "channel": "conda-forge", "fn": "pytorch-gpu-2.7.1-cuda129_mkl_h43a4b0b_304.conda"},
    }
    assert facts["conda.torch_build"] is None  # pytorch-gpu is the metapackage; no pytorch record
    # the cuda-version metapackage alone (no nvcc, no libcudart) is no toolkit
    assert facts["cuda.toolkits"] == []


def test_a_record_that_is_not_json_keeps_its_file_name_facts_and_is_reported(tmp_path):
    meta = tmp_path / "env" / "conda-meta"
    meta.mkdir(parents=True)
    (meta / "pytorch-2.4.0-cuda118_py39hbf661d7_301.json").write_text("{not json")
    facts = collect(Host.at_root(tmp_path, {"CONDA_PREFIX": "/env"}), PROBES)
    assert facts["conda.torch_build"]["cuda"] == "11.8"
    assert any("not a JSON record" in f.reason for f in facts.failures)


# ----------------------------------------------------------------------------- whole checks
CASES = [
    ("train.env", set()),
    ("train-ldpath.env", {("conda-cuda-libs-mismatch", "error")}),
    ("train-usersite.env", {("conda-user-site-leak", "warning")}),
    ("train-nousersite.env", set()),
    ("pipover.env", {("conda-pip-torch-over-conda", "error")}),
    ("cpu.env", {("conda-cpu-pytorch-on-gpu-host", "error")}),
]


def conda_findings(report: dict) -> set[tuple[str, str]]:
    return {(f["id"], f["severity"]) for f in report["findings"] if f["id"] in OURS}


@pytest.mark.parametrize("env, expected", CASES, ids=[e for e, _ in CASES])
def test_each_conda_env_gives_exactly_its_conda_findings(check_json, env, expected):
    code, report = check_json("--root", str(ROOT), "--env-file", str(ROOT / env))
    assert conda_findings(report) == expected
    assert not [f for f in report["findings"] if f["id"] == "probe-failed"]
    assert code == (1 if any(f["severity"] == "error" for f in report["findings"]) else 0)


def test_the_cpu_build_message_names_the_record_and_the_fix_asks_for_a_cuda_build(check_json):
    _, report = check_json("--root", str(ROOT), "--env-file", str(ROOT / "cpu.env"))
    (finding,) = [f for f in report["findings"] if f["id"] == "conda-cpu-pytorch-on-gpu-host"]
    assert finding["message"].startswith("conda's pytorch 1.9.0 in /opt/conda/envs/cpu is the CPU build py3.8_cpu_0 (pytorch), but this host has 1 NVIDIA GPU and driver 580.95.05")
    assert finding["fix"]["commands"][0] == "conda install -p /opt/conda/envs/cpu -c conda-forge 'pytorch=1.9.0=cuda*'"


def test_pip_over_conda_says_which_torch_imports(check_json):
    _, report = check_json("--root", str(ROOT), "--env-file", str(ROOT / "pipover.env"))
    (finding,) = [f for f in report["findings"] if f["id"] == "conda-pip-torch-over-conda"]
    assert "pip installed torch 2.4.1+cu121" in finding["message"]
    assert "over conda's pytorch 2.4.0 cuda118_py39hbf661d7_301" in finding["message"]
    assert "`import torch` loads torch 2.4.1+cu121 (CUDA 12.1) from the files pip wrote" in finding["message"]


def test_an_interpreter_in_a_conda_env_is_judged_without_conda_prefix(check_json):
    """`--python /opt/conda/envs/train/bin/python` and nothing activated: the env's records,
    its cuDNN/NCCL (kind "conda") and its pytorch build are still found."""
    env = ROOT / "python-train.env"
    code, report = check_json("--root", str(ROOT), "--env-file", str(env), "--python", "/opt/conda/envs/train/bin/python")
    facts = collect(Host.at_root(ROOT, load_env_file(str(env))), PROBES, seed=[Fact("request.python", "/opt/conda/envs/train/bin/python")])
    assert facts["conda.prefix"] == "/opt/conda/envs/train"
    assert facts["conda.torch_build"]["cuda"] == "11.8"
    assert {i["kind"]: i["package"] for i in facts["nccl.installs"]} == {"conda": "nccl 2.22.3.1"}
    assert conda_findings(report) == set()


def test_the_conda_record_fills_torch_cuda_when_version_py_is_missing(tmp_path, check_json):
    root = tmp_path / "root"
    shutil.copytree(ROOT, root, symlinks=True)
    (root / "opt/conda/envs/train/lib/python3.9/site-packages/torch/version.py").unlink()
    env = load_env_file(str(ROOT / "train.env"))
    facts = collect(Host.at_root(root, env), PROBES)
    assert facts["torch.cuda"] == "11.8"
    assert "pytorch-2.4.0-cuda118_py39hbf661d7_301.json" in facts.source("torch.cuda")
    # the torch/driver rules judge it: driver 580 runs CUDA 11.8, so no driver finding
    _, report = check_json("--root", str(root), "--env-file", str(ROOT / "train.env"))
    assert "driver-too-old-for-torch" not in {f["id"] for f in report["findings"]}
    assert "driver-too-old-for-torch" not in {n["rule"] for n in report["not_checked"]}


def test_every_conda_id_fires_somewhere_and_is_quiet_somewhere():
    fired = {i for _, expected in CASES for i, _ in expected} | {"conda-libstdcxx-too-old"}  # fired in tests/test_conda_env_e2e.py
    quiet = {i for i in OURS for _, expected in CASES if i not in {x for x, _ in expected}}
    assert fired == set(OURS) and quiet == set(OURS)


def test_the_committed_root_is_what_make_roots_writes(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("conda_make_roots", DATA / "make_roots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    module.main(tmp_path / "conda-envs")

    def tree(base: Path) -> dict[str, str]:
        out = {}
        for dirpath, dirnames, filenames in os.walk(base):
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                rel = str(path.relative_to(base))
                out[rel] = f"-> {os.readlink(path)}" if path.is_symlink() else ("dir" if path.is_dir() else path.read_bytes().decode(errors="replace"))
        return out

    assert tree(tmp_path / "conda-envs") == tree(ROOT)


# ----------------------------------------------------------------------------- rules on facts
def _facts(**values) -> Facts:
    return Facts([Fact(k.replace("__", "."), v, source="test") for k, v in values.items()])


def _torch_build(cuda: str = "11.8") -> dict:
    return {"version": "2.4.0", "build": "cuda118_py39hbf661d7_301", "channel": "conda-forge", "kind": "cuda", "cuda": cuda, "depends": [], "record": "/e/conda-meta/pytorch.json"}


def _conda_cudnn(cuda_major: int, version: str = "9.3.0") -> dict:
    return {"kind": "conda", "prefix": "/e", "header_version": version, "library_version": version, "library": f"/e/lib/libcudnn.so.{version}",
            "header": "/e/include/cudnn_version.h", "cuda_major": cuda_major, "package": f"cudnn {version}.75"}


def test_a_conda_cudnn_for_another_cuda_major_than_conda_pytorch_is_an_error(test_kb):
    facts = _facts(conda__prefix="/e", conda__torch_build=_torch_build("11.8"), cudnn__installs=[_conda_cudnn(12)], nccl__installs=[])
    findings, skipped = conda_cuda_libs_mismatch.evaluate(facts, test_kb)
    assert skipped is None and [(f.severity.value, f.message) for f in findings] == [
        ("error", "conda's cudnn 9.3.0.75 in /e/lib is built for CUDA 12, but conda's pytorch 2.4.0 (cuda118_py39hbf661d7_301) is built for CUDA 11.8 and loads it")]
    assert findings[0].fix.commands == ("conda install -p /e -c conda-forge pytorch cudnn cuda-version=11.8",)
    same = _facts(conda__prefix="/e", conda__torch_build=_torch_build("11.8"), cudnn__installs=[_conda_cudnn(11)], nccl__installs=[])
    assert conda_cuda_libs_mismatch.evaluate(same, test_kb) == ([], None)


def test_a_pip_cudnn_wheel_of_another_major_beside_conda_s_is_a_warning(test_kb):
    pip = {"kind": "pip", "prefix": "/e/lib/python3.11/site-packages/nvidia/cudnn", "header_version": "8.9.2", "library_version": "8.9.2",
           "library": "x", "header": "y", "cuda_major": 12, "package": "nvidia-cudnn-cu12 8.9.2.26"}
    facts = _facts(conda__prefix="/e", conda__torch_build=_torch_build("12.6"), cudnn__installs=[_conda_cudnn(12), pip], nccl__installs=[])
    findings, _ = conda_cuda_libs_mismatch.evaluate(facts, test_kb)
    assert [f.severity.value for f in findings] == ["warning"]
    assert findings[0].message.startswith("pip's nvidia-cudnn-cu12 8.9.2.26 (/e/lib/python3.11/site-packages/nvidia/cudnn) is cuDNN 8.x beside conda's cudnn 9.3.0.75")


def test_the_libstdcxx_rule_compares_glibcxx_versions_not_strings(test_kb):
    std = {"library": "/e/lib/libstdc++.so.6", "real": "/e/lib/libstdc++.so.6.0.29", "newest": "3.4.29", "tags": ["3.4", "3.4.29"], "package": "libstdcxx-ng 11.2.0"}
    needs = [{"dist": "ccwait 1.0", "file": "/e/site/ccwait/_ext.cpython-311-x86_64-linux-gnu.so", "needs": "3.4.30"},
             {"dist": "old 1.0", "file": "/e/site/old/_o.cpython-311-x86_64-linux-gnu.so", "needs": "3.4.9"}]
    findings, _ = conda_libstdcxx_too_old.evaluate(_facts(conda__prefix="/e", conda__libstdcxx_glibcxx=std, conda__wheel_glibcxx=needs), test_kb)
    assert [f.message for f in findings] == [
        "/e/site/ccwait/_ext.cpython-311-x86_64-linux-gnu.so from pip's ccwait 1.0 needs GLIBCXX_3.4.30, but /e/lib/libstdc++.so.6 (libstdcxx-ng 11.2.0) "
        "defines up to GLIBCXX_3.4.29: importing it fails with \"version `GLIBCXX_3.4.30' not found\""]
    assert findings[0].fix.commands == ("conda update -p /e -c conda-forge libstdcxx-ng libgcc-ng   # to a GCC release that defines GLIBCXX_3.4.30",)
    # 3.4.9 < 3.4.29 as versions (a string comparison would say otherwise): quiet without the 3.4.30 wheel
    assert conda_libstdcxx_too_old.evaluate(_facts(conda__libstdcxx_glibcxx=std, conda__wheel_glibcxx=needs[1:]), test_kb) == ([], None)


def test_conda_s_cudnn_and_nccl_are_judged_against_conda_s_torch_not_the_active_toolkit(tmp_path, check_json):
    """conda's pytorch loads its env's PREFIX/lib copies (RPATH), whatever nvcc is on PATH:
    a CUDA 13 toolkit beside the CUDA 11.8 env makes torch-toolkit-mismatch (extensions
    would be built for the wrong CUDA), not a cuDNN/NCCL mismatch for conda's own copies.
    The system cuDNN, which builds with that toolkit do use, is still judged against it."""
    import shutil

    root = tmp_path / "root"
    shutil.copytree(ROOTS / "conda-envs", root, symlinks=True)
    shutil.copytree(ROOTS / "toolkit-clean" / "usr" / "local", root / "usr" / "local", symlinks=True, dirs_exist_ok=True)
    env = tmp_path / "train-with-nvcc.env"
    env.write_text("CONDA_PREFIX=/opt/conda/envs/train\nPATH=/opt/conda/envs/train/bin:/usr/local/cuda/bin:/usr/bin:/bin\nHOME=/home/user\n")
    _, report = check_json("--root", str(root), "--env-file", str(env))
    mismatches = [(f["id"], f["evidence"]["install"]["kind"]) for f in report["findings"] if f["id"].endswith("-cuda-mismatch")]
    assert mismatches == [("cudnn-cuda-mismatch", "system")]
    assert "torch-toolkit-mismatch" in {f["id"] for f in report["findings"]}
