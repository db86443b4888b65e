"""The environment readers of issue 26 (df /dev/shm, lspci ACSCtl, TensorFlow's and JAX's
issue templates, conda's CPU builds) on real excerpts from public threads (the source is
named above each one), their negative cases, and the triage findings they lead to."""

from __future__ import annotations

import json
import time

import pytest

from fwdoctor.triage import conda_builds, envdump, issue_template, jax_env, lspci, paddle, shm, triage

from triage_helpers import facts_of, findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


# ----------------------------------------------------------------------------- df /dev/shm
# https://gitlab.com/gitlab-org/gitlab/-/issues/281199 (`df /dev/shm` inside a Docker-in-Docker job)
DF_DOCKER_1K = """\
Filesystem           1K-blocks      Used Available Use% Mounted on
shm                      65536         0     65536   0% /dev/shm
"""
# https://gist.github.com/guoqiao/796c52a01ab3a4cb55616a43570a4ab5 (`docker run --rm -it ubuntu bash; df -h`)
DF_DOCKER_H = """\
Filesystem Size Used Avail Use% Mounted on
...
shm 64M 0 64M 0% /dev/shm
"""
# https://github.com/pytorch/pytorch/issues/5040 (a host's /dev/shm filling up, `df -h | grep sh`)
DF_HOST = """\
tmpfs                 24G   38M   24G   1% /dev/shm
tmpfs                 24G  630M   23G   3% /dev/shm
"""


def test_df_reads_dockers_64_mib_shm_in_1k_blocks_and_human_sizes():
    for text in (DF_DOCKER_1K, DF_DOCKER_H):
        facts = facts_of(shm.find, text)
        assert facts["system.shm_bytes"] == 64 * 1024 * 1024
        assert facts["system.container"] is True  # Docker names its /dev/shm mount "shm"


def test_df_on_a_host_gives_the_size_and_says_nothing_about_containers():
    facts = facts_of(shm.find, DF_HOST)
    assert facts["system.shm_bytes"] == 24 * 1024**3
    assert "system.container" not in facts


def test_df_ignores_other_mounts_and_sizes_no_df_prints():
    assert facts_of(shm.find, "overlay 63G 20G 40G 34% /\n") == {}
    assert facts_of(shm.find, "shm 99999999999G 0 1G 0% /dev/shm\n") == {}  # not a df -h size
    assert facts_of(shm.find, "shm 65536 0 65536 0% /dev/shm\n") == {}  # blocks of an unknown unit (no header)
    assert facts_of(shm.find, "I set /dev/shm to 64M in docker\n") == {}


def test_a_64_mib_shm_in_a_container_is_shm_too_small(cli, tmp_path):
    found = findings(cli, tmp_path, DF_DOCKER_1K)
    assert found["shm-too-small"]["severity"] == "warning"
    assert "64 MiB in a container" in found["shm-too-small"]["message"]
    assert "shm-too-small" not in findings(cli, tmp_path, DF_HOST)


# https://github.com/NVIDIA/nccl-tests/issues/166 (NCCL 2.1x: its shared-memory error, no df shown)
NCCL_SHM = "ubuntu:9621:9688 [3] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-KWfVyt (size 5967872)\n"


def test_nccls_shared_memory_error_is_shm_too_small_when_no_size_is_shown(cli, tmp_path):
    found = findings(cli, tmp_path, NCCL_SHM)
    assert "report line 1" in found["shm-too-small"]["message"]


def test_a_big_shown_shm_wins_over_the_error_text(cli, tmp_path):
    # the regular rule judges the size the report shows; the error row only speaks when no size is shown
    assert "shm-too-small" not in findings(cli, tmp_path, DF_HOST + NCCL_SHM)


# ----------------------------------------------------------------------------- lspci ACSCtl
# https://github.com/NVIDIA/nccl/issues/629 (`lspci -vvv | grep ACSCtl`, tabs as pasted)
ACS_GREPPED = """\
\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
"""
# https://github.com/NVIDIA/nccl/issues/1405 (ACS disabled everywhere)
ACS_OFF = """\
lspci -vvv | grep ACSCtl
  ACSCtl: SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-
  ACSCtl: SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-
"""
# https://github.com/NVIDIA/nccl/issues/2079 (the reporter's retyped register, commas and all)
ACS_RETYPED = """\
  both behind AMD Starship/Matisse GPP bridges that had ACS enabled (ACSCtl: 0x001d = SrcValid+, ReqRedir+, CmpltRedir+,
  UpstreamFwd+), which forced P2P traffic through the IOMMU instead of direct GPU-to-GPU, causing NCCL to hang.
"""
# https://github.com/HeyMeco/Rockchip-pcie-devices/issues/6 (`lspci -vvv` of a PLX switch): the
# header line and the ACSCap/ACSCtl lines are verbatim from that paste, joined here into one block
# (the excerpt of the paste shows this ACSCtl at the end of the block before the header).
ACS_BLOCK = """\
0000:02:08.0 PCI bridge: PLX Technology, Inc. PEX 8725 24-Lane, 10-Port PCI Express Gen 3 (8.0 GT/s) Multi-Root Switch with DMA (rev ca) (prog-if 00 [Normal decode])
        Subsystem: PLX Technology, Inc. PEX 8725 24-Lane, 10-Port PCI Express Gen 3 (8.0 GT/s) Multi-Root Switch with DMA
                ACSCap: SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+
                ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
        Kernel driver in use: pcieport

"""


def test_grepped_acsctl_lines_with_redirect_make_one_entry_without_a_bridge():
    (entry,) = facts_of(lspci.find, ACS_GREPPED)["pci.acs"]
    assert entry["bridge"] is None and entry["redirect"] is True
    assert entry["acs_ctrl"] == 0x1D  # SrcValid, ReqRedir, CmpltRedir, UpstreamFwd
    assert "2 ACSCtl lines" in entry["why"]


def test_acsctl_all_off_and_acscap_alone_say_nothing():
    assert facts_of(lspci.find, ACS_OFF) == {}
    assert facts_of(lspci.find, "ACSCap: SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+\n") == {}


def test_a_retyped_register_with_commas_is_read_from_its_flags():
    (entry,) = facts_of(lspci.find, ACS_RETYPED)["pci.acs"]
    # the flags on the ACSCtl line itself (UpstreamFwd+ wrapped onto the next line)
    assert entry["redirect"] is True and entry["acs_ctrl"] == 0x0D


def test_an_acsctl_line_belongs_to_the_bridge_of_its_block():
    (entry,) = facts_of(lspci.find, ACS_BLOCK)["pci.acs"]
    assert entry["bridge"] == "0000:02:08.0" and entry["redirect"] is True and entry["gpus"] == []


def test_an_endpoints_own_acs_is_not_a_bridges():
    text = "41:00.0 VGA compatible controller: NVIDIA Corporation Device 26b1 (rev a1)\n" + ACS_BLOCK.splitlines(True)[3]
    assert facts_of(lspci.find, text) == {}


def test_acs_redirect_from_a_report_is_pcie_acs_redirect(cli, tmp_path):
    found = findings(cli, tmp_path, ACS_BLOCK)
    hit = found["pcie-acs-redirect"]
    assert "0000:02:08.0" in hit["message"] and "not shown" in hit["message"]
    grepped = findings(cli, tmp_path, ACS_GREPPED)["pcie-acs-redirect"]
    assert "(not named)" in grepped["message"]
    assert "pcie-acs-redirect" not in findings(cli, tmp_path, ACS_OFF)


# ----------------------------------------------------------------------------- issue templates
# https://github.com/tensorflow/tensorflow/issues/60156 (TensorFlow's issue form, native Windows)
TF_WIN_211 = """\
### Tensorflow Version

2.11.0

### Custom Code

Yes

### OS Platform and Distribution

Windows 11

### Python version

3.9.10

### CUDA/cuDNN version

11.6r11.6/8.6
"""
# https://github.com/tensorflow/tensorflow/issues/60101 (the same form, TensorFlow in WSL2)
TF_WSL_212 = """\
### Tensorflow Version

2.12.0

### Custom Code

No

### OS Platform and Distribution

Windows 11 + WSL2

### Python version

3.11

### CUDA/cuDNN version

11.8/8.4.1.50
"""
# https://github.com/tensorflow/tensorflow/issues/60241 (native Windows, no CUDA or GPU answer)
TF_WIN_NO_GPU_ANSWER = """\
### Tensorflow Version

tf2.12.0

### Custom Code

No

### OS Platform and Distribution

Win11

### Python version

3.10.10
"""
# https://github.com/jax-ml/jax/issues/14606 (JAX's issue form and conda's install plan)
JAX_CONDA_CPU = """\
$ conda install jax cuda-nvcc -c conda-forge -c nvidia

The following NEW packages will be INSTALLED:

  jax                conda-forge/noarch::jax-0.4.4-pyhd8ed1ab_0
  jaxlib             conda-forge/linux-64::jaxlib-0.4.4-cpu_py311h7146453_1
```

### What jax/jaxlib version are you using?

0.4.4

### Which accelerator(s) are you using?

GPU
"""


def test_tensorflow_on_native_windows_is_read_with_its_build_left_to_the_kb():
    facts = facts_of(issue_template.find, TF_WIN_211)
    (tf,) = facts["frameworks.installed"]
    assert tf["framework"] == "tensorflow" and tf["version"] == "2.11.0" and tf["native_windows"] is True
    assert tf["gpu_build"] is None  # frameworks.yaml's platforms row decides, in the rules
    assert facts["report.gpu_expected"] == "CUDA/cuDNN version: 11.6r11.6/8.6"
    assert facts["python.version"] == "3.9.10"


def test_tensorflow_211_on_native_windows_is_cpu_only_by_the_kb_and_210_is_not(cli, tmp_path):
    cpu = findings(cli, tmp_path, TF_WIN_211)["framework-cpu-build-on-gpu-host"]
    assert "2.10 was the last release with GPU support on native Windows" in cpu["message"]
    older = TF_WIN_211.replace("2.11.0", "2.10.1")
    (tf,) = facts_of(issue_template.find, older)["frameworks.installed"]
    assert tf["version"] == "2.10.1" and tf["native_windows"] is True
    assert "framework-cpu-build-on-gpu-host" not in findings(cli, tmp_path, older)


def test_tensorflow_in_wsl2_says_nothing_about_its_build():
    facts = facts_of(issue_template.find, TF_WSL_212)
    assert "frameworks.installed" not in facts and facts["report.gpu_expected"].startswith("CUDA/cuDNN")


def test_windows_words_are_read_as_native_windows_only_without_wsl_or_linux():
    assert issue_template.native_windows("win10") and issue_template.native_windows("Windows 11")
    assert not issue_template.native_windows("Windows 11 + WSL2")
    assert not issue_template.native_windows("Ubuntu 22.04 (Windows Subsystem for Linux)")
    assert not issue_template.native_windows("Darwin 23.1")


def test_tensorflow_cpu_only_on_windows_is_a_finding_only_when_a_gpu_is_expected(cli, tmp_path):
    hit = findings(cli, tmp_path, TF_WIN_211)["framework-cpu-build-on-gpu-host"]
    assert hit["severity"] == "warning"
    assert "TensorFlow 2.11.0 is a CPU-only build" in hit["message"] and "report line 19" in hit["message"]
    assert "WSL2" in json.dumps(hit["fix"])
    assert "framework-cpu-build-on-gpu-host" not in findings(cli, tmp_path, TF_WIN_NO_GPU_ANSWER)
    assert "framework-cpu-build-on-gpu-host" not in findings(cli, tmp_path, TF_WSL_212)


def test_with_the_driver_shown_the_regular_rule_fires_and_still_suggests_wsl2_not_a_cuda_wheel(cli, tmp_path):
    from test_triage_parsers import SMI_546  # mrhan1993/Fooocus-API#84: nvidia-smi on Windows (WDDM), an RTX 2060

    hit = findings(cli, tmp_path, TF_WIN_211 + "\n" + SMI_546)["framework-cpu-build-on-gpu-host"]
    assert "driver 546.17" in hit["message"]  # the regular rule's wording: it had the driver
    fix = json.dumps(hit["fix"])
    assert "wsl --install" in fix and "and-cuda]==" not in fix


def test_conda_plans_cpu_jaxlib_is_a_cpu_build_and_the_form_expects_a_gpu(cli, tmp_path):
    facts = facts_of(conda_builds.find, JAX_CONDA_CPU)
    (jax,) = facts["frameworks.installed"]
    assert jax["framework"] == "jax" and jax["version"] == "0.4.4" and jax["gpu_build"] is False
    assert facts_of(issue_template.find, JAX_CONDA_CPU)["report.gpu_expected"] == "accelerator: GPU"
    hit = findings(cli, tmp_path, JAX_CONDA_CPU)["framework-cpu-build-on-gpu-host"]
    assert "jaxlib=*=*cuda*" in json.dumps(hit["fix"])
    cpu_only_user = JAX_CONDA_CPU.replace("\nGPU\n", "\nCPU\n")
    assert "framework-cpu-build-on-gpu-host" not in findings(cli, tmp_path, cpu_only_user)


def test_conda_builds_leave_cuda_and_pip_builds_to_other_readers():
    # https://github.com/jax-ml/jax/issues/189 (conda-forge's CUDA jaxlib is asked for as `jaxlib=*=*cuda*`)
    assert facts_of(conda_builds.find, "jaxlib                    0.4.34                   pypi_0    pypi\n") == {}
    # a CUDA build is no CPU-only framework; its row is kept only as conda.packages (conda-cuda-build-without-cuda reads it)
    assert facts_of(conda_builds.find, "  jaxlib             conda-forge/linux-64::jaxlib-0.3.10-cuda112py310h1234567_200\n") == {
        "conda.packages": {"jaxlib": {"version": "0.3.10", "build": "cuda112py310h1234567_200", "channel": "conda-forge", "fn": None, "line": 1}}}
    assert facts_of(conda_builds.find, "numpy                     1.26.4          py311h64a7726_0    conda-forge\n") == {}


# https://github.com/meta-pytorch/data/issues/315 (a development report of the field corpus:
# torchdata 0.3.0 in an environment.yml beside cudatoolkit=11.3 made conda install cpuonly)
TORCHDATA_CPUONLY = """\
dependencies:
  - python=3.8
  - pytorch
  - cudatoolkit=11.3
  - torchdata
```
❯ conda list | grep pytorch
cpuonly                   2.0                           0    pytorch
pytorch                   1.11.0              py3.8_cpu_0    pytorch
pytorch-mutex             1.0                         cpu    pytorch
"""
# https://github.com/pytorch/pytorch/issues/69202 (a development report of the field corpus:
# the pytorch channel had no 1.9.0 build for cudatoolkit 11.3; a reply quotes the spec)
PYTORCH_190_CU113 = """\
I have tried to install cudatoolkit 11.3 with `conda install -c pytorch pytorch=1.9.0 torchvision cudatoolkit=11.3`. After successful installing pytorch, my GPU is not available anymore: torch.cuda.is_available=**False**
There is no version 11.3 at all, so installer get you CPU only version. (you could check it in you package list, it is pytorch=1.9.0=py3.8_cpu_0).
"""


@pytest.mark.parametrize("text, version, build", [
    (TORCHDATA_CPUONLY, "1.11.0", "py3.8_cpu_0"),
    (PYTORCH_190_CU113, "1.9.0", "py3.8_cpu_0"),
])
def test_condas_cpu_pytorch_beside_a_cudatoolkit_request_is_conda_cpu_pytorch_on_gpu_host(text, version, build, cli, tmp_path):
    facts = facts_of(conda_builds.find, text)
    assert facts["conda.torch_build"]["kind"] == "cpu"
    assert (facts["conda.torch_build"]["version"], facts["conda.torch_build"]["build"]) == (version, build)
    assert facts["report.gpu_expected"] == "conda was asked for cudatoolkit=11.3"
    hit = findings(cli, tmp_path, text)["conda-cpu-pytorch-on-gpu-host"]
    assert "pytorch=" + version + "=cuda*" in json.dumps(hit["fix"])


def test_condas_cpu_pytorch_without_a_gpu_meant_and_its_cuda_build_say_nothing(cli, tmp_path):
    # the same list without the cudatoolkit request: a CPU machine may want the CPU build
    alone = TORCHDATA_CPUONLY.replace("  - cudatoolkit=11.3\n", "")
    assert "conda-cpu-pytorch-on-gpu-host" not in findings(cli, tmp_path, alone)
    # meta-pytorch/data#315's list without torchdata: the CUDA build is left to other readers
    cuda = "pytorch                   1.11.0          py3.8_cuda11.3_cudnn8.2.0_0    pytorch\n  - cudatoolkit=11.3\n"
    assert facts_of(conda_builds.find, cuda) == {}


# ----------------------------------------------------------------------------- Paddle's banner
# https://github.com/PaddlePaddle/Paddle/issues/72746 (an RTX 50xx, compute capability 12.0, under a CUDA 11.8 Paddle)
PADDLE_BANNER_120 = """\
W0513 16:34:00.386127  4360 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute Capability: 12.0, Driver API Version: 12.9, Runtime API Version: 11.8
W0513 16:34:00.390440  4360 gpu_resources.cc:164] device: 0, cuDNN Version: 8.9.
"""
# https://github.com/PaddlePaddle/Paddle/issues/74088 (a GTX 980 Ti, 5.2, under a CUDA 11.8 Paddle built for 60..86)
PADDLE_MAXWELL = """\
W0717 03:51:46.792800    14 gpu_resources.cc:96] The GPU architecture in your current machine is Maxwell, which is not compatible with Paddle installation with arch: 60 61 70 75 80 86 , it is recommended to install the corresponding wheel package according to the installation information on the official Paddle website.
W0717 03:51:46.792822    14 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute Capability: 5.2, Driver API Version: 12.4, Runtime API Version: 11.8
W0717 03:51:46.793531    14 gpu_resources.cc:164] device: 0, cuDNN Version: 8.9.
CUDA error 209 [/usr/local/cuda-11.8/include/cub/block/../iterator/../util_device.cuh, 375]: no kernel image is available for execution on the device
"""
NO_KERNEL_LINE = PADDLE_MAXWELL.splitlines(True)[3]


def test_paddles_banner_gives_the_gpus_capability_the_drivers_cuda_and_the_builds_cuda():
    facts = facts_of(paddle.find, PADDLE_BANNER_120)
    assert facts["gpus.list"][0]["cc"] == "12.0"
    assert facts["driver.cuda_version"] == "12.9"
    (build,) = facts["frameworks.installed"]
    assert build["framework"] == "paddle" and build["gpu_build"] is True and build["cuda"] == "11.8" and build["cudnn"] == "8.9"
    assert build["version"] is None  # the banner does not say it


def test_the_older_banners_give_the_same_facts():
    # https://github.com/PaddlePaddle/Paddle/issues/23487 (Paddle 1.7) and /15183 (Paddle 1.2, an RTX 2070)
    older = facts_of(paddle.find, "W0404 16:40:48.365986 14840 device_context.cc:237] Please NOTE: device: 0, CUDA Capability: 61, Driver API Version: 10.1, Runtime API Version: 10.0\n")
    assert older["gpus.list"][0]["cc"] == "6.1" and older["driver.cuda_version"] == "10.1" and older["frameworks.installed"][0]["cuda"] == "10.0"
    first = facts_of(paddle.find, "W0107 06:40:34.550292  1086 device_context.cc:203] Please NOTE: device: 0, CUDA Capability: 75, Driver Version: 10.0, Runtime Version: 8.0\n")
    assert first["gpus.list"][0]["cc"] == "7.5" and first["frameworks.installed"][0]["cuda"] == "8.0"


def test_a_banner_without_its_fields_or_a_prose_mention_is_not_read():
    assert facts_of(paddle.find, "Please NOTE: device: 0, GPU Compute Capability: 8.6\n") == {}
    assert facts_of(paddle.find, "paddle=2.2.2\ncuda 10.2\ncudnn 7.6.5\nNVIDIA A30\n") == {}


def test_no_kernel_image_under_a_build_whose_cuda_cannot_target_the_gpu_is_gpu_arch_unsupported_by_framework(cli, tmp_path):
    # the banner of Paddle#72746 and the CUDA error line of Paddle#74088, one after the other
    hit = findings(cli, tmp_path, PADDLE_BANNER_120 + NO_KERNEL_LINE)["gpu-arch-unsupported-by-framework"]
    assert "compute capability 12.0" in hit["message"] and "CUDA 11.8" in hit["message"]
    assert "gpu-arch-unsupported-by-framework" not in findings(cli, tmp_path, PADDLE_BANNER_120)  # no failure shown


def test_a_gpu_the_builds_cuda_can_target_is_left_to_paddles_own_arch_message(cli, tmp_path):
    hit = findings(cli, tmp_path, PADDLE_MAXWELL)["gpu-arch-unsupported-by-framework"]
    assert "says so in the report" in hit["message"] and "Maxwell" in hit["message"]  # the errors.yaml row, not the CUDA inference


# https://github.com/NVIDIA/tensorflow/issues/89 (the old markdown template, and TensorFlow's error)
TF115_FORM = """\
- TensorFlow installed from (source or binary):pip install nvidia-tensorflow[1.15]
- TensorFlow version:1.15
- Python version:3.8
- CUDA/cuDNN version:11.4
- GPU model and memory:/7.79GB
**Describe the problem**
cudaGetDevice() failed. Status: CUDA driver version is insufficient for CUDA runtime version
"""


def test_the_old_bullet_template_says_whose_report_it_is():
    facts = facts_of(issue_template.find, TF115_FORM)
    assert facts["report.framework"] == "tensorflow" and facts["python.version"] == "3.8"
    assert "frameworks.installed" not in facts  # not Windows: the build is not known


def test_driver_insufficient_in_a_tensorflow_form_is_driver_too_old_for_framework(cli, tmp_path):
    hit = findings(cli, tmp_path, TF115_FORM)["driver-too-old-for-framework"]
    assert "TensorFlow" in hit["message"] and "report line 7" in hit["message"]
    bare = TF115_FORM.splitlines(True)[-1]
    assert "driver-too-old-for-framework" not in findings(cli, tmp_path, bare)  # whose runtime is not said


# ----------------------------------------------------------------------------- conda's libstdc++
# https://github.com/ztxz16/fastllm/issues/301 (the issue's title: a conda env's own libstdc++)
CONDA_GLIBCXX = "OSError: /home/suser/.conda/envs/llm/bin/../lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found\n"
# https://github.com/conda-forge/ctng-compilers-feedstock/issues/170 (the system's libstdc++ too old for a conda package)
SYSTEM_GLIBCXX = ("Error while loading conda entry point: conda-libmamba-solver (/lib64/libstdc++.so.6: version `GLIBCXX_3.4.29' not found "
                  "(required by /home/mrbecker/mambaforge/lib/python3.11/site-packages/libmambapy/bindings.cpython-311-x86_64-linux-gnu.so))\n")


def test_glibcxx_missing_from_a_conda_envs_libstdcxx_is_conda_libstdcxx_too_old(cli, tmp_path):
    hit = findings(cli, tmp_path, CONDA_GLIBCXX)["conda-libstdcxx-too-old"]
    assert "/home/suser/.conda/envs/llm/bin/../lib/libstdc++.so.6" in hit["message"] and "GLIBCXX_3.4.30" in hit["message"]


def test_glibcxx_missing_from_the_systems_libstdcxx_is_not_condas(cli, tmp_path):
    assert "conda-libstdcxx-too-old" not in findings(cli, tmp_path, SYSTEM_GLIBCXX)


# ----------------------------------------------------------------------------- env dumps
# https://github.com/PaddlePaddle/Paddle/issues/24805 (LD_LIBRARY_PATH's "lcoal" typo; PATH has the real toolkit)
ENV_TYPO = """\
LD_LIBRARY_PATH=/usr/lcoal/cuda-10.1/lib64:
PATH=/home/xxx/.local/bin:/usr/local/cuda-10.1/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games:/usr/local/games:/snap/bin
"""
# https://github.com/tensorflow/tensorflow/issues/63341 (a working WSL2 setup's .bashrc lines)
ENV_CONSISTENT = """\
export PATH=/usr/local/cuda-12.3/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda-12.3/lib64:$LD_LIBRARY_PATH
"""
# https://github.com/NVIDIA/nccl/issues/1608 (`printenv | grep ^NCCL` after a prompt)
ENV_NCCL = """\
(myenv) exx@sn4622123662:~/Desktop/fine-tune$ printenv | grep ^NCCL
NCCL_LEGACY_CUDA_REGISTER=0
NCCL_P2P_DISABLE=1
NCCL_SOCKET_IFNAME=eth0
NCCL_P2P_LEVEL=NVL
NCCL_DEBUG=INFO
NCCL_SET_STACK_SIZE=1
NCCL_CUMEM_ENABLE=0
"""


def test_env_lines_give_the_toolkit_roots_path_and_ld_library_path_point_at():
    pointers = facts_of(envdump.find, ENV_TYPO)["cuda.pointers"]
    assert pointers["path_nvcc"] == "/usr/local/cuda-10.1" and pointers["ld_cudart"] == "/usr/lcoal/cuda-10.1"
    assert facts_of(envdump.find, ENV_CONSISTENT)["cuda.pointers"]["ld_cudart"] == "/usr/local/cuda-12.3"


def test_pointers_at_two_versioned_roots_are_cuda_path_inconsistent_and_one_root_is_not(cli, tmp_path):
    hit = findings(cli, tmp_path, ENV_TYPO)["cuda-path-inconsistent"]
    assert "/usr/lcoal/cuda-10.1" in hit["message"] and "/usr/local/cuda-10.1" in hit["message"]
    assert "cuda-path-inconsistent" not in findings(cli, tmp_path, ENV_CONSISTENT)
    # /usr/local/cuda is a link the text does not resolve: not compared
    assert "cuda-path-inconsistent" not in findings(cli, tmp_path, "CUDA_HOME=/usr/local/cuda\nPATH=/usr/local/cuda-12.1/bin:/usr/bin\n")


def test_nccl_variables_are_nccl_env_and_a_disabled_transport_is_reported(cli, tmp_path):
    env = facts_of(envdump.find, ENV_NCCL)["nccl.env"]
    assert env["NCCL_P2P_DISABLE"] == "1" and env["NCCL_SOCKET_IFNAME"] == "eth0" and len(env) == 7
    assert "nccl-transport-disabled" in findings(cli, tmp_path, ENV_NCCL)


def test_assignments_inside_prose_or_lower_case_names_are_not_env_lines():
    # https://github.com/NVIDIA/nccl/issues/631 (prose, with a blank before '=')
    assert facts_of(envdump.find, "I confirmed that the model works by setting the variable NCCL_P2P_DISABLE =1 .\n") == {}
    assert facts_of(envdump.find, "path=/usr/local/cuda-11.8/bin\n") == {}
    assert facts_of(envdump.find, "CUDA_PATH=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8\n") == {}


# ----------------------------------------------------------------------------- jax.print_environment_info()
# https://github.com/jax-ml/jax/issues/19821
JAX_ENV_0424 = """\
>>> jax.print_environment_info()
jax:    0.4.24
jaxlib: 0.4.24
numpy:  1.26.4
python: 3.12.1 | packaged by Anaconda, Inc. | (main, Jan 19 2024, 15:51:05) [GCC 11.2.0]
jax.devices (1 total, 1 local): [cuda(id=0)]
process_count: 1
"""
# https://github.com/jax-ml/jax/issues/32157 (JAX 0.7's "device info" line)
JAX_ENV_072 = """\
jax:    0.7.2
jaxlib: 0.7.2
numpy:  2.2.6
python: 3.12.11 (main, Jul 11 2025, 22:43:48) [Clang 20.1.4 ]
device info: NVIDIA A100-SXM4-80GB-1, 1 local devices"
process_count: 1
"""


def test_jax_environment_info_gives_jax_its_jaxlib_python_and_a_gpu_build():
    facts = facts_of(jax_env.find, JAX_ENV_0424)
    (jax,) = facts["frameworks.installed"]
    assert jax["packages"] == {"jax": "0.4.24", "jaxlib": "0.4.24"} and jax["gpu_build"] is True and jax["cuda"] is None
    assert facts["python.version"] == "3.12.1"
    assert facts_of(jax_env.find, JAX_ENV_072)["frameworks.installed"][0]["gpu_build"] is True


def test_a_cpu_device_list_leaves_the_build_unknown_and_lone_jax_lines_are_not_read():
    cpu = JAX_ENV_0424.replace("[cuda(id=0)]", "[CpuDevice(id=0)]")
    assert facts_of(jax_env.find, cpu)["frameworks.installed"][0]["gpu_build"] is None
    assert facts_of(jax_env.find, "jax:    0.4.24\nnumpy:  1.26.4\n") == {}
    assert facts_of(jax_env.find, "I use jax: latest\njaxlib: whatever\n") == {}


def test_a_healthy_jax_environment_gets_no_error(cli, tmp_path):
    assert not [f for f in findings(cli, tmp_path, JAX_ENV_0424).values() if f["severity"] == "error"]


# ----------------------------------------------------------------------------- budgets
@pytest.mark.parametrize("line", [
    "shm " + "9" * 4000 + " 0 1G 0% /dev/shm",
    "ACSCtl: " + "ReqRedir+ " * 400,
    "### " + "(" * 4000,
    "- TensorFlow version " + "(" * 2000 + ": 2.11",
    "  jaxlib " + "conda-forge::" * 300,
    " " * 4000 + "/dev/shm",
    "Please NOTE: device: " + "0, GPU Compute Capability: " * 150,
    "PATH=" + "/cuda/bin:" * 400,
    "LD_LIBRARY_PATH=" + "/" * 4000,
    "A" * 64 + "=" + "=" * 3000,
    "jax: " + "1." * 2000,
])
def test_hostile_lines_cost_linear_time_and_raise_nothing(line):
    text = "\n".join([line] * 16)
    start = time.perf_counter()
    triage(text)
    assert time.perf_counter() - start < 1.0


def test_values_stay_raw_in_facts_and_are_escaped_by_the_renderers(cli, tmp_path):
    hostile = TF_WIN_211.replace("11.6r11.6/8.6", "11.6 \x1b]52;c;aGk=\x07 | `x` [a](http://e)")
    path = tmp_path / "r.md"
    path.write_text(hostile)
    text = cli("triage", str(path)).output
    assert "\x1b" not in text and "\x07" not in text
    markdown = cli("triage", "--format", "markdown", str(path)).output
    assert "\x1b" not in markdown and "\x07" not in markdown
    line = next(x for x in markdown.splitlines() if "[a](http://e)" in x)
    assert "`" in line  # report text only inside code spans, where GitHub renders no link


# torch.utils.cpp_extension's own line on the CUDA_HOME it builds with, where torch sees no GPU.
# build-ext/b50b-warpctc-cuda-home-path-list-cannot-find-lcudart.md (SeanNaren/warp-ctc#153, a
# development report): the value is a path list, so -I/-L get ':/usr/local/cuda-9.0:...'.
CPP_EXT_LIST = ("-bash-4.2# python setup.py install\n"
                "No CUDA runtime is found, using CUDA_HOME=':/usr/local/cuda-9.0:/usr/local/cuda-8.0'\n"
                "running install\n")


@pytest.mark.parametrize("text", [CPP_EXT_LIST, CPP_EXT_LIST.replace("\n", "\r\n"),
                                  "".join("> " + line + "\n" for line in CPP_EXT_LIST.splitlines()),
                                  CPP_EXT_LIST.replace("No CUDA", "#28 2.876 No CUDA")])  # a BuildKit log line
def test_cpp_extensions_cuda_home_line_is_read_and_a_path_list_is_judged(cli, tmp_path, text):
    assert facts_of(envdump.find, text)["cuda.pointers"]["cuda_home"] == ":/usr/local/cuda-9.0:/usr/local/cuda-8.0"
    assert "cuda-home-invalid" in findings(cli, tmp_path, text)


def test_cpp_extensions_cuda_home_line_with_one_folder_is_no_finding(cli, tmp_path):
    # the usual line (a docker build of an extension, no GPU there): one folder, nothing wrong
    text = "#28 2.876 No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\n"
    assert facts_of(envdump.find, text)["cuda.pointers"]["cuda_home"] == "/usr/local/cuda"
    assert "cuda-home-invalid" not in findings(cli, tmp_path, text)
    # an export later in the text is what the shell set: it wins over torch's line
    both = text + "export CUDA_HOME=/usr/local/cuda-12.4\n"
    assert facts_of(envdump.find, both)["cuda.pointers"]["cuda_home"] == "/usr/local/cuda-12.4"
