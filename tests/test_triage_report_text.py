"""Findings only a report's text establishes (fwdoctor.rules.report_text, issue 26 part A):
each rule raised on the text that states its cause and not on the text beside it that
does not (torch's own libraries, a conda libstdc++, a WSL link), and a fence line that
carries an error keeps it readable. The rows' own examples run in tests/test_triage_corpus.py.
"""

from __future__ import annotations

import pytest

from fwdoctor.rules import RULES
from fwdoctor.rules.report_text import REPORT_RULES, system_libstdcxx
from fwdoctor.triage.judge import run
from fwdoctor.triage.text import Lines


def ids(text: str, kb) -> set[str]:
    return {f.id for f in run(text, kb).report.findings}


def test_report_text_ids_have_no_regular_rule_so_check_never_lists_them():
    assert not {r.id for r in REPORT_RULES} & {r.id for r in RULES}


@pytest.mark.parametrize("text, expected", [
    # flash-attn's prebuilt wheel made for another torch (a wrapped terminal line too)
    ("ImportError: /opt/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationE\n",
     "extension-built-for-other-torch"),
    ("`flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined\n symbol: _ZN3c104impl3cow11cow_deleterEPv`\n", "extension-built-for-other-torch"),
    ("docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]].\n", "container-gpu-runtime-missing"),
    ("nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown.\n",
     "container-gpu-runtime-missing"),
    ("root@098b49afe624:/# nvidia-smi\nFailed to initialize NVML: Unknown Error\n", "container-gpu-access-lost"),
    ("ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link\n", "wsl-libcuda-not-linked"),
    ("-r-xr-xr-x 1 root root 141464 Jun 24 05:05 /usr/lib/wsl/lib/libcuda.so.1\n", "wsl-libcuda-not-linked"),
    # a program that opens plain libcuda.so, in a report that says WSL2 (issue 26: the dev
    # reports bitsandbytes-foundation/bitsandbytes#17 and facebookresearch/nougat#115)
    ("Hello, I'm on a completely fresh Windows Subsystem for Linux with CUDA support installation of Ubuntu.\n"
     "OSError: libcuda.so: cannot open shared object file: No such file or directory\n", "wsl-libcuda-not-linked"),
    ("Hi, I am using WSL2 with Python 3.11, and I am facing the error when I run nougat FILE -o OUTFOLDER.\n"
     "  0%|          | 0/1 [00:00<?, ?it/s]Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file or directory\n",
     "wsl-libcuda-not-linked"),
    ("ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by .../libtorch_python.so)\n",
     "system-libstdcxx-too-old"),
    ("ImportError: /home/u/miniforge3/envs/mm/lib/python3.8/site-packages/torch/lib/libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent\n",
     "conda-mkl-breaks-pytorch"),
])
def test_each_report_text_rule_reads_the_text_that_states_its_cause(text, expected, test_kb):
    assert expected in ids(text, test_kb)


@pytest.mark.parametrize("text, absent", [
    # torch's own library missing a c10 symbol is two torch installs mixed, not an extension
    ("ImportError: /usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n",
     "extension-built-for-other-torch"),
    # a symbol that is not torch's C++ API
    ("ImportError: /x/_ext.cpython-310-x86_64-linux-gnu.so: undefined symbol: cudnnSetConvolutionGroupCount\n", "extension-built-for-other-torch"),
    # a conda env's libstdc++ is conda-libstdcxx-too-old's, never the system's
    ("ImportError: /home/u/miniconda3/envs/x/lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by /x/_ext.so)\n",
     "system-libstdcxx-too-old"),
    # WSL's libcuda.so.1 as a link is what it should be
    ("lrwxrwxrwx 1 root root 14 Jun 24 05:05 /usr/lib/wsl/lib/libcuda.so.1 -> libcuda.so.1.1\n", "wsl-libcuda-not-linked"),
    # plain libcuda.so missing where the report does not say WSL2: no WSL finding (NVIDIA/cuda-python#17's text)
    ("RuntimeError: Failed to dlopen libcuda.so\n", "wsl-libcuda-not-linked"),
    # an ls of WSL2's folder that lists libcuda.so is not a program failing to open it
    ("-r-xr-xr-x 1 root root 141464 Jun 24 05:05 /usr/lib/wsl/lib/libcuda.so\n", "wsl-libcuda-not-linked"),
    # pynvml on a host without a driver is not Docker's runtime
    ("OSError: libnvidia-ml.so.1: cannot open shared object file: No such file or directory\n", "container-gpu-runtime-missing"),
])
def test_report_text_rules_stay_quiet_on_the_text_beside_their_cause(text, absent, test_kb):
    assert absent not in ids(text, test_kb)


def test_the_conda_libstdcxx_error_raises_only_the_conda_finding(test_kb):
    found = ids("ImportError: /home/u/miniconda3/envs/x/lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by /x/_ext.so)\n", test_kb)
    assert "conda-libstdcxx-too-old" in found and "system-libstdcxx-too-old" not in found


@pytest.mark.parametrize("path, system", [
    ("/lib/x86_64-linux-gnu/libstdc++.so.6", True), ("/lib64/libstdc++.so.6", True), ("/usr/lib64/libstdc++.so.6.0.19", True),
    ("/home/u/miniconda3/lib/libstdc++.so.6", False), ("/usr/lib/x86_64-linux-gnu/libgomp.so.1", False), ("libstdc++.so.6", False),
])
def test_system_libstdcxx_is_the_distribution_folders_only(path, system):
    assert system_libstdcxx(path) is system


def test_a_fence_that_carries_the_first_error_line_keeps_it(test_kb):
    # pytest's "E" column run into the opening fence (openmm/openmm#3943, a dev report)
    text = ("```E       ImportError: /usr/share/miniconda/lib/python3.9/site-packages/scipy/sparse/../../../../libstdc++.so.6: "
            "version `GLIBCXX_3.4.30' not found (required by /usr/share/miniconda/lib/python3.9/site-packages/openmm/../../../libOpenMM.so.8.0)\n```\n")
    assert "conda-libstdcxx-too-old" in ids(text, test_kb)


def test_a_fence_with_only_its_language_word_stays_unread():
    lines = Lines.of("```shell\n``` python\n```\nnvidia-smi\n")
    assert lines.norm == ("", "", "", "nvidia-smi")


@pytest.mark.parametrize("text, library", [
    # a pasted "," for "." (tonyyxliu/CUHKSZ-CSC4005#69, a dev report)
    ("# error while loading shared libraries: libcudart,so.11.0: cannot open shared object file: No such file or directory\n", "libcudart.so.11.0"),
    # ctranslate2 dlopens cuDNN by name (a pip wheel's folder off the loader path)
    ("Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory\n",
     "libcudnn_ops_infer.so.8"),
    ("RuntimeError: (PreconditionNotMet) The third-party dynamic library (cudnn64_8.dll) that Paddle depends on is not configured correctly.\n", "cudnn64_8.dll"),
])
def test_a_cuda_library_the_program_could_not_open_is_named(text, library, test_kb):
    (finding,) = [f for f in run(text, test_kb).report.findings if f.id == "cuda-lib-not-found"]
    assert f"the loader finds no {library}" in finding.message


def test_tensorflows_dlopen_line_is_left_to_its_own_rule(test_kb):
    text = ("2022-05-22 03:31:41.057907: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
            "'libcusolver.so.11'; dlerror: libcusolver.so.11: cannot open shared object file: No such file or directory\n")
    from fwdoctor.rules.report_text import cuda_lib_not_found

    facts = run(text, test_kb).report.facts
    found, _ = cuda_lib_not_found.evaluate(facts, test_kb)
    assert not found


def test_tensorrts_optional_library_is_no_cuda_library(test_kb):
    text = "Could not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: No such file or directory\n"
    assert "cuda-lib-not-found" not in ids(text, test_kb)


WINDOWS_CPU_TORCH = """PyTorch version: 2.2.2
Is debug build: False
CUDA used to build PyTorch: Could not collect
ROCM used to build PyTorch: N/A

OS: Microsoft Windows 11 Education
Is CUDA available: False
CUDA runtime version: 12.4.99
GPU models and configuration: GPU 0: NVIDIA GeForce RTX 4080 Laptop GPU
Nvidia driver version: 551.86
"""


def test_collect_env_could_not_collect_beside_a_gpu_is_a_cpu_torch(test_kb):
    # pytorch/pytorch#122924 (a dev report): the PyPI Windows wheel is CPU-only
    report = run(WINDOWS_CPU_TORCH, test_kb).report
    assert report.facts["torch.cuda"] is None
    assert "torch-cpu-build-on-gpu-host" in {f.id for f in report.findings}


@pytest.mark.parametrize("change", [
    ("PyTorch version: 2.2.2", "PyTorch version: N/A"),  # torch did not import: nothing is said of its build
    ("ROCM used to build PyTorch: N/A", "ROCM used to build PyTorch: 5.7.31921-d1770ee1b"),  # a ROCm build
])
def test_could_not_collect_says_nothing_where_torch_is_absent_or_rocm(change, test_kb):
    report = run(WINDOWS_CPU_TORCH.replace(*change), test_kb).report
    assert not report.facts.known("torch.cuda")


def test_an_images_cuda_requirement_names_the_driver_it_needs(test_kb):
    text = ("| NVIDIA-SMI 551.78                 Driver Version: 551.78         CUDA Version: 12.4     |\n"
            "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version, "
            "or use an earlier cuda container: unknown\n")
    (finding,) = [f for f in run(text, test_kb).report.findings if f.id == "driver-too-old-for-image"]
    assert "requires CUDA >= 12.8" in finding.message and "supports CUDA 12.4" in finding.message


def test_another_unsatisfied_condition_is_not_the_drivers_cuda(test_kb):
    text = "nvidia-container-cli: requirement error: unsatisfied condition: brand = tesla, please update your driver to a newer version\n"
    assert "driver-too-old-for-image" not in ids(text, test_kb)


def test_an_error_text_a_finding_covers_is_not_listed_as_covered_by_none(test_kb):
    # facebookresearch/nougat#115 (a development report of the field corpus): on WSL2 the row
    # libcuda-unversioned-cannot-open is wsl-libcuda-not-linked's evidence, so its "no finding
    # id fits" note is not printed beside that finding; without WSL named, the note is all there is.
    from fwdoctor.triage.render import render_markdown, render_text

    line = ("  0%|          | 0/1 [00:00<?, ?it/s]Could not load library libcudnn_cnn_infer.so.8. "
            "Error: libcuda.so: cannot open shared object file: No such file or directory\n")
    on_wsl = "Hi, I am using WSL2 with Python 3.11, and I am facing the error when I run nougat FILE -o OUTFOLDER.\n" + line
    result = run(on_wsl, test_kb)
    assert "wsl-libcuda-not-linked" in {f.id for f in result.report.findings}
    assert "libcuda-unversioned-cannot-open" not in render_text(result)
    assert "libcuda-unversioned-cannot-open" not in render_markdown(result, on_wsl)
    assert "libcuda-unversioned-cannot-open: no finding id fits" in render_text(run(line, test_kb))


def test_error_804_is_an_image_cuda_newer_than_the_host_driver(test_kb):
    # wheelos/apollo-lite#80: the forward-compatibility libcuda an image carries runs only on
    # data-center GPUs, so on another GPU the image's CUDA is newer than the driver supports.
    text = ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
            "NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non supported HW\n")
    (finding,) = [f for f in run(text, test_kb).report.findings if f.id == "driver-too-old-for-image"]
    assert "data-center GPUs" in finding.message and "Error 804" in finding.message


def test_tensorflow_0x_unable_to_load_cudnn_dso_is_a_missing_cuda_library(test_kb):
    # RealScout/deep-learning-images#7: TensorFlow before 1.x names the library by its family
    text = "I tensorflow/stream_executor/cuda/cuda_dnn.cc:3448] Unable to load cuDNN DSO\n"
    (finding,) = [f for f in run(text, test_kb).report.findings if f.id == "cuda-lib-not-found"]
    assert "libcudnn" in finding.message and "ldconfig -p | grep libcudnn" in finding.fix.commands[0]


def test_nvidia_container_cli_driver_not_loaded_is_a_missing_driver(test_kb):
    # cedricxie/apollo_perception_ros#20: NVML_ERROR_DRIVER_NOT_LOADED on the host
    text = ("stderr: nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.\n")
    assert "driver-missing" in ids(text, test_kb)


# issue 26, batch 25 (containers): Docker asked for a runtime named nvidia it was never given.
# sair-lab/AirSLAM#113, NVIDIA/deepops#78 and NVIDIA/nvidia-container-toolkit#665 (a development
# report of the field corpus), as pasted and as pastes mangle them.
UNKNOWN_RUNTIME = [
    "docker: Error response from daemon: unknown or invalid runtime name: nvidia.\n",
    "docker: Error response from daemon: Unknown runtime specified nvidia.\nSee 'docker run --help'.\n",
    "`docker: Error response from daemon: unknown or invalid runtime name: nvidia.`\n",
    "> docker: Error response from daemon: unknown or invalid runtime name: nvidia.\r\n",
    "\x1b[31mdocker: Error response from daemon: unknown or invalid runtime name: nvidia.\x1b[0m\n",
    "2024-08-27T20:48:40.123Z docker: Error response from daemon: unknown or invalid runtime name: nvidia.\n",
    "Error response from daemon: Unknown or Invalid runtime name: NVIDIA\n",
    "docker: Error response from daemon: unknown or invalid runtime\nname: nvidia.\n",
]


@pytest.mark.parametrize("text", UNKNOWN_RUNTIME)
def test_an_unknown_nvidia_runtime_is_docker_without_the_nvidia_runtime(text, test_kb):
    (finding,) = [f for f in run(text, test_kb).report.findings if f.id == "container-gpu-runtime-missing"]
    assert "no runtime named nvidia" in finding.message
    assert any("nvidia-ctk runtime configure" in c for c in finding.fix.commands)


@pytest.mark.parametrize("text", [
    # another runtime Docker does not know is not the NVIDIA one
    "docker: Error response from daemon: unknown or invalid runtime name: runsc.\n",
    # a runtime that merely starts with the word
    "docker: Error response from daemon: unknown or invalid runtime name: nvidia-experimental.\n",
])
def test_another_unknown_runtime_is_not_the_nvidia_runtime(text, test_kb):
    assert "container-gpu-runtime-missing" not in ids(text, test_kb)


# torch's DataLoader worker prints this from its SIGBUS handler (torch/csrc/DataLoader.cpp):
# msr-fiddle/pipedream#28, horovod/horovod#1081, pangeo-data/pangeo-docker-images#258 (a
# development report of the field corpus), as pasted and as pastes mangle them.
@pytest.mark.parametrize("text", [
    "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n",
    "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient \n",
    "> ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\r\n",
    "\x1b[1;31mERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\x1b[0m\n",
    "ERROR: Unexpected bus error encountered in\nworker. This might be caused by insufficient shared memory (shm).\n",
])
def test_a_dataloader_workers_bus_error_is_a_small_dev_shm(text, test_kb):
    assert "shm-too-small" in ids(text, test_kb)


def test_a_bus_error_elsewhere_is_not_a_small_dev_shm(test_kb):
    assert "shm-too-small" not in ids("Bus error (core dumped)\n", test_kb)
