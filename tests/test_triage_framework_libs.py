"""Issue 26, part B: what JAX's, TensorFlow's, Paddle's and NCCL's own texts say about their
environment (a cuDNN/CUDA older than the build, a ptxas newer than the driver, a CUDA library
the loader cannot find, a Paddle kernel missing for the GPU, InfiniBand queue pairs that do not
connect) and TensorFlow on native Windows in prose, judged through `fwdoctor triage`. Each text
is quoted from the public thread named above it."""

from __future__ import annotations

import json

import pytest

from fwdoctor.kb import KB
from fwdoctor.triage import tf_prose
from fwdoctor.triage.text import Lines

pytestmark = pytest.mark.usefixtures("use_test_kb")


def triaged(cli, tmp_path, text: str) -> dict:
    path = tmp_path / "report.md"
    path.write_text(text, encoding="utf-8")
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f for f in doc["findings"]}


# ------------------------------------------------------- a library older than the build
# https://github.com/tensorflow/tensorflow/issues/60913 (XLA repeats the line per stream)
TF_CUDNN_910 = """\
E0000 00:00:1738697930.202924    7665 cuda_dnn.cc:522] Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.3.0.  CuDNN library needs to have matching major version and equal or higher minor version. If using a binary install, upgrade your CuDNN library.  If building from sources, make sure the library loaded at runtime is compatible with the version specified during compile configuration.
E0000 00:00:1738697930.225439    7665 cuda_dnn.cc:522] Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.3.0.  CuDNN library needs to have matching major version and equal or higher minor version. If using a binary install, upgrade your CuDNN library.  If building from sources, make sure the library loaded at runtime is compatible with the version specified during compile configuration.
"""
# https://github.com/balancap/SSD-Tensorflow/issues/340 (TensorFlow 1.x: a newer cuDNN of another compatibility version)
TF1_CUDNN_NEWER = ("Loaded runtime CuDNN library: 7301 (compatibility version 7300) but source was compiled with 7003 (compatibility version 7000).  "
                   "If using a binary install, upgrade your CuDNN library to match.\n")
# https://github.com/PaddlePaddle/PaddleDetection/issues/3331
PADDLE_CUDNN = ("W0608 17:24:55.806937 14489 device_context.h:360] WARNING: device: 0. The installed Paddle is compiled with CUDNN 7.6, "
                "but CUDNN version in your machine is 7.4, which may cause serious incompatible bug. Please recompile or reinstall Paddle with compatible CUDNN version.\n")
# https://github.com/hollowstrawberry/kohya-colab/issues/94
JAX_CUDA = ("CUDA backend failed to initialize: Found CUDA version 12010, but JAX was built against version 12020, which is newer. The copy of CUDA "
            "that is installed must be at least as new as the version against which JAX was built. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n")


def test_tensorflows_older_cudnn_is_one_error_with_the_versions_and_where_to_look(cli, tmp_path):
    found = triaged(cli, tmp_path, TF_CUDNN_910)
    hit = found["framework-loaded-lib-mismatch"]
    assert hit["severity"] == "error"
    assert "loaded cuDNN 9.1.0, older than the cuDNN 9.3.0 it was built with" in hit["message"]
    assert any("ldconfig -p" in c for c in hit["fix"]["commands"])


def test_a_newer_cudnn_of_another_compatibility_version_is_not_called_older(cli, tmp_path):
    message = triaged(cli, tmp_path, TF1_CUDNN_NEWER)["framework-loaded-lib-mismatch"]["message"]
    assert "loaded cuDNN 7.3.1, not compatible with the cuDNN 7.0.3" in message


def test_paddles_and_jaxs_own_version_checks_name_the_framework_and_the_library(cli, tmp_path):
    assert "PaddlePaddle loaded cuDNN 7.4, older than the cuDNN 7.6" in triaged(cli, tmp_path, PADDLE_CUDNN)["framework-loaded-lib-mismatch"]["message"]
    # JAX writes CUDA as 1000*major + 10*minor: 12010 is 12.1
    assert "JAX loaded CUDA 12.1, older than the CUDA 12.2" in triaged(cli, tmp_path, JAX_CUDA)["framework-loaded-lib-mismatch"]["message"]


def test_cudnn_numbers_read_as_versions_before_and_after_cudnn_9():
    from fwdoctor.triage.rules import _dotted

    assert _dotted("cuDNN", "7005") == "7.0.5" and _dotted("cuDNN", "90100") == "9.1.0" and _dotted("cuDNN", "8.9.7") == "8.9.7"
    assert _dotted("CUDA", "12020") == "12.2" and _dotted("cuSOLVER", "11501") == "11501"


# ---------------------------------------------------------------- ptxas newer than the driver
# https://github.com/jax-ml/jax/issues/19821
XLA_PTXAS_NEWER = ("2024-02-15 14:18:20.201828: W external/xla/xla/service/gpu/nvptx_compiler.cc:744] The NVIDIA driver's CUDA version is 12.2 "
                   "which is older than the ptxas CUDA version (12.3.107). Because the driver is older than the ptxas version, XLA is disabling "
                   "parallel compilation, which may slow down compilation. You should update your NVIDIA driver or use the NVIDIA-provided CUDA "
                   "forward compatibility packages.\n")


def test_a_ptxas_newer_than_the_driver_is_a_warning_whose_fix_pins_the_drivers_cuda(cli, tmp_path):
    hit = triaged(cli, tmp_path, XLA_PTXAS_NEWER)["ptxas-newer-than-driver"]
    assert hit["severity"] == "warning" and "CUDA 12.3.107" in hit["message"] and "CUDA 12.2" in hit["message"]
    assert any("nvidia-cuda-nvcc-cu12==12.2.*" in c for c in hit["fix"]["commands"])


# ---------------------------------------------------------------- a CUDA library not found
# https://github.com/Kaggle/docker-python/issues/1164
TF_DLOPEN = ("2022-05-22 03:31:41.057907: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
             "'libcusolver.so.11'; dlerror: libcusolver.so.11: cannot open shared object file: No such file or directory; LD_LIBRARY_PATH: /usr/local/cuda/lib64\n")
TF_CANNOT_DLOPEN = ("W tensorflow/core/common_runtime/gpu/gpu_device.cc:1956] Cannot dlopen some GPU libraries. Please make sure the missing "
                    "libraries mentioned above are installed properly if you would like to use GPU.\n")
# https://github.com/TheLastBen/fast-stable-diffusion/issues/1580 (the maintainer: "it's just a tenseflow msg, ignore it")
TF_NO_TENSORRT = ("2023-02-12 02:34:13.661201: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could not load "
                  "dynamic library 'libnvinfer_plugin.so.7'; dlerror: libnvinfer_plugin.so.7: cannot open shared object file: No such file "
                  "or directory; LD_LIBRARY_PATH: /usr/lib64-nvidia\n")


def test_a_cuda_library_tensorflow_cannot_load_is_an_error_where_a_gpu_is_meant(cli, tmp_path):
    hit = triaged(cli, tmp_path, TF_DLOPEN + TF_CANNOT_DLOPEN)["cuda-lib-not-found"]
    assert hit["severity"] == "error" and "no libcusolver.so.11" in hit["message"]
    assert any("ldconfig -p | grep libcusolver" in c for c in hit["fix"]["commands"])
    # with no sign of a GPU in the report, TensorFlow's dlerror may be a CPU-only host's
    assert triaged(cli, tmp_path, TF_DLOPEN)["cuda-lib-not-found"]["severity"] == "warning"


def test_tensorrts_optional_library_is_no_finding(cli, tmp_path):
    assert "cuda-lib-not-found" not in triaged(cli, tmp_path, TF_NO_TENSORRT)


# ------------------------------------------------------------- Paddle's kernel for the GPU
# https://github.com/PaddlePaddle/PaddleOCR/issues/4507 (a GTX 760, compute capability 3.0)
PADDLE_OP_NO_KERNEL = ("uniform_random raises an exception class thrust::system::system_error, parallel_for failed: "
                       "cudaErrorNoKernelImageForDevice: no kernel image is available for execution on the device\n")
# https://github.com/PaddlePaddle/Paddle/issues/25846 (a glog stack: Paddle's frames below the CUDA error)
PADDLE_STACK = """\
cudaGetLastError  no kernel image is available for execution on the device errno: 48
*** Check failure stack trace: ***
    @     0x7f0c2636f7ed  google::LogMessage::Fail()
    @     0x7f0c26371b38  google::LogMessage::SendToLog()
    @     0x7f0c2636f2fb  google::LogMessage::Flush()
    @     0x7f0c26372a0e  google::LogMessageFatal::~LogMessageFatal()
    @     0x7f0c2648af21  paddle::platform::CUDADeviceContext::Wait()
"""
# https://github.com/nv-tlabs/SCube/issues/7 (torch: whose kernel it was, the text does not say)
TORCH_NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"


def test_no_kernel_image_in_a_paddle_operator_or_under_paddles_frames_is_paddles_arch(cli, tmp_path):
    for text in (PADDLE_OP_NO_KERNEL, PADDLE_STACK):
        assert triaged(cli, tmp_path, text)["gpu-arch-unsupported-by-framework"]["severity"] == "error"
    assert "gpu-arch-unsupported-by-framework" not in triaged(cli, tmp_path, TORCH_NO_KERNEL)


# https://github.com/PaddlePaddle/Paddle/issues/14625 (Paddle v1's CUDA layer, hl_cuda_device.cc)
PADDLE_V1_DRIVER = ("Tue Nov 27 13:49:06 2018[1,10]<stdout>:F1127 13:49:06.743296 17418 hl_cuda_device.cc:565] Check failed: "
                    "cudaSuccess == cudaStat (0 vs. 35) Cuda Error: CUDA driver version is insufficient for CUDA runtime version\n")
# https://github.com/PaddlePaddle/Paddle/issues/30933 (Paddle 2.0: the path of the check follows on the next line)
PADDLE_DRIVER = """\
    place = core.CUDAPlace(ParallelEnv().dev_id)
OSError: (External)  Cuda error(35), CUDA driver version is insufficient for CUDA runtime version.
  [Advise: This indicates that the installed NVIDIA CUDA driver is older than the CUDA runtime library. This is not a supported configuration.Users should install an updated NVIDIA display driver to allow the application to run.] (at /paddle/paddle/fluid/platform/gpu_info.cc:78)
"""
# https://github.com/mlcommons/inference/issues/54 (torch: which framework's build, its text does not say)
TORCH_DRIVER = ("RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime version at "
                "/pytorch/torch/csrc/cuda/Module.cpp:34\n")


def test_the_runtimes_driver_insufficient_among_paddles_frames_is_paddles_driver_floor(cli, tmp_path):
    for text in (PADDLE_V1_DRIVER, PADDLE_DRIVER):
        hit = triaged(cli, tmp_path, text)["driver-too-old-for-framework"]
        assert "this PaddlePaddle build loads" in hit["message"] and "PaddlePaddle's frames around it" in hit["message"]
    assert "driver-too-old-for-framework" not in triaged(cli, tmp_path, TORCH_DRIVER)


def test_paddles_own_cuda_error_35_is_paddles_driver_floor_without_its_frames(cli, tmp_path):
    # https://github.com/PaddlePaddle/Paddle/issues/50747 (the title alone, Paddle >= 2.4's casing)
    text = "OSError: (External) CUDA error(35), CUDA driver version is insufficient for CUDA runtime version.\n"
    hit = triaged(cli, tmp_path, text)["driver-too-old-for-framework"]
    assert "this PaddlePaddle build loads" in hit["message"]
    # torch's "cuda runtime error (35)" and faiss's "CUDA error 35" are not Paddle's
    faiss = ("Faiss assertion 'err__ == cudaSuccess' failed in int faiss::gpu::getNumDevices() at gpu/utils/DeviceUtils.cu:32; "
             "details: CUDA error 35 CUDA driver version is insufficient for CUDA runtime version\n")
    for other in (TORCH_DRIVER, faiss):
        assert "driver-too-old-for-framework" not in triaged(cli, tmp_path, other)


# https://github.com/PaddlePaddle/PaddleClas/issues/268 (both paddlepaddle and paddlepaddle-gpu installed)
PADDLECLAS_CPU = ("2020-09-08 09:14:59 ERROR: You are using paddlepaddle cpu version! Please try to install paddlepaddle-gpu to run model on GPU.\n")


def test_paddles_refusal_of_the_gpu_is_a_cpu_build_where_a_gpu_is_meant_with_a_paddle_fix(cli, tmp_path):
    hit = triaged(cli, tmp_path, PADDLECLAS_CPU)["framework-cpu-build-on-gpu-host"]
    assert "PaddlePaddle" in hit["message"] and "CPU-only build" in hit["message"]
    assert any("pip install paddlepaddle-gpu" in c for c in hit["fix"]["commands"])
    assert not any("tensorflow" in c for c in hit["fix"]["commands"])


# ------------------------------------------------------------ InfiniBand/RoCE queue pairs
# https://github.com/NVIDIA/nccl/issues/2013 (a rail-optimized RoCE fabric; NCCL_CROSS_NIC=0 fixed it)
NCCL_QP_TIMEOUT = ("[2026-03-13 22:26:02] host-01.example.com:XXXXXX [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed with 110 "
                   "Connection timed out, on dev mlx_x:1, curr state INIT, next state RTR, local GID index 3\n")
# https://github.com/NVIDIA/nccl-tests/issues/185
NCCL_QP_UNREACHABLE = "misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable\n"


def test_a_queue_pair_timeout_points_at_rails_and_gids_and_unreachable_at_the_gid(cli, tmp_path):
    timeout = triaged(cli, tmp_path, NCCL_QP_TIMEOUT)["nccl-ib-connect-failed"]
    assert timeout["severity"] == "error" and "(Connection timed out)" in timeout["message"]
    assert any(c.startswith("export NCCL_CROSS_NIC=0") for c in timeout["fix"]["commands"])
    unreachable = triaged(cli, tmp_path, NCCL_QP_UNREACHABLE)["nccl-ib-connect-failed"]
    assert "GID index" in unreachable["message"]
    assert not any("NCCL_CROSS_NIC" in c for c in unreachable["fix"]["commands"])


# https://github.com/NVIDIA/nccl-tests/issues/287 (NCCL 2.25.1 on two RTX 5090)
NCCL_MAXSHAREDMEM = """\
GENOA-06:4766:4766 [0] NCCL INFO NCCL version 2.25.1+cuda12.8
GENOA-06:4766:4780 [0] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856
GENOA-06:4766:4781 [1] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856
"""


def test_nccls_shared_memory_above_the_devices_is_an_nccl_too_old_for_the_gpu(cli, tmp_path):
    hit = triaged(cli, tmp_path, NCCL_MAXSHAREDMEM)["nccl-gpu-unsupported"]
    assert hit["severity"] == "error" and "82240" in hit["message"] and "79856" in hit["message"]
    assert any("nvidia-nccl-cu12>=2.26" in c for c in hit["fix"]["commands"])


# https://github.com/pytorch/pytorch/issues/37004 (/dev/shm not writable: fixed by chmod, not by size)
NCCL_SHM_DENIED = """\
node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied
node08:27106:27302 [0] NCCL INFO include/shm.h:41 -> 2
node08:27106:27302 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-b7948f403864987a-0-3-0 (size 4460544)
"""


def test_a_shm_segment_denied_by_permission_is_not_called_too_small(cli, tmp_path):
    assert "shm-too-small" not in triaged(cli, tmp_path, NCCL_SHM_DENIED)
    # the segment line alone reads as a size problem, as in NCCL's "No space left" logs (NVIDIA/nccl-tests#166)
    assert "shm-too-small" in triaged(cli, tmp_path, NCCL_SHM_DENIED.split("\n", 2)[2])


# ---------------------------------------------------------- TensorFlow on Windows, in prose
# https://github.com/tensorflow/tensorflow/issues/60269
TF_WIN_PROSE = ("My system is Windows 11. My tensorflow version is 2.12.0. My GPUs are NVIDIA GeForce RTX 2060 and Intel® UHD Graphics 630. "
                "My NVIDIA CUDA version is 12.1. I used cudnn-windows-x86_64-8.8.1.3_cuda12-archive.\n")


def test_prose_naming_tensorflow_and_native_windows_gives_tensorflow_there_and_the_gpu_meant():
    (frag,) = tf_prose.find(Lines.of(TF_WIN_PROSE))
    facts = {f.key: f.value for f in frag.facts}
    (tf,) = facts["frameworks.installed"]
    assert tf["version"] == "2.12.0" and tf["native_windows"] is True and tf["gpu_build"] is None
    assert facts["report.gpu_expected"] == "the report names NVIDIA GeForce RTX 2060"


def test_prose_mentioning_wsl_or_linux_anywhere_is_not_native_windows():
    assert tf_prose.find(Lines.of(TF_WIN_PROSE + "I also tried it in WSL2.\n")) == []
    assert tf_prose.find(Lines.of("My tensorflow version is 2.12.0 on Ubuntu 22.04 under Windows 11\n")) == []


def test_tensorflow_212_on_native_windows_in_prose_is_a_cpu_build_where_a_gpu_is_meant(cli, tmp_path):
    hit = triaged(cli, tmp_path, TF_WIN_PROSE)["framework-cpu-build-on-gpu-host"]
    assert "TensorFlow 2.12.0 is a CPU-only build" in hit["message"] and "NVIDIA GeForce RTX 2060" in hit["message"]


def test_the_kb_says_which_tensorflow_releases_are_cpu_only_on_native_windows(test_kb: KB):
    fw = test_kb.frameworks
    assert fw.gpu_last("tensorflow", "windows").gpu_last == "2.10"
    assert fw.cpu_only_on("tensorflow", "windows", "2.10.1") is False  # compared on major.minor
    assert fw.cpu_only_on("tensorflow", "windows", "2.11.0") is True
    assert fw.cpu_only_on("paddle", "windows", "2.6.0") is None  # no row: not judged
    assert fw.cpu_only_on("jax", "windows", "0.4.30") is True  # "gpu_last: none": JAX never had a native-Windows GPU build


@pytest.mark.parametrize("finding_id", ["framework-loaded-lib-mismatch", "ptxas-newer-than-driver", "cuda-lib-not-found", "nccl-ib-connect-failed",
                                        "nccl-gpu-unsupported"])
def test_each_new_finding_is_explained_in_the_fixed_sections(cli, finding_id):
    out = cli("explain", finding_id).output
    for section in ("What it does", "Why is this bad?", "Example", "Fix"):
        assert section in out, (finding_id, section)
