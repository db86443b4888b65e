"""Issue 26, the windows-wsl group: TensorFlow >= 2.11 on native Windows, a CPU-only build there
(framework-cpu-build-on-gpu-host), in reports that say the GPU is meant only by asking
TensorFlow for it (tf.config.list_physical_devices('GPU')) or by saying it is not found
("Tensorflow can't detect my gpu") (fwdoctor.triage.gpu_intent); and such a report's CUDA
release is not read as the one TensorFlow fails to load (cuda-lib-not-found): a CPU build loads
no CUDA.

Recorded public text (sections of tensorflow/tensorflow issue forms), also as pasting mangles
it, beside look-alikes that must stay quiet.
"""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from pasting import as_pasted
from triage_run import severities

# tensorflow/tensorflow#73368 (its form's sections as filed).
SAYS_NOT_DETECTED = """\
### TensorFlow version

2.17.0

### Custom code

No

### OS platform and distribution

Windows 11

### Current behavior?

Tensorflow can't detect my gpu.
But Cuda and cuDNN is installed
"""

# tensorflow/tensorflow#62375 (the version, OS and behaviour sections).
ASKS_FOR_GPUS = """\
### TensorFlow version

2.14

### OS platform and distribution

Windows 10

### Current behavior?

I installed tensorflow and cuda/cudnn but cannot see GPU in tensorflow. 
print('GPU', tf.config.list_physical_devices('GPU'))
The output is:
GPU []
"""

# tensorflow/tensorflow#38990's title: "Tensorflow is not detecting GPU".
SAYS_NOT_DETECTING = """\
### TensorFlow version

2.12.0

### OS platform and distribution

Windows 10

Tensorflow is not detecting GPU, while it is detected in PyTorch
"""

# tensorflow/tensorflow#60830: TensorFlow 2.12 on Windows 10 with CUDA 12.1's nvcc.
WINDOWS_TF212_CUDA121 = """\
### Tensorflow Version

2.12.0

### OS Platform and Distribution

Windows 10 build 19045  0

### Python version

Python 3.10.10

### CUDA/cuDNN version

Cuda compilation tools, release 12.1, V12.1.105 Build cuda_12.1.r12.1/compiler.32688072_0

### Current Behaviour?

`  gpus = tf.config.experimental.list_physical_devices('GPU')`
_This piece of code return empty array_
"""

QUIET = [
    # a CPU device asked for, and a GPU found: no GPU meant-but-missing
    "### TensorFlow version\n\n2.14\n\n### OS platform and distribution\n\nWindows 10\n\nprint(tf.config.list_physical_devices('CPU'))\n",
    "### TensorFlow version\n\n2.14\n\n### OS platform and distribution\n\nWindows 10\n\nThe GPU is detected and training runs fine.\n",
]


@pytest.fixture(scope="module")
def kb() -> KB:
    return KB()


@pytest.mark.parametrize("text", as_pasted(SAYS_NOT_DETECTED, ASKS_FOR_GPUS, SAYS_NOT_DETECTING))
def test_native_windows_tensorflow_asked_for_a_gpu_is_a_cpu_build_on_a_gpu_host(text, kb):
    assert "framework-cpu-build-on-gpu-host" in severities(text, kb)


@pytest.mark.parametrize("text", as_pasted(WINDOWS_TF212_CUDA121))
def test_a_native_windows_cpu_tensorflow_is_not_said_to_miss_its_cuda_libraries(text, kb):
    found = severities(text, kb)
    assert "framework-cpu-build-on-gpu-host" in found
    assert "cuda-lib-not-found" not in found


def test_a_linux_tensorflow_built_for_another_cuda_is_still_cuda_lib_not_found(kb):
    text = "### TensorFlow version\n\n2.2.0\n\n### OS platform and distribution\n\nArch Linux\n\n### CUDA/cuDNN version\n\n10.2.89\n"
    assert "cuda-lib-not-found" in severities(text, kb)


@pytest.mark.parametrize("text", as_pasted(*QUIET))
def test_no_gpu_meant_stays_quiet(text, kb):
    assert "framework-cpu-build-on-gpu-host" not in severities(text, kb)
