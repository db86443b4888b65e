"""Issue 26, the windows-wsl group: three classes of WSL 2 text.

CUDA's "no CUDA-capable device is detected" (CUDA_ERROR_NO_DEVICE) in a report from WSL 2: there
the libcuda that answered cuInit is not the Windows driver's /usr/lib/wsl/lib copy (numba/numba#7106;
NVIDIA/cuml#5624 and #6218, Genesis-Embodied-AI/genesis-world#187 and tensorflow/tensorflow#60429
were fixed by /usr/lib/wsl/lib first on LD_LIBRARY_PATH or by removing Linux NVIDIA packages), so
it is wsl-libcuda-not-linked and not cuda-visible-devices-hides-gpus unless the report shows the
variable. A Linux driver package named in Markdown's inline code ("`apt install nvidia-utils-510`",
microsoft/WSL#9166) is wsl-linux-driver-installed. NVML's "GPU access blocked by the operating
system" gets the errors.yaml row nvml-blocked-by-os's note (its causes: TCC mode, a Linux driver).

Each on recorded public text, also as pasting mangles it (tests/pasting.py), beside look-alikes
that must stay quiet. The rows' own examples run in tests/test_triage_corpus.py.
"""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from fwdoctor.model import Severity
from fwdoctor.triage import triage
from fwdoctor.triage.judge import run
from tests.pasting import as_pasted


def findings(text: str, kb) -> dict[str, Severity]:
    return {f.id: f.severity for f in run(text, kb).report.findings}


# NVIDIA/cuml#5624 (title and error)
CUML_5624 = (
    "[BUG] Windows 11 WSL2 CUDA 12.2 - Call to cuInit results in CUDA_ERROR_NO_DEVICE:\n"
    "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: Call to cuInit results in CUDA_ERROR_NO_DEVICE (100)\n"
)
# NVIDIA/cuml#6218 (title and the traceback's end)
CUML_6218 = (
    "[BUG] Cannot find GPU in WSL2\n"
    '    raise CudaSupportError(f"Error at driver init: {description}")\n'
    "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: Call to cuInit results in CUDA_ERROR_NO_DEVICE (100)\n"
)
# Genesis-Embodied-AI/genesis-world#187
GENESIS_187 = (
    "I am currently using a **WSL2 Ubuntu22.04 python3.9** environment with **CUDA 11.8** for Genesis experiments.\n"
    "[Genesis] [15:16:26] [INFO] Running on [NVIDIA GeForce RTX 4080 SUPER] with backend gs.cuda. Device memory: 15.99 GB.\n"
    "[E 12/21/24 15:16:26.157 71086] [cuda_driver.h:operator()@92] CUDA Error CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected while calling init (cuInit)\n"
)
# abetlen/llama-cpp-python#1030
LLAMA_CPP_1030 = (
    "I run it in ubuntu in WSL.\n"
    "CPU inference works for me with no issue, but when I try to run cublas build it fails with: \n"
    "CUDA error 100 at /mnt/c/ws/ai/llama/llama.cpp/ggml-cuda.cu:485: no CUDA-capable device is detected\n"
    "current device: 0\n"
)
WSL_NO_DEVICE = (CUML_5624, CUML_6218, GENESIS_187, LLAMA_CPP_1030)


@pytest.mark.parametrize("text", as_pasted(*WSL_NO_DEVICE))
def test_no_cuda_device_on_wsl2_is_wsl_libcuda_not_linked_not_cuda_visible_devices(text, test_kb):
    got = findings(text, test_kb)
    assert got.get("wsl-libcuda-not-linked") is Severity.WARNING
    assert "cuda-visible-devices-hides-gpus" not in got
    assert Severity.ERROR not in got.values()


# Look-alikes. The same error on a Linux host (the row cuda-no-device's own example): still the variable.
LINUX_NO_DEVICE = "2020-12-29 10:10:44.476602: E tensorflow/stream_executor/cuda/cuda_driver.cc:318] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected\n"


@pytest.mark.parametrize("text", as_pasted(LINUX_NO_DEVICE))
def test_no_cuda_device_off_wsl_stays_cuda_visible_devices(text, test_kb):
    got = findings(text, test_kb)
    # a warning while the report does not show the variable (an error once it does: below)
    assert got.get("cuda-visible-devices-hides-gpus") is Severity.WARNING
    assert "wsl-libcuda-not-linked" not in got


def test_no_cuda_device_on_wsl_with_the_variable_shown_is_the_variable(test_kb):
    text = "I run it in WSL2.\nexport CUDA_VISIBLE_DEVICES=1\n" + LINUX_NO_DEVICE
    got = findings(text, test_kb)
    assert got.get("cuda-visible-devices-hides-gpus") is Severity.ERROR  # shown: an error
    assert "wsl-libcuda-not-linked" not in got


def test_no_cuda_device_on_wsl_with_a_linux_driver_is_that_driver(test_kb):
    got = findings("I run it in WSL2.\nsudo apt install nvidia-driver-535\n" + LINUX_NO_DEVICE, test_kb)
    assert got.get("wsl-linux-driver-installed") is Severity.ERROR
    assert "wsl-libcuda-not-linked" not in got and "cuda-visible-devices-hides-gpus" not in got


def test_no_cuda_device_on_wsl_1_is_wsl_1(test_kb):
    got = findings("$ uname -r\n4.4.0-19041-Microsoft\n" + LINUX_NO_DEVICE, test_kb)
    assert got.get("wsl-gpu-unsupported") is Severity.ERROR
    assert "wsl-libcuda-not-linked" not in got and "cuda-visible-devices-hides-gpus" not in got


# microsoft/WSL#9166: a Linux driver package in inline code, in a WSL 2 issue form.
WSL_9166 = (
    "### WSL Version\n"
    "\n"
    "- [X] WSL 2\n"
    "- [ ] WSL 1\n"
    "\n"
    "at this point I did :\n"
    "\n"
    "`apt install nvidia-utils-510`\n"
    "\n"
    "because without installing this package,it won't find the utility nvidia-smi. But this is the error that I've got next :\n"
    "\n"
    "```\n"
    "# nvidia-smi\n"
    "\n"
    "Failed to initialize NVML: GPU access blocked by the operating system\n"
    "Failed to properly shut down NVML: GPU access blocked by the operating system\n"
    "\n"
    "```\n"
)


@pytest.mark.parametrize("text", as_pasted(WSL_9166))
def test_a_linux_driver_package_in_inline_code_inside_wsl_is_read(text, test_kb):
    assert findings(text, test_kb).get("wsl-linux-driver-installed") is Severity.ERROR


@pytest.mark.parametrize("text", [
    # a setup guide for a Linux host (no WSL named): the package, not in WSL
    "If `nvidia-smi` is missing, install the NVIDIA driver first (e.g. `sudo apt install nvidia-driver-535` on Ubuntu).\n",
    # WSL named, the package named without an install command
    "On WSL2 I did not touch `nvidia-utils-510`.\n",
])
def test_inline_code_package_look_alikes_stay_quiet(text, test_kb):
    assert "wsl-linux-driver-installed" not in findings(text, test_kb)


# microsoft/WSL#14339: NVML blocked, nothing else shown: the row's note, no error finding.
WSL_14339 = (
    "Windows Server 2025, installed Nvidia drivers (latest version): 32.0.15.9159 in Data Center mode: WSL doesn't see Nvidia L40S card.\n"
    "```\n"
    "$ nvidia-smi\n"
    "Failed to initialize NVML: GPU access blocked by the operating system\n"
    "Failed to properly shut down NVML: GPU access blocked by the operating system\n"
    "```\n"
)


@pytest.mark.parametrize("text", as_pasted(WSL_14339))
def test_nvml_blocked_by_the_os_gets_the_rows_note_and_no_error(text, test_kb):
    facts, _ = triage(text)
    assert "nvml-blocked-by-os" in {e.get("kind") for e in facts.get("report.errors") or []}
    assert Severity.ERROR not in findings(text, test_kb).values()


def test_nvml_blocked_beside_a_tcc_windows_nvidia_smi_is_wsl_gpu_unsupported():
    # microsoft/WSL#11865: the Windows nvidia-smi shows the L40S in TCC mode; the shipped KB's
    # wsl row names the driver models WSL 2 reaches (tests/test_triage_wsl_tcc.py)
    text = (
        "Microsoft Windows [Version 10.0.20348.2582]\n"
        "WSL 2.2.4.0\n"
        "+-----------------------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 555.85                 Driver Version: 555.85         CUDA Version: 12.5     |\n"
        "|-----------------------------------------+------------------------+----------------------+\n"
        "| GPU  Name                  Driver-Model | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
        "|                                         |                        |               MIG M. |\n"
        "|=========================================+========================+======================|\n"
        "|   0  NVIDIA L40S                  TCC   |   00000000:61:00.0 Off |                    0 |\n"
        "| N/A   17C    P8             21W /  350W |       9MiB /  46068MiB |      0%      Default |\n"
        "|                                         |                        |                  N/A |\n"
        "+-----------------------------------------------------------------------------------------+\n"
        "\n"
        "in wsl:\n"
        "Failed to initialize NVML: GPU access blocked by the operating system\n"
    )
    assert findings(text, KB()).get("wsl-gpu-unsupported") is Severity.ERROR
