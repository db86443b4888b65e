"""Issue 26, the windows-wsl group, classes beyond the field corpus's wording:

- the Windows error code before torch's "Error loading "...\\torch\\lib\\X.dll" or one of its
  dependencies": 1455 (the paging file is too small) and 127 (a procedure not found) are not the
  Visual C++ runtime that windows-msvc-runtime-missing names (126 and 1114 are);
- the Windows build as Windows prints it in its display language: cmd's banner ("Microsoft
  Windows [版本 10.0.19044.1586]", "[Versión ...]"), `wsl --version` ("Windows-Version:",
  "Version de Windows :", "Windows 版本:"), systeminfo ("OS 版本: 10.0.19045 暂缺 Build 19045")
  and winver ("(OS 内部版本 19044.7291)"), which wsl-gpu-unsupported compares with 19044.

Every text is quoted from a public thread or file (doctor/kb/errors.yaml's sources for the
error texts; the localized outputs from public READMEs, notes and issues) and read also as
pasting mangles it (tests/pasting.py)."""

from __future__ import annotations

import json

import pytest

from fwdoctor.triage import triage
from tests.pasting import forms

pytestmark = pytest.mark.usefixtures("use_test_kb")


def findings(cli, tmp_path, text: str) -> dict[str, str]:
    path = tmp_path / "report.md"
    path.write_bytes(text.encode("utf-8"))
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f["severity"] for f in doc["findings"]}


def error_kinds(text: str) -> set[str]:
    facts, _ = triage(text)
    return {e["kind"] for e in (facts["report.errors"] if facts.known("report.errors") else [])}


def windows_build(text: str) -> int | None:
    facts, _ = triage(text)
    return facts["platform.windows_build"]["build"] if facts.known("platform.windows_build") else None


# ------------------------------------------------------------------ WinError 1455 and 127
PAGING = [
    # WongKinYiu/yolov7#1036 (answer: enlarge the paging file)
    "OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
    "\"E:\\Yolov7\\yolov7training\\lib\\site-packages\\torch\\lib\\caffe2_detectron_ops_gpu.dll\" or one of its dependencies.\n",
    # thu-ml/tianshou#527 (pytest's "E" prefix)
    "E   OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
    "\"E:\\Anaconda3\\lib\\site-packages\\torch\\lib\\caffe2_detectron_ops_gpu.dll\" or one of its dependencies.\n",
    # yassouali/pytorch-segmentation#118 (Chinese Windows)
    "OSError: [WinError 1455] 页面文件太小，无法完成操作。 Error loading "
    "\"F:\\anaconda3\\envs\\pytorch\\lib\\site-packages\\torch\\lib\\caffe2_detectron_ops_gpu.dll\" or one of its dependencies.\n",
]
PROCEDURE = [
    # guoyww/AnimateDiff#374
    "OSError: [WinError 127] The specified procedure could not be found. Error loading "
    "\"C:\\Users\\Newton\\Documents\\aistuff\\AnimateDiff\\venv\\Lib\\site-packages\\torch\\lib\\torch_python.dll\" or one of its dependencies.\n",
    # microsoft/DirectML#184
    "OSError: [WinError 127] The specified procedure could not be found. Error loading "
    "\"C:\\ProgramData\\Anaconda3\\envs\\pytorch-directml-3.8\\lib\\site-packages\\torch\\lib\\jitbackend_test.dll\" or one of its dependencies.\n",
]


@pytest.mark.parametrize("text", PAGING)
def test_winerror_1455_is_the_paging_file_not_the_msvc_runtime(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        assert "windows-paging-file-too-small" in error_kinds(form), form
        got = findings(cli, tmp_path, form)
        assert "windows-msvc-runtime-missing" not in got, (form, got)
        # the commit limit, its own id since the second windows-wsl pass (tests/test_triage_windows_pagefile.py)
        assert got.get("windows-pagefile-too-small") == "error", (form, got)


@pytest.mark.parametrize("text", PROCEDURE)
def test_winerror_127_is_mixed_dlls_not_the_msvc_runtime(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        assert "windows-dll-procedure-not-found" in error_kinds(form), form
        got = findings(cli, tmp_path, form)
        assert "windows-msvc-runtime-missing" not in got, (form, got)


@pytest.mark.parametrize(
    "text",
    [
        # Acly/krita-ai-diffusion#1017: WinError 126 on c10.dll, fixed by the VC redistributable
        "Error during server startup: OSError: [WinError 126] The specified module could not be found. Error loading "
        "\"C:\\Users\\Beep\\AppData\\Roaming\\krita\\ai_diffusion\\server\\python\\lib\\site-packages\\torch\\lib\\c10.dll\" or one of its dependencies. [1]\n",
        # nagadomi/nunif#701: WinError 1114 on c10.dll
        "[WinError 1114] A dynamic link library (DLL) initialization routine failed. Error loading \"...\\c10.dll\" or one of its dependencies.\n",
        # pytorch/pytorch#129568 (torch 2.4.0's fbgemm.dll without libomp140)
        "OSError: [WinError 126] The specified module could not be found. Error loading \"\\.venv\\Lib\\site-packages\\torch\\lib\\fbgemm.dll\" or one of its dependencies.\n",
    ],
)
def test_winerror_126_and_1114_still_name_the_msvc_runtime(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        assert findings(cli, tmp_path, form).get("windows-msvc-runtime-missing") == "error", form


# ------------------------------------------------------------------ localized Windows builds
@pytest.mark.parametrize(
    ("text", "build"),
    [
        # cmd's banner in Chinese and Spanish (public READMEs and notes)
        ("Microsoft Windows [版本 10.0.19044.1586]\n(c) Microsoft Corporation。保留所有权利。\n", 19044),
        ("Microsoft Windows [版本 10.0.18363.418]\n(c) 2019 Microsoft Corporation。保留所有权利。\n", 18363),
        ("- Microsoft Windows [Versión 10.0.19045.3803]\n", 19045),
        ("Microsoft Windows [Versión 10.0.19042.572]\n(c) 2020 Microsoft Corporation. Todos los derechos reservados.\n", 19042),
        # `wsl --version` in German, French and Chinese
        ("PS C:\\Users\\Sebastian> wsl --version\nWSL-Version: 2.2.4.0\nKernelversion: 5.15.153.1-2\nWSLg-Version: 1.0.61\n"
         "MSRDC-Version: 1.2.5326\nDirect3D-Version: 1.611.1-81528511\nDXCore-Version: 10.0.26091.1-240325-1447.ge-release\n"
         "Windows-Version: 10.0.22631.4169\n", 22631),
        ("Version WSLg : 1.0.65\nVersion MSRDC : 1.2.5716\nVersion direct3D : 1.611.1-81528511\n"
         "Version de DXCore : 10.0.26100.1-240331-1435.ge-release\nVersion de Windows : 10.0.19045.5796\n", 19045),
        ("# DXCore 版本: 10.0.26100.1-240331-1435.ge-release\n# Windows 版本: 10.0.22631.4037\n", 22631),
        # systeminfo in Chinese and German
        ("OS 名称:          Microsoft Windows 10 专业版\nOS 版本:          10.0.19043 暂缺 Build 19043\nOS 制造商:        Microsoft Corporation\n", 19043),
        ("Betriebssystemname:                            Microsoft Windows 10 Pro\n"
         "Betriebssystemversion:                         10.0.19042 Nicht zutreffend Build 19042\n", 19042),
        # winver in Traditional Chinese (NVIDIA/nvidia-docker#1496)
        ("winver：版本2004（操作系統內部版本19041.985）\n", 19041),
    ],
)
def test_a_localized_windows_build_is_read(text, build):
    for form in [text, *forms(text)]:
        assert windows_build(form) == build, form


@pytest.mark.parametrize(
    "text",
    [
        "-- Selecting Windows SDK version 10.0.22621.0 to target Windows 10.0.19045.\n",
        "WindowsSDKVersion=10.0.19041.0\\\n",
        "DXCore version: 10.0.25131.1002-220531-1700.rs-onecore-base2-hyp\n",
        "DXCore-Version: 10.0.19041.1-240325-1447.ge-release\n",
        "Microsoft Windows [版本 6.1.7601]\n",
    ],
)
def test_windows_sdk_and_dxcore_versions_are_not_the_windows_build(text):
    assert windows_build(text) is None


def test_wsl2_on_a_chinese_windows_10_2004_has_no_gpu(cli, tmp_path):
    # NVIDIA/nvidia-docker#1496: WSL2 on Windows 10 2004 (19041), before GPU support reached
    # Windows 10 (21H2); winver and uname pasted in Traditional Chinese
    text = ("winver：版本2004（操作系統內部版本19041.985）別名：Linux HLAI005021 5.4.72-microsoft-standard-WSL2 "
            "[＃1](https://github.com/NVIDIA/nvidia-docker/issues/1)SMP週三10月28日23:40:43 UTC 2020 x86_64 x86_64 x86_64 GNU / Linux\n")
    for form in [text, *forms(text)]:
        assert findings(cli, tmp_path, form).get("wsl-gpu-unsupported") == "error", form


def test_wsl2_with_a_chinese_systeminfo_before_21h2_has_no_gpu_and_after_it_does(cli, tmp_path):
    old = ("$ uname -r\n5.10.16.3-microsoft-standard-WSL2\n\nC:\\> systeminfo\n"
           "OS 名称:          Microsoft Windows 10 专业版\nOS 版本:          10.0.19043 暂缺 Build 19043\n")
    new = old.replace("19043", "19045")
    for form in [old, *forms(old)]:
        assert findings(cli, tmp_path, form).get("wsl-gpu-unsupported") == "error", form
    for form in [new, *forms(new)]:
        assert "wsl-gpu-unsupported" not in findings(cli, tmp_path, form), form


# ------------------------------------------------------------------ TensorFlow's DLLs on native Windows
@pytest.mark.parametrize(
    "text",
    [
        # tensorflow/tensorflow#57103 (Windows 10, tf 2.9.1)
        "2022-08-11 14:21:29.345331: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
        "'cudart64_110.dll'; dlerror: cudart64_110.dll not found\n",
        # cloudhan/jax-windows-builder#16 (jaxlib's bundled XLA on Windows 11)
        "2022-09-18 11:52:21.036734: W external/org_tensorflow/tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load "
        "dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found\n",
    ],
)
def test_a_windows_dll_not_found_gets_windows_commands_not_ldconfig(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        path = tmp_path / "report.md"
        path.write_bytes(form.encode("utf-8"))
        doc = json.loads(cli("triage", "--json", str(path)).output)
        (hit,) = [f for f in doc["findings"] if f["id"] == "cuda-lib-not-found"]
        fix = json.dumps(hit.get("fix"))
        assert "where cudart64_110.dll" in fix and "ldconfig" not in fix and "LD_LIBRARY_PATH" not in fix, fix


def test_a_linux_library_not_found_keeps_ldconfig(cli, tmp_path):
    # Kaggle/docker-python#1164
    text = ("2022-05-22 03:31:41.057907: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
            "'libcusolver.so.11'; dlerror: libcusolver.so.11: cannot open shared object file: No such file or directory\n")
    path = tmp_path / "report.md"
    path.write_bytes(text.encode("utf-8"))
    doc = json.loads(cli("triage", "--json", str(path)).output)
    (hit,) = [f for f in doc["findings"] if f["id"] == "cuda-lib-not-found"]
    assert "ldconfig -p | grep libcusolver" in json.dumps(hit.get("fix"))
