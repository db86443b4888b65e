"""Issue 26, the windows-wsl group: WSL text that states no GPU access (wsl-gpu-unsupported:
nvidia-container-cli's "dxcore initialization failed" in a report from WSL, "WSL environment
detected but no adapters were found") and WSL2's libcuda off the loader path
(wsl-libcuda-not-linked: an `ls -l` of /usr/lib/wsl/lib whose rows carry no folder, the
report's own "adding /usr/lib/wsl/lib to the LD_LIBRARY_PATH can fix this error").

Each on recorded public text (doctor/kb/errors.yaml's sources), also as pasting mangles it
(a "> " quote, a fence, CRLF, terminal colours, CI log stamps, a wrapped line), and beside the
look-alikes that must stay quiet. The rows' own examples run in tests/test_triage_corpus.py.
"""

from __future__ import annotations

import pytest

from fwdoctor.model import Severity
from fwdoctor.triage.judge import run


def findings(text: str, kb) -> dict[str, Severity]:
    return {f.id: f.severity for f in run(text, kb).report.findings}


def quoted(text: str) -> str:
    return "".join("> " + line for line in text.splitlines(keepends=True))


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def stamped(text: str) -> str:
    """GitHub Actions' raw log stamp on every line."""
    return "".join("2024-09-03T12:34:56.1234567Z " + line for line in text.splitlines(keepends=True))


def fenced(text: str) -> str:
    return "```console\n" + text + "```\n"


MANGLED = (lambda t: t, quoted, crlf, stamped, fenced)


# open-neutrino/neutrino#2 (windows-wsl/b25-neutrino-wsl-readlink-libcuda-so-1-not-a-link.md, development part)
NEUTRINO = (
    "Hey, the result of running command `ls -l /usr/lib/wsl/lib/ | grep libcuda` is:\n"
    "```bash\n"
    "-r-xr-xr-x 4 root root    171008 May 20 16:31 libcuda.so\n"
    "-r-xr-xr-x 4 root root    171008 May 20 16:31 libcuda.so.1\n"
    "-r-xr-xr-x 4 root root    171008 May 20 16:31 libcuda.so.1.1\n"
    "-r-xr-xr-x 2 root root   9742088 May 20 16:31 libcudadebugger.so.1\n"
    "```\n"
)
# microsoft/WSL#6260 (not in the corpus): the option after the folder, "total", quoted names
WSL_6260 = (
    "fsp@FSP-PC:~$ ls /usr/lib/wsl/lib -l\n"
    "total 103256\n"
    "-r--r--r-- 1 root root   124664 Sep 17 10:24  libcuda.so\n"
    "-r--r--r-- 1 root root   124664 Sep 17 10:24  libcuda.so.1\n"
    "-r--r--r-- 1 root root   124664 Sep 17 10:24  libcuda.so.1.1\n"
    "-r--r--r-- 2 root root   785144 Nov  7 21:50 'libd3d12 (1).so'\n"
)


@pytest.mark.parametrize("mangle", MANGLED)
@pytest.mark.parametrize("text", [NEUTRINO, WSL_6260])
def test_ls_of_the_wsl_driver_folder_with_a_plain_libcuda_so_1_is_wsl_libcuda_not_linked(text, mangle, test_kb):
    assert findings(mangle(text), test_kb).get("wsl-libcuda-not-linked") is Severity.WARNING


def test_grep_colour_in_the_listing_is_read(test_kb):
    # `grep libcuda` colours its match on a terminal: "\x1b[01;31m\x1b[Klibcuda\x1b[m\x1b[K.so.1"
    coloured = NEUTRINO.replace(" libcuda.", " \x1b[01;31m\x1b[Klibcuda\x1b[m\x1b[K.")
    assert "wsl-libcuda-not-linked" in findings(coloured, test_kb)


def test_the_listing_message_quotes_the_command_and_the_row(test_kb):
    (finding,) = [f for f in run(NEUTRINO, test_kb).report.findings if f.id == "wsl-libcuda-not-linked"]
    assert "ls -l /usr/lib/wsl/lib/" in finding.message and "report line 4:" in finding.message


@pytest.mark.parametrize("text", [
    # links, as on a WSL whose libcuda was fixed with mklink (microsoft/WSL#5663's fix)
    "$ ls -l /usr/lib/wsl/lib/ | grep libcuda\n"
    "lrwxrwxrwx 1 root root        14 May 20 16:31 libcuda.so -> libcuda.so.1.1\n"
    "lrwxrwxrwx 1 root root        14 May 20 16:31 libcuda.so.1 -> libcuda.so.1.1\n"
    "-r-xr-xr-x 4 root root    171008 May 20 16:31 libcuda.so.1.1\n",
    # a plain libcuda.so.1 in another folder: not the WSL driver's
    "$ ls -l /usr/lib/x86_64-linux-gnu | grep libcuda\n"
    "-rw-r--r-- 1 root root  29142424 Jan  5 10:02 libcuda.so.1\n",
    # the WSL folder listed first, then another folder whose copy it is not
    "$ ls -l /usr/lib/wsl/lib/ | grep libd3d12\n"
    "-r-xr-xr-x 2 root root    785144 Nov 14 20:15 libd3d12.so\n"
    "$ ls -l /opt/stubs\n"
    "-rw-r--r-- 1 root root     12345 Jan  5 10:02 libcuda.so.1\n",
    # the folder's files listed by path: wsl-libcuda-plain-file's rows; a sub-folder is not the folder
    "$ ls -l /usr/lib/wsl/lib/libd3d12.so\n-r-xr-xr-x 2 root root 785144 Nov 14 20:15 /usr/lib/wsl/lib/libd3d12.so\n",
])
def test_ls_look_alikes_are_not_wsl_libcuda_not_linked(text, test_kb):
    assert "wsl-libcuda-not-linked" not in findings(text, test_kb)


# chelsea0x3b/cudarc#296 (windows-wsl/b25-cudarc-wsl2-cuda-lib-not-on-loader-path.md, development part)
CUDARC = "Currently, adding `/usr/lib/wsl/lib` to the `LD_LIBRARY_PATH` can fix this error.\n"
# NVIDIA/cuda-python#17's description (its sentence is not in the corpus item's cut)
CUDA_PYTHON = "As a workaround, adding `/usr/lib/wsl/lib` to the `LD_LIBRARY_PATH` environment variable resolves the problem.\n"


@pytest.mark.parametrize("mangle", MANGLED)
@pytest.mark.parametrize("text", [CUDARC, CUDA_PYTHON])
def test_the_report_saying_wsl_lib_on_ld_library_path_fixes_it_is_wsl_libcuda_not_linked(text, mangle, test_kb):
    assert findings(mangle(text), test_kb).get("wsl-libcuda-not-linked") is Severity.WARNING


def test_a_wrapped_fix_sentence_is_read(test_kb):
    wrapped = "As a workaround, adding `/usr/lib/wsl/lib` to the `LD_LIBRARY_PATH`\nenvironment variable resolves the problem.\n"
    assert "wsl-libcuda-not-linked" in findings(wrapped, test_kb)


@pytest.mark.parametrize("text", [
    "I tried adding `/usr/lib/wsl/lib` to the `LD_LIBRARY_PATH` but it does not fix this error.\n",
    "Adding /usr/lib/wsl/lib to LD_LIBRARY_PATH doesn't fix it either.\n",
    "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH\n",
    "Currently, adding `/usr/local/cuda/lib64` to the `LD_LIBRARY_PATH` can fix this error.\n",
])
def test_ld_library_path_look_alikes_are_not_wsl_libcuda_not_linked(text, test_kb):
    assert "wsl-libcuda-not-linked" not in findings(text, test_kb)


# NVIDIA/nvidia-docker#1542 (windows-wsl/b25-nvidia-docker-wsl2-dxcore-init-failed-pre-21h2.md, development part)
NVDOCKER_1542 = (
    " - [x] Some nvidia-container information: `nvidia-container-cli -k -d /dev/tty info`(from inside wsl)\n"
    "```\n"
    "-- WARNING, the following logs are for debugging purposes only --\n"
    "\n"
    "I0828 18:43:18.664659 4993 nvc.c:372] initializing library context (version=1.5.0~rc.2, build=6d9de2beba51389eef0b376b6d596abe62aa43b9)\n"
    "I0828 18:43:18.664757 4993 nvc.c:348] using unprivileged user 1000:1000\n"
    "I0828 18:43:18.664828 4993 nvc.c:389] attempting to load dxcore to see if we are running under Windows Subsystem for Linux (WSL)\n"
    "I0828 18:43:18.664969 4993 nvc.c:391] dxcore initialization failed, continuing assuming a non-WSL environment\n"
    "W0828 18:43:18.665048 4993 nvc.c:254] failed to detect NVIDIA devices\n"
    "nvidia-container-cli: initialization error: driver error: failed to process request\n"
    "```\n"
)
# NVIDIA/nvidia-docker#1400 (not in the corpus): WSL 2 in October 2020, GPU support in Insider builds only
NVDOCKER_1400 = (
    "I want to run docker TensorFlow on the WSL 2 environment and these errors occur:\n"
    "`nvidia-container-cli -k -d /dev/tty info`\n"
    "I1016 13:14:28.960495 24446 nvc.c:282] initializing library context (version=1.3.0, build=16315ebdf4b9728e899f615e208b50c41d7a5d15)\n"
    "I1016 13:14:28.960528 24446 nvc.c:299] attempting to load dxcore to see if we are running under Windows Subsystem for Linux (WSL)\n"
    "I1016 13:14:28.960625 24446 nvc.c:301] dxcore initialization failed, continuing assuming a non-WSL environment\n"
)


@pytest.mark.parametrize("mangle", MANGLED)
@pytest.mark.parametrize("text", [NVDOCKER_1542, NVDOCKER_1400])
def test_dxcore_failed_in_a_report_from_wsl_is_wsl_gpu_unsupported(text, mangle, test_kb):
    assert findings(mangle(text), test_kb).get("wsl-gpu-unsupported") is Severity.ERROR


# NVIDIA/nvidia-docker#1483 (a Linux host, driver 430): nvidia-container-cli names WSL in its own
# words only; quoted with "> " as that thread has it
NATIVE_LINUX = (
    "> I0404 08:30:20.796560 49717 nvc.c:389] attempting to load dxcore to see if we are running under Windows Subsystem for Linux (WSL)\n"
    "> I0404 08:30:20.796753 49717 nvc.c:391] dxcore initialization failed, continuing assuming a non-WSL environment\n"
    "> W0404 08:30:20.804225 49718 nvc.c:269] failed to set inheritable capabilities\n"
    "> I0404 08:30:20.817399 49717 nvc_info.c:169] selecting /usr/lib/nvidia-430/libnvoptix.so.430.64\n"
)
# NVIDIA/nvidia-container-toolkit#289: WSL2 with GPU support, dxcore found the adapter
WSL2_WORKING = (
    "I1004 13:41:19.447196 13740 nvc.c:389] attempting to load dxcore to see if we are running under Windows Subsystem for Linux (WSL)\n"
    "I1004 13:41:19.465867 13740 dxcore.c:227] Creating a new WDDM Adapter for hAdapter:40000000 luid:f95e09\n"
    "I1004 13:41:19.478495 13740 dxcore.c:326] dxcore layer initialized successfully\n"
    "W1004 13:41:19.478894 13740 nvc.c:397] skipping kernel modules load on WSL\n"
)


@pytest.mark.parametrize("mangle", MANGLED)
@pytest.mark.parametrize("text", [NATIVE_LINUX, WSL2_WORKING])
def test_dxcore_look_alikes_are_not_wsl_gpu_unsupported(text, mangle, test_kb):
    assert "wsl-gpu-unsupported" not in findings(mangle(text), test_kb)


# AbdBarho/stable-diffusion-webui-docker#117 (windows-wsl/b25-sd-webui-docker-wsl1-no-adapters-found.md, development part)
SD_WEBUI_117 = (
    "Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: "
    "error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
    "nvidia-container-cli: initialization error: WSL environment detected but no adapters were found: unknown\n"
)
# IDEA-Research/Grounded-Segment-Anything#506 (not in the corpus): WSL 2, a laptop without an NVIDIA GPU
GSAM_506 = "`nividia-container-cli: initialization error: WSL environment detected but no adapters were found: unknown`  \n"


@pytest.mark.parametrize("mangle", MANGLED)
@pytest.mark.parametrize("text", [SD_WEBUI_117, GSAM_506])
def test_wsl_without_adapters_is_wsl_gpu_unsupported(text, mangle, test_kb):
    assert findings(mangle(text), test_kb).get("wsl-gpu-unsupported") is Severity.ERROR


def test_a_wrapped_no_adapters_message_is_read(test_kb):
    wrapped = "nvidia-container-cli: initialization error: WSL environment detected but no\nadapters were found: unknown\n"
    assert "wsl-gpu-unsupported" in findings(wrapped, test_kb)
