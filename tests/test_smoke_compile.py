"""`smoke kernel --compile-only` with the real nvcc (CUDA 13.0 on the build machine)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from fwdoctor.arch import parse_targets
from fwdoctor.smoke import compile as nvcc_smoke

DATA = Path(__file__).resolve().parent / "data" / "smoke"
NVCC = nvcc_smoke.find_nvcc(dict(os.environ))
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")


def _gpus() -> list[dict]:
    return nvcc_smoke.host_gpus()


@needs_nvcc
def test_nvcc_13_compiles_for_turing_ampere_and_hopper_and_refuses_maxwell(cli):
    if NVCC.release != "13.0":
        pytest.skip(f"the refusal of compute_50 is CUDA 13.0's; this nvcc is {NVCC.release}")
    result = cli("smoke", "kernel", "--compile-only", "--arch", "7.5", "--arch", "8.0", "--arch", "9.0", "--arch", "5.0", "--json")
    assert result.exit_code == 1
    by_test = {r["test"]: r for r in json.loads(result.stdout)["results"]}
    assert [by_test[f"compile sm_{a}"]["status"] for a in ("75", "80", "90")] == ["pass"] * 3
    refused = by_test["compile sm_50"]
    assert refused["status"] == "fail"
    assert "nvcc fatal   : Unsupported gpu architecture 'compute_50'" in refused["message"]
    assert refused["diagnosis"] == "gpu-arch-unsupported-by-toolkit"


@needs_nvcc
def test_text_output_names_the_nvcc_and_points_at_the_explanation(cli):
    if NVCC.release != "13.0":
        pytest.skip("CUDA 13.0 specific")
    result = cli("smoke", "kernel", "--compile-only", "--arch", "sm_70")
    assert result.exit_code == 1
    assert "refused sm_70: nvcc fatal   : Unsupported gpu architecture 'compute_70'" in result.stdout
    assert "fwdoctor explain gpu-arch-unsupported-by-toolkit" in result.stdout


@needs_nvcc
def test_a_ptx_target_is_compiled_as_ptx():
    results = nvcc_smoke.compile_targets(NVCC, parse_targets(["compute_80"]), gpus=[])
    assert results[0].status == "pass"
    assert "arch=compute_80,code=compute_80" in results[0].details["argv"]


@pytest.mark.requires_no_gpu  # a no-GPU path: skipped where a GPU answers
def test_compile_only_without_gpus_or_arch_is_skipped_and_says_what_to_pass(cli):
    if _gpus():
        pytest.skip("this host has GPUs: their architectures are the default")
    result = cli("smoke", "kernel", "--compile-only")
    assert result.exit_code == 0
    assert "[skipped] compile: no GPU found" in result.stdout
    assert "--arch CC" in result.stdout


def test_a_malformed_arch_is_a_doctor_error(cli):
    result = cli("smoke", "kernel", "--compile-only", "--arch", "eight")
    assert result.exit_code == 2
    assert "not an architecture: 'eight'" in result.output


def test_arch_without_compile_only_is_refused(cli):
    result = cli("smoke", "kernel", "--arch", "8.0")
    assert result.exit_code == 2
    assert "--arch only applies with --compile-only" in result.output


def test_nvcc_version_is_read_from_its_banner():
    text = (DATA / "nvcc-13.0-version.txt").read_text()
    assert nvcc_smoke.parse_nvcc_version(text) == ("13.0", "13.0.88")
    assert nvcc_smoke.parse_nvcc_version("garbage\x00\xff") == (None, None)


def test_nvcc_message_is_the_fatal_line():
    text = (DATA / "nvcc-13.0-compute_50.stderr").read_text()
    assert nvcc_smoke.nvcc_message(text) == "nvcc fatal   : Unsupported gpu architecture 'compute_50'"


def _fake_nvcc(folder: Path) -> Path:
    # A stand-in, to test the search order only: it prints the real 13.0 banner.
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    nvcc = bin_dir / "nvcc"
    nvcc.write_text(f"#!/bin/sh\ncat {DATA / 'nvcc-13.0-version.txt'}\n")
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IXUSR)
    return nvcc


def test_cuda_home_wins_over_path(tmp_path):
    home = tmp_path / "cuda-home"
    nvcc = _fake_nvcc(home)
    found = nvcc_smoke.find_nvcc({"CUDA_HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert (found.path, found.found_via, found.release) == (str(nvcc), "CUDA_HOME", "13.0")


def test_path_is_searched_when_cuda_home_has_no_nvcc(tmp_path):
    nvcc = _fake_nvcc(tmp_path / "on-path")
    found = nvcc_smoke.find_nvcc({"CUDA_HOME": str(tmp_path / "empty"), "PATH": str(nvcc.parent)})
    assert (found.path, found.found_via) == (str(nvcc), "PATH")


def test_nvidia_smi_query_lines_become_gpus():
    # Format of `nvidia-smi --query-gpu=index,compute_cap,name --format=csv,noheader`.
    text = "0, 9.0, NVIDIA H200\n1, 9.0, NVIDIA H200\nNo devices were found\n"
    assert nvcc_smoke.parse_query_gpus(text) == [
        {"index": 0, "cc": "9.0", "name": "NVIDIA H200"},
        {"index": 1, "cc": "9.0", "name": "NVIDIA H200"},
    ]


@pytest.mark.requires_gpu
def test_compiled_kernel_runs_on_this_hosts_gpus_with_exact_results(cli):
    gpus = _gpus()
    if not gpus or NVCC is None or shutil.which("nvidia-smi") is None:
        pytest.skip("needs an NVIDIA GPU, nvidia-smi and nvcc")
    result = cli("smoke", "kernel", "--compile-only", "--json")
    results = json.loads(result.stdout)["results"]
    ran = [r for r in results if r["details"].get("ran")]
    assert ran, results
    assert all(r["status"] == "pass" for r in ran), results
    assert all("results exact" in r["message"] for r in ran)
