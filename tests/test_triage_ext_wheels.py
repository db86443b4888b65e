"""Issue 26, build-ext: a prebuilt extension wheel built for another torch release, CUDA major or
C++ ABI flag than the torch a report shows (fwdoctor.triage.ext_wheels). The texts are verbatim
from public threads, each also as pasting mangles it:

- Dao-AILab/flash-attention#680: the cxx11abiTRUE wheel installed beside pip's torch==2.1.0
  (old ABI); #853 (nspyf): the cxx11abiTRUE wheel failed beside "PyTorch version 2.2.0", FALSE
  worked; #1783: a cxx11abiFALSE wheel beside torch 2.6.0+cu124 printing ABI False (it matches:
  the thread's bug was elsewhere); #975: a FALSE torch2.4 wheel that "works" on torch2.4; #2425:
  release-asset URLs with "%2B";
- rusty1s/pytorch_scatter#414: "version 2.1.2+pt20cu118" beside PyTorch 2.1.1; #477: pip fetching
  torch_scatter-2.1.2%2Bpt20cu117 from data.pyg.org;
- pytorch/pytorch#72907: `python -c 'import torch; print(torch._C._GLIBCXX_USE_CXX11_ABI)'` then
  False, pasted above #680's wheel (two real fragments of one paste: the flag shown, an error).
"""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from fwdoctor.model import Severity
from fwdoctor.triage import triage
from tests.pasting import as_pasted
from tests.triage_run import messages, severities

ID = "extension-built-for-other-torch"

FA_680 = ("I follow:\npip install ./flash_attn-2.3.4+cu122torch2.1cxx11abiTRUE-cp39-cp39-linux_x86_64.whl\ntorch version:\ntorch==2.1.0\n"
          "nvidia-cuda-cupti-cu12   12.1.105\nnvidia-cuda-nvrtc-cu12   12.1.105\n")
FA_853 = ("I encountered a similar error while attempting to install the package using the command \n"
          "`pip install flash_attn-2.5.5+cu118torch2.2cxx11abiTRUE-cp38-cp38-linux_x86_64.whl`\n"
          "However, the issue was resolved by using the command \n"
          "`pip install flash_attn-2.5.5+cu118torch2.2cxx11abiFALSE-cp38-cp38-linux_x86_64.whl`\n"
          "PyTorch version 2.2.0\nCUDA version 11.8\nPython version 3.8.18\n")
PYG_414 = ("2. Install `torch_scatter` (attempted with version 2.1.2+pt20cu118).\n"
           "3. Run a script or a module that imports and uses `torch_scatter`.\n\n### Environment\n"
           "- PyTorch Version (e.g., 1.0): 2.1.1\n- OS (e.g., Linux): Linux\n"
           "- How you installed PyTorch (`conda`, `pip`, source): poetry\n- Python version: 3.10\n- CUDA/cuDNN version: 11.8\n"
           "```pyproject.toml\ntorch = \"2.1.1+cu118\"\ntorchvision = \"0.16.1+cu118\"\ntorchaudio = \"2.1.1+cu118\"\n")
ABI_SHOWN = "$ python -c 'import torch; print(torch._C._GLIBCXX_USE_CXX11_ABI)'\nFalse\n" + FA_680
FA_1783 = ("Hey! Encountered this issue while trying to use the wheel ` flash_attn-2.8.2+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl`. "
           "I'm 100% sure I picked the right wheel for my environment (I verified my env with:\n\n```\nimport torch\n"
           "print(f'PyTorch: {torch.__version__}')  # 2.6.0+cu124\nprint(f'CUDA: {torch.version.cuda}')     # 12.4  \n"
           "print(f'CXX11 ABI: {torch._C._GLIBCXX_USE_CXX11_ABI}')  # False\n```\n)\n\n**Environment:**\nOS: Ubuntu 22.04 LTS\n"
           "Python: 3.11.10\nPyTorch: 2.6.0+cu124\nCUDA: 12.4\nC++ ABI: False (torch._C._GLIBCXX_USE_CXX11_ABI returns False)\n")
FA_975 = "I use flash_attn-2.6.0+cu122torch2.4cxx11abiFALSE-cp310-cp310-linux_x86_64.whl in Ubuntu 22.04. It works.\nPython 3.10.14; torch2.4\n"
FA_2425 = ("- **Python 3.10**: [flash_attn-2.8.3+cu12torch2.11cxx11abiTRUE-cp310-cp310-linux_x86_64.whl]"
           "(https://github.com/lesj0610/flash-attention/releases/download/v2.8.3-cu12-torch2.11/flash_attn-2.8.3%2Bcu12torch2.11cxx11abiTRUE-cp310-cp310-linux_x86_64.whl)\n")
PYG_477 = ("pip install torch-scatter -f https://data.pyg.org/whl/torch-2.0.0+cu117.html\n"
           "Looking in links: https://data.pyg.org/whl/torch-2.0.0+cu117.html\nCollecting torch-scatter\n"
           "  Downloading https://data.pyg.org/whl/torch-2.0.0%2Bcu117/torch_scatter-2.1.2%2Bpt20cu117-cp310-cp310-linux_x86_64.whl (10.1 MB)\n"
           "Installing collected packages: torch-scatter\nSuccessfully installed torch-scatter-2.1.2+pt20cu117\n")


@pytest.mark.parametrize("text", as_pasted(FA_680, FA_853, PYG_414))
def test_a_wheel_for_another_abi_or_release_beside_a_torch_stated_is_a_warning(text: str, test_kb: KB) -> None:
    # pip's bare "2.1.0" may be conda-forge's or a source build (the new ABI): the command settles it
    assert severities(text, test_kb).get(ID) is Severity.WARNING, text


@pytest.mark.parametrize("text", as_pasted(ABI_SHOWN))
def test_the_abi_flag_shown_against_the_wheels_is_an_error(text: str, test_kb: KB) -> None:
    assert severities(text, test_kb).get(ID) is Severity.ERROR, text


def test_the_messages_name_what_differs_and_the_command(test_kb: KB) -> None:
    said = messages(FA_853, test_kb)[ID]
    assert "flash-attn 2.5.5 is built for torch 2.2 with cxx11abiTRUE" in said and "_GLIBCXX_USE_CXX11_ABI=False" in said
    assert "torch._C._GLIBCXX_USE_CXX11_ABI" in said
    assert "built for torch 2.0, but torch 2.1.1 is installed" in messages(PYG_414, test_kb)[ID]


@pytest.mark.parametrize("text", as_pasted(FA_1783, FA_975, FA_2425, PYG_477))
def test_matching_wheels_and_wheels_without_a_torch_raise_nothing(text: str, test_kb: KB) -> None:
    assert ID not in severities(text, test_kb), text


def test_the_reader_gives_each_wheel_with_what_it_was_built_for() -> None:
    facts, _ = triage(FA_2425)
    wheels = facts["report.ext_wheels"]
    assert {(w["package"], w["version"], w["torch"], w["cuda"], w["cxx11_abi"]) for w in wheels} == {("flash-attn", "2.8.3", "2.11", "12", True)}
    facts, _ = triage(PYG_477)
    assert ("torch-scatter", "2.1.2", "2.0", "117") in {(w["package"], w["version"], w["torch"], w["cuda"]) for w in facts["report.ext_wheels"]}
    assert ("pyg find-links page", "2.0", "117") in {(w["package"], w["torch"], w["cuda"]) for w in facts["report.ext_wheels"]}
    facts, _ = triage(FA_1783)
    assert facts["torch.cxx11_abi"] is False


def test_the_kb_gives_pytorch_wheels_abi_by_release_and_cuda(test_kb: KB) -> None:
    abi = test_kb.extensions.pytorch_wheel_abi
    assert abi("2.2.0+cu118", "11.8").cxx11_abi is False
    assert abi("2.6.0+cu126", "12.6").cxx11_abi is True and abi("2.6.0+cu124", "12.4").cxx11_abi is False
    assert abi("2.7.0", None).cxx11_abi is True and abi("not a version", None) is None
