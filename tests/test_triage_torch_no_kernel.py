"""Issue 26: torch's own "no kernel image" on a GPU older than every torch wheel, where the
report shows neither torch's release nor its CUDA (fwdoctor.triage.rules
torch_no_kernel_below_every_release), and torch's device-properties repr as a source of the
GPU's compute capability (fwdoctor.triage.torch_device).

Recorded texts: pytorch/pytorch#31314 (a GeForce GT 740M, cc 3.0: "RuntimeError: CUDA error:
no kernel image is available for execution on the device"), pytorch/pytorch#31285 (torch's
`_CudaDeviceProperties(name='GeForce GT 740', major=3, minor=0, ...)`, a name the KB cannot
give a capability for), pytorch/pytorch#36062 (a GeForce GTX TITAN, 3.5),
thong3le/blackbox-attack#1 (THC's "cuda runtime error (48)") and
ComputationalRadiationPhysics/cuda_memtest#33 (not torch: the same CUDA error from another
program). The frozen test KB's torch wheels start at sm_37 (tests/kb/torch.yaml)."""

from __future__ import annotations

import pytest

from fwdoctor.triage import torch_device
import pasting
from triage_helpers import facts_of, findings

pytestmark = pytest.mark.usefixtures("use_test_kb")
ID = "gpu-arch-unsupported-by-torch"

# pytorch/pytorch#31314, verbatim
GT740M = ("My GPU is `GeForce GT 740M`, cuda version is `cuda-10.0.130-2`, installed pytorch by "
          "`pip install torch==1.3.1+cu92 torchvision==0.4.2+cu92  -f https://download.pytorch.org/whl/torch_stable.html`\n\n"
          "After I installed pytorch, my test to use gpu failed get the error:"
          "`RuntimeError: CUDA error: no kernel image is available for execution on the device`.\n")
# pytorch/pytorch#31285, verbatim up to the traceback's first frames; the last line is torch's error as #31314 prints it
GT740_PROPS = ("```\n1.3.1\nTrue\nTrue\n"
               "_CudaDeviceProperties(name='GeForce GT 740', major=3, minor=0, total_memory=1991MB, multi_processor_count=2)\n"
               "---------------------------------------------------------------------------\n"
               "RuntimeError                              Traceback (most recent call last)\n"
               "<ipython-input-6-668ac820ff90> in <module>\n"
               "      5 device = torch.device('cuda')\n"
               "      6 print(torch.cuda.get_device_properties(device))\n"
               "----> 7 print(torch.tensor([1.0, 2.0]).cuda())\n\n"
               "RuntimeError: CUDA error: no kernel image is available for execution on the device\n```\n")
# pytorch/pytorch#36062, verbatim
TITAN_PROPS = "_CudaDeviceProperties(name='GeForce GTX TITAN', major=3, minor=5, total_memory=6082MB, multi_processor_count=14)\n"
# thong3le/blackbox-attack#1, verbatim
THC = "RuntimeError: cuda runtime error (48) : no kernel image is available for execution on the device at d:\\pytorch\\pytorch\\torch\\lib\\thcunn\\generic/Threshold.cu:34\n"
# ComputationalRadiationPhysics/cuda_memtest#33, verbatim (a GT 720, cc 3.5; not torch)
MEMTEST = ("[11/21/2021 13:15:17][nis-arch][0]:Device name=NVIDIA GeForce GT 720, global memory size=2097283072, serial=unknown (NVML runtime error)\n"
           "[11/21/2021 13:15:17][nis-arch][0]:ERROR: CUDA error: no kernel image is available for execution on the device, line 590, file /home/nis/Downloads/cuda_memtest-dev/tests.cu\n")


mangled = pasting.forms


@pytest.mark.parametrize("text", [GT740M, *mangled(GT740M)])
def test_torchs_no_kernel_error_on_a_gpu_below_every_wheel_is_an_error(cli, tmp_path, text):
    hit = findings(cli, tmp_path, text)[ID]
    assert hit["severity"] == "error"
    assert "GeForce GT 740M (compute capability 3.0, sm_30)" in hit["message"] and "any CUDA wheel" in hit["message"]
    assert hit["fix"]["recipe"] == "torch-source"


def test_the_error_wrapped_by_a_terminal_is_still_read(cli, tmp_path):
    wrapped = GT740M.replace("available for execution", "available for\nexecution")
    assert findings(cli, tmp_path, wrapped)[ID]["severity"] == "error"


@pytest.mark.parametrize("text", [GT740_PROPS, *mangled(GT740_PROPS)])
def test_torchs_device_properties_give_a_capability_the_kb_cannot(cli, tmp_path, text):
    # "GeForce GT 740" shipped on chips of two capabilities: the KB has no row for the name
    assert [(g["name"], g["cc"]) for g in facts_of(torch_device.find, text)["gpus.list"]] == [("GeForce GT 740", "3.0")]
    assert "GeForce GT 740 (compute capability 3.0" in findings(cli, tmp_path, text)[ID]["message"]


def test_thcs_wording_is_torchs_too(cli, tmp_path):
    assert findings(cli, tmp_path, "NVIDIA GeForce GT 740M here.\n\n" + THC)[ID]["severity"] == "error"


@pytest.mark.parametrize("text, warning", [
    # the CUDA runtime's words alone: torch, an extension, or another program? PyTorch is
    # named, and no CUDA wheel ever ran a cc 3.0 GPU: a warning (fwdoctor.triage.arch_floors)
    (GT740M.replace("RuntimeError: CUDA error: ", ""), True),
    (MEMTEST.replace("GT 720", "GT 740M"), False),                   # another program's "CUDA error: ..."
    (GT740M.replace("GeForce GT 740M", "GeForce RTX 3090"), False),  # a GPU the wheels support: an extension's kernel may be missing
    (GT740M.replace("GeForce GT 740M", "NVIDIA Tesla K80"), False),  # sm_37 is in some wheel: which one was installed is unknown
    # nothing says torch ran on it; that no wheel runs it is still worth a warning
    ("GPU is GeForce GT 740M | 3.0\n\nI can use pytorch but only cpu feature.\n", True),
    (THC, False),                                                    # no GPU named
])
def test_look_alikes_raise_no_torch_arch_error(cli, tmp_path, text, warning):
    hit = findings(cli, tmp_path, text).get(ID)
    assert (hit["severity"] if hit else None) == ("warning" if warning else None)


def test_the_reader_takes_each_nvidia_gpu_once_and_no_rocm_device():
    text = TITAN_PROPS + TITAN_PROPS + "_CudaDeviceProperties(name='AMD Instinct MI250X', major=9, minor=0, gcnArchName='gfx90a:sramecc+:xnack-', total_memory=65520MB, multi_processor_count=104)\n"
    assert [(g["name"], g["cc"]) for g in facts_of(torch_device.find, text)["gpus.list"]] == [("GeForce GTX TITAN", "3.5")]
    assert facts_of(torch_device.find, "print(torch.cuda.get_device_properties(device))\n") == {}
    assert facts_of(torch_device.find, "_CudaDeviceProperties(name='" + "x" * 5000) == {}


def test_a_long_hostile_line_is_linear():
    import time

    start = time.perf_counter()
    facts_of(torch_device.find, "_CudaDeviceProperties(name='a', major=1, minor=2" + "(" * 60000)
    facts_of(torch_device.find, "_CudaDeviceProperties(" * 3000)
    assert time.perf_counter() - start < 1.0


def test_a_torch_older_than_every_wheel_in_the_kb_is_not_judged(cli, tmp_path):
    # torch 0.3.1 still shipped sm_30; the test KB's oldest release is 1.13.0
    assert ID not in findings(cli, tmp_path, ">>> torch.__version__\n'0.3.1'\n\n" + GT740M)
