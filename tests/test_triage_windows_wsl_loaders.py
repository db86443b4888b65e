"""Issue 26, the windows-wsl group: loader messages of two programs, as classes.

- cuDNN 8 on Windows loads its sub-libraries and zlibwapi.dll itself and says so in its own
  words: "Could not load library cudnn_cnn_infer64_8.dll. Error code 126" (the DLL or one it
  needs, cuDNN 8.3+'s zlibwapi.dll, not found) and "Could not locate zlibwapi.dll. Please make
  sure it is in your library path!": cuda-lib-not-found, naming zlibwapi.dll. Other error codes
  (127 a procedure not found, 1455 the paging file, 193 a 32-bit DLL) are not that.
- bitsandbytes before 0.43 opens the driver as plain libcuda.so ("CUDA SETUP: WARNING!
  libcuda.so not found!"): on WSL2 that name is only in /usr/lib/wsl/lib, which the loader cache
  does not index (wsl-libcuda-not-linked); elsewhere the row's note, no finding.

Every text is quoted from a public thread (doctor/kb/errors.yaml's sources) and read also as
pasting mangles it (tests/pasting.py)."""

from __future__ import annotations

import pytest

from fwdoctor.triage import triage
from tests.pasting import forms
from tests.triage_run import cli_findings as findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


def error_kinds(text: str) -> set[str]:
    facts, _ = triage(text)
    return {e["kind"] for e in (facts["report.errors"] if facts.known("report.errors") else [])}


# ------------------------------------------------------------------ cuDNN 8 on Windows
CUDNN_126 = [
    # Softcatala/whisper-ctranslate2#41 (the reporter: cuDNN needed zlib; installing it fixed it)
    "I get this error message:\n\nCould not load library cudnn_cnn_infer64_8.dll. Error code 126\n"
    "Please make sure cudnn_cnn_infer64_8.dll is in your library path!\n\n"
    "I double check my Windows 10 Environment Variables， and cudnn_cnn_infer64_8.dll directory is there.\n",
    # markgoodhead/dictate-wizard#2
    "Could not load library cudnn_ops_infer64_8.dll. Error code 126\nPlease make sure cudnn_ops_infer64_8.dll is in your library path!\n",
    # huckiyang/QuantumSpeech-QCNN#9 (TensorFlow 2.5 on Windows)
    "2021-12-12 23:48:46.254332: I tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded cuDNN version 8301\n"
    "Could not load library cudnn_cnn_infer64_8.dll. Error code 126\nPlease make sure cudnn_cnn_infer64_8.dll is in your library path!\n",
]
ZLIB_MISSING = [
    # PaddlePaddle/PaddleOCR#8400
    "-  ppocr WARNING: When args.layout is false, args.ocr is automatically set to false\n"
    "Could not locate zlibwapi.dll. Please make sure it is in your library path!\n",
    # AlexeyAB/darknet#8551
    "Could not locate zlibwapi.dll. Please make sure it is in your library path!\n\n"
    "CUDA-version: 11070 (11070), cuDNN: 8.4.1, GPU count: 1\n OpenCV version: 4.5.5\n",
    # xaviviro/refacer#35
    "用GPU的时候一直提示这个：Could not locate zlibwapi.dll. Please make sure it is in your library path! 然后就自己报错退出了\n",
]
# Other Windows error codes from the same loader: not a missing DLL.
CUDNN_OTHER_CODES = [
    # microsoft/onnxruntime#18973 (127: a procedure not found, another cuDNN's DLL)
    "Could not load library cudnn_cnn_infer64_8.dll. Error code 127 when using 1.16.3 CUDA\n",
    # PaddlePaddle/PaddleDetection#8265
    "推理的时候出现：Could not load library cudnn_cnn_infer64_8.dll. Error code 127\n",
    # lazydog28/mc_auto_boss#69 (1455: the paging file)
    "Could not load library cudnn_cnn_infer64_8.dll.Error code 1455\n",
    # lightvector/KataGo#828 (193: a 32-bit zlibwapi.dll)
    "Could not load library zlibwapi.dll. Error code 193. Please verify that the library is built correctly for your processor architecture (32-bit, 64-bit)\n",
]


@pytest.mark.parametrize("text", CUDNN_126)
def test_cudnn8_dll_error_code_126_is_a_dll_not_found_naming_zlibwapi(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        assert "cudnn-windows-dll-load-failed" in error_kinds(form), form
        got = findings(cli, tmp_path, form)
        assert got.get("cuda-lib-not-found", {}).get("severity") == "error", (form, got)
        assert "zlibwapi.dll" in got["cuda-lib-not-found"]["message"]


@pytest.mark.parametrize("text", ZLIB_MISSING)
def test_cudnn8_could_not_locate_zlibwapi_is_a_dll_not_found(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        assert "cudnn-windows-dll-not-located" in error_kinds(form), form
        got = findings(cli, tmp_path, form)
        assert got.get("cuda-lib-not-found", {}).get("severity") == "error", (form, got)
        assert "zlibwapi.dll" in got["cuda-lib-not-found"]["message"]


@pytest.mark.parametrize("text", CUDNN_OTHER_CODES)
def test_other_windows_error_codes_of_the_cudnn_loader_are_not_a_missing_dll(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        assert not error_kinds(form) & {"cudnn-windows-dll-load-failed", "cudnn-windows-dll-not-located"}, form
        assert "cuda-lib-not-found" not in findings(cli, tmp_path, form), form


# ------------------------------------------------------------------ bitsandbytes' plain libcuda.so
BNB_LINE = ("CUDA SETUP: WARNING! libcuda.so not found! Do you have a CUDA driver installed? "
            "If you are on a cluster, make sure you are on a CUDA machine!\n")
BNB_WSL = [
    # lxe/simple-llm-finetuner#13 (its title names WSL2)
    "# (WSL2) - No GPU / Cuda detected....\n\n"
    "===================================BUG REPORT===================================\n"
    "Welcome to bitsandbytes. For bug reports, please submit your error trace to: https://github.com/TimDettmers/bitsandbytes/issues\n"
    "================================================================================\n"
    + BNB_LINE +
    "CUDA SETUP: CUDA runtime path found: /home/user/anaconda3/envs/llama/lib/libcudart.so\n",
    # bitsandbytes-foundation/bitsandbytes#243 (title "[WSL2]")
    "# The following directories listed in your path were found to be non-existent [WSL2]\n\n"
    "CUDA_SETUP: WARNING! libcudart.so not found in any environmental path. Searching /usr/local/cuda/lib64...\n"
    + BNB_LINE,
]
BNB_NOT_WSL = [
    # bitsandbytes-foundation/bitsandbytes#322: native Windows (bitsandbytes < 0.43 had no Windows build)
    "bin D:\\venv_ooba5\\lib\\site-packages\\bitsandbytes\\libbitsandbytes_cpu.so\n"
    "CUDA_SETUP: WARNING! libcudart.so not found in any environmental path. Searching in backup paths...\n"
    "D:\\venv_ooba5\\lib\\site-packages\\bitsandbytes\\cuda_setup\\main.py:145: UserWarning: WARNING: The following directories "
    "listed in your path were found to be non-existent: {WindowsPath('/usr/local/cuda/lib64')}\n"
    + BNB_LINE,
    BNB_LINE,
]


@pytest.mark.parametrize("text", BNB_WSL)
def test_bitsandbytes_libcuda_not_found_on_wsl2_is_the_wsl_loader_path(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        assert "bnb-libcuda-not-found" in error_kinds(form), form
        got = findings(cli, tmp_path, form)
        assert "wsl-libcuda-not-linked" in got, (form, got)
        assert "error" not in {f["severity"] for f in got.values()}, (form, got)


@pytest.mark.parametrize("text", BNB_NOT_WSL)
def test_bitsandbytes_libcuda_not_found_elsewhere_raises_nothing(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        assert "bnb-libcuda-not-found" in error_kinds(form), form
        got = findings(cli, tmp_path, form)
        assert "wsl-libcuda-not-linked" not in got, (form, got)
        assert "error" not in {f["severity"] for f in got.values()}, (form, got)


def test_bitsandbytes_libcudart_warning_alone_is_not_the_driver_row():
    # bitsandbytes' runtime search ("libcudart.so not found in any environmental path") is another line
    text = "CUDA_SETUP: WARNING! libcudart.so not found in any environmental path. Searching in backup paths...\n"
    for form in [text, *forms(text)]:
        assert "bnb-libcuda-not-found" not in error_kinds(form), form
