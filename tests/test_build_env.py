"""recipes/buildenv.py: parsers on recorded tool output, the arch list, MAX_JOBS, the
environment per torch version, and every pre-flight check (valid and invalid examples)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fwdoctor.kb import KB
from fwdoctor.model import Severity
from fwdoctor.probes import libscan
from fwdoctor.probes.compilers import parse_dumpversion
from fwdoctor.recipes import buildenv as be
from fwdoctor.recipes import torch_source as ts

FIX = Path(__file__).resolve().parent / "golden" / "build" / "fixtures"


def fixture(name: str) -> str:
    return (FIX / name).read_text()


@pytest.fixture(scope="module")
def kb():
    return KB()


# --------------------------------------------------------------------------- parsers
def test_nvcc_version_output_gives_the_release():
    assert be.parse_nvcc_release(fixture("nvcc-13.0-version.txt")) == "13.0"


def test_nvcc_list_gpu_arch_gives_sorted_compute_capabilities():
    archs = be.parse_gpu_arch_list(fixture("nvcc-13.0-list-gpu-arch.txt"))
    assert archs[0] == "7.5" and "12.1" in archs and "5.0" not in archs
    assert list(archs) == sorted(archs, key=lambda c: tuple(map(int, c.split("."))))


def test_host_config_gives_the_newest_gcc_nvcc_accepts():
    assert be.parse_host_config(fixture("host_config-13.0-excerpt.h")) == (None, 15)


def test_host_config_with_a_lower_bound_gives_both_bounds():
    text = "#if __GNUC__ < 6\n#error -- unsupported GNU version!\n#endif\n#if __GNUC__ > 12\n#error\n#endif\n"
    assert be.parse_host_config(text) == (6, 12)


def test_tool_versions_are_read_from_recorded_output():
    assert parse_dumpversion(fixture("gxx-dumpfullversion.txt")) == "12.2.0"
    assert be.parse_tool_version(fixture("cmake-version.txt")) == "3.25.1"
    assert be.parse_tool_version(fixture("ninja-version.txt")) == "1.11.1"


def test_library_headers_give_their_versions():
    assert libscan.parse_nccl_header(fixture("nccl-2.30.7-header-excerpt.h")) == "2.30.7"
    assert libscan.parse_cudnn_header(fixture("cudnn_version-9.24.0-excerpt.h")) == "9.24.0"


def test_the_nccl_version_string_inside_the_library_gives_its_cuda_major(tmp_path):
    # The exact bytes of libnccl.so.2 from nvidia-nccl-cu13 2.30.7 around the string.
    blob = b"\x00\x00NCCL version 2.30.7+cuda13.3\x00NCCL version 2.30.7 compiled with CUDA 13.3\n\x00"
    lib = tmp_path / "libnccl.so.2"
    lib.write_bytes(b"\x7fELF" + b"\x00" * 4096 + blob)
    assert ts.scan_nccl_library(str(lib)) == ("2.30.7", 13)
    assert ts.scan_nccl_library(str(tmp_path / "absent.so.2")) is None


@pytest.mark.parametrize("garbage", ["", "\x00\xff garbage", "release twelve", "#define NCCL_MAJOR x"])
def test_garbage_gives_none_never_an_exception(garbage):
    assert be.parse_nvcc_release(garbage) is None
    assert be.parse_gpu_arch_list(garbage) is None
    assert be.parse_host_config(garbage) is None
    assert libscan.parse_nccl_header(garbage) is None
    assert libscan.parse_cudnn_header(garbage) is None
    assert libscan.parse_nccl_embedded(garbage.encode("utf-8", "replace")) is None
    assert parse_dumpversion(garbage) is None
    assert be.parse_ninja_progress(garbage) is None


def test_ninja_status_lines_give_progress_even_when_pip_indents_them():
    assert be.parse_ninja_progress("[123/6789] Building CUDA object x.cu.o") == (123, 6789)
    assert be.parse_ninja_progress("  [2/2] Linking CUDA executable fwdoctor_probe") == (2, 2)
    assert be.parse_ninja_progress("[5/0] nonsense") is None
    assert be.parse_ninja_progress("-- Found CUDA [12.8]") is None


# --------------------------------------------------------------------------- arch and jobs
def test_arch_lists_in_either_notation_become_torch_cuda_arch_list():
    assert be.normalize_arch_list("8.0;9.0+PTX")[0] == "8.0;9.0+PTX"
    assert be.normalize_arch_list("sm_90, compute_90 sm_80")[0] == "8.0;9.0+PTX"
    assert be.normalize_arch_list("9.0a 10.0")[0] == "9.0a;10.0"


def test_a_bad_arch_entry_is_named_in_the_error():
    with pytest.raises(ValueError, match="'ampere'"):
        be.normalize_arch_list("8.0;ampere")


def test_host_gpus_become_a_sorted_unique_arch_list():
    assert be.arch_list_from_ccs(["9.0", "8.6", "9.0"]) == "8.6;9.0"


def test_max_jobs_is_capped_by_memory_and_never_zero():
    assert be.max_jobs(64, 200 * be.GIB, 5) == 40
    assert be.max_jobs(8, 200 * be.GIB, 5) == 8
    assert be.max_jobs(8, 2 * be.GIB, 5) == 1
    assert be.max_jobs(8, None, 5) == 8


# --------------------------------------------------------------------------- requests
def toolkit(release="12.8", archs=("7.5", "8.0", "9.0", "10.0", "12.0"), gcc=(None, 14)) -> be.Toolkit:
    return be.Toolkit(f"/usr/local/cuda-{release}", f"/usr/local/cuda-{release}/bin/nvcc", release, gpu_archs=archs, host_gcc=gcc)


HOST = be.BuildHost(cores=16, mem_available_bytes=64 * be.GIB, disk_free_bytes=300 * be.GIB,
                    host_cxx=be.Tool("/usr/bin/g++", "12.2.0"), cmake=be.Tool("/usr/bin/cmake", "3.30.0"),
                    ninja=be.Tool("/usr/bin/ninja", "1.11.1"), git="/usr/bin/git")


def request(**changes) -> be.BuildRequest:
    base = be.BuildRequest(
        torch="2.9.1", toolkit=toolkit(), nccl=be.LibChoice("nccl", "pip", version="2.27.5", package="nvidia-nccl-cu12", cuda_major=12),
        cudnn=be.LibChoice("cudnn", "pip", version="9.10.2.21", package="nvidia-cudnn-cu12", cuda_major=12),
        python=be.PythonEnv("/v/bin/python", "3.11.9", "/v", "/usr", True), arch_list="8.0;9.0+PTX", arch_from="--arch", workdir="/w")
    return dataclasses.replace(base, **changes)


def ids(pf: be.Preflight, severity: Severity | None = None) -> set[str]:
    return {f.id for f in pf.findings if severity is None or f.severity is severity}


def test_a_healthy_request_passes_the_preflight(kb):
    pf = be.preflight(request(), HOST, kb.build, None)
    assert pf.ok and pf.findings == [] and pf.pip_tools == ()


def test_an_arch_nvcc_cannot_compile_is_refused_with_the_nvcc_error(kb):
    pf = be.preflight(request(arch_list="5.0;8.0", toolkit=toolkit("13.0")), HOST, kb.build, None)
    (finding,) = [f for f in pf.errors if f.id == be.ARCH_TOOLKIT]
    assert "compute_50" in finding.message and "5.0" in finding.message


def test_without_list_gpu_arch_the_kb_decides_or_it_is_reported_not_checked(kb):
    class FakeCuda:
        def nvcc_supports(self, cuda, cc):
            return {"5.0": False, "8.0": True}.get(cc)

    tk = dataclasses.replace(toolkit("13.0"), gpu_archs=None)
    pf = be.preflight(request(toolkit=tk, arch_list="5.0;8.0;9.0"), HOST, kb.build, FakeCuda())
    assert be.ARCH_TOOLKIT in ids(pf, Severity.ERROR)
    assert any(f.id == be.NOT_CHECKED and "9.0" in f.message for f in pf.findings)


def test_a_too_new_gxx_without_an_alternative_is_refused(kb):
    host = dataclasses.replace(HOST, host_cxx=be.Tool("/usr/bin/g++", "15.1.0"))
    pf = be.preflight(request(toolkit=toolkit(gcc=(None, 14))), host, kb.build, None)
    (finding,) = pf.errors
    assert finding.id == be.HOST_COMPILER and "gcc 15.1.0" in finding.message and "gcc <= 14" in finding.message


def test_a_too_new_gxx_with_an_older_gxx_installed_switches_cudahostcxx(kb):
    host = dataclasses.replace(HOST, host_cxx=be.Tool("/usr/bin/g++", "15.1.0"),
                               other_gxx=(be.Tool("/usr/bin/g++-13", "13.3.0"), be.Tool("/usr/bin/g++-14", "14.2.0"), be.Tool("/usr/bin/g++-16", "16.0.0")))
    pf = be.preflight(request(toolkit=toolkit(gcc=(None, 14))), host, kb.build, None)
    assert pf.ok and pf.host_cxx == "/usr/bin/g++-14"


def test_nccl_built_for_another_cuda_major_is_refused(kb):
    nccl = be.LibChoice("nccl", "path", version="2.30.7", include_dir="/n/include", library_file="/n/lib/libnccl.so.2",
                        cuda_major=13, cuda_major_source='"NCCL version 2.30.7+cuda13"')
    pf = be.preflight(request(nccl=nccl), HOST, kb.build, None)
    (finding,) = pf.errors
    assert finding.id == be.NCCL_CUDA and "CUDA 13" in finding.message and "CUDA 12.8" in finding.message


def test_cudnn_with_an_unknown_cuda_major_is_a_not_checked_warning(kb):
    cudnn = be.LibChoice("cudnn", "path", version="9.1.0", include_dir="/c/include", library_file="/c/lib/libcudnn.so.9")
    pf = be.preflight(request(cudnn=cudnn), HOST, kb.build, None)
    assert pf.ok and be.NOT_CHECKED in ids(pf, Severity.WARNING)


def test_a_path_without_headers_or_library_is_refused(kb):
    pf = be.preflight(request(cudnn=be.LibChoice("cudnn", "path")), HOST, kb.build, None)
    assert be.INPUT_MISSING in ids(pf, Severity.ERROR)


def test_a_pip_version_older_than_the_cuda_majors_first_wheel_is_refused(kb):
    nccl = be.LibChoice("nccl", "pip", version="2.27.5", package="nvidia-nccl-cu13", cuda_major=13)
    pf = be.preflight(request(toolkit=toolkit("13.0"), nccl=nccl, cudnn=be.LibChoice("cudnn", "bundled")), HOST, kb.build, None)
    (finding,) = pf.errors
    assert finding.id == be.NO_WHEEL and "2.27.7" in finding.message


def test_a_cudnn_past_the_last_cu11_wheel_is_refused(kb):
    cudnn = be.LibChoice("cudnn", "pip", version="9.12.0.46", package="nvidia-cudnn-cu11", cuda_major=11)
    pf = be.preflight(request(toolkit=toolkit("11.8"), torch="2.6.0", nccl=be.LibChoice("nccl", "bundled"), cudnn=cudnn), HOST, kb.build, None)
    assert be.NO_WHEEL in ids(pf, Severity.ERROR)


def test_python_without_pip_is_refused_and_a_system_python_is_warned_about(kb):
    no_pip = be.PythonEnv("/usr/bin/python3", "3.11.2", "/usr", "/usr", False)
    pf = be.preflight(request(python=no_pip), HOST, kb.build, None)
    assert be.PYTHON_UNUSABLE in ids(pf, Severity.ERROR)
    assert be.PYTHON_UNUSABLE in ids(pf, Severity.WARNING)


def test_a_python_that_cannot_run_is_refused_with_the_reason(kb):
    pf = be.preflight(request(python=be.PythonEnv("/nope/python", error="cannot run it: not found")), HOST, kb.build, None)
    assert any(f.id == be.PYTHON_UNUSABLE and "not found" in f.message for f in pf.errors)


def test_low_disk_and_memory_are_refused_before_a_build_but_not_for_cmake_only(kb):
    host = dataclasses.replace(HOST, disk_free_bytes=10 * be.GIB, mem_available_bytes=2 * be.GIB)
    assert {be.DISK_LOW, be.RAM_LOW} <= ids(be.preflight(request(), host, kb.build, None), Severity.ERROR)
    assert be.preflight(request(), host, kb.build, None, cmake_only=True).ok


def test_an_old_cmake_and_a_missing_ninja_are_installed_into_the_environment(kb):
    host = dataclasses.replace(HOST, cmake=be.Tool("/usr/bin/cmake", "3.25.1"), ninja=be.Tool(None, None))
    pf = be.preflight(request(), host, kb.build, None)
    assert pf.ok and pf.pip_tools == ("cmake>=3.27", "ninja")
    assert be.preflight(request(torch="2.7.1"), host, kb.build, None).pip_tools == ("ninja",)


def test_a_torch_older_than_the_recipe_knows_is_refused(kb):
    assert be.TORCH_UNSUPPORTED in ids(be.preflight(request(torch="1.13.1"), HOST, kb.build, None), Severity.ERROR)


def test_ccache_or_git_missing_is_refused(kb):
    host = dataclasses.replace(HOST, git=None, ccache=None)
    pf = be.preflight(request(ccache=True), host, kb.build, None)
    assert sum(1 for f in pf.errors if f.id == be.INPUT_MISSING) == 2
    assert be.preflight(request(source="/src"), dataclasses.replace(HOST, git=None), kb.build, None).ok


# --------------------------------------------------------------------------- environment
def test_old_torch_gets_the_same_python_in_every_spelling(kb):
    env = be.build_env(request(torch="2.3.1"), HOST, kb.build, be.Layout("/w"))
    assert env["PYTHON_EXECUTABLE"] == env["Python_EXECUTABLE"] == env["Python3_EXECUTABLE"] == "/v/bin/python"
    assert kb.build.reads("2.3.1", "PYTHON_EXECUTABLE") and not kb.build.reads("2.3.1", "Python_EXECUTABLE")
    assert kb.build.reads("2.9.1", "Python_EXECUTABLE") and not kb.build.reads("2.9.1", "PYTHON_EXECUTABLE")


def test_the_environment_names_the_chosen_nvcc_everywhere_and_path_puts_it_first(kb):
    env = be.build_env(request(), HOST, kb.build, be.Layout("/w"), extra_path=["/v/bin"])
    nvcc = "/usr/local/cuda-12.8/bin/nvcc"
    assert env["CMAKE_CUDA_COMPILER"] == env["CUDACXX"] == env["CUDA_NVCC_EXECUTABLE"] == nvcc
    assert env["CUDA_HOME"] == "/usr/local/cuda-12.8"
    assert env["PATH"].split(":")[:2] == ["/v/bin", "/usr/local/cuda-12.8/bin"]
    assert "CUDAHOSTCXX" not in env and "DEBUG" not in env and "CMAKE_CUDA_COMPILER_LAUNCHER" not in env


def test_pip_wheel_paths_match_the_wheels_real_layout():
    include, library = be.pip_paths(be.Layout("/w"), "nccl", "2.27.5")
    assert (include, library) == ("/w/deps/nccl/nvidia/nccl/include", "/w/deps/nccl/nvidia/nccl/lib/libnccl.so.2")
    assert be.pip_paths(be.Layout("/w"), "cudnn", "9.10.2.21")[1] == "/w/deps/cudnn/nvidia/cudnn/lib/libcudnn.so.9"


def test_installed_toolkits_are_tried_newest_version_first_not_in_string_order():
    roots = ["/usr/local/cuda-9.2", "/usr/local/cuda-12.10", "/usr/local/cuda-unknown", "/usr/local/cuda-12.9"]
    assert sorted(roots, key=ts._release_key, reverse=True) == [
        "/usr/local/cuda-12.10", "/usr/local/cuda-12.9", "/usr/local/cuda-9.2", "/usr/local/cuda-unknown"]
