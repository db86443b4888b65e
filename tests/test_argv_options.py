"""Values fwdoctor passes to git and docker can never be read as options (issue 11, item 6).

`fwdoctor build torch --git URL` puts URL in a `git clone` a root shell may run: a value
like `--upload-pack=touch /tmp/x` would be git's option, running a command. Such values
are refused with exit 2, and the clone puts `--` before the URL anyway. The same for the
image of `build torch --docker` and the context of `docker build`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fwdoctor.recipes import docker_build
from fwdoctor.recipes import torch_source as ts

NVCC = "/usr/local/cuda-13.0/bin/nvcc"
needs_nvcc = pytest.mark.skipif(not os.access(NVCC, os.X_OK), reason=f"needs the CUDA 13.0 nvcc at {NVCC}")
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
pytestmark = pytest.mark.usefixtures("roomy_host")


def _build(cli, tmp_path: Path, *extra: str):
    return cli("build", "torch", "--version", "2.9.1", "--cuda", "13.0", "--arch", "8.0", "--python", sys.executable,
               "--workdir", str(tmp_path / "w"), *extra)


@pytest.mark.parametrize("value", ["--upload-pack=touch /tmp/fwdoctor-pwned", "-u touch /tmp/fwdoctor-pwned", "--config=core.sshCommand=x"])
def test_a_git_value_git_would_read_as_an_option_is_refused(cli, tmp_path: Path, value: str) -> None:
    result = _build(cli, tmp_path, f"--git={value}", "--dry-run")
    assert result.exit_code == 2, result.output
    assert f"--git {value}: starts with '-'" in result.output
    assert "Traceback" not in result.output


def test_a_git_value_with_a_newline_is_refused(cli, tmp_path: Path) -> None:
    result = _build(cli, tmp_path, "--git=https://example.org/x.git\ntouch /tmp/x", "--dry-run")
    assert result.exit_code == 2, result.output
    assert "control character" in result.output


@needs_nvcc
def test_the_clone_puts_double_dash_before_the_url(cli, tmp_path: Path) -> None:
    result = _build(cli, tmp_path, "--git", "https://example.org/pytorch.git", "--json")
    assert result.exit_code == 0, result.output
    steps = json.loads(result.output)["plan"]["steps"]
    (clone,) = [s["argv"] for s in steps if s["argv"][:2] == ["git", "clone"]]
    assert clone[-3:] == ["--", "https://example.org/pytorch.git", str(tmp_path / "w" / "src")]


@needs_git
def test_real_git_reads_a_dash_value_after_double_dash_as_a_repository(tmp_path: Path) -> None:
    # What the `--` buys, shown with git itself: the would-be option is a (missing) repository.
    marker = tmp_path / "pwned"
    proc = subprocess.run(["git", "clone", "--depth", "1", "--", f"--upload-pack=touch {marker}", str(tmp_path / "dst")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert not marker.exists()
    assert "does not exist" in proc.stderr or "not a git repository" in proc.stderr or "repository" in proc.stderr


@pytest.mark.parametrize("image", ["--privileged", "-v/:/host"])
def test_a_docker_image_docker_would_read_as_an_option_is_refused(cli, tmp_path: Path, image: str) -> None:
    result = _build(cli, tmp_path, f"--docker={image}", "--dry-run")
    assert result.exit_code == 2, result.output
    assert f"--docker {image}: starts with '-'" in result.output


def test_a_docker_build_context_starting_with_a_dash_stays_a_path() -> None:
    builder = docker_build.Builder(("docker", "buildx", "build", "--load"), {}, "docker buildx")
    argv = docker_build.build_argv(builder, "Dockerfile", "-ctx", ["t:1"])
    assert argv[-1] == "./-ctx"
    assert docker_build.build_argv(builder, "Dockerfile", "/abs/ctx", ["t:1"])[-1] == "/abs/ctx"


def test_seed_refuses_the_value_before_any_probe_runs() -> None:
    opts = ts.Options(version="2.9.1", cuda="13.0", nccl="bundled", cudnn="bundled", arch="8.0", python=sys.executable,
                      source=None, git="--upload-pack=x", workdir=None, jobs="auto", ccache=False, debug=False, cmake_only=False)
    with pytest.raises(ts.InputError, match="starts with '-'"):
        ts.seed(opts)
