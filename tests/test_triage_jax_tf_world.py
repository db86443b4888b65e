"""Issue 26 (jax, tensorflow): classes frequent in public threads that the development reports
did not hold, judged in process by `fwdoctor triage`:

- TensorFlow >= 2.13's "Could not find cuda drivers on your machine, GPU will not be used"
  (xla/tsl/cuda/cudart_stub.cc: no libcudart of its CUDA was found) in a report that asks
  TensorFlow for a GPU: cuda-lib-not-found. The same line on a CPU-only host, or from a torch
  program that imports TensorFlow (transformers), says nothing wrong.
- The CUDA driver's "the provided PTX was compiled with an unsupported toolchain"
  (CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222) among JAX's or TensorFlow's frames: the driver is
  older than the CUDA that wrote the PTX (driver-too-old-for-framework).

Every text is quoted from the public thread named above it (doctor/kb/errors.yaml's sources);
the mangled forms are what pasting does to them (tests/pasting.py)."""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from fwdoctor.model import Severity
from tests.pasting import as_pasted
from tests.triage_run import messages, severities

pytestmark = pytest.mark.usefixtures("use_test_kb")


@pytest.fixture
def kb(test_kb: KB) -> KB:
    return test_kb


# ------------------------------------------- TensorFlow: no libcudart, "cuda drivers" not found
# https://github.com/tensorflow/tensorflow/issues/66750 (TensorFlow 2.13.1, CUDA 12.4, the issue form)
TF_66750 = """\
### TensorFlow version

2.13.1

### OS platform and distribution

Ubuntu 20.04.6

### CUDA/cuDNN version

CUDA 12.4

### GPU model and memory

GEFORCE GTX 4090

### Current behavior?

tensorflow does not detect the CUDA drivers but they are there and added to PATH.
---
python3 -c "import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))"
2024-04-30 16:29:17.328463: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, GPU will not be used.
2024-04-30 16:29:17.362495: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, GPU will not be used.
2024-04-30 16:29:17.362915: I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.
To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with the appropriate compiler flags.
"""
# https://github.com/tensorflow/tensorflow/issues/66750 (a later comment: no form, the GPU count asked)
TF_66750_COMMENT = """\
`import tensorflow as tf
print("Num GPUs Available: ", len(tf.config.list_physical_devices('GPU')))`
And I get:
`2024-06-28 00:03:52.491725: I tensorflow/core/util/port.cc:110] oneDNN custom operations are on. You may see slightly different numerical results due to floating-point round-off errors from different computation orders. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.
2024-06-28 00:03:52.493638: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, GPU will not be used.
2024-06-28 00:03:52.528877: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, GPU will not be used.
2024-06-28 00:03:53.230172: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not find TensorRT

Num GPUs Available:  0
"""
# https://github.com/tensorflow/tensorflow/issues/61689 (TensorFlow 2.13.0 with CUDA 12.0, RTX 2080 SUPER)
TF_61689 = """\
### TensorFlow version

2.13.0

### OS platform and distribution

Linux Ubuntu 20.04

### CUDA/cuDNN version

CUDA 12.0 / cuDNN 8.9.4

### GPU model and memory

GEFORCE RTX 2080 SUPER 

### Current behavior?

I don't understand why the error occurs..please help me...

```shell
$ python3
>>> import tensorrt
>>> import tensorflow
2023-08-25 11:11:47.521702: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, GPU will not be used.
2023-08-25 11:11:47.546940: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, GPU will not be used.
```
"""


@pytest.mark.parametrize("text", as_pasted(TF_66750, TF_66750_COMMENT, TF_61689))
def test_tensorflow_finding_no_cuda_runtime_when_asked_for_a_gpu_is_cuda_lib_not_found(kb, text):
    assert severities(text, kb).get("cuda-lib-not-found") is Severity.ERROR


def test_the_message_names_the_cuda_runtime_not_the_driver(kb):
    message = messages(TF_66750_COMMENT, kb)["cuda-lib-not-found"]
    assert "no CUDA runtime (libcudart)" in message
    assert "Could not find cuda drivers" in message


# A torch server that imports TensorFlow through transformers, on a working A100: the shape of
# sglang-project/sglang's logs (the TensorFlow line quoted from one), with nvidia-smi and torch's answer.
SGLANG_TORCH = """\
2024-02-15 17:38:56.694239: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, GPU will not be used.
2024-02-15 17:38:56.727839: I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow binary is optimized to use available CPU instructions
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.129.03             Driver Version: 535.129.03   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |
| N/A   32C    P0              62W / 400W |      4MiB / 81920MiB |      0%      Default |
+-----------------------------------------+----------------------+----------------------+
>>> torch.cuda.is_available()
True
"""
# A CPU-only host: TensorFlow imported at a prompt, nothing asked of a GPU (the line's later path)
CPU_ONLY = """\
>>> import tensorflow as tf
2024-06-07 14:17:16.238228: I external/local_tsl/tsl/cuda/cudart_stub.cc:32] Could not find cuda drivers on your machine, GPU will not be used.
2024-06-07 14:17:22.488943: I tensorflow/core/platform/cpu_feature_guard.cc:210] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.
"""


@pytest.mark.parametrize("text", as_pasted(SGLANG_TORCH, CPU_ONLY))
def test_the_cudart_line_without_tensorflow_asked_for_a_gpu_raises_no_error(kb, text):
    found = severities(text, kb)
    assert "cuda-lib-not-found" not in found
    assert Severity.ERROR not in found.values()


# ------------------------------------ the driver refusing PTX a newer CUDA wrote (JAX, TensorFlow)
# https://github.com/jax-ml/jax/issues/8731 (jaxlib 0.1.74+cuda11 on driver 465.19.01)
JAX_8731 = """\
Ubuntu 20.04
Nvidia driver 465.19.01
CUDA 11.3
cuDNN 8.2.1.32
Two GPUs: RTX 3080 and GTX 1080 Ti

This is the error message I receive:
```
2021-11-30 16:30:21.162015: E external/org_tensorflow/tensorflow/compiler/xla/pjrt/pjrt_stream_executor_client.cc:2086] Execution of replica 0 failed: INTERNAL: CustomCall failed: jaxlib/cuda_prng_kernels.cc:30: operation cudaGetLastError() failed: the provided PTX was compiled with an unsupported toolchain.
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
  File "/home/alex/.local/lib/python3.8/site-packages/jax/_src/random.py", line 521, in normal
    return _normal(key, shape, dtype)  # type: ignore
```
"""
# https://github.com/jax-ml/jax/issues/9218 (a GCP VM with driver 460.73.01)
JAX_9218 = """\
 NVIDIA-SMI 460.73.01    Driver Version: 460.73.01    CUDA Version: 11.2 
```
which now won't even run the RNG code:
```
RuntimeError: INTERNAL: CustomCall failed: jaxlib/cuda_prng_kernels.cc:30: operation cudaGetLastError() failed: the provided PTX was compiled with an unsupported toolchain.
```
"""
# https://github.com/YoshitakaMo/localcolabfold/issues/44 (the maintainer: upgrade the driver)
COLABFOLD_44 = ("jax._src.traceback_util.UnfilteredStackTrace: RuntimeError: INTERNAL: CustomCall failed: jaxlib/cuda_prng_kernels.cc:30: "
                "operation cudaGetLastError() failed: the provided PTX was compiled with an unsupported toolchain.\n")
# https://github.com/CY-CHENYUE/ComfyUI-Molmo/issues/26 (TensorFlow 2.18.0's kernel launcher)
MOLMO_26 = """\
2025-02-01 13:44:34.523685: W tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc:40] 'cuModuleLoadData(&module, data)' failed with 'CUDA_ERROR_UNSUPPORTED_PTX_VERSION'

2025-02-01 13:44:34.523741: W tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc:40] 'cuModuleGetFunction(&function, module, kernel_name)' failed with 'CUDA_ERROR_INVALID_HANDLE'
"""


@pytest.mark.parametrize("text", as_pasted(JAX_8731, JAX_9218, COLABFOLD_44))
def test_jax_ptx_from_a_newer_cuda_than_the_driver_is_driver_too_old_for_framework(kb, text):
    assert severities(text, kb).get("driver-too-old-for-framework") is Severity.ERROR
    assert "older than the CUDA that wrote the PTX this JAX build loads" in messages(text, kb)["driver-too-old-for-framework"]


@pytest.mark.parametrize("text", as_pasted(MOLMO_26))
def test_tensorflow_ptx_from_a_newer_cuda_than_the_driver_is_driver_too_old_for_framework(kb, text):
    assert severities(text, kb).get("driver-too-old-for-framework") is Severity.ERROR
    assert "TensorFlow" in messages(text, kb)["driver-too-old-for-framework"]


@pytest.mark.parametrize("text", as_pasted(
    # https://github.com/d-li14/involution/issues/52: cupy's kernel, no framework's frames
    "  File \"cupy_backends/cuda/api/driver.pyx\", line 124, in cupy_backends.cuda.api.driver.check_status\n"
    "cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an unsupported toolchain.\n",
    # https://github.com/divelab/GraphBP/issues/2: torch's frames
    "  File \"/home/u/anaconda3/envs/gen/lib/python3.8/site-packages/torch/nn/modules/module.py\", line 850, in convert\n"
    "    return t.to(device, dtype if t.is_floating_point() or t.is_complex() else None, non_blocking)\n"
    "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.\n",
    # JAX's PTX that its own driver failed to load for another reason (jax-ml/jax#14438): not this class
    "2023-02-09 10:53:23.034009: E external/org_tensorflow/tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:538] "
    "failed to load PTX text as a module: CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid\n",
))
def test_ptx_errors_outside_jax_and_tensorflow_or_of_another_kind_are_not_driver_too_old_for_framework(kb, text):
    assert "driver-too-old-for-framework" not in severities(text, kb)


# ------------------------------- XLA's "ptxas X, which is older than Y": only when X is older
# https://github.com/tensorflow/tensorflow/issues/23874 (TensorFlow 1.12's CUDA 10 wheel; a bug in
# the check, fixed in tensorflow/tensorflow commit 83ff640: CUDA 10.0's ptxas is the right one)
TF_23874 = '"*** WARNING *** You are using ptxas 10.0.145, which is older than 9.2.88"\n'
# https://github.com/tensorflow/tensorflow/issues/50096 (TensorFlow 2.5 finding CUDA 9.1's ptxas first)
TF_50096 = ("W tensorflow/stream_executor/gpu/asm_compiler.cc:99] *** WARNING *** You are using ptxas 9.1.121, which is older than 9.2.88. "
            "ptxas 9.x before 9.2.88 is known to miscompile XLA code, leading to incorrect results or invalid-address errors.\n")
# https://github.com/jax-ml/jax/issues/10083 (jax finding CUDA 9.2's ptxas)
JAX_10083 = ("2022-03-30 15:06:58.854617: W external/org_tensorflow/tensorflow/stream_executor/gpu/asm_compiler.cc:111] *** WARNING *** "
             "You are using ptxas 9.2.148, which is older than 11.1. ptxas before 11.1 is known to miscompile XLA code, leading to incorrect "
             "results or invalid-address errors.\n")


@pytest.mark.parametrize("text", as_pasted(TF_50096, JAX_10083))
def test_a_ptxas_older_than_xla_asks_is_ptxas_too_old_for_xla(kb, text):
    assert severities(text, kb).get("ptxas-too-old-for-xla") is Severity.ERROR


@pytest.mark.parametrize("text", as_pasted(TF_23874))
def test_tensorflow_112s_warning_that_calls_a_newer_ptxas_older_raises_nothing(kb, text):
    found = severities(text, kb)
    assert "ptxas-too-old-for-xla" not in found
    assert Severity.ERROR not in found.values()
