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
