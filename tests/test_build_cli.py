"""`fwdoctor build torch` through the CLI on this host, and the input errors it must
explain. (The proof script the plan runs after installing the wheel: test_build_scripts.py.)"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from pathlib import Path

import pytest

from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.libraries import NCCL
from fwdoctor.model import Fact
from fwdoctor.probes import build_arch, build_libs, build_toolkit, gpus

NVCC = "/usr/local/cuda-13.0/bin/nvcc"
needs_nvcc = pytest.mark.skipif(not os.access(NVCC, os.X_OK), reason=f"needs the CUDA 13.0 nvcc at {NVCC}")
pytestmark = pytest.mark.usefixtures("roomy_host")


@needs_nvcc
def test_dry_run_prints_a_plan_that_names_the_chosen_toolkit_and_python(cli, tmp_path):
    work = tmp_path / "w d"
    result = cli("build", "torch", "--version", "2.9.1", "--cuda", "13.0", "--nccl", "2.28.3", "--cudnn", "9.14.0.64",
                 "--arch", "8.0;9.0+PTX", "--python", sys.executable, "--workdir", str(work))
    assert result.exit_code == 0, result.output
    assert "export CMAKE_CUDA_COMPILER=/usr/local/cuda-13.0/bin/nvcc" in result.output
    assert f"export Python_EXECUTABLE={sys.executable}" in result.output
    assert "nvidia-nccl-cu13==2.28.3" in result.output and "nvidia-cudnn-cu13==9.14.0.64" in result.output
    assert not work.exists()  # a dry run creates nothing


@needs_nvcc
def test_json_output_holds_the_findings_and_the_plan(cli, tmp_path):
    result = cli("build", "torch", "--version", "2.9.1", "--cuda", NVCC, "--arch", "8.0", "--python", sys.executable,
                 "--workdir", str(tmp_path / "w"), "--json")
    data = json.loads(result.output)
    assert data["plan"]["recipe"] == "torch-source"
    assert data["plan"]["env"]["USE_SYSTEM_NCCL"] == "0"  # --nccl defaults to bundled
    assert all(f["severity"] != "error" for f in data["findings"])


@needs_nvcc
def test_a_refused_build_exits_1_and_lists_every_error(cli, tmp_path):
    result = cli("build", "torch", "--version", "2.9.1", "--cuda", "13.0", "--nccl", "2.27.5", "--arch", "6.0",
                 "--python", sys.executable, "--workdir", str(tmp_path / "w"))
    assert result.exit_code == 1
    assert "gpu-arch-unsupported-by-toolkit" in result.output and "build-no-wheel" in result.output
    assert "nothing was run" in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cuda", "12.99"], "--cuda 12.99: no such toolkit installed"),
        (["--cuda", "/nonexistent/cuda"], "--cuda /nonexistent/cuda: no executable"),
        (["--cuda", "twelve"], "expected a version like 12.8"),
        (["--arch", "8.0;ampere"], "--arch 8.0;ampere: not an architecture: 'ampere'"),
        (["--version", "latest"], "--version latest: not a version"),
        (["--nccl", "none"], "--nccl none: not supported"),
        (["--nccl", "/nonexistent/nccl"], "--nccl /nonexistent/nccl: not a directory"),
        (["--jobs", "-3"], "--jobs -3: expected a positive number"),
        (["--source", "/"], "--source /: no setup.py there"),
    ],
)
@needs_nvcc
def test_unusable_options_exit_2_with_one_clear_line(cli, tmp_path, args, message):
    base = {"--version": "2.9.1", "--cuda": "13.0", "--arch": "8.0", "--python": sys.executable, "--workdir": str(tmp_path / "w")}
    argv = ["build", "torch"]
    for key, value in base.items():
        if key not in args:
            argv += [key, value]
    result = cli(*argv, *args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_pip_layout_folder_is_read_as_an_nccl_install():
    site = Path(sysconfig.get_paths()["purelib"])
    if not (site / "nvidia" / "nccl" / "lib" / "libnccl.so.2").exists():
        pytest.skip(f"needs the nvidia-nccl-cu13 wheel in {site}")
    lib = build_libs.at_path(Host.live_host(), "nccl", str(site))  # site-packages itself: nvidia/nccl is found inside
    assert lib["kind"] == "path" and lib["library_file"].endswith("libnccl.so.2")
    assert lib["version"] == NCCL.parse_header((site / "nvidia" / "nccl" / "include" / "nccl.h").read_text())
    assert lib["cuda_major"] == 13 and "NCCL version" in lib["cuda_major_source"]


# --------------------------------------------------------------------------- real GPU only
def _gpu_ccs() -> list[str]:
    from fwdoctor import runner

    res = runner.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], timeout=30)
    return [line.strip() for line in res.stdout.splitlines() if line.strip()] if res.ok else []


@pytest.mark.requires_gpu
def test_arch_auto_on_a_gpu_host_builds_for_exactly_its_gpus():
    ccs = _gpu_ccs()
    if not ccs:
        pytest.skip("no NVIDIA GPU visible (nvidia-smi gave no compute capability)")
    facts = collect(Host.live_host(), (*gpus.PROBES, *build_arch.PROBES), seed=[Fact("request.build.arch", "auto")])
    assert facts["build.arch"]["list"] == build_arch.arch_list_from_ccs(ccs)
    assert facts["build.arch"]["from"].startswith("host GPUs")


@needs_nvcc
def test_an_nvcc_wrapper_outside_a_toolkit_is_not_taken_for_a_toolkit_root(tmp_path):
    wrapper = tmp_path / "bin" / "nvcc"  # like /usr/local/bin/nvcc: `exec /usr/local/cuda-13.0/bin/nvcc "$@"`
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {NVCC} "$@"\n')
    wrapper.chmod(0o755)
    with pytest.raises(build_toolkit.NotAToolkit, match="has no include/cuda_runtime.h"):
        build_toolkit.at_path(Host.live_host(env={}), str(wrapper))


@needs_nvcc
def test_docker_takes_a_stack_file_and_builds_in_its_cuda_devel_image():
    from click.testing import CliRunner

    from fwdoctor.cli import main

    repo = Path(__file__).resolve().parents[1]
    result = CliRunner().invoke(main, ["build", "torch", "--version", "2.9.1", "--cuda", "13.0", "--arch", "9.0",
                                       "--python", sys.executable, "--docker", str(repo / "stacks" / "cu130-py312.yaml")])
    assert "nvidia/cuda:13.0.2-devel-ubuntu24.04" in result.output
    cpu = CliRunner().invoke(main, ["build", "torch", "--version", "2.9.1", "--cuda", "13.0", "--arch", "9.0",
                                    "--python", sys.executable, "--docker", str(repo / "stacks" / "cpu-py311.yaml")])
    assert cpu.exit_code == 2 and "CPU stack has no CUDA devel image" in cpu.output
