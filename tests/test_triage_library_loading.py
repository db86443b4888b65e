"""Issue 26 (library loading on WSL and Linux), as classes, on recorded public text:

- taichi opens the driver by its unversioned name ("[cuda_driver.cpp:load_lib@36] libcuda.so lib
  not found.", taichi/rhi/cuda/cuda_driver.cpp): on WSL2 that name is only in /usr/lib/wsl/lib,
  off the loader cache (wsl-libcuda-not-linked); elsewhere the row's note, no finding.
- CUDA's "no CUDA-capable device" on WSL2 beside a failing nvidia-smi: WSL reaches no GPU at all
  (an Insider build that broke it, microsoft/WSL#6772), not a libcuda off the loader path.
- A cuDNN named as built for one CUDA (System76's system76-cudnn-10.2, NVIDIA's archives and
  Debian packages, a libcudnn copied out of /usr/local/cuda-10.0) where the program runs another
  CUDA major (TensorFlow's LD_LIBRARY_PATH, Paddle's "Runtime API Version"): cudnn-cuda-mismatch.
- A "libcudart.so.11.0: cannot open shared object file" followed, later in the same report, by a
  framework running CUDA 11: the failure may be fixed, so a warning, not an error.
- A CUDA soname said to be not found ("Libcudart.so.11.0 not found"), TensorFlow 1.14's "Could not
  dlopen library": cuda-lib-not-found. A report's own words that the program finds no cuDNN: the same
  id as a warning.
- pip asked for jax[cuda*] on native Windows (JAX has no GPU build there): framework-cpu-build-on-gpu-host.
- WSL's driver folder exported onto LD_LIBRARY_PATH, then "it worked": wsl-libcuda-not-linked.
- pip's "tensorflow 2.15.0.post1 requires keras<2.16,>=2.15.0, but you have keras 3.0.3":
  framework-requirement-conflict.

Each text also as pasting mangles it (tests/pasting.py), beside look-alikes that stay quiet.
"""

from __future__ import annotations

import pytest

from fwdoctor.model import Severity
from fwdoctor.triage import triage
from fwdoctor.triage.judge import run
from tests.pasting import as_pasted


def findings(text: str, kb) -> dict[str, Severity]:
    return {f.id: f.severity for f in run(text, kb).report.findings}


def error_kinds(text: str) -> set[str]:
    facts, _ = triage(text)
    return {e["kind"] for e in (facts["report.errors"] if facts.known("report.errors") else [])}


# ------------------------------------------------------------------ taichi's libcuda.so
# Genesis-Embodied-AI/genesis-world#400 (a development-part report of the field corpus)
GENESIS_400 = (
    "the first is  [cuda_driver.cpp:load_lib@36] libcuda.so lib not found.\n"
    "the other is [misc.py:adaptive_arch_select@758] Arch=[<Arch.cuda: 3>] is not supported, falling back to CPU.\n"
    "\n"
    "I have no idea which operation is useful. But I dealt with that. I ran nvcc --version and found no cuda tool kit and then I "
    "installed it, and then I found no libcuda.so in /usr/lib/x86_64_linux_gnu, so I made a link to libcuda.so in  /usr/wsl/lib "
    "which linked to my cuda for windows.\n"
)
TAICHI_LINE = "the first is  [cuda_driver.cpp:load_lib@36] libcuda.so lib not found.\n"


@pytest.mark.parametrize("text", as_pasted(GENESIS_400))
def test_taichi_libcuda_not_found_on_wsl_is_the_wsl_loader_path(text, test_kb):
    assert "taichi-libcuda-not-found" in error_kinds(text)
    got = findings(text, test_kb)
    assert got.get("wsl-libcuda-not-linked") is Severity.WARNING
    assert Severity.ERROR not in got.values()


@pytest.mark.parametrize("text", as_pasted(TAICHI_LINE))
def test_taichi_libcuda_not_found_off_wsl_is_only_the_rows_note(text, test_kb):
    assert "taichi-libcuda-not-found" in error_kinds(text)
    assert "wsl-libcuda-not-linked" not in findings(text, test_kb)


def test_taichis_other_libraries_not_found_are_not_the_driver():
    # load_lib("libcusparse.so", ...) and libcusolver.so print the same words (cuda_driver.cpp)
    for text in ("[cuda_driver.cpp:load_lib@36] libcusparse.so lib not found.\n", "libcuda.so.1 lib not found.\n"):
        assert "taichi-libcuda-not-found" not in error_kinds(text), text


# ------------------------------------------------------------------ no device, nvidia-smi failing too
# microsoft/WSL#6772 (Windows Insider 21343: "This is a known issue for this build!"; a development-part report)
WSL_6772 = (
    "Microsoft Windows [Version 10.0.21343.1000]\n"
    "Linux version 5.4.91-microsoft-standard-WSL2 (oe-user@oe-host) (gcc version 9.3.0 (GCC)) #1 SMP Mon Jan 25 18:39:31 UTC 2021\n"
    "Latest Nvidia Win10 driver 465.89\n"
    "\n"
    "MyId@DESKTOP-930EG0A:~$ nvidia-smi\n"
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n"
    "\n"
    "cudaGetDeviceCount returned 100\n"
    "-> no CUDA-capable device is detected\n"
    "Result = FAIL\n"
)


@pytest.mark.parametrize("text", as_pasted(WSL_6772))
def test_no_cuda_device_on_wsl_with_nvidia_smi_failing_is_not_the_libcuda_path(text, test_kb):
    got = findings(text, test_kb)
    assert "wsl-libcuda-not-linked" not in got
    assert Severity.ERROR not in got.values()


def test_no_cuda_device_on_wsl_without_nvidia_smi_shown_stays_the_libcuda_path(test_kb):
    without_smi = "".join(line + "\n" for line in WSL_6772.splitlines() if "NVIDIA-SMI" not in line)
    assert findings(without_smi, test_kb).get("wsl-libcuda-not-linked") is Severity.WARNING


# ------------------------------------------------------------------ cuDNN for another CUDA
# system76/cuda#17 (a development-part report): TensorFlow 2.4's dlerror lines, then the install commands
SYSTEM76_17 = (
    "Could not load dynamic library 'libcusolver.so.10'; dlerror: libcusolver.so.10: cannot open shared object file: "
    "No such file or directory; LD_LIBRARY_PATH: /usr/lib/cuda-11.2/lib\n"
    "\n"
    "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: "
    "No such file or directory; LD_LIBRARY_PATH: /usr/lib/cuda/lib64\n"
    "\n"
    "The above warning was after installing the NVIDIA CUDA Toolkit using the following commands\n"
    "sudo apt install system76-cuda-latest\n"
    "sudo apt install system76-cudnn-10.2\n"
)
# PaddlePaddle/Paddle#50591 (a development-part report): a build step's fix copied CUDA 10.0's cuDNN 7
PADDLE_50591 = (
    "7、出现：/home/kylin/2230/Paddle/build/paddle/fluid/eager/auto_code_generator/eager_generator: error while loading shared "
    "libraries: libcudart.so.11.0: cannot open shared object file: No such file or directory，问题；\n"
    "解决方案：\n"
    "sudo cp /usr/local/cuda-10.0/lib64/libcudnn.so.7 /usr/local/lib/libcudnn.so.7 && sudo ldconfig\n"
    "8、cd python/dist\n"
    "9、pip install paddlepaddle_gpu-0.0.0-cp37-cp37m-linux_aarch64.whl\n"
    "Running verify PaddlePaddle program ...\n"
    "W0215 15:09:51.850878 3916 gpu_resources.cc:85] Please NOTE: device: 0, GPU Compute Capability: 6.1, Driver API Version: 11.2, "
    "Runtime API Version: 11.2\n"
)


@pytest.mark.parametrize("text", as_pasted(SYSTEM76_17, PADDLE_50591))
def test_a_cudnn_for_another_cuda_major_than_the_program_runs_is_cudnn_cuda_mismatch(text, test_kb):
    assert findings(text, test_kb).get("cudnn-cuda-mismatch") is Severity.ERROR


# The thread's working pair (system76/cuda#17: "TensorFlow 2.4 with system76-cuda-11.1 and system76-cudnn-11.1"):
# the same lines with the cuDNN of the CUDA in use.
SYSTEM76_MATCHED = SYSTEM76_17.replace("cuda-11.2", "cuda-11.1").replace("system76-cudnn-10.2", "system76-cudnn-11.1")
# tensorflow/tensorflow#36426: cuDNN copied into a CUDA release's folder (not out of one), the CUDA 10.2 in use
TF_36426 = (
    "$ sudo cp include/cudnn.h /usr/local/cuda-10.2/include\n"
    "$ sudo cp lib64/libcudnn* /usr/local/cuda-10.2/lib64\n"
    "$ sudo chmod a+r /usr/local/cuda-10.2/lib64/libcudnn*\n"
    "export LD_LIBRARY_PATH=/usr/local/cuda-10.2/lib64\n"
)
# system76/cuda#17's install commands alone: no CUDA in use shown
SYSTEM76_NO_RUNTIME = "sudo apt install system76-cuda-latest\nsudo apt install system76-cudnn-10.2\n"
# A cuDNN for each of two CUDA majors named: which one the program loads is not shown
TWO_CUDNNS = SYSTEM76_17 + "sudo apt install system76-cudnn-11.1\n"


@pytest.mark.parametrize("text", as_pasted(SYSTEM76_MATCHED, TF_36426, SYSTEM76_NO_RUNTIME, TWO_CUDNNS))
def test_a_cudnn_of_the_cuda_in_use_or_no_cuda_shown_is_no_mismatch(text, test_kb):
    assert "cudnn-cuda-mismatch" not in findings(text, test_kb)


def test_cudnn_builds_are_read_from_nvidias_archive_and_package_names():
    text = ("tar -xzvf cudnn-10.2-linux-x64-v7.6.5.32.tgz\n"
            "ii  libcudnn8  8.1.1.33-1+cuda11.2  amd64  cuDNN runtime libraries\n"
            "tar -xvf cudnn-linux-x86_64-8.9.7.29_cuda12-archive.tar.xz\n")
    facts, _ = triage(text)
    assert [(b["name"], b["cuda"]) for b in facts["report.cudnn_builds"]] == [
        ("cudnn-10.2-linux-x64-v7.6.5.32", "10.2"), ("libcudnn8  8.1.1.33-1+cuda11.2", "11.2"),
        ("cudnn-linux-x86_64-8.9.7.29_cuda12-archive", "12")]


# ------------------------------------------------------------------ libcudart not found, then loaded
@pytest.mark.parametrize("text", as_pasted(PADDLE_50591))
def test_a_cuda_runtime_not_found_then_loaded_later_is_a_warning(text, test_kb):
    assert findings(text, test_kb).get("cuda-lib-not-found") is Severity.WARNING


def test_a_cuda_runtime_not_found_and_not_loaded_later_stays_an_error(test_kb):
    # the errors.yaml row cuda-library-cannot-open's example (S-ERR-TSNECUDA-126), and the runtime line before it
    before = "Runtime API Version: 11.2\nImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n"
    for text in ("ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n", before):
        assert findings(text, test_kb).get("cuda-lib-not-found") is Severity.ERROR, text


# ------------------------------------------------------------------ a CUDA soname said to be not found
# david8862/tf-keras-stacked-hourglass-keypoint-detection#13's title (a development-part report)
HOURGLASS_13 = "# Tensorflow GPU libarary Libcudart.so.11.0 not found\n\nI am using TensorFlow both CPU and GPU version 2.8\n"


@pytest.mark.parametrize("text", as_pasted(HOURGLASS_13))
def test_a_cuda_soname_said_not_found_is_cuda_lib_not_found(text, test_kb):
    assert "cuda-soname-not-found-said" in error_kinds(text)
    assert findings(text, test_kb).get("cuda-lib-not-found") is Severity.ERROR


def test_bitsandbytes_search_for_the_unversioned_runtime_is_not_a_soname_not_found():
    # bitsandbytes-foundation/bitsandbytes#322: its search of the environment, no versioned soname
    text = "CUDA_SETUP: WARNING! libcudart.so not found in any environmental path. Searching in backup paths...\n"
    assert "cuda-soname-not-found-said" not in error_kinds(text)


def test_tensorflow_114s_dso_loader_wording_is_read_as_tensorflows():
    # tensorflow/tensorflow#26289 (TensorFlow 1.14): "Could not dlopen library", before 2.0's "Could not load dynamic library"
    text = "Could not dlopen library 'libcurand.so.10.0'; dlerror: libcurand.so.10.0\n"
    for form in as_pasted(text):
        assert "dlopen-failed" in error_kinds(form), form


# ------------------------------------------------------------------ JAX's CUDA extra on native Windows
# jax-ml/jax#17634 (a development-part report): pip on a cmd prompt, Windows wheels
JAX_17634 = (
    ' C:\\Users\\rosha\\Downloads\\Compressed\\appp>pip install --upgrade "jax[cuda12_pip]" -f https://storage.googleapis.com/jax-releases/jax_cuda_releases.html\n'
    "Looking in links: https://storage.googleapis.com/jax-releases/jax_cuda_releases.html\n"
    "Collecting jax[cuda12_pip]\n"
    "  Using cached jax-0.4.14-py3-none-any.whl\n"
    "Collecting nvidia-cufft-cu12\n"
    "  Using cached nvidia_cufft_cu12-11.0.8.103-py3-none-win_amd64.whl (99.0 MB)\n"
)


@pytest.mark.parametrize("text", as_pasted(JAX_17634))
def test_jax_cuda_extra_on_native_windows_is_a_cpu_only_build(text, test_kb):
    assert findings(text, test_kb).get("framework-cpu-build-on-gpu-host") is Severity.WARNING


@pytest.mark.parametrize("text", [
    # the same command at a Linux prompt, and at a WSL prompt over /mnt/c (Linux wheels): JAX's CUDA build exists there
    "user@host:~$ pip install --upgrade \"jax[cuda12_pip]\" -f https://storage.googleapis.com/jax-releases/jax_cuda_releases.html\n"
    "  Using cached jax-0.4.14-py3-none-any.whl\n",
    "me@DESKTOP-1:/mnt/c/Users/me$ pip install -U \"jax[cuda12]\"\n  Using cached jax-0.4.14-py3-none-any.whl\n",
    # native Windows asking for the CPU build
    "C:\\Users\\me>pip install --upgrade \"jax[cpu]\"\n  Using cached jaxlib-0.4.14-cp310-cp310-win_amd64.whl\n",
])
def test_jax_cuda_extra_elsewhere_or_cpu_extra_on_windows_is_not_that(text, test_kb):
    assert "framework-cpu-build-on-gpu-host" not in findings(text, test_kb)


# ------------------------------------------------------------------ WSL's folder exported, then "it worked"
# oobabooga/textgen#367 (a development-part report)
TEXTGEN_367 = (
    "I followed the Installation guide on WSL\n"
    "BugReporterZ:\n\n"
    "Try this command first: `export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/lib/wsl/lib`\n\n"
    "EugeoSynthesisThirtyTwo:\n\n"
    "Wow thank you for your quick answer, it worked! Unfortunately the second part of the error remains.\n"
)


@pytest.mark.parametrize("text", as_pasted(TEXTGEN_367))
def test_wsl_folder_exported_then_confirmed_is_wsl_libcuda_not_linked(text, test_kb):
    assert findings(text, test_kb).get("wsl-libcuda-not-linked") is Severity.WARNING


@pytest.mark.parametrize("text", [
    TEXTGEN_367.replace("it worked!", "it still doesn't work, it worked before the update!"),
    TEXTGEN_367.replace("Wow thank you for your quick answer, it worked!", "Thanks, I will try."),
])
def test_wsl_folder_exported_without_a_confirmation_is_not_read(text, test_kb):
    assert "wsl-libcuda-not-linked" not in findings(text, test_kb)


# ------------------------------------------------------------------ "it still says there is no cuDNN"
# PaddlePaddle/Paddle#29428 (a development-part report: cudnn64_7.dll's folder was not on PATH)
PADDLE_29428 = "python 3.8.3\npaddle 2.0.0rc0\ncuda10.2 cudnn 7.6.5 已经复制进去\n但依然说没有cudnn\n"
# Theano/Theano#5370 (the cuDNN folder was missing from LIBRARY_PATH)
THEANO_5370 = "In my case I could only use the gpu if run as roo, even if it said it could not find cudnn.\n"


@pytest.mark.parametrize("text", as_pasted(PADDLE_29428, THEANO_5370))
def test_a_report_saying_the_program_finds_no_cudnn_is_a_cuda_lib_warning(text, test_kb):
    assert findings(text, test_kb).get("cuda-lib-not-found") is Severity.WARNING


@pytest.mark.parametrize("text", [
    "cuda10.2 cudnn 7.6.5 已经复制进去\n",           # installed, nothing said missing
    "但依然说没有cuda\n",                             # "no CUDA": the driver, the toolkit or a CPU build
])
def test_words_that_do_not_say_the_program_misses_cudnn_are_not_read(text, test_kb):
    assert "cuda-lib-not-found" not in findings(text, test_kb)


# ------------------------------------------------------------------ pip: a framework's own requirement broken
# tensorflow/tensorflow#62825 (a development-part report): keras-nlp's upgrade pulled Keras 3 over TensorFlow 2.15's Keras
TF_62825 = (
    "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. "
    "This behaviour is the source of the following dependency conflicts.\n"
    "tensorflow 2.15.0.post1 requires keras<2.16,>=2.15.0, but you have keras 3.0.3 which is incompatible.\n"
)


@pytest.mark.parametrize("text", as_pasted(TF_62825, TF_62825.replace("but you have", "but you'll have")))
def test_pip_saying_a_frameworks_requirement_is_broken_is_framework_requirement_conflict(text, test_kb):
    assert findings(text, test_kb).get("framework-requirement-conflict") is Severity.WARNING


@pytest.mark.parametrize("text", [
    # the same wording for packages that are not a framework (pip prints it for any package; many are harmless)
    "# spacy 3.7.2 requires typer<0.10.0,>=0.3.0, but you have typer 0.15.2 which is incompatible.\n",
    # a version inside the range (a mangled paste): pip's claim does not hold
    TF_62825.replace("keras 3.0.3", "keras 2.15.0"),
])
def test_pip_conflicts_of_other_packages_or_inside_the_range_are_not_read(text, test_kb):
    assert "framework-requirement-conflict" not in findings(text, test_kb)
