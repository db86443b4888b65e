"""The scripts the recipes hand to another interpreter live as real files in
recipes/scripts/: each is compiled here and run for what it is meant to tell apart. The
proof script `fwdoctor build torch` runs inside the freshly built torch (verify_torch.py)
runs against the torch installed in the test interpreter."""

from __future__ import annotations

import json
import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

from fwdoctor.libraries import CUDNN
from fwdoctor.recipes import torch_source as ts

SCRIPTS = Path(__file__).resolve().parents[1] / "recipes" / "scripts"
VERIFY = SCRIPTS / "verify_torch.py"


def test_the_recipes_pass_on_the_files_text_exactly():
    from fwdoctor.recipes import cuda_toolkit, env, lockfile, scripts, torch_wheel

    assert scripts.FOLDER == SCRIPTS
    assert ts.VERIFY_SCRIPT == VERIFY.read_text()
    assert cuda_toolkit._CHECK_NVCC == (SCRIPTS / "nvcc_release.py").read_text()
    assert cuda_toolkit._COMPILE == (SCRIPTS / "nvcc_verify.py").read_text()
    assert env._NOT_INSTALLED == (SCRIPTS / "not_installed.py").read_text()
    assert lockfile._PIP_WRAPPER == (SCRIPTS / "pip_with_markers.py").read_text()
    assert torch_wheel._CHECK == (SCRIPTS / "torch_check.py").read_text()


@pytest.mark.parametrize("script", sorted(SCRIPTS.glob("*.py")), ids=lambda p: p.name)
def test_every_python_script_compiles(script, tmp_path):
    py_compile.compile(str(script), cfile=str(tmp_path / "out.pyc"), doraise=True)


def test_the_plan_writes_the_proof_script_byte_for_byte():
    from build_facts import build_facts
    from fwdoctor.kb import KB

    _, bp = ts.make_plan(build_facts(), KB())
    (written,) = [f for f in bp.files if f.path.endswith("verify_build.py")]
    assert written.content == VERIFY.read_text() and written.mode == 0o755


# --------------------------------------------------------------------------- helper scripts, run
def _run(name: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = None if env is None else {**os.environ, **env}
    return subprocess.run([sys.executable, str(SCRIPTS / name), *args], capture_output=True, text=True, timeout=300, env=full, cwd=cwd)


def test_the_distribution_checks_tell_installed_from_absent_and_the_version():
    from importlib.metadata import version

    pip = version("pip")
    assert _run("not_installed.py", "fwdoctor-absent-dist").returncode == 0
    assert _run("not_installed.py", "pip").returncode == 1
    assert _run("has_version.py", "pip", pip).returncode == 0
    assert _run("has_version.py", "pip", pip + ".post99").returncode == 1
    assert _run("has_version.py", "fwdoctor-absent-dist", "1.0").returncode == 1


def test_append_line_adds_the_line_under_an_undo_comment_and_keeps_the_file(tmp_path):
    activate = tmp_path / "activate"
    activate.write_text("export A=1")
    assert _run("append_line.py", str(activate), "export CUDA_HOME=/usr/local/cuda-13.0").returncode == 0
    assert activate.read_text() == "export A=1\n# added by fwdoctor (remove this and the next line to undo)\nexport CUDA_HOME=/usr/local/cuda-13.0\n"


def test_pip_sees_the_target_interpreters_markers_not_its_own(tmp_path):
    # Offline: an empty --find-links folder. A requirement only for Python < 3.8 is skipped
    # with this interpreter's markers, and looked for (and not found) with a 3.7 target's.
    args = ("install", "--dry-run", "--no-index", "--find-links", str(tmp_path), "--isolated", "fwdoctor-absent-pkg; python_version < '3.8'")
    own = _run("pip_with_markers.py", *args, env={"FWDOCTOR_TARGET_MARKERS": "{}"})
    target = _run("pip_with_markers.py", *args, env={"FWDOCTOR_TARGET_MARKERS": '{"python_version": "3.7"}'})
    assert own.returncode == 0 and "Ignoring fwdoctor-absent-pkg" in own.stdout
    assert target.returncode != 0 and "No matching distribution found for fwdoctor-absent-pkg" in target.stderr


def test_the_torch_check_accepts_the_installed_torch_and_names_a_mismatch():
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__.split('+')[0], torch.version.cuda or 'none')"],
                           capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        pytest.skip(f"needs torch in the test interpreter: {probe.stderr.strip().splitlines()[-1:]}")
    version, cuda = probe.stdout.split()
    good = _run("torch_check.py", version, cuda, "nogpu")
    assert good.returncode == 0 and good.stdout.startswith(f"torch {version}")
    bad = _run("torch_check.py", "1.0.0", cuda, "nogpu")
    assert bad.returncode == 1 and f"expected torch 1.0.0 with CUDA {cuda}" in bad.stdout


NVCC = "/usr/local/cuda-13.0/bin/nvcc"
needs_nvcc = pytest.mark.skipif(not os.access(NVCC, os.X_OK), reason=f"needs the CUDA 13.0 nvcc at {NVCC}")


@needs_nvcc
def test_the_nvcc_release_check_reads_nvcc_itself():
    assert _run("nvcc_release.py", NVCC, "13.0").returncode == 0
    wrong = _run("nvcc_release.py", NVCC, "12.8")
    assert wrong.returncode == 1 and "cuda_13.0" in wrong.stdout  # the last line of `nvcc --version`
    assert _run("nvcc_release.py", "/nonexistent/nvcc", "13.0").returncode == 1


@needs_nvcc
@pytest.mark.slow
def test_the_nvcc_proof_compiles_and_links_a_kernel_and_reports_a_bad_arch():
    ok = _run("nvcc_verify.py", NVCC, "compile", "-gencode", "arch=compute_80,code=sm_80")
    assert ok.returncode == 0 and "compiled and linked" in ok.stdout
    bad = _run("nvcc_verify.py", NVCC, "compile", "-gencode", "arch=compute_50,code=sm_50")
    assert bad.returncode != 0 and "nvcc failed" in bad.stdout and "compute_50" in bad.stdout


# --------------------------------------------------------------------------- the proof script, run
def _torch_facts():
    code = "import json, torch; print(json.dumps({'cuda': torch.version.cuda, 'nccl': '.'.join(map(str, torch.cuda.nccl.version())), 'cudnn': torch.backends.cudnn.version(), 'flags': torch._C._cuda_getArchFlags().split()}))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        pytest.skip(f"needs a CUDA build of torch in the test interpreter: {res.stderr.strip().splitlines()[-1:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _verify(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Run from a folder of its own, as the plan does (never beside a torch/ source folder).
    return subprocess.run([sys.executable, str(VERIFY), *args], capture_output=True, text=True, timeout=300, cwd=tmp_path)


def _cudnn_text(code: int) -> str:
    return str(CUDNN.version_code.decode(code))


@pytest.mark.slow
def test_the_proof_script_passes_for_the_torch_that_matches(tmp_path):
    facts = _torch_facts()
    arch = ";".join(f"{f[3:-1]}.{f[-1]}" for f in facts["flags"] if f.startswith("sm_") and f[3:].isdigit())
    res = _verify(tmp_path, "--cuda", facts["cuda"], "--nccl", facts["nccl"], "--cudnn", _cudnn_text(facts["cudnn"]), "--arch", arch)
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert out["problems"] == [] and out["cuda"] == facts["cuda"] and out["nccl"] == facts["nccl"]
    assert out["arch_flags"] == facts["flags"]


@pytest.mark.slow
def test_the_proof_script_fails_and_says_why_for_a_different_nccl_cuda_and_arch(tmp_path):
    facts = _torch_facts()
    res = _verify(tmp_path, "--cuda", "12.8", "--nccl", "2.27.5", "--arch", "3.7+PTX")
    assert res.returncode == 1
    problems = json.loads(res.stdout)["problems"]
    assert any(p == f"torch.version.cuda is {facts['cuda']}, wanted 12.8" for p in problems)
    assert any(p.startswith("torch.cuda.nccl.version() is " + facts["nccl"]) for p in problems)
    assert any("sm_37 missing" in p for p in problems) and any("compute_37 (PTX) missing" in p for p in problems)


def test_the_proof_script_refuses_to_run_without_the_request(tmp_path):
    res = _verify(tmp_path)
    assert res.returncode == 2 and "--cuda" in res.stderr


@pytest.mark.requires_gpu
@pytest.mark.slow
def test_the_proof_script_runs_its_gpu_smoke_tests_where_a_gpu_exists(tmp_path):
    from fwdoctor import runner

    smi = runner.run(["nvidia-smi", "-L"], timeout=60)
    if not smi.ok or not smi.stdout.strip():
        pytest.skip("no NVIDIA GPU visible")
    facts = _torch_facts()
    res = _verify(tmp_path, "--cuda", facts["cuda"], "--cudnn", _cudnn_text(facts["cudnn"]), "--arch", "")
    out = json.loads(res.stdout)
    if out.get("smoke", "").startswith("skipped"):
        pytest.skip("torch sees no GPU here (driver too old for its CUDA?)")
    assert res.returncode == 0, out["problems"]
    assert out["conv"] == [1, 8, 14, 14] and isinstance(out["matmul"], float)
