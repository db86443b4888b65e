"""Issue 26 (jax group): two classes of JAX/XLA start-up text, judged through `fwdoctor
triage`: XLA's later wording of its ptxas-newer-than-driver warning ("older than the PTX
compiler version 12.6.77", openxla/xla xla/service/gpu/nvptx_compiler.cc) and the CUDA
plugin's "Unable to load cuSPARSE. Is it installed?" (jax_plugins/cuda/__init__.py,
_version_check). Each text is quoted from the public thread named above it; the mangled forms
are what pasting does to them (tests/pasting.py), and the look-alikes must not fire."""

from __future__ import annotations

import pytest

from pasting import forms
from triage_helpers import findings

pytestmark = pytest.mark.usefixtures("use_test_kb")

# ------------------------------------------------------- XLA: the driver older than ptxas
# https://github.com/google-deepmind/alphafold3/issues/538 (and #377: the same lines)
AF3_538 = """\
I1015 18:52:48.803117 47138917599424 xla_bridge.py:895] Unable to initialize backend 'rocm': module 'jaxlib.xla_extension' has no attribute 'GpuAllocatorConfig'
I1015 18:52:48.813315 47138917599424 xla_bridge.py:895] Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: cannot open shared object file: No such file or directory
2025-10-15 18:52:49.085286: W external/xla/xla/service/gpu/nvptx_compiler.cc:930] The NVIDIA driver's CUDA version is 12.4 which is older than the PTX compiler version 12.6.77. Because the driver is older than the PTX compiler version, XLA is disabling parallel compilation, which may slow down compilation. You should update your NVIDIA driver or use the NVIDIA-provided CUDA forward compatibility packages.
"""
# https://github.com/google-deepmind/alphafold3/issues/272 (wrapped by the reporter's terminal)
AF3_272 = """\
The NVIDIA driver's CUDA version is 12.2 which is older than the PTX compiler version 12.6.77. Because 
the driver is older than the PTX compiler version, XLA is disabling parallel compilation, which 
may slow down compilation. You should update your NVIDIA driver or use the 
NVIDIA-provided CUDA forward compatibility packages.
"""
# https://github.com/jax-ml/jax/issues/25718 (a comment: the wording with parentheses)
JAX_25718 = ("The NVIDIA driver's CUDA version is 12.4 which is older than the PTX compiler version (12.6.85). Because the driver is older "
             "than the PTX compiler version, XLA is disabling parallel compilation, which may slow down compilation. You should update "
             "your NVIDIA driver or use the NVIDIA-provided CUDA forward compatibility packages.\n")


@pytest.mark.parametrize("text", [AF3_538, *forms(AF3_538), *forms(AF3_272), JAX_25718, *forms(JAX_25718)])
def test_xla_saying_the_driver_is_older_than_the_ptx_compiler_is_ptxas_newer_than_driver(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "ptxas-newer-than-driver" in found
    assert "is newer than the driver's CUDA 12." in found["ptxas-newer-than-driver"]["message"]


def test_the_driver_and_ptxas_versions_are_read_from_the_later_wording(cli, tmp_path):
    found = findings(cli, tmp_path, AF3_272)
    assert "(CUDA 12.6.77) is newer than the driver's CUDA 12.2" in found["ptxas-newer-than-driver"]["message"]


@pytest.mark.parametrize("text", [
    # a script that silences the warning quotes only its second sentence
    'warnings.filterwarnings("ignore", message="Because the driver is older than the PTX compiler version, XLA is disabling parallel compilation, which may slow down compilation.")\n',
    # prose about the warning, without its numbers
    "A non-fatal XLA warning reported that the NVIDIA driver CUDA version is older than the PTX compiler version, so XLA disabled parallel compilation.\n",
    # the healthy start of the same AlphaFold 3 log: rocm and tpu backends JAX only tries
    AF3_538.split("2025-10-15")[0],
])
def test_text_about_the_warning_without_its_versions_raises_nothing(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "ptxas-newer-than-driver" not in found
    assert not [f for f in found.values() if f["severity"] == "error"]


# -------------------------------------------- JAX's CUDA plugin: a CUDA library did not load
# https://github.com/jax-ml/jax/issues/30050 (jax[cuda12] 0.6.2, an LD_LIBRARY_PATH it cannot unset)
JAX_30050 = """\
ERROR:2025-07-08 12:39:34,990 jax._src.xla_bridge:444] Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()
...
RuntimeError: Unable to load cuSPARSE. Is it installed?
WARNING:2025-07-08 12:39:34,994 jax._src.xla_bridge:794] An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.
"""
# https://github.com/google-deepmind/mujoco_playground/issues/137 (the paste starts at the traceback)
MUJOCO_137 = """\
Traceback (most recent call last):
  File "/home/ygr/miniconda3/envs/mujo_rl/lib/python3.11/site-packages/jax/_src/xla_bridge.py", line 442, in discover_pjrt_plugins
    plugin_module.initialize()
  File "/home/ygr/miniconda3/envs/mujo_rl/lib/python3.11/site-packages/jax_plugins/xla_cuda12/__init__.py", line 230, in initialize
    _check_cuda_versions(raise_on_first_error=True)
  File "/home/ygr/miniconda3/envs/mujo_rl/lib/python3.11/site-packages/jax_plugins/xla_cuda12/__init__.py", line 199, in _check_cuda_versions
    _version_check("cuSPARSE", cuda_versions.cusparse_get_version,
  File "/home/ygr/miniconda3/envs/mujo_rl/lib/python3.11/site-packages/jax_plugins/xla_cuda12/__init__.py", line 139, in _version_check
    raise RuntimeError(err_msg) from e
RuntimeError: Unable to load cuSPARSE. Is it installed?
WARNING:2025-06-06 20:45:54,562:jax._src.xla_bridge:791: An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.
cpu
"""
# https://github.com/jax-ml/jax/issues/20519 (jaxlib 0.4.25's wording)
JAX_20519 = "CUDA backend failed to initialize: Unable to load cuDNN. Is it installed? (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n"


@pytest.mark.parametrize("text", [JAX_30050, *forms(JAX_30050), MUJOCO_137, *forms(MUJOCO_137), JAX_20519, *forms(JAX_20519)])
def test_the_cuda_plugin_failing_to_load_a_library_is_cuda_lib_not_found_with_jaxs_fix(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "cuda-lib-not-found" in found
    finding = found["cuda-lib-not-found"]
    assert finding["severity"] == "error"
    assert "JAX's CUDA plugin could not load cu" in finding["message"]
    assert "LD_LIBRARY_PATH" in finding["fix"]["commands"][0]


@pytest.mark.parametrize("text", [*forms(JAX_30050), *forms(MUJOCO_137)])
def test_a_plugin_that_is_installed_but_failed_is_not_called_a_cpu_build(cli, tmp_path, text):
    assert "framework-cpu-build-on-gpu-host" not in findings(cli, tmp_path, text)


@pytest.mark.parametrize("text", [
    # TensorFlow 0.x's dso_loader (its own errors.yaml row): no JAX fix
    "I tensorflow/stream_executor/cuda/cuda_dnn.cc:3448] Unable to load cuDNN DSO\n",
    # a library's name without JAX's question
    "pyculib: Unable to load cuSPARSE library from the default path\n",
    # JAX's healthy start on a host without ROCm: the rocm backend it only tries
    "I0411 11:31:51.893953 47132171940032 xla_bridge.py:895] Unable to initialize backend 'rocm': module 'jaxlib.xla_extension' has no attribute 'GpuAllocatorConfig'\n",
])
def test_look_alikes_of_the_plugins_load_failure_do_not_give_jaxs_fix(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "JAX's CUDA plugin" not in (found.get("cuda-lib-not-found") or {}).get("message", "")
    if "rocm" in text:
        assert not [f for f in found.values() if f["severity"] == "error"]
