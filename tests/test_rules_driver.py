"""The driver and runtime rules as pure functions of (Facts, KB): each fires on its
example and stays quiet on the near miss; unknown inputs are "not checked"."""

from __future__ import annotations

import pytest

from fwdoctor.engine import judge
from fwdoctor.model import Fact, Facts, Severity
from fwdoctor.render.explain import explanation
from fwdoctor.rules import driver as driver_rules
from fwdoctor.rules import runtime as runtime_rules

RULES = (*driver_rules.RULES, *runtime_rules.RULES)
H100 = {"slot": "0000:62:00.0", "device_id": "0x2330", "class": "0x030200"}
LIBS_580 = [
    {"path": "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "name": "libcuda", "version": "580.95.05"},
    {"path": "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "name": "libnvidia-ml", "version": "580.95.05"},
]
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def kb(test_kb):
    return test_kb


def healthy(**changes):
    values = {
        "pci.nvidia_gpus": [H100],
        "driver.loaded": True,
        "driver.version": "580.95.05",
        "driver.userspace_libs": LIBS_580,
        "driver.nouveau_loaded": False,
        "driver.nvml_error": None,
        "gpus.list": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "source": "nvml"}],
        "system.shm_bytes": 16 * 1024 * MIB,
        "system.shm_access": {"mode": "1777", "read_only": False, "writable": True},
        "system.container": False,
        "image.driver_libs": None,  # not an image (container-image-ships-driver-libs)
    }
    values.update(changes)
    return Facts([Fact(k, v, source="test") for k, v in values.items()])


def ids(facts, kb):
    report = judge(facts, kb, RULES)
    return {f.id: f for f in report.findings}, {n.rule: n.reason for n in report.not_checked}


def test_a_healthy_gpu_host_fires_nothing(kb):
    findings, skipped = ids(healthy(), kb)
    assert findings == {} and skipped == {}


def test_a_gpu_on_the_bus_without_the_module_is_driver_missing(kb):
    findings, _ = ids(healthy(**{"driver.loaded": False, "driver.version": None, "gpus.list": []}), kb)
    assert set(findings) == {"driver-missing"}
    finding = findings["driver-missing"]
    assert finding.severity is Severity.ERROR
    assert "0000:62:00.0 [10de:2330]" in finding.message and "no NVIDIA kernel driver" in finding.message
    assert finding.fix is not None and any("modprobe nvidia" in c for c in finding.fix.commands)


def test_nouveau_is_named_when_it_holds_the_gpu(kb):
    findings, _ = ids(healthy(**{"driver.loaded": False, "driver.version": None, "driver.nouveau_loaded": True}), kb)
    assert {"driver-missing", "nouveau-loaded"} <= set(findings)
    assert "nouveau holds it" in findings["driver-missing"].message
    assert any("blacklist nouveau" in c for c in findings["nouveau-loaded"].fix.commands)


def test_driver_fixes_are_advice_and_never_install_packages(kb):
    facts = healthy(**{"driver.loaded": False, "driver.version": None, "driver.nouveau_loaded": True})
    for finding in judge(facts, kb, RULES).findings:
        assert finding.fix.recipe is None
        assert not any("apt" in c.split() or "apt-get" in c or "dnf install" in c for c in finding.fix.commands)


def test_libraries_newer_than_the_module_are_a_mismatch(kb):
    findings, _ = ids(healthy(**{"driver.version": "575.57.08"}), kb)
    finding = findings["driver-library-mismatch"]
    assert finding.severity is Severity.ERROR
    assert "575.57.08" in finding.message and "580.95.05" in finding.message
    assert "sudo reboot" in finding.fix.commands


def test_versions_are_compared_as_versions_not_strings(kb):
    libs = [{"path": "/usr/lib64/libcuda.so.1", "name": "libcuda", "version": "515.76"}]
    findings, _ = ids(healthy(**{"driver.version": "515.76.0", "driver.userspace_libs": libs}), kb)
    assert "driver-library-mismatch" not in findings


def test_nvmls_own_mismatch_error_fires_even_when_no_library_file_was_found(kb):
    error = "Failed to initialize NVML: Driver/library version mismatch"
    findings, _ = ids(healthy(**{"driver.userspace_libs": [], "driver.nvml_error": error}), kb)
    assert error in findings["driver-library-mismatch"].message


def test_a_different_nvml_error_is_not_a_mismatch(kb):
    findings, _ = ids(healthy(**{"driver.nvml_error": "NVML: Driver Not Loaded"}), kb)
    assert "driver-library-mismatch" not in findings


def test_no_gpu_anywhere_is_an_info(kb):
    findings, _ = ids(healthy(**{"pci.nvidia_gpus": [], "gpus.list": [], "driver.loaded": False, "driver.version": None}), kb)
    assert set(findings) == {"no-gpu"} and findings["no-gpu"].severity is Severity.INFO


def test_no_gpu_suggests_gpus_all_only_inside_a_container(kb):
    none = {"pci.nvidia_gpus": [], "gpus.list": [], "driver.loaded": False, "driver.version": None}
    bare, _ = ids(healthy(**none), kb)
    boxed, _ = ids(healthy(**none, **{"system.container": True}), kb)
    assert bare["no-gpu"].fix.commands == ()
    assert boxed["no-gpu"].fix.commands == ("docker run --gpus all IMAGE ...",)


def test_no_gpu_stays_quiet_when_the_bus_has_one_the_driver_cannot_see(kb):
    findings, _ = ids(healthy(**{"gpus.list": [], "driver.loaded": False, "driver.version": None}), kb)
    assert "no-gpu" not in findings


def test_unknown_inputs_are_not_checked_rather_than_healthy(kb):
    facts = Facts([Fact.unknown("pci.nvidia_gpus", "no sysfs"), Fact.unknown("driver.loaded", "no /proc"),
                   Fact.unknown("gpus.list", "no sources"), Fact.unknown("system.shm_bytes", "no /proc/mounts"),
                   Fact.unknown("driver.version", "no /proc"), Fact("driver.userspace_libs", []),
                   Fact.unknown("driver.nouveau_loaded", "no /proc"), Fact.unknown("system.shm_access", "no /proc/mounts")])
    findings, skipped = ids(facts, kb)
    assert findings == {}
    assert set(skipped) == {"driver-missing", "nouveau-loaded", "driver-library-mismatch", "driver-gpu-unsupported", "no-gpu", "shm-too-small",
                            "shm-not-writable", "container-image-ships-driver-libs"}
    assert "no sysfs" in skipped["driver-missing"]


@pytest.mark.parametrize(
    "shm_mib, gpus, container, fires",
    [
        (64, 2, False, True),
        (64, 1, False, False),
        (64, 0, True, True),
        (511, 8, False, True),
        (512, 8, True, False),
        (16384, 8, True, False),
    ],
)
def test_shm_too_small_needs_a_small_shm_and_several_gpus_or_a_container(kb, shm_mib, gpus, container, fires):
    gpu_list = [{"index": i, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0"} for i in range(gpus)]
    facts = healthy(**{"system.shm_bytes": shm_mib * MIB, "gpus.list": gpu_list, "system.container": container})
    findings, _ = ids(facts, kb)
    assert ("shm-too-small" in findings) is fires
    if fires:
        finding = findings["shm-too-small"]
        assert finding.severity is Severity.WARNING
        assert f"{shm_mib} MiB" in finding.message and "512 MiB" in finding.message
        assert any("--shm-size" in c for c in finding.fix.commands)


def test_shm_counts_gpus_on_the_bus_when_the_driver_lists_none(kb):
    facts = healthy(**{"system.shm_bytes": 64 * MIB, "pci.nvidia_gpus": [H100, H100]})
    facts = Facts([*(facts.fact(k) for k in facts if k != "gpus.list"), Fact.unknown("gpus.list", "x")])
    findings, _ = ids(facts, kb)
    assert "on a host with 2 GPUs" in findings["shm-too-small"].message


@pytest.mark.parametrize("finding_id", ["driver-missing", "nouveau-loaded", "driver-library-mismatch", "no-gpu", "shm-too-small"])
def test_explain_prints_every_section_for_each_rule(finding_id):
    text = explanation(finding_id)
    for section in ("What it does", "Why is this bad?", "Example", "Fix"):
        assert f"\n{section}\n" in f"\n{text}"
