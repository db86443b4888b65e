"""Issue 26, the nccl-fabric group: the loader's "undefined symbol: ncclXxx" (errors.yaml row
nccl-undefined-symbol, fwdoctor.triage.nccl_symbols): an NCCL older than the one the caller was
built against got into the process. nccl-shadowed, or nccl-cuda-mismatch where the report lists
NVIDIA's NCCL wheels of two CUDA majors. Each text is quoted from the public thread named above
it, then mangled as pasting does."""

from __future__ import annotations

import pytest

from fwdoctor.triage import nccl_symbols
import pasting
from triage_helpers import facts_of, findings

# https://github.com/rwth-i6/returnn/issues/1802 (`import torch` in CI)
RETURNN = ("Traceback (most recent call last):\n"
           "  File \"/home/runner/.local/lib/python3.10/site-packages/torch/__init__.py\", line 416, in <module>\n"
           "    from torch._C import *  # noqa: F403\n"
           "ImportError: /home/runner/.local/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclMemFree\n")
# the same thread, its collect_env: two NCCL wheels of two CUDA majors
RETURNN_WHEELS = "[pip3] nvidia-nccl-cu11==2.14.3\n[pip3] nvidia-nccl-cu12==2.27.3\n"
# https://github.com/rapidsai/cugraph/issues/4465 (cupy loaded the container's system NCCL first)
CUGRAPH = "E   ImportError: /pyenv/versions/3.9.19/lib/python3.9/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister\n"
# https://github.com/pytorch/pytorch/issues/119932 (its title)
PYTORCH_119932 = "Importing Torch is giving me an error undefined symbol: ncclCommRegister\n"

MANGLES = [lambda t: t, pasting.quoted, pasting.fenced, pasting.crlf, pasting.coloured, pasting.stamped]


@pytest.mark.parametrize("mangle", MANGLES)
@pytest.mark.parametrize("text", [RETURNN, CUGRAPH, PYTORCH_119932])
def test_an_undefined_nccl_function_is_an_older_nccl_shadowing_the_callers(cli, use_test_kb, tmp_path, text, mangle):
    got = findings(cli, tmp_path, mangle(text))
    assert got["nccl-shadowed"]["severity"] == "error"
    assert "nccl-cuda-mismatch" not in got


@pytest.mark.parametrize("mangle", MANGLES)
def test_nccl_wheels_of_two_cuda_majors_beside_it_are_an_nccl_for_another_cuda(cli, use_test_kb, tmp_path, mangle):
    got = findings(cli, tmp_path, mangle(RETURNN + RETURNN_WHEELS))
    hit = got["nccl-cuda-mismatch"]
    assert hit["severity"] == "error" and "nvidia-nccl-cu11 2.14.3" in hit["message"] and "ncclMemFree" in hit["message"]
    assert "nccl-shadowed" not in got


@pytest.mark.parametrize("mangle", MANGLES)
def test_nccl_wheels_are_read_from_freeze_pip_list_and_conda_list(mangle):
    text = ("[pip3] nvidia-nccl-cu12==2.20.5\n"
            "nvidia-nccl-cu11          2.14.3\n"
            "nvidia-nccl-cu13          2.28.3                   pypi_0    pypi\n")
    wheels = facts_of(nccl_symbols.find, mangle(text))["nccl.wheels"]
    assert [(w["package"], w["version"], w["cuda"]) for w in wheels] == [
        ("nvidia-nccl-cu12", "2.20.5", "12"), ("nvidia-nccl-cu11", "2.14.3", "11"), ("nvidia-nccl-cu13", "2.28.3", "13")]


@pytest.mark.parametrize("text", [
    # a mangled C++ name that mentions nccl (pytorch/pytorch#32638): torch's own symbol, no NCCL function
    "ImportError: /usr/lib/python3.8/site-packages/torch/lib/libtorch_python.so: undefined symbol: _ZN5torch4cuda4nccl6detail16throw_nccl_errorE12ncclResult_t\n",
    # the linker at build time, not the loader
    "/usr/bin/ld: all_reduce.o: undefined reference to `ncclCommRegister'\n",
    # one CUDA major of wheels and no error
    "[pip3] nvidia-nccl-cu12==2.27.3\n[pip3] torch==2.8.0\n",
    # two majors listed, but no missing function: nothing is said to fail
    RETURNN_WHEELS,
])
def test_look_alikes_raise_no_nccl_library_finding(cli, use_test_kb, tmp_path, text):
    got = findings(cli, tmp_path, text)
    assert "nccl-shadowed" not in got and "nccl-cuda-mismatch" not in got
