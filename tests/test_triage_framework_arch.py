"""Issue 26, GPU architecture support in TensorFlow and JAX reports: classes the development
part did not hold.

1. TensorFlow's "not built with CUDA kernel binaries compatible with compute capability X.Y.
   CUDA kernels will be jit-compiled from PTX" is printed by healthy TensorFlow on GPUs newer
   than its cubins (TF 2.14/2.15 on an H100: it starts slowly and runs). It is a warning (a
   note, no error); it is gpu-arch-unsupported-by-framework where the JIT then fails
   (CUDA_ERROR_INVALID_PTX from TensorFlow's kernel_gen kernels: RTX 50 GPUs under TF 2.16-2.20)
   or where the report shows a release whose published targets hold nothing the GPU runs.
2. jaxlib's own kernels and XLA's (threefry PRNG, linalg, the autotuner's RepeatBufferKernel)
   failing with "no kernel image is available" are a jaxlib build without the GPU's arch (Jetson
   sm_72/sm_87, a source build without --cuda_compute_capabilities for it).
3. TensorFlow's "Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED" is read with a
   note only: its causes (older cuDNN, none, GPU memory taken) are other lines' findings.

Every text is quoted from the public thread named above it and read also as pasting mangles it."""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from fwdoctor.model import Fact, Facts
from fwdoctor.triage import rules as report_rules
from fwdoctor.triage import triage
from tests.pasting import as_pasted
from tests.triage_run import severities

pytestmark = pytest.mark.usefixtures("use_test_kb")

ARCH = "gpu-arch-unsupported-by-framework"


def errors(text: str) -> set[str]:
    return {k for k, s in severities(text, KB()).items() if s.name == "ERROR"}


def kinds(text: str) -> list[str]:
    facts, _ = triage(text)
    return [e["kind"] for e in facts.get("report.errors") or []]


# https://github.com/tensorflow/tensorflow/issues/60739 (tf-nightly 2.14 on an H100: runs, JIT at start)
TF_H100 = ("2023-05-31 14:45:08.138842: W tensorflow/core/common_runtime/gpu/gpu_device.cc:2052] TensorFlow was not built with CUDA kernel "
           "binaries compatible with compute capability 9.0. CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer.\n")
# https://github.com/pytorch/xla/issues/4089 (a V100 under a build without sm_70: slow, not broken)
TF_V100 = ("2022-10-12 07:41:58.001969: W tensorflow/core/common_runtime/gpu/gpu_device.cc:2027] TensorFlow was not built with CUDA kernel "
           "binaries compatible with compute capability 7.0. CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer.\n"
           "2022-10-12 07:41:58.025166: W tensorflow/core/common_runtime/gpu/gpu_device.cc:2027] TensorFlow was not built with CUDA kernel "
           "binaries compatible with compute capability 7.0. CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer.\n")
# RTX 50 GPUs under TensorFlow 2.20 and tf-nightly: the warning line of
# https://github.com/tensorflow/tensorflow/issues/89272 (an RTX 5080; the excerpt stops at "CUDA kernels
# will", the rest is TensorFlow's fixed text), then the kernel_gen lines of
# https://github.com/tensorflow/tensorflow/issues/99592 (RTX 5000-series, TF 2.20), as one log holds them
TF_RTX50 = ("W0000 00:00:1755011248.049012     142 gpu_device.cc:2447] TensorFlow was not built with CUDA kernel binaries compatible with "
            "compute capability 12.0. CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer.\n"
            "W tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc:40] 'cuModuleLoadData(&module, data)' failed with 'CUDA_ERROR_INVALID_PTX'\n"
            "W tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc:40] 'cuModuleGetFunction(&function, module, kernel_name)' failed with 'CUDA_ERROR_INVALID_HANDLE'\n")
# https://github.com/apirrone/Open_Duck_Playground/issues/16 (RTX 5xxx: the same failure, timestamped)
OPENDUCK = ("2025-06-17 09:04:11.340111: W tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc:40] 'cuModuleLoadData(&module, data)' "
            "failed with 'CUDA_ERROR_INVALID_PTX'\n\n"
            "2025-06-17 09:04:11.340135: W tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc:40] 'cuModuleGetFunction(&function, "
            "module, kernel_name)' failed with 'CUDA_ERROR_INVALID_HANDLE'\n")
# https://github.com/CY-CHENYUE/ComfyUI-Molmo/issues/26 (a driver too old for the PTX: not this class)
MOLMO = ("2025-02-01 13:44:34.523685: W tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc:40] 'cuModuleLoadData(&module, data)' "
         "failed with 'CUDA_ERROR_UNSUPPORTED_PTX_VERSION'\n")


def test_tensorflows_ptx_jit_warning_alone_is_a_note_not_an_error():
    for text in (TF_H100, TF_V100):
        for form in as_pasted(text):
            assert "tf-no-kernels-for-cc" in kinds(form), form
            assert ARCH not in errors(form), form
            assert not errors(form), form


def test_tensorflows_ptx_jit_warning_then_invalid_ptx_is_a_build_without_kernels_for_the_gpu():
    for form in as_pasted(TF_RTX50, TF_V100 + OPENDUCK):
        assert ARCH in errors(form), form


def test_the_warning_wrapped_by_a_terminal_is_still_read():
    wrapped = TF_RTX50.replace("compatible with compute capability 12.0. CUDA", "compatible with\ncompute capability 12.0. CUDA", 1)
    assert "tf-no-kernels-for-cc" in kinds(wrapped)
    assert ARCH in errors(wrapped)


def test_invalid_ptx_without_the_warning_or_before_it_is_not_judged_an_arch_gap():
    for form in as_pasted(OPENDUCK, OPENDUCK + TF_H100):
        assert "ptx-jit-invalid" in kinds(form), form
        assert ARCH not in errors(form), form


def test_a_driver_too_old_for_the_ptx_is_not_an_arch_gap():
    for form in as_pasted(TF_H100 + MOLMO):
        assert ARCH not in errors(form), form


def _with_tf(text: str, version: str) -> Facts:
    facts, _ = triage(text)
    item = {"framework": "tensorflow", "version": version, "gpu_build": True}
    return Facts([*(Fact(k, facts[k], source="report") for k in facts if facts.known(k)),
                  Fact("frameworks.installed", [item], source="pip list")])


def test_a_gpu_older_than_every_target_of_the_tensorflow_release_shown_is_an_arch_gap():
    # TensorFlow 2.21.0's build_info.py: sm_60 sm_70 sm_80 sm_89 compute_90 (tests/kb/frameworks.yaml)
    old = TF_H100.replace("compute capability 9.0", "compute capability 5.2")
    found, _ = report_rules.tf_kernels_for_cc_missing.evaluate(_with_tf(old, "2.21.0"), KB())
    assert [f.id for f in found] == [ARCH]
    assert "5.2" in found[0].message
    for text, version in ((TF_H100, "2.21.0"), (old, "2.16.2")):  # the PTX runs on 9.0; 2.16.2 publishes no list
        found, _ = report_rules.tf_kernels_for_cc_missing.evaluate(_with_tf(text, version), KB())
        assert not found, (text, version)


# https://github.com/jax-ml/jax/issues/14546 (jaxlib built from source on a Jetson Xavier NX, sm_72)
JAX_XAVIER = ("2023-02-16 16:53:37.523421: E external/org_tensorflow/tensorflow/compiler/xla/pjrt/pjrt_stream_executor_client.cc:2153] "
              "Execution of replica 0 failed: INTERNAL: CustomCall failed: jaxlib/cuda/cuda_prng_kernels.cc:32: operation cudaGetLastError() "
              "failed: no kernel image is available for execution on the device\n")
# https://github.com/jax-ml/jax/issues/22723 (Jetson Orin Nano, sm_87; rebuilding with sm_87 fixed it)
JAX_ORIN = ("F0729 12:58:37.236422     109 stream_executor_util.cc:504] Could not create RepeatBufferKernel: INTERNAL: Failed call to "
            "cudaGetFuncBySymbol: no kernel image is available for execution on the device\n"
            "*** Check failure stack trace: ***\n")
# https://github.com/jax-ml/jax/issues/40487 (jax[cuda12] 0.11.1 aarch64 wheels on a Jetson Orin)
JAX_ORIN_WHEEL = ("F0905 20:29:15.483413  946981 stream_executor_util.cc:504] Could not load RepeatBufferKernel: INTERNAL: CUDA Runtime error: "
                  "[0] Failed call to cudaGetFuncBySymbol: cudaErrorNoKernelImageForDevice: no kernel image is available for execution on the device\n")
# https://github.com/jax-ml/jax/issues/8731 (the driver older than the PTX: another finding)
JAX_TOOLCHAIN = ("2021-11-30 16:30:21.162015: E external/org_tensorflow/tensorflow/compiler/xla/pjrt/pjrt_stream_executor_client.cc:2086] Execution "
                 "of replica 0 failed: INTERNAL: CustomCall failed: jaxlib/cuda_prng_kernels.cc:30: operation cudaGetLastError() failed: the "
                 "provided PTX was compiled with an unsupported toolchain.\n")
# a torch kernel without an image (not JAX's build): the generic row's note, no framework finding
TORCH_NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"


def test_jaxlib_and_xla_kernels_without_an_image_for_the_gpu_are_a_build_without_its_arch():
    for form in as_pasted(JAX_XAVIER, JAX_ORIN, JAX_ORIN_WHEEL):
        assert "xla-jaxlib-no-kernel-image" in kinds(form), form
        assert ARCH in errors(form), form


def test_look_alikes_of_jaxlibs_missing_kernel_do_not_name_the_arch():
    for form in as_pasted(JAX_TOOLCHAIN, TORCH_NO_KERNEL):
        assert "xla-jaxlib-no-kernel-image" not in kinds(form), form
        assert ARCH not in errors(form), form


# https://github.com/DeepLabCut/DeepLabCut/issues/1299 wording (TensorFlow 1.x, stephen-v/tensorflow_alexnet_classify#4)
CUDNN_HANDLE = ("2019-01-23 21:21:11.073710: E tensorflow/stream_executor/cuda/cuda_dnn.cc:455] could not create cudnn handle: "
                "CUDNN_STATUS_NOT_INITIALIZED\n")


def test_a_failed_cudnn_handle_is_read_with_a_note_and_raises_no_error_of_its_own():
    for form in as_pasted(CUDNN_HANDLE):
        assert "tf-cudnn-handle-failed" in kinds(form), form
        assert not errors(form), form
