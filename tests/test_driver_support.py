"""A driver that cannot run a GPU on the host: `check` raises driver-gpu-unsupported and
`select torch` refuses, naming the driver branch that would run it.

Logic tests: they read the frozen tests/kb plus `families` rows written here (the frozen KB
predates them; tests/kb/README.md: "a test that needs an invented row builds it in
tmp_path"). The rows copy the shipped ones for the families used. One end-to-end `check`
on a fixture root reads the shipped KB (doctor/kb), as a user's run would.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fwdoctor import selection as sel
from fwdoctor.engine import judge
from fwdoctor.kb import KB, KB_DIR
from fwdoctor.model import Fact, Facts, Severity
from fwdoctor.render.explain import explanation
from fwdoctor.rules import driver as driver_rules

TESTS = Path(__file__).resolve().parent
# The shipped rows (doctor/kb/gpus.yaml `families`) for the families these tests use.
FAMILIES = """
families:
  - {family: Kepler, cc: ["3.0", "3.5", "3.7"], last_branch: 470, last_release: "470.239.06", legacy: true, open_modules: unsupported, source: S-CUDALEGACY}
  - {family: Pascal, cc: ["6.0", "6.1"], last_branch: 580, last_release: "580.126.18", open_modules: unsupported, source: S-CUDALEGACY}
  - {family: Volta, cc: ["7.0"], last_branch: 580, last_release: "580.126.18", open_modules: unsupported, source: S-CUDAGPUS}
  - {family: Hopper, cc: ["9.0"], first_branch: 520, first_release: "520.56.06", open_modules: supported, source: S-CUDAGPUS}
  - {family: Blackwell GeForce/RTX PRO, cc: ["12.0"], first_branch: 570, first_release: "570.86.16", open_modules: required, source: S-CUDAGPUS}
"""
K80 = {"slot": "0000:00:1e.0", "device_id": "0x102d", "class": "0x030200"}


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kb")
    for f in (TESTS / "kb").glob("*.yaml"):
        shutil.copy(f, folder / f.name)
    gpus = folder / "gpus.yaml"
    gpus.write_text(gpus.read_text() + FAMILIES)
    return KB.load(folder)


def facts(version, flavor, gpus=None, pci=None):
    values = {"driver.version": version, "driver.module_flavor": flavor, "gpus.list": gpus or [], "pci.nvidia_gpus": pci or []}
    return Facts([Fact(k, v, source="test") for k, v in values.items()])


def nvml(name, cc, bus="00000000:01:00.0"):
    return [{"index": 0, "name": name, "cc": cc, "bus_id": bus, "source": "nvml"}]


def run(kb, f):
    report = judge(f, kb, driver_rules.RULES)
    return {x.id: x for x in report.findings}, {n.rule: n.reason for n in report.not_checked}


# ----------------------------------------------------------------------------- check
def test_a_k80_the_driver_ignores_is_found_by_its_pci_id(kb):
    # R510+ ignores Kepler: NVML lists nothing, the probe falls back to the PCI bus
    # ("NVIDIA device 0x102d"), whose id names the K80.
    listed = [{"index": 0, "name": "NVIDIA device 0x102d", "cc": None, "bus_id": K80["slot"], "source": "pci"}]
    found, _ = run(kb, facts("535.230.02", "proprietary", listed, [K80]))
    hit = found["driver-gpu-unsupported"]
    assert hit.severity is Severity.ERROR
    assert "Tesla K80 (Kepler, sm_37) runs only on driver branches up to R470 (legacy)" in hit.message
    assert "535.230.02" in hit.message and "R470 legacy branch (e.g. 470.239.06)" in hit.message
    assert hit.fix.commands[0] == "sudo apt install nvidia-driver-470-server"


def test_a_k80_on_r470_is_fine(kb):
    found, skipped = run(kb, facts("470.239.06", "proprietary", nvml("Tesla K80", "3.7"), [K80]))
    assert "driver-gpu-unsupported" not in found and "driver-gpu-unsupported" not in skipped


def test_a_gpu_only_on_the_bus_is_checked_too(kb):
    # Not in gpus.list at all (another GPU is): still judged from pci.nvidia_gpus.
    h100 = {"slot": "0000:62:00.0", "device_id": "0x2330", "class": "0x030200"}
    found, _ = run(kb, facts("535.230.02", "proprietary", nvml("NVIDIA H100 80GB HBM3", "9.0", "00000000:62:00.0"), [h100, K80]))
    assert "Tesla K80" in found["driver-gpu-unsupported"].message


@pytest.mark.parametrize(("version", "fires"), [("580.126.18", False), ("590.48.01", True)])
def test_volta_ends_with_r580(kb, version, fires):
    found, _ = run(kb, facts(version, "proprietary", nvml("Tesla V100-SXM2-16GB", "7.0")))
    assert ("driver-gpu-unsupported" in found) is fires
    if fires:
        assert "up to R580" in found["driver-gpu-unsupported"].message


def test_blackwell_before_r570(kb):
    found, _ = run(kb, facts("550.163.01", "open", nvml("NVIDIA GeForce RTX 5090", "12.0")))
    message = found["driver-gpu-unsupported"].message
    assert "needs driver branch R570 or newer" in message and "R570 or newer (e.g. 570.86.16)" in message


def test_blackwell_on_the_proprietary_modules(kb):
    found, _ = run(kb, facts("575.64.05", "proprietary", nvml("NVIDIA GeForce RTX 5090", "12.0")))
    hit = found["driver-gpu-unsupported"]
    assert "runs only with the open NVIDIA kernel modules" in hit.message
    assert hit.fix.commands[0] == "sudo apt install nvidia-driver-575-server-open"
    assert not run(kb, facts("575.64.05", "open", nvml("NVIDIA GeForce RTX 5090", "12.0")))[0]


def test_pascal_on_the_open_modules(kb):
    found, _ = run(kb, facts("550.163.01", "open", nvml("NVIDIA GeForce GTX 1080 Ti", "6.1")))
    assert "not supported by the open NVIDIA kernel modules" in found["driver-gpu-unsupported"].message
    assert not run(kb, facts("550.163.01", "proprietary", nvml("NVIDIA GeForce GTX 1080 Ti", "6.1")))[0]


def test_an_unknown_flavour_checks_only_the_branches(kb):
    assert not run(kb, facts("575.64.05", None, nvml("NVIDIA GeForce RTX 5090", "12.0")))[0]


def test_unknown_gpus_are_not_checked_and_no_module_is_silent(kb):
    unknown = Facts([Fact("driver.version", "535.230.02", source="t"), Fact("driver.module_flavor", "open", source="t"),
                     Fact.unknown("gpus.list", "no NVML"), Fact.unknown("pci.nvidia_gpus", "no sysfs")])
    found, skipped = run(kb, unknown)
    assert "driver-gpu-unsupported" in skipped and not found
    found, skipped = run(kb, facts(None, None, [], [K80]))
    assert "driver-gpu-unsupported" not in found and "driver-gpu-unsupported" not in skipped


def test_a_kb_without_families_says_nothing(test_kb):
    found, skipped = run(test_kb, facts("535.230.02", "proprietary", nvml("Tesla K80", "3.7"), [K80]))
    assert "driver-gpu-unsupported" not in found and "driver-gpu-unsupported" not in skipped


def test_the_rule_explains_itself():
    text = explanation("driver-gpu-unsupported")
    for section in ("What it does", "Why is this bad?", "Example", "Fix", "470.xx Legacy drivers"):
        assert section in text


@pytest.fixture
def k80_root(tmp_path):
    """The driver-ok fixture root (an H100 on 580.95.05) turned into an AWS p2 host after an
    upgrade to R535: the K80's PCI id on the bus, no /proc/driver/nvidia/gpus entry (the
    driver ignored it), a proprietary 535.230.02 module (/proc text as that driver writes it)."""
    root = tmp_path / "root"
    shutil.copytree(TESTS / "roots" / "driver-ok", root, symlinks=True)
    shutil.rmtree(root / "proc/driver/nvidia/gpus")
    (root / "sys/bus/pci/devices/0000:62:00.0/device").write_text("0x102d\n")
    (root / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.230.02  Tue Dec 10 09:55:41 UTC 2024\n"
        "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04) \n")
    (root / "sys/module/nvidia/version").write_text("535.230.02\n")
    libs = root / "usr/lib/x86_64-linux-gnu"
    for lib in libs.iterdir():
        lib.rename(libs / lib.name.replace("580.95.05", "535.230.02"))
    return root


def test_check_on_a_k80_root_with_a_newer_driver(k80_root, check_json):
    code, report = check_json("--root", str(k80_root), "--kb", str(KB_DIR))
    hits = [f for f in report["findings"] if f["id"] == "driver-gpu-unsupported"]
    assert code == 1 and len(hits) == 1, json.dumps(report["findings"], indent=1)[:2000]
    assert "Tesla K80" in hits[0]["message"] and "R470" in hits[0]["message"]


def test_select_on_the_same_root_refuses(k80_root, cli):
    result = cli("select", "torch", "--root", str(k80_root), "--kb", str(KB_DIR), "--python", "3.11")
    assert result.exit_code == 1, result.output
    assert "refused: the driver cannot run the GPU" in result.output
    assert "Tesla K80 (Kepler, sm_37) runs only on driver branches up to R470 (legacy)" in result.output


# ----------------------------------------------------------------------------- select torch
def target(driver, *gpus, python="3.11"):
    return sel.Target(python, driver, tuple(sel.Gpu(name, cc) for name, cc in gpus))


def test_select_refuses_a_k80_on_r535_and_says_what_r470_gets(kb):
    refused = sel.select_torch(kb, target("535.230.02", ("Tesla K80", "3.7")))
    assert not refused.ok
    assert refused.driver_problems == ("Tesla K80 (Kepler, sm_37) runs only on driver branches up to R470 (legacy); driver 535.230.02 (R535) does not support it",)
    on_r470 = sel.select_torch(kb, target("470.239.06", ("Tesla K80", "3.7")))
    assert on_r470.ok and on_r470.choice.cuda.startswith("11.")  # CUDA 12 needs >= 525.60.13
    assert refused.driver_hints == (f"on R470 (e.g. 470.239.06) the newest torch is {on_r470.choice.local_version}",)
    text = sel.render_text(refused)
    assert "refused: the driver cannot run the GPU" in text and on_r470.choice.local_version in text


def test_select_refuses_blackwell_before_r570(kb):
    refused = sel.select_torch(kb, target("550.163.01", ("NVIDIA GeForce RTX 5090", "12.0")))
    assert not refused.ok and "needs driver branch R570 or newer" in refused.reason
    assert refused.driver_hints[0].startswith("on R570 (e.g. 570.86.16) ")
    # Without the driver check the wheels alone would have allowed one (the bug).
    assert sel.select_torch(kb, target("550.163.01", ("NVIDIA GeForce RTX 5090", "12.0")), check_driver=False).ok


def test_select_names_every_gpu_the_driver_cannot_run(kb):
    refused = sel.select_torch(kb, target("590.48.01", ("Tesla K80", "3.7"), ("Tesla V100", "7.0"), ("H100", "9.0")))
    assert len(refused.driver_problems) == 2
    assert "R580 (e.g. 580.126.18) does not run every GPU here either" in " ".join(refused.driver_hints)


def test_select_json_carries_the_refusal(kb, cli):
    result = cli("select", "torch", "--kb", str(kb.directory), "--driver", "535.230.02", "--gpu", "Tesla K80", "--python", "3.11", "--json")
    data = json.loads(result.output)
    assert result.exit_code == 1 and data["choice"] is None
    assert data["driver_problems"][0].startswith("Tesla K80 (Kepler, sm_37)")
    assert data["driver_hints"][0].startswith("on R470 (e.g. 470.239.06) the newest torch is ")
