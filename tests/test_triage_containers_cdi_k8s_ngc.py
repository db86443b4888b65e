"""Issue 26, the containers group: the texts of GPU containers started outside Docker's --gpus
path and of NVIDIA's own images, which a report pastes more often than any environment dump.

- a CDI engine's "unresolvable CDI devices nvidia.com/gpu=all" (podman, Docker 25+, the NVIDIA
  runtime in cdi mode): no CDI spec names the GPU (container-gpu-runtime-missing);
- the Kubernetes device plugin's "If this is a GPU node, did you set the docker default runtime
  to `nvidia`?" / "did you configure the NVIDIA Container Toolkit?" and "Incompatible strategy
  detected auto": its pod was not run through the NVIDIA runtime (container-gpu-runtime-missing);
- an NGC image's entrypoint "This container was built for NVIDIA Driver Release 535.86 or later,
  but version 510.85.02 was detected and compatibility mode is UNAVAILABLE"
  (driver-too-old-for-image, with the host driver's version);
- its "WARNING: The NVIDIA Driver was not detected." after a `docker run` that asked for no GPU
  (container-started-without-gpus); after one that did, it says nothing.

Each on recorded public text (doctor/kb/errors.yaml's sources), also as pasting mangles it
(tests/pasting.py), beside look-alikes that must stay quiet. The rows' own examples run in
tests/test_triage_corpus.py.
"""

from __future__ import annotations

import pytest

from fwdoctor.model import Severity
from fwdoctor.triage.judge import run
from tests.pasting import as_pasted
from tests.triage_run import messages
from tests.triage_run import severities as findings


# ----------------------------------------------------------------------------- CDI
# warmshao/FasterLivePortrait#116: podman behind the docker CLI
FASTERLIVEPORTRAIT_116 = (
    "docker run -it --gpus=all --name faster_liveportrait_3 -v ../docker_faster_live_portrait:/root/FasterLivePortrait "
    "--restart=always -p 9870:9870 shaoguo/faster_liveportrait:v3 /bin/bash\n"
    "Emulate Docker CLI using podman. Create /etc/containers/nodocker to quiet msg.\n"
    "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all\n"
)
# devnen/Chatterbox-TTS-Server#5: Docker's own CDI injection under compose
CHATTERBOX_5 = (
    "[+] Running 1/2\n"
    " ✔ chatterbox-tts-server                                    Built          0.0s\n"
    " ⠋ Container chatterbox-tts-server-chatterbox-tts-server-1  Starting       0.0s\n"
    "Error response from daemon: CDI device injection failed: unresolvable CDI devices nvidia.com/gpu=all\n"
)
# VERT-sh/vertd#39: the NVIDIA runtime's automatic CDI request (NVIDIA/nvidia-container-toolkit#1537)
VERTD_39 = (
    "`Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: "
    "could not apply required modification to OCI specification: error modifying OCI spec: failed to inject CDI devices: "
    "unresolvable CDI devices runtime.nvidia.com/gpu=all`\n"
)


@pytest.mark.parametrize("text", as_pasted(FASTERLIVEPORTRAIT_116, CHATTERBOX_5, VERTD_39))
def test_an_unresolvable_nvidia_cdi_device_is_container_gpu_runtime_missing(text, test_kb):
    found = messages(text, test_kb)
    assert "container-gpu-runtime-missing" in found
    assert "nvidia.com/gpu=all" in found["container-gpu-runtime-missing"]
    assert "CDI" in found["container-gpu-runtime-missing"]


@pytest.mark.parametrize("text", [
    # nvidia-ctk cdi list on a host whose spec is there (NVIDIA/nvidia-container-toolkit#146)
    "$ sudo nvidia-ctk cdi list\nINFO[0000] Found 2 CDI devices\nnvidia.com/gpu=0\nnvidia.com/gpu=all\n",
    # podman run --device nvidia.com/gpu=all that worked
    "$ podman run --rm --device nvidia.com/gpu=all ubuntu nvidia-smi -L\nGPU 0: NVIDIA GeForce RTX 2060 (UUID: GPU-2f68f999-7b41-e64a-3709-0c8c4fa756c0)\n",
    # another CDI error: a device node the spec names is gone (NVIDIA/nvidia-container-toolkit#885), not a missing spec
    "Error: setting up CDI devices: failed to inject devices: failed to stat CDI host device \"/dev/dri/renderD129\": no such file or directory\n",
    # an unresolvable device of another vendor
    "Error: setting up CDI devices: unresolvable CDI devices amd.com/gpu=all\n",
])
def test_cdi_look_alikes_raise_no_runtime_finding(text, test_kb):
    assert "container-gpu-runtime-missing" not in findings(text, test_kb)


# ----------------------------------------------------------------------------- Kubernetes
# NVIDIA/k8s-device-plugin#182 (before 0.15)
K8SDP_182 = (
    "$ kubectl -n kube-system logs nvidia-device-plugin-daemonset-sbqjz\n"
    "2020/10/14 18:04:53 Loading NVML\n"
    "2020/10/14 18:04:53 Failed to initialize NVML: could not load NVML library.\n"
    "2020/10/14 18:04:53 If this is a GPU node, did you set the docker default runtime to `nvidia`?\n"
    "2020/10/14 18:04:53 You can check the prerequisites at: https://github.com/NVIDIA/k8s-device-plugin#prerequisites\n"
)
# NVIDIA/k8s-device-plugin#303: the hint with straight quotes
K8SDP_303 = (
    "2022/05/13 23:09:23 Failed to initialize NVML: could not load NVML library.\n"
    "2022/05/13 23:09:23 If this is a GPU node, did you set the docker default runtime to 'nvidia'?\n"
)
# NVIDIA/k8s-device-plugin#444: containerd's log prefix
K8SDP_444 = (
    "2023-10-19T11:11:54.957723331+08:00 stderr F 2023/10/19 03:11:54 Failed to initialize NVML: could not load NVML library.\n"
    "2023-10-19T11:11:54.957728922+08:00 stderr F 2023/10/19 03:11:54 If this is a GPU node, did you set the docker default runtime to `nvidia`?\n"
)
# NVIDIA/k8s-device-plugin#1220 (0.17.1)
K8SDP_1220 = (
    "I0506 17:45:45.421854       1 main.go:356] Retrieving plugins.\n"
    "E0506 17:45:45.421956       1 factory.go:112] Incompatible strategy detected auto\n"
    "E0506 17:45:45.421965       1 factory.go:113] If this is a GPU node, did you configure the NVIDIA Container Toolkit?\n"
    "E0506 17:45:45.421969       1 factory.go:114] You can check the prerequisites at: https://github.com/NVIDIA/k8s-device-plugin#prerequisites\n"
    "E0506 17:45:45.442750       1 main.go:173] error starting plugins: error getting plugins: unable to create plugins: "
    "failed to construct resource managers: invalid device discovery strategy\n"
)


@pytest.mark.parametrize("text", as_pasted(K8SDP_182, K8SDP_303, K8SDP_444, K8SDP_1220))
def test_the_device_plugins_runtime_hint_is_container_gpu_runtime_missing(text, test_kb):
    found = messages(text, test_kb)
    assert "container-gpu-runtime-missing" in found
    assert "device plugin" in found["container-gpu-runtime-missing"]


@pytest.mark.parametrize("text", [
    # a device plugin that found its GPU
    "I0121 12:04:24.666347       1 server.go:165] Starting GRPC server for 'nvidia.com/gpu'\n"
    "I0121 12:04:24.667061       1 server.go:117] Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock\n"
    "I0121 12:04:24.669542       1 server.go:125] Registered device plugin for 'nvidia.com/gpu' with Kubelet\n",
    # the hint's other half alone (the scheduler's "Insufficient nvidia.com/gpu" alone is a warning
    # now, an error beside a node that lists no GPU: tests/test_triage_containers_toolkit_install.py)
    "If this is not a GPU node, you should set up a toleration or nodeSelector to only deploy this plugin on GPU nodes\n",
])
def test_device_plugin_look_alikes_raise_nothing(text, test_kb):
    assert "container-gpu-runtime-missing" not in findings(text, test_kb)


# ----------------------------------------------------------------------------- NGC images
# NVIDIA/nvidia-docker#1479 (nvcr.io/nvidia/tensorrt:20.07.1-py3)
NVDOCKER_1479 = (
    "ERROR: This container was built for NVIDIA Driver Release 450.51 or later, but\n"
    "       version 440.33.01 was detected and compatibility mode is UNAVAILABLE.\n"
    "\n"
    "       [[CUDA Driver UNAVAILABLE (cuInit(0) returned 804)]]\n"
)
# NVIDIA/TensorRT-LLM#23
TRTLLM_23 = (
    "ERROR: This container was built for NVIDIA Driver Release 535.86 or later, but\n"
    "       version 510.85.02 was detected and compatibility mode is UNAVAILABLE.\n"
)
# hiyouga/LlamaFactory#5962: retyped on one line, "butversion"
LLAMAFACTORY_5962 = "This container was built for NVIDIA Driver Release 545.23 or later, butversion 535.104.05 was detected and compatibility mode is UNAVAILABLE\n"
# omarabid59/yolov8-triton#6
YOLOV8TRITON_6 = (
    "When i try to run this repo, i get a error like:\n"
    "ERROR: This container was built for NVIDIA Driver Release 525.85 or later, but\n"
    "       version 470.199.02 was detected and compatibility mode is UNAVAILABLE.\n"
)


@pytest.mark.parametrize(("text", "needed", "driver"), [
    (form, needed, driver)
    for text, needed, driver in ((NVDOCKER_1479, "450.51", "440.33.01"), (TRTLLM_23, "535.86", "510.85.02"),
                                 (LLAMAFACTORY_5962, "545.23", "535.104.05"), (YOLOV8TRITON_6, "525.85", "470.199.02"))
    for form in as_pasted(text)
])
def test_an_ngc_images_driver_release_error_is_driver_too_old_for_image(text, needed, driver, test_kb):
    result = run(text, test_kb).report
    found = {f.id: f for f in result.findings}
    assert found["driver-too-old-for-image"].severity is Severity.ERROR
    assert needed in found["driver-too-old-for-image"].message
    assert driver in found["driver-too-old-for-image"].message


@pytest.mark.parametrize("text", [
    # the entrypoint's other outcomes (52-gpu-driver-version-check.sh): compatibility applies
    "NOTE: CUDA Forward Compatibility mode ENABLED.\n"
    "  Using CUDA 12.2 driver version 535.86.10 with kernel driver version 470.199.02.\n"
    "  See https://docs.nvidia.com/deploy/cuda-compatibility/ for details.\n",
    "WARNING: CUDA Minor Version Compatibility mode ENABLED.\n"
    "  Using driver version 525.85.12 which has support for CUDA 12.0.  This container\n"
    "  was built with CUDA 12.1 and will be run in Minor Version Compatibility mode.\n",
    "NOTE: Legacy NVIDIA Driver detected.  Compatibility mode ENABLED.\n",
    # a healthy banner
    "=============\n== PyTorch ==\n=============\n\nNVIDIA Release 23.10 (build 71422337)\nPyTorch Version 2.1.0a0+32f93b1\n",
])
def test_ngc_banner_look_alikes_raise_no_error(text, test_kb):
    assert Severity.ERROR not in findings(text, test_kb).values()


# prs-eth/PanopticSegForLargeScalePointCloud#20: `docker run <image_name>`, no --gpus
PANOPTICSEG_20 = (
    "$ docker run <image_name>\n"
    "\n"
    "==========\n"
    "== CUDA ==\n"
    "==========\n"
    "\n"
    "CUDA Version 11.1.1\n"
    "\n"
    "Container image Copyright (c) 2016-2023, NVIDIA CORPORATION & AFFILIATES. All rights reserved.\n"
    "\n"
    "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"
    "   Use the NVIDIA Container Toolkit to start this container with GPU support; see\n"
    "   https://docs.nvidia.com/datacenter/cloud-native/ .\n"
)
# NVIDIA/nvidia-docker#1071: the older wording, and the thread's fix (--gpus all) after it
NVDOCKER_1071 = (
    "With the last upgrades I have the same problem on 5/5 machines. \n"
    "`WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"
    "   Use 'nvidia-docker run' to start this container; see\n"
    "   https://github.com/NVIDIA/nvidia-docker/wiki/nvidia-docker`\n"
    "\n"
    "Possible walkaround:\n"
    "\n"
    "Add `--gpus all`:\n"
    "\n"
    "```\n"
    "docker run --gpus all -it --rm  nvcr.io/nvidia/tensorflow:19.08-py3\n"
    "```\n"
)


@pytest.mark.parametrize("text", as_pasted(PANOPTICSEG_20, NVDOCKER_1071))
def test_ngc_driver_not_detected_after_a_run_without_gpus_is_container_started_without_gpus(text, test_kb):
    assert findings(text, test_kb).get("container-started-without-gpus") is Severity.ERROR


# NVIDIA/nvidia-docker#1548: --gpus all asked, old images printed the warning on WSL2 anyway
NVDOCKER_1548 = (
    "➜ docker run --gpus all --rm --shm-size=1g --ulimit memlock=-1 --ulimit stack=67108864 nvcr.io/nvidia/tensorflow:20.03-tf2-py3 nvidia-smi\n"
    "\n"
    "================\n"
    "== TensorFlow ==\n"
    "================\n"
    "\n"
    "NVIDIA Release 20.03-tf2 (build 11026100)\n"
    "TensorFlow Version 2.1.0\n"
    "\n"
    "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"
    "   Use 'nvidia-docker run' to start this container; see\n"
    "   https://github.com/NVIDIA/nvidia-docker/wiki/nvidia-docker .\n"
)


@pytest.mark.parametrize("text", as_pasted(NVDOCKER_1548,
                                           NVDOCKER_1548.replace("docker run --gpus all", "podman run --device nvidia.com/gpu=all"),
                                           NVDOCKER_1548.replace("docker run --gpus all", "docker run --runtime=nvidia")))
def test_ngc_driver_not_detected_after_a_run_that_asked_for_gpus_is_not_started_without_gpus(text, test_kb):
    assert "container-started-without-gpus" not in findings(text, test_kb)


# a compose service that reserves the GPU (VERT-sh/vertd#39's compose file) and the banner in its log:
# the GPU was asked for in the file, not on the command line
COMPOSE_ASKS = (
    "services:\n"
    "  vertd:\n"
    "    image: ghcr.io/vert-sh/vertd:latest\n"
    "    deploy:\n"
    "      resources:\n"
    "        reservations:\n"
    "          devices:\n"
    "            - driver: nvidia\n"
    "              count: all\n"
    "              capabilities: [ gpu ]\n"
    "\n"
    "$ docker compose up\n"
    "vertd-1  | WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"
)


@pytest.mark.parametrize("text", as_pasted(COMPOSE_ASKS, COMPOSE_ASKS.replace("    deploy:\n      resources:\n        reservations:\n"
                                                                             "          devices:\n            - driver: nvidia\n"
                                                                             "              count: all\n              capabilities: [ gpu ]\n",
                                                                             "    runtime: nvidia\n")))
def test_ngc_driver_not_detected_under_a_compose_file_that_asks_for_gpus_is_not_started_without_gpus(text, test_kb):
    assert "container-started-without-gpus" not in findings(text, test_kb)
