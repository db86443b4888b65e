"""Issue 26, the windows-wsl group, second pass: the Windows texts that carry driver and toolkit
facts, read as their Linux counterparts are so that the same rules judge them.

- Windows' nvidia-smi (its TCC/WDDM driver-model column, `nvidia-smi -q`'s "Driver Model", the
  command run as nvidia-smi.exe) and WSL 2's (a Linux nvidia-smi version beside the Windows
  host's driver) -> driver.windows: the driver is numbered as a Windows driver, so torch's and
  the frameworks' driver floors take Table 3's Windows column and driver fixes are Windows ones.
- NVIDIA's Windows toolkits: cmd's `set` (and the `Name=value` dumps of ComfyUI), PowerShell's
  `ls env:` table (CUDA_PATH, CUDA_PATH_VX_Y, Path) and `where nvcc` -> cuda.toolkits and
  cuda.pointers, so multiple-toolkits and cuda-path-inconsistent fire on Windows reports, with
  cmd fixes (set CUDA_PATH/PATH), never export or apt.

Every text is quoted from a public thread or file (named beside it) and read also as pasting
mangles it (tests/pasting.py); look-alikes (Linux tables and `nvidia-smi -q`, a bin folder that
is no CUDA toolkit's) must not give these facts."""

from __future__ import annotations

import json

import pytest

from fwdoctor.rules.torch import windows_driver
from fwdoctor.triage import triage
from tests.pasting import forms

pytestmark = pytest.mark.usefixtures("use_test_kb")


def facts_of(text: str):
    facts, _ = triage(text)
    return facts


def triaged(cli, tmp_path, text: str) -> dict:
    path = tmp_path / "report.md"
    path.write_bytes(text.encode("utf-8"))
    return json.loads(cli("triage", "--json", str(path)).output)


# ------------------------------------------------------------------ Windows' nvidia-smi
WINDOWS_SMI = [
    # pytorch/pytorch#68611 (Windows, cudatoolkit 11.3 from pytorch-nightly)
    """+-----------------------------------------------------------------------------+
| NVIDIA-SMI 461.72       Driver Version: 461.72       CUDA Version: 11.2     |
|-------------------------------+----------------------+----------------------+
| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  GeForce GTX 105... WDDM  | 00000000:01:00.0 Off |                  N/A |
| N/A   61C    P8    N/A /  N/A |     78MiB /  4096MiB |      0%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
""",
    # microsoft/WSL#11277 ("nvidia-smi (Windows output)")
    """Sat Apr 13 04:58:35 2024
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 551.86                 Driver Version: 551.86         CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                     TCC/WDDM  | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA T1200 Laptop GPU      WDDM  |   00000000:01:00.0 Off |                  N/A |
| N/A   50C    P0             12W /   45W |       0MiB /   4096MiB |      0%      Default |
""",
    # microsoft/WSL#6014 (nvidia-smi.exe run from WSL: the Windows driver)
    """$ nvidia-smi.exe
Fri Oct  2 23:54:29 2020
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 460.15       Driver Version: 460.15       CUDA Version: 11.1     |
|-------------------------------+----------------------+----------------------+
| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  GeForce RTX 207... WDDM  | 00000000:01:00.0 Off |                  N/A |
| N/A   45C    P5    12W /  N/A |    176MiB /  8192MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+
""",
    # microsoft/WSL#11865 (Windows Server 2022, nvidia-smi 555's "Driver-Model" header, an L40S in TCC)
    """4. Wed Jul 31 11:24:43 2024
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 555.85                 Driver Version: 555.85         CUDA Version: 12.5     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                  Driver-Model | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA L40S                  TCC   |   00000000:61:00.0 Off |                    0 |
| N/A   17C    P8             21W /  350W |       9MiB /  46068MiB |      0%      Default |
""",
    # NVIDIA/nvidia-docker#1604 (`nvidia-smi -a` in WSL 2: the Windows driver's WDDM model)
    """$ nvidia-smi -a

==============NVSMI LOG==============

Timestamp                                 : Thu Feb  3 13:18:48 2022
Driver Version                            : 510.06
CUDA Version                              : 11.6

Attached GPUs                             : 1
GPU 00000000:01:00.0
    Product Name                          : NVIDIA GeForce GTX 1650 Ti with Max-Q Design
    Product Brand                         : GeForce
    Product Architecture                  : Turing
    Display Mode                          : Enabled
    Display Active                        : Enabled
    Persistence Mode                      : Enabled
    MIG Mode
        Current                           : N/A
        Pending                           : N/A
    Accounting Mode                       : Disabled
    Accounting Mode Buffer Size           : 4000
    Driver Model
        Current                           : WDDM
        Pending                           : WDDM
""",
]

WSL2_SMI = [
    # microsoft/WSL#11277 (inside WSL 2 after moving to Game Ready 537.13)
    """Wed May 15 00:12:47 2024
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.103                Driver Version: 537.13       CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA GeForce GTX 1650 ...    On  | 00000000:02:00.0 Off |                  N/A |
| N/A   48C    P8               3W /  30W |    128MiB /  4096MiB |     15%      Default |
""",
    # microsoft/WSL#11589 (WSL 2, "CUDA Version: ERR!")
    """Wed May 15 21:49:41 2024       
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 545.46                 Driver Version: 546.80       CUDA Version: ERR!     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA GeForce RTX 3060 ...    On  | 00000000:01:00.0  On |                  N/A |
| N/A   54C    P8              16W /  80W |    816MiB /  6144MiB |      3%      Default |
""",
]

LINUX_SMI = [
    # NVIDIA/DCGM#232 (a Linux host: equal versions, Persistence-M column)
    """+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.247.01             Driver Version: 535.247.01   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA A10G                    Off | 00000000:00:1E.0 Off |                    0 |
|  0%   26C    P0              60W / 300W |   8722MiB / 23028MiB |      0%      Default |
""",
    # bottlerocket-os/bottlerocket-core-kit#122 (a Linux node: the On of persistence mode)
    """+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.256.02   Driver Version: 470.256.02   CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  NVIDIA A10G         On   | 00000000:00:1E.0 Off |                    0 |
|  0%   25C    P8     9W / 300W |      0MiB / 22731MiB |      0%      Default |
""",
    # MatthiasSchinzel/sysmon#12 (Ubuntu's `nvidia-smi -q`: a two-part Linux driver, Driver Model N/A)
    """~$ nvidia-smi -q

==============NVSMI LOG==============

Timestamp                                 : Sat Oct 10 17:02:53 2020
Driver Version                            : 450.66
CUDA Version                              : 11.0

Attached GPUs                             : 1
GPU 00000000:01:00.0
    Product Name                          : GeForce GTX 780
    Product Brand                         : GeForce
    Display Mode                          : N/A
    Display Active                        : N/A
    Persistence Mode                      : Disabled
    MIG Mode
        Current                           : N/A
        Pending                           : N/A
    Accounting Mode                       : N/A
    Accounting Mode Buffer Size           : N/A
    Driver Model
        Current                           : N/A
        Pending                           : N/A
""",
]


@pytest.mark.parametrize("text", WINDOWS_SMI + WSL2_SMI)
def test_windows_nvidia_smi_says_the_driver_is_a_windows_one(text):
    for pasted in [text, *forms(text)]:
        facts = facts_of(pasted)
        assert facts.known("driver.windows"), pasted[:120]
        assert windows_driver(facts)
        assert facts["driver.version"] in text


@pytest.mark.parametrize("text", WSL2_SMI)
def test_wsl2_nvidia_smi_names_the_windows_hosts_driver(text):
    for pasted in [text, *forms(text)]:
        facts = facts_of(pasted)
        assert facts["driver.windows"]["wsl"] is True
        assert facts["platform.wsl"]["version"] == 2


@pytest.mark.parametrize("text", LINUX_SMI)
def test_linux_nvidia_smi_is_no_windows_driver(text):
    for pasted in [text, *forms(text)]:
        facts = facts_of(pasted)
        assert not facts.known("driver.windows"), pasted[:120]
        assert not windows_driver(facts) and not facts.known("platform.wsl")


# ------------------------------------------------------------------ Windows toolkits: set, ls env:, where nvcc
SET_TWO_TOOLKITS = (
    # a public note's cmd `set` (CUDA 11.7 and 11.8, 11.7 first on Path; file id 37261748007 of the search index)
    "C:\\Users\\lab>set\n"
    "ALLUSERSPROFILE=C:\\ProgramData\n"
    "CONDA_SHLVL=0\n"
    "CUDA_PATH=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7\n"
    "CUDA_PATH_V11_7=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7\n"
    "CUDA_PATH_V11_8=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8\n"
    "DriverData=C:\\Windows\\System32\\Drivers\\DriverData\n"
    "NVTOOLSEXT_PATH=C:\\Program Files\\NVIDIA Corporation\\NvToolsExt\\\n"
    "OS=Windows_NT\n"
    "Path=D:\\Applications\\miniconda\\condabin;C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7\\bin;"
    "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7\\libnvvp;C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8\\bin;"
    "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8\\libnvvp;C:\\Windows\\system32;C:\\Windows;C:\\Windows\\System32\\Wbem;\n"
    "PATHEXT=.COM;.EXE;.BAT;.CMD;.VBS;.VBE;.JS;.JSE;.WSF;.WSH;.MSC\n"
)
COMFY_DUMP = (
    # Comfy-Org/ComfyUI#7357 (its "Environment Variables:" dump; the Path value is cut there)
    "Environment Variables: \n"
    "USERPROFILE=C:\\Users\\Administrator\n"
    "ProgramFiles(x86)=C:\\Program Files (x86)\n"
    "CUDA_PATH_V12_8=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.8\n"
    "TEMP=C:\\Users\\Administrator\\AppData\\Local\\Temp\n"
    "ComSpec=C:\\Windows\\system32\\cmd.exe\n"
    "OS=Windows_NT\n"
    "Path=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.8\\bin;C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12\n"
)
LS_ENV = (
    # open-mmlab/mmcv@6a385859db71c6bcd624c8c963aac3c773148163:docs/en/get_started/build.md (PowerShell `ls env:`)
    "(mmcv) PS C:\\Users\\xxx\\mmcv> ls env:\n"
    "\n"
    "Name                           Value\n"
    "----                           -----\n"
    "CUDA_PATH                      C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.2\n"
    "CUDA_PATH_V10_1                C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.1\n"
    "CUDA_PATH_V10_2                C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.2\n"
)
WHERE_NVCC = (
    # a public Windows build note (search index file 30816841307): `where nvcc`, then `nvcc -V`
    ">where nvcc && where nvvp\n"
    "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7\\bin\\nvcc.exe\n"
    "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7\\bin\\nvvp.bat\n"
    "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7\\libnvvp\\nvvp.exe\n"
    "\n"
    ">nvcc -V\n"
    "nvcc: NVIDIA (R) Cuda compiler driver\n"
    "Copyright (c) 2005-2022 NVIDIA Corporation\n"
    "Built on Wed_Jun__8_16:59:34_Pacific_Daylight_Time_2022\n"
    "Cuda compilation tools, release 11.7, V11.7.99\n"
    "Build cuda_11.7.r11.7/compiler.31442593_0\n"
)
V117 = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7"


def _roots(facts) -> list[tuple[str, str]]:
    return [(tk["root"], tk["version"]) for tk in facts["cuda.toolkits"]]


def test_set_dump_gives_every_installed_toolkit_and_what_path_and_cuda_path_name():
    for pasted in [SET_TWO_TOOLKITS, *forms(SET_TWO_TOOLKITS)]:
        facts = facts_of(pasted)
        assert _roots(facts) == [(V117, "11.7"), (V117.replace("11.7", "11.8"), "11.8")]
        pointers = facts["cuda.pointers"]
        assert pointers["cuda_path"] == V117 and pointers["path_nvcc"] == V117


def test_comfyui_environment_dump_reads_cuda_path_v_and_the_first_cuda_bin_on_path():
    for pasted in [COMFY_DUMP, *forms(COMFY_DUMP)]:
        facts = facts_of(pasted)
        root = V117.replace("11.7", "12.8")
        assert _roots(facts) == [(root, "12.8")]
        assert facts["cuda.pointers"]["path_nvcc"] == root


def test_powershell_ls_env_table_is_read():
    for pasted in [LS_ENV, *forms(LS_ENV)]:
        facts = facts_of(pasted)
        assert [v for _, v in _roots(facts)] == ["10.1", "10.2"]
        assert facts["cuda.pointers"]["cuda_path"].endswith("CUDA\\v10.2")


def test_where_nvcc_places_the_nvcc_that_nvcc_v_ran():
    for pasted in [WHERE_NVCC, *forms(WHERE_NVCC)]:
        facts = facts_of(pasted)
        # one toolkit: the 11.7 that `where` placed is the one `nvcc -V` printed, not a second
        assert _roots(facts) == [(V117, "11.7")]
        assert facts["cuda.pointers"]["path_nvcc"] == V117


def test_two_windows_toolkits_raise_multiple_toolkits_with_a_cmd_fix(cli, tmp_path):
    # with collect_env's first lines from pytorch/pytorch#94291 (a CUDA 11.8 torch on Windows 11)
    torch = "PyTorch version: 2.0.0.dev20230203+cu118\nIs debug build: False\nCUDA used to build PyTorch: 11.8\n"
    doc = triaged(cli, tmp_path, SET_TWO_TOOLKITS + "\n" + torch)
    found = {f["id"]: f for f in doc["findings"]}
    assert found["multiple-toolkits"]["severity"] == "info"
    fix = found["multiple-toolkits"]["fix"]
    commands = " ".join(fix["commands"])
    assert "set \"CUDA_PATH=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8\"" in commands  # torch's CUDA 11.8
    assert "export" not in commands and "apt" not in commands and fix["recipe"] is None
    assert not [f for f in doc["findings"] if f["severity"] == "error"]


def test_cuda_path_naming_another_toolkit_than_path_is_cuda_path_inconsistent(cli, tmp_path):
    # the mmcv table's CUDA_PATH (10.2) beside the note's `where nvcc` (11.7 first on PATH):
    # two public texts of one format each, joined as one report would paste them
    text = LS_ENV + "\n" + WHERE_NVCC
    doc = triaged(cli, tmp_path, text)
    found = {f["id"]: f for f in doc["findings"]}
    assert found["cuda-path-inconsistent"]["severity"] == "warning"
    assert "CUDA_PATH" in found["cuda-path-inconsistent"]["message"] and "v11.7" in found["cuda-path-inconsistent"]["message"]
    assert all("export" not in c for c in found["cuda-path-inconsistent"]["fix"]["commands"])


LOOK_ALIKES = [
    # a Linux env dump (envdump's, not this reader's)
    "CUDA_PATH=/opt/cuda\nPATH=/usr/local/cuda-12.1/bin:/usr/bin\n",
    # nvcc run from a bin folder that is no CUDA toolkit's (a public 3DGS note, search index file 67449163253)
    "(base) C:\\Users\\_s2110838\\Research\\3DGS\\gaussian-splatting\\SIBR_viewers\\install\\bin>nvcc --version\n"
    "nvcc: NVIDIA (R) Cuda compiler driver\n"
    "Cuda compilation tools, release 11.8, V11.8.89\n",
    # a batch script that sets the variables (a setter, not a dump of what is set)
    "set CUDA_PATH=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8\n"
    "set CUDA_PATH_V11_8=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8\n",
    # PowerShell's table cuts a long value: "C:\\...\\CUDA\\v1..." names no toolkit
    "CUDA_PATH_V12_1                C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v1...\n",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_place_no_windows_toolkit(text):
    for pasted in [text, *forms(text)]:
        facts = facts_of(pasted)
        toolkits = facts["cuda.toolkits"] if facts.known("cuda.toolkits") else []
        assert not [tk for tk in toolkits if str(tk.get("root", ""))[1:3] == ":\\"], pasted
