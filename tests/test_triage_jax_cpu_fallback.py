"""Issue 26 (jax group): JAX < 0.4.14's "No GPU/TPU found, falling back to CPU" (xla_bridge),
the older JAX's only line when pip's plain, CPU-only jaxlib is installed on a GPU host
(errors.yaml jax-no-gpu-found-cpu-fallback). Where the report shows the GPU or its driver, triage
says the jaxlib is a CPU build (framework-cpu-build-on-gpu-host); alone, or where the report shows
a CUDA jaxlib or the lines of one that ran and failed, it does not. Each text is quoted from the
public thread named above it; the mangled forms are what pasting does (tests/pasting.py)."""

from __future__ import annotations

import pytest

from pasting import forms
from triage_helpers import findings

pytestmark = pytest.mark.usefixtures("use_test_kb")

# https://github.com/gladiaio/gladia/issues/927 (fixed by the +cuda11 jaxlib wheel)
GLADIA_927 = ("2022-11-30 12:50:08,211 - jax._src.lib.xla_bridge - WARNING - No GPU/TPU found, falling back to CPU. "
              "(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n")
# https://github.com/jax-ml/jax/issues/4059 (jax 0.1's UserWarning form)
JAX_4059 = """\
path/venv/lib/python3.6/site-packages/jax/lib/xla_bridge.py:130: UserWarning: No GPU/TPU found, falling back to CPU.
  warnings.warn('No GPU/TPU found, falling back to CPU.')
"""
# https://github.com/jax-ml/jax/issues/5445 (the nvidia-smi of a GPU host, RTX 2070)
SMI_5445 = """\
Sat Jan 16 12:08:11 2021       
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 450.102.04   Driver Version: 450.102.04   CUDA Version: 11.0     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  GeForce RTX 2070    Off  | 00000000:42:00.0  On |                  N/A |
|  0%   41C    P8    11W / 175W |    874MiB /  7979MiB |      5%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
"""

# Look-alikes: the same line after a CUDA jaxlib ran and failed, or beside a CUDA jaxlib named.
# https://github.com/jax-ml/jax/issues/15961 (a K80 on driver 470: cuInit failed)
JAX_15961 = """\
2023-05-11 05:14:42.079662: E external/xla/xla/stream_executor/cuda/cuda_driver.cc:268] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected
2023-05-11 05:14:42.079796: E external/xla/xla/stream_executor/cuda/cuda_diagnostics.cc:312] kernel version 470.182.3 does not match DSO version 520.61.5 -- cannot find working devices in this configuration
No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)
"""
# https://github.com/jax-ml/jax/issues/7867 (jaxlib==0.1.70+cuda101 named)
JAX_7867 = """\
I am using Jax (`jaxlib==0.1.70+cuda101`) on an `Ubuntu 18.04.5` with `Cuda 10.1` installed.

```
WARNING:absl:No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)
```
"""
# https://github.com/jax-ml/jax/issues/4569 (the CUDA jaxlib opened libcudart)
JAX_4569 = """\
/home/ubuntu/anaconda3/envs/python3/lib/python3.6/site-packages/jax/lib/xla_bridge.py:130: UserWarning: No GPU/TPU found, falling back to CPU.
  warnings.warn('No GPU/TPU found, falling back to CPU.')
>>> import jax
2020-10-14 00:38:37.574012: I external/org_tensorflow/tensorflow/stream_executor/platform/default/dso_loader.cc:48] Successfully opened dynamic library libcudart.so.10.0
"""


@pytest.mark.parametrize("text", [GLADIA_927 + SMI_5445, *forms(GLADIA_927 + SMI_5445), *forms(JAX_4059 + SMI_5445)])
def test_jax_falling_back_to_the_cpu_on_a_gpu_host_is_a_cpu_jaxlib(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "framework-cpu-build-on-gpu-host" in found, sorted(found)
    assert found["framework-cpu-build-on-gpu-host"]["message"].startswith("JAX ")


@pytest.mark.parametrize("text", [GLADIA_927, *forms(GLADIA_927), JAX_4059])
def test_the_fallback_alone_raises_nothing(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert not [f for f in found.values() if f["severity"] == "error"], sorted(found)
    assert "framework-cpu-build-on-gpu-host" not in found


@pytest.mark.parametrize("text", [JAX_15961 + SMI_5445, *forms(JAX_7867 + SMI_5445), JAX_4569 + SMI_5445])
def test_the_fallback_of_a_cuda_jaxlib_that_failed_is_not_a_cpu_build(cli, tmp_path, text):
    assert "framework-cpu-build-on-gpu-host" not in findings(cli, tmp_path, text)


# --------------------------------------------- XLA out of GPU memory: a note, not an error
# https://github.com/google-deepmind/jax_privacy/issues/10
JAX_PRIVACY_10 = "Original error: RESOURCE_EXHAUSTED: Failed to allocate request for 176.00MiB (184549376B) on device ordinal 0\n"
# https://github.com/patrickbryant1/AFProfile/issues/8
AFPROFILE_8 = """\
jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4770354232 bytes.
BufferAssignment OOM Debugging.
BufferAssignment stats:
             parameter allocation:  372.76MiB
              constant allocation:    48.5KiB
"""
# https://github.com/jax-ml/jax/issues/788 (jaxlib 0.1.x, wrapped by the reporter's terminal)
JAX_788 = """\
[1] 2019-06-13 01:17:08.886805: E external/org_tensorflow/tensorflow/compiler/xla/python/local_client.cc:672] Execution of replica 0 failed: Resource exhausted: Out 
of memory while trying to allocate 5520758552 bytes.
"""


def _report(cli, tmp_path, text):
    import json

    path = tmp_path / "report.md"
    path.write_text(text)
    return json.loads(cli("triage", "--json", str(path)).output)


def _kinds(doc):
    errors = doc["facts"].get("report.errors")
    value = errors.get("value") if isinstance(errors, dict) else errors
    return [e.get("kind") for e in value or []]


@pytest.mark.parametrize("text", [JAX_PRIVACY_10, *forms(JAX_PRIVACY_10), AFPROFILE_8, *forms(AFPROFILE_8), JAX_788])
def test_xla_out_of_gpu_memory_is_a_note_about_preallocation_not_an_error(cli, tmp_path, text):
    doc = _report(cli, tmp_path, text)
    assert "xla-gpu-out-of-memory" in _kinds(doc)
    assert not [f for f in doc["findings"] if f["severity"] == "error"], doc["findings"]
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" in cli("triage", str(tmp_path / "report.md")).output


@pytest.mark.parametrize("text", [
    # TensorFlow's own allocator (not XLA's): its OOM wording, a different message
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[64,256,56,56]\n",
    # a gRPC status of the same name
    "grpc._channel._InactiveRpcError: status = StatusCode.RESOURCE_EXHAUSTED details = \"Received message larger than max\"\n",
])
def test_other_resource_exhausted_texts_are_not_xla_gpu_memory(cli, tmp_path, text):
    assert "xla-gpu-out-of-memory" not in _kinds(_report(cli, tmp_path, text))
