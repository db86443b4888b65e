"""Issue 26, batch 25 (jax and tensorflow groups): JAX with no CUDA plugin, a CUDA plugin of
another jax/jaxlib release, PJRT API versions that differ, TensorFlow skipping a GPU below its
build's compute-capability floor, and TensorFlow < 2.14 on a CUDA it was not built for, judged
through `fwdoctor triage`. Each text is quoted from the public thread named above it; the
mangled forms are what pasting does to them (quotes, CRLF, colours, wrapping)."""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from fwdoctor.triage import issue_template
from fwdoctor.triage.text import Lines
from triage_helpers import facts_of, findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


def _mangled(text: str) -> list[str]:
    """The text as a markdown quote, with CRLF line ends, and with terminal colours."""
    quoted = "".join(f"> {line}\n" for line in text.splitlines())
    return [text, quoted, text.replace("\n", "\r\n"), "\x1b[33m" + text.rstrip("\n") + "\x1b[0m\n"]


# ------------------------------------------------------------- JAX without a CUDA plugin
# https://github.com/sashakolpakov/dire-jax/issues/14 (pip's plain jax; closed by documenting jax[cuda12])
JAX_NO_CUDA = ("WARNING:2025-05-27 20:22:28,949:jax._src.xla_bridge:791: An NVIDIA GPU may be present on this machine, "
               "but a CUDA-enabled jaxlib is not installed. Falling back to cpu.\n")
# https://github.com/conda-forge/jax-feedstock/issues/162 (conda-forge's cuda build that did not load)
JAX_CONDA_CUDA_BUILD = ("> conda install jaxlib=*=*cuda* jax cuda-nvcc -c conda-forge -c nvidia\n"
                        "> An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.\n")


@pytest.mark.parametrize("text", _mangled(JAX_NO_CUDA))
def test_jax_saying_no_cuda_jaxlib_is_installed_is_a_cpu_build_on_a_gpu_host(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "framework-cpu-build-on-gpu-host" in found
    assert "JAX" in found["framework-cpu-build-on-gpu-host"]["message"]


def test_the_same_warning_beside_a_conda_cuda_build_of_jaxlib_is_not_called_a_cpu_build(cli, tmp_path):
    assert "framework-cpu-build-on-gpu-host" not in findings(cli, tmp_path, JAX_CONDA_CUDA_BUILD)


def test_the_same_warning_after_the_plugin_failed_is_not_called_a_cpu_build(cli, tmp_path):
    text = "Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()\n" + JAX_NO_CUDA
    assert "framework-cpu-build-on-gpu-host" not in findings(cli, tmp_path, text)


# ------------------------------------------------ a CUDA plugin of another jax/jaxlib release
# https://github.com/jax-ml/jax/issues/26750 (dfm: newer GPU plugins than jax/jaxlib 0.4.35)
JAX_26750 = """\
```Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()
Traceback (most recent call last):
  File "../lib/python3.13/site-packages/jax/_src/xla_bridge.py", line 610, in discover_pjrt_plugins
    plugin_module.initialize()
    ~~~~~~~~~~~~~~~~~~~~~~~~^^
  File "../lib/python3.13/site-packages/jax_plugins/xla_cuda12/__init__.py", line 96, in initialize
    xla_client.register_custom_type_id_handler(
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^```

### System info (python version, jaxlib version, accelerator, etc.)

jax:    0.4.35
jaxlib: 0.4.35
numpy:  2.2.3
python: 3.13.2
```
"""
# https://github.com/prs-eth/thera/issues/7
JAX_THERA = """\
Jax plugin configuration error: Plugin module %s could not be loaded
Traceback (most recent call last):
  File "/usr/local/lib/python3.11/dist-packages/jax/_src/xla_bridge.py", line 377, in discover_pjrt_plugins
    plugin_module = importlib.import_module(plugin_module_name)
  File "/usr/local/lib/python3.11/dist-packages/jax_plugins/xla_cuda12/__init__.py", line 21, in <module>
    from jax._src.lib import triton
ImportError: cannot import name 'triton' from 'jax._src.lib' (/usr/local/lib/python3.11/dist-packages/jax/_src/lib/__init__.py)
"""
# https://github.com/sail-sg/envpool/issues/303 (envpool's own custom-call registration passes bytes)
ENVPOOL_TYPEERROR = """\
Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()
Traceback (most recent call last):
  File "/network/scratch/d/darshan.patil/envs/conda/temp/lib/python3.10/site-packages/jax/_src/xla_bridge.py", line 623, in discover_pjrt_plugins
    plugin_module.initialize()
  File "/network/scratch/d/darshan.patil/envs/conda/temp/lib/python3.10/site-packages/jax_plugins/xla_cuda12/__init__.py", line 83, in initialize
    xla_client.register_custom_call_handler(
  File "/network/scratch/d/darshan.patil/envs/conda/temp/lib/python3.10/site-packages/jaxlib/xla_client.py", line 633, in register_custom_call_handler
    handler(name, fn, xla_platform_name, api_version)
TypeError: register_custom_call_target(): incompatible function arguments. The following argument types are supported:
    1. register_custom_call_target(c_api: capsule, fn_name: str, fn: capsule, xla_platform_name: str, api_version: int = 0) -> None

Invoked with types: PyCapsule, bytes, PyCapsule, str, int
"""


def test_a_plugin_calling_an_xla_client_function_jaxlib_lacks_is_a_package_mismatch_despite_equal_jax_and_jaxlib(cli, tmp_path):
    # print_environment_info shows jax == jaxlib and no plugin: the facts pass, the text does not
    found = findings(cli, tmp_path, JAX_26750)
    assert "framework-packages-mismatched" in found
    assert "jax_plugins.xla_cuda12.initialize()" in found["framework-packages-mismatched"]["message"]


@pytest.mark.parametrize("text", _mangled(JAX_THERA))
def test_a_plugin_importing_a_jax_module_jax_lacks_is_a_package_mismatch(cli, tmp_path, text):
    assert "framework-packages-mismatched" in findings(cli, tmp_path, text)


def test_a_third_party_custom_call_registration_failing_in_the_plugin_is_not_called_a_mismatch(cli, tmp_path):
    assert "framework-packages-mismatched" not in findings(cli, tmp_path, ENVPOOL_TYPEERROR)


# https://github.com/DifferentiableUniverseInitiative/jaxDecomp/issues/116 (the plugin's CUDA version check failed)
JAXDECOMP_CUBLAS = """\
ERROR:2026-02-16 14:25:32,221:jax._src.xla_bridge:491: Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()
Traceback (most recent call last):
  File "<conda_path>/lib/python3.11/site-packages/jax_plugins/xla_cuda12/__init__.py", line 201, in _version_check
    version = get_version()
              ^^^^^^^^^^^^^
RuntimeError: jaxlib/cuda/versions_helpers.cc:72: operation cublasGetVersion( nullptr, &version) failed: cuBlas internal error
"""


def test_a_plugin_failing_its_cuda_version_check_is_not_called_a_package_mismatch(cli, tmp_path):
    assert "framework-packages-mismatched" not in findings(cli, tmp_path, JAXDECOMP_CUBLAS)


# https://github.com/intel/intel-extension-for-openxla/issues/27
PJRT_MISMATCH = ("RuntimeError: Unable to initialize backend 'xpu': INVALID_ARGUMENT: Mismatched PJRT plugin PJRT API version (0.38) and "
                 "framework PJRT API version 0.40). (you may need to uninstall the failing plugin package, or set JAX_PLATFORMS=cpu to skip this backend.)\n")


@pytest.mark.parametrize("text", _mangled(PJRT_MISMATCH))
def test_pjrt_api_versions_that_differ_are_a_package_mismatch(cli, tmp_path, text):
    assert "framework-packages-mismatched" in findings(cli, tmp_path, text)


# ------------------------------------------- TensorFlow: a GPU below the build's capability floor
# https://github.com/tensorflow/tensorflow/issues/17445
TF_K2000M = ("2018-03-05 13:43:54.533246: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1283] Ignoring visible gpu device "
             "(device: 0, name: Quadro K2000M, pci bus id: 0000:01:00.0, compute capability: 3.0) with Cuda compute capability 3.0. "
             "The minimum required Cuda capability is 3.5.\n")


@pytest.mark.parametrize("text", [*_mangled(TF_K2000M), TF_K2000M.replace("with Cuda compute capability 3.0. ", "with Cuda compute\ncapability 3.0. ")])
def test_tensorflow_ignoring_a_gpu_below_its_minimum_capability_is_an_arch_unsupported_by_the_framework(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "gpu-arch-unsupported-by-framework" in found


# ---------------------------------------- TensorFlow < 2.14 on a CUDA it was not built for
# https://github.com/tensorflow/tensorflow/issues/39132 (tensorflow-gpu 2.2 opens libcudart.so.10.1; Arch has 10.2)
TF22_CUDA102 = """\
### System information
- **OS Platform and Distribution (e.g., Linux Ubuntu 16.04)**: ArchLinux 64bits
- **TensorFlow installed from (source or binary)**: binary
- **TensorFlow version (use command below)**: tensorflow-gpu 2.2.0rc4
- **Python version**: 3.8.2
- **CUDA/cuDNN version**: 10.2.89-5 (from Archlinux repo)
"""
# https://github.com/tensorflow/tensorflow/issues/39054 (TF 2.1 with its own CUDA 10.1: a V100 conv bug, healthy)
TF21_CUDA101 = """\
**System information**
- Have I written custom code: **yes**
- OS Platform and Distribution: **Ubuntu 16.04**
- TensorFlow installed from: **binary**
- TensorFlow version: **2.1.0**
- Python version: **3.7.3**
- CUDA/cuDNN version: **10.1 and 7.6.4**
- GPU model and memory: **Tesla V100 with 16 or 32GB**
"""
# https://github.com/NVIDIA/tensorflow/issues/89 (NVIDIA's nvidia-tensorflow 1.15 is built for CUDA 11)
NVIDIA_TF115 = """\
- TensorFlow installed from (source or binary):pip install nvidia-tensorflow[1.15]
- TensorFlow version:1.15
- Installed using virtualenv? pip? conda?:conda
- CUDA/cuDNN version:11.4
"""


@pytest.mark.parametrize("text", _mangled(TF22_CUDA102))
def test_tensorflow_22_on_cuda_102_misses_the_libcudart_101_it_opens(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "cuda-lib-not-found" in found
    assert "CUDA 10.1" in found["cuda-lib-not-found"]["message"] and "10.2" in found["cuda-lib-not-found"]["message"]


def test_tensorflow_21_on_the_cuda_101_it_was_built_for_raises_nothing(cli, tmp_path):
    assert "cuda-lib-not-found" not in findings(cli, tmp_path, TF21_CUDA101)


def test_nvidia_tensorflow_on_cuda_11_is_not_judged_by_googles_build_table(cli, tmp_path):
    assert "cuda-lib-not-found" not in findings(cli, tmp_path, NVIDIA_TF115)


def test_a_cudnn_version_in_the_cuda_field_is_not_taken_for_a_cuda_release(cli, tmp_path):
    # https://github.com/tensorflow/tensorflow/issues/60650 answers "CUDA/cuDNN version: 8.1" for TF 2.10.1
    text = "### Tensorflow Version\n\nv2.10.0-76-gfdfc646704c 2.10.1\n\n### CUDA/cuDNN version\n\n8.1\n"
    assert "cuda-lib-not-found" not in findings(cli, tmp_path, text)


@pytest.mark.parametrize("answer, cuda", [("10.2.89-5 (from Archlinux repo)", "10.2"), ("cudnn 7.6 / cuda 10.1", "10.1"), ("cuDNN 8.1", None),
                                          ("**10.1 and 7.6.4**", "10.1"), ("N/A", None)])
def test_the_cuda_a_cuda_cudnn_answer_names(answer, cuda):
    assert issue_template.stated_cuda(answer) == cuda


def test_the_issue_form_states_the_tensorflow_release_its_cuda_and_how_it_was_installed():
    facts = facts_of(issue_template.find, TF22_CUDA102)
    assert facts["report.tf_version"] == "2.2.0"
    assert facts["report.cuda_stated"] == "10.2"
    assert facts["report.tf_installed_from"] == "binary"


def test_the_kb_knows_the_cuda_of_each_tensorflow_release_before_214_by_major_minor():
    kb = KB()
    assert kb.frameworks.tested_build("tensorflow", "2.2.0rc4").cuda == "10.1"
    assert kb.frameworks.tested_build("tensorflow", "1.15.5").cuda == "10.0"
    assert kb.frameworks.tested_build("tensorflow", "2.16.1") is None  # pip brings its CUDA from 2.14 on
    assert kb.frameworks.tested_build("tensorflow", None) is None
