"""issue 26, batch-49 development misses (conda, windows-wsl): NVTX's libnvToolsExt.so.1 read as a
CUDA library the loader did not find, the reporter's own "zlibwapi.dll not found/missing" (cuDNN
8.3+ on Windows), and pip's log uninstalling the torch conda installed (fwdoctor.triage.pip_over_conda).
Texts are recorded from the public threads named beside them, pasted as reports paste them."""

from __future__ import annotations

import pytest

from fwdoctor.triage import pip_over_conda
from fwdoctor.triage.judge import run
from fwdoctor.triage.text import Lines

pytestmark = pytest.mark.usefixtures("use_test_kb")


def _findings(text: str, kb) -> dict[str, str]:
    return {f.id: f.message for f in run(text, kb).report.findings}


# ----------------------------------------------------------------- libnvToolsExt.so.1
# pytorch/pytorch#2301 (conda pytorch 0.2) and dusty-nv/jetson-containers#9 (l4t-pytorch image)
@pytest.mark.parametrize("text", [
    ">>> import torch\nTraceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
    "ImportError: libnvToolsExt.so.1: cannot open shared object file: No such file or directory\n",
    "    self._handle = _dlopen(self._name, mode)\r\nOSError: libnvToolsExt.so.1: cannot open shared object file: No such file or directory\r\n",
    "> ImportError: libnvToolsExt.so.1: cannot open shared object file: No such file or directory\n",
])
def test_a_missing_nvtx_library_is_a_cuda_library_the_loader_does_not_find(text, test_kb):
    found = _findings(text, test_kb)
    assert "cuda-lib-not-found" in found
    assert "libnvToolsExt.so.1" in found["cuda-lib-not-found"]


def test_a_non_cuda_library_that_cannot_be_opened_is_not_read_as_one(test_kb):
    text = "ImportError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory\n"
    assert "cuda-lib-not-found" not in _findings(text, test_kb)


# ----------------------------------------------------------------- zlibwapi.dll said missing
# PaddlePaddle/FastDeploy#362 (the reporter's words), and Windows' loader dialog in English and zh-CN
@pytest.mark.parametrize("text", [
    "提示zlibwapi.dll找不到，这个是干嘛用的？\n",
    "zlibwapi.dll 缺失导致的报错.找到对应zlip资源问题修正\n",
    "The code execution cannot proceed because zlibwapi.dll was not found. Reinstalling the program may fix this problem.\n",
    "由于找不到 zlibwapi.dll，无法继续执行代码。重新安装程序可能会解决此问题。\n",
    "> the error says `zlibwapi.dll` is missing\n",
])
def test_the_reporters_words_that_zlibwapi_dll_is_missing_name_cudnns_zlib(text, test_kb):
    found = _findings(text, test_kb)
    assert "cuda-lib-not-found" in found
    assert "zlibwapi.dll" in found["cuda-lib-not-found"]


@pytest.mark.parametrize("text", [
    "I copied zlibwapi.dll into CUDA's bin folder and it works now\n",
    "where is zlibwapi.dll found on my system?\n",
])
def test_zlibwapi_dll_named_without_saying_it_is_missing_is_not_read(text, test_kb):
    assert "cuda-lib-not-found" not in _findings(text, test_kb)


# ----------------------------------------------------------------- pip over conda's torch
# learnables/learn2learn#408: conda list (quoted with "> ") shows pytorch 1.12.1 from the pytorch
# channel; `pip install learn2learn` then removed it for torch 2.0.1.
LEARN2LEARN = """My environment already has Pytorch(1.12.1) installed with conda.

> pytorch                   1.12.1          py3.10_cuda11.3_cudnn8.3.2_0    pytorch
pytorch-cluster           1.6.0           py310_torch_1.12.0_cu113    pyg
pytorch-mutex             1.0                        cuda    pytorch

 While I run `pip install learn2learn` the wheel cant recognize the existing pytorch and installed another new one (Pytorch 2.0.1).

> Collecting torch>=1.1.0 (from learn2learn)
  Using cached torch-2.0.1-cp310-cp310-manylinux1_x86_64.whl (619.9 MB)

At the end my original PyTorch was removed due to resolving conflicts.

>   Attempting uninstall: torch
    Found existing installation: torch 1.12.1
    Uninstalling torch-1.12.1:
      Successfully uninstalled torch-1.12.1
Successfully installed learn2learn-0.2.0 torch-2.0.1
"""

# thousandbrainsproject/tbp.monty#385: an environment file's spec in a code span, pip's log cut short
TBP_MONTY = """After some digging, I found that I had `PyTorch 2.4.1+cu121` installed in the Conda env (while `pytorch=1.11.0` is required in the `environment.yml` file):

That command silently did the following:
```
...
Attempting uninstall: torch
  Found existing installation: torch 1.11.0
  Uninstalling torch-1.11.0:
    Successfully uninstalled torch-1.11.0
...
Successfully installed torch-2.
```
"""


def test_pip_removing_the_torch_release_conda_list_shows_is_pip_over_conda(test_kb):
    (frag,) = pip_over_conda.find(Lines.of(LEARN2LEARN))
    (item,) = frag.facts[0].value
    assert (item["conda"], item["dist_version"], item["installer"]) == ("pytorch 1.12.1", "2.0.1", "pip")
    found = _findings(LEARN2LEARN, test_kb)
    assert "conda-pip-torch-over-conda" in found
    assert "pytorch 1.12.1" in found["conda-pip-torch-over-conda"]


def test_an_environment_files_pytorch_spec_owns_the_torch_pip_removed(test_kb):
    assert "conda-pip-torch-over-conda" in _findings(TBP_MONTY.replace("\n", "\r\n"), test_kb)


@pytest.mark.parametrize("text", [
    # pip over pip: no conda side at all
    LEARN2LEARN.replace("> pytorch                   1.12.1          py3.10_cuda11.3_cudnn8.3.2_0    pytorch\n", ""),
    # conda's pytorch is another release than the torch pip removed (pip's own earlier install)
    TBP_MONTY.replace("`pytorch=1.11.0`", "`pytorch=1.13.1`"),
    # prose naming pytorch's release is not a conda spec or a conda list row
    "I use pytorch 1.11.0 in a conda env\nFound existing installation: torch 1.11.0\nSuccessfully uninstalled torch-1.11.0\n",
    # torchvision, not torch
    "- pytorch=1.11.0\nFound existing installation: torchvision 1.11.0\nSuccessfully uninstalled torchvision-1.11.0\n",
])
def test_without_conda_owning_that_torch_release_nothing_is_read(text, test_kb):
    assert pip_over_conda.find(Lines.of(text)) == []
    assert "conda-pip-torch-over-conda" not in _findings(text, test_kb)
