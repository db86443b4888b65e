"""Hardware health a scheduler cares about, read without running a GPU workload: each GPU's
PCIe link, the IOMMU mode, ACS on the PCIe bridges between GPUs, and NVML's clock event
(throttle) reasons.

Shell equivalents:
    cat /sys/bus/pci/devices/<gpu>/{current,max}_link_{speed,width}      # gpus.pcie_links
    cat /proc/cmdline; ls /sys/class/iommu; cat /sys/kernel/iommu_groups/*/type   # system.iommu
    setpci -s <bridge> ECAP_ACS+0x6.w                                     # pci.acs
    nvidia-smi -q -d PERFORMANCE                                          # gpus.clocks_event_reasons

ECC counts, retired pages and remapped rows join `gpus.health` (probes/topology.py) and
NVLink states `topology.nvlink`, both from the NVML child of probes/driver.py. Everything
here but the clock reasons is a file and works the same under --root.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Iterable

from fwdoctor.host import Host, UnreadableError
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, Read, probe

PCI_DEVICES = "/sys/bus/pci/devices"
IOMMU_CLASS = "/sys/class/iommu"
IOMMU_GROUPS = "/sys/kernel/iommu_groups"
CMDLINE = "/proc/cmdline"
CONFIG_LIMIT = 4096  # PCIe extended configuration space; unprivileged readers get 64 bytes
READS = (Read(CMDLINE, limit=8192), Read(IOMMU_GROUPS + "/*/type", limit=64))

# PCIe transfer rate per lane -> generation (PCI-SIG: Gen1 2.5 GT/s, Gen2 5, Gen3 8, Gen4 16,
# Gen5 32, Gen6 64). sysfs prints "16.0 GT/s PCIe" (Linux 5.x+, drivers/pci/pci-sysfs.c
# current_link_speed_show via pci_speed_string) or "8 GT/s" on older kernels.
GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

# include/uapi/linux/pci_regs.h: extended capabilities start at 0x100; the ACS capability's
# id is 0x000d (PCI_EXT_CAP_ID_ACS); its control register sits at +0x06 (PCI_ACS_CTRL, the
# ECAP_ACS+0x6.w of setpci); PCI_ACS_RR 0x0004 (P2P request redirect) and PCI_ACS_CR 0x0008
# (P2P completion redirect) are the bits that send peer-to-peer traffic up to the root complex.
EXT_CAP_START = 0x100
EXT_CAP_ID_ACS = 0x000D
ACS_CTRL = 0x06
ACS_RR = 0x0004
ACS_CR = 0x0008

# nvml.h nvmlClocksEventReason* bits (nvidia-ml-py 13.615.71 pynvml.py), by name.
CLOCK_EVENT_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

_SPEED = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s")
_SLOT = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_IOMMU_ARGS = ("iommu", "iommu.passthrough", "iommu.strict", "intel_iommu", "amd_iommu")


# ----------------------------------------------------------------------------- parsers
def parse_link_speed(text: str | None) -> float | None:
    """"16.0 GT/s PCIe" / "8 GT/s" -> 16.0 / 8.0; None for "Unknown" or garbage."""
    m = _SPEED.match(text or "")
    return float(m.group(1)) if m else None


def parse_link_width(text: str | None) -> int | None:
    """"16" -> 16; None for "0" (no link) or garbage."""
    value = (text or "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


def generation(speed: float | None) -> int | None:
    return None if speed is None else GENERATIONS.get(speed)


def parse_cmdline(text: str) -> dict[str, str]:
    """The IOMMU switches of a kernel command line: {"iommu": "pt", "intel_iommu": "on"}
    (the last occurrence wins, as the kernel's parser reads them in order)."""
    out: dict[str, str] = {}
    for token in text.split():
        key, _, value = token.partition("=")
        if key in _IOMMU_ARGS:
            out[key] = value
    return out


def iommu_mode(cmdline: dict[str, str], group_types: list[str], units: list[str]) -> str | None:
    """"translation", "passthrough", "off", or None when nothing here says.

    The GPU's own group type decides where readable (Documentation/ABI/testing/
    sysfs-kernel-iommu_groups: "DMA"/"DMA-FQ" translate, "identity" passes through);
    then the command line (iommu=pt or iommu.passthrough=1: passthrough; intel_iommu=on /
    amd_iommu=on alone: translation; intel_iommu=off: off); then no IOMMU unit at all: off."""
    if any(t in ("DMA", "DMA-FQ") for t in group_types):
        return "translation"
    if group_types and all(t == "identity" for t in group_types):
        return "passthrough"
    if cmdline.get("iommu") == "pt" or cmdline.get("iommu.passthrough") == "1":
        return "passthrough"
    if cmdline.get("intel_iommu") == "off" or cmdline.get("amd_iommu") == "off" or cmdline.get("iommu") == "off":
        return "off"
    if cmdline.get("intel_iommu", "").startswith("on") or cmdline.get("amd_iommu") == "on" or cmdline.get("iommu.passthrough") == "0":
        return "translation"
    if not units:
        return "off"
    return None


def acs_control(config: bytes) -> int | None:
    """The ACS control register from a PCIe configuration space dump, None when the dump
    stops before the extended capabilities or the device has no ACS capability."""
    if len(config) < EXT_CAP_START + 4:
        return None
    offset, seen = EXT_CAP_START, set()
    while offset and offset not in seen and offset + 8 <= len(config):
        seen.add(offset)
        header = int.from_bytes(config[offset:offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == EXT_CAP_ID_ACS:
            return int.from_bytes(config[offset + ACS_CTRL:offset + ACS_CTRL + 2], "little")
        offset = (header >> 20) & 0xFFC
    return None


def clock_event_reasons(mask: int) -> list[str]:
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]


# ----------------------------------------------------------------------------- probes
def _gpu_slots(facts: Facts) -> list[str] | None:
    pci = facts.get("pci.nvidia_gpus")
    return None if pci is None else [dev["slot"] for dev in pci]


@probe("pcie-link", provides=("gpus.pcie_links",))
def pcie_link_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    slots = _gpu_slots(facts)
    if slots is None:
        yield Fact.unknown("gpus.pcie_links", facts.why("pci.nvidia_gpus") or "no PCI device list")
        return
    links = []
    for slot in slots:
        base = posixpath.join(PCI_DEVICES, slot)
        raw = {name: host.read_text(posixpath.join(base, name), limit=64)
               for name in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")}
        if all(v is None for v in raw.values()):
            continue  # not a PCIe function (a root without the link files): nothing to say
        cur, top = parse_link_speed(raw["current_link_speed"]), parse_link_speed(raw["max_link_speed"])
        links.append({
            "slot": slot,
            "speed_gts": cur, "max_speed_gts": top,
            "gen": generation(cur), "max_gen": generation(top),
            "width": parse_link_width(raw["current_link_width"]), "max_width": parse_link_width(raw["max_link_width"]),
        })
    if slots and not links:
        yield Fact.unknown("gpus.pcie_links", f"no current_link_speed/max_link_width under {PCI_DEVICES}/<gpu>")
        return
    yield Fact("gpus.pcie_links", links, source=f"{PCI_DEVICES}/*/{{current,max}}_link_{{speed,width}}")


@probe("iommu", provides=("system.iommu",))
def iommu_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    cmdline_text = host.read_text(CMDLINE, limit=8192)
    if cmdline_text is None and not host.is_dir("/sys/class"):
        yield Fact.unknown("system.iommu", f"no {CMDLINE} and no /sys/class here (an image or a copied tree)")
        return
    cmdline = parse_cmdline(cmdline_text or "")
    units = host.listdir(IOMMU_CLASS)
    groups = []
    for slot in _gpu_slots(facts) or []:
        link = host.readlink(posixpath.join(PCI_DEVICES, slot, "iommu_group"))
        if not link:
            continue
        group = posixpath.basename(link.rstrip("/"))
        kind = (host.read_text(posixpath.join(IOMMU_GROUPS, group, "type"), limit=64) or "").strip() or None
        groups.append({"slot": slot, "group": group, "type": kind})
    mode = iommu_mode(cmdline, [g["type"] for g in groups if g["type"]], units)
    value: dict[str, Any] = {"mode": mode, "cmdline": cmdline, "units": units, "gpu_groups": groups}
    yield Fact("system.iommu", value, source=f"{CMDLINE}, {IOMMU_CLASS}, {IOMMU_GROUPS}/*/type")


@probe("pcie-acs", provides=("pci.acs",))
def acs_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    slots = _gpu_slots(facts)
    if slots is None:
        yield Fact.unknown("pci.acs", facts.why("pci.nvidia_gpus") or "no PCI device list")
        return
    # A GPU's sysfs entry links to its place in the tree (../../../devices/pci0000:00/
    # 0000:00:01.0/0000:01:00.0/<gpu>): every slot-shaped folder above it is a bridge.
    # Peer-to-peer between two GPUs under one switch enters it at the downstream port
    # above the sender, where ACS P2P Request Redirect acts: so every bridge on the path of
    # a GPU that shares a bridge with another GPU is read (as NCCL's guide clears ACS on
    # every bridge); GPUs alone under their root port have no PCIe peer to detour.
    paths: dict[str, list[str]] = {}
    for slot in slots:
        target = host.readlink(posixpath.join(PCI_DEVICES, slot)) or ""
        paths[slot] = [p for p in target.split("/") if _SLOT.match(p)][:-1]
    below: dict[str, list[str]] = {}
    for slot, path in paths.items():
        if any(set(path) & set(other) for o, other in paths.items() if o != slot):
            for bridge in path:
                below.setdefault(bridge, []).append(slot)
    bridges = []
    for bridge, gpus in sorted(below.items()):
        entry: dict[str, Any] = {"bridge": bridge, "gpus": gpus, "acs_ctrl": None, "redirect": None}
        try:
            config = host.read_bytes(posixpath.join(PCI_DEVICES, bridge, "config"), limit=CONFIG_LIMIT)
        except (OSError, UnreadableError) as exc:
            yield ProbeFailure("pcie-acs", f"{PCI_DEVICES}/{bridge}/config: {exc}")
            config = None
        if config is not None and len(config) > EXT_CAP_START:
            ctrl = acs_control(config)
            entry["acs_ctrl"] = ctrl
            entry["redirect"] = None if ctrl is None else bool(ctrl & (ACS_RR | ACS_CR))
            if ctrl is None:
                entry["redirect"] = False  # no ACS capability: nothing to redirect
        else:
            entry["why"] = "extended config space not readable (root reads past byte 64)"
        bridges.append(entry)
    yield Fact("pci.acs", bridges, source=f"{PCI_DEVICES}/<bridge>/config (ACS control, PCI_EXT_CAP_ID_ACS)")


@probe("clock-events", provides=("gpus.clocks_event_reasons",))
def clock_events_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    gpus = facts.get("gpus.list")
    nvml = [g for g in gpus or [] if g.get("source") == "nvml"]
    if gpus == []:
        yield Fact("gpus.clocks_event_reasons", [], source="gpus.list (no GPU)")
        return
    answered = [g for g in nvml if isinstance(g.get("clocks_event_reasons"), int)]
    if not answered:
        yield Fact.unknown("gpus.clocks_event_reasons", "clock event reasons are an NVML query: no NVML answer here")
        return
    yield Fact("gpus.clocks_event_reasons", [
        {"index": g.get("index"), "bus_id": g.get("bus_id"), "mask": g["clocks_event_reasons"],
         "reasons": clock_event_reasons(g["clocks_event_reasons"])} for g in answered], source="nvml")


PROBES: tuple[Probe, ...] = (pcie_link_probe, iommu_probe, acs_probe, clock_events_probe)
