"""Issue 26, torch: torchvision and torchaudio built for another torch or CUDA than the torch
installed. The texts are verbatim from public threads (doctor/kb/errors.yaml names them), each
also as pasting mangles it; the look-alikes must not raise extension-built-for-other-torch.

- torchvision's own checks: "Detected that PyTorch and torchvision were compiled with different
  CUDA (major) versions" (deforum/deforum-stable-diffusion#348, mathmanu/edgeai-torchvision#18,
  geocine/sd-easy-mode#18 wrapped by the terminal), "operator torchvision::nms does not exist"
  (fudan-generative-vision/hallo#98, huggingface/diffusers#9109), "No such operator
  torchvision::nms" (facebookresearch/detectron2#94), "Couldn't load custom C++ ops"
  (ultralytics/yolov5#11149, microsoft/scene_graph_benchmark#60), "Could not run
  'torchvision::nms' with arguments from the 'CUDA' backend" (ltdrdata/ComfyUI-Impact-Pack#915,
  ultralytics/ultralytics#7713, mikel-brostrom/boxmot#42);
- the loader's undefined c10 symbol in torchvision/_C.so or torchaudio's libtorchaudio.so
  (facebookresearch/maskrcnn-benchmark#839, brycedrennan/imaginAIry#362), which the rule took for
  torch's own files (_C., libtorch*) before;
- pip's pin conflict, "torchvision 0.19.1 requires torch==2.4.1, but you have torch 2.5.1"
  (2kpr/ComfyUI-PMRF#11, torch/torch7#1249) and its older "has requirement" (pytorch/vision#2098);
- listings: pip's "Successfully installed torch-...+cu117 ... torchvision-...+cpu"
  (pytorch/pytorch#90272) and `pip show` of torch 2.4.0+cu121 beside torchvision 0.20.1+cu124
  (vladmandic/sdnext#3531), judged against doctor/kb/torch.yaml's release pairs.
"""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from fwdoctor.model import Severity
from fwdoctor.triage import triage
from tests.pasting import as_pasted
from tests.triage_run import messages, severities

ID = "extension-built-for-other-torch"

CUDA_MAJOR = ("DeforumStableDiffusion reports me an error:   RuntimeError: Detected that PyTorch and torchvision were compiled with different "
              "CUDA major versions. PyTorch has CUDA Version=12.1 and torchvision has CUDA Version=11.8. Please reinstall the torchvision "
              "that matches your PyTorch install. #348\n")
CUDA_MINOR_OLD = ("RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA versions. PyTorch has CUDA "
                  "Version=11.3 and torchvision has CUDA Version=11.7. Please reinstall the torchvision that matches your PyTorch install.\n")
CUDA_WRAPPED = ("RuntimeError: Detected that PyTorch and torchvision were compiled with different\nCUDA versions. PyTorch has CUDA "
                "Version=11.7 and torchvision has CUDA \nVersion=11.8. Please reinstall the torchvision that matches your PyTorch \ninstall.\n")
NMS_MISSING = """  File "/usr/local/lib/python3.10/dist-packages/torchvision/_meta_registrations.py", line 164, in <module>
    def meta_nms(dets, scores, iou_threshold):
  File "/usr/local/lib/python3.10/dist-packages/torch/library.py", line 467, in inner
    handle = entry.abstract_impl.register(func_to_register, source)
  File "/usr/local/lib/python3.10/dist-packages/torch/_library/abstract_impl.py", line 30, in register
    if torch._C._dispatch_has_kernel_for_dispatch_key(self.qualname, "Meta"):
RuntimeError: operator torchvision::nms does not exist
"""
NMS_OLD = "RuntimeError: No such operator torchvision::nms\n"
CUSTOM_OPS = ("RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision versions are incompatible, "
              "or if you had errors while compiling torchvision from source.\n")
NO_CUDA_KERNEL = ("RuntimeError: Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. 'torchvision::nms' is only "
                  "available for these backends: [CPU, BackendSelect, Named, AutogradOther, AutogradCPU, AutogradCUDA, AutogradXLA, Tracer, "
                  "Autocast, Batched, VmapMode].\n")
VISION_C = ("ImportError: /usr/local/lib/python3.6/dist-packages/torchvision/_C.cpython-36m-x86_64-linux-gnu.so: undefined symbol: "
            "_ZN3c1019UndefinedTensorImpl10_singletonE\n")
AUDIO_LIB = ("OSError: /usr/local/lib/python3.10/dist-packages/torchaudio/lib/libtorchaudio.so: undefined symbol: "
             "_ZNK3c107SymBool10guard_boolEPKcl\n")
PIP_CONFLICT = ("ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. This "
                "behaviour is the source of the following dependency conflicts.\n"
                "torchvision 0.19.1 requires torch==2.4.1, but you have torch 2.5.1 which is incompatible.\n")
PIP_CONFLICT_2 = "torchvision 0.18.0 requires torch==2.3.0, but you have torch 2.2.1 which is incompatible.\n"
PIP_OLD = "ERROR: torchvision 0.6.0 has requirement torch==1.5.0, but you'll have torch 1.6.0.dev20200413 which is incompatible.\n"
INSTALLED_CPU_VISION = ("Successfully installed torch-1.14.0.dev20221205+cu117 torchaudio-0.14.0.dev20221205+cu117 torchtriton-2.0.0+0d7e753227 "
                        "torchvision-0.15.0.dev20221205+cpu typing-extensions-4.4.0 urllib3-1.26.13\n")
PIP_SHOW_OTHER_RELEASE = """(venv) C:\\Users\\jfran\\Documents\\Artificial Intelligence\\automatic>pip show torch
Name: torch
Version: 2.4.0+cu121
Summary: Tensors and Dynamic neural networks in Python with strong GPU acceleration
Home-page: https://pytorch.org/

(venv) C:\\Users\\jfran\\Documents\\Artificial Intelligence\\automatic>pip show torchvision
Name: torchvision
Version: 0.20.1+cu124
Summary: image and video datasets and models for torch deep learning
"""

SAID = [CUDA_MAJOR, CUDA_MINOR_OLD, CUDA_WRAPPED, NMS_MISSING, NMS_OLD, CUSTOM_OPS, NO_CUDA_KERNEL, VISION_C, AUDIO_LIB,
        PIP_CONFLICT, PIP_CONFLICT_2, PIP_OLD, INSTALLED_CPU_VISION, PIP_SHOW_OTHER_RELEASE]


@pytest.mark.parametrize("text", [t for said in SAID for t in as_pasted(said)])
def test_a_companion_built_for_another_torch_is_an_error_as_pasted(text: str, test_kb: KB) -> None:
    assert severities(text, test_kb).get(ID) is Severity.ERROR, text


def test_the_messages_name_what_differs(test_kb: KB) -> None:
    assert "torchvision was built for CUDA 11.8 but torch for CUDA 12.1" in messages(CUDA_MAJOR, test_kb)[ID]
    assert "torchvision::nms" in messages(NMS_MISSING, test_kb)[ID]
    assert "torchvision 0.19.1 is built for torch 2.4.1 but torch 2.5.1 is installed" in messages(PIP_CONFLICT, test_kb)[ID]
    assert "torchvision/_C.cpython-36m-x86_64-linux-gnu.so was compiled against another torch" in messages(VISION_C, test_kb)[ID]
    assert "CPU build beside torch 1.14.0.dev20221205+cu117" in messages(INSTALLED_CPU_VISION, test_kb)[ID]
    # the KB's pair for torch 2.4.0 is torchvision 0.19.0: the fix names it
    shown = messages(PIP_SHOW_OTHER_RELEASE, test_kb)[ID]
    assert "torchvision 0.20.1+cu124 is of another release than torch 2.4.0+cu121" in shown and "0.19.x" in shown


def test_the_listing_reader_gives_each_package_with_its_line() -> None:
    facts, _ = triage(PIP_SHOW_OTHER_RELEASE)
    assert facts["torch.companions"] == [{"package": "torch", "version": "2.4.0+cu121", "line": 3},
                                         {"package": "torchvision", "version": "0.20.1+cu124", "line": 9}]


LOOK_ALIKES = [
    # torch's own files: torch mixed with another torch's files, not an extension (unchanged)
    "ImportError: /usr/local/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n",
    "ImportError: /opt/conda/lib/python3.10/site-packages/torch/_C.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n",
    # another op namespace, and the dispatcher's own wording for a torch op
    "NotImplementedError: Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend.\n",
    "Warning: Overriding a previously registered kernel for the same operator and the same dispatch key\n  operator: torchvision::nms\n",
    # pip conflicts of other packages
    "torchmetrics 0.11.4 requires torch>=1.8.1, but you have torch 1.7.0 which is incompatible.\n",
    "xformers 0.0.22 requires torch==2.0.1, but you have torch 2.1.0 which is incompatible.\n",
    # listings of matching pairs: the KB's pair, a patch of the same minor, another CUDA minor
    "torch                     2.1.0+cu121\ntorchvision               0.16.0+cu121\ntorchaudio                2.1.0+cu121\n",
    "[pip3] torch==2.1.2+cu121\n[pip3] torchvision==0.16.1+cu121\n[pip3] torchaudio==2.1.2+cu121\n",
    "torch                     2.4.0+cu121\ntorchvision               0.19.0+cu124\n",
    # zylo117/Yet-Another-EfficientDet-Pytorch#696: torch 1.4 with its torchvision 0.5 (the cause was elsewhere)
    "torch 1.4.0+cu92\ntorchvision 0.5.0\n",
    # pytorch/audio#3335: a source-built torchaudio of torch 1.13.1's release
    "torch                     1.13.1\ntorchaudio                0.13.1+b90d798\ntorchmetrics              0.11.4\ntorchvision               0.14.1\n",
    # a CUDA torchvision beside a "+cpu" torch is torch-cpu-build-on-gpu-host's to say
    "torch==2.2.1+cpu\ntorchvision==0.17.1+cu121\n",
    # a nightly pair of one day
    "Successfully installed torch-2.6.0.dev20241112+cu124 torchvision-0.20.0.dev20241112+cu124\n",
    # two listings far apart (before and after a reinstall): each torchvision beside its own torch
    "torch 2.1.0+cu118\ntorchvision 0.16.0+cu118\n" + "log line\n" * 80 + "torch 2.2.0+cu121\ntorchvision 0.17.0+cu121\n",
]


@pytest.mark.parametrize("text", [t for alike in LOOK_ALIKES for t in as_pasted(alike)])
def test_look_alikes_raise_no_companion_finding(text: str, test_kb: KB) -> None:
    assert ID not in severities(text, test_kb), text
