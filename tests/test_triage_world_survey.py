"""Issue 26, a world survey of frequent error wordings (NCCL and multi-node, native Windows,
containers): texts that appear in many threads of many repositories, whose cause the line alone
does not settle. Each is read as its own `report.errors` entry whose note names what settles
it, and none raises an error finding: a confident finding would be wrong for a good share of
the threads.

- torch's "Distributed package doesn't have NCCL built in" (a build without NCCL: Windows and
  macOS always, Linux's CPU builds);
- ProcessGroupNCCL's "Watchdog caught collective operation timeout" (a rank that never joined);
- NCCL's "ring N does not loop back to start" and "message truncated : receiving X bytes instead
  of Y" (ranks that disagree: versions, settings, calls);
- CUDA's "peer access is not supported between these two devices" (a GPU pair without P2P);
- NCCL's "Call to ibv_... failed" without ENOMEM (memlock or GPUDirect RDMA; ENOMEM keeps its
  own row, rdma-memlock-too-low);
- nvidia-container-cli's "device error: N: unknown device" (a GPU the host does not have);
- nvidia-smi's "couldn't communicate with the NVIDIA driver" (a module not loaded: a kernel
  update without DKMS, Secure Boot, no driver; a container without the GPUs);
- Paddle's "Can not import avx core while this file exists" (the ImportError after it says why);
- torch.distributed's "The server socket has failed to bind ... Address already in use" (a
  rendezvous port another job holds);
- TensorFlow's "Failed to load the native TensorFlow runtime" and Windows' "DLL load failed with
  error code -1073741795" (0xC000001D, an illegal instruction: often AVX);
- nvcc's "Cannot find compiler 'cl.exe' in PATH" and setuptools' "Microsoft Visual C++ 14.0 or
  greater is required" (no MSVC compiler on Windows; not the runtime DLLs).

Every text is quoted from the public thread named above it (doctor/kb/errors.yaml's sources)
and read also as pasting mangles it (tests/pasting.py); look-alikes must not be read."""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from fwdoctor.model import Severity
from fwdoctor.triage.judge import run
from tests.pasting import as_pasted

pytestmark = pytest.mark.usefixtures("use_test_kb")


@pytest.fixture
def kb(test_kb: KB) -> KB:
    return test_kb


def entries(text: str, kb: KB) -> dict[str, dict]:
    """Each `report.errors` kind triage reads in `text`, with its entry."""
    report = run(text, kb).report
    return {e["kind"]: e for e in report.facts.get("report.errors") or []}


def errors(text: str, kb: KB) -> list[str]:
    return [f.id for f in run(text, kb).report.findings if f.severity is Severity.ERROR]


# Alpha-VLLM/LLaMA2-Accessory#166 and XavierXiao/Dreambooth-Stable-Diffusion#65 (Windows)
NO_NCCL = """\
Runtime error on Windows:

RuntimeError: Distributed package doesn't have NCCL built in
"""
NO_NCCL_PROSE = "Under Windows I get the error message: RuntimeError: Distributed package doesn't have NCCL built in\n"

# OFA-Sys/OFA#271 (torch 1.x) and XPixelGroup/BasicSR#737 (torch 2.x, the rank prefix)
WATCHDOG_OLD = """\
[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.
[E ProcessGroupNCCL.cpp:737] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802211 milliseconds before timing out.
"""
WATCHDOG_NEW = """\
[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
[rank1]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL work: 811, last completed NCCL work: 807.
"""

# NVIDIA/nccl#577 (Slurm, a rank prefix) and NVIDIA/nccl#1020 (NCCL 2.19.3)
RING = """\
52: ip-0A0C04E3:76285:76947 [4] graph/rings.cc:38 NCCL WARN Error : ring 0 does not loop back to start (48 != 52)
52: ip-0A0C04E3:76285:76947 [4] NCCL INFO graph/connect.cc:311 -> 3
"""
RING_219 = "[7] graph/rings.cc:38 NCCL WARN Error : ring 0 does not loop back to start (13 != 15).\n"

# NVIDIA/nccl#626: the socket transport's warning, wrapped after "truncated :"
TRUNCATED_WRAPPED = """\
transport/net_socket.cc:424 NCCL WARN NET/Socket : peer 192.168.161.30<59210> message truncated :
receiving 1048576 bytes instead of 65536
"""
# NVIDIA/nccl#268, in markdown bold
TRUNCATED_BOLD = "**hvd1:2918:3333 [0] external/nccl_archive/src/transport/net_socket.cc:200 NCCL WARN NET/Socket : message truncated : receiving 696320 bytes instead of 32768**\n"

# ray-project/ray_lightning#24 (NCCL 2.7.8) and tunib-ai/parallelformers#44 (torch)
PEER_NCCL = """\
(pid=909608) z-pc:909608:910337 [0] NCCL INFO Channel 00 : 0[2d000] -> 1[2e000] via P2P/IPC
(pid=909608) z-pc:909608:910337 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access is not supported between these two devices
(pid=909608) z-pc:909608:910337 [0] NCCL INFO transport.cc:68 -> 1
"""
PEER_TORCH = "RuntimeError: CUDA error: peer access is not supported between these two devices\n"

# NVIDIA/nccl#562 (NCCL 2.8.3: no reason) and NVIDIA/nccl#1842 (NCCL 2.27.3: a reason)
IBV_OLD = "hai-a100-3:3778851:3779883 [4] ibvwrap.c:130 NCCL WARN Call to ibv_create_qp failed\n"
IBV_NEW = "misc/ibvwrap.cc:182 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Invalid argument \n"
# NVIDIA/nccl#1191: ENOMEM, read by ibverbs-enomem only
IBV_ENOMEM = "misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory\n"
# NVIDIA/nccl-tests#185: ibv_modify_qp has its own row
IBV_MODIFY = "misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable\n"

# NVIDIA/nvidia-container-toolkit#632 (compose) and #29
UNKNOWN_DEVICE = """\
ERROR: for htdet  Cannot start service htdet: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #1: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'
nvidia-container-cli: device error: 2: unknown device: unknown
"""
UNKNOWN_DEVICE_FALSE = "nvidia-container-cli: device error: false: unknown device: unknown.\n"

# elda27/pydrr#6 (pycuda) and CosciaLab/openDVP#58 (pip building matplotlib)
CL_EXE = """\
pycuda.driver.CompileError:
command: nvcc --cubin --ptxas-options=-v -arch sm_61 -m64 ...
stdout:
nvcc fatal   : Cannot find compiler 'cl.exe' in PATH
"""
# GoogleCloudPlatform/compute-gpu-installation#18 (a kernel upgrade) and qixuema/envs#4 (a
# typographic apostrophe, the advice on its own line)
NO_DRIVER = """\
$ nvidia-smi
NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.
"""
NO_DRIVER_CURLY = "NVIDIA-SMI has failed because it couldn\u2018t communicate with the NVIDIA driver.\nMake sure that the latest NVIDIA driver is installed and running.\n"
# PaddlePaddle/Paddle#35570 (Windows, a `>>>` prompt) and #56609 (the noavx core on Linux)
PADDLE_CORE = """\
>>> import paddle
Error: Can not import avx core while this file exists: D:\\..........\\Python39\\lib\\site-packages\\paddle\\fluid\\core_avx.pyd
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
ImportError: DLL load failed while importing core_avx: 找不到指定的模块。
"""
PADDLE_NOAVX = """\
Error: Can not import noavx core while this file exists: /usr/local/lib/python3.7/dist-packages/paddle/fluid/core_noavx.so
Traceback (most recent call last):
  File "/usr/local/lib/python3.7/dist-packages/paddle/fluid/core.py", line 312, in <module>
    from .core_noavx import *
ImportError: libgfortran.so.4: cannot open shared object file: No such file or directory
"""
# meta-pytorch/torchtune#392 (errno 98) and xdit-project/mochi-xdit#22 (torch 2.4+: EADDRINUSE)
PORT_IN_USE = "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).\n"
PORT_IN_USE_NEW = "RuntimeError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use\n"
# tensorflow/tensorflow#35409 (TensorFlow 1.x on Python 3.5, Windows): the illegal-instruction
# code, then TensorFlow's own line (tensorflow/tensorflow#123395)
TF_NATIVE = """\
  File "C:\\Users\\Hieu\\AppData\\Local\\Programs\\Python\\Python35\\lib\\importlib\\__init__.py", line 126, in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
ImportError: DLL load failed with error code -1073741795
"""
TF_RUNTIME = """\
ImportError: DLL load failed while importing _pywrap_tensorflow_internal: A dynamic link library (DLL) initialization routine failed.

Failed to load the native TensorFlow runtime.
See https://www.tensorflow.org/install/errors for some common causes and solutions.
"""
MSVC_BUILD = """\
      error: Microsoft Visual C++ 14.0 or greater is required. Get it with "Microsoft C++ Build Tools": https://visualstudio.microsoft.com/visual-cpp-build-tools/
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
  ERROR: Failed building wheel for matplotlib
"""

READ = [
    ("torch-distributed-no-nccl", NO_NCCL, {}),
    ("torch-distributed-no-nccl", NO_NCCL_PROSE, {}),
    ("torch-nccl-watchdog-timeout", WATCHDOG_OLD, {"op": "ALLREDUCE", "seq": "469508"}),
    ("torch-nccl-watchdog-timeout", WATCHDOG_NEW, {"op": "ALLREDUCE", "seq": "808"}),
    ("nccl-ring-not-loop-back", RING, {"got": "48", "want": "52"}),
    ("nccl-ring-not-loop-back", RING_219, {"ring": "0", "got": "13"}),
    ("nccl-message-truncated", TRUNCATED_WRAPPED, {"received": "1048576", "expected": "65536"}),
    ("nccl-message-truncated", TRUNCATED_BOLD, {"received": "696320", "expected": "32768"}),
    ("cuda-peer-access-unsupported", PEER_NCCL, {}),
    ("cuda-peer-access-unsupported", PEER_TORCH, {}),
    ("nccl-ibv-call-failed", IBV_OLD, {"call": "ibv_create_qp"}),
    ("nccl-ibv-call-failed", IBV_NEW, {"call": "ibv_reg_mr_iova2", "error": "Invalid argument"}),
    ("nvidia-container-cli-unknown-device", UNKNOWN_DEVICE, {"device": "2"}),
    ("nvidia-container-cli-unknown-device", UNKNOWN_DEVICE_FALSE, {"device": "false"}),
    ("nvcc-cl-exe-not-found", CL_EXE, {}),
    ("msvc-build-tools-required", MSVC_BUILD, {}),
    ("nvidia-smi-cannot-reach-driver", NO_DRIVER, {}),
    ("nvidia-smi-cannot-reach-driver", NO_DRIVER_CURLY, {}),
    ("paddle-core-import-failed", PADDLE_CORE, {"core": "avx"}),
    ("paddle-core-import-failed", PADDLE_NOAVX, {"core": "noavx"}),
    ("c10d-port-in-use", PORT_IN_USE, {"address": "[::]:29500"}),
    ("c10d-port-in-use", PORT_IN_USE_NEW, {"port": "29500"}),
    ("windows-dll-illegal-instruction", TF_NATIVE, {}),
    ("tf-native-runtime-failed", TF_RUNTIME, {}),
]


@pytest.mark.parametrize(("kind", "text", "values"),
                         [(k, form, v) for k, t, v in READ for form in as_pasted(t)])
def test_a_frequent_wording_is_read_with_the_note_that_settles_it_and_no_error(kind, text, values, kb):
    found = entries(text, kb)
    assert kind in found, sorted(found)
    entry = found[kind]
    assert {key: entry.get(key) for key in values} == values
    assert entry["note"].startswith("no finding id fits: ")
    assert errors(text, kb) == []


@pytest.mark.parametrize("text", as_pasted(IBV_ENOMEM))
def test_a_verbs_call_out_of_memory_stays_the_memlock_limit(text, kb):
    found = entries(text, kb)
    assert "ibverbs-enomem" in found and "nccl-ibv-call-failed" not in found
    assert "rdma-memlock-too-low" in {f.id for f in run(text, kb).report.findings}


def test_a_queue_pair_transition_keeps_its_own_row(kb):
    found = entries(IBV_MODIFY, kb)
    assert "nccl-ibv-modify-qp-failed" in found and "nccl-ibv-call-failed" not in found


def test_the_notes_name_the_values_the_text_gave(kb):
    assert "(ALLREDUCE)" in entries(WATCHDOG_NEW, kb)["torch-nccl-watchdog-timeout"]["note"]
    assert "(1048576)" in entries(TRUNCATED_WRAPPED, kb)["nccl-message-truncated"]["note"]
    assert "'2'" in entries(UNKNOWN_DEVICE, kb)["nvidia-container-cli-unknown-device"]["note"]
    assert "ibv_create_qp" in entries(IBV_OLD, kb)["nccl-ibv-call-failed"]["note"]


@pytest.mark.parametrize("text", [
    # the gloo backend initialised fine: NCCL named in other words
    "torch.distributed.is_nccl_available() returned False; using backend='gloo'\n",
    # a collective that finished: the watchdog's other lines
    "[rank0]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.\n",
    # NCCL's ring listing, not the check
    "node1:1:1 [0] NCCL INFO Channel 00/02 :    0   1   2   3\n",
    # peer access that works
    "node1:1:1 [0] NCCL INFO Channel 00 : 0[2d000] -> 1[2e000] via P2P/IPC\n",
    # the Visual C++ runtime (windows-msvc-runtime-missing's), not the compiler
    "Please install the Microsoft Visual C++ Redistributable for Visual Studio 2015, 2017 and 2019.\n",
    # a c10d client that could not connect: another failure than a port in use
    "[W socket.cpp:558] [c10d] The client socket has failed to connect to [DESKTOP-7BNNAUJ]:29995 (system error: 10049 - The requested address is not valid in its context.).\n",
    # Paddle's AVX warning when the noavx core loads fine
    "WARNING: AVX is not support on your machine. Hence, no_avx core will be imported, It has much worse preformance than avx core.\n",
    # another nvidia-container-cli error
    "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.\n",
])
def test_look_alikes_are_not_read(text, kb):
    ours = {"torch-distributed-no-nccl", "torch-nccl-watchdog-timeout", "nccl-ring-not-loop-back",
            "nccl-message-truncated", "cuda-peer-access-unsupported", "nccl-ibv-call-failed",
            "nvidia-container-cli-unknown-device", "nvcc-cl-exe-not-found", "msvc-build-tools-required",
            "nvidia-smi-cannot-reach-driver", "paddle-core-import-failed", "c10d-port-in-use",
            "windows-dll-illegal-instruction", "tf-native-runtime-failed"}
    assert not ours & set(entries(text, kb))
