"""Issue 26 (torch, jax, paddle, build-ext groups): classes of framework and extension-build
text judged through `fwdoctor triage`, each on text quoted from the public thread named above
it, also as pasting mangles it (tests/pasting.py), beside look-alikes that must not fire.

- torch's own cuDNN check (torch/backends/cudnn/__init__.py): "cuDNN version incompatibility:
  PyTorch was compiled against (8, 5, 0) but found runtime version (8, 4, 1)" and its older
  wordings: another libcudnn was loaded first (cudnn-shadowed).
- XLA's "Falling back to the CUDA driver for PTX compilation; ptxas does not support CC 8.9"
  and "UNIMPLEMENTED: ptxas ptxas too old": the ptxas found predates the GPU (ptxas-too-old-for-xla).
- Paddle's "(External) CUDA error(209), no kernel image ...": its build lacks the GPU's arch
  (gpu-arch-unsupported-by-framework).
- nvcc's "'cicc' died due to signal 9 (Kill signal)": the OOM killer ended a compile job
  (ext-jobs-exceed-memory).
"""

from __future__ import annotations

import pytest

from pasting import forms
from triage_helpers import findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


def _errors(found: dict) -> set[str]:
    return {i for i, f in found.items() if f["severity"] == "error"}


# ------------------------------------------------------------- torch: another cuDNN loaded
# https://github.com/RaleLee/Co-GAT/issues/2
COGAT_2 = """\
Exception has occurred: RuntimeError
cuDNN version incompatibility: PyTorch was compiled  against (8, 5, 0) but found runtime version (8, 3, 3). PyTorch already comes bundled with cuDNN. One option to resolving this error is to ensure PyTorch can find the bundled cuDNN.
"""
# https://github.com/bmaltais/kohya_ss/issues/1096 (a launcher's log line)
KOHYA_1096 = """\
17:22:49-350014 INFO     Torch 2.0.1+cu118
17:22:50-122539 ERROR    Could not load torch: cuDNN version incompatibility: PyTorch was compiled  against (8, 7, 0) but found runtime version (8, 2, 4). PyTorch already comes bundled with cuDNN. One option
                         to resolving this error is to ensure PyTorch can find the bundled cuDNN.one possibility is that there
"""
# https://github.com/pytorch/functorch/issues/926 (torch 1.12's wording)
FUNCTORCH_926 = "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but linked against (8, 0, 3)\n"
# https://github.com/xingyizhou/CenterNet/issues/119 (torch 0.4's wording)
CENTERNET_119 = "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7605\n"


@pytest.mark.parametrize("text", [COGAT_2, *forms(COGAT_2), *forms(KOHYA_1096), *forms(FUNCTORCH_926), *forms(CENTERNET_119)])
def test_torch_saying_its_cudnn_differs_from_the_loaded_one_is_cudnn_shadowed(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "cudnn-shadowed" in found
    assert "PyTorch was compiled" in found["cudnn-shadowed"]["message"]


@pytest.mark.parametrize("text", [
    # collect_env's healthy cuDNN lines
    "cuDNN version: Probably one of the following:\n/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.2\n",
    ">>> torch.backends.cudnn.version()\n8902\n",
    # prose about the error without torch's numbers
    "I used to get a cuDNN version incompatibility error but fixed it by unsetting LD_LIBRARY_PATH.\n",
    # TensorFlow's different check (its own row and finding)
    "PyTorch was compiled with cuDNN 8.9 and runs fine.\n",
])
def test_cudnn_lines_without_torchs_mismatch_raise_no_cudnn_shadowed(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "cudnn-shadowed" not in found
    assert not _errors(found)


# ------------------------------------------------------- XLA: ptxas older than the GPU's CC
# https://github.com/openxla/xla/issues/5932 (H800, CC 9.0)
XLA_5932 = """\
2023-09-26 23:49:25.317379: W external/xla/xla/stream_executor/gpu/asm_compiler.cc:231] Falling back to the CUDA driver for PTX compilation; ptxas does not support CC 9.0
2023-09-26 23:49:25.317412: W external/xla/xla/stream_executor/gpu/asm_compiler.cc:234] Used ptxas at ptxas
2023-09-26 23:49:25.317533: W external/xla/xla/stream_executor/gpu/redzone_allocator.cc:322] UNIMPLEMENTED: ptxas ptxas too old. Falling back to the driver to compile.
Relying on driver to perform ptx compilation. 
Modify $PATH to customize ptxas location.
"""
# https://github.com/kalininalab/alphafold_non_docker/issues/75 (its title; CC 8.9 with cudatoolkit 11.3)
AFND_75 = "Error: Falling back to the CUDA driver for PTX compilation; ptxas does not support CC 8.9\n"


@pytest.mark.parametrize("text", [XLA_5932, *forms(XLA_5932), *forms(AFND_75), *forms(XLA_5932.splitlines(keepends=True)[2])])
def test_xla_falling_back_because_ptxas_does_not_know_the_gpu_is_ptxas_too_old_for_xla(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "ptxas-too-old-for-xla" in found


@pytest.mark.parametrize("text", [
    # XLA's healthy note on its own ptxas
    "2024-01-01 00:00:00.000000: I external/xla/xla/stream_executor/cuda/cuda_asm_compiler.cc:123] Using ptxas at /usr/local/cuda/bin/ptxas\n",
    # the fallback asked for by a flag, without the reason
    "Relying on driver to perform ptx compilation.\n",
    # a GPU's capability in prose
    "The RTX 4080 has compute capability CC 8.9 and ptxas from CUDA 12.3 supports it.\n",
])
def test_ptxas_lines_without_xlas_fallback_reason_raise_nothing(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "ptxas-too-old-for-xla" not in found
    assert not _errors(found)


# ------------------------------------------------ Paddle: its own wording of CUDA error 209
# https://github.com/PaddlePaddle/PaddleOCR/issues/13119 (the title)
PADDLEOCR_13119 = "OSError: (External) CUDA error(209), no kernel image is available for execution on the device.\n"
# https://github.com/PaddlePaddle/PaddleX/issues/4682 (a Windows wheel: its path has backslashes)
PADDLEX_4682 = """\
OSError: (External) CUDA error(209), no kernel image is available for execution on the device.
  [Hint: 'cudaErrorNoKernelImageForDevice'. This indicates that there is no kernel image available that is suitable for the device. This can occur when a user specifiescode generation options for a particular CUDA source file that do not include the corresponding device configuration.] 
  (at ..\\paddle\\phi\\core\\platform\\device\\gpu\\gpu_info.cc:133)
"""


@pytest.mark.parametrize("text", [PADDLEOCR_13119, *forms(PADDLEOCR_13119), *forms(PADDLEX_4682)])
def test_paddles_external_cuda_error_209_is_gpu_arch_unsupported_by_framework(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "gpu-arch-unsupported-by-framework" in found


@pytest.mark.parametrize("text", [
    # Paddle's other external CUDA errors are not a missing kernel
    "OSError: (External) CUDA error(719), unspecified launch failure.\n",
    "OSError: (External) CUDA error(2), out of memory.\n",
    # llama.cpp's own wording of error 209 is not Paddle's build
    "CUDA error 209 at /home/user/llama.cpp/ggml-cuda.cu:6701: no kernel image is available for execution on the device\n",
])
def test_other_cuda_errors_or_other_programs_raise_no_framework_arch_finding(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "gpu-arch-unsupported-by-framework" not in found


# ------------------------------------ extension builds: nvcc's tools killed by the OOM killer
# https://github.com/NVIDIA/apex/issues/1356 (inside pip's indented build log)
APEX_1356 = """\
  /usr/local/cuda-10.2/bin/nvcc  -I/usr/lib/python3.10/site-packages/torch/include -c -c /root/elo/apex/csrc/multi_tensor_lamb.cu -o /root/elo/apex/build/temp.linux-x86_64-3.10/csrc/multi_tensor_lamb.o -gencode=arch=compute_70,code=sm_70 -std=c++14
  nvcc error   : 'cicc' died due to signal 9 (Kill signal)
  [4/14] /usr/local/cuda-10.2/bin/nvcc  -I/usr/lib/python3.10/site-packages/torch/include -c -c /root/elo/apex/csrc/multi_tensor_adam.cu
"""
# https://github.com/NVlabs/curobo/issues/109 (a docker build's log: seconds before each line)
CUROBO_109 = """\
28.38 [ 29%] Building CXX object CMakeFiles/nvblox_lib.dir/src/mesh/mesh_streamer.cpp.o
31.55 nvcc error   : 'cudafe++' died due to signal 9 (Kill signal)
31.58 make[2]: *** [CMakeFiles/nvblox_lib.dir/build.make:366: CMakeFiles/nvblox_lib.dir/src/integrators/tsdf_decay_integrator.cu.o] Error 9
"""


@pytest.mark.parametrize("text", [APEX_1356, *forms(APEX_1356), *forms(CUROBO_109)])
def test_nvcc_tools_killed_by_signal_9_are_ext_jobs_exceed_memory(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "ext-jobs-exceed-memory" in found
    assert "died due to signal 9" in found["ext-jobs-exceed-memory"]["message"]


@pytest.mark.parametrize("text", [
    # nvcc's tools failing for another reason
    "nvcc error   : 'cicc' died due to signal 11 (Invalid memory reference)\n",
    "nvcc error   : 'ptxas' died with status 0xC0000005 (ACCESS_VIOLATION)\n",
    # a healthy `free` beside a build (Dao-AILab/flash-attention#391: 298G available)
    "              total used free shared buff/cache available\nMem: 376G 62G 197G 12G 116G 298G\nSwap: 29G 24G 5.8G\n",
])
def test_other_nvcc_failures_raise_no_memory_finding(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert "ext-jobs-exceed-memory" not in found
    assert not _errors(found)
