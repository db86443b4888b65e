"""conda's package records as the exports write them (issue 26, conda second pass): `conda list
--explicit`'s URLs, `conda env export`'s and `conda list --export`'s "name=version=build" pins,
`conda env create --dry-run`'s "channel/subdir::name==version=build"; conda-forge's older CUDA
label that runs on into the Python tag ("cuda112py39h..."); and a CUDA package the env holds
(`conda list`'s "pytorch-cuda 11.7") beside a CPU pytorch. Real excerpts from public threads and
files (the source is named above each), then pasted as issues, chats and CI logs paste them."""

from __future__ import annotations

import pytest

from fwdoctor.triage import conda_builds, packages

from pasting import forms
from triage_helpers import facts_of, findings

pytestmark = pytest.mark.usefixtures("use_test_kb")

# https://github.com/conda-tools/conda-execute/issues/58 (the list's head and rows, verbatim);
# the pytorch row is the pytorch channel's CPU file pytorch-1.4.0-py3.6_cpu_0.tar.bz2 as a
# public install note downloads it from the TUNA mirror of that channel
EXPLICIT = """\
# This file may be used to create an environment using:
# $ conda create --name <env> --file <this file>
# platform: linux-64
@EXPLICIT
https://repo.anaconda.com/pkgs/main/linux-64/_libgcc_mutex-0.1-main.tar.bz2
https://repo.anaconda.com/pkgs/main/linux-64/blas-1.0-mkl.tar.bz2
https://conda.anaconda.org/conda-forge/linux-64/ca-certificates-2019.6.16-hecc5488_0.tar.bz2
https://repo.anaconda.com/pkgs/main/linux-64/intel-openmp-2019.4-243.conda
https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud/pytorch/linux-64/pytorch-1.4.0-py3.6_cpu_0.tar.bz2
"""
SMI_535 = "| NVIDIA-SMI 535.86.10              Driver Version: 535.86.10    CUDA Version: 12.2     |\n"
SMI_440 = "| NVIDIA-SMI 440.33.01    Driver Version: 440.33.01    CUDA Version: 10.2     |\n"

# a `conda env export` in a public environment.yml (GitHub code search: "pytorch=1.13.1=py3."),
# the rows around pytorch verbatim
EXPORT = """\
  - python=3.10.11=h7a1cb2a_2
  - pytorch=1.13.1=py3.10_cuda11.6_cudnn8.3.2_0
  - pytorch-cuda=11.6=h867d48c_1
  - pytorch-mutex=1.0=cuda
  - readline=8.2=h5eee18b_0
  - torchaudio=0.13.1=py310_cu116
  - torchvision=0.14.1=py310_cu116
"""
# `conda list --export` in a public spec file (GitHub code search: "pytorch=1.11.0=py3.9_cuda11.3")
LIST_EXPORT = """\
# This file may be used to create an environment using:
# $ conda create --name <env> --file <this file> -c pytorch
# platform: linux-64
cudatoolkit=11.3.1=h2bc3f7f_2
numpy=1.21.2
python=3.9.7
pytorch=1.11.0=py3.9_cuda11.3_cudnn8.2.0_0
tensorboard=2.8.0=pyhd8ed1ab_1
torchvision=0.12.0=py39_cu113
"""
# https://github.com/conda/conda-libmamba-solver/issues/115: `conda env create --dry-run`'s form,
# with conda-forge's CPU jaxlib of the same era in that form
DRY_RUN = """\
Solving environment: done
name: ipcoder
channels:
  - conda-forge
  - defaults
dependencies:
  - conda-forge/linux-64::_libgcc_mutex==0.1=conda_forge
  - conda-forge/linux-64::jaxlib==0.4.23=cpu_py311h6cc994a_0
"""
# a public README's pins of conda-forge's pytorch 1.9.1 built for CUDA 11.2 (GitHub code search:
# "cuda112py39h"); conda-forge/pytorch-cpu-feedstock's recipe/meta.yaml of that era names its
# CUDA builds "cuda{{ cuda_compiler_version|replace('.', '') }}py{{ py }}h..."
CF_OLD_LABEL = """\
  - python=3.9.7=hb7a2778_3_cpython
  - pytorch=1.9.1=cuda112py39h4e14dd4_3
  - cudatoolkit=11.5.0=h36ae40a_9
"""
CF_OLD_LABEL_LIST = "pytorch                   1.10.2          cuda112py39h4de5995_1    conda-forge\n"

# https://github.com/facebookresearch/DiT/issues/109: the env holds pytorch-cuda, pytorch is the CPU build
DIT = """\
```
pytorch                   2.5.1              py3.12_cpu_0    pytorch
pytorch-cuda              11.7                 h778d358_5    pytorch
pytorch-mutex             1.0                         cpu    pytorch
torchvision               0.20.1                py312_cpu    pytorch
```
"""
# https://github.com/conda/conda/issues/12965: the CUDA build beside pytorch-cuda (healthy)
CUDA_LIST = """\
$ conda list | grep pytorch
ffmpeg                    4.3                  hf484d3e_0    pytorch
pytorch                   2.0.1           py3.11_cuda11.8_cudnn8.7.0_0    pytorch
pytorch-cuda              11.8                 h7e8668a_5    pytorch
pytorch-mutex             1.0                        cuda    pytorch
torchaudio                2.0.2               py311_cu118    pytorch
"""


@pytest.mark.parametrize("text", [EXPLICIT + SMI_535] + forms(EXPLICIT + SMI_535))
def test_an_explicit_lists_cpu_pytorch_url_on_a_gpu_host_is_conda_cpu_pytorch_on_gpu_host(text, cli, tmp_path):
    build = facts_of(conda_builds.find, text)["conda.torch_build"]
    assert (build["version"], build["build"], build["channel"], build["kind"]) == ("1.4.0", "py3.6_cpu_0", "pytorch", "cpu")
    hit = findings(cli, tmp_path, text)["conda-cpu-pytorch-on-gpu-host"]
    assert hit["severity"] == "error" and "py3.6_cpu_0" in hit["message"]


@pytest.mark.parametrize("text", [EXPORT, LIST_EXPORT] + forms(EXPORT) + forms(LIST_EXPORT))
def test_an_exports_pin_gives_pytorchs_version_and_cuda(text):
    facts = facts_of(packages.find, text)
    assert (facts["torch.version"], facts["torch.cuda"]) in {("1.13.1", "11.6"), ("1.11.0", "11.3")}


@pytest.mark.parametrize("text", [EXPORT + SMI_440] + forms(EXPORT + SMI_440))
def test_an_exported_cuda_11_6_pytorch_under_driver_440_is_driver_too_old_for_torch(text, cli, tmp_path):
    hit = findings(cli, tmp_path, text)["driver-too-old-for-torch"]
    assert "11.6" in hit["message"] and "440.33.01" in hit["message"]


@pytest.mark.parametrize("text", [DRY_RUN + SMI_535] + forms(DRY_RUN + SMI_535))
def test_a_dry_runs_cpu_jaxlib_pin_on_a_gpu_host_is_framework_cpu_build_on_gpu_host(text, cli, tmp_path):
    (entry,) = facts_of(conda_builds.find, text)["frameworks.installed"]
    assert (entry["framework"], entry["version"], entry["gpu_build"]) == ("jax", "0.4.23", False)
    assert "framework-cpu-build-on-gpu-host" in findings(cli, tmp_path, text)


@pytest.mark.parametrize("text", [CF_OLD_LABEL, CF_OLD_LABEL_LIST] + forms(CF_OLD_LABEL) + forms(CF_OLD_LABEL_LIST))
def test_conda_forges_cuda112py39_label_gives_torchs_cuda_11_2(text):
    assert facts_of(packages.find, text)["torch.cuda"] == "11.2"


@pytest.mark.parametrize("text", [DIT] + forms(DIT))
def test_a_pytorch_cuda_the_env_holds_beside_a_cpu_pytorch_is_conda_cpu_pytorch_on_gpu_host(text, cli, tmp_path):
    assert facts_of(conda_builds.find, text)["report.gpu_expected"] == "the env holds pytorch-cuda 11.7"
    hit = findings(cli, tmp_path, text)["conda-cpu-pytorch-on-gpu-host"]
    assert "py3.12_cpu_0" in hit["message"] and "pytorch-cuda 11.7" in hit["message"]


def test_look_alikes_of_records_and_held_cuda_packages_say_nothing(cli, tmp_path):
    # the CUDA build beside pytorch-cuda, and a CPU pytorch with nothing that asks for a GPU
    assert not any(f.startswith("conda-") for f in findings(cli, tmp_path, CUDA_LIST))
    assert "conda-cpu-pytorch-on-gpu-host" not in findings(cli, tmp_path, EXPLICIT)
    # pip's pins are no conda record (pip's own reader takes them)
    assert conda_builds.record("torch==2.1.0") is None and conda_builds.record("  - torch==2.1.0+cu121") is None
    # a script's continued URL, a download error's URL, a `conda search` listing
    for text in ("    https://conda.anaconda.org/pytorch/linux-64/pytorch-1.12.1-py3.8_cuda11.3_cudnn8.3.2_0.tar.bz2 \\\n",
                 "CondaHTTPError: HTTP 000 CONNECTION FAILED for url <https://conda.anaconda.org/pytorch/linux-64/pytorch-1.0.0-py3.6_cuda8.0.61_cudnn7.1.2_1.tar.bz2>\n"):
        assert facts_of(packages.find, text) == {} and facts_of(conda_builds.find, text) == {}
    search = ("pytorch-cuda                  11.7      h778d358_3  pytorch\n"
              "pytorch-cuda                  11.7      h778d358_5  pytorch\n"
              "pytorch                   2.5.1              py3.12_cpu_0    pytorch\n")
    assert "report.gpu_expected" not in facts_of(conda_builds.find, search)
