"""Issue 26 (containers): a report written in Chinese names its container and its Windows
with the word glued to the characters around it ("更新docker 解决", "docker部署时"). To
Python's Unicode \\b a CJK character is a word character, so "docker" there had no word
boundary and the report's container went unseen; fwdoctor.triage.errors reads the words with
ASCII boundaries. Each text is quoted from the public thread named above it."""

from __future__ import annotations

import pytest

from fwdoctor.triage import triage
from pasting import as_pasted
from triage_helpers import findings

# https://github.com/YanWenKun/ComfyUI-Docker/issues/74 (the reporter: "更新docker 解决",
# updating Docker Desktop solved it; a development-part report of the field corpus)
COMFYUI_74 = """\
RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 500: named symbol not found

我windows上装了nvidia-smi 命令行都ok

openainext · comment · 2024-12-23
更新docker 解决
"""
# https://github.com/xorbitsai/inference/issues/1704 (the container named only as "docker部署时")
XINFERENCE_1704 = """\
docker部署时：Unexpected error from cudaGetDeviceCount()，容器能跑起来，但是模型不能在GPU中跑起来，只能跑在内存里
/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:118: UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 500: named symbol not found (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)
"""


def _entry(text: str) -> dict:
    (entry,) = [e for e in triage(text)[0]["report.errors"] if e["kind"] == "cuda-init-not-found-in-wsl-container"]
    return entry


@pytest.mark.parametrize("text", as_pasted(COMFYUI_74))
def test_error_500_with_docker_and_windows_named_in_chinese_is_the_container_stack(cli, tmp_path, text):
    hit = findings(cli, tmp_path, text)["container-toolkit-known-bug"]
    assert hit["severity"] == "error"


@pytest.mark.parametrize("text", as_pasted(XINFERENCE_1704))
def test_a_container_named_glued_to_chinese_text_is_recorded(text):
    assert "docker" in _entry(text)["container"]


def test_look_alikes_name_no_container_or_no_windows(cli, tmp_path):
    # the Linux host of xinference#1704 names no Windows: not the WSL2 container stack
    assert "container-toolkit-known-bug" not in findings(cli, tmp_path, XINFERENCE_1704)
    # Windows without a container (ComfyUI-Docker#74 before the comment naming docker)
    assert "container-toolkit-known-bug" not in findings(cli, tmp_path, COMFYUI_74.split("openainext")[0])
    # a longer word that only contains "docker" is not the word
    assert "container" not in _entry(COMFYUI_74.replace("更新docker 解决", "更新Dockerfile 解决"))
