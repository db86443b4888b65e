"""container-driver-capabilities-lack-compute (FWD149, issue 26): a container given its GPUs
without the compute driver capability, so the NVIDIA runtime mounts libnvidia-ml and nvidia-smi
but no libcuda.so.1. Judged from the environment (`check` inside a container or on a root folder
of one with its --env-file: tests/roots/driver-container-utility-only has /dev/nvidia* and
libnvidia-ml but no libcuda), from an image's ENV (`check --image-archive`), and from a report's
text (compose `capabilities:`, --gpus, NVIDIA_DRIVER_CAPABILITIES, nvidia-smi's "CUDA Version:
N/A" in a container). The errors.yaml rows' own examples run in tests/test_triage_corpus.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fwdoctor.engine import collect, judge
from fwdoctor.image import archive as image_archive
from fwdoctor.model import Fact, Facts, Severity
from fwdoctor.probes import driver as driver_probes
from fwdoctor.probes import gpus as gpu_probes
from fwdoctor.rules import visibility
from fwdoctor.triage.judge import run
from tests.image_helpers import member, tar_bytes
from tests.test_image_archive import docker_save_tar

ROOTS = Path(__file__).resolve().parent / "roots"
ID = "container-driver-capabilities-lack-compute"
LIB = "/usr/lib/x86_64-linux-gnu"
NVML = [{"path": f"{LIB}/libnvidia-ml.so.580.95.05", "name": "libnvidia-ml", "version": "580.95.05"}]
CUDA = [{"path": f"{LIB}/libcuda.so.580.95.05", "name": "libcuda", "version": "580.95.05"}]
NODES = ["nvidia-uvm", "nvidia0", "nvidiactl"]


# ----------------------------------------------------------------------------- the capability list
@pytest.mark.parametrize("tokens, request_list, granted", [
    (["utility"], False, ["utility"]),
    (["graphics", "utility"], False, ["graphics", "utility"]),   # an OpenGL image's ENV
    (["compute", "utility"], False, None),
    (["all"], False, None),
    ([""], False, None),                                         # set but empty: the toolkit's default applies
    (["utility", "${EXTRA}"], False, None),                      # not a capability: not judged
    (["gpu", "utility"], True, ["utility"]),                     # mudler/LocalAI#11973's compose reservation
    (["gpu"], True, None),                                       # Docker forwards no driver capability: ENV or default
    (["gpu", "compute", "utility"], True, None),
    (["gpu", "utility"], False, None),                           # "gpu" is no value of NVIDIA_DRIVER_CAPABILITIES
    ([" 'gpu'", " \"utility\" "], True, ["utility"]),
])
def test_capabilities_without_compute_follow_the_toolkits_list(tokens, request_list, granted):
    assert visibility.capabilities_without_compute(tokens, request=request_list) == granted


# ----------------------------------------------------------------------------- the rule on facts
def facts(**values) -> Facts:
    return Facts([Fact(key.replace("__", "."), value, source="test") for key, value in values.items()])


def found(f: Facts, test_kb):
    return judge(f, test_kb, [visibility.container_driver_capabilities_lack_compute]).findings


@pytest.mark.parametrize("caps, container, nodes, libs, severity", [
    ("utility", True, NODES, NVML, Severity.ERROR),          # nvidia-smi works, no libcuda: CUDA finds no driver
    ("graphics,utility", True, NODES, [], Severity.ERROR),
    ("utility", True, [], NVML, Severity.ERROR),             # libnvidia-ml mounted: the GPU was handed over
    ("compute,utility", True, NODES, NVML, None),
    ("all", True, NODES, NVML, None),
    (None, True, NODES, NVML, None),                         # unset: the default, utility and compute
    ("utility", True, NODES, NVML + CUDA, None),             # a libcuda is there after all
    ("utility", True, [], [], None),                         # nothing handed over: container-started-without-gpus
    ("utility", False, NODES, NVML + CUDA, None),            # on a host the variable steers nothing
])
def test_a_container_whose_capabilities_leave_out_compute(test_kb, caps, container, nodes, libs, severity):
    f = facts(gpus__driver_capabilities=caps, system__container=container, system__nvidia_device_nodes=nodes,
              driver__userspace_libs=libs, image__driver_libs=None)
    got = found(f, test_kb)
    assert [x.severity for x in got] == ([severity] if severity else [])
    if severity:
        assert got[0].code == "FWD149" and "no libcuda.so.1" in got[0].message and f"NVIDIA_DRIVER_CAPABILITIES={caps!r}" in got[0].message
        assert any("NVIDIA_DRIVER_CAPABILITIES=compute,utility" in c for c in got[0].fix.commands)


def test_unknown_driver_libraries_in_the_container_give_a_warning_on_the_setting(test_kb):
    f = Facts([Fact("gpus.driver_capabilities", "utility", source="test"), Fact("system.container", True, source="test"),
               Fact("system.nvidia_device_nodes", NODES, source="test"), Fact.unknown("driver.userspace_libs", "not read"),
               Fact("image.driver_libs", None, source="test")])
    assert [x.severity for x in found(f, test_kb)] == [Severity.WARNING]


def test_an_image_whose_env_leaves_out_compute_is_a_warning(test_kb):
    got = found(facts(gpus__driver_capabilities="utility", image__driver_libs=[]), test_kb)
    assert [x.severity for x in got] == [Severity.WARNING]
    assert "image's ENV" in got[0].message and got[0].fix.commands[0].startswith("ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility")


# ----------------------------------------------------------------------------- `check --root` and `check --image-archive`
@pytest.fixture
def env_file(tmp_path):
    def write(*lines: str) -> str:
        path = tmp_path / "root.env"
        path.write_text("\n".join(("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", *lines)) + "\n")
        return str(path)
    return write


@pytest.mark.usefixtures("use_test_kb")
@pytest.mark.parametrize("root, env, severity", [
    ("driver-container-utility-only", ("NVIDIA_DRIVER_CAPABILITIES=utility",), "error"),
    ("driver-container-utility-only", ("NVIDIA_DRIVER_CAPABILITIES=compute,utility",), None),
    ("driver-container-utility-only", (), None),
    ("driver-container-gpus", ("NVIDIA_DRIVER_CAPABILITIES=graphics,utility",), "error"),
    ("driver-container-no-gpus", ("NVIDIA_DRIVER_CAPABILITIES=utility",), None),  # container-started-without-gpus' case
    ("driver-ok", ("NVIDIA_DRIVER_CAPABILITIES=utility",), None),                 # a host, not a container
])
def test_check_on_the_fixture_roots(check_json, env_file, root, env, severity):
    _, report = check_json("--root", str(ROOTS / root), "--env-file", env_file(*env))
    mine = [f for f in report["findings"] if f["id"] == ID]
    assert [f["severity"] for f in mine] == ([severity] if severity else [])
    if mine:
        assert mine[0]["code"] == "FWD149" and "/dev/nvidia0" in mine[0]["message"]


def _image_facts(tmp_path, env: list[str]) -> Facts:
    layer = tar_bytes([(member("usr/lib/x86_64-linux-gnu/libcudart.so.12"), b"\x7fELF")])
    inspected = image_archive.load(str(docker_save_tar(tmp_path, [layer], {"Env": env})))
    return collect(inspected.host(), (*gpu_probes.PROBES, *driver_probes.PROBES))


@pytest.mark.parametrize("env, severity", [
    (["PATH=/usr/bin", "NVIDIA_DRIVER_CAPABILITIES=utility"], Severity.WARNING),
    (["PATH=/usr/bin", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"], None),   # what NVIDIA's CUDA images set
    (["PATH=/usr/bin"], None),
])
def test_an_image_archives_env_is_read(tmp_path, test_kb, env, severity):
    f = _image_facts(tmp_path, env)
    assert f["gpus.driver_capabilities"] == next((e.split("=", 1)[1] for e in env if e.startswith("NVIDIA_DRIVER")), None)
    assert [x.severity for x in found(f, test_kb)] == ([severity] if severity else [])


# ----------------------------------------------------------------------------- `fwdoctor triage`
def judged(text: str, kb) -> dict[str, Severity]:
    return {f.id: f.severity for f in run(text, kb).report.findings}


# mudler/LocalAI#11973 (a development-part report), verbatim
LOCALAI = ("With `capabilities: [gpu, utility]`, the container gets only the utility driver libraries. `docker inspect` shows "
           "`\"Capabilities\":[[\"gpu\",\"utility\"]]`, and `/usr/lib/x86_64-linux-gnu` contains `libnvidia-ml.so.1` and `libdxcore.so` but no "
           "`libcuda.so.1`. `nvidia-smi` works inside the container, so the setup looks fine, but every CUDA backend fails to start with "
           "`ImportError: libcuda.so.1: cannot open shared object file`.\n")
LOCALAI_COMPOSE = ("    # deploy:\n    #   resources:\n    #     reservations:\n    #       devices:\n    #         - driver: nvidia\n"
                   "    #           count: 1\n    #           capabilities: [gpu, utility]\n")
# weaviate/weaviate#1736 (a development-part report), verbatim
WEAVIATE = ("qna-transformers_1  | RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed "
            "a driver from http://www.nvidia.com/Download/index.aspx\n```\n\nUpon further investigation I noticed that trying to execute "
            "`nvidia-smi` on each image directly returned a CUDA version of n/a, which would explain the failed init.\n")
# containerd/nerdctl#1023 and ehfd/nvidia-dind#1, verbatim
NERDCTL = "1.nerdctl run -it --rm --gpus capabilities=utility,device=GPU-3a23c669-1f69-c64e-cf85-44e9b07e7a2a nvidia/cuda:9.0-base nvidia-smi\n"
DIND = ("I was able to get nvidia-smi to work inside my matroska container, but the cuda version was n/a and torch.cuda.is_available() "
        "would be False.\n")
# torch's own words (weaviate/weaviate#1736)
NO_DRIVER = "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n"


def test_a_compose_reservation_without_compute_and_the_missing_libcuda_is_an_error(test_kb):
    assert judged(LOCALAI, test_kb) == {ID: Severity.ERROR}
    said = run(LOCALAI, test_kb).report.findings[0]
    assert "utility" in said.message and "libcuda.so.1" in said.message


def test_the_setting_alone_is_a_warning(test_kb):
    assert judged(LOCALAI_COMPOSE, test_kb) == {ID: Severity.WARNING}
    assert judged(NERDCTL, test_kb) == {ID: Severity.WARNING}
    assert judged("docker run --rm -e NVIDIA_DRIVER_CAPABILITIES=utility --gpus all my-image python train.py\n", test_kb) == {ID: Severity.WARNING}
    assert judged("ENV NVIDIA_DRIVER_CAPABILITIES graphics,utility\n", test_kb) == {ID: Severity.WARNING}
    assert judged("    environment:\n      NVIDIA_DRIVER_CAPABILITIES: \"utility\"\n", test_kb) == {ID: Severity.WARNING}


def test_the_setting_with_torch_finding_no_driver_is_an_error_not_a_container_without_gpus(test_kb):
    text = "docker compose up\n" + LOCALAI_COMPOSE + "app-1  | " + NO_DRIVER
    assert judged(text, test_kb) == {ID: Severity.ERROR}


def test_a_compose_block_list_is_read(test_kb):
    block = "          devices:\n            - driver: nvidia\n              capabilities:\n                - gpu\n                - utility\n"
    assert judged(block, test_kb) == {ID: Severity.WARNING}
    assert judged(block.replace("- utility", "- compute\n                - utility"), test_kb) == {}


def test_nvidia_smi_without_a_cuda_version_in_a_container_is_this_not_a_container_without_gpus(test_kb):
    assert judged(WEAVIATE, test_kb) == {ID: Severity.ERROR}
    assert judged(DIND, test_kb) == {ID: Severity.ERROR}
    header = "root@3d7e0ba526d4:/# nvidia-smi\n| NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: N/A      |\n"
    assert judged("docker run --rm -it --gpus all my-image bash\n" + header, test_kb) == {ID: Severity.ERROR}
    # no container named: a host whose driver lacks its compute libraries is another story
    assert ID not in judged(header, test_kb)


@pytest.mark.parametrize("mangle", [
    lambda t: t.replace("\n", "\r\n"),                                                    # CRLF
    lambda t: "".join("> " + line for line in t.splitlines(keepends=True)),               # a markdown quote
    lambda t: "```yaml\n" + t + "```\n",                                                  # a fence
    lambda t: "".join("\x1b[32m" + line.rstrip("\n") + "\x1b[0m\n" for line in t.splitlines(keepends=True)),  # ANSI colour
    lambda t: "".join("2024-05-01T12:00:00.1234567Z " + line for line in t.splitlines(keepends=True)),       # a CI log's stamps
])
def test_pasted_texts_are_read_through_their_mangling(test_kb, mangle):
    assert judged(mangle(LOCALAI_COMPOSE), test_kb) == {ID: Severity.WARNING}
    assert judged(mangle(WEAVIATE), test_kb) == {ID: Severity.ERROR}


def test_a_wrapped_request_list_is_read(test_kb):
    assert judged("The compose example recommends capabilities: [gpu,\nutility] for the nvidia device.\n", test_kb) == {ID: Severity.WARNING}


@pytest.mark.parametrize("text", [
    "              capabilities: [gpu]\n",                                      # Docker forwards none: the default applies today
    "              capabilities: [gpu, compute, utility]\n",
    "docker run --gpus 'all,\"capabilities=compute,utility\"' --rm -it ubuntu:trusty\n",   # NVIDIA/nvidia-docker#1128
    "Add environment variable `NVIDIA_DRIVER_CAPABILITIES=compute,utility` to the container\n",
    "docker run -e NVIDIA_DRIVER_CAPABILITIES=all --gpus all --rm -it ubuntu:trusty\n",
    "ENV NVIDIA_DRIVER_CAPABILITIES ${NVIDIA_DRIVER_CAPABILITIES},display\n",
    "NVIDIA_DRIVER_CAPABILITIES controls which driver libraries are mounted\n",
    "docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]].\n",
    "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n",
    "    securityContext:\n      capabilities:\n        add: [\"NET_ADMIN\"]\n",
    "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\ndocker ps\n",
    # PaddlePaddle/Paddle#69003 (a development-part report): Paddle's env summary, in a container, names no nvidia-smi
    "docker run --gpus all --name paddle -it registry.baidubce.com/paddlepaddle/paddle:3.0.0b1-gpu-cuda12.3-cudnn9.0-trt8.6 /bin/bash\n"
    "CUDA version: N/A\ncuDNN version: N/A\nNvidia driver version: 565.57.01\n",
])
def test_look_alikes_do_not_raise_it(test_kb, text):
    assert ID not in judged(text, test_kb)
