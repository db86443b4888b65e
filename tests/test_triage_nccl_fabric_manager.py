"""Issue 26, the nccl-fabric group: nv-fabricmanager's own refusal to start beside a driver of
another version (errors.yaml row fabricmanager-driver-version-mismatch): "fabric manager NVIDIA
GPU driver interface version X don't match with driver version Y" is fabricmanager-driver-mismatch,
and CUDA's "system not yet initialized" beside it follows from it (nvswitch-fabricmanager-not-running
only a warning then). Each text is quoted from the public thread named above it, then mangled as
pasting does."""

from __future__ import annotations

import pytest

import pasting
from triage_helpers import findings

# https://github.com/NVIDIA/gpu-operator/issues/544 (journal line of the failed service)
GPU_OPERATOR = ("nv-fabricmanager[3228]: fabric manager NVIDIA GPU driver interface version 530.30.02 don't match with "
                "driver version 530.41.03. Please update with matching NVIDIA driver package.\n")
# https://github.com/siderolabs/pkgs/issues/720 (Talos, in backticks)
SIDEROLABS = ("After building proprietary driver there is an error from Fabric Manager service:\n"
              "`fabric manager NVIDIA GPU driver interface version 525.85.12 don't match with driver version 530.41.03. "
              "Please update with matching NVIDIA driver package`.\n")
# https://github.com/NVIDIA/nvtrust/issues/55 (a curly apostrophe)
NVTRUST = ("\"fabric manager NVIDIA GPU driver interface version 550.90.07 don\u2019t match with driver version 550.107.02. "
           "Please update with matching NVIDIA driver package\"\n")
# https://github.com/NVIDIA/gpu-driver-container/issues/735 (wrapped after the driver version)
DRIVER_CONTAINER = ("fabric manager NVIDIA GPU driver interface version 590.48.01 don't match with driver version 580.126.09.\n"
                    "Please update with matching NVIDIA driver package.\n")
# https://github.com/akash-network/website/pull/632 (the newer wording, "doesn't")
AKASH = ("Nov 05 13:55:26 node1 nv-fabricmanager[104230]: fabric manager NVIDIA GPU driver interface version 550.127.05 "
         "doesn't match with driver version 550.120. Please update with the matching NVIDIA driver package.\n"
         "Nov 05 13:55:26 node1 systemd[1]: nvidia-fabricmanager.service: Control process exited, code=exited, status=1/FAILURE\n")
# https://github.com/dstackai/dstack/issues/2348: torch's 802 on an 8x H100 instance (the
# journal's mismatch line beside it is cut in the stored copy; GPU_OPERATOR's stands in)
DSTACK_802 = ("/opt/conda/envs/workflow/lib/python3.9/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA initialization: "
              "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might "
              "have already set an error? Error 802: system not yet initialized (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:109.)\n")
# https://github.com/Azure/azhpc-images/issues/343: nvidia-smi on an H100 80GB HBM3 (an NVSwitch
# board's GPU: with 802 a second sign, which alone would make nvswitch-fabricmanager-not-running an error)
H100_SMI = ("+---------------------------------------------------------------------------------------+\n"
            "| NVIDIA-SMI 535.161.08             Driver Version: 535.161.08   CUDA Version: 12.2     |\n"
            "|-----------------------------------------+----------------------+----------------------+\n"
            "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
            "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |\n"
            "|                                         |                      |               MIG M. |\n"
            "|=========================================+======================+======================|\n"
            "|   0  NVIDIA H100 80GB HBM3          On  | 00000001:00:00.0 Off |                    0 |\n"
            "| N/A   28C    P0              76W / 700W |      0MiB / 81559MiB |      0%      Default |\n"
            "|                                         |                      |             Disabled |\n"
            "+-----------------------------------------+----------------------+----------------------+\n")

MANGLES = [lambda t: t, *(lambda t, f=f: f(t) for f in (pasting.quoted, pasting.fenced, pasting.crlf, pasting.coloured, pasting.stamped))]


@pytest.mark.parametrize("mangle", MANGLES)
@pytest.mark.parametrize("text", [GPU_OPERATOR, SIDEROLABS, NVTRUST, DRIVER_CONTAINER, AKASH])
def test_fabric_managers_own_version_refusal_is_a_fabric_manager_driver_mismatch(cli, use_test_kb, tmp_path, text, mangle):
    got = findings(cli, tmp_path, mangle(text))
    assert got["fabricmanager-driver-mismatch"]["severity"] == "error"
    assert not [i for i, f in got.items() if f["severity"] == "error" and i != "fabricmanager-driver-mismatch"]


@pytest.mark.parametrize("mangle", MANGLES)
def test_error_802_beside_the_refusal_names_the_mismatch_as_the_error(cli, use_test_kb, tmp_path, mangle):
    got = findings(cli, tmp_path, mangle(H100_SMI + DSTACK_802 + GPU_OPERATOR))
    assert got["fabricmanager-driver-mismatch"]["severity"] == "error"
    assert got["nvswitch-fabricmanager-not-running"]["severity"] == "warning"


@pytest.mark.parametrize("mangle", MANGLES)
def test_error_802_on_an_nvswitch_board_without_the_refusal_stays_an_error(cli, use_test_kb, tmp_path, mangle):
    got = findings(cli, tmp_path, mangle(H100_SMI + DSTACK_802))
    assert got["nvswitch-fabricmanager-not-running"]["severity"] == "error"
    assert "fabricmanager-driver-mismatch" not in got


@pytest.mark.parametrize("text", [
    # the versions agreeing, as nv-fabricmanager logs them when it starts (no refusal)
    "nv-fabricmanager[2051]: Fabric Manager version 535.104.05 is running with the following configuration options\n",
    # prose about the rule, not the daemon's words
    "The fabric manager version has to match with the NVIDIA driver version in use.\n",
    "fabric manager NVIDIA GPU driver interface version 535.104.05\n",
])
def test_look_alikes_raise_no_fabric_manager_mismatch(cli, use_test_kb, tmp_path, text):
    assert "fabricmanager-driver-mismatch" not in findings(cli, tmp_path, text)
