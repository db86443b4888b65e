"""Issue 26, windows-wsl (second pass): Windows error 1455 (ERROR_COMMITMENT_LIMIT, "the paging
file is too small") is windows-pagefile-too-small, an error, in the three wordings programs show
it: torch's "[WinError 1455] ... Error loading "...\\torch\\lib\\X.dll"", Python's older
"DLL load failed[ while importing M]: The paging file is too small" (TensorFlow) and Rust's
"(os error 1455)" from safetensors mapping a model. The code is read, not the words: Windows
prints them in its display language. Not the Visual C++ runtime (126, 1114), not DLLs of two
builds mixed (127), not a "DLL load failed" with another cause.

Every text is quoted from a public thread (doctor/kb/errors.yaml's S-ERR-* sources, or the
thread named beside it) and read also as pasting mangles it (tests/pasting.py)."""

from __future__ import annotations

import json

import pytest

from fwdoctor.triage import triage
from tests.pasting import forms

pytestmark = pytest.mark.usefixtures("use_test_kb")


def findings(cli, tmp_path, text: str) -> dict[str, dict]:
    path = tmp_path / "report.md"
    path.write_bytes(text.encode("utf-8"))
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f for f in doc["findings"]}


def error_kinds(text: str) -> set[str]:
    facts, _ = triage(text)
    return {e["kind"] for e in (facts["report.errors"] if facts.known("report.errors") else [])}


PAGEFILE = [
    # oatsu-gh/enunu_training_kit#8 (inline code; fixed by the paging-file answer)
    "`OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
    "\"C:\\Users\\Nathan\\Desktop\\enunu_training_kit-1.0.0\\python-3.8.10-embed-amd64\\lib\\site-packages\\torch\\lib\\cudnn_adv_infer64_8.dll\" "
    "or one of its dependencies.     \n",
    # JingyunLiang/SwinIR#78 (num_workers too high)
    "OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
    "\"D:\\Anaconda\\envs\\swin-train\\lib\\site-packages\\torch\\lib\\shm.dll\" or one of its dependencies.\n",
    # ultralytics/yolov3#1643
    "[WinError 1455] The paging file is too small for this operation to complete. Error loading "
    "\"C:\\ProgramData\\Anaconda3\\lib\\site-packages\\torch\\lib\\caffe2_detectron_ops_gpu.dll\" or one of its dependencies.\n",
    # YYuX-1145/Bert-VITS2-Integration-package#5 (Chinese Windows; the answer: lower num_workers)
    "**OSError: [WinError 1455] 页面文件太小，无法完成操作。 Error loading "
    "\"D:\\Bert-VITS2-Integration-Package\\venv\\lib\\site-packages\\torch\\lib\\cublas64_11.dll\" or one of its dependencies.**\n",
    # tensorflow/models#9784 (TensorFlow 1.x)
    "ImportError: DLL load failed: The paging file is too small for this operation to complete.\n",
    # tensorflow/tensorflow#87226 (TensorFlow 2.12, Python 3.9)
    "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: The paging file is too small for this operation to complete.\n",
    # pytorch/pytorch#31465 (Chinese Windows, DataLoader num_workers=4)
    "And I see there's a Error message of \"ImportError: DLL load failed: 页面文件太小，无法完成操作。\", which is in Chinese, because I am student from China.\n",
    # Comfy-Org/ComfyUI#7550 (safetensors' safe_open)
    "OSError: The paging file is too small for this operation to complete. (os error 1455)\n",
    # Comfy-Org/ComfyUI#6606 (Chinese Windows)
    "OSError: 页面文件太小，无法完成操作。 (os error 1455)\n",
    # Comfy-Org/ComfyUI#11009 (Spanish Windows, ComfyUI's own timestamps)
    "2025-11-28T21:22:46.272540 - !!! Exception during processing !!! El archivo de paginación es demasiado pequeño para completar la operación. (os error 1455)\n",
]

NOT_PAGEFILE = [
    # Acly/krita-ai-diffusion#1017: 126, the Visual C++ runtime
    "Error during server startup: OSError: [WinError 126] The specified module could not be found. Error loading "
    "\"C:\\Users\\Beep\\AppData\\Roaming\\krita\\ai_diffusion\\server\\python\\lib\\site-packages\\torch\\lib\\c10.dll\" or one of its dependencies. [1]\n",
    # guoyww/AnimateDiff#374: 127, DLLs of two builds
    "OSError: [WinError 127] The specified procedure could not be found. Error loading "
    "\"C:\\Users\\Newton\\Documents\\aistuff\\AnimateDiff\\venv\\Lib\\site-packages\\torch\\lib\\torch_python.dll\" or one of its dependencies.\n",
    # TensorFlow's own "DLL load failed" for a missing DLL (tensorflow/tensorflow#36111's wording)
    "ImportError: DLL load failed: The specified module could not be found.\n",
    # prose about the paging file without the error, another code that starts with 1455, a Rust error of another code
    "I have 16 GB of RAM, my paging file is 32 GBs, could it be that my GPU only has 4 GB of VRAM?\n",
    "OSError: [WinError 14550] something else entirely\n",
    "Error: The system cannot find the file specified. (os error 2)\n",
]


@pytest.mark.parametrize("text", PAGEFILE)
def test_error_1455_in_every_wording_is_the_paging_file_as_an_error(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        got = findings(cli, tmp_path, form)
        assert got.get("windows-pagefile-too-small", {}).get("severity") == "error", (form, list(got))
        assert "windows-msvc-runtime-missing" not in got, (form, list(got))
        assert "cuda-lib-not-found" not in got, (form, list(got))
        finding = got["windows-pagefile-too-small"]
        assert "1455" in finding["message"]


@pytest.mark.parametrize("text", NOT_PAGEFILE)
def test_other_loader_errors_and_talk_of_the_paging_file_are_not_error_1455(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        assert not {"windows-paging-file-too-small", "windows-dll-load-paging-file", "windows-os-error-1455"} & error_kinds(form), form
        assert "windows-pagefile-too-small" not in findings(cli, tmp_path, form), form


def test_the_fix_names_the_paging_file_and_num_workers_not_a_reinstall(cli, tmp_path):
    got = findings(cli, tmp_path, PAGEFILE[1])["windows-pagefile-too-small"]
    text = json.dumps(got)
    assert "num_workers" in text and "paging file" in text
    assert "pip install" not in text and "vc_redist" not in text
