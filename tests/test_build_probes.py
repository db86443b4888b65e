"""doctor/probes/build*.py read the host only through fwdoctor.host.Host: the whole
pre-flight runs on a root folder (a copied tree, `--root`), where nothing executes, and its
facts go through a facts file (`fwdoctor check --facts`) to the same findings."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts
from fwdoctor.probes import build_python, build_tools
from fwdoctor.probes.build_tools import parse_cmake_version, parse_ninja_version
from fwdoctor.probes.build import BUILD_PROBES
from fwdoctor.recipes import torch_source as ts

FIX = Path(__file__).resolve().parent / "golden" / "build" / "fixtures"
# The exact bytes of libnccl.so.2 from nvidia-nccl-cu13 2.30.7 around its version string.
NCCL_BLOB = b"\x7fELF" + b"\x00" * 4096 + b"\x00\x00NCCL version 2.30.7+cuda13.3\x00NCCL version 2.30.7 compiled with CUDA 13.3\n\x00"
HOST_CONFIG_14 = "#if defined(__GNUC__)\n#if __GNUC__ > 14\n#error -- unsupported GNU version! gcc versions later than 14 are not supported!\n#endif\n#endif\n"


def put(root: Path, rel: str, content: str | bytes = "", mode: int = 0o644) -> Path:
    path = root / rel.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    path.chmod(mode)
    return path


def link(root: Path, rel: str, target: str) -> None:
    path = root / rel.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


@pytest.fixture
def rootfs(tmp_path: Path) -> Path:
    """A Debian-like tree: CUDA 12.8 with host_config.h accepting gcc <= 14, g++ 15 by
    default with g++-14 beside it, cmake without ninja, git, NCCL from a tarball folder
    (cuda13 inside the library), cuDNN as a cu12 pip wheel in a venv with pip, a PyTorch
    checkout, and recorded /proc files."""
    root = tmp_path / "rootfs"
    tk = "/usr/local/cuda-12.8"
    put(root, f"{tk}/version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.8.93"}}))
    put(root, f"{tk}/bin/nvcc", "#!/bin/sh\n", 0o755)
    put(root, f"{tk}/include/cuda_runtime.h", "/* stand-in */\n")
    put(root, f"{tk}/include/crt/host_config.h", HOST_CONFIG_14)
    link(root, "/usr/local/cuda", "cuda-12.8")
    put(root, "/usr/bin/x86_64-linux-gnu-g++-15", "#!/bin/sh\n", 0o755)
    link(root, "/usr/bin/g++-15", "x86_64-linux-gnu-g++-15")
    link(root, "/usr/bin/g++", "g++-15")
    put(root, "/usr/bin/g++-14", "#!/bin/sh\n", 0o755)
    put(root, "/usr/bin/cmake", "#!/bin/sh\n", 0o755)
    put(root, "/usr/bin/git", "#!/bin/sh\n", 0o755)
    put(root, "/opt/nccl_2.30.7/include/nccl.h", (FIX / "nccl-2.30.7-header-excerpt.h").read_text())
    put(root, "/opt/nccl_2.30.7/lib/libnccl.so.2", NCCL_BLOB)
    link(root, "/opt/nccl_2.30.7/lib/libnccl.so", "libnccl.so.2")
    venv = "/home/ml/venv"
    put(root, f"{venv}/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.9\n")
    put(root, f"{venv}/bin/python", "#!/bin/sh\n", 0o755)
    site = f"{venv}/lib/python3.11/site-packages"
    put(root, f"{site}/pip-24.0.dist-info/METADATA", "Name: pip\n")
    put(root, f"{site}/nvidia/cudnn/include/cudnn_version.h", (FIX / "cudnn_version-9.24.0-excerpt.h").read_text())
    put(root, f"{site}/nvidia/cudnn/lib/libcudnn.so.9", b"\x7fELF")
    put(root, f"{site}/nvidia_cudnn_cu12-9.24.0.43.dist-info/METADATA", "Name: nvidia-cudnn-cu12\n")
    put(root, "/home/ml/pytorch/setup.py", "# stand-in\n")
    put(root, "/home/ml/pytorch/version.txt", "2.10.0a0\n")
    put(root, "/proc/meminfo", "MemTotal:       65536000 kB\nMemAvailable:   33554432 kB\n")
    put(root, "/proc/cpuinfo", "".join(f"processor\t: {i}\nmodel name\t: x\n\n" for i in range(12)))
    return root


def request(**changes) -> list[Fact]:
    values = {
        "torch": None, "cuda": "12.8", "nccl": "/opt/nccl_2.30.7", "cudnn": "/home/ml/venv/lib/python3.11/site-packages",
        "arch": "8.0;9.0+PTX", "python": "/home/ml/venv/bin/python", "workdir": "/scratch/build", "source": "/home/ml/pytorch",
        "git": None, "jobs": None, "ccache": False, "debug": False, "cmake_only": False,
    }
    values.update(changes)
    return [Fact(f"request.build.{key}", value, source="test") for key, value in values.items()]


def probe_root(root: Path, **changes) -> Facts:
    return collect(Host.at_root(root, {"PATH": "/usr/local/bin:/usr/bin:/bin"}), BUILD_PROBES, seed=request(**changes))


def test_a_root_folder_gives_every_build_fact_without_running_anything(rootfs):
    facts = probe_root(rootfs)
    assert facts.failures == []
    assert facts["build.torch"] == "2.10.0"  # the checkout's version.txt names its next release
    assert facts["build.toolkit"] == {
        "root": "/usr/local/cuda-12.8", "nvcc": "/usr/local/cuda-12.8/bin/nvcc", "release": "12.8", "gpu_archs": None,
        "host_gcc_min": None, "host_gcc_max": 14, "host_config": "/usr/local/cuda-12.8/include/crt/host_config.h"}
    assert facts["build.host_cxx"] == {"path": "/usr/bin/g++", "version": "15", "from": "g++ on PATH"}
    assert facts["build.gxx_installed"] == [{"path": "/usr/bin/g++-14", "version": "14"}]
    assert facts["build.cmake"] == {"path": "/usr/bin/cmake", "version": None} and facts["build.ninja"] is None
    assert facts["build.git"] == "/usr/bin/git" and facts["build.ccache"] is None
    assert facts["build.nccl"]["cuda_major"] == 13 and facts["build.nccl"]["version"] == "2.30.7"
    assert facts["build.nccl"]["library_file"] == "/opt/nccl_2.30.7/lib/libnccl.so.2"
    assert facts["build.cudnn"]["cuda_major"] == 12 and facts["build.cudnn"]["cuda_major_source"] == "nvidia_cudnn_cu12-9.24.0.43.dist-info"
    assert facts["build.python"] == {"executable": "/home/ml/venv/bin/python", "version": "3.11.9", "prefix": "/home/ml/venv",
                                     "base_prefix": None, "isolated": True, "has_pip": True, "error": ""}
    assert facts["build.cores"] == 12 and facts["build.mem_available_bytes"] == 33554432 * 1024
    assert not facts.known("build.disk_free") and "not the target machine's" in facts.why("build.disk_free")


def test_the_preflight_judges_a_root_folder(rootfs, test_kb):
    report = ts.preflight(probe_root(rootfs), test_kb)
    by_id = {}
    for finding in report.findings:
        by_id.setdefault(finding.id, []).append(finding)
    assert [f.message for f in by_id["nccl-cuda-mismatch"]] == [
        'NCCL 2.30.7 at /opt/nccl_2.30.7/lib/libnccl.so.2 is built for CUDA 13 ("NCCL version 2.30.7+cuda13.3" in libnccl.so.2), the toolkit is CUDA 12.8']
    assert by_id["host-compiler-unsupported"][0].evidence["using"] == "/usr/bin/g++-14"  # g++ 15 swapped for g++-14
    assert {f.evidence["install"] for f in by_id["build-tool-installed"]} == {"cmake>=3.27", "ninja"}
    assert any("build-disk-low" in f.message for f in by_id["build-not-checked"])
    assert "cudnn-cuda-mismatch" not in by_id  # a cu12 wheel with CUDA 12.8


def test_root_facts_judge_the_same_through_a_facts_file_and_the_check_command(rootfs, tmp_path, test_kb, cli, use_test_kb):
    facts = probe_root(rootfs)
    saved = tmp_path / "build.json"
    saved.write_text(json.dumps(facts.to_json()))
    direct = ts.preflight(facts, test_kb)
    again = ts.preflight(Facts.from_json(json.loads(saved.read_text())), test_kb)
    assert [(f.id, f.message) for f in again.findings] == [(f.id, f.message) for f in direct.findings]
    # `fwdoctor check --facts` judges the build-only ids too (the shared ids it judges for the host).
    result = cli("check", "--json", "--facts", str(saved))
    report = json.loads(result.output)
    from_check = {(f["id"], f["message"]) for f in report["findings"] if f["area"] == "build"}
    assert from_check == {(f.id, f.message) for f in direct.findings if f.area == "build"}
    assert {"build-tool-installed", "build-not-checked"} <= {i for i, _ in from_check}


def test_cuda_given_as_a_path_inside_a_root_and_a_wrapper_that_is_no_toolkit(rootfs):
    facts = probe_root(rootfs, cuda="/usr/local/cuda/bin/nvcc")
    assert facts["build.toolkit"]["root"] == "/usr/local/cuda"
    put(rootfs, "/usr/local/bin/nvcc", "#!/bin/sh\nexec /usr/local/cuda-12.8/bin/nvcc \"$@\"\n", 0o755)
    facts = probe_root(rootfs, cuda="/usr/local/bin/nvcc")
    assert facts.why("build.toolkit") == "--cuda /usr/local/bin/nvcc: /usr/local has no include/cuda_runtime.h; give the toolkit's root (e.g. /usr/local/cuda-12.8)"


def test_options_that_name_nothing_usable_are_unknown_inputs_with_the_reason(rootfs):
    facts = probe_root(rootfs, cuda="12.99", arch="8.0;ampere", nccl="none", cudnn="/opt/missing", source="/home", torch="latest")
    assert facts.why("build.toolkit").startswith("--cuda 12.99: no such toolkit installed (found: 12.8 at /usr/local/cuda-12.8)")
    assert facts.why("build.arch").startswith("--arch 8.0;ampere: not an architecture: 'ampere'")
    assert facts.why("build.nccl").startswith("--nccl none: not supported")
    assert facts.why("build.cudnn") == "--cudnn /opt/missing: not a directory (expected a version, a path or 'bundled')"
    assert facts.why("build.source") == "--source /home: no setup.py there (expected a PyTorch checkout)"
    with pytest.raises(ts.InputError, match="--source /home: no setup.py there"):
        ts.check_inputs(facts)
    assert probe_root(rootfs, torch="latest").why("build.torch") == "--version latest: not a version (expected e.g. 2.9.1)"


def test_a_system_python_without_pip_under_a_root(rootfs):
    put(rootfs, "/usr/bin/python3.11", "#!/bin/sh\n", 0o755)
    link(rootfs, "/usr/bin/python3", "python3.11")
    (rootfs / "usr/lib/python3.11/site-packages").mkdir(parents=True)
    facts = probe_root(rootfs, python="/usr/bin/python3")
    assert facts["build.python"]["isolated"] is False and facts["build.python"]["has_pip"] is False


# --------------------------------------------------------------------------- live host
def test_a_python_that_is_not_python_is_reported_not_crashed(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    facts = collect(Host.live_host(), build_python.PROBES, seed=[Fact("request.build.python", str(fake))])
    assert facts["build.python"]["error"] == "it did not answer a version probe (not a Python interpreter?)"


def test_the_test_interpreter_is_a_venv_with_pip():
    facts = collect(Host.live_host(), build_python.PROBES, seed=[Fact("request.build.python", sys.executable)])
    value = facts["build.python"]
    assert value["error"] == "" and value["has_pip"] is True
    assert value["isolated"] is (sys.prefix != sys.base_prefix or os.path.isdir(os.path.join(sys.prefix, "conda-meta")))
    assert value["version"] == ".".join(map(str, sys.version_info[:3]))


# ----------------------------------------------------------------------------- cmake, ninja
DRIVER_DATA = Path(__file__).resolve().parent / "data" / "driver"


def test_cmake_and_ninja_versions_are_read_from_their_output():
    assert parse_cmake_version((DRIVER_DATA / "cmake-version-3.25.1.txt").read_text()) == "3.25.1"
    assert parse_ninja_version((DRIVER_DATA / "ninja-version-1.11.1.txt").read_text()) == "1.11.1"
    assert parse_cmake_version("cmake3 version 3.20.2\n") == "3.20.2"
    assert parse_cmake_version("ninja: error\n") is None
    assert parse_ninja_version("cmake version 3.25.1\n") is None


def _programs(path: Path, timeout: float) -> Facts:
    host = Host.live_host({"PATH": f"{path}:/usr/bin:/bin"}, command_timeout=timeout)
    return collect(host, (build_tools.build_programs,), seed=[Fact("request.build.python", "")])


def _fake(folder: Path, name: str, body: str) -> None:
    (folder / name).write_text(f"#!/bin/sh\n{body}\n")
    (folder / name).chmod(0o755)


def test_inside_a_root_cmake_is_found_but_not_run(tmp_path):
    put(tmp_path, "usr/bin/cmake", "#!/bin/sh\necho should never run\n", 0o755)
    facts = collect(Host.at_root(tmp_path, {"PATH": "/usr/bin"}), (build_tools.build_programs,), seed=[Fact("request.build.python", "")])
    assert facts["build.cmake"] == {"path": "/usr/bin/cmake", "version": None}
    assert facts["build.ninja"] is None
    assert not facts.failures


def test_a_hung_cmake_is_a_probe_failure_with_no_version_and_ninja_still_comes(tmp_path):
    _fake(tmp_path, "cmake", "exec sleep 600")
    _fake(tmp_path, "ninja", "echo 1.11.1")
    facts = _programs(tmp_path, timeout=0.5)
    assert facts["build.cmake"] == {"path": str(tmp_path / "cmake"), "version": None}
    assert any(f.probe == "build-programs" and "timeout" in f.reason for f in facts.failures)
    assert facts["build.ninja"]["version"] == "1.11.1"


def test_cmake_printing_garbage_is_unparseable_output(tmp_path):
    _fake(tmp_path, "cmake", "echo '\\377 garbage'")
    facts = _programs(tmp_path, timeout=5)
    assert facts["build.cmake"]["version"] is None
    assert any("unparseable output" in f.reason for f in facts.failures)

