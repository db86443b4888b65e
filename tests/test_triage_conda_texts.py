"""conda's own texts in a report (issue 26): `conda info`'s virtual packages, environment files
and install commands, the CUDA libraries of a conda plan, and the reporter's word that conda
gave the CPU pytorch; real excerpts from public threads (the source is named above each)."""

from __future__ import annotations


import pytest

from fwdoctor.triage import conda_builds, conda_info, conda_specs

from triage_helpers import facts_of, findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


# ----------------------------------------------------------------------------- conda info
# https://github.com/conda-forge/jax-feedstock/issues/162
CONDA_INFO = """\
```
     active environment : jax_ml7
          conda version : 24.9.0
                 solver : libmamba (default)
       virtual packages : __archspec=1=zen4
                          __conda=24.9.0=0
                          __cuda=12.4=0
                          __glibc=2.39=0
                          __linux=6.8.0=0
                          __unix=0=0
               platform : linux-64
             user-agent : conda/24.9.0 requests/2.32.3 CPython/3.12.7 Linux/6.8.0-47-generic ubuntu/24.04.1 glibc/2.39 solver/libmamba
```
"""
# https://github.com/conda-forge/tensorflow-feedstock/issues/296 (WSL2)
CONDA_INFO_WSL = """\
       virtual packages : __cuda=12.0=0
                          __linux=5.15.79.1=0
                          __glibc=2.31=0
             user-agent : conda/22.9.0 requests/2.28.1 CPython/3.10.6 Linux/5.15.79.1-microsoft-standard-WSL2 ubuntu/20.04.5 glibc/2.31
"""


def test_conda_info_gives_the_drivers_cuda_the_glibc_and_the_kernel():
    facts = facts_of(conda_info.find, CONDA_INFO)
    assert facts == {"driver.cuda_version": "12.4", "driver.loaded": True, "system.glibc": "2.39", "system.kernel": "6.8.0-47-generic"}
    assert facts_of(conda_info.find, CONDA_INFO_WSL)["system.kernel"] == "5.15.79.1-microsoft-standard-WSL2"


def test_conda_info_read_through_quotes_crlf_and_a_wrapped_line():
    quoted = "".join(f"> {line}\r\n" for line in CONDA_INFO_WSL.splitlines())
    assert facts_of(conda_info.find, quoted)["driver.cuda_version"] == "12.0"
    wrapped = "virtual packages : __linux=5.15=0 __glibc=2.31=0 __cuda=12.2\n=0\n"
    assert facts_of(conda_info.find, wrapped)["driver.cuda_version"] == "12.2"


def test_a_cpu_host_an_override_and_a_requirement_give_no_driver():
    # https://github.com/conda/conda-libmamba-solver/issues/131: a CPU-only host, no __cuda
    cpu_host = "       virtual packages : __linux=3.10.0=0\n                          __glibc=2.17=0\n                          __unix=0=0\n"
    assert facts_of(conda_info.find, cpu_host) == {"system.glibc": "2.17"}
    assert facts_of(conda_info.find, "$ CONDA_OVERRIDE_CUDA=12.0 conda info\n" + CONDA_INFO) == {}
    asked = "nothing provides __cuda >=11.8 needed by pytorch-2.1.0\n  - feature:/linux-64::__cuda[version='>=12']\n"
    assert facts_of(conda_info.find, asked) == {}


def test_a_cpu_jaxlib_under_condas_cuda_is_framework_cpu_build_on_gpu_host(cli, tmp_path):
    listed = "jaxlib                    0.4.4           cpu_py311h7146453_1    conda-forge\n"
    hit = findings(cli, tmp_path, CONDA_INFO + listed)["framework-cpu-build-on-gpu-host"]
    assert "NVIDIA driver" in hit["message"]


# ----------------------------------------------------------------------------- environment files, commands
# https://github.com/pytorch/pytorch/issues/123097 (a reply's env.yaml)
ENV_YAML = """\
name: ml_env
channels:
  - pytorch
  - nvidia
  - conda-forge
  - nodefaults
dependencies:
  - python=3.10.7
  - pip
  - pytorch::pytorch=2.0.1
  - pytorch::pytorch-cuda=11.8
  - pip:
    - mkl==2024.0
platforms:
  - linux-64
"""


def test_an_environment_file_gives_its_channels_and_conda_specs_not_pips():
    (request,) = facts_of(conda_specs.find, ENV_YAML)["conda.requests"]
    assert request["from"] == "environment file" and request["channels"] == ["pytorch", "nvidia", "conda-forge", "nodefaults"]
    assert [(s["name"], s["channel"]) for s in request["specs"]] == [("python", None), ("pip", None), ("pytorch", "pytorch"), ("pytorch-cuda", "pytorch")]


def test_a_continued_command_is_read_whole_and_a_sentence_is_not_a_command():
    text = "RUN conda install -y -c conda-forge \\\n    'jaxlib=*=*cuda*' jax -n train\nwhat's been downloaded from conda install command.\n"
    (request,) = facts_of(conda_specs.find, text)["conda.requests"]
    assert request["channels"] == ["conda-forge"] and [s["spec"] for s in request["specs"]] == ["jaxlib=*=*cuda*", "jax"]


def test_a_pytorch_channel_environment_file_without_an_mkl_pin_warns_of_mkl_2024_1(cli, tmp_path):
    hit = findings(cli, tmp_path, ENV_YAML)["conda-mkl-breaks-pytorch"]
    assert hit["severity"] == "warning" and "pytorch::pytorch=2.0.1" in hit["message"]


@pytest.mark.parametrize("text", [
    ENV_YAML.replace("  - pip\n", "  - mkl=2024.0\n  - pip\n"),  # pinned
    ENV_YAML.replace("pytorch::pytorch=2.0.1", "conda-forge::pytorch=2.0.1"),  # conda-forge's build
    "channels:\n  - conda-forge\n  - pytorch\ndependencies:\n  - pytorch=2.0.1\n",  # conda-forge first
    "$ conda install pytorch==2.0.1 pytorch-cuda=11.8 -c pytorch -c nvidia\n",  # a command ran once
])
def test_no_mkl_warning_where_mkl_is_pinned_or_pytorch_is_not_the_pytorch_channels(text, cli, tmp_path):
    assert "conda-mkl-breaks-pytorch" not in findings(cli, tmp_path, text)


# ----------------------------------------------------------------------------- the nvidia channel's CUDA libraries
# https://github.com/pytorch/pytorch/issues/90673
CUSPARSE_12 = """\
```
conda install pytorch torchvision torchaudio pytorch-cuda=11.7 -c pytorch -c nvidia
```
what's been downloaded from conda install command.
+ libcusparse                12.0.0.76  0                             nvidia/linux-64         Cached
+ libcusparse-dev            12.0.0.76  0                             nvidia/linux-64         Cached
"""


def test_condas_libcusparse_of_cuda_12_under_pytorch_cuda_11_7_is_conda_cuda_libs_mismatch(cli, tmp_path):
    hit = findings(cli, tmp_path, CUSPARSE_12)["conda-cuda-libs-mismatch"]
    assert hit["severity"] == "error" and "libcusparse 12.0.0.76" in hit["message"] and "CUDA 11.7" in hit["message"]


def test_plan_rows_give_the_cuda_major_where_the_numbering_says_it():
    text = ("  libcublas          nvidia/linux-64::libcublas-12.0.1.189-0\n"
            "libcusparse               11.7.3.50            0    nvidia\n"
            "libcusparse-dev           12.6.2.49            0    nvidia\n"  # CUDA 13's cuSPARSE: not read
            "libcufft                  11.0.0.21            0    nvidia\n")  # cuFFT numbers itself apart: not read
    packages = facts_of(conda_specs.find, text)["conda.cuda_packages"]
    assert [(p["name"], p["cuda_major"]) for p in packages] == [("libcublas", 12), ("libcusparse", 11)]


def test_libraries_of_pytorchs_own_cuda_major_say_nothing(cli, tmp_path):
    text = CUSPARSE_12.replace("12.0.0.76", "11.7.3.50")
    assert "conda-cuda-libs-mismatch" not in findings(cli, tmp_path, text)


# ----------------------------------------------------------------------------- the reporter's word
# https://github.com/SupreethN/HOISTFormer/issues/3
SAYS_CPU = """\
```bash
conda install pytorch==1.9.0 torchvision==0.10.0 cudatoolkit=11.1 -c pytorch -c nvidia
```

This command installs cpu version instead of cuda.
"""


def test_the_reporters_word_that_conda_installed_the_cpu_build_is_conda_cpu_pytorch_on_gpu_host(cli, tmp_path):
    build = facts_of(conda_builds.find, SAYS_CPU)["conda.torch_build"]
    assert build["kind"] == "cpu" and build["version"] == "1.9.0" and build["build"] is None
    hit = findings(cli, tmp_path, SAYS_CPU)["conda-cpu-pytorch-on-gpu-host"]
    assert "cudatoolkit=11.1" in hit["message"]


def test_the_sentence_without_a_conda_command_or_another_framework_says_nothing():
    assert "conda.torch_build" not in facts_of(conda_builds.find, "pip install torch\nThis command installs cpu version instead of cuda.\n")
    assert "conda.torch_build" not in facts_of(conda_builds.find, SAYS_CPU.replace("installs cpu version", "installs the cuda version"))


# ----------------------------------------------------------------------------- conda's conflict listing
# https://github.com/facebookresearch/demucs/issues/10 (conda >= 4.7)
CONFLICT_47 = """\
UnsatisfiableError: The following specifications were found to be incompatible with each other:



Package cudatoolkit conflicts for:
pytorch=1.3.1 -> cudatoolkit[version='>=10.1,<10.2']
cudatoolkit=10.0
"""
# https://github.com/chaoqichen/HTCN/issues/3 (conda 4.6)
CONFLICT_46 = """\
conda install pytorch=1.0.1 torchvision cudatoolkit=10.1

UnsatisfiableError: The following specifications were found to be in conflict:
  - cudatoolkit 10.1*
  - pytorch 1.0.1* -> cudatoolkit >=10.0.130,<10.1.0a0
"""


def test_conflict_listings_give_the_requirement_and_the_pin():
    conflict = facts_of(conda_specs.find, CONFLICT_47)["conda.cuda_conflict"]
    assert conflict["requires"] == [{"package": "pytorch", "version": "1.3.1", "dep": "cudatoolkit", "range": ">=10.1,<10.2", "line": 6}]
    assert conflict["pins"] == [{"dep": "cudatoolkit", "version": "10.0", "line": 7}]
    conflict = facts_of(conda_specs.find, CONFLICT_46)["conda.cuda_conflict"]
    assert conflict["requires"][0]["range"] == ">=10.0.130,<10.1.0a0" and conflict["pins"][0]["version"] == "10.1"


@pytest.mark.parametrize("text, needs, pinned", [(CONFLICT_47, ">=10.1,<10.2", "cudatoolkit 10.0"),
                                                 (CONFLICT_46, ">=10.0.130,<10.1.0a0", "cudatoolkit 10.1")])
def test_a_cudatoolkit_pinned_outside_the_builds_range_is_conda_cuda_pin_conflict(text, needs, pinned, cli, tmp_path):
    hit = findings(cli, tmp_path, text)["conda-cuda-pin-conflict"]
    assert hit["severity"] == "error" and needs in hit["message"] and pinned in hit["message"]


def test_a_driver_below_the_builds_cuda_is_conda_cuda_pin_conflict_and_a_pin_inside_the_range_is_not(cli, tmp_path):
    driver = "Package __cuda conflicts for:\npytorch-cuda=12.1 -> __cuda[version='>=12']\n" + CONDA_INFO_WSL.replace("__cuda=12.0=0", "__cuda=11.4=0")
    assert "__cuda 11.4" in findings(cli, tmp_path, driver)["conda-cuda-pin-conflict"]["message"]
    assert "conda-cuda-pin-conflict" not in findings(cli, tmp_path, CONFLICT_47.replace("cudatoolkit=10.0", "cudatoolkit=10.1"))
    # a requirement outside an UnsatisfiableError listing is not read
    assert "conda.cuda_conflict" not in facts_of(conda_specs.find, "pytorch=1.3.1 -> cudatoolkit[version='>=10.1,<10.2']\ncudatoolkit=10.0\n")


def test_conda_version_specs():
    from fwdoctor.rules.report_text import conda_satisfies

    assert [conda_satisfies(v, s) for v, s in [("10.0", ">=10.1,<10.2"), ("10.1", ">=10.1,<10.2"), ("10.1", ">=10.0.130,<10.1.0a0"),
                                                 ("10.0", "10.0.*"), ("10.1", "10.0*"), ("11.8", "11.8|12.1"), ("x", ">=1")]] \
        == [False, True, False, True, False, True, None]
