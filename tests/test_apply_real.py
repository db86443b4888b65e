"""Applying plans for real, against local stand-ins served on 127.0.0.1 (no internet):

- the pip-method CUDA toolkit (NVIDIA's real 13.0 wheels from this machine's package
  store) installed into a prefix, then a real nvcc compile with it; a second apply is a
  no-op;
- the runfile method with a stand-in runfile (tests/data/recipes/README.md), and a
  checksum mismatch that stops before anything is written;
- torch 2.13.0+cpu (the real wheel in /opt/wheels) installed into a fresh venv from a
  PEP 503 index, then verified by importing it.
These are the slow tests (a venv, ~300 MB of wheels); each is skipped with a reason when
its inputs are not on this machine.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("use_test_kb")]  # plans from the frozen tests/kb

DATA = Path(__file__).resolve().parent / "data" / "recipes"
PYPI = Path("/opt/pypi")
TORCH_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
REAL_NVCC = Path("/usr/local/cuda/bin/nvcc")
TORCH_DEPS = ("filelock", "typing-extensions", "setuptools", "sympy", "networkx", "jinja2", "fsspec", "mpmath", "markupsafe")
TOOLKIT_WHEELS = ("nvidia-cuda-nvcc", "nvidia-cuda-runtime", "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-cccl")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _serve(root: Path):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """A PEP 503 index on 127.0.0.1: this machine's real wheels, plus the CPU torch wheel."""
    if not (PYPI / "simple").is_dir():
        pytest.skip("no local wheel store at /opt/pypi on this machine")
    root = tmp_path_factory.mktemp("index")
    files = root / "files"
    files.mkdir()
    for wheel in (PYPI / "files").iterdir():
        (files / wheel.name).symlink_to(wheel)
    for project in (*TORCH_DEPS, *TOOLKIT_WHEELS):
        src = PYPI / "simple" / project
        if src.is_dir():
            (root / "simple" / project).mkdir(parents=True)
            shutil.copy(src / "index.html", root / "simple" / project / "index.html")
    if TORCH_WHEEL.exists():
        (files / TORCH_WHEEL.name).symlink_to(TORCH_WHEEL)
        digest = hashlib.sha256(TORCH_WHEEL.read_bytes()).hexdigest()
        (root / "simple" / "torch").mkdir(parents=True)
        href = f"../../files/{TORCH_WHEEL.name.replace('+', '%2B')}#sha256={digest}"
        (root / "simple" / "torch" / "index.html").write_text(f'<!DOCTYPE html><html><body><a href="{href}">{TORCH_WHEEL.name}</a></body></html>\n')
    httpd, url = _serve(root)
    yield f"{url}/simple"
    httpd.shutdown()


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """HOME in a temp dir (logs, downloads, env snippets) and pip without this machine's
    config (its find-links / extra indexes), so only our 127.0.0.1 index is used."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    monkeypatch.setenv("PIP_NO_INPUT", "1")
    return tmp_path


def test_the_pip_method_installs_nvcc_into_a_prefix_that_compiles_and_a_second_apply_does_nothing(cli, index, isolated):
    prefix = isolated / "my cuda's" / "13.0"
    args = ("install", "cuda-toolkit", "13.0", "--method", "pip", "--prefix", str(prefix), "--index-url", index, "--apply", "--yes")
    first = cli(*args)
    assert first.exit_code == 0, first.output
    nvcc = prefix / "nvidia" / "cu13" / "bin" / "nvcc"
    assert nvcc.exists() and (prefix / "nvidia" / "cu13" / "lib64").is_symlink()
    assert "compiled and linked" in Path(_log_path(first.output)).read_text()
    assert "cuda-toolkit: applied" in first.output
    assert "nvidia-cuda-nvcc==13.0.*" in Path(_log_path(first.output)).read_text()
    second = cli(*args)
    assert second.exit_code == 0 and "cuda-toolkit: unchanged" in second.output


def _log_path(output: str) -> str:
    return next(line.split("log: ", 1)[1] for line in output.splitlines() if line.strip().startswith("log: "))


@pytest.fixture
def runfile_server(tmp_path):
    if not REAL_NVCC.exists():
        pytest.skip(f"the runfile stand-in wraps {REAL_NVCC}, absent here")
    www = tmp_path / "www"
    www.mkdir()
    name = "cuda_13.0.2_580.95.05_linux.run"
    shutil.copy(DATA / name, www / name)
    httpd, url = _serve(www)
    yield f"{url}/{name}", hashlib.sha256((www / name).read_bytes()).hexdigest()
    httpd.shutdown()


def test_the_runfile_method_verifies_the_download_installs_the_toolkit_only_and_compiles(cli, runfile_server, isolated):
    url, digest = runfile_server
    prefix, downloads = isolated / "cuda 13.0", isolated / "dl"
    result = cli("install", "cuda-toolkit", "13.0", "--runfile-url", url, "--sha256", digest, "--prefix", str(prefix), "--download-dir", str(downloads), "--apply", "--yes")
    assert result.exit_code == 0, result.output
    assert (prefix / "version.json").exists() and (downloads / "cuda_13.0.2_580.95.05_linux.run").exists()
    assert "[verify done]" in result.output
    assert "compiled and linked" in Path(_log_path(result.output)).read_text()


def test_a_runfile_with_the_wrong_checksum_stops_before_anything_is_written(cli, runfile_server, isolated):
    url, digest = runfile_server
    wrong = "f" * 64
    prefix, downloads = isolated / "cuda-13.0", isolated / "dl"
    result = cli("install", "cuda-toolkit", "13.0", "--runfile-url", url, "--sha256", wrong, "--prefix", str(prefix), "--download-dir", str(downloads), "--apply", "--yes")
    assert result.exit_code == 1
    assert f"sha256 mismatch: expected {wrong}, got {digest}" in result.output
    assert "cuda-toolkit: failed: step 1 of" in result.output
    assert not prefix.exists()
    assert list(downloads.iterdir()) == []
    assert not (isolated / "home" / ".config").exists()  # no env snippet either: nothing was written


def unfold(plan: str) -> str:
    """A printed plan as one line per command and comment again: the CLI folds long
    commands with backslash-newlines and long comments into further "# " lines (80
    columns, textfit.fit_script)."""
    return re.sub(r" \\\n +", " ", plan).replace("\n# ", " ")


def test_torch_for_an_externally_managed_python_goes_into_a_new_venv_and_imports(cli, index, isolated):
    """PEP 668: this machine's /usr/bin/python3 (Debian 12) carries EXTERNALLY-MANAGED, so
    pip would refuse it. The plan creates the venv with that Python, installs the pinned
    wheel there from the local index, verifies it, and leaves the system Python alone; a
    second run against the venv changes nothing."""
    system = Path("/usr/bin/python3")
    marker = Path(f"/usr/lib/python{sys.version_info[0]}.{sys.version_info[1]}/EXTERNALLY-MANAGED")
    if not TORCH_WHEEL.exists() or sys.version_info[:2] != (3, 11):
        pytest.skip(f"needs {TORCH_WHEEL} and Python 3.11")
    version = subprocess.run([str(system), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True, timeout=60)
    if not marker.exists() or version.stdout.strip() != "(3, 11)":
        pytest.skip(f"needs a Debian-style {system} (3.11, for the cp311 wheel) marked {marker}")
    venv = isolated / "venv dir"
    common = ("--timeout", "120", "--cuda", "cpu", "--torch", "==2.13.0", "--index-url", index)
    dry = cli("install", "torch", "--python", str(system), "--venv", str(venv), *common)
    assert dry.exit_code == 0, dry.output
    # The printed plan is fitted to 80 columns: a long comment goes on as "# " lines.
    assert f"{system} is externally managed ({marker}, PEP 668" in unfold(dry.output)
    assert f"{system} -m venv -- '{venv}'" in unfold(dry.output)
    assert "--break-system-packages" not in unfold(dry.output).replace("or --break-system-packages to install", "")
    assert not venv.exists()  # a dry run writes nothing

    first = cli("install", "torch", "--python", str(system), "--venv", str(venv), *common, "--apply", "--yes")
    assert first.exit_code == 0, first.output
    python = venv / "bin" / "python"
    check = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True, timeout=300)
    assert check.stdout.strip() == "2.13.0+cpu", check.stderr
    untouched = subprocess.run([str(system), "-I", "-c", "import torch"], capture_output=True, text=True, timeout=300)
    assert untouched.returncode != 0 and "No module named 'torch'" in untouched.stderr

    second = cli("install", "torch", "--python", str(python), *common, "--apply", "--yes")
    assert second.exit_code == 0 and "torch-wheel: unchanged" in second.output, second.output


def test_break_system_packages_is_passed_only_when_asked(cli):
    system = "/usr/bin/python3"
    if not Path(f"/usr/lib/python{sys.version_info[0]}.{sys.version_info[1]}/EXTERNALLY-MANAGED").exists():
        pytest.skip("needs a Debian-style externally managed /usr/bin/python3")
    asked = cli("install", "torch", "--python", system, "--cuda", "cpu", "--torch", "==2.13.0", "--break-system-packages")
    assert asked.exit_code == 0, asked.output
    assert f"{system} -m pip install --index-url https://download.pytorch.org/whl/cpu --break-system-packages torch==2.13.0+cpu" in unfold(asked.output)
    assert " -m venv " not in unfold(asked.output)


def test_the_printed_runfile_plan_runs_by_hand_with_sh_even_with_quotes_and_spaces_in_paths(runfile_server, isolated):
    from fwdoctor.kb import KB
    from fwdoctor.model import Facts
    from fwdoctor.recipes import cuda_toolkit

    url, digest = runfile_server
    weird = isolated / "it's a \"dir\""
    options = {"version": "13.0", "runfile_url": url, "sha256": digest, "prefix": str(weird / "cuda 13.0"), "work_dir": str(weird / "work"), "env_file": str(weird / "env $HOME.sh"), "fwdoctor_python": sys.executable}
    plan = cuda_toolkit.plan(Facts(), KB.load(), options)
    script = isolated / "plan.sh"
    script.write_text(plan.to_shell())
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (weird / "cuda 13.0" / "bin" / "nvcc").exists()
    assert "compiled and linked" in proc.stdout
    snippet = (weird / "env $HOME.sh").read_text()
    assert snippet == cuda_toolkit.env_snippet(str(weird / "cuda 13.0"), "13.0")


@pytest.mark.requires_gpu
def test_on_a_gpu_host_the_pip_toolkit_compiles_for_the_host_arch_and_the_kernel_runs(cli, index, isolated):
    if not Path("/proc/driver/nvidia/version").exists():
        pytest.skip("no NVIDIA driver loaded on this host")
    prefix = isolated / "cuda-13.0"
    result = cli("install", "cuda-toolkit", "13.0", "--method", "pip", "--prefix", str(prefix), "--index-url", index, "--apply", "--yes")
    assert result.exit_code == 0, result.output
    log = Path(_log_path(result.output)).read_text()
    assert "-gencode" in log and "kernel: no error" in log
