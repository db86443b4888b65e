"""Issue 26, the containers group: a container started without its GPUs, read from the command
that started it and what ran in it (doctor/kb/errors.yaml, container-run-without-gpus); and the
toolkit's hook timing out on a driver kept in no persistence (nvidia-container-cli-driver-timeout).

A `docker run IMAGE` (podman, nerdctl; singularity/apptainer without --nv) that asks for no GPU,
then, in that container, CUDA finding no device, no driver, no libcuda.so.1 or no nvidia-smi, or
torch.cuda.is_available() answering False: the container was started without the GPUs
(container-started-without-gpus), not a CUDA_VISIBLE_DEVICES that hides them. A command that
asks for GPUs (--gpus, --runtime=nvidia, NVIDIA_VISIBLE_DEVICES, a CDI device, device nodes given
by hand, singularity's --nv), `docker exec` into a container started elsewhere, or a daemon whose
default runtime is nvidia says nothing here.

Each on recorded public text (the row's sources), also as pasting mangles it (tests/pasting.py).
"""

from __future__ import annotations

import pytest

from fwdoctor.model import Severity
from tests.pasting import as_pasted
from tests.triage_run import messages, severities


# vjrantal/iot-edge-darknet-module#6 (Jetson TX2): the image run with no GPU handed over
DARKNET_6 = (
    "nvidia@tegra-ubuntu:~/Projects/iot-edge-darknet-module$ docker run vjrantal/iot-edge-darknet-module:latest\n"
    "layer     filters    size              input                output\n"
    "    0 python: ./src/cuda.c:36: check_error: Assertion `0' failed.\n"
    "CUDA Error: no CUDA-capable device is detected\n"
)
# vjrantal/iot-edge-darknet-module#8: another reporter, the same command in prose
DARKNET_8 = (
    "I am getting following error after -$ sudo docker run vjrantal/iot-edge-darknet-module\n"
    "\n"
    "`layer     filters    size              input                output\n"
    "    0 python: ./src/cuda.c:36: check_error: Assertion '0' failed.\n"
    "CUDA Error: no CUDA-capable device is detected`\n"
)
# open-edge-platform/anomalib#584: the output first, then the template's "To Reproduce"
ANOMALIB_584 = (
    "```yaml\n"
    "root@00921839c781:/anomalib# nvidia-smi\n"
    "bash: nvidia-smi: command not found\n"
    "```\n"
    "```python\n"
    "root@00921839c781:/anomalib# python\n"
    ">>> import torch\n"
    ">>> torch.cuda.is_available()\n"
    ">>> Flase\n"
    "```\n"
    "\n"
    "**To Reproduce**\n"
    "\n"
    "1. build image: `docker build -t test .`\n"
    "2. run it: `docker run -it test`\n"
)


@pytest.mark.parametrize("text", as_pasted(DARKNET_6, DARKNET_8))
def test_no_device_after_a_run_without_gpus_is_container_started_without_gpus(text, test_kb):
    found = messages(text, test_kb)
    assert "container-started-without-gpus" in found, found
    assert "docker run vjrantal/iot-edge-darknet-module" in found["container-started-without-gpus"]
    assert "no CUDA-capable device is detected" in found["container-started-without-gpus"]
    # the variable is not the cause where the container has no GPU at all
    assert "cuda-visible-devices-hides-gpus" not in found


@pytest.mark.parametrize("text", as_pasted(ANOMALIB_584))
def test_the_run_command_after_the_output_it_printed(text, test_kb):
    found = messages(text, test_kb)
    assert "container-started-without-gpus" in found, found


# triton-inference-server/tensorrtllm_backend#336: the GPU was asked for; something else hid it
TRTLLM_336 = (
    "´docker run --rm -it --gpus='\"device=0\"' --network host --ulimit memlock=-1 --ulimit stack=134217728 --shm-size=4g "
    "-v $(pwd)/triton-repository:/tensorrtllm_backend triton_trt_llm bash´\n"
    "runtime error in cudaGetDeviceCount(&deviceCount): no CUDA-capable device is detected\n"
)
# NVIDIA/nvidia-docker#878 (Jetson TX2, tx2-docker): the device nodes given by hand
TX2_DOCKER_878 = (
    "docker run -e LD_LIBRARY_PATH=:/usr/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu/tegra:/usr/local/cuda/lib64 --net=host "
    "-v /usr/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu -v /usr/local/cuda/lib64:/usr/local/cuda/lib64  --device=/dev/nvhost-ctrl "
    "--device=/dev/nvhost-ctrl-gpu --device=/dev/nvhost-prof-gpu --device=/dev/nvmap --device=/dev/nvhost-gpu --device=/dev/nvhost-as-gpu "
    "openhorizon/aarch64-tx2-cudabase\n"
    "\n"
    "cudaGetDeviceCount returned 38\n"
    "-> no CUDA-capable device is detected\n"
)
# apptainer/singularity#1829: --nv given; singularity's library list is the problem
SINGULARITY_1829 = (
    "$ singularity exec --nv test.img nvidia-smi\n"
    "/.singularity.d/actions/exec: line 9: exec: nvidia-smi: not found\n"
)
# Look-alikes of the shape: `docker exec` into a running container; a daemon whose default runtime is nvidia
EXEC_INTO = (
    "$ docker exec -it trainer python -c 'import torch; print(torch.cuda.is_available())'\n"
    "False\n"
)
DEFAULT_RUNTIME = (
    "$ docker info | grep -i runtime\n"
    " Runtimes: io.containerd.runc.v2 nvidia runc\n"
    " Default Runtime: nvidia\n"
    "$ docker run -it --rm myimage python -c 'import torch; print(torch.cuda.is_available())'\n"
    "False\n"
)
# A healthy run: asked for the GPUs and found them
HEALTHY = (
    "$ docker run --rm --gpus all pytorch/pytorch python -c 'import torch; print(torch.cuda.is_available())'\n"
    "True\n"
)


@pytest.mark.parametrize("text", as_pasted(TRTLLM_336, TX2_DOCKER_878, SINGULARITY_1829, EXEC_INTO, DEFAULT_RUNTIME, HEALTHY))
def test_a_container_given_its_gpus_or_not_started_here_is_not_this(text, test_kb):
    assert "container-started-without-gpus" not in messages(text, test_kb)


def test_singularity_without_nv_names_nv(test_kb):
    text = (
        "$ singularity exec pytorch.sif python -c 'import torch'\n"
        "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory\n"
    )
    found = messages(text, test_kb)
    assert "--nv" in found["container-started-without-gpus"]


# ----------------------------------------------------------------------------- the hook's driver RPC timing out
# NVIDIA/nvidia-docker#1648 (klueska: no nvidia-persistenced, GPUs not in persistence mode)
NVDOCKER_1648 = (
    "docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start "
    "container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: "
    "Auto-detected mode as 'legacy'\n"
    "nvidia-container-cli: initialization error: driver rpc error: timed out: unknown.\n"
)
# NVIDIA/nvidia-docker#628 (16 GPUs; flx42: run nvidia-persistenced): the older wording, escaped by Docker
NVDOCKER_628 = (
    "root@ip-10-206-45-133:/home/ubuntu# nvidia-docker run -it b0390e3560b4 bash\n"
    "docker: Error response from daemon: OCI runtime create failed: container_linux.go:296: starting container process caused "
    "\"process_linux.go:398: container init caused \\\"process_linux.go:381: running prestart hook 1 caused \\\\\\\"error running hook: "
    "exit status 1, stdout: , stderr: exec command: [/usr/bin/nvidia-container-cli --load-kmods configure --ldconfig=@/sbin/ldconfig.real "
    "--device=all --utility --pid=16242 /var/lib/docker/overlay2/c2b56038bde0fb7e5ee3864ee52c18da583727fbf0f01530c5359488cde53ae8/merged]"
    "\\\\\\\\nnvidia-container-cli: initialization error: driver error: timed out\\\\\\\\n\\\\\\\"\\\"\": unknown.\n"
)


@pytest.mark.parametrize("text", as_pasted(NVDOCKER_1648, NVDOCKER_628))
def test_the_hooks_driver_rpc_timing_out_is_gpu_persistence_off(text, test_kb):
    found = severities(text, test_kb)
    assert found.get("gpu-persistence-off") is Severity.ERROR, found
    assert "nvidia-persistenced" in messages(text, test_kb)["gpu-persistence-off"]


# NVIDIA/nvidia-container-toolkit#2102: nvcgo's own RPC (a Go library's start-up under load), not the driver's;
# NVIDIA/nvidia-docker#1252: the driver refused the request, it did not time out
NVCGO_2102 = "nvidia-container-cli: initialization error: nvcgo rpc error: timed out\n"
NVDOCKER_1252 = (
    "docker: Error response from daemon: OCI runtime create failed: container_linux.go:349: starting container process caused "
    "\"process_linux.go:449: container init caused \\\"process_linux.go:432: running prestart hook 1 caused \\\\\\\"error running hook: "
    "exit status 1, stdout: , stderr: nvidia-container-cli: initialization error: driver error: failed to process request\\\\\\\\n\\\\\\\"\\\"\": unknown.\n"
)


@pytest.mark.parametrize("text", as_pasted(NVCGO_2102, NVDOCKER_1252))
def test_other_hook_failures_are_not_persistence(text, test_kb):
    assert "gpu-persistence-off" not in messages(text, test_kb)
