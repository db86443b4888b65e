"""Real CPU wheels of JAX (jax + jaxlib 0.10.2), TensorFlow (tensorflow-cpu 2.21.0) and
PaddlePaddle (paddlepaddle 3.3.1, the CPU build: ~195 MB, installed in 21 s here),
installed for real into cached venvs, inspected by a live `fwdoctor check --deep`: the static
probe reads their dist-info and build_info.py, the deep probe imports each in a child. Then the
same venv on a GPU host stand-in (tests/gpuhost: H100 x8, driver 580.95.05) gets the CPU-build
finding with the CUDA install that driver runs.

Slow: the first run installs ~100 MB (jax, measured 37 s here) and ~280 MB (tensorflow-cpu,
57 s) from pip's configured indexes; later runs reuse the venvs
($FWDOCTOR_TEST_CACHE, default ~/.cache/fwdoctor-tests/frameworks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.network, pytest.mark.usefixtures("use_test_kb")]  # network: jax, tensorflow, paddle from PyPI

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("FWDOCTOR_TEST_CACHE") or Path.home() / ".cache" / "fwdoctor-tests") / "frameworks"
FWDOCTOR = [sys.executable, "-m", "fwdoctor"]
VENVS = {"jax": ["jax==0.10.2", "jaxlib==0.10.2"], "tensorflow": ["tensorflow-cpu==2.21.0"], "paddle": ["paddlepaddle==3.3.1"]}


def venv(name: str) -> Path:
    """A venv holding VENVS[name], built once and reused (a `.ready` file marks a finished one)."""
    path = CACHE / name
    if (path / ".ready").exists():
        return path
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--clear", str(path)], check=True, timeout=120)
    result = subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "-q", *VENVS[name]], capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        pytest.skip(f"cannot install {' '.join(VENVS[name])} here: {result.stderr.strip().splitlines()[-1:]}")
    (path / ".ready").write_text(" ".join(VENVS[name]) + "\n")
    return path


@pytest.fixture(scope="session")
def jax_venv() -> Path:
    return venv("jax")


@pytest.fixture(scope="session")
def tf_venv() -> Path:
    return venv("tensorflow")


@pytest.fixture(scope="session")
def paddle_venv() -> Path:
    return venv("paddle")


def facts(python: Path, *extra: str) -> dict:
    env = {**os.environ, "FWDOCTOR_KB": str(REPO / "tests" / "kb")}
    out = subprocess.run([*FWDOCTOR, "facts", "--python", str(python), "--deep", *extra], capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
    assert out.returncode == 0, out.stderr
    return {k: v.get("value") for k, v in json.loads(out.stdout)["facts"].items()}


def test_a_real_jax_cpu_venv_is_read_statically_and_imported_by_deep(jax_venv):
    got = facts(jax_venv / "bin" / "python")
    (item,) = got["frameworks.installed"]
    assert (item["framework"], item["version"], item["packages"], item["gpu_build"]) == ("jax", "0.10.2", {"jax": "0.10.2", "jaxlib": "0.10.2"}, False)
    assert item["pairing"] == {"jaxlib": "<=0.10.2,>=0.10.1"}  # jax-0.10.2.dist-info/METADATA
    deep = got["frameworks.deep"]["jax"]
    assert deep["imported"] and deep["version"] == "0.10.2" and deep["devices"] == [{"platform": "cpu", "kind": "cpu", "id": 0}]
    assert deep["gpu_error"].startswith("RuntimeError: Unknown backend: 'gpu' requested")


def test_a_real_tensorflow_cpu_venv_says_it_is_no_cuda_build_statically_and_at_runtime(tf_venv):
    got = facts(tf_venv / "bin" / "python")
    (item,) = got["frameworks.installed"]
    assert (item["framework"], item["version"], item["packages"], item["gpu_build"], item["cuda"]) == ("tensorflow", "2.21.0", {"tensorflow-cpu": "2.21.0"}, False, None)
    assert item["cuda_extra"]["nvidia-cudnn-cu12"] == "<10.0,>=9.3.0.75"  # its METADATA's and-cuda extra
    deep = got["frameworks.deep"]["tensorflow"]
    assert deep["imported"] and deep["version"] == "2.21.0" and deep["gpu_count"] == 0
    assert deep["runtime_versions"] == {"is_cuda_build": "False"}


def test_the_cpu_jax_venv_on_a_gpu_host_gets_the_cuda13_install(jax_venv, tmp_path):
    gpuhost = pytest.importorskip("gpuhost")
    reason = gpuhost.unavailable_reason()
    if reason:
        pytest.skip(reason)
    argv = [*FWDOCTOR, "check", "--python", str(jax_venv / "bin" / "python"), "--json"]
    scenario = gpuhost.SCENARIOS / "h100x8-r580.json"
    host = gpuhost.parse(json.loads(scenario.read_text()), "h100x8-r580")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LC_ALL": "C", "FWDOCTOR_KB": str(REPO / "tests" / "kb"), "PYTHONPATH": str(REPO / "tests"),
           "FWDOCTOR_RAISE_RULE_ERRORS": "1"}  # the test suite's switch: a rule that raises fails the run
    with gpuhost.started(host, argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        out, err = proc.communicate(timeout=300)
    report = json.loads(out)
    (finding,) = [f for f in report["findings"] if f["id"] == "framework-cpu-build-on-gpu-host"]
    assert finding["message"] == "JAX 0.10.2 is a CPU-only build (jax, jaxlib), but this host has an NVIDIA GPU and driver 580.95.05: nothing will run on the GPU"
    assert finding["fix"]["commands"] == [f"{jax_venv}/bin/python -m pip install -U 'jax[cuda13]==0.10.2'"]


def test_a_real_paddle_cpu_venv_is_read_from_its_version_file_and_imported_by_deep(paddle_venv):
    got = facts(paddle_venv / "bin" / "python")
    (item,) = got["frameworks.installed"]
    assert (item["framework"], item["version"], item["packages"], item["gpu_build"], item["cuda"]) == ("paddle", "3.3.1", {"paddlepaddle": "3.3.1"}, False, None)
    deep = got["frameworks.deep"]["paddle"]
    assert deep["imported"] and deep["version"] == "3.3.1" and deep["gpu_count"] == 0
    assert deep["runtime_versions"] == {"cuda": "False", "cudnn": "False", "compiled_with_cuda": "False"}
    assert deep["devices"] == [{"platform": "cpu", "kind": "cpu", "id": 0}]
