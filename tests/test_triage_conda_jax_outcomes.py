"""Issue 26, conda and JAX: what a report shows happened after conda solved, and ptxas's own
refusal under XLA. Real excerpts from public threads (each source named above it):

- conda asked for pytorch with pytorch-cuda, and collect_env then shows a CPU build
  (fwdoctor.triage.conda_cpu_solved);
- conda/micromamba info lists no __cuda, beside the solver refusing a CUDA package
  (fwdoctor.triage.conda_no_cuda);
- the loader's GLIBCXX message with its folder cut, beside a conda env's libstdc++ path named
  elsewhere in the report (fwdoctor.triage.conda_env);
- ptxas's "Unsupported .version 8.4; current version is '8.2'" among JAX's frames, not Triton's
  (doctor/kb/errors.yaml ptxas-unsupported-ptx-version)."""

from __future__ import annotations

import pytest

from fwdoctor.triage import conda_env, conda_no_cuda

from pasting import as_pasted
from triage_helpers import facts_of, findings

# https://github.com/pytorch/pytorch/issues/108607 (atalman: the nightly's CUDA conda builds had
# failed, so mamba installed the CPU build)
NIGHTLY_108607 = """\
> mamba create --name pytorch-test-2 python=3.9
> mamba activate pytorch-test-2
> mamba install -c "nvidia/label/cuda-11.8.0" cuda-toolkit
> mamba install pytorch torchvision torchaudio pytorch-cuda=11.8 -c pytorch-nightly -c nvidia
> python
>>> import torch
>>> torch.cuda.is_available()
False # should be True, no??
```

### Versions

```
Collecting environment information...
PyTorch version: 2.1.0.dev20230905
Is debug build: False
CUDA used to build PyTorch: Could not collect
ROCM used to build PyTorch: N/A

OS: Ubuntu 22.04.3 LTS (x86_64)
Is CUDA available: False
CUDA runtime version: 11.8.89
"""

# https://github.com/mamba-org/mamba/issues/2194 (CONDA_OVERRIDE_CUDA=11.6 solved it)
MICROMAMBA_2194 = """\
            environment : None (not found)
           env location : -
       libmamba version : 1.1.0
     micromamba version : 1.1.0
       virtual packages : __unix=0=0
                          __linux=4.18.0=0
                          __glibc=2.28=0
                          __archspec=1=x86_64
               channels :
       base environment : /home/username/micromamba
               platform : linux-64

info     libmamba Parsing MatchSpec pytorch::pytorch=1.13.0=py3.8_cuda11.6*
info     libsolv  job: install pytorch-1.13.0-py3.8_cuda11.6_cudnn8.3.2_0
info     libsolv  conflicting pytorch-cuda-11.6-h867d48c_1 (assertion)
info     libsolv  conflicting pytorch-cuda-11.6-h867d48c_0 (assertion)
"""

# https://github.com/getkeops/keops/issues/423 (jeanfeydy: the env's libstdc++ lacks what the
# module KeOps compiled with the system g++ needs)
KEOPS_423 = """\
# libstdc++.so.6: version `GLIBCXX_3.4.32' not found

This is a fairly common issue with compilers in conda environments.

```bash
# Move libstdc++ to a backup
mv /home/protostus/miniconda3/envs/scikit-env/lib/libstdc++.so.6 /home/protostus/miniconda3/envs/scikit-env/lib/libstdc++.so.6.bak
# Create a link to your system libstdc++ in your conda environment
ln -s /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /home/protostus/miniconda3/envs/scikit-env/lib/libstdc++.so.6
```
"""

# https://github.com/jax-ml/jax/issues/25344 (a site's CUDA 12.2 ptxas under jaxlib 0.4.34)
JAX_25344 = """\
jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CustomCall failed: ptxas exited with non-zero error code 65280, output: ptxas /tmp/tempfile-ng30101.narval.calcul.quebec-48db254e-784897-628d6ac249c58, line 5; fatal   : Unsupported .version 8.4; current version is '8.2'
ptxas fatal   : Ptx assembly aborted due to errors
"""
# https://github.com/QwenLM/Qwen2.5-Omni/issues/247 (the same ptxas text from Triton under torch on Windows)
QWEN_247 = """\
predict history:  [{'role': 'system', 'content': [{'type': 'text', 'text': 'You are Qwen'}]}]
ptxas C:\\Users\\ai\\AppData\\Local\\Temp\\tmpkoko0xtp.ptx, line 5; fatal   : Unsupported .version 8.8; current version is '8.7'
ptxas fatal   : Ptx assembly aborted due to errors
"""


@pytest.mark.parametrize("text", as_pasted(NIGHTLY_108607))
def test_a_conda_request_for_pytorch_cuda_then_a_cpu_torch_is_conda_solving_to_the_cpu_build(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert found["conda-cpu-pytorch-on-gpu-host"]["severity"] == "error"
    assert "pytorch-cuda=11.8" in found["conda-cpu-pytorch-on-gpu-host"]["message"]


def test_a_pip_cpu_wheel_after_the_conda_request_is_not_conda_s_cpu_build(cli, tmp_path):
    text = NIGHTLY_108607.replace("PyTorch version: 2.1.0.dev20230905", "PyTorch version: 2.1.0+cpu")
    assert "conda-cpu-pytorch-on-gpu-host" not in findings(cli, tmp_path, text)


def test_a_cuda_torch_after_the_conda_request_is_healthy(cli, tmp_path):
    text = NIGHTLY_108607.replace("CUDA used to build PyTorch: Could not collect", "CUDA used to build PyTorch: 11.8")
    assert "conda-cpu-pytorch-on-gpu-host" not in findings(cli, tmp_path, text)


@pytest.mark.parametrize("text", as_pasted(MICROMAMBA_2194))
def test_info_without_cuda_beside_a_refused_pytorch_cuda_is_a_cuda_conflict(cli, tmp_path, text):
    seen = facts_of(conda_no_cuda.find, text)["conda.no_cuda_virtual"]
    assert seen["names"] == ["unix", "linux", "glibc", "archspec"] and seen["package"] == "pytorch-cuda"
    assert findings(cli, tmp_path, text)["conda-cuda-pin-conflict"]["severity"] == "error"


def test_info_that_lists_cuda_says_nothing_of_a_missing_cuda():
    text = MICROMAMBA_2194.replace("__unix=0=0", "__cuda=11.6=0\n                          __unix=0=0")
    assert facts_of(conda_no_cuda.find, text) == {}


def test_a_listing_the_paste_cuts_off_says_nothing():
    text = MICROMAMBA_2194.split("               channels :")[0]
    assert facts_of(conda_no_cuda.find, text) == {}


@pytest.mark.parametrize("text", as_pasted(KEOPS_423))
def test_a_cut_glibcxx_message_beside_a_conda_env_libstdcxx_path_is_conda_s(cli, tmp_path, text):
    envs = facts_of(conda_env.find, text)["conda.envs"]
    assert envs[0]["prefix"] == "/home/protostus/miniconda3/envs/scikit-env"
    assert findings(cli, tmp_path, text)["conda-libstdcxx-too-old"]["severity"] == "error"


def test_a_system_libstdcxx_path_names_no_conda_env(cli, tmp_path):
    text = "# libstdc++.so.6: version `GLIBCXX_3.4.32' not found\n\nls -l /usr/lib/x86_64-linux-gnu/libstdc++.so.6\n"
    assert "conda.envs" not in facts_of(conda_env.find, text)
    assert "conda-libstdcxx-too-old" not in findings(cli, tmp_path, text)


@pytest.mark.parametrize("text", as_pasted(JAX_25344))
def test_ptxas_refusing_newer_ptx_under_jax_is_a_ptxas_too_old_for_xla(cli, tmp_path, text):
    assert findings(cli, tmp_path, text)["ptxas-too-old-for-xla"]["severity"] == "error"


def test_the_same_ptxas_text_from_triton_is_not_xla_s(cli, tmp_path):
    assert "ptxas-too-old-for-xla" not in findings(cli, tmp_path, QWEN_247)
