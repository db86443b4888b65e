"""Issue 26, the build-ext group: frequent real-world classes of extension builds that the
field corpus's development part barely had.

- NVIDIA apex's setup.py banner ("Compiling cuda extensions with", `$CUDA_HOME/bin/nvcc -V`,
  "from $CUDA_HOME/bin") is CUDA_HOME's toolkit (cuda.active), and its RuntimeError "Cuda
  extensions are being compiled with a version of Cuda that does not match ... Pytorch binaries
  were compiled with Cuda X" is torch-toolkit-mismatch as an error even for a minor difference
  (apex refuses it, torch.utils.cpp_extension only warns);
- DeepSpeed's op builder "Installed CUDA version X does not match the version torch was compiled
  with Y" states both versions (torch-toolkit-mismatch);
- the host compiler's front end killed by the OOM killer ("c++: fatal error: Killed signal
  terminated program cc1plus", gcc < 10's "internal compiler error: Killed (program cc1plus)")
  is ext-jobs-exceed-memory, like nvcc's "'cicc' died due to signal 9";
- "fatal error: Python.h: No such file or directory" (gcc, from the extension's source or torch's
  python_headers.h) is ext-python-headers-missing: the interpreter's -dev headers are absent;
- xformers' "xFormers was built for: PyTorch A with CUDA N (you have B)" is
  extension-built-for-other-torch when B is another torch, and torch-cpu-build-on-gpu-host
  when B is a "+cpu" torch (a CUDA xformers installed says a GPU is meant).

Every text is quoted from the public thread named above it (doctor/kb/errors.yaml's sources)
and read also as pasting mangles it (tests/pasting.py); look-alikes must not fire."""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from fwdoctor.model import Severity
from fwdoctor.triage import triage
from tests.pasting import as_pasted
from tests.triage_run import messages, severities

pytestmark = pytest.mark.usefixtures("use_test_kb")


@pytest.fixture
def kb(test_kb: KB) -> KB:
    return test_kb


# NVIDIA/apex#550 (Wang-jialing324): nvcc 12.2 from /usr/local/cuda, torch 2.4.1 built with 12.1
APEX_MINOR = """\
torch.__version__  = 2.4.1

Compiling cuda extensions with
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2023 NVIDIA Corporation
Built on Tue_Jun_13_19:16:58_PDT_2023
Cuda compilation tools, release 12.2, V12.2.91
Build cuda_12.2.r12.2/compiler.32965470_0
from /usr/local/cuda/bin

Traceback (most recent call last):
  File "setup.py", line 178, in <module>
    check_cuda_torch_binary_vs_bare_metal(CUDA_HOME)
  File "setup.py", line 40, in check_cuda_torch_binary_vs_bare_metal
    raise RuntimeError(
RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the version used to compile Pytorch binaries.  Pytorch binaries were compiled with Cuda 12.1.
"""

# NVIDIA/apex#1171: pip's indented log, CUDA_HOME a CUDA 9.0 in the home folder, torch 1.6.0 (CUDA 10.2)
APEX_PIP = """\
 torch.__version__  = 1.6.0

    /tmp/pip-req-build-l3l15eo8/setup.py:67: UserWarning: Option --pyprof not specified. Not installing PyProf dependencies!
      warnings.warn("Option --pyprof not specified. Not installing PyProf dependencies!")

    Compiling cuda extensions with
    nvcc: NVIDIA (R) Cuda compiler driver
    Copyright (c) 2005-2017 NVIDIA Corporation
    Built on Fri_Sep__1_21:08:03_CDT_2017
    Cuda compilation tools, release 9.0, V9.0.176
    from /data/home/cuiaihao/cuda9/bin

    Traceback (most recent call last):
      File "<string>", line 1, in <module>
      File "/tmp/pip-req-build-l3l15eo8/setup.py", line 171, in <module>
        check_cuda_torch_binary_vs_bare_metal(torch.utils.cpp_extension.CUDA_HOME)
      File "/tmp/pip-req-build-l3l15eo8/setup.py", line 106, in check_cuda_torch_binary_vs_bare_metal
        "https://github.com/NVIDIA/apex/pull/323#discussion_r287021798.  "
    RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the version used to compile Pytorch binaries.  Pytorch binaries were compiled with Cuda 10.2.
"""

# NVIDIA/apex#955 (ptrblck quoting it): the RuntimeError alone, no banner
APEX_ALONE = """\
RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the version used to compile Pytorch binaries.  Pytorch binaries were compiled with Cuda 10.2.
    In some cases, a minor-version mismatch will not cause later errors:  https://github.com/NVIDIA/apex/pull/323#discussion_r287021798.  You can try commenting out this check (at your own risk).
"""

# NVIDIA/apex#280: apex before PR 323 only warned and went on building (look-alike: no error)
APEX_OLD_WARNING = """\
torch.__version__  =  1.1.0.dev20190429

Compiling cuda extensions with
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2019 NVIDIA Corporation
Built on Fri_Feb__8_19:08:17_PST_2019
Cuda compilation tools, release 10.1, V10.1.105
from /opt/cuda/bin


Warning:  Cuda extensions are being compiled with a version of Cuda that does not match the version used to compile Pytorch binaries.

Pytorch binaries were compiled with Cuda 10.0.130

running install
running bdist_egg
"""

# deepspeedai/DeepSpeed#2902: pip's log of deepspeed's setup.py on Windows
DS_PIP = """\
        File "C:\\Users\\PC60\\AppData\\Local\\Temp\\pip-install-7aimsv5v\\deepspeed_b92cc522763946a986a0e569e5e169e0\\op_builder\\builder.py", line 105, in assert_no_cuda_mismatch
          raise Exception(
      Exception: >- DeepSpeed Op Builder: Installed CUDA version 12.0 does not match the version torch was compiled with 11.7, unable to compile cuda/cpp extensions
"""

# JIA-Lab-research/MGM#91
DS_EXCEPTION = """\
deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: Installed CUDA version 12.2 does not match the version torch was compiled with 11.7, unable to compile cuda/cpp extensions without a matching cuda version.
"""

# NVlabs/nvdiffrast#183: a torch extension's .cpp under ninja, the OOM killer ending cc1plus
CC1PLUS_KILLED = """\
[9/16] c++ -MMD -MF texture.o.d -DTORCH_EXTENSION_NAME=nvdiffrast_plugin -DTORCH_API_INCLUDE_EXTENSION_H -DPYBIND11_COMPILER_TYPE=\\"_gcc\\" -DPYBIND11_STDLIB=\\"_libstdcpp\\" -DPYBIND11_BUILD_ABI=\\"_cxxabi1011\\" -isystem /usr/local/lib/python3.8/dist-packages/torch/include -D_GLIBCXX_USE_CXX11_ABI=0 -fPIC -std=c++17 -DNVDR_TORCH -c /usr/local/lib/python3.8/dist-packages/nvdiffrast/common/texture.cpp -o texture.o 
c++: fatal error: Killed signal terminated program cc1plus
compilation terminated.
ninja: build stopped: subcommand failed.
"""

# hoytech/strfry#41: make -j4 on a 4 GB droplet
GPP_KILLED = """\
g++: fatal error: Killed signal terminated program cc1plus
compilation terminated.
make: *** [golpe/rules.mk:28: build/config.o] Error 1
make: *** Waiting for unfinished jobs....
"""

# pytorch/QNNPACK#28: gcc 4.9's wording on a Raspberry Pi
ICE_KILLED = """\
c++: internal compiler error: Killed (program cc1plus)
Please submit a full bug report,
with preprocessed source if appropriate.
See <file:///usr/share/doc/gcc-4.9/README.Bugs> for instructions.
caffe2/CMakeFiles/caffe2.dir/build.make:4974: recipe for target 'caffe2/CMakeFiles/caffe2.dir/utils/math_cpu.cc.o' failed
"""


# deepspeedai/DeepSpeed#3223 (the line loadams answered): torch's own python_headers.h in a venv
PYTHON_H_TORCH = """\
/home/ubuntuai/axolotl/.venv/lib/python3.10/site-packages/torch/include/torch/csrc/python_headers.h:12:10: fatal error: Python.h: No such file or directory 12 | #include <Python.h> |          ^~~~~~~~~~ compilation terminated.
"""

# dBeker/Faster-RCNN-TensorFlow-Python3#89: setup.py build_ext with -I/usr/include/python3.6m and no python-dev
PYTHON_H_GCC = """\
x86_64-linux-gnu-gcc -pthread -DNDEBUG -g -fwrapv -O2 -Wall -g -fstack-protector-strong -Wformat -Werror=format-security -Wdate-time -D_FORTIFY_SOURCE=2 -fPIC -I/usr/local/lib/python3.6/dist-packages/numpy/core/include -I../common -I/usr/include/python3.6m -c pycocotools/_mask.c -o build/temp.linux-x86_64-3.6/pycocotools/_mask.o
pycocotools/_mask.c:27:20: fatal error: Python.h: No such file or directory
compilation terminated.
error: command 'x86_64-linux-gnu-gcc' failed with exit status 1
"""


@pytest.mark.parametrize("text", as_pasted(PYTHON_H_TORCH, PYTHON_H_GCC))
def test_missing_python_h_is_python_headers_missing(text, kb):
    assert severities(text, kb).get("ext-python-headers-missing") is Severity.ERROR


# facebookresearch/xformers#800: an xformers wheel for torch 2.1.0+cu121 under torch 2.1.0+cu118
XFORMERS_OTHER_TORCH = """\
WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:
    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0+cu118)
    Python  3.8.18 (you have 3.8.5)
  Please reinstall xformers (see https://github.com/facebookresearch/xformers#installing-xformers)
  Memory-efficient attention, SwiGLU, sparse and more won't be available.
  Set XFORMERS_MORE_DETAILS=1 for more details
"""

# TheLastBen/fast-stable-diffusion#2672: the logging module's prefix, torch upgraded under xformers
XFORMERS_LOGGED = """\
WARNING:xformers:WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:
    PyTorch 2.0.1+cu118 with CUDA 1108 (you have 2.1.0+cu121)
"""

# facebookresearch/xformers#982: a CUDA xformers under the CPU torch
XFORMERS_CPU_TORCH = """\
python -m xformers.info
WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:
    PyTorch 2.2.0+cu121 with CUDA 1201 (you have 2.2.0+cpu)
    Python  3.11.7 (you have 3.11.0)
  Please reinstall xformers (see https://github.com/facebookresearch/xformers#installing-xformers)
"""

# Vchitect/SEINE#21 (look-alike): the same torch on both sides (a Mac): not a torch mismatch
XFORMERS_SAME_TORCH = """\
WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:
    PyTorch 2.0.1 with CUDA 1106 (you have 2.0.1)
    Python  3.9.16 (you have 3.9.16)
"""


@pytest.mark.parametrize("text", as_pasted(XFORMERS_OTHER_TORCH, XFORMERS_LOGGED))
def test_xformers_built_for_another_torch_is_extension_built_for_other_torch(text, kb):
    assert severities(text, kb).get("extension-built-for-other-torch") is Severity.ERROR
    assert "xformers was built for torch" in messages(text, kb)["extension-built-for-other-torch"]


@pytest.mark.parametrize("text", as_pasted(XFORMERS_CPU_TORCH))
def test_xformers_under_a_cpu_torch_is_the_cpu_torch(text, kb):
    found = severities(text, kb)
    assert "torch-cpu-build-on-gpu-host" in found and "extension-built-for-other-torch" not in found, found
    facts, _ = triage(text)
    assert facts["torch.version"] == "2.2.0+cpu" and facts["torch.cuda"] is None


def test_xformers_with_the_same_torch_says_nothing_of_torch(kb):
    found = severities(XFORMERS_SAME_TORCH, kb)
    assert not {"extension-built-for-other-torch", "torch-cpu-build-on-gpu-host"} & set(found), found


@pytest.mark.parametrize("text", as_pasted(APEX_MINOR))
def test_apex_refusing_a_minor_cuda_difference_is_an_error_naming_cuda_home(text, kb):
    assert severities(text, kb).get("torch-toolkit-mismatch") is Severity.ERROR
    message = messages(text, kb)["torch-toolkit-mismatch"]
    assert "CUDA 12.1" in message and "/usr/local/cuda" in message and "CUDA 12.2" in message
    assert "apex" in message


@pytest.mark.parametrize("text", as_pasted(APEX_PIP))
def test_apex_banner_in_a_pip_log_is_cuda_home_of_another_major(text, kb):
    assert severities(text, kb).get("torch-toolkit-mismatch") is Severity.ERROR
    assert "/data/home/cuiaihao/cuda9" in messages(text, kb)["torch-toolkit-mismatch"]


def test_apex_banner_is_read_as_the_active_toolkit():
    facts, _ = triage(APEX_PIP)
    assert facts["cuda.active"]["root"] == "/data/home/cuiaihao/cuda9"
    assert facts["cuda.active"]["version"] == "9.0.176"


@pytest.mark.parametrize("text", as_pasted(APEX_ALONE))
def test_apex_runtime_error_alone_is_the_mismatch(text, kb):
    assert severities(text, kb).get("torch-toolkit-mismatch") is Severity.ERROR


def test_apex_warning_that_went_on_building_is_no_error(kb):
    found = severities(APEX_OLD_WARNING, kb)
    assert not [i for i, s in found.items() if s is Severity.ERROR], found


def test_a_plain_nvcc_before_a_from_line_is_not_cuda_home():
    text = APEX_MINOR.replace("Compiling cuda extensions with\n", "$ nvcc -V\n")
    facts, _ = triage(text)
    assert not facts.known("cuda.active")


@pytest.mark.parametrize("text", as_pasted(DS_PIP, DS_EXCEPTION))
def test_deepspeed_cuda_mismatch_is_the_torch_toolkit_mismatch(text, kb):
    assert severities(text, kb).get("torch-toolkit-mismatch") is Severity.ERROR
    assert "CUDA 11.7" in messages(text, kb)["torch-toolkit-mismatch"]


@pytest.mark.parametrize("text", as_pasted(CC1PLUS_KILLED, GPP_KILLED, ICE_KILLED))
def test_host_compiler_killed_is_jobs_exceeding_memory(text, kb):
    assert severities(text, kb).get("ext-jobs-exceed-memory") is Severity.ERROR


@pytest.mark.parametrize("text", [
    # a real compiler crash, not a kill (gcc's ICE with a segfault)
    "c++: internal compiler error: Segmentation fault signal terminated program cc1plus\n",
    "cc1plus: fatal error: texture.cpp: No such file or directory\ncompilation terminated.\n",
    # another header missing is not Python.h (cuda_runtime_api.h: lzccccc/SMOKE#73)
    "fatal error: cuda_runtime_api.h: No such file or directory\n#include <cuda_runtime_api.h>\n",
    '/usr/include/python3.8/Python.h:11:10: fatal error: limits.h: No such file or directory\n',
    # DeepSpeed's installed CUDA that matches torch's: nothing said
    "DeepSpeed general environment info:\ntorch cuda version ............... 12.1\nnvcc version ..................... 12.1\n",
])
def test_look_alikes_do_not_fire(text, kb):
    found = severities(text, kb)
    assert not {"ext-jobs-exceed-memory", "torch-toolkit-mismatch", "ext-python-headers-missing"} & set(found), found
