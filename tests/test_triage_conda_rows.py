"""conda's package rows in every form a report pastes them (issue 26, batch 25): the download
table and the UPDATED rows of conda's plan, mamba's plan, Anaconda's CPU tensorflow builds, a
`conda search` listing that is not an environment, and the same rows from a CI log (colours,
stamps); the loader's libstdc++ and iJIT_NotifyEvent errors quoted bare or wrapped. Real
excerpts from public threads (the source is named above each)."""

from __future__ import annotations

import textwrap

import pytest

from fwdoctor.triage import conda_builds, packages
from fwdoctor.triage.text import Lines, normalize

from triage_helpers import facts_of, findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


# https://github.com/pytorch/pytorch/issues/92273: conda's download table gives the CPU build
DOWNLOAD_TABLE = """\
```
conda install pytorch==1.12.1 torchvision==0.13.1 torchaudio==0.12.1 cudatoolkit=10.2 -c pytorch
```

```
The following packages will be downloaded:

    package                    |            build
    ---------------------------|-----------------
    conda-22.9.0               |   py38haa95532_0         888 KB  defaults
    cudatoolkit-10.2.89        |       h74a9793_1       317.2 MB  defaults
    libuv-1.40.0               |       he774522_0         255 KB  defaults
    pytorch-1.12.1             |      py3.8_cpu_0       133.8 MB  pytorch
    pytorch-mutex-1.0          |              cpu           3 KB  pytorch
    torchaudio-0.12.1          |         py38_cpu         3.5 MB  pytorch
    torchvision-0.13.1         |         py38_cpu         6.2 MB  pytorch
    ------------------------------------------------------------
                                           Total:       461.9 MB
```
"""

# https://github.com/isce-framework/dolphin/issues/253: mamba's plan takes conda-forge's CPU jaxlib
MAMBA_PLAN = """\
$ mamba create -n test-jax-311 python=3.11 jax gdal
...

  + gdal                              3.8.4  py311h43f0207_0       conda-forge        2MB
  + jaxlib                           0.4.23  cpu_py311h6cc994a_0   conda-forge       45MB

  + jax                              0.4.25  pyhd8ed1ab_0          conda-forge        1MB
"""

# https://github.com/tensorflow/tensorflow/issues/31098: conda's UPDATED rows, Anaconda's mkl_ build
UPDATED_ROWS = """\
The following packages will be UPDATED:

  tensorboard                         1.12.2-py36h33f27b4_0 --> 1.14.0-py36he3c9ec2_0
  tensorflow                      1.12.0-mkl_py36h4f00353_0 --> 1.14.0-mkl_py36hb88db5b_0
  tensorflow-base                 1.12.0-mkl_py36h81393da_0 --> 1.14.0-mkl_py36ha978198_0
  tensorflow-mkl                          1.12.0-h4fcabd2_0 --> 1.14.0-h4fcabd2_0
"""

# https://github.com/pytorch/pytorch/issues/67642: `conda search`, what the channel offers
CONDA_SEARCH = """\
Running `conda search pytorch=1.10.0 -c pytorch` gives
```
# Name                       Version           Build  Channel
pytorch                       1.10.0     py3.6_cpu_0  pytorch
pytorch                       1.10.0 py3.6_cuda10.2_cudnn7.6.5_0  pytorch
pytorch                       1.10.0 py3.6_cuda11.1_cudnn8.0.5_0  pytorch
pytorch                       1.10.0 py3.6_cuda11.3_cudnn8.2.0_0  pytorch
pytorch                       1.10.0     py3.7_cpu_0  pytorch
```
"""
# https://github.com/AnacondaRecipes/tensorflow_recipes/issues/26: `conda search tensorflow=2.1`
TF_SEARCH = """\
# Name                       Version           Build  Channel
tensorflow                     2.1.0 eigen_py36hdbbabfe_0  pkgs/main
tensorflow                     2.1.0 eigen_py37hd727fc0_0  pkgs/main
tensorflow                     2.1.0 gpu_py36h3346743_0  pkgs/main
tensorflow                     2.1.0 gpu_py37h7db9008_0  pkgs/main
tensorflow                     2.1.0 mkl_py36h31ad7c1_0  pkgs/main
tensorflow                     2.1.0 mkl_py37ha977152_0  pkgs/main
"""


def test_condas_download_table_row_is_the_cpu_pytorch_it_installs(cli, tmp_path):
    build = facts_of(conda_builds.find, DOWNLOAD_TABLE)["conda.torch_build"]
    assert (build["version"], build["build"], build["channel"], build["kind"]) == ("1.12.1", "py3.8_cpu_0", "pytorch", "cpu")
    hit = findings(cli, tmp_path, DOWNLOAD_TABLE)["conda-cpu-pytorch-on-gpu-host"]
    assert hit["severity"] == "error" and "py3.8_cpu_0" in hit["message"]


def test_mambas_plan_row_gives_the_cpu_jaxlib_and_a_removed_row_does_not():
    (entry,) = facts_of(conda_builds.find, MAMBA_PLAN)["frameworks.installed"]
    assert (entry["framework"], entry["version"], entry["gpu_build"]) == ("jax", "0.4.23", False)
    removed = MAMBA_PLAN.replace("  + jaxlib", "  - jaxlib")
    assert "frameworks.installed" not in facts_of(conda_builds.find, removed)


def test_anacondas_mkl_tensorflow_in_condas_updated_rows_is_a_cpu_build():
    (entry,) = facts_of(conda_builds.find, UPDATED_ROWS)["frameworks.installed"]
    assert (entry["framework"], entry["version"], entry["gpu_build"]) == ("tensorflow", "1.14.0", False)
    assert "mkl_py36hb88db5b_0" in entry["why"]
    # Anaconda's GPU variant is gpu_py..., not a CPU build
    assert "frameworks.installed" not in facts_of(conda_builds.find, UPDATED_ROWS.replace("mkl_py36", "gpu_py36"))


@pytest.mark.parametrize("text", [CONDA_SEARCH, TF_SEARCH], ids=["pytorch", "tensorflow"])
def test_a_conda_search_listing_is_what_a_channel_offers_not_what_is_installed(text):
    facts = facts_of(conda_builds.find, text)
    assert "conda.torch_build" not in facts and "frameworks.installed" not in facts
    assert "torch.version" not in facts_of(packages.find, text)
    # one row of it, as `conda list` shows the installed pytorch, is read
    assert facts_of(packages.find, CONDA_SEARCH.splitlines()[3] + "\n")["torch.version"] == "1.10.0"


def test_rows_from_a_ci_log_with_colours_and_stamps_read_as_written():
    coloured = "".join(f"2024-03-06T17:01:02.1234567Z \x1b[32m{line}\x1b[0m\n" for line in MAMBA_PLAN.splitlines())
    assert normalize("2024-03-06T17:01:02.1234567Z \x1b[32m  + jax  0.4.25\x1b[0m") == "  + jax  0.4.25"
    (entry,) = facts_of(conda_builds.find, coloured)["frameworks.installed"]
    assert entry["version"] == "0.4.23"
    # dmesg's --time-format iso stamp stays: the kernel log reader reads it
    assert normalize("2025-05-27T04:18:56,089671+00:00 NVRM: Xid").startswith("2025-05-27T04:18:56")


# https://github.com/pytorch/pytorch/issues/123097 (the title): the loader's error without its library
IJIT_BARE = "ImportError `undefined symbol: iJIT_NotifyEvent` encountered when MKL 2024.1 is installed.\n"
# https://github.com/Zhen-Dong/Magic-Me/issues/15, as a terminal wraps it after "undefined"
IJIT_WRAPPED = "I got error \"libtorch_cpu.so: undefined\nsymbol: iJIT_NotifyEvent\". I didn't find solution in the internet.\n"


@pytest.mark.parametrize("text", [IJIT_BARE, IJIT_WRAPPED], ids=["bare", "wrapped"])
def test_undefined_ijit_notifyevent_quoted_bare_or_wrapped_is_conda_mkl_breaks_pytorch(text, cli, tmp_path):
    assert findings(cli, tmp_path, text)["conda-mkl-breaks-pytorch"]["severity"] == "error"


# https://github.com/kvcache-ai/ktransformers/issues/524 (the title)
GLIBCXX_CONDA = ("ImportError: /usr/local/miniconda3/envs/ktransformers/bin/../lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found "
                 "(required by /usr/local/miniconda3/envs/ktransformers/lib/python3.11/site-packages/cpuinfer_ext.cpython-311-x86_64-linux-gnu.so)")


def test_the_loaders_glibcxx_error_wrapped_at_a_blank_still_names_condas_libstdcxx(cli, tmp_path):
    wrapped = "\n".join(textwrap.wrap(GLIBCXX_CONDA, 80, break_long_words=False)) + "\n"
    assert len(Lines.of(wrapped)) > 2
    hit = findings(cli, tmp_path, wrapped)["conda-libstdcxx-too-old"]
    assert "/usr/local/miniconda3/envs/ktransformers/bin/../lib/libstdc++.so.6" in hit["message"] and "GLIBCXX_3.4.30" in hit["message"]
