"""Issue 26, the windows-wsl group: a WSL report whose Windows host runs its GPU in TCC mode
(wsl-gpu-unsupported). WSL 2 reaches a GPU only through the Windows driver's WDDM mode (GPU
paravirtualization, /dev/dxg); a GPU in TCC mode, the default of data-center cards (Tesla,
L40S, H100 PCIe), is not shared into WSL (doctor/kb/cuda.yaml's wsl row, driver_models, and
its source S-WSL-TCC: microsoft/WSL#9952, #5546, #12835). The Windows nvidia-smi table names
each GPU's driver model in its TCC/WDDM ("Driver-Model" since 555) column
(fwdoctor.triage.nvidia_smi).

Recorded public text, also as pasting mangles it, beside look-alikes that must stay quiet:
a TCC GPU on native Windows (no WSL), a WDDM GPU in a WSL report, and a host with a TCC and a
WDDM GPU (WSL reaches the WDDM one; a mixed host is not judged).
"""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from pasting import as_pasted
from triage_run import severities

# microsoft/WSL#11865 (the issue form as filed): Windows Server 2022, an L40S in TCC mode.
WSL_L40S_TCC = """\
### Windows Version

Microsoft Windows [Version 10.0.20348.2582]

### WSL Version

2.2.4.0

### Are you using WSL 1 or WSL 2?

- [X] WSL 2
- [ ] WSL 1

### Kernel Version

5.15.153.1

### Repro Steps

1. install nvidia driver for GPU L40s, windows server 2022
2. install ubuntu
3. run nvidia-smi
4. Wed Jul 31 11:24:43 2024
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 555.85                 Driver Version: 555.85         CUDA Version: 12.5     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                  Driver-Model | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA L40S                  TCC   |   00000000:61:00.0 Off |                    0 |
| N/A   17C    P8             21W /  350W |       9MiB /  46068MiB |      0%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------------------------------------------------------+
"""

# jamesstringer90/Easy-GPU-PV#358: the same table format (TCC/WDDM header, before 555) from
# native Windows PowerShell, a Tesla P4 in TCC mode; no WSL in it.
WINDOWS_P4_TCC = """\
PS C:\\Windows\\system32> nvidia-smi
Thu Feb 15 20:03:54 2024
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 538.15                 Driver Version: 538.15       CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                     TCC/WDDM  | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  Tesla P4                     TCC   | 00000000:41:00.0 Off |                    0 |
"""

# microsoft/WSL#9134: Windows' own nvidia-smi beside WSL's failing one, a WDDM GPU.
WSL_GEFORCE_WDDM = """\
I get this error in WSL:
```
 NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.
```

When I run it on Windows, I get:

```
  +-----------------------------------------------------------------------------+
  | NVIDIA-SMI 517.48       Driver Version: 517.48       CUDA Version: 11.7     |
  |-------------------------------+----------------------+----------------------+
  | GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |
  | Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
  |                               |                      |               MIG M. |
  |===============================+======================+======================|
  |   0  NVIDIA GeForce ... WDDM  | 00000000:0A:00.0  On |                  N/A |
  |  0%   31C    P8    16W / 250W |    576MiB / 11264MiB |      0%      Default |
  +-------------------------------+----------------------+----------------------+
```
"""

# microsoft/WSL#9254: a WSL report whose host has a Tesla P100 (TCC) and a GeForce (WDDM).
WSL_MIXED = """\
I however on the other hand, can never get nvidia-smi to work under WSL.

This is on host machine.
```
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 526.98       Driver Version: 526.98       CUDA Version: 12.0     |
|-------------------------------+----------------------+----------------------+
| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  Tesla P100-PCIE... TCC   | 00000000:04:00.0 Off |                    0 |
| N/A   35C    P0    25W / 250W |      8MiB / 16384MiB |      0%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
|   1  NVIDIA GeForce ... WDDM  | 00000000:81:00.0  On |                  N/A |
| 33%   40C    P8     9W / 250W |    971MiB / 11264MiB |      7%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
```
"""


@pytest.fixture(scope="module")
def kb() -> KB:
    return KB()  # the shipped KB: its wsl row's driver_models is what this judges


def test_the_kb_says_wsl_reaches_wddm_gpus_only(kb):
    assert kb.cuda.wsl is not None and kb.cuda.wsl.driver_models == ("WDDM",)


@pytest.mark.parametrize("text", as_pasted(WSL_L40S_TCC))
def test_a_wsl_report_whose_only_gpu_runs_in_tcc_mode_has_no_gpu_in_wsl(text, kb):
    assert severities(text, kb).get("wsl-gpu-unsupported") is not None


@pytest.mark.parametrize("text", as_pasted(WINDOWS_P4_TCC, WSL_GEFORCE_WDDM, WSL_MIXED))
def test_tcc_on_native_windows_a_wddm_gpu_and_a_mixed_host_stay_quiet(text, kb):
    assert "wsl-gpu-unsupported" not in severities(text, kb)
