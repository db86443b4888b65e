"""A GPU a report names below every release of the framework it names (fwdoctor.triage.arch_floors),
and TensorFlow's JIT failure seen as CUDA_ERROR_INVALID_HANDLE (tf_kernels_for_cc_missing)."""

from __future__ import annotations

from fwdoctor.kb import KB
from fwdoctor.triage.judge import run


def _ids(text: str) -> dict[str, str]:
    report = run(text, KB.load()).report
    return {f.id: f.severity.name.lower() for f in report.findings}


def test_a_cc_1_1_quadro_under_tensorflow_gpu_is_below_every_tensorflow_release() -> None:
    # recorded text: tensorflow/tensorflow#8006 (a Windows 7 laptop's Quadro FX 2800M)
    text = ("My computer installed tensorflow-gpu for windows 7 (FX 2800M)\n\n"
            "My GPU is a Quadro FX 2800M\n"
            "F c:\\tf_jenkins\\home\\workspace\\release-win\\device\\gpu\\os\\windows\\tensorflow\\stream_executor\\cuda\\cuda_driver.cc:94] "
            "Check failed: s.ok() could not find cuDevice\n")
    assert _ids(text).get("gpu-arch-unsupported-by-framework") == "error"


def test_a_kepler_gpu_under_tensorflow_is_not_judged_by_the_all_release_floor() -> None:
    text = "pip install tensorflow-gpu\nMy GPU is a GeForce GTX 770\n"
    assert "gpu-arch-unsupported-by-framework" not in _ids(text)


def test_a_cc_3_0_gpu_named_beside_pytorch_without_a_release_is_a_warning() -> None:
    # recorded text: pytorch/pytorch#14681
    text = "1. pytorch for old CUDA : NVIDIA GeForce GT 740M CUDA \nGPU is GeForce GT 740M | 3.0\n"
    assert _ids(text).get("gpu-arch-unsupported-by-torch") == "warning"


def test_a_gpu_every_torch_wheel_runs_is_not_flagged() -> None:
    text = "import torch\nGPU is NVIDIA GeForce RTX 3090\n"
    assert "gpu-arch-unsupported-by-torch" not in _ids(text)


def test_invalid_handle_after_tensorflows_no_kernels_warning_is_the_jit_failing() -> None:
    # recorded text: tensorflow/tensorflow#97387 (tf-nightly 2.21 on an RTX 5080)
    text = ("W0000 00:00:1753232013.685876   24341 gpu_device.cc:2431] TensorFlow was not built with CUDA kernel binaries "
            "compatible with compute capability 12.0. CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer.\n\n"
            "CUDA_ERROR_INVALID_HANDLE\n")
    assert _ids(text).get("gpu-arch-unsupported-by-framework") == "error"


def test_the_no_kernels_warning_alone_is_still_not_a_failure() -> None:
    text = ("W tensorflow/core/common_runtime/gpu/gpu_device.cc:2052] TensorFlow was not built with CUDA kernel binaries "
            "compatible with compute capability 9.0. CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer.\n")
    assert "gpu-arch-unsupported-by-framework" not in _ids(text)
