"""The build's parsers on recorded tool output, the arch list, MAX_JOBS, the request made
from facts and pre-flight findings, and the environment per torch version
(recipes/buildenv.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from build_facts import GIB, build_facts, gxx, path_lib, tool
from fwdoctor.engine import judge
from fwdoctor.host import Host
from fwdoctor.libraries import CUDNN, NCCL
from fwdoctor.model import Fact, Facts
from fwdoctor.probes import build_arch, build_resources, build_tools, build_toolkit, libscan
from fwdoctor.probes.compilers import parse_dumpversion
from fwdoctor.recipes import buildenv as be
from fwdoctor.rules import build as build_rules

FIX = Path(__file__).resolve().parent / "golden" / "build" / "fixtures"


def fixture(name: str) -> str:
    return (FIX / name).read_text()


# --------------------------------------------------------------------------- parsers
def test_nvcc_version_output_gives_the_release():
    from fwdoctor.probes.cuda import parse_nvcc_version

    assert parse_nvcc_version(fixture("nvcc-13.0-version.txt"))[0] == "13.0"


def test_nvcc_list_gpu_arch_gives_sorted_compute_capabilities():
    archs = build_toolkit.parse_gpu_arch_list(fixture("nvcc-13.0-list-gpu-arch.txt"))
    assert archs[0] == "7.5" and "12.1" in archs and "5.0" not in archs
    assert archs == sorted(archs, key=lambda c: tuple(map(int, c.split("."))))


def test_host_config_gives_the_newest_gcc_nvcc_accepts():
    assert build_toolkit.parse_host_config(fixture("host_config-13.0-excerpt.h")) == (None, 15)


def test_host_config_with_a_lower_bound_gives_both_bounds():
    text = "#if __GNUC__ < 6\n#error -- unsupported GNU version!\n#endif\n#if __GNUC__ > 12\n#error\n#endif\n"
    assert build_toolkit.parse_host_config(text) == (6, 12)


def test_tool_versions_are_read_from_recorded_output():
    assert parse_dumpversion(fixture("gxx-dumpfullversion.txt")) == "12.2.0"
    assert build_tools.parse_cmake_version(fixture("cmake-version.txt")) == "3.25.1"
    assert build_tools.parse_ninja_version(fixture("ninja-version.txt")) == "1.11.1"


def test_library_headers_give_their_versions():
    assert NCCL.parse_header(fixture("nccl-2.30.7-header-excerpt.h")) == "2.30.7"
    assert CUDNN.parse_header(fixture("cudnn_version-9.24.0-excerpt.h")) == "9.24.0"


def test_meminfo_gives_the_available_bytes():
    assert build_resources.parse_mem_available("MemTotal:  16 kB\nMemAvailable:    2048 kB\n") == 2 * 1024 * 1024


@pytest.mark.parametrize("garbage", ["", "\x00\xff garbage", "release twelve", "#define NCCL_MAJOR x"])
def test_garbage_gives_none_never_an_exception(garbage):
    assert build_toolkit.parse_gpu_arch_list(garbage) is None
    assert build_toolkit.parse_host_config(garbage) is None
    assert NCCL.parse_header(garbage) is None
    assert CUDNN.parse_header(garbage) is None
    assert libscan.parse_nccl_embedded(garbage.encode("utf-8", "replace")) is None
    assert parse_dumpversion(garbage) is None
    assert build_resources.parse_mem_available(garbage) is None
    assert be.parse_ninja_progress(garbage) is None


def test_ninja_status_lines_give_progress_even_when_pip_indents_them():
    assert be.parse_ninja_progress("[123/6789] Building CUDA object x.cu.o") == (123, 6789)
    assert be.parse_ninja_progress("  [2/2] Linking CUDA executable fwdoctor_probe") == (2, 2)
    assert be.parse_ninja_progress("[5/0] nonsense") is None
    assert be.parse_ninja_progress("-- Found CUDA [12.8]") is None


# --------------------------------------------------------------------------- arch and jobs
def test_arch_lists_in_either_notation_become_torch_cuda_arch_list():
    assert build_arch.normalize_arch_list("8.0;9.0+PTX")[0] == "8.0;9.0+PTX"
    assert build_arch.normalize_arch_list("sm_90, compute_90 sm_80")[0] == "8.0;9.0+PTX"
    assert build_arch.normalize_arch_list("9.0a 10.0")[0] == "9.0a;10.0"


def test_a_bad_arch_entry_is_named_in_the_error():
    with pytest.raises(ValueError, match="'ampere'"):
        build_arch.normalize_arch_list("8.0;ampere")


def test_host_gpus_become_a_sorted_unique_arch_list():
    assert build_arch.arch_list_from_ccs(["9.0", "8.6", "9.0"]) == "8.6;9.0"


def _arch(facts: list[Fact], spec: str = "auto") -> Facts:
    return Facts([Fact("request.build.arch", spec), *facts, *build_arch.build_arch.func(Host.live_host(env={}), Facts([Fact("request.build.arch", spec), *facts]))])


def test_arch_auto_uses_the_compute_capabilities_the_gpus_report():
    gpus = [{"index": i, "name": "GPU", "cc": cc, "source": "nvml"} for i, cc in enumerate(("9.0", "9.0", "8.6"))]
    facts = _arch([Fact("gpus.list", gpus, source="nvml")])
    assert facts["build.arch"] == {"list": "8.6;9.0", "from": "host GPUs (9.0, 9.0, 8.6)"}


def test_arch_auto_without_a_gpu_asks_for_an_explicit_list():
    for gpus in (Fact.unknown("gpus.list", "no NVML"), Fact("gpus.list", [], source="/sys/bus/pci/devices"),
                 Fact("gpus.list", [{"index": 0, "name": "NVIDIA device 0x2330", "cc": None}], source="pci")):
        facts = _arch([gpus])
        assert not facts.known("build.arch")
        assert facts.why("build.arch").startswith("--arch auto: no GPU found on this host (")
        assert facts.why("build.arch").endswith("name the targets, e.g. --arch '8.0;9.0+PTX'")


def test_max_jobs_is_capped_by_memory_and_never_zero():
    assert be.max_jobs(64, 200 * GIB, 5) == 40
    assert be.max_jobs(8, 200 * GIB, 5) == 8
    assert be.max_jobs(8, 2 * GIB, 5) == 1
    assert be.max_jobs(8, None, 5) == 8


# --------------------------------------------------------------------------- toolkit choice
def test_of_two_toolkits_of_the_asked_release_the_newest_version_is_chosen_not_the_first_by_name(monkeypatch):
    found = [
        {"root": "/usr/local/cuda-12.10", "version": "12.10.20", "nvcc": "/usr/local/cuda-12.10/bin/nvcc", "nvcc_release": None},
        {"root": "/opt/cuda-12.8", "version": "12.8.61", "nvcc": "/opt/cuda-12.8/bin/nvcc", "nvcc_release": None},
        {"root": "/usr/local/cuda-12.8", "version": "12.8.93", "nvcc": "/usr/local/cuda-12.8/bin/nvcc", "nvcc_release": None},
        {"root": "/usr/local/cuda-12.8-rt", "version": "12.8.99", "nvcc": None, "nvcc_release": None},  # runtime only
    ]
    monkeypatch.setattr(build_toolkit, "describe", lambda host, root, nvcc, release=None: {"root": root, "release": release})
    host = Host.live_host(env={})
    assert build_toolkit.by_version(host, "12.8", found) == {"root": "/usr/local/cuda-12.8", "release": "12.8"}
    assert build_toolkit.by_version(host, "12.10", found)["root"] == "/usr/local/cuda-12.10"
    with pytest.raises(build_toolkit.NotAToolkit, match=r"--cuda 12.9: no such toolkit installed \(found: 12.10 at"):
        build_toolkit.by_version(host, "12.9", found)


# --------------------------------------------------------------------------- request and environment
def request(changes=None, test_kb=None, workdir: str = "/w") -> be.BuildRequest:
    facts = build_facts(changes)
    report = judge(facts, test_kb, build_rules.RULES) if test_kb is not None else None
    return be.request_from(facts, report.findings if report else [], workdir)


def test_the_preflights_decisions_reach_the_request(test_kb):
    req = request({"build.host_cxx": gxx("/usr/bin/g++", "15.1.0"), "build.gxx_installed": [gxx("/usr/bin/g++-14", "14.2.0")],
                   "build.cmake": tool("/usr/bin/cmake", "3.25.1"), "build.ninja": None}, test_kb)
    assert req.host_cxx == "/usr/bin/g++-14"
    assert req.pip_tools == ("cmake>=3.27", "ninja")  # cmake first, whatever order the findings came in
    assert request({"build.host_cxx": gxx("/opt/g++", "12.2.0", "CUDAHOSTCXX")}, test_kb).host_cxx == "/opt/g++"
    assert request(None, test_kb).host_cxx is None and request(None, test_kb).pip_tools == ()


def test_pip_libraries_live_under_the_workdir_and_path_libraries_where_they_are():
    req = request({"build.cudnn": path_lib("cudnn", "9.1.0", "/c/include", "/c/lib/libcudnn.so.9", 12)}, workdir="/srv/w")
    assert req.nccl.library_file == "/srv/w/deps/nccl/nvidia/nccl/lib/libnccl.so.2"
    assert req.cudnn.library_file == "/c/lib/libcudnn.so.9" and req.cudnn.pinned


def test_old_torch_gets_the_same_python_in_every_spelling(test_kb):
    env = be.build_env(request({"build.torch": "2.3.1"}), test_kb.build, be.Layout("/w"))
    assert env["PYTHON_EXECUTABLE"] == env["Python_EXECUTABLE"] == env["Python3_EXECUTABLE"] == "/v/bin/python"
    assert test_kb.build.reads("2.3.1", "PYTHON_EXECUTABLE") and not test_kb.build.reads("2.3.1", "Python_EXECUTABLE")
    assert test_kb.build.reads("2.9.1", "Python_EXECUTABLE") and not test_kb.build.reads("2.9.1", "PYTHON_EXECUTABLE")


def test_the_environment_names_the_chosen_nvcc_everywhere_and_path_puts_it_first(test_kb):
    env = be.build_env(request(), test_kb.build, be.Layout("/w"), extra_path=["/v/bin"])
    nvcc = "/usr/local/cuda-12.8/bin/nvcc"
    assert env["CMAKE_CUDA_COMPILER"] == env["CUDACXX"] == env["CUDA_NVCC_EXECUTABLE"] == nvcc
    assert env["CUDA_HOME"] == "/usr/local/cuda-12.8"
    assert env["PATH"].split(":")[:2] == ["/v/bin", "/usr/local/cuda-12.8/bin"]
    assert "CUDAHOSTCXX" not in env and "DEBUG" not in env and "CMAKE_CUDA_COMPILER_LAUNCHER" not in env


def test_ccache_is_the_launcher_only_when_asked_for(test_kb):
    asked = request({"request.build.ccache": True, "build.ccache": "/usr/bin/ccache"})
    assert be.build_env(asked, test_kb.build, be.Layout("/w"))["CMAKE_CUDA_COMPILER_LAUNCHER"] == "/usr/bin/ccache"
    assert request({"build.ccache": "/usr/bin/ccache"}).launcher is None


def test_pip_wheel_paths_match_the_wheels_real_layout():
    include, library = be.pip_paths(be.Layout("/w"), "nccl", "2.27.5")
    assert (include, library) == ("/w/deps/nccl/nvidia/nccl/include", "/w/deps/nccl/nvidia/nccl/lib/libnccl.so.2")
    assert be.pip_paths(be.Layout("/w"), "cudnn", "9.10.2.21")[1] == "/w/deps/cudnn/nvidia/cudnn/lib/libcudnn.so.9"
