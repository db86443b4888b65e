"""conda commands that ask the pytorch channel for a release/CUDA pair it never built (issue 26):
conda installs the release's CPU build (doctor/kb/conda.yaml pytorch_channel_no_cuda_build),
and the command is often written in a markdown code span inside a sentence, which the
conda request reader (fwdoctor.triage.conda_specs) reads up to the closing backtick. Real
excerpts from public threads (the source is named above each); the shipped KB judges them."""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from fwdoctor.triage import conda_specs

from pasting import as_pasted
from triage_helpers import facts_of, findings

# https://github.com/pytorch/pytorch/issues/69202 (the answer: no 11.3 build on the channel,
# "pytorch=1.9.0=py3.8_cpu_0")
ISSUE_69202 = """\
Hello@All!

I have tried to install cudatoolkit 11.3 with `conda install -c pytorch pytorch=1.9.0 torchvision cudatoolkit=11.3`. After successful installing pytorch, my GPU is not available anymore: torch.cuda.is_available=**False**
"""
# https://github.com/Public-BOTs/GaussianPretrain/issues/4 (the maintainer: use cudatoolkit=11.1)
GAUSSIAN_4 = """\
When I try `conda install pytorch==1.9.1 torchvision==0.10.1 torchaudio==0.9.1 cudatoolkit=11.3 -c pytorch -c conda-forge`, it shows that I installed `pytorch_cpu` rather than `pytorch_cuda`.
"""
# pytorch/pytorch.github.io@04862e376ea686ba351674864400db1d93113979:_get_started/previous-versions.md
# (the v1.8.1 command https://github.com/pytorch/pytorch.github.io/pull/1813 corrects)
PREVIOUS_VERSIONS_181 = """\
# CUDA 11.3
conda install pytorch==1.8.1 torchvision==0.9.1 torchaudio==0.8.1 cudatoolkit=11.3 -c pytorch -c conda-forge
"""
# The same threads' corrected commands, and a release the channel did build for CUDA 11.3
# (the Previous Versions page's v1.10.0 and v1.12.1 lines): no error.
FIXED_GAUSSIAN_4 = """\
Sorry, the version of cuda is 11.1. You can install it with the command:  **conda install pytorch==1.9.1 torchvision==0.10.1 torchaudio==0.9.1 cudatoolkit=11.1 -c pytorch -c conda-forge**
"""
PUBLISHED_1100 = """\
# CUDA 11.3
conda install pytorch==1.10.0 torchvision==0.11.0 torchaudio==0.10.0 cudatoolkit=11.3 -c pytorch -c conda-forge
"""
PUBLISHED_1121 = "I ran `conda install pytorch==1.12.1 torchvision==0.13.1 torchaudio==0.12.1 cudatoolkit=11.3 -c pytorch` and it works.\n"


def _errors(cli, tmp_path, text: str) -> set[str]:
    return {k for k, f in findings(cli, tmp_path, text).items() if f["severity"] == "error"}


@pytest.mark.parametrize("text", as_pasted(ISSUE_69202, GAUSSIAN_4))
def test_a_conda_command_in_a_code_span_of_a_sentence_is_a_conda_request(text):
    requests = facts_of(conda_specs.find, text)["conda.requests"]
    names = {s["name"]: s["spec"] for s in requests[0]["specs"]}
    assert names["pytorch"] in ("pytorch=1.9.0", "pytorch==1.9.1")
    assert names["cudatoolkit"] == "cudatoolkit=11.3"
    assert "pytorch" in requests[0]["channels"]
    assert not any("`" in spec for spec in names.values())  # the span's closing backtick ends the command


@pytest.mark.parametrize("text", [
    "Run `conda list` and `conda info` and paste them.\n",
    "I used the conda install command from the website, then `pip install torch`.\n",
    "from conda install command. it installs cpu\n",
])
def test_code_spans_and_prose_that_are_no_conda_install_are_no_request(text):
    assert "conda.requests" not in facts_of(conda_specs.find, text)


@pytest.mark.parametrize("text", as_pasted(ISSUE_69202, GAUSSIAN_4, PREVIOUS_VERSIONS_181))
def test_asking_the_pytorch_channel_for_a_cuda_it_never_built_that_release_for_is_conda_cpu_pytorch(cli, tmp_path, text):
    got = findings(cli, tmp_path, text)
    assert "conda-cpu-pytorch-on-gpu-host" in got
    message = got["conda-cpu-pytorch-on-gpu-host"]["message"]
    assert "cudatoolkit 11.3" in message and "CPU build" in message
    assert any("cudatoolkit=11.1" in c for c in got["conda-cpu-pytorch-on-gpu-host"]["fix"]["commands"])


@pytest.mark.parametrize("text", as_pasted(FIXED_GAUSSIAN_4, PUBLISHED_1100, PUBLISHED_1121))
def test_a_pair_the_channel_built_is_no_error(cli, tmp_path, text):
    assert "conda-cpu-pytorch-on-gpu-host" not in _errors(cli, tmp_path, text)


@pytest.mark.parametrize("text", [
    # conda-forge alone: not the pytorch channel's builds
    "`conda install pytorch=1.9.0 cudatoolkit=11.3 -c conda-forge`\n",
    # a build string asked for explicitly
    "conda install pytorch=1.9.0=py3.8_cuda11.1_cudnn8.0.5_0 cudatoolkit=11.3 -c pytorch\n",
    # the env shows a CUDA torch: the command is not what was installed
    GAUSSIAN_4 + "\nPyTorch version: 1.9.1\nIs debug build: False\nCUDA used to build PyTorch: 11.1\nROCM used to build PyTorch: N/A\n",
    GAUSSIAN_4 + "\npytorch                   1.9.1           py3.8_cuda11.1_cudnn8.0.5_0    pytorch\n",
])
def test_other_channels_explicit_builds_and_a_cuda_torch_shown_are_no_error(cli, tmp_path, text):
    assert "conda-cpu-pytorch-on-gpu-host" not in _errors(cli, tmp_path, text)


def test_the_kb_knows_only_pairs_a_public_check_confirms_missing():
    conda = KB().conda
    for torch in ("1.8.1", "1.9.0", "1.9.1"):
        row = conda.pytorch_channel_missing(torch, "cudatoolkit", "11.3")
        assert row is not None and row.instead == "11.1"
    # builds that exist (the page's 1.10.0/11.3, 1.9.1/11.1) and pairs nobody checked are no row
    for torch, cuda in (("1.10.0", "11.3"), ("1.9.1", "11.1"), ("1.8.0", "10.1")):
        assert conda.pytorch_channel_missing(torch, "cudatoolkit", cuda) is None
