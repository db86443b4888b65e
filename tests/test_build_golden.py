"""Golden build scripts: `Plan.to_shell()` of `fwdoctor build torch` for several torch
versions and option sets, from hand-built requests (no host probing), compared byte for
byte with tests/golden/build/*.sh. Regenerate: FWDOCTOR_UPDATE_GOLDEN=1 pytest this file.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from fwdoctor.kb import KB
from fwdoctor.recipes import buildenv as be
from fwdoctor.recipes import torch_source as ts

GOLDEN = Path(__file__).resolve().parent / "golden" / "build"
UPDATE = os.environ.get("FWDOCTOR_UPDATE_GOLDEN") == "1"

HOST = be.BuildHost(
    cores=64,
    mem_available_bytes=200 * be.GIB,  # 200 GiB / 5 GiB per job = 40 < 64 cores
    disk_free_bytes=500 * be.GIB,
    host_cxx=be.Tool("/usr/bin/g++", "12.2.0"),
    cmake=be.Tool("/usr/bin/cmake", "3.28.3"),
    ninja=be.Tool("/usr/bin/ninja", "1.11.1"),
    ccache="/usr/bin/ccache",
    git="/usr/bin/git",
    path="/usr/local/bin:/usr/bin:/bin",
)


def toolkit(release: str, root: str | None = None, gcc_max: int = 13) -> be.Toolkit:
    root = root or f"/usr/local/cuda-{release}"
    archs = ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0")
    return be.Toolkit(root, f"{root}/bin/nvcc", release, gpu_archs=archs, host_gcc=(None, gcc_max))


def pip_lib(lib: str, version: str, major: int, workdir: str) -> be.LibChoice:
    include, library = be.pip_paths(be.Layout(workdir), lib, version)
    return be.LibChoice(lib, "pip", version=version, package=f"nvidia-{lib}-cu{major}", include_dir=include,
                        library_file=library, cuda_major=major, cuda_major_source=f"nvidia-{lib}-cu{major}")


def python(path: str) -> be.PythonEnv:
    return be.PythonEnv(path, "3.11.9", prefix=os.path.dirname(os.path.dirname(path)), base_prefix="/usr", has_pip=True)


def case_pip_libs_with_spaces():
    """2.9.1 + CUDA 12.8, NCCL and cuDNN as pip wheels, a clone, paths with spaces."""
    work = "/srv/build area/torch 2.9.1"
    req = be.BuildRequest(
        torch="2.9.1", toolkit=toolkit("12.8"), nccl=pip_lib("nccl", "2.27.5", 12, work), cudnn=pip_lib("cudnn", "9.10.2.21", 12, work),
        python=python("/home/ml/venvs/torch build/bin/python"), arch_list="8.0;9.0+PTX", arch_from="--arch", workdir=work)
    return req, HOST, False


def case_bundled_nccl_cudnn_path_debug_ccache():
    """2.3.1 + CUDA 12.1: bundled NCCL, cuDNN from a tarball folder, DEBUG, ccache, --source."""
    cudnn = be.LibChoice("cudnn", "path", version="8.9.7", include_dir="/opt/cudnn-8.9.7/include",
                         library_file="/opt/cudnn-8.9.7/lib/libcudnn.so.8", cuda_major=12, cuda_major_source="the path")
    req = be.BuildRequest(
        torch="2.3.1", toolkit=toolkit("12.1", gcc_max=12), nccl=be.LibChoice("nccl", "bundled"), cudnn=cudnn,
        python=python("/opt/envs/py310/bin/python"), arch_list="7.0;8.0", arch_from="--arch", workdir="/scratch/fwd/torch-2.3.1",
        source="/home/ml/src/pytorch", jobs=16, ccache=True, debug=True)
    return req, HOST, False


def case_system_nccl_no_cudnn_host_compiler_swap():
    """2.7.1 + CUDA 12.6 on a host whose g++ is 14 (nvcc 12.6 takes <= 13): g++-13 becomes
    CUDAHOSTCXX. System NCCL from Debian packages, cuDNN off, an arch-specific target."""
    nccl = be.LibChoice("nccl", "path", version="2.26.2", include_dir="/usr/include",
                        library_file="/usr/lib/x86_64-linux-gnu/libnccl.so.2", cuda_major=12, cuda_major_source="NCCL version string")
    host = be.BuildHost(cores=8, mem_available_bytes=24 * be.GIB, disk_free_bytes=100 * be.GIB,
                        host_cxx=be.Tool("/usr/bin/g++", "14.2.0"), other_gxx=(be.Tool("/usr/bin/g++-13", "13.3.0"), be.Tool("/usr/bin/g++-12", "12.4.0")),
                        cmake=be.Tool("/usr/bin/cmake", "3.25.1"), ninja=be.Tool(None, None), git="/usr/bin/git", path="/usr/bin:/bin")
    req = be.BuildRequest(
        torch="2.7.1", toolkit=toolkit("12.6"), nccl=nccl, cudnn=be.LibChoice("cudnn", "none"),
        python=python("/home/ml/.venv/bin/python"), arch_list="9.0a", arch_from="--arch", workdir="/home/ml/fwd/torch-2.7.1")
    return req, host, False


def case_cmake_only_source_tree():
    """--cmake-only on an existing 2.9.1 tree with CUDA 13.0 and a pip NCCL."""
    work = "/home/ml/fwd/torch-2.9.1-cu130"
    req = be.BuildRequest(
        torch="2.9.1", toolkit=toolkit("13.0", root="/usr/local/cuda-13.0", gcc_max=15), nccl=pip_lib("nccl", "2.28.3", 13, work),
        cudnn=be.LibChoice("cudnn", "bundled"), python=python("/home/ml/.venv/bin/python"), arch_list="10.0;12.0+PTX",
        arch_from="host GPUs (10.0, 12.0)", workdir=work, source="/home/ml/src/pytorch")
    return req, HOST, True


CASES = {
    "torch-2.9.1-cu128-pip-libs-spaces": case_pip_libs_with_spaces,
    "torch-2.3.1-cu121-bundled-nccl-cudnn-path-debug-ccache": case_bundled_nccl_cudnn_path_debug_ccache,
    "torch-2.7.1-cu126-system-nccl-no-cudnn-cudahostcxx": case_system_nccl_no_cudnn_host_compiler_swap,
    "torch-2.9.1-cu130-cmake-only": case_cmake_only_source_tree,
}


@pytest.fixture(scope="module")
def kb():
    return KB()


def render(name: str, kb) -> str:
    req, host, cmake_only = CASES[name]()
    pf, bp = ts.make_plan(req, host, kb, cmake_only=cmake_only)
    assert pf.ok, [f.message for f in pf.errors]
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
    inside = be.Layout(ts.CONTAINER_WORKDIR)
    req = be.BuildRequest(
        torch="2.9.1", toolkit=be.Toolkit("/usr/local/cuda", "/usr/local/cuda/bin/nvcc", "12.8"),
        nccl=pip_lib("nccl", "2.27.5", 12, inside.workdir), cudnn=pip_lib("cudnn", "9.10.2.21", 12, inside.workdir),
        python=be.PythonEnv("/fwd/venv/bin/python", None, "/fwd/venv", "/usr", True), arch_list="9.0", arch_from="--arch", workdir="/fwd")
    host = be.BuildHost(cores=32, mem_available_bytes=128 * be.GIB, disk_free_bytes=500 * be.GIB,
                        host_cxx=be.Tool("/usr/bin/g++", None), git="/usr/bin/git", path=ts.CONTAINER_PATH)
    pf, bp = ts.docker_plan_for(req, host, kb, "nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04", "/srv/fwd build", None)
    assert pf.ok
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
