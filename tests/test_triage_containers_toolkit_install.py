"""Issue 26, the containers group: two classes of a broken NVIDIA Container Toolkit install that
GPU-container reports paste often and triage did not read at all (surveyed 2026-12 in
NVIDIA/nvidia-docker, libnvidia-container and the projects that ship Docker images).

- nvidia-container-cli's "container error: cgroup subsystem devices not found": a
  libnvidia-container before 1.8.0 on a cgroup v2 host (Debian 11, Fedora 31+, Arch, NixOS,
  Ubuntu 21.10+), which looks for the v1 devices controller (container-toolkit-known-bug; the
  release floor is a row of doctor/kb/docker.yaml toolkit_regressions);
- an NVIDIA runtime binary dockerd or runc is told to run but that is not installed:
  `exec: "nvidia-container-runtime": executable file not found in $PATH`, the EOL
  nvidia-container-runtime-hook, `fork/exec /usr/bin/nvidia-container-runtime: no such file`
  (container-gpu-runtime-missing).

Each on recorded public text (doctor/kb/errors.yaml's sources), also as pasting mangles it
(tests/pasting.py), beside look-alikes that must stay quiet. The rows' own examples run in
tests/test_triage_corpus.py.
"""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from fwdoctor.model import Severity
from tests.pasting import as_pasted
from tests.triage_run import messages
from tests.triage_run import severities as findings


# ----------------------------------------------------------------------------- cgroup v2, libnvidia-container < 1.8
# NVIDIA/nvidia-docker#1447 (Debian testing, libnvidia-container 1.3.x): the command and Docker's refusal
NVDOCKER_1447 = (
    "$ docker run --rm --gpus all nvidia/cuda:11.0-base-ubuntu20.04 nvidia-smi\n"
    "docker: Error response from daemon: OCI runtime create failed: container_linux.go:370: starting container process caused: "
    "process_linux.go:459: container init caused: Running hook #0:: error running hook: exit status 1, stdout: , stderr: "
    "nvidia-container-cli: container error: cgroup subsystem devices not found: unknown.\n"
)
# NixOS/nixpkgs#127146: nvidia-docker on NixOS's default cgroup v2
NIXPKGS_127146 = (
    "$ nvidia-docker run -it -p 3000:3000 mycroft/mimic2:gpu\n\n"
    "docker: Error response from daemon: failed to create shim: OCI runtime create failed: container_linux.go:380: starting container "
    "process caused: process_linux.go:545: container init caused: Running hook #1:: error running hook: exit status 1, stdout: , "
    "stderr: nvidia-container-cli: container error: cgroup subsystem devices not found: unknown.\n"
    "ERRO[0003] error waiting for container: context canceled \n"
)
# saharmor/dalle-playground#105: docker-compose up, the terminal wrapping Docker's line
DALLE_105 = (
    "ERROR: for dalle-backend  Cannot start service dalle-backend: failed to create shim: OCI runtime create failed: runc\n"
    "create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit\n"
    "status 1, stdout: , stderr: nvidia-container-cli: container error: cgroup subsystem devices not found: unknown\n"
)
# NVIDIA/k8s-device-plugin#324: a Kubernetes node's hook, named nvidia-container-cli.real
K8SDP_324 = "Failure: nvidia-container-cli.real: container error: cgroup subsystem devices not found\n"


@pytest.mark.parametrize("text", as_pasted(NVDOCKER_1447, NIXPKGS_127146, DALLE_105, K8SDP_324))
def test_cgroup_subsystem_devices_not_found_is_a_toolkit_without_cgroup_v2(text, test_kb):
    found = findings(text, test_kb)
    assert found.get("container-toolkit-known-bug") is Severity.ERROR
    assert "container-gpu-runtime-missing" not in found  # the runtime ran: its hook failed


def test_the_message_names_the_first_release_with_cgroup_v2_support_from_the_kb():
    said = messages(NVDOCKER_1447, KB())["container-toolkit-known-bug"]
    assert "1.8.0" in said and "cgroup v2" in said
    assert "rootless" not in said  # not the bpf_prog_query case


@pytest.mark.parametrize("text", [
    # libnvidia-container#150: a cgroup v2 parser's own complaint, not the missing v1 controller
    "stderr: nvidia-container-cli: container error: failed to get device cgroup root path: malformed cgroup entry: 1:net_cls:/: unknown.\n",
    # another program's cgroup message, and prose about the error
    "lxc-start: cgroup subsystem devices not found\n",
    "Is cgroup v2 the reason the devices subsystem is not found by docker?\n",
])
def test_other_cgroup_messages_are_not_the_cgroup_v2_gap(text, test_kb):
    assert "container-toolkit-known-bug" not in findings(text, test_kb)


def test_the_bpf_prog_query_case_keeps_its_own_message(test_kb):
    text = ("nvidia-container-cli: mount error: failed to add device rules: unable to find any existing device filters attached to the "
            "cgroup: bpf_prog_query(BPF_CGROUP_DEVICE) failed: operation not permitted: unknown.\n")
    assert "no-cgroups" in messages(text, test_kb)["container-toolkit-known-bug"]


# ----------------------------------------------------------------------------- a runtime binary that is not installed
# NVIDIA/nvidia-docker#1337: Docker 19.03 with --gpus, the EOL hook package's binary gone
NVDOCKER_1337 = (
    "docker run --name gpu_container --gpus all nvidia/cuda\n"
    "docker: Error response from daemon: exec: \"nvidia-container-runtime-hook\": executable file not found in $PATH.\n"
    "ERRO[0000] error waiting for container: context canceled\n"
)
# NVIDIA/nvidia-docker#875: Docker 17.03's nested quotes
NVDOCKER_875 = (
    "$ docker run --runtime=nvidia --rm nvidia/cuda:9.1-devel nvidia-smi\n"
    "exec: \"nvidia-container-runtime-hook\": executable file not found in $PATH\n"
    "docker: Error response from daemon: oci runtime error: exec: \"nvidia-container-runtime-hook\": executable file not found in $PATH.\n"
)
# NVIDIA/nvidia-docker#1190: the runtime named in daemon.json, its package not installed
NVDOCKER_1190 = ("Docker: Error response from daemon: OCI runtime create failed: unable to retrieve OCI runtime error exec: "
                 "\"nvidia-container-runtime\": executable file not found in $PATH: : unknown.\n")
# NVIDIA/nvidia-docker#686: the runtime's package removed
NVDOCKER_686 = "docker: Error response from daemon: fork/exec /usr/bin/nvidia-container-runtime: no such file or directory: unknown.\n"
# NVlabs/BundleSDF#95: docker build on a daemon whose default runtime is nvidia
BUNDLESDF_95 = (
    "Step 3/24 : RUN ln -snf /usr/share/zoneinfo/$TZ /etc/localtime && echo $TZ > /etc/timezone\n"
    " ---> Running in 88879eafbc23\n"
    "failed to create shim task: OCI runtime create failed: unable to retrieve OCI runtime error (open /run/containerd/io.containerd."
    "runtime.v2.task/moby/88879eafbc23e9f887fa3d5bddd96ec4a06e0a7b1f6131617035b29b7afb7205/log.json: no such file or directory): "
    "exec: \"nvidia-container-runtime\": executable file not found in $PATH: unknown\n"
)
# NVIDIA/nvidia-container-runtime#68: the runtime's hook binary missing from a broken package release (fixed packages)
NCR_68 = ("docker: Error response from daemon: OCI runtime create failed: unable to retrieve OCI runtime error (open /run/containerd/"
          "io.containerd.runtime.v1.linux/moby/af425d9814b0843b3eb4d17d6b9fdd47837728148961e9832e09e47cf4cb61e3/log.json: no such file "
          "or directory): nvidia-container-runtime did not terminate sucessfully: 2019/07/23 17:28:30 ERROR: nvidia-container-runtime: "
          "inject NVIDIA hook: stat /usr/bin/nvidia-container-runtime-hook: no such file or directory\n: unknown.\n")


@pytest.mark.parametrize("text", as_pasted(NVDOCKER_1337, NVDOCKER_875, NVDOCKER_1190, NVDOCKER_686, BUNDLESDF_95, NCR_68))
def test_an_nvidia_runtime_binary_that_is_not_installed_is_a_missing_runtime(text, test_kb):
    found = findings(text, test_kb)
    assert found.get("container-gpu-runtime-missing") is Severity.ERROR
    assert "container-started-without-gpus" not in found


def test_the_message_names_the_missing_binary(test_kb):
    assert "nvidia-container-runtime-hook, which is not installed" in messages(NVDOCKER_1337, test_kb)["container-gpu-runtime-missing"]
    assert "nvidia-container-runtime, which is not installed" in messages(NVDOCKER_686, test_kb)["container-gpu-runtime-missing"]


@pytest.mark.parametrize("text", [
    # the image's own command missing (NVIDIA/nvidia-docker#1372): the runtime ran
    "docker: Error response from daemon: OCI runtime create failed: container_linux.go:349: starting container process caused "
    "\"exec: \\\"nvidia-smi\\\": executable file not found in $PATH\": unknown.\n",
    # runc's own binary (Docker 17 packaging), and a healthy daemon log naming the runtime
    "exec: \"docker-runc\": executable file not found in $PATH\n",
    "time=\"2024-01-02T10:00:00Z\" level=info msg=\"Using low-level runtime /usr/bin/nvidia-container-runtime\"\n",
    "ls: cannot access '/usr/bin/nvidia-container-runtime-hook': No such file or directory\n",
])
def test_other_missing_executables_are_not_a_missing_nvidia_runtime(text, test_kb):
    assert "container-gpu-runtime-missing" not in findings(text, test_kb)


# NVIDIA/k8s-device-plugin#166: the toolkit installed without the runtime binary daemon.json names
K8SDP_166 = (
    "docker: Error response from daemon: OCI runtime create failed: unable to retrieve OCI runtime error (open /run/containerd/io.containerd."
    "runtime.v1.linux/moby/761bd05e8ceb95e1459db860b160e9dda095254a969ebd9a0b777524f73f9263/log.json: no such file or directory): "
    "exec: \"nvidia-container-runtime\": executable file not found in $PATH: unknown.\n"
    "```\n\nand just to show:\n\n```\nls /usr/bin/nvidia-container-runtime\n"
    "ls: cannot access '/usr/bin/nvidia-container-runtime': No such file or directory\n"
)


@pytest.mark.parametrize("text", as_pasted(K8SDP_166))
def test_a_missing_runtime_binary_beside_its_ls_is_one_missing_runtime(text, test_kb):
    assert findings(text, test_kb).get("container-gpu-runtime-missing") is Severity.ERROR


# ----------------------------------------------------------------------------- Kubernetes: Insufficient nvidia.com/gpu
# NVIDIA/deepops#381: the scheduler's event alone
DEEPOPS_381 = ("The job gets stuck pending with a 'FailedScheduling' event and the message ` 0/2 nodes are available: "
               "2 Insufficient nvidia.com/gpu.`\n")
# NVIDIA/k8s-device-plugin#36: the pod's conditions as a Go template prints them
K8SDP_36 = ("$ kubectl get pod gpu-pod --template '{{.status.conditions}}'\n[map[type:PodScheduled lastProbeTime:<nil> "
            "lastTransitionTime:2018-02-26T21:58:32Z message:0/2 nodes are available: 1 PodToleratesNodeTaints, 2 Insufficient "
            "nvidia.com/gpu. reason:Unschedulable status:False]]\n")
# NVIDIA/k8s-device-plugin#285's node (its Capacity and Allocatable list no nvidia.com/gpu) beside
# the scheduler's event as deepops#381 words it: the two as one report pastes them
NODE_285 = (
    "Capacity:\n  cpu:                12\n  ephemeral-storage:  959863856Ki\n  hugepages-1Gi:      0\n  hugepages-2Mi:      0\n"
    "  memory:             16325228Ki\n  pods:               110\nAllocatable:\n  cpu:                12\n"
    "  ephemeral-storage:  959863856Ki\n  hugepages-1Gi:      0\n  hugepages-2Mi:      0\n  memory:             16325228Ki\n"
    "  pods:               110\nSystem Info:\n  Machine ID:                 bba0be70c47c400ea3cf7733f1c0b4c1\n"
)
K8SDP_285 = "Events:\n  Warning  FailedScheduling  40s  default-scheduler  0/2 nodes are available: 2 Insufficient nvidia.com/gpu.\n\n" + NODE_285


@pytest.mark.parametrize("text", as_pasted(DEEPOPS_381, K8SDP_36))
def test_insufficient_gpus_without_the_node_is_a_warning_about_the_device_plugin(text, test_kb):
    assert findings(text, test_kb).get("container-gpu-runtime-missing") is Severity.WARNING
    assert "kubectl describe node" in messages(text, test_kb)["container-gpu-runtime-missing"]


@pytest.mark.parametrize("text", as_pasted(K8SDP_285))
def test_insufficient_gpus_on_a_node_that_lists_none_is_an_error(text, test_kb):
    assert findings(text, test_kb).get("container-gpu-runtime-missing") is Severity.ERROR
    assert "the node lists no nvidia.com/gpu" in messages(text, test_kb)["container-gpu-runtime-missing"]


# NVIDIA/k8s-device-plugin#165: the node advertises its GPU (Capacity and Allocatable 1); and #58's
# node, capacity 16 with allocatable 0 (the plugin marked them unhealthy): not a missing plugin
NODE_165 = (
    "0/3 nodes are available: 3 insufficient nvidia.com/gpu.\n"
    "Capacity:\n cpu:                4\n ephemeral-storage:  960317832Ki\n hugepages-2Mi:      0\n memory:             16408544Ki\n"
    " nvidia.com/gpu:     1\n pods:               110\nAllocatable:\n cpu:                4\n ephemeral-storage:  885028912506\n"
    " hugepages-2Mi:      0\n memory:             16306144Ki\n nvidia.com/gpu:     1\n pods:               110\n"
)
NODE_58 = (
    "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.\n"
    "    status:\n      allocatable:\n        cpu: \"48\"\n        ephemeral-storage: \"9391196145\"\n        hugepages-1Gi: \"0\"\n"
    "        hugepages-2Mi: \"0\"\n        memory: 263412492Ki\n        nvidia.com/gpu: \"0\"\n        pods: \"110\"\n"
    "      capacity:\n        cpu: \"48\"\n        ephemeral-storage: 10190100Ki\n        hugepages-1Gi: \"0\"\n"
    "        hugepages-2Mi: \"0\"\n        memory: 263514892Ki\n        nvidia.com/gpu: \"16\"\n        pods: \"110\"\n"
)
# NVIDIA/k8s-device-plugin#33: the plugin's log marks an old GPU unhealthy
UNHEALTHY_33 = ("Deploying any PODS with the nvidia.com/gpu resource limits results in \"0/1 nodes are available: 1 Insufficient nvidia.com/gpu.\"\n"
                "2018/02/27 16:43:50 Warning: GPU with UUID GPU-edae6d5d-6698-fb8d-2c6b-2a791224f089 is too old to support healtchecking "
                "with error: %!s(MISSING). Marking it unhealthy\n")


@pytest.mark.parametrize("text", as_pasted(NODE_165, NODE_58, UNHEALTHY_33))
def test_insufficient_gpus_on_a_node_that_advertises_them_is_not_a_missing_plugin(text, test_kb):
    assert "container-gpu-runtime-missing" not in findings(text, test_kb)


@pytest.mark.parametrize("text", [
    NODE_285,  # a node without GPUs and no pod asking for one
    "    resources:\n      limits:\n        nvidia.com/gpu: 1\n",  # a pod spec's request
    "Allocated resources:\n  Resource           Requests   Limits\n  nvidia.com/gpu     0          0\n",
])
def test_a_node_or_pod_spec_without_the_scheduler_event_says_nothing(text, test_kb):
    assert "container-gpu-runtime-missing" not in findings(text, test_kb)


# ----------------------------------------------------------------------------- WSL2 containers, Windows driver 555+
# tensorflow/tensorflow#68711: Docker Desktop with WSL2, TensorFlow's cuInit
TF_68711 = ("I am using Docker Desktop with WSL2 on Windows 11 Pro to run the `tensorflow-gpu:latest` Docker container. After starting it "
            "no GPU is found and the error `failed call to cuInit: CUDA_ERROR_NOT_FOUND: named symbol not found` occurs. CUDA, cuDNN and "
            "Python versions are all dictated by the Docker image so I cannot change them.\n")
# EricLBuehler/mistral.rs#654: docker run --gpus all in WSL2, cudarc's DriverError
MISTRALRS_654 = (
    "## use docker image [docker pull ghcr.io/ericlbuehler/mistral.rs:cuda-80-sha-9b898ee]\nrun script in wsl2\n"
    "```docker run  --gpus all      -v E:/workspace/modelscope:/root/modelscope     ghcr.io/ericlbuehler/mistral.rs:latest  -i plain"
    "        -m /root/modelscope/Qwen2-7B-Instruct   -a qwen2```\ngot error\n"
    "Error: DriverError(CUDA_ERROR_NOT_FOUND, \"named symbol not found\")\n"
)
# tensorflow/tensorflow#68710: Windows 11 + WSL2, the XLA line quoted, nvidia-smi fine in the container
TF_68710 = (
    "### OS platform and distribution\n\nWindows 11 and WSL2\n\n"
    "sudo docker run -it --rm -p 8888:8888 --gpus all tensorflow/tensorflow:latest-gpu-jupyter\n"
    "results in the following error \"external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:282] failed call to cuInit: "
    "CUDA_ERROR_NOT_FOUND: named symbol not found\":\n"
)


@pytest.mark.parametrize("text", as_pasted(TF_68711, MISTRALRS_654, TF_68710))
def test_cuda_not_found_at_init_in_a_wsl2_container_is_a_toolkit_too_old_for_the_driver(text, test_kb):
    assert findings(text, test_kb).get("container-toolkit-known-bug") is Severity.ERROR


def test_the_message_names_the_fixed_toolkit_and_docker_desktop_from_the_kb():
    said = messages(TF_68711, KB())["container-toolkit-known-bug"]
    assert "1.14.4" in said and "Docker Desktop before 4.31" in said


@pytest.mark.parametrize("text", [
    # a kernel's own symbol (Triton, a custom op), no container nor WSL
    "RuntimeError: Triton Error [CUDA]: named symbol not found\n",
    "RuntimeError: CUDA error: named symbol not found\n",
    # CUDA_ERROR_NOT_FOUND on native Linux, no container named; and in a container on Linux only
    "failed call to cuInit: CUDA_ERROR_NOT_FOUND: named symbol not found\n",
    "docker run --gpus all img\nfailed call to cuInit: CUDA_ERROR_NOT_FOUND: named symbol not found\n",
    # NCCL's own "named symbol not found" (a build without the GPU's arch)
    "gcn75:2336636:2336906 [0] enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'\n",
])
def test_named_symbol_not_found_outside_a_wsl2_container_is_not_the_toolkit(text, test_kb):
    assert "container-toolkit-known-bug" not in findings(text, test_kb)


def test_insufficient_gpus_beside_a_plugin_that_registered_its_gpus_is_not_a_missing_plugin(test_kb):
    text = ("I0121 12:04:24.669542       1 server.go:125] Registered device plugin for 'nvidia.com/gpu' with Kubelet\n"
            "Warning  FailedScheduling  0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\n")
    assert "container-gpu-runtime-missing" not in findings(text, test_kb)
    # the scheduler's symptom alone: a warning that says what to look at, never an error
    assert findings("Warning  FailedScheduling  0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\n", test_kb) == {
        "container-gpu-runtime-missing": Severity.WARNING}


# ----------------------------------------------------------------------------- the toolkit's ldconfig
# hekmak/Conf-net#5: Ubuntu's ldconfig.real named on a host without it
CONFNET_5 = ("docker: Error response from daemon: OCI runtime create failed: container_linux.go:380: starting container process caused: "
             "process_linux.go:545: container init caused: Running hook #1:: error running hook: exit status 1, stdout: , stderr: "
             "nvidia-container-cli: ldcache error: open failed: /sbin/ldconfig.real: no such file or directory: unknown.\n"
             "ERRO[0002] error waiting for container: context canceled \n")
# NVIDIA/nvidia-docker#614: Debian, Docker 17's nested escapes around the hook's command line
NVDOCKER_614 = ("`docker: Error response from daemon: OCI runtime create failed: container_linux.go:296: starting container process caused "
                "\"process_linux.go:398: container init caused \\\"process_linux.go:381: running prestart hook 1 caused \\\\\\\"error running hook: "
                "exit status 1, stdout: , stderr: exec command: [/usr/bin/nvidia-container-cli --load-kmods configure --ldconfig=@/sbin/ldconfig.real "
                "--device=all --compute --utility --require=cuda>=8.0 --pid=25807 /var/lib/docker/overlay2/8127e7486398ec495fc98de2cee1f18e769ee97f43211ccbc455a058d3b3923a/merged]"
                "\\\\\\\\nnvidia-container-cli: ldcache error: open failed: /sbin/ldconfig.real: no such file or directory\\\\\\\\n\\\\\\\"\\\"\": unknown.\n`\n")
# OE4T/meta-tegra#1427: a Jetson image without ldconfig at all
METATEGRA_1427 = ("docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: "
                  "runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: "
                  "exit status 1, stdout: , stderr: nvidia-container-cli: ldcache error: open failed: /sbin/ldconfig: no such file or directory: unknown.\n")
# NVIDIA/nvidia-docker#587: the exec of the named ldconfig failing (127), fixed in config.toml
NVDOCKER_587 = "Failed to run nvidia/cuda:8.0 via nvidia-docker2. nvidia-container-cli: ldcache error: process /sbin/ldconfig failed with error code: 127\n"


@pytest.mark.parametrize("text", as_pasted(CONFNET_5, NVDOCKER_614, METATEGRA_1427, NVDOCKER_587))
def test_an_ldconfig_the_host_does_not_have_is_a_broken_runtime_setup(text, test_kb):
    assert findings(text, test_kb).get("container-gpu-runtime-missing") is Severity.ERROR
    assert "ldconfig" in messages(text, test_kb)["container-gpu-runtime-missing"]


@pytest.mark.parametrize("text", [
    # ldconfig ran and failed (NVIDIA/nvidia-docker#1616: causes vary), and ldconfig's own warnings
    "nvidia-container-cli: ldcache error: process /sbin/ldconfig.real failed with error code: 1: unknown.\n",
    "/sbin/ldconfig.real: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link\n",
    "ldconfig: /usr/local/lib/libfoo.so.1 is not a symbolic link\n",
])
def test_other_ldconfig_messages_are_not_a_missing_ldconfig(text, test_kb):
    assert "container-gpu-runtime-missing" not in findings(text, test_kb)
