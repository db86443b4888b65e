"""Issue 26, the containers group: four classes a GPU-container report pastes often, which the
older rows read wrong or not at all.

- a CDI spec the engine is too old to read: toolkit 1.19.1 writes CDI spec v0.7.0, podman before
  5.1 refuses the file ("json: unknown field "additionalGids"") and every device is
  "unresolvable" although the spec names it (cdi-spec-too-new-for-engine, not
  container-gpu-runtime-missing's "no spec names it");
- NVML's "Insufficient Permissions" in a container: SELinux (container_use_devices) or a
  non-root user without the nodes' group (container-gpu-devices-denied);
- torch's "CUDA unknown error - this may be due to an incorrectly set up environment": nvidia_uvm
  not loaded or broken by a suspend/resume (nvidia-uvm-broken), not on WSL;
- a compose GPU reservation with neither count nor device_ids: Docker Compose 2.0-2.29 sends
  Count 0 (container-started-without-gpus; a warning without the compose version).

Each on recorded public text (doctor/kb/errors.yaml's sources), also as pasting mangles it
(tests/pasting.py), beside look-alikes that must stay quiet. The rows' own examples run in
tests/test_triage_corpus.py.
"""

from __future__ import annotations

import pytest

from fwdoctor.model import Severity
from tests.pasting import as_pasted
from tests.triage_run import messages
from tests.triage_run import severities as findings


# ----------------------------------------------------------------------------- CDI spec v0.7.0 under an old podman
# NVIDIA/nvidia-container-toolkit#1865: podman 4.9.3, toolkit 1.19.1, the debug log names the field
NCT_1865 = (
    "podman run --rm --device nvidia.com/gpu=all nvidia/cuda:11.0.3-base-ubuntu20.04 nvidia-smi\n"
    "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all\n"
    "failed to load CDI Spec failed to parse CDI Spec \"/var/run/cdi/nvidia.yaml\": failed to unmarshal CDI Spec: "
    "error unmarshaling JSON: while decoding JSON: json: unknown field \"additionalGids\"\n"
)
# NVIDIA/nvidia-container-toolkit#1860: the debug log alone
NCT_1860 = (
    "The following error was triggered when refreshing the CDI registry: failed to load CDI Spec failed to parse CDI Spec "
    "\"/etc/cdi/nvidia.yaml\": failed to unmarshal CDI Spec: error unmarshaling JSON: while decoding JSON: json: unknown field \"additionalGids\"\n"
)
# NVIDIA/nvidia-container-toolkit#1940 (containers/b34a-ctk-1191-..., development part): apt's podman
# 4.9.3, nvidia-ctk cdi list listing the device, podman calling it unresolvable; no toolkit version line
NCT_1940 = (
    "podman/noble-updates,now 4.9.3+ds1-1ubuntu0.2 arm64 [installed]\n\n"
    "$ nvidia-ctk --debug cdi list\nINFO[0000] Found 3 CDI devices\nnvidia.com/gpu=0\n"
    "nvidia.com/gpu=GPU-d17572cc-10a2-4a90-04a1-4ea64aac04b2\nnvidia.com/gpu=all\n\n"
    "$ podman run -it --rm  --device nvidia.com/gpu=0   --security-opt=label=disable  "
    "nvcr.io/nvidia/cuda-dl-base:26.05-cuda13.2-inference-devel-ubuntu24.04 bash\n"
    "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=0\n"
)
# The same with the toolkit's version as `nvidia-ctk --version` prints it (its format: #146)
NCT_1940_WITH_CTK = NCT_1940 + "$ nvidia-ctk --version\nNVIDIA Container Toolkit CLI version 1.19.1\ncommit: 53b24618a542025b108239fe602e66e912b7d6e2\n"


@pytest.mark.parametrize("text", as_pasted(NCT_1865, NCT_1860, NCT_1940_WITH_CTK))
def test_a_cdi_spec_the_engine_cannot_parse_is_cdi_spec_too_new_for_engine(text, test_kb):
    found = findings(text, test_kb)
    assert found.get("cdi-spec-too-new-for-engine") is Severity.ERROR
    assert "container-gpu-runtime-missing" not in found  # the spec is there: nothing is missing


@pytest.mark.parametrize("text", as_pasted(NCT_1940))
def test_old_podman_and_a_listed_device_without_the_toolkit_version_is_a_warning(text, test_kb):
    found = messages(text, test_kb)
    assert "podman 4.9.3" in found["cdi-spec-too-new-for-engine"]
    assert "nvidia-ctk --version" in found["cdi-spec-too-new-for-engine"]
    assert findings(text, test_kb)["cdi-spec-too-new-for-engine"] is Severity.WARNING
    assert "container-gpu-runtime-missing" not in found


@pytest.mark.parametrize("text", [
    # NVIDIA/nvidia-container-toolkit#146: podman 4.4.1 with toolkit 1.14.3 writes a spec podman reads: not this
    "Podman version 4.4.1\nNVIDIA Container Toolkit CLI version 1.14.3\n"
    "Error: error setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all\n",
    # podman 5.7 with toolkit 1.19.1 works (#1940, henry118): an unresolvable device there is no version skew
    "podman version 5.7.0\nNVIDIA Container Toolkit CLI version 1.19.1\nError: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all\n",
    # an old podman with no spec listed and no toolkit version: still the missing spec
    "podman version 4.9.3\nError: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all\n",
])
def test_unresolvable_cdi_without_the_version_skew_stays_container_gpu_runtime_missing(text, test_kb):
    found = findings(text, test_kb)
    assert "cdi-spec-too-new-for-engine" not in found
    assert found.get("container-gpu-runtime-missing") is Severity.ERROR


def test_a_podman_version_is_read_from_apt_dpkg_rpm_and_the_cli():
    from fwdoctor.triage.errors import _CTK_VERSION, _PODMAN_VERSION

    def first(pattern, line):
        found = pattern.search(line)
        return next(g for g in found.groups() if g) if found else None

    assert first(_PODMAN_VERSION, "podman/noble-updates,now 4.9.3+ds1-1ubuntu0.2 arm64 [installed]") == "4.9.3"
    assert first(_PODMAN_VERSION, "podman version 5.7.0") == "5.7.0"
    assert first(_PODMAN_VERSION, "ii  podman         4.9.3+ds1-1ubuntu0.2 amd64  tool to manage pods") == "4.9.3"
    assert first(_PODMAN_VERSION, "podman-4.9.4-1.fc39.x86_64") == "4.9.4"
    assert first(_PODMAN_VERSION, "podman-compose version 1.0.6") is None
    assert first(_CTK_VERSION, "nvidia-container-toolkit/unknown,now 1.19.1-1 amd64 [installed]") == "1.19.1"
    assert first(_CTK_VERSION, "nvidia-container-toolkit is already the newest version (1.14.3-1).") == "1.14.3"
    assert first(_CTK_VERSION, "nvidia-container-toolkit-1.19.1-1.x86_64") == "1.19.1"
    assert first(_CTK_VERSION, "nvidia-container-toolkit-base-1.19.1-1.x86_64") is None


# ----------------------------------------------------------------------------- NVML: Insufficient Permissions
# NVIDIA/nvidia-container-toolkit#33 (containers/b34a-ctk-fedora36-..., development part): Fedora 36, moby-engine, SELinux
NCT_33 = (
    "~ ❯❯❯ docker run --rm --gpus all --runtime nvidia nvidia/cuda:11.0.3-base-ubuntu20.04 nvidia-smi\n"
    "Failed to initialize NVML: Insufficient Permissions\n"
)
# NVIDIA/nvidia-container-toolkit#210: podman with CDI
NCT_210 = "podman run --rm --device nvidia.com/gpu=all ubuntu nvidia-smi -L\nFailed to initialize NVML: Insufficient Permissions\n"
# NVIDIA/nvidia-docker#676: RHEL 7.4, the container named in prose
NVDOCKER_676 = ("I run\n`docker run -ti --rm nvidia/cuda-ppc64le:9.1-base-centos7 bash`\n"
                "Then `nvidia-smi`  I get the following error\n`Failed to initialize NVML: Insufficient Permissions`\n")


@pytest.mark.parametrize("text", as_pasted(NCT_33, NCT_210, NVDOCKER_676))
def test_nvml_insufficient_permissions_in_a_container_is_container_gpu_devices_denied(text, test_kb):
    found = messages(text, test_kb)
    assert "container_use_devices" in found["container-gpu-devices-denied"]
    assert findings(text, test_kb)["container-gpu-devices-denied"] is Severity.ERROR


@pytest.mark.parametrize("text", [
    # on a host, as a user the device nodes' modes keep out: no container, another cause
    "$ nvidia-smi\nFailed to initialize NVML: Insufficient Permissions\n",
    # the toolkit's hook on the host (NVIDIA/nvidia-docker#1523): nvidia-container-cli's own wording
    "nvidia-container-cli: initialization error: nvml error: insufficient permissions: unknown.\n",
    # the container lost its cgroup (container-gpu-access-lost's text)
    "docker exec -it app nvidia-smi\nFailed to initialize NVML: Unknown Error\n",
])
def test_look_alikes_are_not_container_gpu_devices_denied(text, test_kb):
    assert "container-gpu-devices-denied" not in findings(text, test_kb)


# ----------------------------------------------------------------------------- CUDA unknown error: nvidia_uvm
# NixOS/nixpkgs#348769: after the laptop woke from sleep
NIXPKGS_348769 = (
    "> import torch; torch.cuda.is_available()\n"
    "pip_packages/lib/python3.11/site-packages/torch/cuda/__init__.py:128: UserWarning: CUDA initialization: CUDA unknown error - "
    "this may be due to an incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. "
    "Setting the available devices to be zero. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n"
    "  return torch._C._cuda_getDeviceCount() > 0\nFalse\n"
)
# Stability-AI/StableSwarmUI#153 (containers/b34a-swarmui-..., development part): ComfyUI in docker after sleep
SWARMUI_153 = (
    "ComfyUI error:     torch._C._cuda_init()\n"
    "ComfyUI error: RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env "
    "variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.\n"
)


@pytest.mark.parametrize("text", as_pasted(NIXPKGS_348769, SWARMUI_153))
def test_torch_cuda_unknown_error_is_nvidia_uvm_broken(text, test_kb):
    found = messages(text, test_kb)
    assert "nvidia_uvm" in found["nvidia-uvm-broken"]
    assert findings(text, test_kb)["nvidia-uvm-broken"] is Severity.WARNING  # other causes give cuInit the same error


@pytest.mark.parametrize("text", [
    # WSL has no nvidia_uvm module: not this cause
    "Running Ubuntu 22.04 on WSL2\nRuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, "
    "e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.\n",
    # other CUDA errors torch raises
    "RuntimeError: CUDA error: unspecified launch failure\n",
    "RuntimeError: No CUDA GPUs are available\n",
])
def test_look_alikes_are_not_nvidia_uvm_broken(text, test_kb):
    assert "nvidia-uvm-broken" not in findings(text, test_kb)


# ----------------------------------------------------------------------------- compose: a GPU reservation without count
# docker/docs#20588 (containers/b34a-compose-..., development part): count: all commented out
DOCS_20588 = (
    "services:\n  server:\n    image: ghcr.io/matatonic/openedai-speech\n    container_name: openedai-speech\n"
    "    restart: unless-stopped\n    deploy:\n      resources:\n        reservations:\n          devices:\n"
    "            - driver: nvidia\n#              count: all\n              capabilities: [gpu]\n\nvolumes:\n  tts-voices:\n"
)
# docker/compose#6691's first GPU reservation (capabilities as a block list), and Docker Compose 2.29.7 (nv-morpheus/Morpheus#2099)
COMPOSE_6691 = "    deploy:\n      resources:\n        reservations:\n          devices:\n            - capabilities:\n              - gpu\n"
COMPOSE_2297 = "$ docker compose version\nDocker Compose version v2.29.7\n" + COMPOSE_6691


@pytest.mark.parametrize("text", as_pasted(DOCS_20588, COMPOSE_6691))
def test_a_compose_gpu_reservation_without_count_warns_without_the_compose_version(text, test_kb):
    found = messages(text, test_kb)
    assert "count" in found["container-started-without-gpus"]
    assert findings(text, test_kb)["container-started-without-gpus"] is Severity.WARNING


@pytest.mark.parametrize("text", as_pasted(COMPOSE_2297))
def test_a_compose_gpu_reservation_without_count_under_compose_2_29_is_an_error(text, test_kb):
    found = messages(text, test_kb)
    assert "2.29.7" in found["container-started-without-gpus"]
    assert findings(text, test_kb)["container-started-without-gpus"] is Severity.ERROR


@pytest.mark.parametrize("text", [
    # count: all, count: 1, device_ids: the GPUs are asked for
    DOCS_20588.replace("#              count: all", "              count: all"),
    "        reservations:\n          devices:\n            - driver: nvidia\n              count: 1\n              capabilities: [gpu]\n",
    "        reservations:\n          devices:\n          - driver: nvidia\n            device_ids: ['0', '3']\n            capabilities: [gpu]\n",
    # compose 2.30+ reads a missing count as all (compose-go 2.3.0), and 1.x passed it as all
    "Docker Compose version v2.30.3\n" + COMPOSE_6691,
    "docker-compose version 1.29.2, build 5becea4c\n" + COMPOSE_6691,
    # a reservation of memory only, and a device that is no GPU
    "    deploy:\n      resources:\n        reservations:\n          memory: 4G\n",
    "        reservations:\n          devices:\n            - driver: custom\n              capabilities: [tpu]\n",
])
def test_look_alikes_are_not_a_reservation_without_count(text, test_kb):
    assert "container-started-without-gpus" not in findings(text, test_kb)
