"""NCCL without kernels for the GPU's architecture (issue 26, nccl-fabric): NCCL's "Cuda
failure 'named symbol not found'" in the forms it is pasted in, besides enqueue.cc's WARN
line: NCCL before 2.19 prints its WARN lines without file:line, torch's ProcessGroupNCCL
repeats NCCL's words after "Last error:", and a write-up quotes them in prose. The row is
doctor/kb/errors.yaml nccl-named-symbol-not-found; the rule fwdoctor.triage.nccl_fabric
kernels_missing. Each text is quoted from the public thread named above it."""

from __future__ import annotations

import pytest

from pasting import as_pasted
from triage_helpers import findings

# https://github.com/aws-samples/aws-parallelcluster-post-install-scripts/pull/56 (merged: the
# site's NCCL build had NVCC_GENCODE sm_70/sm_80/sm_90 only, run on B200, sm_100)
PCLUSTER_56 = """\
## Problem
`NVCC_GENCODE` was hard-coded to `sm_70`/`sm_80`/`sm_90`, so `libnccl.so.2` had no cubins for Blackwell (B200, sm_100). 
Any NCCL operation on `p6-b200.48xlarge` failed with `Cuda failure: named symbol not found`. 
"""
# https://github.com/NVIDIA/nccl/issues/1372 (NVCC_GENCODE compute_80 only, run on H100): the
# WARN line an NCCL 2.19+ prints, here after a log's own timestamp and a Ray actor's prefix
NCCL_1372 = "gcn75:2336636:2336906 [0] enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'\n"
# https://github.com/pytorch/pytorch/issues/152077 (NCCL 2.14.3: WARN lines without file:line)
OLD_WARN = "4d1a2ae696c8:50555:50555 [0] NCCL WARN Cuda failure 'named symbol not found'\n"
# Constructed: torch's wrapper of an NCCL error (its shape as in
# https://github.com/EasonXiao-888/MambaTree/issues/14, "ncclInternalError: ... Last error:")
# carrying NCCL's words for this failure, on three lines and on one.
TORCH_WRAPPED = """\
RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled cuda error, NCCL version 2.18.1
ncclUnhandledCudaError: Call to CUDA function failed.
Last error:
Cuda failure 'named symbol not found'
"""
TORCH_ONE_LINE = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
                  "unhandled cuda error, NCCL version 2.20.5\nncclUnhandledCudaError: Call to CUDA function failed. "
                  "Last error: Cuda failure 'named symbol not found'\n")


@pytest.mark.parametrize("text", as_pasted(PCLUSTER_56, OLD_WARN, TORCH_WRAPPED, TORCH_ONE_LINE,
                                           "[2026-03-12 14:17:56] " + NCCL_1372,
                                           "(MegatronTrainRayActor pid=228664) " + NCCL_1372))
def test_nccls_kernels_not_found_in_every_form_is_an_nccl_built_without_the_arch(cli, tmp_path, text):
    hit = findings(cli, tmp_path, text)["nccl-kernels-missing"]
    assert hit["severity"] == "error" and "NVCC_GENCODE" in hit["message"]


# Look-alikes: "named symbol not found" from CUDA itself (WSL's missing libnvdxgdmal, an
# extension's own kernels), another NCCL file's WARN (init.cc: CUDA did not start), nccl-tests'
# own check, and a program's own "file:line Cuda failure" macro.
LOOK_ALIKES = [
    # https://github.com/NVIDIA/nvidia-container-toolkit/issues/520 (WSL2, driver 555)
    "CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 500: named symbol not found\n",
    # https://github.com/tensorflow/tensorflow/issues/68711
    "failed call to cuInit: CUDA_ERROR_NOT_FOUND: named symbol not found\n",
    # https://github.com/meta-pytorch/torchcomms/issues/50 (NCCLX on B200)
    "torch.AcceleratorError: CUDA error: named symbol not found\n",
    # https://github.com/deepseek-ai/DeepEP/issues/87
    "  what():  Failed: CUDA error /opt/DeepEP/csrc/kernels/runtime.cu:25 'named symbol not found'\n",
    "host:1:1 [0] init.cc:1522 NCCL WARN Cuda failure 'named symbol not found'\n",
    "node: Test CUDA failure common.cu:892 'named symbol not found'\n",
    "a.cu:12 Cuda failure 'named symbol not found'\n",
    # https://github.com/facefusion/facefusion-docker/issues/34 (onnxruntime's check, WSL2 container)
    "2024-09-22 10:13:04.487179147 [E:onnxruntime:Default, cuda_call.cc:118 CudaCall] CUDA failure 500: named symbol not found ; GPU=-1 ; hostname=0ec3d2c5f698\n",
    "gcn75:2336636:2336906 [0] enqueue.cc:58 NCCL WARN Cuda failure 'out of memory'\n",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_named_symbol_not_found_from_elsewhere_is_not_nccls_kernels(cli, tmp_path, text):
    assert "nccl-kernels-missing" not in findings(cli, tmp_path, text)


def test_torch_built_without_the_arch_is_said_once_as_torchs(cli, tmp_path):
    # https://github.com/pytorch/pytorch/issues/152077: torch's own warning names the arch it
    # lacks; its bundled NCCL lacks it with it, which gpu-arch-unsupported-by-torch states
    text = OLD_WARN + ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
                       "PyTorch installation.\n")
    got = findings(cli, tmp_path, text)
    assert "gpu-arch-unsupported-by-torch" in got and "nccl-kernels-missing" not in got
