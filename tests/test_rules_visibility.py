"""container-started-without-gpus and cuda-visible-devices-hides-gpus (fwdoctor.rules.visibility):
the pure CUDA_VISIBLE_DEVICES reading, the rules on facts, and whole `check --root` runs on
the fixture roots tests/roots/driver-container-* (a /dev with or without NVIDIA device nodes;
a device node there is an empty file, which is all a name listing needs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fwdoctor.model import Fact, Facts, Severity
from fwdoctor.rules import visibility

ROOTS = Path(__file__).resolve().parent / "roots"
pytestmark = pytest.mark.usefixtures("use_test_kb")
TWO = [{"index": 0, "uuid": "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"}, {"index": 1, "uuid": "GPU-1b2c3d4e-0000-1111-2222-333344445555"}]
ONE = TWO[:1]


def facts(**values) -> Facts:
    return Facts([Fact(key.replace("__", "."), value, source="test") for key, value in values.items()])


def run(rule, f: Facts):
    from fwdoctor.kb import KB
    from conftest import TEST_KB_DIR

    return rule.evaluate(f, KB.load(TEST_KB_DIR))


# ----------------------------------------------------------------------------- CUDA_VISIBLE_DEVICES
@pytest.mark.parametrize("value, gpus, shown", [
    ("0", ONE, [0]),
    ("1,0", TWO, [1, 0]),
    ("", TWO, []),                  # set but empty: no GPU (CUDA Programming Guide)
    ("-1", TWO, []),                # TensorFlow's "use the CPU"
    ("1", ONE, []),                 # DetectionTeamUCAS/FPN_Tensorflow#146: index 1 on a one-GPU machine
    ("0,2,-1,1", TWO, [0]),         # the guide's example on two GPUs: 2 is invalid and ends the list
    ("GPU-8932f937", TWO, [0]),     # a unique UUID prefix
    ("GPU-ffff", TWO, []),
    ("NoDevFiles", TWO, []),        # what a scheduler sets when it gave the job no GPU
    (" 1 , 0 ", TWO, [1, 0]),
])
def test_visible_gpus_follows_nvidias_rules(value, gpus, shown):
    assert visibility.visible_gpus(value, gpus) == shown


def test_a_uuid_or_mig_entry_is_not_judged_without_the_uuids():
    assert visibility.visible_gpus("GPU-8932f937", [{"index": 0, "uuid": None}]) is None
    assert visibility.visible_gpus("MIG-8932f937-d72c-4106-c12f-20bd9faed9f6", TWO) is None


@pytest.mark.parametrize("value, fires", [("1", True), ("", True), ("-1", True), ("0", False), (None, False)])
def test_cuda_visible_devices_that_leaves_no_gpu_is_an_error(value, fires):
    found, _ = run(visibility.cuda_visible_devices_hides_gpus, facts(gpus__visible_devices=value, gpus__list=ONE))
    assert [f.severity for f in found] == ([Severity.ERROR] if fires else [])
    if fires:
        assert f"CUDA_VISIBLE_DEVICES={value!r}" in found[0].message and "unset CUDA_VISIBLE_DEVICES" in found[0].fix.commands


def test_no_gpu_at_all_is_left_to_no_gpu():
    assert run(visibility.cuda_visible_devices_hides_gpus, facts(gpus__visible_devices="-1", gpus__list=[]))[0] == []


# ----------------------------------------------------------------------------- containers
PCI = [{"slot": "0000:62:00.0", "device_id": "0x2330"}]


@pytest.mark.parametrize("container, nodes, pci, driver, fires", [
    (True, [], PCI, "580.95.05", True),
    (True, ["nvidia0", "nvidiactl"], PCI, None, True),             # NVIDIA/nvidia-docker#1085: no nvidia-uvm
    (True, ["nvidia-uvm", "nvidia0", "nvidiactl"], PCI, "580.95.05", False),
    (True, [], [], None, False),                                   # a container on a host with no NVIDIA GPU
    (True, [], PCI, None, False),                                  # no driver loaded on the host: driver-missing's business
    (False, [], PCI, "580.95.05", False),                          # the host itself: driver-missing's business
])
def test_a_container_without_gpu_device_nodes_on_a_gpu_host(container, nodes, pci, driver, fires):
    values = dict(system__container=container, system__nvidia_device_nodes=nodes, pci__nvidia_gpus=pci)
    if driver:
        values["driver__version"] = driver
    found, _ = run(visibility.container_started_without_gpus, facts(**values))
    assert [f.severity for f in found] == ([Severity.ERROR] if fires else [])
    if fires:
        assert "docker run --gpus all" in found[0].fix.commands[0]


def test_unknown_device_nodes_in_a_container_are_not_checked():
    f = Facts([Fact("system.container", True, source="/.dockerenv"), Fact.unknown("system.nvidia_device_nodes", "no /dev here")])
    found, skipped = run(visibility.container_started_without_gpus, f)
    assert found == [] and skipped is not None and "no /dev here" in skipped.reason


@pytest.fixture
def env_file(tmp_path):
    def write(*lines: str) -> str:
        path = tmp_path / "root.env"
        path.write_text("\n".join(("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", *lines)) + "\n")
        return str(path)
    return write


MINE = {"container-started-without-gpus", "cuda-visible-devices-hides-gpus"}


@pytest.mark.parametrize("root, env, expected", [
    ("driver-container-no-gpus", (), {"container-started-without-gpus"}),
    ("driver-container-no-uvm", (), {"container-started-without-gpus"}),
    ("driver-container-gpus", (), set()),
    ("driver-ok", (), set()),
    ("driver-ok", ("CUDA_VISIBLE_DEVICES=1",), {"cuda-visible-devices-hides-gpus"}),
    ("driver-ok", ("CUDA_VISIBLE_DEVICES=0",), set()),
])
def test_check_on_the_fixture_roots(check_json, env_file, root, env, expected):
    _, report = check_json("--root", str(ROOTS / root), "--env-file", env_file(*env))
    assert {f["id"] for f in report["findings"]} & MINE == expected
    for f in report["findings"]:
        if f["id"] == "container-started-without-gpus":
            assert f["code"] == "FWD145" and "NVIDIA driver 580.95.05 loaded" in f["message"]


# ----------------------------------------------------------------------------- `fwdoctor triage`
def triaged(cli, tmp_path, text: str) -> dict[str, str]:
    import json

    path = tmp_path / "report.md"
    path.write_text(text, encoding="utf-8")
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f["message"] for f in doc["findings"]}


# weaviate/weaviate#1736 (a development-part report): compose's "service_1  |" prefix names the container
COMPOSE_NO_DRIVER = ("qna-transformers_1  | RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
                     "and installed a driver from http://www.nvidia.com/Download/index.aspx\n")
# open-edge-platform/anomalib#584
DOCKER_NO_SMI = "2. run it: `docker run -it test`\n\nroot@00921839c781:/anomalib# nvidia-smi\nbash: nvidia-smi: command not found\n"
# DetectionTeamUCAS/FPN_Tensorflow#146
CUINIT = ("2020-12-29 10:10:44.476602: E tensorflow/stream_executor/cuda/cuda_driver.cc:318] failed call to cuInit: "
          "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected\n")


def test_no_driver_inside_a_named_container_is_a_container_started_without_gpus(cli, tmp_path):
    assert "container-started-without-gpus" in triaged(cli, tmp_path, COMPOSE_NO_DRIVER)
    assert "qna-transformers_1" in triaged(cli, tmp_path, COMPOSE_NO_DRIVER)["container-started-without-gpus"]
    assert "container-started-without-gpus" in triaged(cli, tmp_path, DOCKER_NO_SMI)
    # the same texts with no container named: the host may have no driver at all, no finding
    assert "container-started-without-gpus" not in triaged(cli, tmp_path, COMPOSE_NO_DRIVER.replace("qna-transformers_1  | ", ""))
    assert "container-started-without-gpus" not in triaged(cli, tmp_path, "bash: nvidia-smi: command not found\n")


def test_cuda_seeing_no_device_quotes_the_cuda_visible_devices_the_report_sets(cli, tmp_path):
    said = triaged(cli, tmp_path, "os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n" + CUINIT)["cuda-visible-devices-hides-gpus"]
    assert "CUDA_VISIBLE_DEVICES='1'" in said and "report line 1" in said
    assert "does not show CUDA_VISIBLE_DEVICES" in triaged(cli, tmp_path, CUINIT)["cuda-visible-devices-hides-gpus"]
    # index 0 hides no GPU of a host that has one: something else hides the device
    assert "cuda-visible-devices-hides-gpus" not in triaged(cli, tmp_path, "export CUDA_VISIBLE_DEVICES=0\n" + CUINIT)


def test_env_lines_with_a_gpu_list_are_judged_by_the_regular_rule(cli, tmp_path):
    smi = "GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-8932f937-d72c-4106-c12f-20bd9faed9f6)\n"
    assert "indices 0" in triaged(cli, tmp_path, smi + "CUDA_VISIBLE_DEVICES=1\n").get("cuda-visible-devices-hides-gpus", "")
    assert "cuda-visible-devices-hides-gpus" not in triaged(cli, tmp_path, smi + "CUDA_VISIBLE_DEVICES=0\n")


def test_a_cuda_home_path_list_in_env_lines_is_cuda_home_invalid_not_a_disagreement(cli, tmp_path):
    # facebookresearch/maskrcnn-benchmark#132's .bashrc line
    found = triaged(cli, tmp_path, "export CUDA_HOME=/usr/local/cuda:$CUDA_HOME\nexport PATH=/usr/local/cuda-9.0/bin:$PATH\n")
    assert "cuda-home-invalid" in found and "path list" in found["cuda-home-invalid"]
    assert "cuda-path-inconsistent" not in found
