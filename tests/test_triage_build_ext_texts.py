"""Issue 26, the build-ext group: the other wordings extension builds print for the causes
triage already knows, beyond the field corpus's own.

- nvcc's "Value 'sm_86' is not defined for option 'gpu-architecture'" (pycuda, Makefiles,
  `-arch=`) is gpu-arch-unsupported-by-toolkit like "Unsupported gpu architecture", and the
  finding says from the KB which CUDA releases compile for that arch;
- host_config.h's older gcc wordings ("later than 4.9", "gcc 4.9 and up are not supported"),
  its MSVC check ("unsupported Microsoft Visual Studio version!") and torch.utils.cpp_extension's
  own compiler bounds ("The current installed version of g++ (12.2.1) is greater than the maximum
  required version by CUDA 11.7", both torch < 2.1's and torch >= 2.1's wording) are
  host-compiler-unsupported, with the gcc to install;
- torch's "CUDA_HOME environment variable is not set" is toolkit-missing (info);
- pip's or uv's isolated (PEP 517) build without torch gets its note (no finding id fits), and
  no error.

Every text is quoted from the public thread named above it (doctor/kb/errors.yaml's sources)
and read also as pasting mangles it (tests/pasting.py); look-alikes must not fire."""

from __future__ import annotations

import json

import pytest

from fwdoctor.triage import triage
from tests.pasting import forms

pytestmark = pytest.mark.usefixtures("use_test_kb")


def triaged(cli, tmp_path, text: str) -> tuple[dict[str, str], str]:
    """(findings' severities by id, the text report with its lines joined)."""
    path = tmp_path / "report.md"
    path.write_bytes(text.encode("utf-8"))
    doc = json.loads(cli("triage", "--json", str(path)).output)
    shown = cli("triage", str(path)).output
    return {f["id"]: f["severity"] for f in doc["findings"]}, " ".join(part.strip() for part in shown.split("\n"))


def entries(text: str) -> dict[str, dict]:
    facts, _ = triage(text)
    return {e["kind"]: e for e in (facts["report.errors"] if facts.known("report.errors") else [])}


def each_form(text: str) -> list[str]:
    return [text, *forms(text)]


# zju3dv/NeuralRecon#119: pycuda running CUDA 11.0's nvcc for an RTX 30xx (sm_86 needs CUDA 11.1)
NVCC_VALUE_SM86 = """\
pycuda.driver.CompileError: nvcc compilation of /tmp/tmp3sh8k726/kernel.cu failed
[command: /usr/local/cuda-11.0/bin/nvcc --cubin -arch sm_86 -I/home/dell/anaconda3/envs/neucon/lib/python3.7/site-packages/pycuda/cuda kernel.cu]
[stderr:
nvcc fatal   : Value 'sm_86' is not defined for option 'gpu-architecture'
]
"""

# HazyResearch/butterfly#23: setup.py asks for sm_30, which CUDA 11.2's nvcc no longer has
NVCC_VALUE_SM30 = """\
“nvcc fatal   : Value 'sm_30' is not defined for option 'gpu-architecture'
error: command '/usr/local/cuda/bin/nvcc' failed with exit status 1
”
"""

# inducer/pycuda#440 (nvcc 11.6 on Windows asked for sm_89)
NVCC_VALUE_SM89 = "nvcc fatal   : Value 'sm_89' is not defined for option 'gpu-architecture'\n"

# Look-alikes: a bracketed value (multimodallearning/pytorch-mask-rcnn#38) and a placeholder left
# in the README's command (jytime/Mask_RCNN_Pytorch#15) are typos, not archs; nvcc's deprecation
# warning is no failure.
NVCC_VALUE_NOT_AN_ARCH = """\
nvcc fatal   : Value '[sm_61]' is not defined for option 'gpu-architecture'
nvcc fatal : value 'arch' is not defined for option 'gpu-architecture'
nvcc warning : The 'compute_35', 'compute_37', 'compute_50', 'sm_35', 'sm_37' and 'sm_50' architectures are deprecated, and may be removed in a future release (Use -Wno-deprecated-gpu-targets to suppress warning).
"""


@pytest.mark.parametrize("text", each_form(NVCC_VALUE_SM86))
def test_nvccs_value_not_defined_for_gpu_architecture_is_an_arch_this_nvcc_lacks(cli, tmp_path, text):
    found, shown = triaged(cli, tmp_path, text)
    assert found.get("gpu-arch-unsupported-by-toolkit") == "error", found
    assert "cannot compile for sm_86; CUDA 11.1 and later compile for it" in shown


def test_an_arch_removed_from_nvcc_is_named_with_the_releases_that_had_it(cli, tmp_path):
    found, shown = triaged(cli, tmp_path, NVCC_VALUE_SM30)
    assert found.get("gpu-arch-unsupported-by-toolkit") == "error", found
    assert "cannot compile for sm_30; CUDA 7.0 to 10.2 compile for it (later releases removed it)" in shown
    assert entries(NVCC_VALUE_SM89)["nvcc-arch-value-not-defined"]["arch"] == "sm_89"


@pytest.mark.parametrize("text", each_form(NVCC_VALUE_NOT_AN_ARCH))
def test_a_value_that_names_no_arch_and_the_deprecation_warning_raise_nothing(cli, tmp_path, text):
    found, _ = triaged(cli, tmp_path, text)
    assert "gpu-arch-unsupported-by-toolkit" not in found and "error" not in found.values(), found


# cbuchner1/CudaMiner#155: CUDA 5.5's host_config.h with Fedora 23's gcc 5.3.1
GNU_AND_UP = """\
/usr/local/cuda-5.5//bin/..//include/host_config.h:82:2: error: #error -- unsupported GNU version! gcc 4.9 and up are not supported!

# gcc --version
gcc (GCC) 5.3.1 20151207 (Red Hat 5.3.1-2)
"""

# PaddlePaddle/Paddle#491's title: CUDA 7.5 with Ubuntu 16.04's gcc 5.4
GNU_LATER_THAN_MINOR = "# gcc versions later than 4.9 are not supported\n\nCannot compile paddle on Ubuntu 16.04.1 LTS becauseof gcc-5.4\n"


@pytest.mark.parametrize("text", each_form(GNU_AND_UP))
def test_host_configs_older_and_up_wording_names_the_last_gcc_it_takes(cli, tmp_path, text):
    found, shown = triaged(cli, tmp_path, text)
    assert found.get("host-compiler-unsupported") == "error", found
    assert "(gcc <= 4.8)" in shown and "sudo apt-get install gcc-4.8 g++-4.8" in shown


@pytest.mark.parametrize("text", each_form(GNU_LATER_THAN_MINOR))
def test_host_configs_limit_with_a_minor_is_read_whole(cli, tmp_path, text):
    found, shown = triaged(cli, tmp_path, text)
    assert found.get("host-compiler-unsupported") == "error", found
    assert "(gcc <= 4.9)" in shown and "gcc-4.9 g++-4.9" in shown


# qwopqwop200/GPTQ-for-LLaMa#33 (torch < 2.1's wording: the bound after the CUDA release, "<=")
TORCH_BOUND_OLD = """\
`RuntimeError: The current installed version of g++ (12.2.1) is greater than the maximum required version by CUDA 11.7 (11.5.0). Please make sure to use an adequate version of g++ (>=6.0.0, <=11.5.0).`
when trying to run

`python setup_cuda.py install`
"""

# oobabooga/textgen#850's title (torch >= 2.1: "<12.0", the first gcc refused)
TORCH_BOUND_NEW = ("RuntimeError: The current installed version of g++ (12.2.1) is greater than the maximum required version by CUDA 11.7. "
                   "Please make sure to use an adequate version of g++ (>=6.0.0, <12.0).\n")

# mit-han-lab/torchsparse#189 (pip's indented build output, Debian's triplet-prefixed g++)
TORCH_BOUND_TRIPLET = ("      RuntimeError: The current installed version of x86_64-linux-gnu-g++ (11.3.0) is greater than the maximum required "
                       "version by CUDA 11.3 (10.0.0). Please make sure to use an adequate version of x86_64-linux-gnu-g++ (>=5.0.0, <=10.0.0).\n")


@pytest.mark.parametrize(("text", "have", "limit"), [
    *((t, "g++ 12.2.1", "11") for t in each_form(TORCH_BOUND_OLD)),
    *((t, "g++ 12.2.1", "11") for t in each_form(TORCH_BOUND_NEW)),
    *((t, "x86_64-linux-gnu-g++ 11.3.0", "10") for t in each_form(TORCH_BOUND_TRIPLET)),
])
def test_torchs_own_compiler_bound_is_the_host_compiler_limit(cli, tmp_path, text, have, limit):
    found, shown = triaged(cli, tmp_path, text)
    assert found.get("host-compiler-unsupported") == "error", found
    assert f"{have} is newer than torch.utils.cpp_extension allows with CUDA" in shown
    assert f"(gcc <= {limit})" in shown and f"gcc-{limit} g++-{limit}" in shown


def test_torchs_bound_wrapped_by_a_terminal_is_still_read():
    cut = TORCH_BOUND_NEW.index(" required version")  # wrapped at a blank, as a pasted log's lines are
    wrapped = TORCH_BOUND_NEW[:cut] + "\n" + TORCH_BOUND_NEW[cut + 1:]
    entry = entries(wrapped)["torch-compiler-version-bound"]
    assert (entry["compiler_version"], entry["cuda"], entry["line"]) == ("12.2.1", "11.7", 1)


# Look-alikes: torch's warning when it has no bounds for a release, its minor-mismatch warning, and
# a conda-forge torch's garbled message (conda-forge/pytorch-cpu-feedstock#507: a torch bug, not
# the compiler) raise no error.
TORCH_BOUND_LOOKALIKES = """\
UserWarning: There are no g++ version bounds defined for CUDA version 12.8
The detected CUDA version (12.1) has a minor version mismatch with the version that was used to compile PyTorch (12.4). Most likely this shouldn't be a problem.
  RuntimeError: The current installed version of $BUILD_PREFIX/bin/x86_64-conda-linux-gnu-c++ (>=6.0.0, <14.0).
"""


@pytest.mark.parametrize("text", each_form(TORCH_BOUND_LOOKALIKES))
def test_torchs_compiler_warnings_and_a_garbled_bound_raise_nothing(cli, tmp_path, text):
    found, _ = triaged(cli, tmp_path, text)
    assert "error" not in found.values(), found


# TencentARC/BrushEdit#17 (CUDA 11.8 with a Visual Studio newer than 2022 17.9)
MSVC_2017_2022 = """\
```
C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8\\include\\crt/host_config.h(153): fatal error C1189: #error:  -- unsupported Microsoft Visual Studio version! Only the versions between 2017 and 2022 (inclusive) are supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; however, using an unsupported host compiler may cause compilation failure or incorrect run time execution. Use at your own risk.
      ms_deform_attn_cuda.cu
      error: command 'C:\\\\Program Files\\\\NVIDIA GPU Computing Toolkit\\\\CUDA\\\\v11.8\\\\bin\\\\nvcc' failed with exit code 2
```
"""

# CMU-Perceptual-Computing-Lab/openpose#551 (CUDA 9's list of releases)
MSVC_LIST = "Error C1189 #error:  -- unsupported Microsoft Visual Studio version! Only the versions 2012, 2013, 2015 and 2017 are supported!openpose\n"


@pytest.mark.parametrize("text", each_form(MSVC_2017_2022))
def test_host_configs_visual_studio_check_is_the_host_compiler_limit(cli, tmp_path, text):
    found, shown = triaged(cli, tmp_path, text)
    assert found.get("host-compiler-unsupported") == "error", found
    assert "(only between 2017 and 2022 (inclusive))" in shown
    assert "apt-get" not in shown  # a Windows compiler: no gcc to install


def test_an_older_visual_studio_list_is_read_too(cli, tmp_path):
    found, shown = triaged(cli, tmp_path, MSVC_LIST)
    assert found.get("host-compiler-unsupported") == "error", found
    assert "(only 2012, 2013, 2015 and 2017)" in shown


# NVIDIA/flownet2-pytorch#218 (the traceback's source line and the message)
CUDA_HOME_NOT_SET = """\
  File "/home/user/.local/lib/python3.7/site-packages/torch/utils/cpp_extension.py", line 1252, in _join_cuda_home
    raise EnvironmentError('CUDA_HOME environment variable is not set. '

OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.
"""


@pytest.mark.parametrize("text", each_form(CUDA_HOME_NOT_SET))
def test_torchs_cuda_home_not_set_is_no_toolkit_found(cli, tmp_path, text):
    found, shown = triaged(cli, tmp_path, text)
    assert found.get("toolkit-missing") == "info", found
    assert "error" not in found.values(), found


# ai-bond/flash-attention-v100#23 (uv: the isolated build has no torch)
UV_NO_TORCH = """\
(flash-attention-v100) flash-attention-v100 git:main  ❯ uv pip install . ⏎
Resolved 31 packages in 9ms
  × Failed to build `flash-attn-v100 @ file:///[...]/git/flash-attention-v100`
  ├─▶ The build backend returned an error
  ╰─▶ Call to `setuptools.build_meta.build_wheel` failed (exit status: 1)

      [stderr]
      Traceback (most recent call last):
        File "<string>", line 15, in get_ext_modules
      ModuleNotFoundError: No module named 'torch'
"""

# whyNLP/LCKV#17 (uv's own hint, with the error line before it)
UV_HINT = """\
ModuleNotFoundError: No module named 'torch'

hint: This error likely indicates that `flash-attn@2.8.1` depends on `torch`, but doesn't declare it as a build dependency. If `flash-attn` is a first-party package, consider
adding `torch` to its `build-system.requires`. Otherwise, `uv pip install torch` into the environment and re-run with `--no-build-isolation`.
"""

# Look-alikes: bowang-lab/U-Mamba#76, where the isolated build had torch and failed for want of
# nvcc; a script run without torch installed (no build step failed).
ISOLATED_BUILD_WITH_TORCH = """\
  × Getting requirements to build wheel did not run successfully.
  │ exit code: 1
  ╰─> [23 lines of output]
      /localscratch/as7438/as7438/pip-build-env-jmrxpe19/overlay/lib/python3.10/site-packages/torch/_subclasses/functional_tensor.py:276: UserWarning: Failed to initialize NumPy: No module named 'numpy' (Triggered internally at /pytorch/torch/csrc/utils/tensor_numpy.cpp:81.)
        cpu = _conversion_method_template(device=torch.device("cpu"))
      <string>:118: UserWarning: mamba_ssm was requested, but nvcc was not found.  Are you sure your environment has nvcc available?  If you're installing within a container from https://hub.docker.com/r/pytorch/pytorch, only images whose names contain 'devel' will provide nvcc.
"""
SCRIPT_WITHOUT_TORCH = "$ python generate.py\nTraceback (most recent call last):\n  File \"generate.py\", line 3, in <module>\n    import torch\nModuleNotFoundError: No module named 'torch'\n"


@pytest.mark.parametrize("text", each_form(UV_NO_TORCH))
def test_an_isolated_build_without_torch_gets_its_note_and_no_error(cli, tmp_path, text):
    found, shown = triaged(cli, tmp_path, text)
    assert "error" not in found.values(), found
    assert "isolated build environment (PEP 517) that has no torch" in shown and "--no-build-isolation" in shown
    assert "report line 10: \"No module named 'torch'\"" in shown or "report line 11: \"No module named 'torch'\"" in shown


def test_uvs_hint_says_it_alone_and_is_read_once():
    assert entries(UV_HINT)["torch-missing-in-isolated-build"]["line"] == 3
    assert [e["kind"] for e in triage(UV_NO_TORCH + UV_HINT)[0]["report.errors"]] == ["torch-missing-in-isolated-build"]


@pytest.mark.parametrize("text", [*each_form(ISOLATED_BUILD_WITH_TORCH), *each_form(SCRIPT_WITHOUT_TORCH)])
def test_a_build_that_had_torch_or_a_script_without_it_is_no_isolation_problem(text):
    assert "torch-missing-in-isolated-build" not in entries(text)


# if-ai/ComfyUI-IF_Trellis#40 (a flash-attn built on Windows, run on a pre-Ampere GPU) and
# vllm-project/vllm#8189 (vLLM's copy of the check, under its engine's log prefix)
FLASH_ATTN_TURING = """\
`RuntimeError: FlashAttention only supports Ampere GPUs or newer.
Exception raised from mha_fwd at ...\\AppData\\Local\\Temp\\pip-install-onk9dffz\\flash-attn_8c421b15efd44628893dc99fa06535c7\\csrc\\flash_attn\\flash_api.cpp:370 (most recent call first):
"""
FLASH_ATTN_VLLM = ("ERROR 01-11 13:09:40 engine.py:366] RuntimeError: Error in model execution (input dumped to "
                   "/tmp/err_execute_model_input_20250111-130939.pkl): FlashAttention only supports Ampere GPUs or newer.\n")

# Look-alike: flash-attn's dtype check is no GPU problem.
FLASH_ATTN_DTYPE = "RuntimeError: FlashAttention only support fp16 and bf16 data type\n"


@pytest.mark.parametrize("text", [*each_form(FLASH_ATTN_TURING), *each_form(FLASH_ATTN_VLLM)])
def test_flash_attns_ampere_check_is_an_arch_the_project_does_not_build_for(cli, tmp_path, text):
    found, shown = triaged(cli, tmp_path, text)
    assert found.get("ext-arch-unsupported-by-project") == "error", found
    # shown under its own area, not only counted
    assert "Extension-build pre-flight" in shown and "error ext-arch-unsupported-by-project: flash-attn says so in the report" in shown


@pytest.mark.parametrize("text", each_form(FLASH_ATTN_DTYPE))
def test_flash_attns_dtype_check_raises_nothing(cli, tmp_path, text):
    found, _ = triaged(cli, tmp_path, text)
    assert "error" not in found.values(), found
