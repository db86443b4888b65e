"""Golden build scripts: `Plan.to_shell()` of `fwdoctor build torch` for several torch
versions and option sets, from hand-built build facts (no host probing: tests/build_facts.py)
through the pre-flight and the plan, compared byte for byte with tests/golden/build/*.sh. Regenerate: FWDOCTOR_UPDATE_GOLDEN=1 pytest this file.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from build_facts import GIB, build_facts, gxx, kind_lib, path_lib, pip_lib, python_env, tool, toolkit
from fwdoctor.model import Facts
from fwdoctor.recipes import torch_source as ts

GOLDEN = Path(__file__).resolve().parent / "golden" / "build"
UPDATE = os.environ.get("FWDOCTOR_UPDATE_GOLDEN") == "1"

# A roomy build machine: 200 GiB / 5 GiB per job = 40 jobs < 64 cores.
HOST = {
    "build.cores": 64,
    "build.mem_available_bytes": 200 * GIB,
    "build.disk_free": {"path": "/srv", "checked_at": "/srv", "bytes": 500 * GIB},
    "build.host_cxx": gxx("/usr/bin/g++", "12.2.0"),
    "build.gxx_installed": [],
    "build.cmake": tool("/usr/bin/cmake", "3.28.3"),
    "build.ninja": tool("/usr/bin/ninja", "1.11.1"),
    "build.ccache": "/usr/bin/ccache",
    "build.git": "/usr/bin/git",
    "build.path": "/usr/local/bin:/usr/bin:/bin",
}


def request(torch: str, tk: dict, nccl: dict, cudnn: dict, python: str, arch: str, workdir: str, arch_from: str = "--arch",
            source: str | None = None, jobs: int | None = None, ccache: bool = False, debug: bool = False, cmake_only: bool = False) -> dict:
    """The request facts (`request.build.*`) and what the probes resolved them to."""
    return {
        "request.build.torch": torch, "request.build.cuda": tk["release"], "request.build.arch": arch, "request.build.python": python,
        "request.build.workdir": workdir, "request.build.source": source, "request.build.jobs": jobs, "request.build.ccache": ccache,
        "request.build.debug": debug, "request.build.cmake_only": cmake_only,
        "build.torch": torch, "build.toolkit": tk, "build.nccl": nccl, "build.cudnn": cudnn, "build.python": python_env(python),
        "build.arch": {"list": arch, "from": arch_from}, "build.source": {"path": source, "version_txt": torch} if source else None,
    }


def case_pip_libs_with_spaces() -> Facts:
    """2.9.1 + CUDA 12.8, NCCL and cuDNN as pip wheels, a clone, paths with spaces."""
    return build_facts({**HOST, **request("2.9.1", toolkit("12.8", gcc_max=13), pip_lib("nccl", "2.27.5", 12), pip_lib("cudnn", "9.10.2.21", 12),
                                          "/home/ml/venvs/torch build/bin/python", "8.0;9.0+PTX", "/srv/build area/torch 2.9.1")})


def case_bundled_nccl_cudnn_path_debug_ccache() -> Facts:
    """2.3.1 + CUDA 12.1: bundled NCCL, cuDNN from a tarball folder, DEBUG, ccache, --source."""
    cudnn = path_lib("cudnn", "8.9.7", "/opt/cudnn-8.9.7/include", "/opt/cudnn-8.9.7/lib/libcudnn.so.8", 12)
    return build_facts({**HOST, **request("2.3.1", toolkit("12.1", gcc_max=12), kind_lib("nccl", "bundled"), cudnn, "/opt/envs/py310/bin/python",
                                          "7.0;8.0", "/scratch/fwd/torch-2.3.1", source="/home/ml/src/pytorch", jobs=16, ccache=True, debug=True)})


def case_system_nccl_no_cudnn_host_compiler_swap() -> Facts:
    """2.7.1 + CUDA 12.6 on a host whose g++ is 14 (nvcc 12.6 takes <= 13): g++-13 becomes
    CUDAHOSTCXX. System NCCL from Debian packages, cuDNN off, an arch-specific target."""
    nccl = path_lib("nccl", "2.26.2", "/usr/include", "/usr/lib/x86_64-linux-gnu/libnccl.so.2", 12, "NCCL version string")
    host = {**HOST, "build.cores": 8, "build.mem_available_bytes": 24 * GIB, "build.disk_free": {"path": "/home", "checked_at": "/home", "bytes": 100 * GIB},
            "build.host_cxx": gxx("/usr/bin/g++", "14.2.0"), "build.gxx_installed": [gxx("/usr/bin/g++-13", "13.3.0"), gxx("/usr/bin/g++-12", "12.4.0")],
            "build.cmake": tool("/usr/bin/cmake", "3.25.1"), "build.ninja": None, "build.ccache": None, "build.path": "/usr/bin:/bin"}
    return build_facts({**host, **request("2.7.1", toolkit("12.6", gcc_max=13), nccl, kind_lib("cudnn", "none"), "/home/ml/.venv/bin/python",
                                          "9.0a", "/home/ml/fwd/torch-2.7.1")})


def case_cmake_only_source_tree() -> Facts:
    """--cmake-only on an existing 2.9.1 tree with CUDA 13.0 and a pip NCCL."""
    return build_facts({**HOST, **request("2.9.1", toolkit("13.0", root="/usr/local/cuda-13.0", gcc_max=15), pip_lib("nccl", "2.28.3", 13),
                                          kind_lib("cudnn", "bundled"), "/home/ml/.venv/bin/python", "10.0;12.0+PTX", "/home/ml/fwd/torch-2.9.1-cu130",
                                          arch_from="host GPUs (10.0, 12.0)", source="/home/ml/src/pytorch", cmake_only=True)})


CASES = {
    "torch-2.9.1-cu128-pip-libs-spaces": case_pip_libs_with_spaces,
    "torch-2.3.1-cu121-bundled-nccl-cudnn-path-debug-ccache": case_bundled_nccl_cudnn_path_debug_ccache,
    "torch-2.7.1-cu126-system-nccl-no-cudnn-cudahostcxx": case_system_nccl_no_cudnn_host_compiler_swap,
    "torch-2.9.1-cu130-cmake-only": case_cmake_only_source_tree,
}


@pytest.fixture
def kb(test_kb):
    """The frozen test KB: a correct update of the shipped build.yaml leaves these alone."""
    return test_kb


def render(name: str, kb) -> str:
    report, bp = ts.make_plan(CASES[name](), kb)
    assert not report.has_errors, [f.message for f in report.findings]
    return bp.to_plan().to_shell()


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_build_script_matches_its_golden_file(name, kb):
    path = GOLDEN / f"{name}.sh"
    text = render(name, kb)
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"no golden file {path}; run with FWDOCTOR_UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_golden_script_is_valid_posix_shell(name):
    res = subprocess.run(["sh", "-n", str(GOLDEN / f"{name}.sh")], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr


def _exports(script: str) -> dict[str, str]:
    env = {}
    for line in script.splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export "):].partition("=")
            env[key] = shlex.split(value)[0] if value else ""
    return env


def test_paths_with_spaces_come_back_intact_through_the_shell_quoting(kb):
    env = _exports(render("torch-2.9.1-cu128-pip-libs-spaces", kb))
    assert env["NCCL_INCLUDE_DIR"] == "/srv/build area/torch 2.9.1/prefix/nccl/include"
    assert env["Python_EXECUTABLE"] == "/home/ml/venvs/torch build/bin/python"
    assert env["PATH"].startswith("/home/ml/venvs/torch build/bin:/usr/local/cuda-12.8/bin:")


def test_pinned_nccl_and_cudnn_point_cmake_at_the_shim_prefix(kb):
    env = _exports(render("torch-2.9.1-cu128-pip-libs-spaces", kb))
    assert env["USE_SYSTEM_NCCL"] == "1"
    assert env["NCCL_LIB_DIR"].endswith("/prefix/nccl/lib")
    assert env["CUDNN_LIBRARY"].endswith("/prefix/cudnn/lib")
    assert env["MAX_JOBS"] == "40"
    assert env["PYTORCH_BUILD_VERSION"] == "2.9.1+cu128"
    assert "CUDAHOSTCXX" not in env  # g++ 12 is fine for nvcc 12.8


def test_bundled_nccl_builds_the_submodule_and_sets_no_nccl_paths(kb):
    env = _exports(render("torch-2.3.1-cu121-bundled-nccl-cudnn-path-debug-ccache", kb))
    assert env["USE_SYSTEM_NCCL"] == "0"
    assert not any(key.startswith("NCCL_") for key in env)
    assert env["DEBUG"] == "1"
    assert env["CMAKE_CUDA_COMPILER_LAUNCHER"] == "/usr/bin/ccache"
    assert env["MAX_JOBS"] == "16"


def test_an_unsupported_default_gxx_is_replaced_by_the_newest_supported_one(kb):
    env = _exports(render("torch-2.7.1-cu126-system-nccl-no-cudnn-cudahostcxx", kb))
    assert env["CUDAHOSTCXX"] == "/usr/bin/g++-13"
    assert env["CMAKE_CUDA_HOST_COMPILER"] == "/usr/bin/g++-13"
    assert env["USE_CUDNN"] == "0"
    assert env["MAX_JOBS"] == "4"  # 24 GiB / 5 GiB per job, fewer than 8 cores


def test_old_and_new_torch_get_their_own_build_command(kb):
    old = render("torch-2.3.1-cu121-bundled-nccl-cudnn-path-debug-ccache", kb)
    new = render("torch-2.9.1-cu128-pip-libs-spaces", kb)
    assert "setup.py bdist_wheel --dist-dir" in old
    assert "-m pip wheel . --no-build-isolation --no-deps -v -w" in new
    assert "git clone" not in old and "git clone --branch v2.9.1" in new


def test_cmake_only_stops_after_configuring_and_has_no_verification(kb):
    text = render("torch-2.9.1-cu130-cmake-only", kb)
    assert "setup.py build --cmake-only" in text
    assert "# verify" not in text
    assert "verify_build.py" not in text


def test_the_docker_plan_runs_the_same_build_script_inside_the_image(kb):
    image = "nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04"
    inside = {f.key: f.value for f in ts.container_facts("12.8", image)}
    host = {"build.cores": 32, "build.mem_available_bytes": 128 * GIB, "build.disk_free": {"path": "/srv/fwd build", "checked_at": "/srv", "bytes": 500 * GIB}}
    facts = build_facts({**request("2.9.1", inside["build.toolkit"], pip_lib("nccl", "2.27.5", 12), pip_lib("cudnn", "9.10.2.21", 12),
                                   "/fwd/venv/bin/python", "9.0", "/srv/fwd build"), **inside, **host})
    report, bp = ts.docker_plan_for(facts, kb, image, "/srv/fwd build", None)
    assert not report.has_errors
    text = bp.to_plan().to_shell()
    path = GOLDEN / "torch-2.9.1-cu128-docker.sh"
    if UPDATE:
        path.write_text(text)
    assert text == path.read_text()
    assert bp.build.argv[:2] == ("docker", "run") and "/srv/fwd build:/fwd" in bp.build.argv
    (script,) = bp.files
    assert "export CMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc" in script.content
    assert "python3 -m venv /fwd/venv" in script.content
    assert subprocess.run(["sh", "-n"], input=script.content, text=True, timeout=30).returncode == 0
