"""Issue 26, the windows-wsl group: Windows and WSL environment text (fwdoctor.triage.windows,
fwdoctor.triage.gpu_intent) and the findings it settles (fwdoctor.rules.windows):
wsl-gpu-unsupported, wsl-linux-driver-installed, torch-cpu-build-on-gpu-host for PyPI's Windows
torch wheel, framework-cpu-build-on-gpu-host for tensorflow-gpu asked on native Windows.
Texts pasted as people paste them: PowerShell and cmd prompts, fences, "> " quotes, CRLF."""

from __future__ import annotations

import json

import pytest

from fwdoctor.triage import triage

pytestmark = pytest.mark.usefixtures("use_test_kb")


def facts_of(text: str) -> dict:
    facts, _ = triage(text)
    return {key: facts[key] for key in facts if facts.known(key)}


def findings(cli, tmp_path, text: str) -> dict[str, str]:
    path = tmp_path / "report.md"
    path.write_bytes(text.encode("utf-8"))
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f["severity"] for f in doc["findings"]}


@pytest.mark.parametrize(
    ("text", "build"),
    [
        ("C:\\Users\\me> ver\r\n\r\nMicrosoft Windows [Version 10.0.17763.292]\r\n", 17763),
        ("```\nOS Version:                10.0.19041 N/A Build 19041\n```\n", 19041),
        ("PS C:\\> wsl --version\nWSL version: 2.0.9.0\nWindows version: 10.0.22631.2861\n", 22631),
        ("> ### Microsoft Windows [Version 10.0.19045.3803]\n", 19045),
    ],
)
def test_windows_build_read(text, build):
    assert facts_of(text)["platform.windows_build"]["build"] == build


def test_wsl_version_from_kernel_and_wsl_list():
    assert facts_of("$ uname -r\n4.4.0-17763-Microsoft\n")["platform.wsl"]["version"] == 1
    assert facts_of("$ uname -r\n4.4.0-17763-Microsoft\n")["platform.windows_build"]["build"] == 17763
    assert facts_of("$ uname -r\n5.15.90.1-microsoft-standard-WSL2\n")["platform.wsl"]["version"] == 2
    listed = "PS C:\\Users\\me> wsl -l -v\r\n  NAME      STATE           VERSION\r\n* Ubuntu    Running         1\r\n  Debian    Stopped         2\r\n"
    assert facts_of(listed)["platform.wsl"]["version"] == 1


def test_wsl1_and_old_build_raise_wsl_gpu_unsupported(cli, tmp_path):
    # microsoft/WSL#3847 (windows-wsl/wsl1-build17763-no-gpu.md, development part)
    old = ("### Microsoft Windows [Version 10.0.17763.292]\n\n#### Ubuntu app WSL:\nand still when using nvidia-smi I get :\n```\n"
           "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n```\n")
    assert findings(cli, tmp_path, old).get("wsl-gpu-unsupported") == "error"
    assert findings(cli, tmp_path, "$ uname -a\nLinux box 4.4.0-19041-Microsoft #488-Microsoft x86_64 GNU/Linux\n").get("wsl-gpu-unsupported") == "error"


def test_new_build_or_no_wsl_is_not_wsl_gpu_unsupported(cli, tmp_path):
    assert "wsl-gpu-unsupported" not in findings(cli, tmp_path, "Microsoft Windows [Version 10.0.22631.2861]\nrunning Ubuntu in WSL2\n")
    # native Windows on an old build: WSL is not involved
    assert "wsl-gpu-unsupported" not in findings(cli, tmp_path, "Microsoft Windows [Version 10.0.17763.292]\npython -c \"import torch\"\n")


@pytest.mark.parametrize(
    "text",
    [
        # microsoft/WSL#5265 (windows-wsl/wsl2-preview-may2020-linux-driver-440-no-gpu.md, development part)
        "I just installed Windows Preview and WSL 2 and I did\n\n```\nsudo apt install nvidia-driver-440\nsudo apt install nvidia-utils-440\n```\n",
        # microsoft/WSL#12272 (windows-wsl/wsl-linux-gpu-driver-installed-inside-wsl.md, development part)
        "But I omitted the notice on CUDA guide page for wsl and installed all GPU driver, cudatoolkit, and cudnn in wsl too.\n",
        "$ uname -r\n5.15.153.1-microsoft-standard-WSL2\n$ dpkg -l | grep nvidia\nii  libnvidia-compute-535:amd64  535.183.01-0ubuntu1  amd64  NVIDIA libcompute package\n",
    ],
)
def test_linux_driver_inside_wsl(cli, tmp_path, text):
    assert findings(cli, tmp_path, text).get("wsl-linux-driver-installed") == "error"


def test_linux_driver_on_a_linux_host_is_fine(cli, tmp_path):
    text = "$ uname -r\n6.8.0-45-generic\n$ dpkg -l | grep nvidia\nii  libnvidia-compute-535:amd64  535.183.01-0ubuntu1  amd64  NVIDIA libcompute package\n"
    assert "wsl-linux-driver-installed" not in findings(cli, tmp_path, text)
    # WSL's own libcuda is not a Linux driver's
    assert "wsl.linux_driver" not in facts_of("WSL2\n-r-xr-xr-x 1 root root 1 Jun 24 /usr/lib/wsl/lib/libcuda.so.1.1\n")


def test_windows_pypi_torch_wheel_is_cpu():
    # pytorch/pytorch#52662 (windows-wsl/torch171-windows-pip-cu102-gets-cpu-wheel.md, development part)
    facts = facts_of("> python -m pip install torch===1.7.1 -f https://download.pytorch.org/whl/torch_stable.html\r\n"
                     "  Downloading torch-1.7.1-cp38-cp38-win_amd64.whl (184.0 MB)\r\n")
    assert facts["torch.version"] == "1.7.1" and facts["torch.cuda"] is None
    assert facts_of("  Downloading torch-2.1.0+cu118-cp311-cp311-win_amd64.whl (2722.7 MB)\n")["torch.cuda"] == "11.8"
    # download.pytorch.org's cu102 folder held untagged CUDA wheels: not settled
    assert "torch.cuda" not in facts_of("  Downloading https://download.pytorch.org/whl/cu102/torch-1.8.0-cp38-cp38-win_amd64.whl\n")
    # a Linux wheel without a tag is PyPI's CUDA build: not read here
    assert "torch.cuda" not in facts_of("  Downloading torch-2.1.0-cp311-cp311-manylinux1_x86_64.whl (670.2 MB)\n")


def test_windows_cpu_torch_with_cuda_asked(cli, tmp_path):
    text = ("```\n> python -m pip install torch===1.7.1 -f https://download.pytorch.org/whl/torch_stable.html --no-cache\n"
            "  Downloading torch-1.7.1-cp38-cp38-win_amd64.whl (184.0 MB)\nSuccessfully installed torch-1.7.1\n```\n"
            ">>> torch.cuda.is_available()\nFalse\n")
    assert findings(cli, tmp_path, text).get("torch-cpu-build-on-gpu-host") == "warning"
    assert "torch-cpu-build-on-gpu-host" not in findings(cli, tmp_path, text.split(">>>")[0])  # no GPU meant


def test_tensorflow_gpu_asked_on_native_windows(cli, tmp_path):
    # tensorflow/tensorflow#60241 (windows-wsl/tf212-win11-tensorflow-gpu-212-not-available.md, development part)
    text = "### Tensorflow Version\n\ntf2.12.0\n\n### OS Platform and Distribution\n\nWin11\n\n### Current Behaviour?\n\n```shell\nNo version 2.12.0 of the tensorflow-gpu was found.\n```\n"
    assert findings(cli, tmp_path, text).get("framework-cpu-build-on-gpu-host") == "warning"


@pytest.mark.parametrize(
    ("text", "build"),
    [
        # microsoft/WSL2-Linux-Kernel#126 (windows-wsl/b25-wsl2-kernel-win10-2004-19041-no-gpu-compute.md, development part)
        ("Since the NVIDIA GPU integration for WSL is now available and build 19041 (Windows 10 2004) is listed as a minimum requirement, I have attempted to install WSL 2\n", 19041),
        # pytorch/pytorch#39734, quoted and with CRLF
        ("> On Windows 10 2004, `import torch` will result in a FileNotFoundError.\r\n", 19041),
        # yuk7/ArchWSL#248's issue form
        (" - Windows build number: [10.0.22000.194] (Type `ver` at a Command Prompt)\r\n", 22000),
        # tensorflow/tensorflow#58729: winver's words, a full-width colon
        ("Edition: Windows 11 Home ; Version: 22H2; OS build：22621.819; Experience: Windows Feature Experience Pack\n", 22621),
        ("Version 21H2 (OS Build 19044.1288)\n", 19044),
        # an old release beside the one upgraded to: the newer is kept
        ("I upgraded from Windows 10 1909 to 21H2 and now WSL2 sees the GPU\n", 19044),
    ],
)
def test_windows_release_or_build_in_prose_is_read(text, build):
    assert facts_of(text)["platform.windows_build"]["build"] == build


@pytest.mark.parametrize("text", ["Docker version 20.10.6, build 370c289\n", "Build cuda_12.5.r12.5/compiler.34177558_0\n",
                                  "win10 x64\n", "Windows 10 with CUDA 11.8 1903 MiB free\n"])
def test_no_windows_build_in_other_numbers(text):
    assert "platform.windows_build" not in facts_of(text)


def test_windows_release_in_prose_judges_wsl(cli, tmp_path):
    # microsoft/WSL2-Linux-Kernel#126: Windows 10 2004 (build 19041) has no GPU compute in WSL 2
    text = ("Since the NVIDIA GPU integration for WSL is now available and build 19041 (Windows 10 2004) is listed as a minimum requirement, "
            "I have attempted to install WSL 2 by following instructions available [here](https://docs.microsoft.com/en-us/windows/wsl/install-win10).\n")
    assert findings(cli, tmp_path, text).get("wsl-gpu-unsupported") == "error"
    # `ver` outranks a sentence; and native Windows 10 2004 without WSL is not judged (pytorch/pytorch#39734)
    assert "wsl-gpu-unsupported" not in findings(cli, tmp_path, "Microsoft Windows [Version 10.0.22631.2861]\n" + text)
    assert "wsl-gpu-unsupported" not in findings(cli, tmp_path, "On Windows 10 2004, `import torch` will result in a FileNotFoundError.\n")


def test_cudarc_cannot_find_libcuda_on_wsl2(cli, tmp_path):
    # cudarc's panic (tracel-ai/burn#2209), in a report from WSL2 (chelsea0x3b/cudarc#296: adding
    # /usr/lib/wsl/lib to LD_LIBRARY_PATH fixes it)
    panic = ("thread 'main' panicked at /home/mbuehler/.cargo/registry/src/index.crates.io-6f17d22bba15001f/cudarc-0.11.5/src/driver/sys/mod.rs:61:9:\r\n"
             "Unable to find cuda lib under the names [\"cuda\", \"nvcuda\"]. Please open GitHub issue.\r\n")
    assert findings(cli, tmp_path, "I was running mistral.rs on a WSL machine when I ran into this error:\n```\n" + panic + "```\n").get("wsl-libcuda-not-linked") == "warning"
    # on a Linux host nothing says why: no finding
    assert "wsl-libcuda-not-linked" not in findings(cli, tmp_path, "(base) ichigo@ichigo:~$ cargo run\n" + panic)
    # its nvrtc twin on native Windows is cudarc's own list of DLL names (chelsea0x3b/cudarc#246): no error
    nvrtc = ("PS C:\\Users\\Brandon\\Desktop\\cuda_fun> cargo run\n"
             "Unable to find nvrtc lib under the names [\"nvrtc\", \"nvrtc64\", \"nvrtc64_12\", \"nvrtc64_125\", \"nvrtc64_125_0\", \"nvrtc64_120_5\", \"nvrtc64_10\"]. Please open GitHub issue.\n")
    assert "error" not in findings(cli, tmp_path, nvrtc).values()


@pytest.mark.parametrize(
    "text",
    [
        # kohya-ss/sd-scripts#1597 (windows-wsl/kohya-win11-torch24-fbgemm-libomp140-missing.md, development part):
        # a German Windows, the message wrapped by the logger, CRLF
        ("PS P:\\AI\\kohya_ss> .\\gui.bat\r\n02:54:18-197331 ERROR    Could not load torch: [WinError 126] Das angegebene Modul wurde nicht gefunden. Error loading\r\n"
         "                         \"P:\\AI\\kohya_ss\\venv\\lib\\site-packages\\torch\\lib\\fbgemm.dll\" or one of its dependencies.\r\n"),
        # Acly/krita-ai-diffusion#1017 (development part)
        ("Error during server startup: OSError: [WinError 126] The specified module could not be found. Error loading "
         "\"C:\\Users\\Beep\\AppData\\Roaming\\krita\\ai_diffusion\\server\\python\\lib\\site-packages\\torch\\lib\\c10.dll\" or one of its dependencies. [1]\n"),
        # pytorch/pytorch#39734 (development part), Python 3.8's wording in a markdown quote
        "> Error message:\n> `FileNotFoundError: Could not find module '...\\c10.dll' (or one of its dependencies)`\n",
        # torch's own warning (AUTOMATIC1111/stable-diffusion-webui#11302) and TensorFlow's self-check (tensorflow/tensorflow#38262)
        "Microsoft Visual C++ Redistributable is not installed, this may lead to the DLL load failure.\n\tIt can be downloaded at https://aka.ms/vs/16/release/vc_redist.x64.exe\n",
        ("ImportError: Could not find the DLL(s) 'msvcp140.dll or msvcp140_1.dll'. TensorFlow requires that these DLLs be installed in a directory that is "
         "named in your %PATH% environment variable. You may install these DLLs by downloading \"Microsoft C++ Redistributable for Visual Studio 2015, 2017 and 2019\"\n"),
    ],
)
def test_windows_msvc_runtime_missing(cli, tmp_path, text):
    assert findings(cli, tmp_path, text).get("windows-msvc-runtime-missing") == "error"


def test_a_cuda_dll_that_fails_to_load_is_not_the_msvc_runtime(cli, tmp_path):
    # AUTOMATIC1111/stable-diffusion-webui#10829: torch's caffe2_nvrtc.dll needs the driver's nvcuda.dll and CUDA's nvrtc
    text = ("OSError: [WinError 126] The specified module could not be found. Error loading "
            "\"C:\\seait.v0.1.4\\seait.v0.1.4\\stable-diffusion-webui\\venv\\lib\\site-packages\\torch\\lib\\caffe2_nvrtc.dll\" or one of its dependencies.\n")
    assert "windows-msvc-runtime-missing" not in findings(cli, tmp_path, text)


def test_windows_nvidia_smi_pasted_indented_lists_its_gpus():
    # microsoft/WSL#9134: Windows' nvidia-smi (TCC/WDDM column, driver 517.48) pasted two blanks in
    text = ("```\n  Wed Nov  9 21:31:58 2022\n"
            "  +-----------------------------------------------------------------------------+\n"
            "  | NVIDIA-SMI 517.48       Driver Version: 517.48       CUDA Version: 11.7     |\n"
            "  |-------------------------------+----------------------+----------------------+\n"
            "  | GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
            "  | Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
            "  |===============================+======================+======================|\n"
            "  |   0  NVIDIA GeForce ... WDDM  | 00000000:0A:00.0  On |                  N/A |\n"
            "  |  0%   31C    P8    16W / 250W |    576MiB / 11264MiB |      0%      Default |\n"
            "  +-------------------------------+----------------------+----------------------+\n"
            "  |   1  NVIDIA GeForce ... WDDM  | 00000000:43:00.0  On |                  N/A |\n"
            "  |  0%   29C    P8    17W / 250W |   2152MiB / 11264MiB |      0%      Default |\n```\n")
    facts = facts_of(text)
    assert facts["driver.version"] == "517.48"
    assert [g["bus_id"] for g in facts["gpus.list"]] == ["00000000:0A:00.0", "00000000:43:00.0"]
