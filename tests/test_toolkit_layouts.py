"""Toolkits, compilers and driver libraries where distributions and environment managers
really put them: Debian's nvidia-cuda-toolkit (real files from the bookworm packages),
WSL2, conda envs, the NVIDIA HPC SDK, Lmod, Spack and RHEL. Each root's README.fixture
says where its files came from."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from conftest import ROOTS
from fwdoctor.probes.compilers import ccbin_from_flags, profile_path, wrapper_choices
from fwdoctor.probes.cuda import dpkg_versions, parse_conda_record_name, versions_disagree

pytestmark = pytest.mark.usefixtures("use_test_kb")

DEBIAN = ROOTS / "toolkit-debian-11.8"


# ----------------------------------------------------------------------------- parsers on real files
def test_the_debian_gcc_wrapper_lists_the_compilers_it_tries_in_order():
    text = (DEBIAN / "usr/lib/nvidia-cuda-toolkit/bin/gcc").read_text()
    choices = wrapper_choices(text)
    assert choices[:3] == [("g++-11", "gcc-11"), ("g++-11", "gcc-11"), ("g++-10", "gcc-10")]
    assert [t for t, _ in choices][-1] == "g++-6" and all(not p.startswith("clang") for _, p in choices)
    gxx = wrapper_choices((DEBIAN / "usr/lib/nvidia-cuda-toolkit/bin/g++").read_text())
    assert gxx[0] == ("g++-11", "g++-11")


def test_nvcc_wrapper_detection_ignores_an_ordinary_script():
    assert wrapper_choices("#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc \"$@\"\n") is None
    assert wrapper_choices("\x7fELF") is None


def test_debian_nvcc_profile_prepends_the_wrapper_folder():
    assert profile_path((DEBIAN / "etc/nvcc.profile").read_text()) == (["/usr/lib/nvidia-cuda-toolkit/bin"], [])
    # NVIDIA's own profile only names nvcc's folders through $(...): nothing for a compiler
    assert profile_path('PATH += $(TOP)/$(_NVVM_BRANCH_)/bin:\nINCLUDES += "-I$(TOP)/include"\n') == ([], [])


@pytest.mark.parametrize(
    "flags, expected",
    [
        ("-ccbin /usr/bin/g++-12", "/usr/bin/g++-12"),
        (" -ccbin=/opt/conda/bin/x86_64-conda-linux-gnu-c++", "/opt/conda/bin/x86_64-conda-linux-gnu-c++"),
        ("--compiler-bindir g++-11 -O2", "g++-11"),
        ("--compiler-bindir=/opt/gcc-12/bin", "/opt/gcc-12/bin"),
        ("-O2 -lineinfo", None),
        ("", None),
        ("-ccbin", None),
    ],
)
def test_ccbin_from_flags(flags, expected):
    assert ccbin_from_flags(flags) == expected


def test_dpkg_status_of_the_real_packages_gives_upstream_versions():
    versions = dpkg_versions((DEBIAN / "var/lib/dpkg/status").read_text())
    assert versions["nvidia-cuda-toolkit"] == "11.8.89"  # 11.8.89~11.8.0-5~deb12u1
    assert versions["libcuda1"] == "535.261.03"
    assert versions["gcc"] == "12.2.0"  # 4:12.2.0-3: the epoch goes


@pytest.mark.parametrize(
    "name, expected",
    [
        ("cuda-nvcc-12.4.131-h02f8991_0.json", ("cuda-nvcc", "12.4.131")),
        ("cuda-version-12.4-h3060b56_3.json", ("cuda-version", "12.4")),
        ("cudatoolkit-11.8.0-h4ba93d1_13.json", ("cudatoolkit", "11.8.0")),
        ("cuda-nvcc-impl-12.4.131-0.json", None),
        ("cudnn-9.1.0.70-h2b5ded8_0.json", None),
    ],
)
def test_conda_record_names(name, expected):
    assert parse_conda_record_name(name) == expected


def test_versions_agree_at_major_minor_only():
    assert not versions_disagree({"dpkg nvidia-cuda-toolkit": "11.8.89", "cuda.h": "11.8"})
    assert versions_disagree({"version.json": "12.4.1", "cuda.h": "13.0"})
    assert not versions_disagree({})


# ----------------------------------------------------------------------------- whole roots
def facts_of(cli, root: str, env: str) -> dict:
    result = cli("facts", "--root", str(ROOTS / root), "--env-file", str(ROOTS / root / env))
    data = json.loads(result.output)
    data = data.get("facts", data)
    return {key: value.get("value", "UNKNOWN") if "value" in value else "UNKNOWN" for key, value in data.items()}


def findings(check_json, root: str, env: str) -> set[tuple[str, str]]:
    _, report = check_json("--root", str(ROOTS / root), "--env-file", str(ROOTS / root / env))
    assert not [f for f in report["findings"] if f["id"] == "probe-failed"]
    return {(f["id"], f["severity"]) for f in report["findings"]}


def test_debian_toolkit_version_comes_from_dpkg_and_cuda_h_and_they_agree(cli):
    facts = facts_of(cli, "toolkit-debian-11.8", "fixture.env")
    (tk,) = facts["cuda.toolkits"]
    assert tk["root"] == "/usr/lib/nvidia-cuda-toolkit" and tk["found_via"] == ["nvcc on PATH"]
    assert tk["version"] == "11.8.89" and tk["version_source"] == "dpkg"
    assert tk["versions"] == {"dpkg nvidia-cuda-toolkit": "11.8.89", "cuda.h": "11.8"} and tk["versions_disagree"] is False
    assert tk["host_gcc_max"] == "11" and tk["host_config"] == "/usr/include/crt/host_config.h"


def test_debian_nvcc_uses_gcc_11_through_its_wrapper_not_the_default_gcc_12(cli):
    facts = facts_of(cli, "toolkit-debian-11.8", "fixture.env")
    assert facts["compilers.gcc_default"] == {"path": "/usr/bin/gcc", "version": "12"}
    host = facts["compilers.nvcc_host"]
    assert (host["path"], host["version"], host["wrapper"]) == ("/usr/bin/gcc-11", "11", "/usr/lib/nvidia-cuda-toolkit/bin/gcc")


def test_debian_driver_libraries_are_found_through_the_alternatives_links(cli):
    facts = facts_of(cli, "toolkit-debian-11.8", "fixture.env")
    libs = {(lib["name"], lib["path"], lib["version"]) for lib in facts["driver.userspace_libs"]}
    assert libs == {
        ("libcuda", "/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.535.261.03", "535.261.03"),
        ("libnvidia-ml", "/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.535.261.03", "535.261.03"),
    }


CASES = [
    # root, env, the toolkit findings expected, exactly
    ("toolkit-debian-11.8", "fixture.env", {("torch-toolkit-mismatch", "error")}),
    ("toolkit-debian-11.8", "ccbin.env", {("torch-toolkit-mismatch", "error"), ("host-compiler-unsupported", "error")}),
    ("toolkit-debian-nogxx", "fixture.env", {("torch-toolkit-mismatch", "error"), ("host-compiler-unsupported", "error")}),
    ("toolkit-wsl2", "fixture.env", set()),
    ("toolkit-conda", "cu124.env", set()),
    ("toolkit-conda", "cu124-nocompiler.env", {("host-compiler-unsupported", "error")}),
    ("toolkit-conda", "cu118.env", set()),
    ("toolkit-hpcsdk", "fixture.env", {("multiple-toolkits", "info")}),
    ("toolkit-debian-11.8", "nvcc-ccbin-env.env", {("torch-toolkit-mismatch", "error")}),
    ("toolkit-debian-11.8", "append.env", {("torch-toolkit-mismatch", "error")}),
    ("toolkit-debian-11.8", "cuda-home-usr.env", {("torch-toolkit-mismatch", "error")}),
    ("toolkit-conda", "cu124-ccbin-env.env", set()),
    ("toolkit-lmod", "loaded.env", set()),
    ("toolkit-lmod", "unloaded.env", set()),
    ("toolkit-spack", "fixture.env", set()),
    ("toolkit-rhel", "fixture.env", set()),
]


@pytest.mark.parametrize("root, env, expected", CASES, ids=[f"{r}/{e}" for r, e, _ in CASES])
def test_each_layout_gives_exactly_its_findings(check_json, root, env, expected):
    assert findings(check_json, root, env) == expected


def test_no_host_compiler_names_the_wrapper_and_the_package_to_install(check_json):
    _, report = check_json("--root", str(ROOTS / "toolkit-debian-nogxx"), "--env-file", str(ROOTS / "toolkit-debian-nogxx/fixture.env"))
    (finding,) = [f for f in report["findings"] if f["id"] == "host-compiler-unsupported"]
    assert "/usr/lib/nvidia-cuda-toolkit/bin/gcc finds none of g++-11, g++-10" in finding["message"]
    assert finding["fix"]["commands"] == ["sudo apt-get install g++-11"]


def test_ccbin_in_nvcc_prepend_flags_is_the_compiler_judged(check_json):
    _, report = check_json("--root", str(DEBIAN), "--env-file", str(DEBIAN / "ccbin.env"))
    (finding,) = [f for f in report["findings"] if f["id"] == "host-compiler-unsupported"]
    assert finding["message"].startswith("gcc 12 (/usr/bin/gcc-12, which nvcc uses via -ccbin in NVCC_PREPEND_FLAGS) is newer than CUDA 11.8's nvcc accepts (gcc <= 11, per /usr/include/crt/host_config.h)")
    assert finding["fix"]["commands"] == [
        "export CC=/usr/bin/gcc-11 CXX=/usr/bin/g++-11 CUDAHOSTCXX=/usr/bin/g++-11",
        "export NVCC_PREPEND_FLAGS='-ccbin /usr/bin/gcc-11'",
    ]


def test_wsl2_is_recognised_and_no_kernel_module_is_expected(cli, check_json):
    facts = facts_of(cli, "toolkit-wsl2", "fixture.env")
    wsl = facts["driver.wsl"]
    assert wsl["libcuda"] == "/usr/lib/wsl/lib/libcuda.so.1" and wsl["nvidia_smi"] == "/usr/lib/wsl/lib/nvidia-smi" and wsl["dxg"] is True
    assert facts["driver.loaded"] is True and facts["driver.module_flavor"] is None
    assert facts["driver.version"] == "UNKNOWN"  # the Windows driver's version: live nvidia-smi/NVML only
    # libcuda.so.1.1 is not a driver version
    assert facts["driver.userspace_libs"] == []
    _, report = check_json("--root", str(ROOTS / "toolkit-wsl2"), "--env-file", str(ROOTS / "toolkit-wsl2/fixture.env"))
    assert not {f["id"] for f in report["findings"]} & {"driver-missing", "nouveau-loaded", "driver-library-mismatch"}


def test_a_linux_root_is_not_wsl(cli):
    assert facts_of(cli, "toolkit-rhel", "fixture.env")["driver.wsl"] is None


def test_conda_env_version_sources_and_its_own_gxx(cli):
    facts = facts_of(cli, "toolkit-conda", "cu124.env")
    (tk,) = facts["cuda.toolkits"]
    assert tk["root"] == "/opt/conda/envs/cu124" and tk["version"] == "12.4.131" and tk["version_source"] == "conda-meta"
    assert tk["versions"] == {"conda-meta cuda-nvcc": "12.4.131", "conda-meta cuda-cudart": "12.4.127", "conda-meta cuda-version": "12.4", "cuda.h": "12.4"}
    host = facts["compilers.nvcc_host"]
    assert host["path"] == "/opt/conda/envs/cu124/bin/x86_64-conda-linux-gnu-c++" and host["version"] == "12.4.0"
    assert host["via"] == "-ccbin in NVCC_PREPEND_FLAGS"


def test_conda_cudatoolkit_is_a_runtime_without_nvcc(cli):
    (tk,) = facts_of(cli, "toolkit-conda", "cu118.env")["cuda.toolkits"]
    assert (tk["root"], tk["version"], tk["nvcc"], tk["found_via"]) == ("/opt/conda/envs/cu118", "11.8.0", None, ["CONDA_PREFIX"])


def test_hpc_sdk_lists_both_cudas_and_path_picks_the_active_one(cli):
    facts = facts_of(cli, "toolkit-hpcsdk", "fixture.env")
    base = "/opt/nvidia/hpc_sdk/Linux_x86_64/24.7/cuda"
    assert sorted((t["root"], t["version"]) for t in facts["cuda.toolkits"]) == [(f"{base}/11.8", "11.8.89"), (f"{base}/12.5", "12.5.82")]
    assert facts["cuda.active"] == {"root": f"{base}/12.5", "version": "12.5.82", "why": "nvcc first on PATH"}


def test_lmod_toolkit_is_seen_only_once_the_module_is_loaded(cli):
    assert facts_of(cli, "toolkit-lmod", "unloaded.env")["cuda.toolkits"] == []
    (tk,) = facts_of(cli, "toolkit-lmod", "loaded.env")["cuda.toolkits"]
    assert tk["found_via"] == ["nvcc on PATH", "CUDA_HOME", "LD_LIBRARY_PATH"] and tk["version"] == "12.4.1"


def test_spack_prefix_is_the_active_toolkit(cli):
    active = facts_of(cli, "toolkit-spack", "fixture.env")["cuda.active"]
    assert active["why"] == "CUDA_HOME" and active["version"] == "12.4.1" and "/cuda-12.4.1-" in active["root"]


def test_rhel_driver_libraries_in_lib64(cli):
    libs = facts_of(cli, "toolkit-rhel", "fixture.env")["driver.userspace_libs"]
    assert {(lib["path"], lib["version"]) for lib in libs} == {("/usr/lib64/libcuda.so.550.90.07", "550.90.07"), ("/usr/lib64/libnvidia-ml.so.550.90.07", "550.90.07")}


def test_disagreeing_sources_are_reported(tmp_path, cli, check_json):
    root = tmp_path / "root"
    tk = root / "usr/local/cuda-12.4"
    (tk / "bin").mkdir(parents=True)
    (tk / "bin/nvcc").write_text("")
    (tk / "bin/nvcc").chmod(0o755)
    (tk / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}')
    (tk / "include").mkdir()
    (tk / "include/cuda.h").write_text("#define CUDA_VERSION 13000\n")
    (root / "env").write_text("PATH=/usr/local/cuda-12.4/bin:/usr/bin\n")
    data = json.loads(cli("facts", "--root", str(root), "--env-file", str(root / "env")).output)
    (entry,) = data.get("facts", data)["cuda.toolkits"]["value"]
    assert entry["versions"] == {"version.json": "12.4.1", "cuda.h": "13.0"} and entry["versions_disagree"] is True
    assert entry["version"] == "12.4.1"
    _, report = check_json("--root", str(root), "--env-file", str(root / "env"))
    (finding,) = [f for f in report["findings"] if f["id"] == "toolkit-version-conflict"]
    assert finding["severity"] == "warning"
    assert finding["message"] == "the toolkit at /usr/local/cuda-12.4 names different releases: version.json 12.4.1, cuda.h 13.0; the checks here use 12.4.1 (from version.json)"


def test_nvcc_ccbin_is_ignored_by_cuda_11_8_and_unknown_for_12_x(cli, check_json):
    facts = facts_of(cli, "toolkit-debian-11.8", "nvcc-ccbin-env.env")
    assert facts["compilers.nvcc_host"]["path"] == "/usr/bin/gcc-11"  # the wrapper, as without NVCC_CCBIN
    assert facts_of(cli, "toolkit-debian-11.8", "append.env")["compilers.nvcc_host"]["via"] == "-ccbin in NVCC_APPEND_FLAGS"
    assert facts_of(cli, "toolkit-conda", "cu124-ccbin-env.env")["compilers.nvcc_host"] == "UNKNOWN"
    _, report = check_json("--root", str(ROOTS / "toolkit-conda"), "--env-file", str(ROOTS / "toolkit-conda/cu124-ccbin-env.env"))
    skipped = {n["rule"]: n["reason"] for n in report["not_checked"]}
    assert "whether CUDA 12.4.131's nvcc reads it is not known" in skipped["host-compiler-unsupported"]


# ----------------------------------------------------------------------------- the live machine
LIVE_NVCC = "/usr/local/cuda/bin/nvcc"
LIVE_GCC12 = "/usr/bin/gcc-12"
live = pytest.mark.skipif(not (os.access(LIVE_NVCC, os.X_OK) and os.access(LIVE_GCC12, os.X_OK)), reason="needs /usr/local/cuda/bin/nvcc and /usr/bin/gcc-12")


def dryrun_compiler(nvcc: str, env: dict[str, str], tmp_path) -> str:
    """The host compiler `nvcc --dryrun` says it would run for a .cu file."""
    source = tmp_path / "t.cu"
    source.write_text("int main() { return 0; }\n")
    base = {k: v for k, v in os.environ.items() if not k.startswith("NVCC_")}
    result = subprocess.run([nvcc, "--dryrun", "-c", str(source), "-o", str(tmp_path / "t.o")], capture_output=True, text=True, timeout=60, env={**base, **env})
    for line in (result.stdout + result.stderr).splitlines():
        match = re.match(r'^#\$ ("?[^" ]*"?/)?(\S*(?:gcc|g\+\+|c\+\+)\S*) ', line)
        if match:
            return (match.group(1) or "").replace('"', "") + match.group(2)
    raise AssertionError(result.stdout + result.stderr)


@live
@pytest.mark.parametrize(
    "env",
    [
        {"NVCC_CCBIN": LIVE_GCC12},
        {"NVCC_PREPEND_FLAGS": f"-ccbin {LIVE_GCC12}"},
        {"NVCC_PREPEND_FLAGS": "-ccbin /usr/bin/x86_64-linux-gnu-gcc-12", "NVCC_APPEND_FLAGS": f"-ccbin {LIVE_GCC12}"},
        {"NVCC_PREPEND_FLAGS": f"-ccbin {LIVE_GCC12}", "NVCC_CCBIN": "/usr/bin/x86_64-linux-gnu-gcc-12"},
    ],
)
def test_the_live_nvcc_runs_the_compiler_the_probe_names(env, tmp_path):
    from fwdoctor.engine import collect
    from fwdoctor.host import Host
    from fwdoctor.probes import compilers, cuda

    base = {k: v for k, v in os.environ.items() if not k.startswith(("NVCC_", "CUDA_HOME", "CUDA_PATH"))}
    host = Host.live_host({**base, **env, "PATH": f"/usr/local/cuda/bin:{base.get('PATH', '/usr/bin:/bin')}"})
    facts = collect(host, (*cuda.PROBES, *compilers.PROBES))
    found = facts["compilers.nvcc_host"]
    assert found["path"] == dryrun_compiler(LIVE_NVCC, env, tmp_path)
    assert found["version"].split(".")[0] == "12"  # gcc-12 -dumpfullversion on the live host


def test_cuda_home_usr_on_debian_is_the_packaged_toolkit(cli):
    facts = facts_of(cli, "toolkit-debian-11.8", "cuda-home-usr.env")
    (tk,) = facts["cuda.toolkits"]
    assert tk["root"] == "/usr/lib/nvidia-cuda-toolkit" and tk["found_via"] == ["nvcc on PATH", "CUDA_HOME"]
    assert facts["cuda.active"]["why"] == "CUDA_HOME" and facts["cuda.pointers"]["cuda_home"] == "/usr/lib/nvidia-cuda-toolkit"


def test_nvidia_apt_toolkit_adds_its_dpkg_record(tmp_path, cli):
    """NVIDIA's own apt repository: /usr/local/cuda-12.4 owned by cuda-nvcc-12-4 (the stanza
    is constructed in dpkg's status format; NVIDIA's repository is not reachable here)."""
    root = tmp_path / "root"
    tk = root / "usr/local/cuda-12.4"
    (tk / "bin").mkdir(parents=True)
    (tk / "bin/nvcc").write_text("")
    (tk / "bin/nvcc").chmod(0o755)
    (tk / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}')
    status = root / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    status.write_text(
        "Package: cuda-toolkit-12-4\nStatus: install ok installed\nVersion: 12.4.1-1\n\n"
        "Package: cuda-nvcc-12-4\nStatus: install ok installed\nVersion: 12.4.131-1\n\n"
        "Package: cuda-nvcc-12-3\nStatus: deinstall ok config-files\nVersion: 12.3.107-1\n"
    )
    (root / "env").write_text("PATH=/usr/local/cuda-12.4/bin:/usr/bin\n")
    data = json.loads(cli("facts", "--root", str(root), "--env-file", str(root / "env")).output)
    (entry,) = data.get("facts", data)["cuda.toolkits"]["value"]
    assert entry["versions"] == {"version.json": "12.4.1", "dpkg cuda-nvcc-12-4": "12.4.131"} and not entry["versions_disagree"]
