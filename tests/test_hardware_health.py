"""Hardware health (issue 27): PCIe links, IOMMU mode and ACS read from sysfs on the fixture
roots tests/roots/hw-degraded and hw-healthy (README.fixture in each), the rules valid and
invalid on Facts built here, and whole `check --root` runs. The NVML side (ECC, remapped
rows, NVLink, clock reasons) runs through the stand-in GPU host in tests/test_gpuhost.py."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from fwdoctor.engine import judge
from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, Severity
from fwdoctor.probes import gpus, hardware
from fwdoctor.rules import hardware as rules

ROOTS = Path(__file__).resolve().parent / "roots"


# ----------------------------------------------------------------------------- parsers
def test_link_speeds_in_both_kernel_formats_and_their_generation():
    assert hardware.parse_link_speed("16.0 GT/s PCIe\n") == 16.0
    assert hardware.parse_link_speed("8 GT/s") == 8.0  # kernels before 5.x print no decimals
    assert hardware.parse_link_speed("Unknown") is None
    assert [hardware.generation(s) for s in (2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 3.0)] == [1, 2, 3, 4, 5, 6, None]
    assert hardware.parse_link_width("16\n") == 16 and hardware.parse_link_width("0") is None


def test_the_kernel_command_line_and_group_types_decide_the_iommu_mode():
    cmd = hardware.parse_cmdline("BOOT_IMAGE=/vmlinuz ro quiet intel_iommu=on iommu=pt splash")
    assert cmd == {"intel_iommu": "on", "iommu": "pt"}
    assert hardware.iommu_mode(cmd, [], ["dmar0"]) == "passthrough"
    assert hardware.iommu_mode({"intel_iommu": "on"}, [], ["dmar0"]) == "translation"
    assert hardware.iommu_mode({}, ["DMA-FQ"], ["dmar0"]) == "translation"  # the group's own type wins
    assert hardware.iommu_mode({"iommu": "pt"}, ["identity"], ["dmar0"]) == "passthrough"
    assert hardware.iommu_mode({}, [], []) == "off"
    assert hardware.iommu_mode({}, [], ["dmar0"]) is None  # a unit, no group type, no argument: not known


def test_the_acs_control_register_is_found_by_walking_the_extended_capabilities():
    config = bytearray(4096)
    config[0x100:0x104] = struct.pack("<I", 0x0001 | (1 << 16) | (0x148 << 20))  # AER, next at 0x148
    config[0x148:0x14C] = struct.pack("<I", 0x000D | (1 << 16))  # ACS, last
    config[0x14E:0x150] = struct.pack("<H", 0x001D)
    assert hardware.acs_control(bytes(config)) == 0x001D
    assert hardware.acs_control(bytes(config[:64])) is None  # an unprivileged read stops at 64 bytes
    loop = bytearray(4096)
    loop[0x100:0x104] = struct.pack("<I", 0x0001 | (0x100 << 20))  # points at itself
    assert hardware.acs_control(bytes(loop)) is None


def test_clock_event_reasons_by_name():
    assert hardware.clock_event_reasons(0x41) == ["gpu_idle", "hw_thermal_slowdown"]


# ----------------------------------------------------------------------------- probes on roots
def probe_facts(root: str) -> Facts:
    host = Host.at_root(ROOTS / root)
    items: list[Fact] = []
    for p in (gpus.pci_probe, *hardware.PROBES):
        items += [f for f in p.func(host, Facts(items)) if isinstance(f, Fact)]
    return Facts(items)


def test_a_degraded_root_reads_the_x8_gen1_link_the_translating_iommu_and_acs_on_the_switch():
    facts = probe_facts("hw-degraded")
    links = {link["slot"]: link for link in facts["gpus.pcie_links"]}
    assert links["0000:04:00.0"] == {"slot": "0000:04:00.0", "speed_gts": 2.5, "max_speed_gts": 32.0, "gen": 1, "max_gen": 5, "width": 8, "max_width": 16}
    assert (links["0000:03:00.0"]["width"], links["0000:03:00.0"]["gen"]) == (16, 5)
    iommu = facts["system.iommu"]
    assert iommu["mode"] == "translation" and iommu["cmdline"] == {"intel_iommu": "on"} and iommu["units"] == ["dmar0"]
    assert [(g["slot"], g["group"], g["type"]) for g in iommu["gpu_groups"]] == [("0000:03:00.0", "20", "DMA-FQ"), ("0000:04:00.0", "21", "DMA-FQ")]
    acs = {b["bridge"]: b for b in facts["pci.acs"]}
    assert set(acs) == {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:02:01.0"}
    assert acs["0000:02:00.0"]["redirect"] is True and acs["0000:02:00.0"]["acs_ctrl"] == 0x1D
    assert acs["0000:01:00.0"]["redirect"] is False and acs["0000:01:00.0"]["gpus"] == ["0000:03:00.0", "0000:04:00.0"]
    assert not facts.known("gpus.clocks_event_reasons")  # an NVML question: a root cannot answer


def test_a_healthy_root_reads_full_links_and_passthrough():
    facts = probe_facts("hw-healthy")
    assert {(link["width"], link["gen"]) for link in facts["gpus.pcie_links"]} == {(16, 5)}
    assert facts["system.iommu"]["mode"] == "passthrough"
    assert {b["redirect"] for b in facts["pci.acs"]} == {False}


def test_a_root_without_link_files_leaves_the_links_unknown_with_the_reason():
    facts = probe_facts("driver-ok")
    assert not facts.known("gpus.pcie_links") and "current_link_speed" in facts.why("gpus.pcie_links")
    assert facts["pci.acs"] == []  # one GPU: no peer to detour


# ----------------------------------------------------------------------------- rules
def facts_of(**values: object) -> Facts:
    return Facts([Fact(key.replace("__", "."), value, source="test") for key, value in values.items()])


def one(rule, facts: Facts) -> list:
    return judge(facts, None, [rule]).findings


def link(width: int, speed: float, max_width: int = 16, max_speed: float = 32.0) -> dict:
    return {"slot": "0000:1b:00.0", "speed_gts": speed, "max_speed_gts": max_speed, "gen": hardware.generation(speed),
            "max_gen": hardware.generation(max_speed), "width": width, "max_width": max_width}


def test_a_narrow_link_warns_and_a_slow_one_alone_is_information():
    (narrow,) = one(rules.pcie_link_degraded, facts_of(gpus__pcie_links=[link(8, 2.5)]))
    assert narrow.severity == Severity.WARNING
    assert narrow.message == "GPU 0000:1b:00.0: PCIe link at x8 2.5 GT/s (Gen1), capable of x16 32 GT/s (Gen5)"
    (slow,) = one(rules.pcie_link_degraded, facts_of(gpus__pcie_links=[link(16, 2.5)]))
    assert slow.severity == Severity.INFO and "idle" in slow.message
    assert one(rules.pcie_link_degraded, facts_of(gpus__pcie_links=[link(16, 32.0)])) == []


def test_iommu_translation_fires_only_in_translation_mode():
    (hit,) = one(rules.iommu_translation, facts_of(system__iommu={"mode": "translation", "cmdline": {"intel_iommu": "on"}, "units": ["dmar0"], "gpu_groups": []}))
    assert "kernel command line: intel_iommu=on" in hit.message and "iommu=pt" in hit.fix.commands[0]
    for mode in ("passthrough", "off", None):
        assert one(rules.iommu_translation, facts_of(system__iommu={"mode": mode, "cmdline": {}, "units": [], "gpu_groups": []})) == []


def test_acs_redirect_names_the_bridge_and_the_command_that_clears_it():
    bridge = {"bridge": "0000:02:00.0", "gpus": ["0000:03:00.0"], "acs_ctrl": 0x1D, "redirect": True}
    (hit,) = one(rules.pcie_acs_redirect, facts_of(pci__acs=[bridge, {**bridge, "bridge": "0000:01:00.0", "acs_ctrl": 0, "redirect": False}]))
    assert "0000:02:00.0" in hit.message and "0x001d" in hit.message
    assert hit.fix.commands == ("sudo setpci -s 0000:02:00.0 ECAP_ACS+0x6.w=0000",)
    assert one(rules.pcie_acs_redirect, facts_of(pci__acs=[{**bridge, "redirect": None}])) == []  # unreadable: no guess


def test_ecc_nvlink_clocks_and_persistence():
    health = [{"index": 0, "bus_id": "b0", "ecc_uncorrected_volatile": 0}, {"index": 1, "bus_id": "b1", "ecc_uncorrected_volatile": 3, "ecc_uncorrected_aggregate": 9}]
    (ecc,) = one(rules.gpu_ecc_uncorrected, facts_of(gpus__health=health))
    assert ecc.message == "GPU 1 (b1): 3 uncorrectable ECC errors since the driver loaded (9 over its life)"
    (down,) = one(rules.nvlink_down, facts_of(topology__nvlink=[{"index": 0, "links": 18, "active": 18}, {"index": 4, "links": 18, "active": 16}]))
    assert down.message == "GPU 4: 2 of 18 NVLink links down" and down.severity == Severity.ERROR
    assert one(rules.nvlink_down, facts_of(topology__nvlink=[{"index": 0, "links": 0, "active": 0}])) == []
    reasons = [{"index": 0, "bus_id": "b0", "reasons": ["gpu_idle", "sw_power_cap"]}, {"index": 1, "bus_id": "b1", "reasons": ["hw_slowdown", "sync_boost"]}]
    (hot,) = one(rules.gpu_clocks_throttled, facts_of(gpus__clocks_event_reasons=reasons))
    assert hot.message == "GPU 1 (b1): clocks held down by hw slowdown"
    (off,) = one(rules.gpu_persistence_off, facts_of(gpus__list=[{"index": 0, "persistence": True}, {"index": 1, "persistence": False}, {"index": 2, "persistence": None}]))
    assert off.message.startswith("persistence mode is off on GPU 1:")


def test_the_gate_rules_compare_with_the_node_type_and_name_the_expected_value():
    listed = [{"index": i, "name": "NVIDIA H100 80GB HBM3" if i != 5 else None} for i in range(8)]
    expected = {"gpus": 8, "from": "policy expect.gpus", "pcie_width": 16, "pcie_gen": 5, "nvlinks": 18, "gpu_model": "NVIDIA H100 80GB HBM3"}
    (low,) = one(rules.gpu_count_low, facts_of(gpus__list=listed, node__expected=expected))
    assert low.message == "7 of 8 GPUs answer (expected 8 from policy expect.gpus)"
    assert one(rules.gpu_count_low, facts_of(gpus__list=[g for g in listed if g["name"]], node__expected={"gpus": 7})) == []
    facts = facts_of(gpus__list=listed[:1], node__expected=expected, gpus__pcie_links=[link(8, 2.5)],
                     topology__nvlink=[{"index": 0, "links": 18, "active": 12}])
    messages = sorted(f.message for f in one(rules.node_differs_from_type, facts))
    assert messages == ["GPU 0 has 12 NVLink links up, the type's normal is 18 (policy expect.gpus)",
                        "GPU 0000:1b:00.0 PCIe width x8, the type's normal is x16 (policy expect.gpus)"]


def test_check_does_not_list_the_gate_rules():
    from fwdoctor.rules import RULES

    assert not set(rules.GATE_RULES) & set(RULES)


# ----------------------------------------------------------------------------- check --root
def test_check_root_reports_the_degraded_link_the_iommu_and_acs(cli, use_test_kb):
    result = cli("check", "--root", str(ROOTS / "hw-degraded"), "--json")
    report = json.loads(result.stdout)
    found = sorted((f["id"], f["severity"]) for f in report["findings"])
    assert found == [("iommu-translation", "warning"), ("pcie-acs-redirect", "warning"), ("pcie-acs-redirect", "warning"), ("pcie-link-degraded", "warning")]
    (link_finding,) = [f for f in report["findings"] if f["id"] == "pcie-link-degraded"]
    assert link_finding["message"] == "GPU 0000:04:00.0: PCIe link at x8 2.5 GT/s (Gen1), capable of x16 32 GT/s (Gen5)"
    assert result.exit_code == 0  # warnings only


def test_check_root_on_the_healthy_twin_is_clean(cli, use_test_kb):
    report = json.loads(cli("check", "--root", str(ROOTS / "hw-healthy"), "--json").stdout)
    assert report["findings"] == []
