"""Issue 26, windows-wsl (second pass): two loader texts triage did not read.

- CTranslate2's own "Library cublas64_12.dll is not found or cannot be loaded" (faster-whisper,
  WhisperX, whisper-ctranslate2; on Linux "libcublas.so.11"): the cuBLAS of the CUDA major its
  build was made for is missing, cuda-lib-not-found (doctor/kb/errors.yaml's
  ctranslate2-library-not-found).
- torch's "[WinError 126] ... Error loading \\"...\\\\fbgemm.dll\\" or one of its dependencies"
  as a notebook's error JSON (VS Code's Jupyter "message") escapes it: still
  windows-msvc-runtime-missing.

Every text is quoted from a public thread and read also as pasting mangles it (tests/pasting.py)."""

from __future__ import annotations

import json

import pytest

from tests.pasting import forms

pytestmark = pytest.mark.usefixtures("use_test_kb")


def findings(cli, tmp_path, text: str) -> dict[str, dict]:
    path = tmp_path / "report.md"
    path.write_bytes(text.encode("utf-8"))
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f for f in doc["findings"]}


CTRANSLATE2 = [
    # OpenNMT/CTranslate2#1630 (CTranslate2 4.0.0 under WhisperX on Windows)
    ("RuntimeError: Library cublas64_12.dll is not found or cannot be loaded\n", "cublas64_12.dll"),
    # dmMaze/BallonsTranslator#404 (the maintainer: ctranslate2 < 4.0.0, or CUDA 12.x)
    ("    tokenized_translated = self.translator.translate_batch(tokenized_text)\n"
     "RuntimeError: Library cublas64_12.dll is not found or cannot be loaded\n", "cublas64_12.dll"),
    # Softcatala/whisper-ctranslate2#74 (Colab; fixed by apt-get install libcublas11)
    ("    return self.model.encode(features, to_cpu=to_cpu)\n"
     "RuntimeError: Library libcublas.so.11 is not found or cannot be loaded\n", "libcublas.so.11"),
    # Purfview/whisper-standalone-win#169 (a standalone build on Windows 11)
    ("  File \"faster_whisper\\transcribe.py\", line 814, in encode\n"
     "RuntimeError: Library cublas64_11.dll is not found or cannot be loaded\n", "cublas64_11.dll"),
    # SubtitleEdit/subtitleedit#6914 (Subtitle Edit's own exception box)
    ("Exception Message: Library cublas64_12.dll is not found or cannot be loaded\n", "cublas64_12.dll"),
]


@pytest.mark.parametrize("text,library", CTRANSLATE2)
def test_ctranslate2_library_not_found_is_a_missing_cuda_library(cli, tmp_path, text, library):
    for form in [text, *forms(text)]:
        got = findings(cli, tmp_path, form)
        assert got.get("cuda-lib-not-found", {}).get("severity") == "error", (form, list(got))
        finding = got["cuda-lib-not-found"]
        assert library in finding["message"], finding["message"]
        assert "CTranslate2 4.x" in json.dumps(finding)


@pytest.mark.parametrize(
    "text",
    [
        # the message without a library name, or a library that is no file name, is not this row's
        "RuntimeError: Library is not found or cannot be loaded\n",
        "Error: Library $(reboot).dll is not found or cannot be loaded\n",
        # another program's "not found" about a Python library
        "ModuleNotFoundError: No module named 'ctranslate2'\n",
    ],
)
def test_other_not_found_texts_are_not_ctranslate2s(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        assert "cuda-lib-not-found" not in findings(cli, tmp_path, form), form


# pytorch/pytorch#131662: torch 2.4.0's fbgemm.dll error as VS Code's notebook JSON shows it
NOTEBOOK_JSON = (
    "{\"name\": \"OSError\",\n"
    "\t\"message\": \"[WinError 126] The specified module could not be found. Error loading "
    "\\\"c:\\\\Users\\\\Noor\\\\anaconda3\\\\envs\\\\DL\\\\Lib\\\\site-packages\\\\torch\\\\lib\\\\fbgemm.dll\\\" or one of its dependencies.\",\n"
    "\t\"stack\": \"---------------------------------------------------------------------------\n"
)


def test_winerror_126_in_a_notebooks_error_json_still_names_the_msvc_runtime(cli, tmp_path):
    for form in [NOTEBOOK_JSON, *forms(NOTEBOOK_JSON)]:
        got = findings(cli, tmp_path, form)
        finding = got.get("windows-msvc-runtime-missing")
        assert finding and finding["severity"] == "error", (form, list(got))
        assert "fbgemm.dll" in finding["message"]


def test_winerror_1455_in_a_notebooks_error_json_is_the_paging_file(cli, tmp_path):
    text = NOTEBOOK_JSON.replace("[WinError 126] The specified module could not be found.",
                                 "[WinError 1455] The paging file is too small for this operation to complete.")
    for form in [text, *forms(text)]:
        got = findings(cli, tmp_path, form)
        assert "windows-msvc-runtime-missing" not in got, (form, list(got))
        assert got.get("windows-pagefile-too-small", {}).get("severity") == "error", (form, list(got))


# TensorFlow's own Visual C++ runtime check, as its failing frame shows it in a traceback
PRELOAD_CHECK = [
    # llSourcell/tensorflow_chatbot#71 (TensorFlow 1.x, Python 3.6)
    "Traceback (most recent call last):\n"
    "  File \"C:\\Users\\jun\\AppData\\Local\\Programs\\Python\\Python36\\lib\\site-packages\\tensorflow\\python\\platform\\self_check.py\", line 47, in preload_check\n"
    "    ctypes.WinDLL(build_info.msvcp_dll_name)\n"
    "  File \"C:\\Users\\jun\\AppData\\Local\\Programs\\Python\\Python36\\lib\\ctypes\\__init__.py\", line 348, in __init__\n"
    "    self._handle = _dlopen(self._name, mode)\n"
    "OSError: [WinError 126] The specified module could not be found\n",
    # tensorflow/tensorflow#35036 (TensorFlow 2.1.0rc1; a development-part report of the field corpus)
    "  File \"C:\\Users\\kbuilder\\AppData\\Local\\Programs\\Python\\Python37\\lib\\site-packages\\tensorflow_core\\python\\platform\\self_check.py\", line 47, in preload_check\n"
    "    ctypes.WinDLL(build_info.msvcp_dll_name)\n",
]


@pytest.mark.parametrize("text", PRELOAD_CHECK)
def test_tensorflows_failing_preload_check_frame_names_the_msvc_runtime(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        got = findings(cli, tmp_path, form)
        assert got.get("windows-msvc-runtime-missing", {}).get("severity") == "error", (form, list(got))


def test_the_self_checks_source_or_another_windll_call_is_not_a_failure(cli, tmp_path):
    for text in ("    if hasattr(build_info, \"msvcp_dll_name\"):\n",
                 "    ctypes.WinDLL(build_info.cudart_dll_name)\n",
                 "    self._handle = _dlopen(self._name, mode)\nOSError: [WinError 126] The specified module could not be found\n"):
        for form in [text, *forms(text)]:
            assert "windows-msvc-runtime-missing" not in findings(cli, tmp_path, form), form
