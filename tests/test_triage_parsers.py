"""The fragment parsers of fwdoctor.triage, each on real excerpts from public threads
(the source is named above each one), and the merging rules of `triage()`."""

from __future__ import annotations

from fwdoctor.model import UNKNOWN
from fwdoctor.triage import build_config, collect_env, dpkg_rpm, driver_version, ds_report, errors, gcc, hf_env, nvcc, nvidia_smi, packages, repl, triage
from fwdoctor.triage.text import Lines, command

from triage_helpers import facts_of


# ----------------------------------------------------------------------------- collect_env
# pytorch/pytorch#95407 (torch 2.0 nightly, 8 x A100)
COLLECT_ENV_2_0 = """\
Collecting environment information...
PyTorch version: 2.0.0.dev20230220+cu117
Is debug build: False
CUDA used to build PyTorch: 11.7
ROCM used to build PyTorch: N/A

OS: Ubuntu 20.04.4 LTS (x86_64)
GCC version: (Ubuntu 9.4.0-1ubuntu1~20.04.1) 9.4.0
Clang version: Could not collect
CMake version: version 3.25.0
Libc version: glibc-2.31

Python version: 3.9.16 | packaged by conda-forge | (main, Feb  1 2023, 21:39:03)  [GCC 11.3.0] (64-bit runtime)
Python platform: Linux-5.4.0-107-generic-x86_64-with-glibc2.31
Is CUDA available: True
CUDA runtime version: Could not collect
CUDA_MODULE_LOADING set to: LAZY
GPU models and configuration: 
GPU 0: NVIDIA A100-SXM4-40GB
GPU 1: NVIDIA A100-SXM4-40GB

Nvidia driver version: 520.61.05
cuDNN version: Probably one of the following:
/usr/lib/x86_64-linux-gnu/libcudnn.so.8.2.1
"""


def test_collect_env_keeps_the_three_cuda_versions_apart():
    facts = facts_of(collect_env.find, COLLECT_ENV_2_0)
    assert facts["torch.version"] == "2.0.0.dev20230220+cu117"
    assert facts["torch.cuda"] == "11.7"  # "CUDA used to build PyTorch"
    assert "cuda.toolkits" not in facts  # "CUDA runtime version: Could not collect"
    assert "cuda.active" not in facts  # never from collect_env
    assert facts["driver.version"] == "520.61.05"
    assert [g["name"] for g in facts["gpus.list"]] == ["NVIDIA A100-SXM4-40GB"] * 2
    assert facts["compilers.gcc_default"]["version"] == "9.4.0"
    assert facts["python.version"] == "3.9.16"
    assert facts["system.glibc"] == "2.31"
    assert facts["system.os"] == {"id": "ubuntu", "version_id": "20.04", "pretty": "Ubuntu 20.04.4 LTS"}


def test_collect_env_runtime_version_is_the_nvcc_on_path_not_torch_cuda():
    # pytorch/pytorch#175855: torch cu128 with an nvcc 11.8 on PATH
    text = "PyTorch version: 2.10.0.dev20251021+cu128\nCUDA used to build PyTorch: 12.8\nCUDA runtime version: 11.8.89\nNvidia driver version: 535.183.01\n"
    facts = facts_of(collect_env.find, text)
    assert facts["torch.cuda"] == "12.8"
    assert [tk["version"] for tk in facts["cuda.toolkits"]] == ["11.8.89"]
    assert facts["cuda.toolkits"][0]["found_via"] == ["nvcc on PATH"]
    assert "cuda.active" not in facts


def test_collect_env_of_a_cpu_build_says_torch_cuda_is_none_and_na_is_unknown():
    cpu = facts_of(collect_env.find, "PyTorch version: 2.2.0+cpu\nIs debug build: False\nCUDA used to build PyTorch: None\nROCM used to build PyTorch: N/A\n")
    assert cpu["torch.cuda"] is None
    # pytorch/torchchat#1408: no torch at all, everything N/A
    none = facts_of(collect_env.find, "PyTorch version: N/A\nIs debug build: N/A\nCUDA used to build PyTorch: N/A\nROCM used to build PyTorch: N/A\n\nOS: Ubuntu 24.04.1 LTS (x86_64)\nCUDA runtime version: 12.4.131\nNvidia driver version: Could not collect\n")
    assert "torch.cuda" not in none and "torch.version" not in none and "driver.version" not in none
    assert none["cuda.toolkits"][0]["version"] == "12.4.131"


def test_vllm_collect_env_with_padded_keys():
    # vllm-project/vllm#28077
    text = """\
==============================
       PyTorch Info
==============================
PyTorch version              : 2.9.0+cu129
Is debug build               : False
CUDA used to build PyTorch   : 12.9
ROCM used to build PyTorch   : N/A

==============================
       CUDA / GPU Info
==============================
Is CUDA available            : True
CUDA runtime version         : 13.0.88
CUDA_MODULE_LOADING set to   : 
GPU models and configuration : 
GPU 0: NVIDIA B200
GPU 1: NVIDIA B200
"""
    facts = facts_of(collect_env.find, text)
    assert (facts["torch.version"], facts["torch.cuda"]) == ("2.9.0+cu129", "12.9")
    assert len(facts["gpus.list"]) == 2 and facts["gpus.list"][1]["index"] == 1


def test_full_width_colons_and_old_collect_env():
    # pytorch/pytorch#37320: "GPU 0： Tesla P100" (full-width colon), torch 1.5 collect_env
    text = "PyTorch version 1.5.0\nIs debug build: No\nCUDA used to build PyTorch: 10.2\n\nPython version: 3.6\nIs CUDA available: No\nCUDA runtime version: 10.0.130\nGPU models and configuration:\nGPU 0： Tesla P100-PCIE-16GB\nGPU 1： Tesla P100-PCIE-16GB\n\nNvidia driver version: 410.104\n"
    facts = facts_of(collect_env.find, text)
    assert [g["name"] for g in facts["gpus.list"]] == ["Tesla P100-PCIE-16GB"] * 2
    assert facts["driver.version"] == "410.104" and facts["torch.cuda"] == "10.2"


def test_openmmlab_env_nvcc_is_cuda_home_and_the_build_config_gives_arch_list():
    # open-mmlab/mmdetection#3089
    text = """\
`sys.platform: linux
Python: 3.6.10 |Anaconda, Inc.| (default, Mar 25 2020, 23:51:54) [GCC 7.3.0]
CUDA available: True
CUDA_HOME: /usr/local/cuda-10.1
NVCC: Cuda compilation tools, release 10.1, V10.1.243
GPU 0: Tesla V100-SXM2-16GB
GCC: gcc (Ubuntu 7.5.0-3ubuntu1~18.04) 7.5.0
PyTorch: 1.4.0
PyTorch compiling details: PyTorch built with:
  - GCC 7.3
  - CUDA Runtime 10.1
  - NVCC architecture flags: -gencode;arch=compute_37,code=sm_37;-gencode;arch=compute_50,code=sm_50;-gencode;arch=compute_60,code=sm_60;-gencode;arch=compute_61,code=sm_61;-gencode;arch=compute_70,code=sm_70;-gencode;arch=compute_75,code=sm_75;-gencode;arch=compute_37,code=compute_37
  - CuDNN 7.6.3
"""
    env = facts_of(collect_env.find, text)
    assert env["cuda.active"] == {"root": "/usr/local/cuda-10.1", "version": "10.1.243", "why": "CUDA_HOME"}
    assert env["torch.version"] == "1.4.0" and env["python.version"] == "3.6.10"
    assert env["gpus.list"][0]["name"] == "Tesla V100-SXM2-16GB"
    built = facts_of(build_config.find, text)
    assert built["torch.cuda"] == "10.1"
    assert built["torch.arch_list"] == ["sm_37", "sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "compute_37"]


def test_sglang_check_env_takes_torch_cuda_from_the_wheel_tag():
    # sgl-project/sglang#1183
    text = "Python: 3.11.7 (main, Dec 15 2023, 18:12:31) [GCC 11.2.0]\nCUDA available: True\nGPU 0,1,2,3,4,5,6,7: NVIDIA RTX A6000\nCUDA_HOME: /usr/local/cuda\nNVCC: Cuda compilation tools, release 12.3, V12.3.103\nCUDA Driver Version: 545.23.08\nPyTorch: 2.4.0+cu121\n"
    facts = facts_of(collect_env.find, text)
    assert facts["torch.cuda"] == "12.1" and facts["driver.version"] == "545.23.08"
    assert [g["index"] for g in facts["gpus.list"]] == list(range(8))
    assert facts["cuda.active"]["version"] == "12.3.103"


# ----------------------------------------------------------------------------- nvidia-smi
# mrhan1993/Fooocus-API#84 (Windows, WDDM)
SMI_546 = """\
Mon Dec 11 17:18:09 2023
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 546.17                 Driver Version: 546.17       CUDA Version: 12.3     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                     TCC/WDDM  | Bus-Id        Disp.A | Volatile Uncorr. ECC |
|=========================================+======================+======================|
|   0  NVIDIA GeForce RTX 2060      WDDM  | 00000000:01:00.0 Off |                  N/A |
| N/A   61C    P8               6W /  90W |    292MiB /  6144MiB |      0%      Default |
+-----------------------------------------+----------------------+----------------------+
"""


def test_nvidia_smi_header_cuda_version_is_the_drivers():
    facts = facts_of(nvidia_smi.find, SMI_546)
    assert facts["driver.version"] == "546.17"
    assert facts["driver.cuda_version"] == "12.3"
    assert facts["driver.nvml_error"] is None
    assert facts["gpus.list"] == [{"index": 0, "name": "NVIDIA GeForce RTX 2060", "cc": None, "memory_mib": None, "uuid": None,
                                   "bus_id": "00000000:01:00.0", "mig": None, "persistence": None, "source": "report"}]
    assert "cuda.active" not in facts and "torch.cuda" not in facts


def test_nvidia_smi_old_header_cut_short():
    # lllyasviel/Fooocus#1313: the header's closing bar is missing
    facts = facts_of(nvidia_smi.find, "| NVIDIA-SMI 470.86       Driver Version: 470.86       CUDA Version: 11.4\n|-------------------------------+\n")
    assert (facts["driver.version"], facts["driver.cuda_version"]) == ("470.86", "11.4")
    assert "gpus.list" not in facts  # no GPU row pasted: unknown, not "no GPU"


def test_nvml_mismatch_with_the_library_version():
    # zzzhouuu/truenas-nvidia-drivers#19
    facts = facts_of(nvidia_smi.find, "root@truenas[/]# nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.178\n")
    assert facts["driver.nvml_error"] == "Failed to initialize NVML: Driver/library version mismatch"
    assert facts["driver.userspace_libs"][0]["version"] == "580.178"
    assert "driver.version" not in facts


# ----------------------------------------------------------------------------- driver version
def test_proc_driver_version_both_flavours():
    # dylanaraps/neofetch#876 and nix-community/nixGL#186
    old = facts_of(driver_version.find, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.98  Thu Oct 26 15:16:01 PDT 2017\nGCC version:  gcc version 7.2.0 (Ubuntu 7.2.0-8ubuntu3)\n")
    assert (old["driver.version"], old["driver.module_flavor"]) == ("384.98", "proprietary")
    new = facts_of(driver_version.find, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (dvs-builder@U16-A24-9-2)  Thu Oct 10 12:15:00 UTC 2024\n")
    assert (new["driver.version"], new["driver.module_flavor"]) == ("565.57.01", "open")
    # the GCC line of the same file is the kernel's compiler, not the default gcc
    assert "compilers.gcc_default" not in facts_of(gcc.find, "GCC version:  gcc version 7.2.0 (Ubuntu 7.2.0-8ubuntu3)\n")


def test_nvrm_api_mismatch_in_three_log_layouts():
    # stackhpc/ansible-slurm-appliance#287 (syslog, #012), Frogging-Family/nvidia-all#394
    # (client name, wrapped differently), saharmor/dalle-playground#104 (dmesg)
    text = (
        "Jun 30 11:07:05 gpu-0 kernel: NVRM: API mismatch: the client has the version 535.54.03, but#012NVRM: this kernel module has the version 530.30.02.  Please#012NVRM: make sure\n"
        "[    9.424670] NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)\n"
        "               NVRM: has the version 595.84, but this kernel module has\n"
        "               NVRM: the version 595.80.  Please make sure that this\n"
        "[ 7386.259769] NVRM: API mismatch: the client has the version 515.48.07, but\n"
        "               NVRM: this kernel module has the version 510.73.05.  Please\n"
    )
    found = [(f.start, f.end, {k.key: k.value for k in f.facts}) for f in driver_version.find(Lines.of(text))]
    assert [(s, e, f["driver.version"], f["driver.userspace_libs"][0]["version"]) for s, e, f in found] == [
        (1, 1, "530.30.02", "535.54.03"), (2, 4, "595.80", "595.84"), (5, 6, "510.73.05", "515.48.07")]


# ----------------------------------------------------------------------------- nvcc, gcc
def test_nvcc_banner_is_one_toolkit_on_path():
    # pytorch/pytorch#51840
    text = "```\nnvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2020 NVIDIA Corporation\nBuilt on Wed_Jul_22_19:09:09_PDT_2020\nCuda compilation tools, release 11.0, V11.0.221\nBuild cuda_11.0_bu.TC445_37.28845127_0\n```\n"
    (frag,) = nvcc.find(Lines.of(text))
    assert (frag.start, frag.end) == (2, 5)
    (fact,) = frag.facts
    assert fact.key == "cuda.toolkits" and fact.value[0]["version"] == "11.0.221" and fact.value[0]["found_via"] == ["nvcc on PATH"]


def test_nvcc_run_by_path_names_its_root():
    text = "$ /usr/local/cuda-12.1/bin/nvcc -V\nnvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.1, V12.1.105\n"
    facts = facts_of(nvcc.find, text)
    assert facts["cuda.toolkits"][0]["root"] == "/usr/local/cuda-12.1"


def test_gcc_version_banners():
    # NVlabs/instant-ngp#1562 (Ubuntu) and cbuchner1/CudaMiner#155 (Fedora)
    assert facts_of(gcc.find, "- gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0\n") == {}  # a bullet in prose, not gcc's output
    assert facts_of(gcc.find, "gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0\n")["compilers.gcc_default"]["version"] == "13.2.0"
    assert facts_of(gcc.find, "gcc (GCC) 5.3.1 20151207 (Red Hat 5.3.1-2)\n")["compilers.gcc_default"]["version"] == "5.3.1"


# ----------------------------------------------------------------------------- packages
def test_pip_freeze_pip_list_and_conda_list():
    # pytorch/pytorch#72957 ([pip3]/[conda] of collect_env), deepspeedai/DeepSpeed#4614 (pip list)
    assert facts_of(packages.find, "[pip3] torch==1.10.2\n") == {"torch.installed": True, "torch.version": "1.10.2"}
    conda = facts_of(packages.find, "[conda] pytorch                   1.10.2          py3.7_cuda10.2_cudnn7.6.5_0    pytorch\n")
    assert conda["torch.cuda"] == "10.2"
    pip = facts_of(packages.find, "tokenizers                0.14.1\ntorch                     2.1.0+cu121\ntorch-grammar             0.3.3\n")
    assert (pip["torch.version"], pip["torch.cuda"]) == ("2.1.0+cu121", "12.1")
    # conda-forge's build string and a pip-installed torch in conda list
    assert facts_of(packages.find, "pytorch 2.1.0 cuda120_py310h327d3bc_300 conda-forge\n")["torch.cuda"] == "12.0"
    assert "torch.cuda" not in facts_of(packages.find, "torch 2.1.0 pypi_0 pypi\n")


def test_dpkg_rows_only_installed_and_real_library_packages():
    # NVIDIA/nvidia-docker#1628 (rc rows), NVIDIA/nvidia-container-toolkit#170 (transitional),
    # NVIDIA/nvidia-docker#854 (the name column cut at "amd6")
    text = (
        "ii  libnvidia-common-510             510.47.03-0ubuntu1 all          Shared files used by the NVIDIA libraries\n"
        "rc  libnvidia-compute-495:amd64      495.29.05-0ubuntu1 amd64        NVIDIA libcompute package\n"
        "ii  libnvidia-compute-510:amd64      510.47.03-0ubuntu1 amd64        NVIDIA libcompute package\n"
        "ii  libnvidia-compute-418:amd64   430.50-0ubuntu3             amd64        Transitional package for libnvidia-compute-430\n"
        "ii  libnvidia-compute-410:amd6 410.73-0ubuntu0~gp amd64              NVIDIA libcompute package\n"
    )
    libs = facts_of(dpkg_rpm.find, text)["driver.userspace_libs"]
    assert [lib["version"] for lib in libs] == ["510.47.03", "410.73"]


def test_rpm_names():
    # Azure/az-hop#269 and negativo17/nvidia-driver#43
    text = "cuda-nvcc-11-3-11.3.58-1.x86_64\nnvidia-driver-latest-dkms-cuda-libs-465.19.01-1.el7.x86_64\nnvidia-driver-cuda-libs-390.25-1.fc27.x86_64\n"
    facts = facts_of(dpkg_rpm.find, text)
    assert [lib["version"] for lib in facts["driver.userspace_libs"]] == ["465.19.01", "390.25"]
    assert facts["cuda.toolkits"][0]["root"] == "/usr/local/cuda-11.3"


def test_ds_report_nvcc_is_cuda_home():
    # deepspeedai/DeepSpeed#6762
    text = """\
DeepSpeed general environment info:
torch install path ............... ['/home/deepspeed/test/trans-venv/lib/python3.12/site-packages/torch']
torch version .................... 2.3.0+cu121
deepspeed info ................... 0.15.5+46d7d0d1, 46d7d0d1, patch-1
torch cuda version ............... 12.1
torch hip version ................ None
nvcc version ..................... 12.0
deepspeed wheel compiled w. ...... torch 0.0, cuda 0.0
shared memory (/dev/shm) size .... 125.77 GB
"""
    facts = facts_of(ds_report.find, text)
    assert (facts["torch.version"], facts["torch.cuda"], facts["cuda.active"]["version"]) == ("2.3.0+cu121", "12.1", "12.0")


def test_transformers_env():
    # huggingface/transformers#35156
    text = """\
- `transformers` version: 4.48.0.dev0
- Platform: Linux-5.15.0-86-generic-x86_64-with-glibc2.35
- Python version: 3.10.14
- Accelerate version: 0.34.2
- PyTorch version (GPU?): 2.4.1+cu121 (True)
- Tensorflow version (GPU?): 2.15.1 (False)
- Using GPU in script?: <fill in>
- GPU type: NVIDIA A100-SXM4-80GB
"""
    facts = facts_of(hf_env.find, text)
    assert (facts["torch.version"], facts["torch.cuda"], facts["python.version"], facts["system.glibc"]) == ("2.4.1+cu121", "12.1", "3.10.14", "2.35")
    assert facts["gpus.list"][0]["name"] == "NVIDIA A100-SXM4-80GB"


def test_python_prompt_answers():
    text = ">>> import torch\n>>> torch.__version__\n'2.1.0+cu121'\n>>> torch.version.cuda\n'12.1'\n>>> torch.cuda.get_arch_list()\n['sm_50', 'sm_60', 'sm_70', 'sm_75', 'sm_80', 'sm_86', 'sm_90']\n>>> print(torch.version.cuda)\nNone\n"
    frags = repl.find(Lines.of(text))
    # the version's +cu121 tag also states torch's CUDA
    assert [(f.start, [(x.key, x.value) for x in f.facts]) for f in frags] == [
        (2, [("torch.installed", True), ("torch.version", "2.1.0+cu121"), ("torch.cuda", "12.1")]),
        (4, [("torch.cuda", "12.1")]),
        (6, [("torch.arch_list", ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"])]),
        (8, [("torch.cuda", None)])]


# ----------------------------------------------------------------------------- errors
def _errors(text: str) -> list[dict]:
    return [e for f in errors.find(Lines.of(text)) for k in f.facts if k.key == "report.errors" for e in k.value]


def test_found_version_is_the_drivers_cuda():
    # RVC-Boss/GPT-SoVITS#83: the message wrapped with runs of spaces
    (err,) = _errors("`RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update")
    assert (err["kind"], err["driver_cuda"]) == ("driver-too-old", "11.4")
    assert facts_of(errors.find, "(found version 9010)")  == {}  # without torch's words it is nothing
    wrapped = _errors("AssertionError:\nThe NVIDIA driver on your system is too old\n(found version 9000).\n")
    assert [e["driver_cuda"] for e in wrapped] == ["9.0"]


def test_sm_warning_gives_the_gpu_and_torch_arch_list():
    # lmoe/wyoming-xtts#1
    text = "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:287: UserWarning:\nNVIDIA GeForce RTX 5060 Ti with CUDA capability sm_120 is not compatible with the current PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n"
    facts = facts_of(errors.find, text)
    assert facts["gpus.list"][0]["name"] == "NVIDIA GeForce RTX 5060 Ti" and facts["gpus.list"][0]["cc"] == "12.0"
    assert facts["torch.arch_list"] == ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]


def test_detected_cuda_version_wrapped_over_two_lines():
    # icip-cas/AutoAlign#25
    text = "RuntimeError:\n      The detected CUDA version (11.8) mismatches the version that was used to compile\n      PyTorch (12.4). Please make sure to use the same CUDA versions.\n"
    facts = facts_of(errors.find, text)
    assert facts["cuda.active"]["version"] == "11.8" and facts["torch.cuda"] == "12.4"
    assert len(_errors(text)) == 1


def test_compiler_and_arch_and_cudnn_errors():
    assert _errors("/usr/include/crt/host_config.h:139:2: error: #error -- unsupported GNU version! gcc versions later than 11 are not supported!")[0]["gcc_max"] == "11"
    assert _errors("nvcc fatal   : Unsupported gpu architecture 'compute_89'")[0]["arch"] == "compute_89"
    # NVIDIA/nvidia-container-toolkit#224
    sym = _errors("Could not load library libcudnn_cnn_train.so.8. Error: /home/czh/anaconda3/envs/python39/bin/../lib/libcudnn_ops_train.so.8: undefined symbol: _Z22cudnnGenericOpTensorNdILi2EE13cudnnStatus_t, version libcudnn_ops_infer.so.8")
    assert sym[0]["library"] == "libcudnn_ops_train.so.8"
    assert facts_of(errors.find, "AssertionError: Torch not compiled with CUDA enabled")["torch.cuda"] is None


# ----------------------------------------------------------------------------- the whole report
def test_messy_markdown_keeps_line_numbers_and_reads_through_quotes_prompts_and_crlf():
    text = "> PyTorch version: 2.1.0+cu121\r\n> CUDA used to build PyTorch: 12.1\r\n> Nvidia driver version: 470.82.01\r\n\r\n```shell\r\n(venv) user@box:~$ nvidia-smi\r\nFailed to initialize NVML: Driver/library version mismatch\r\n```\r\n"
    facts, fragments = triage(text)
    assert facts["driver.version"] == "470.82.01" and facts.source("driver.version") == "report line 3: collect_env"
    assert facts["driver.nvml_error"].startswith("Failed to initialize NVML")
    assert facts.source("driver.nvml_error") == "report line 7: nvidia-smi"
    assert command("(venv) user@box:~$ nvidia-smi") == "nvidia-smi"


def test_what_the_report_does_not_show_is_unknown_with_the_command_that_would_show_it():
    facts, fragments = triage("PyTorch version: 2.1.0+cu121\nCUDA used to build PyTorch: 12.1\nOS: Ubuntu 22.04.3 LTS (x86_64)\n")
    assert facts["driver.version"] is UNKNOWN
    assert "nvidia-smi" in facts.why("driver.version")
    assert facts["cuda.active"] is UNKNOWN and "CUDA_HOME" in facts.why("cuda.active")
    assert facts["report.errors"] == []


def test_a_bare_cuda_version_in_prose_is_none_of_the_three():
    facts, fragments = triage("My CUDA version is 12.1 and CUDA Version: 12.2 in my notes\n")
    for key in ("torch.cuda", "cuda.active", "cuda.toolkits"):
        assert facts[key] is UNKNOWN, key
    assert fragments == [] or all(f.kind == "nvidia-smi" for f in fragments)


def test_the_more_trusted_fragment_wins_and_the_other_is_noted():
    # collect_env says 12.1; torch's own cpp_extension error says 11.8 for CUDA_HOME and 12.1 for torch: agree
    text = "PyTorch version: 2.1.0\nCUDA used to build PyTorch: 12.1\nGPU models and configuration: GPU 0: NVIDIA A10\n[pip3] torch==2.1.0+cu118\n"
    facts, fragments = triage(text)
    assert facts["torch.cuda"] == "12.1"  # collect_env beats a pip line
    assert any("torch.cuda" in note for f in fragments for note in f.notes)


def test_a_longer_gpu_list_wins_over_a_cut_nvidia_smi_table():
    text = "GPU models and configuration:\nGPU 0: NVIDIA GeForce RTX 4090\nGPU 1: NVIDIA GeForce RTX 4090\nNvidia driver version: 535.104.05\nPyTorch version: 2.1.0\n" + SMI_546
    facts, _ = triage(text)
    assert len(facts["gpus.list"]) == 2


def test_garbage_never_raises():
    for text in ("", "\x00\xff" * 50, "|" * 5000, "NVIDIA-SMI", "GPU 0:", "PyTorch version:\n" * 300, "```\n" * 99):
        facts, fragments = triage(text)
        assert facts["report.errors"] == []


def test_several_commands_in_one_block():
    # one fence holding three commands, the outputs as pytorch/pytorch#51840 and
    # deepspeedai/DeepSpeed#2055 show them
    text = """```
$ nvidia-smi
NVIDIA-SMI 470.129.06   Driver Version: 470.129.06   CUDA Version: 11.4
$ nvcc --version
nvcc: NVIDIA (R) Cuda compiler driver
Cuda compilation tools, release 11.3, V11.3.109
$ pip list | grep torch
torch                     1.7.1+cu110
```"""
    facts, fragments = triage(text)
    assert [f.kind for f in fragments] == ["nvidia-smi", "nvcc", "pip list"]
    assert facts["driver.cuda_version"] == "11.4"  # the driver's
    assert facts["cuda.toolkits"][0]["version"] == "11.3.109"  # a toolkit's
    assert facts["torch.cuda"] == "11.0"  # torch's
    assert facts["cuda.active"] is UNKNOWN


# ----------------------------------------------------------------------------- judging
def test_an_error_text_rule_runs_only_where_the_regular_rule_could_not(test_kb):
    from fwdoctor.triage.judge import run

    # NVML's message alone: the regular rule lacks the versions, the report's own words decide
    only_error = run("Failed to initialize NVML: Driver/library version mismatch\n", test_kb).report
    assert [f.id for f in only_error.findings] == ["driver-library-mismatch"]
    assert "driver-library-mismatch" not in {n.rule for n in only_error.not_checked}
    # with the kernel log's versions too: one finding, the regular rule's, with both versions
    both = run("Failed to initialize NVML: Driver/library version mismatch\n[ 7386.259769] NVRM: API mismatch: the client has the version 515.48.07, but\n"
               "               NVRM: this kernel module has the version 510.73.05.  Please\n", test_kb).report
    (finding,) = both.findings
    assert "510.73.05" in finding.message and "515.48.07" in finding.message


def test_a_driver_whose_cuda_is_an_older_major_than_torchs(test_kb):
    from fwdoctor.triage.judge import run

    # nvidia-smi's header and a pip line: the regular rule (470.86 is below CUDA 12's floor)
    # reports it, once
    text = "| NVIDIA-SMI 470.86       Driver Version: 470.86       CUDA Version: 11.4\ntorch==2.1.0+cu121\n"
    (finding,) = run(text, test_kb).report.findings
    assert finding.id == "driver-too-old-for-torch" and "525.60.13" in finding.message
    # torch's own message with the CUDA from a pip line: the error-text rule, quoting it
    text = "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\ntorch==2.1.0+cu121\n"
    (finding,) = run(text, test_kb).report.findings
    assert finding.id == "driver-too-old-for-torch" and "report line 1" in finding.message and "CUDA 11.4" in finding.message
