"""Issue 26, the windows-wsl group: Windows and WSL environment text (fwdoctor.triage.windows,
fwdoctor.triage.gpu_intent) and the findings it settles (fwdoctor.rules.windows):
wsl-gpu-unsupported, wsl-linux-driver-installed, torch-cpu-build-on-gpu-host for PyPI's Windows
torch wheel, framework-cpu-build-on-gpu-host for tensorflow-gpu asked on native Windows.
Texts pasted as people paste them: PowerShell and cmd prompts, fences, "> " quotes, CRLF."""

from __future__ import annotations

import json

import pytest

from fwdoctor.triage import triage

pytestmark = pytest.mark.usefixtures("use_test_kb")


def facts_of(text: str) -> dict:
    facts, _ = triage(text)
    return {key: facts[key] for key in facts if facts.known(key)}


def findings(cli, tmp_path, text: str) -> dict[str, str]:
    path = tmp_path / "report.md"
    path.write_bytes(text.encode("utf-8"))
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f["severity"] for f in doc["findings"]}


@pytest.mark.parametrize(
    ("text", "build"),
    [
        ("C:\\Users\\me> ver\r\n\r\nMicrosoft Windows [Version 10.0.17763.292]\r\n", 17763),
        ("```\nOS Version:                10.0.19041 N/A Build 19041\n```\n", 19041),
        ("PS C:\\> wsl --version\nWSL version: 2.0.9.0\nWindows version: 10.0.22631.2861\n", 22631),
        ("> ### Microsoft Windows [Version 10.0.19045.3803]\n", 19045),
    ],
)
def test_windows_build_read(text, build):
    assert facts_of(text)["platform.windows_build"]["build"] == build


def test_wsl_version_from_kernel_and_wsl_list():
    assert facts_of("$ uname -r\n4.4.0-17763-Microsoft\n")["platform.wsl"]["version"] == 1
    assert facts_of("$ uname -r\n4.4.0-17763-Microsoft\n")["platform.windows_build"]["build"] == 17763
    assert facts_of("$ uname -r\n5.15.90.1-microsoft-standard-WSL2\n")["platform.wsl"]["version"] == 2
    listed = "PS C:\\Users\\me> wsl -l -v\r\n  NAME      STATE           VERSION\r\n* Ubuntu    Running         1\r\n  Debian    Stopped         2\r\n"
    assert facts_of(listed)["platform.wsl"]["version"] == 1


def test_wsl1_and_old_build_raise_wsl_gpu_unsupported(cli, tmp_path):
    # microsoft/WSL#3847 (windows-wsl/wsl1-build17763-no-gpu.md, development part)
    old = ("### Microsoft Windows [Version 10.0.17763.292]\n\n#### Ubuntu app WSL:\nand still when using nvidia-smi I get :\n```\n"
           "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n```\n")
    assert findings(cli, tmp_path, old).get("wsl-gpu-unsupported") == "error"
    assert findings(cli, tmp_path, "$ uname -a\nLinux box 4.4.0-19041-Microsoft #488-Microsoft x86_64 GNU/Linux\n").get("wsl-gpu-unsupported") == "error"


def test_new_build_or_no_wsl_is_not_wsl_gpu_unsupported(cli, tmp_path):
    assert "wsl-gpu-unsupported" not in findings(cli, tmp_path, "Microsoft Windows [Version 10.0.22631.2861]\nrunning Ubuntu in WSL2\n")
    # native Windows on an old build: WSL is not involved
    assert "wsl-gpu-unsupported" not in findings(cli, tmp_path, "Microsoft Windows [Version 10.0.17763.292]\npython -c \"import torch\"\n")


@pytest.mark.parametrize(
    "text",
    [
        # microsoft/WSL#5265 (windows-wsl/wsl2-preview-may2020-linux-driver-440-no-gpu.md, development part)
        "I just installed Windows Preview and WSL 2 and I did\n\n```\nsudo apt install nvidia-driver-440\nsudo apt install nvidia-utils-440\n```\n",
        # microsoft/WSL#12272 (windows-wsl/wsl-linux-gpu-driver-installed-inside-wsl.md, development part)
        "But I omitted the notice on CUDA guide page for wsl and installed all GPU driver, cudatoolkit, and cudnn in wsl too.\n",
        "$ uname -r\n5.15.153.1-microsoft-standard-WSL2\n$ dpkg -l | grep nvidia\nii  libnvidia-compute-535:amd64  535.183.01-0ubuntu1  amd64  NVIDIA libcompute package\n",
    ],
)
def test_linux_driver_inside_wsl(cli, tmp_path, text):
    assert findings(cli, tmp_path, text).get("wsl-linux-driver-installed") == "error"


def test_linux_driver_on_a_linux_host_is_fine(cli, tmp_path):
    text = "$ uname -r\n6.8.0-45-generic\n$ dpkg -l | grep nvidia\nii  libnvidia-compute-535:amd64  535.183.01-0ubuntu1  amd64  NVIDIA libcompute package\n"
    assert "wsl-linux-driver-installed" not in findings(cli, tmp_path, text)
    # WSL's own libcuda is not a Linux driver's
    assert "wsl.linux_driver" not in facts_of("WSL2\n-r-xr-xr-x 1 root root 1 Jun 24 /usr/lib/wsl/lib/libcuda.so.1.1\n")


def test_windows_pypi_torch_wheel_is_cpu():
    # pytorch/pytorch#52662 (windows-wsl/torch171-windows-pip-cu102-gets-cpu-wheel.md, development part)
    facts = facts_of("> python -m pip install torch===1.7.1 -f https://download.pytorch.org/whl/torch_stable.html\r\n"
                     "  Downloading torch-1.7.1-cp38-cp38-win_amd64.whl (184.0 MB)\r\n")
    assert facts["torch.version"] == "1.7.1" and facts["torch.cuda"] is None
    assert facts_of("  Downloading torch-2.1.0+cu118-cp311-cp311-win_amd64.whl (2722.7 MB)\n")["torch.cuda"] == "11.8"
    # download.pytorch.org's cu102 folder held untagged CUDA wheels: not settled
    assert "torch.cuda" not in facts_of("  Downloading https://download.pytorch.org/whl/cu102/torch-1.8.0-cp38-cp38-win_amd64.whl\n")
    # a Linux wheel without a tag is PyPI's CUDA build: not read here
    assert "torch.cuda" not in facts_of("  Downloading torch-2.1.0-cp311-cp311-manylinux1_x86_64.whl (670.2 MB)\n")


def test_windows_cpu_torch_with_cuda_asked(cli, tmp_path):
    text = ("```\n> python -m pip install torch===1.7.1 -f https://download.pytorch.org/whl/torch_stable.html --no-cache\n"
            "  Downloading torch-1.7.1-cp38-cp38-win_amd64.whl (184.0 MB)\nSuccessfully installed torch-1.7.1\n```\n"
            ">>> torch.cuda.is_available()\nFalse\n")
    assert findings(cli, tmp_path, text).get("torch-cpu-build-on-gpu-host") == "warning"
    assert "torch-cpu-build-on-gpu-host" not in findings(cli, tmp_path, text.split(">>>")[0])  # no GPU meant


def test_tensorflow_gpu_asked_on_native_windows(cli, tmp_path):
    # tensorflow/tensorflow#60241 (windows-wsl/tf212-win11-tensorflow-gpu-212-not-available.md, development part)
    text = "### Tensorflow Version\n\ntf2.12.0\n\n### OS Platform and Distribution\n\nWin11\n\n### Current Behaviour?\n\n```shell\nNo version 2.12.0 of the tensorflow-gpu was found.\n```\n"
    assert findings(cli, tmp_path, text).get("framework-cpu-build-on-gpu-host") == "warning"
