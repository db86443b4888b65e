"""End to end: the plan `fwdoctor build torch` makes really selects the chosen nvcc, NCCL,
cuDNN and Python. A PyTorch build takes hours, so the plan builds tests/cmake_probe, a small
CMake project that detects CUDA, NCCL, cuDNN and Python the way PyTorch does, with the real
nvcc of this machine and the real NCCL/cuDNN of the nvidia-*-cu13 wheels installed beside
torch. The build writes down what it used (build/fwdoctor-probe.json); we assert on that.

Decoys first on PATH (an `nvcc` and a `python3` that fail) prove nothing is found by name.
Paths contain spaces on purpose.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from fwdoctor.kb import KB
from fwdoctor.libraries import CUDNN, NCCL
from fwdoctor.recipes import torch_source as ts

PROBE = Path(__file__).resolve().parent / "cmake_probe"
NVCC = "/usr/local/cuda-13.0/bin/nvcc"
SITE = Path(sysconfig.get_paths()["purelib"])
NCCL_DIR = SITE / "nvidia" / "nccl"
CUDNN_DIR = SITE / "nvidia" / "cudnn"


def _setuptools_builds_wheels() -> bool:
    try:
        import setuptools
        from packaging.version import Version

        return Version(setuptools.__version__) >= Version("70.1")  # bdist_wheel built in
    except Exception:
        return False


pytestmark = [
    pytest.mark.usefixtures("roomy_host"),
    pytest.mark.slow,
    pytest.mark.skipif(not os.access(NVCC, os.X_OK), reason=f"needs the CUDA 13.0 nvcc at {NVCC}"),
    pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake on PATH"),
    pytest.mark.skipif(not (NCCL_DIR / "lib" / "libnccl.so.2").exists(), reason=f"needs the nvidia-nccl-cu13 wheel in {SITE}"),
    pytest.mark.skipif(not (CUDNN_DIR / "lib" / "libcudnn.so.9").exists(), reason=f"needs the nvidia-cudnn-cu13 wheel in {SITE}"),
    pytest.mark.skipif(not _setuptools_builds_wheels(), reason="needs setuptools >= 70.1 in the test interpreter"),
]


@pytest.fixture(scope="module")
def kb():
    return KB()


@pytest.fixture
def world(tmp_path):
    """A source tree, a target venv and a PATH with decoys, all under a path with spaces."""
    root = tmp_path / "probe world"
    src = root / "src tree"
    shutil.copytree(PROBE, src, ignore=shutil.ignore_patterns("build", "__pycache__"))
    venv = root / "target venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    # The target venv sees this interpreter's packages (pip, setuptools) through a .pth,
    # so no download is needed; its own sys.executable stays the venv's.
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "_fwdoctor_test_base.pth").write_text(str(SITE) + "\n")
    decoys = root / "decoy bin"
    decoys.mkdir()
    for name in ("nvcc", "python3", "python"):
        tool = decoys / name
        tool.write_text("#!/bin/sh\necho \"decoy $0 was run\" >&2\nexit 97\n")
        tool.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{decoys}:{env.get('PATH', '/usr/bin:/bin')}"
    env.pop("CUDAHOSTCXX", None)
    return {"root": root, "src": src, "python": str(venv / "bin" / "python"), "env": env, "work": root / "work dir"}


def _plan(world, kb, version: str, arch: str = "8.0", cmake_only: bool = False):
    """(pre-flight report, plan) as `fwdoctor build torch` makes them, in the world's environment."""
    opts = ts.Options(version=version, cuda=NVCC, nccl=str(NCCL_DIR), cudnn=str(CUDNN_DIR), arch=arch,
                      python=world["python"], source=str(world["src"]), workdir=str(world["work"]), jobs="2", cmake_only=cmake_only)
    return ts.make_plan(ts.gather(opts, env=world["env"]), kb)


def _errors(report) -> list[str]:
    return [f.message for f in report.findings if f.severity.value == "error"]


def _record(world) -> dict:
    return json.loads((world["src"] / "build" / "fwdoctor-probe.json").read_text())


def _assert_chosen_libraries_were_used(world, record: dict) -> None:
    nccl_h = (NCCL_DIR / "include" / "nccl.h").read_text()
    cudnn_h = (CUDNN_DIR / "include" / "cudnn_version.h").read_text()
    assert record["cuda_compiler"] == NVCC
    assert record["cuda_compiler_version"].startswith("13.0")
    assert record["toolkit_version"].startswith("13.0")
    assert os.path.realpath(record["nccl_library"]) == os.path.realpath(NCCL_DIR / "lib" / "libnccl.so.2")
    assert record["nccl_include"] == f"{world['work']}/prefix/nccl/include"
    assert record["nccl_version"] == NCCL.parse_header(nccl_h)
    assert os.path.realpath(record["cudnn"]["library"]) == os.path.realpath(CUDNN_DIR / "lib" / "libcudnn.so.9")
    assert record["cudnn"]["version"] == CUDNN.parse_header(cudnn_h)
    assert record["python"] == world["python"]


def test_the_setup_py_era_plan_builds_with_the_chosen_nvcc_nccl_cudnn_and_python(world, kb):
    report, bp = _plan(world, kb, "2.7.1", arch="8.0;9.0+PTX")
    assert not _errors(report), _errors(report)
    assert bp.build.argv[1:3] == ("setup.py", "bdist_wheel")  # torch < 2.9 builds through setup.py
    assert not any(step.argv[:2] == ("git", "clone") for step in bp.prepare)  # --source: no clone
    lines: list[str] = []
    result = ts.execute(dataclasses.replace(bp, verify=()), progress=lines.append, base_env=world["env"])
    assert result.ok, result.message
    record = _record(world)
    _assert_chosen_libraries_were_used(world, record)
    assert record["cuda_architectures"] == "80-real;90-real;90-virtual"
    assert any(line.endswith("build: 2/2 (100.0%)") for line in lines), lines
    log = Path(bp.layout.log).read_text()
    assert "[2/2] Linking CUDA executable fwdoctor_probe" in log
    assert "was run" not in log  # no decoy nvcc or python was found by name on PATH
    assert (world["work"] / "verify_build.py").exists()  # the plan's file was written by the apply layer


def test_the_pip_era_plan_builds_a_wheel_with_the_chosen_libraries(world, kb):
    report, bp = _plan(world, kb, "2.9.1")
    assert not _errors(report), _errors(report)
    assert bp.build.argv[1:4] == ("-m", "pip", "wheel")
    # cmake 3.25 here is older than torch 2.9's 3.27, so the plan pip-installs cmake: that step
    # needs the network; the probe itself only needs 3.18, so it is left out here.
    prepare = tuple(s for s in bp.prepare if "-r" not in s.argv)
    result = ts.execute(dataclasses.replace(bp, prepare=prepare, verify=()), base_env=world["env"])
    assert result.ok, result.message
    _assert_chosen_libraries_were_used(world, _record(world))
    wheels = list(Path(bp.layout.dist).glob("fwdoctor_cmake_probe-*.whl"))
    assert len(wheels) == 1


def test_cmake_only_configures_without_compiling(world, kb):
    report, bp = _plan(world, kb, "2.9.1", cmake_only=True)
    assert not _errors(report)
    assert bp.build.argv[1:] == ("setup.py", "build", "--cmake-only")
    prepare = tuple(s for s in bp.prepare if "-r" not in s.argv)
    result = ts.execute(dataclasses.replace(bp, prepare=prepare), base_env=world["env"])
    assert result.ok, result.message
    assert (world["src"] / "build" / "CMakeCache.txt").exists()
    assert not (world["src"] / "build" / "fwdoctor_probe").exists()
    assert _record(world)["python"] == world["python"]


def test_a_preflight_failure_stops_the_build_before_cmake_runs(world, cli, monkeypatch):
    for key, value in world["env"].items():
        monkeypatch.setenv(key, value)
    result = cli("build", "torch", "--version", "2.7.1", "--cuda", NVCC, "--nccl", str(NCCL_DIR), "--cudnn", "none",
                 "--arch", "5.0;8.0", "--python", world["python"], "--source", str(world["src"]),
                 "--workdir", str(world["work"]), "--apply")
    assert result.exit_code == 1
    assert "gpu-arch-unsupported-by-toolkit" in result.output
    assert "compute_50" in result.output
    assert not (world["src"] / "build").exists()
    assert not world["work"].exists()


def test_the_dry_run_script_itself_builds_the_same_way(world, kb):
    """What --dry-run prints is a script a user may run by hand: run it with sh."""
    report, bp = _plan(world, kb, "2.7.1")
    assert not _errors(report)
    script = world["root"] / "build torch.sh"
    script.write_text(dataclasses.replace(bp, verify=()).to_plan().to_shell())
    res = subprocess.run(["sh", str(script)], env=world["env"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    _assert_chosen_libraries_were_used(world, _record(world))
    assert "was run" not in res.stdout + res.stderr
