"""`fwdoctor build torch` through the CLI on this host, the input errors it must explain,
and the proof script the plan runs after installing the wheel (run here against the torch
installed in the test interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from fwdoctor.probes import libscan
from fwdoctor.recipes import buildenv as be
from fwdoctor.recipes import torch_source as ts

NVCC = "/usr/local/cuda-13.0/bin/nvcc"
needs_nvcc = pytest.mark.skipif(not os.access(NVCC, os.X_OK), reason=f"needs the CUDA 13.0 nvcc at {NVCC}")


@pytest.fixture(autouse=True)
def roomy_host(monkeypatch):
    """Free disk and memory are the machine's and change under us; these tests are about
    other things, so the resource probes report a roomy host (the checks themselves are
    tested in test_build_env.py)."""
    monkeypatch.setattr(ts, "_disk_free", lambda path: 500 * be.GIB)
    monkeypatch.setattr(ts, "_mem_available", lambda: 64 * be.GIB)


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


def test_arch_auto_without_a_gpu_asks_for_an_explicit_list():
    def no_smi(argv, **kw):
        return ts.runner.CommandResult(tuple(argv), None, "", "", error="not found")

    with pytest.raises(ts.InputError, match=r"no GPU found.*--arch '8.0;9.0\+PTX'"):
        ts.resolve_arch("auto", run=no_smi)


def test_arch_auto_uses_the_compute_capabilities_nvidia_smi_reports():
    def smi(argv, **kw):  # the output format of `nvidia-smi --query-gpu=compute_cap --format=csv,noheader`
        return ts.runner.CommandResult(tuple(argv), 0, "9.0\n9.0\n8.6\n", "")

    assert ts.resolve_arch("auto", run=smi) == ("8.6;9.0", "host GPUs (9.0, 9.0, 8.6)")


def test_a_python_that_is_not_python_is_reported_not_crashed(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    env = ts.probe_python(str(fake))
    assert env.error == "it did not answer a version probe (not a Python interpreter?)"


def test_a_pip_layout_folder_is_read_as_an_nccl_install():
    site = Path(sysconfig.get_paths()["purelib"])
    if not (site / "nvidia" / "nccl" / "lib" / "libnccl.so.2").exists():
        pytest.skip(f"needs the nvidia-nccl-cu13 wheel in {site}")
    lib = ts.lib_at_path("nccl", str(site))  # site-packages itself: nvidia/nccl is found inside
    assert lib.kind == "path" and lib.library_file.endswith("libnccl.so.2")
    assert lib.version == libscan.parse_nccl_header((site / "nvidia" / "nccl" / "include" / "nccl.h").read_text())
    assert lib.cuda_major == 13 and "NCCL version" in lib.cuda_major_source


# --------------------------------------------------------------------------- the proof script
def _torch_facts():
    code = "import json, torch; print(json.dumps({'cuda': torch.version.cuda, 'nccl': '.'.join(map(str, torch.cuda.nccl.version())), 'cudnn': torch.backends.cudnn.version(), 'flags': torch._C._cuda_getArchFlags().split()}))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        pytest.skip(f"needs a CUDA build of torch in the test interpreter: {res.stderr.strip().splitlines()[-1:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _verify(tmp_path, *args):
    script = tmp_path / "verify_build.py"
    script.write_text(ts.VERIFY_SCRIPT)
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=300, cwd=tmp_path)


def _cudnn_text(code: int) -> str:
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}" if code >= 90000 else f"{code // 1000}.{code // 100 % 10}.{code % 100}"


@pytest.mark.slow
def test_the_proof_script_passes_for_the_torch_that_matches(tmp_path):
    facts = _torch_facts()
    arch = ";".join(f"{f[3:-1]}.{f[-1]}" for f in facts["flags"] if f.startswith("sm_") and f[3:].isdigit())
    res = _verify(tmp_path, "--cuda", facts["cuda"], "--nccl", facts["nccl"], "--cudnn", _cudnn_text(facts["cudnn"]), "--arch", arch)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["problems"] == []


@pytest.mark.slow
def test_the_proof_script_fails_and_says_why_for_a_different_nccl_cuda_and_arch(tmp_path):
    facts = _torch_facts()
    res = _verify(tmp_path, "--cuda", "12.8", "--nccl", "2.27.5", "--arch", "3.7+PTX")
    assert res.returncode == 1
    problems = json.loads(res.stdout)["problems"]
    assert any("torch.version.cuda" in p for p in problems)
    assert any("torch.cuda.nccl.version() is " + facts["nccl"] in p for p in problems)
    assert any("sm_37 missing" in p for p in problems)


# --------------------------------------------------------------------------- real GPU only
def _gpu_ccs() -> list[str]:
    res = ts.runner.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], timeout=30)
    return [line.strip() for line in res.stdout.splitlines() if line.strip()] if res.ok else []


@pytest.mark.gpu
def test_arch_auto_on_a_gpu_host_builds_for_exactly_its_gpus():
    ccs = _gpu_ccs()
    if not ccs:
        pytest.skip("no NVIDIA GPU visible (nvidia-smi gave no compute capability)")
    arch_list, arch_from = ts.resolve_arch("auto")
    assert arch_list == be.arch_list_from_ccs(ccs)
    assert arch_from.startswith("host GPUs")


@pytest.mark.gpu
@pytest.mark.slow
def test_the_proof_script_runs_its_gpu_smoke_tests_where_a_gpu_exists(tmp_path):
    if not _gpu_ccs():
        pytest.skip("no NVIDIA GPU visible")
    facts = _torch_facts()
    res = _verify(tmp_path, "--cuda", facts["cuda"], "--cudnn", _cudnn_text(facts["cudnn"]), "--arch", "")
    out = json.loads(res.stdout)
    if out.get("smoke", "").startswith("skipped"):
        pytest.skip("torch sees no GPU here (driver too old for its CUDA?)")
    assert res.returncode == 0, out["problems"]
    assert out["conv"] == [1, 8, 14, 14]


@needs_nvcc
def test_an_nvcc_wrapper_outside_a_toolkit_is_not_taken_for_a_toolkit_root(tmp_path):
    wrapper = tmp_path / "bin" / "nvcc"  # like /usr/local/bin/nvcc: `exec /usr/local/cuda-13.0/bin/nvcc "$@"`
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {NVCC} "$@"\n')
    wrapper.chmod(0o755)
    with pytest.raises(ts.InputError, match="has no include/cuda_runtime.h"):
        ts.find_toolkit(str(wrapper), env={})


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
