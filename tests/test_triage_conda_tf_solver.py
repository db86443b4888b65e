"""conda's libmamba/libsolv solver texts and TensorFlow's texts in a report (issue 26): real
excerpts from public threads (the source is named above each), as pasted and as pasting
mangles them (tests/pasting.py), with look-alikes that must not fire."""

from __future__ import annotations

import pytest

from fwdoctor.triage import conda_specs

from pasting import forms
from triage_helpers import facts_of, findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


# ------------------------------------------------- the solver sees no __cuda (mamba, libmamba)
# https://github.com/conda-forge/tensorflow-feedstock/issues/216 (mamba in a centos7 docker build:
# conda info shows no __cuda; CONDA_OVERRIDE_CUDA is the answer there)
NOTHING_PROVIDES_216 = """\
Install of tensorflow-gpu==2.7.0 in clean env fails with:

Encountered problems while solving:
  - nothing provides __cuda needed by tensorflow-2.7.0-cuda102py310hcf4adbc_0

       virtual packages : __linux=3.10.0=0
                          __glibc=2.17=0
                          __unix=0=0
"""
# https://github.com/conda-forge/tensorflow-feedstock/issues/222 ("Tensorflow 2.7 doesn't install in
# Docker because GPU is unavailable during image build"; Jenkins' timestamps kept)
NOTHING_PROVIDES_222 = """\
13:39:18  Solving environment: ...working... failed
13:39:18  LibMambaUnsatisfiableError: Encountered problems while solving:
13:39:18    - nothing provides __cuda needed by tensorflow-2.7.0-cuda102py310hcf4adbc_0
"""
# conda/conda tests/core/test_solve.py (test_cuda_fail_1: the libmamba solver's message for a
# cudatoolkit that needs a newer __cuda than the one given)
NOTHING_PROVIDES_RANGE = """\
Encountered problems while solving:
  - nothing provides __cuda >=10.0 needed by cudatoolkit-10.0-0
"""
# libmamba's tree, as deepmodeling's deepmd-kit users paste it on a login node (the same output in
# the README of a project built on deepmd-kit, found by code search; deepmodeling/deepmd-kit#1362:
# "It was the cuda missing, the export CONDA_OVERRIDE_CUDA methods worked")
TREE = """\
Could not solve for environment specs
The following packages are incompatible
├─ deepmd-kit 2.2.10 *gpu is not installable because it requires
│  └─ tensorflow 2.9.* cuda*, which requires
│     └─ __cuda, which is missing on the system;
└─ libdeepmd 2.2.10 *gpu is not installable because it requires
   └─ __cuda, which is missing on the system.
"""
# libmamba 2's tree for conda-forge's CUDA xgboost on a machine without an NVIDIA GPU (a project
# README's record of it, found by code search)
TREE_XGBOOST = """\
Could not solve for environment specs
The following packages are incompatible
├─ libxgboost ==1.7.6 cuda120h75debf4_0 is uninstallable because it requires
│  └─ __cuda  , which is missing on the system;
└─ xgboost ==1.7.6 cuda120py310h379b205_0 is uninstallable because it requires
   └─ __cuda  , which is missing on the system.
"""


@pytest.mark.parametrize("text, package, version, range_", [
    (NOTHING_PROVIDES_216, "tensorflow", "2.7.0", None),
    (NOTHING_PROVIDES_222, "tensorflow", "2.7.0", None),
    (NOTHING_PROVIDES_RANGE, "cudatoolkit", "10.0", ">=10.0"),
    (TREE, "tensorflow", "2.9", None),
    (TREE_XGBOOST, "libxgboost", "1.7.6", None),
])
def test_the_solvers_word_that_nothing_provides_cuda_is_read_as_pasted(text, package, version, range_):
    for form in [text, *forms(text)]:
        need = facts_of(conda_specs.find, form)["conda.cuda_conflict"]["requires"][0]
        assert (need["package"], need["version"], need["dep"], need["range"], need["missing"]) == (package, version, "__cuda", range_, True)


@pytest.mark.parametrize("text", [NOTHING_PROVIDES_216, NOTHING_PROVIDES_222, NOTHING_PROVIDES_RANGE, TREE, TREE_XGBOOST])
def test_a_build_the_solver_finds_no_cuda_for_is_conda_cuda_pin_conflict(text, cli, tmp_path):
    for form in (text, forms(text)[0], forms(text)[4]):
        hit = findings(cli, tmp_path, form)["conda-cuda-pin-conflict"]
        assert hit["severity"] == "error" and "__cuda" in hit["message"] and "solver did not find" in hit["message"]


def test_a_driver_shown_beside_the_missing_cuda_is_named_in_the_finding(cli, tmp_path):
    # tensorflow-feedstock#222 shows the bare-metal host's conda info (__cuda=11.4) beside the docker build's failure
    text = NOTHING_PROVIDES_222 + "       virtual packages : __cuda=11.4=0\n                          __linux=5.4.0=0\n"
    assert "__cuda 11.4" in findings(cli, tmp_path, text)["conda-cuda-pin-conflict"]["message"]


# Look-alikes: a real package named cuda the channel lacks (guoyww/AnimateDiff#293, osx-arm64), an
# option's "would require" among others that install (a docker build log's libmamba 2 tree), and
# prose about the variable.
LOOK_ALIKES = [
    """\
LibMambaUnsatisfiableError: Encountered problems while solving:
  - nothing provides cuda 11.7.* needed by pytorch-cuda-11.7-h67b0de4_0

Could not solve for environment specs
The following package could not be installed
└─ pytorch-cuda 11.7**  is not installable because it requires
   └─ cuda 11.7.* , which does not exist (perhaps a missing channel).
""",
    """\
265.4     ├─ libhwloc 2.12.1**  is installable with the potential options
265.4     │  ├─ libhwloc 2.12.1 would require
265.4     │  │  └─ __cuda, which is missing on the system;
""",
    "Set CONDA_OVERRIDE_CUDA when the solver says nothing provides __cuda: it is the driver's CUDA.\n",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_of_the_missing_cuda_do_not_fire(text, cli, tmp_path):
    assert "conda.cuda_conflict" not in facts_of(conda_specs.find, text)
    assert "conda-cuda-pin-conflict" not in findings(cli, tmp_path, text)


# ------------------------------------- TensorFlow: no NVIDIA kernel driver where it ran
# https://github.com/tensorflow/tensorflow/issues/255 (a 2022 comment: "My TensorFlow is working fine
# giving the output I want but I get these errors", an EC2 instance without a GPU)
TF_NO_KERNEL_DRIVER_255 = """\
2022-10-11 06:15:44.446179: E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected
2022-10-11 06:15:44.446216: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:156] kernel driver does not appear to be running on this host (ip-172-31-27-33): /proc/driver/nvidia/version does not exist
2022-10-11 06:15:44.447798: I tensorflow/core/platform/cpu_feature_guard.cc:193] This TensorFlow binary is optimized with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU instructions in performance-critical operations:  AVX2 FMA
To enable them in other operations, rebuild TensorFlow with the appropriate compiler flags.
"""
# https://github.com/jouvetg/igm_old/issues/7 (the laptop's NVIDIA settings were on "using the
# motherboard only": the NVIDIA driver was not running; CUDA_VISIBLE_DEVICES had nothing to do with it)
TF_NO_KERNEL_DRIVER_IGM = """\
2023-05-12 13:06:22.925539: E tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:267] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected
2023-05-12 13:06:22.925574: I tensorflow/compiler/xla/stream_executor/cuda/cuda_diagnostics.cc:156] kernel driver does not appear to be running on this host (flappi-top): /proc/driver/nvidia/version does not exist
"""


@pytest.mark.parametrize("text, host", [(TF_NO_KERNEL_DRIVER_255, "ip-172-31-27-33"), (TF_NO_KERNEL_DRIVER_IGM, "flappi-top")])
def test_no_kernel_driver_is_not_blamed_on_cuda_visible_devices(text, host, cli, tmp_path):
    from fwdoctor.triage import errors

    for form in [text, *forms(text)]:
        said = [e for e in facts_of(errors.find, form)["report.errors"] if e["kind"] == "tf-kernel-driver-not-running"]
        assert [e["host"] for e in said] == [host]
    for form in (text, forms(text)[0], forms(text)[3]):
        raised = findings(cli, tmp_path, form)
        assert not [f for f in raised.values() if f["severity"] == "error"], raised


def test_no_device_without_tensorflows_word_on_the_driver_still_blames_cuda_visible_devices(cli, tmp_path):
    # DetectionTeamUCAS/FPN_Tensorflow#146: CUDA_VISIBLE_DEVICES="1" on a one-GPU machine
    text = TF_NO_KERNEL_DRIVER_IGM.splitlines()[0] + "\n"
    assert "cuda-visible-devices-hides-gpus" in findings(cli, tmp_path, text)


# ------------------------------- TensorFlow: the driver's libcuda.so.1 is no CUDA/cuDNN release
# https://github.com/conda-forge/tensorflow-feedstock/issues/257 (conda-forge TensorFlow, a driver
# 460.91.3 kernel module, libcuda.so.1 not found by the loader)
TF_LIBCUDA_257 = """\
$ python3 -c "import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))"
2022-07-07 15:53:15.984325: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object file: No such file or directory
2022-07-07 15:53:15.984343: W tensorflow/stream_executor/cuda/cuda_driver.cc:269] failed call to cuInit: UNKNOWN ERROR (303)
2022-07-07 15:53:15.984355: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:169] retrieving CUDA diagnostic information for host: bekolay
2022-07-07 15:53:15.984358: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:176] hostname: bekolay
2022-07-07 15:53:15.984388: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:200] libcuda reported version is: NOT_FOUND: was unable to find libcuda.so DSO loaded into this program
2022-07-07 15:53:15.984409: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:204] kernel reported version is: 460.91.3
[]
"""
# A TensorFlow run on the CPU of a dask notebook pod (a public project's notes, found by code search:
# the model trains; no GPU there), verbatim
TF_LIBCUDA_CPU = """\
2021-11-28 03:45:28.560418: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object file: No such file or directory
2021-11-28 03:45:28.560511: W tensorflow/stream_executor/cuda/cuda_driver.cc:269] failed call to cuInit: UNKNOWN ERROR (303)
2021-11-28 03:45:28.560642: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:156] kernel driver does not appear to be running on this host (dask-notebook-0): /proc/driver/nvidia/version does not exist
"""


@pytest.mark.parametrize("text", [TF_LIBCUDA_257, TF_LIBCUDA_CPU])
def test_the_drivers_libcuda_is_not_a_missing_cuda_release(text, cli, tmp_path):
    for form in (text, forms(text)[0], forms(text)[2], forms(text)[4]):
        assert "cuda-lib-not-found" not in findings(cli, tmp_path, form)
    # with the issue form's CUDA answer (a GPU expected) it is no cuda-lib-not-found error either
    assert "cuda-lib-not-found" not in findings(cli, tmp_path, "- CUDA/cuDNN version: 11.2 / 8.1\n" + text)


def test_a_cuda_runtime_tensorflow_cannot_load_is_still_cuda_lib_not_found(cli, tmp_path):
    # tensorflow/tensorflow's "Could not load dynamic library 'libcudart.so.11.0'" (the dev corpus's
    # tf24-libcudart-110-not-on-loader-path class): a CUDA release, not the driver
    text = TF_LIBCUDA_CPU.replace("libcuda.so.1", "libcudart.so.11.0")
    assert "cuda-lib-not-found" in findings(cli, tmp_path, "- CUDA/cuDNN version: 11.2 / 8.1\n" + text)


# ------------------------------- TensorFlow 1.x on Windows: its self-check finds no CUDA/cuDNN DLL
WINDOWS_DLL = [
    # https://github.com/tensorflow/tensorflow/issues/17101 (tensorflow-gpu 1.5.0, CUDA 9.0's bin not on PATH)
    ("ImportError: Could not find 'cudart64_90.dll'. TensorFlow requires that this DLL be installed in a directory that is named in your "
     "%PATH% environment variable. Download and install CUDA 9.0 from this URL: https://developer.nvidia.com/cuda-toolkit\n", "cudart64_90.dll"),
    # https://github.com/tensorflow/tensorflow/issues/17138 (TensorFlow 1.5 with the cuDNN 6 the install page asked for)
    ("    % (build_info.cudnn_dll_name, build_info.cudnn_version_number))\n"
     "ImportError: Could not find 'cudnn64_7.dll'. TensorFlow requires that this DLL be installed in a directory that is named in your "
     "%PATH% environment variable. Note that installing cuDNN is a separate step from installing CUDA, and this DLL is often found in a "
     "different directory from the CUDA DLLs. You may install the necessary DLL by downloading cuDNN 7 from this URL: https://developer.nvidia.com/cudnn\n",
     "cudnn64_7.dll"),
    # https://github.com/tensorflow/tensorflow/issues/13837 (TensorFlow 1.3's wording, wrapped as it printed it)
    ("- Could not load 'cudart64_80.dll'. The GPU version of TensorFlow\n  requires that this DLL be installed in a directory that is named in\n"
     "  your %PATH% environment variable. Download and install CUDA 8.0 from\n  this URL: https://developer.nvidia.com/cuda-toolkit\n", "cudart64_80.dll"),
]


@pytest.mark.parametrize("text, dll", WINDOWS_DLL)
def test_tensorflows_windows_self_check_naming_a_cuda_dll_is_cuda_lib_not_found(text, dll, cli, tmp_path):
    for form in (text, *forms(text)):
        hit = findings(cli, tmp_path, form)["cuda-lib-not-found"]
        assert hit["severity"] == "error" and dll in hit["message"] and "PATH" in hit["message"]


def test_the_self_checks_driver_and_runtime_dlls_are_not_cuda_releases(cli, tmp_path):
    # https://github.com/simonsuthers/Speech-Separation/issues/4: nvcuda.dll is the driver's; a source build's
    # empty CUDA version (tensorflow/tensorflow#29831) and the MSVC runtime are other classes
    for text in ("ImportError: Could not find 'nvcuda.dll'. TensorFlow requires that this DLL be installed in a directory that is named in your "
                 "%PATH% environment variable. Typically it is installed in 'C:\\Windows\\System32'. If it is not present, ensure that you have "
                 "a CUDA-capable GPU with the correct driver installed.\n",
                 "ImportError: Could not find 'cudart64_.dll'. TensorFlow requires that this DLL be installed in a directory that is named in your "
                 "%PATH% environment variable. Download and install CUDA  from this URL: https://developer.nvidia.com/cuda-90-download-archive\n"):
        assert "cuda-lib-not-found" not in findings(cli, tmp_path, text)
