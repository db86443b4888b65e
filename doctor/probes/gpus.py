"""NVIDIA GPUs: on the PCI bus, and as the driver sees them.

Shell equivalents:
    grep -l 0x10de /sys/bus/pci/devices/*/vendor           # pci.nvidia_gpus
    nvidia-smi --query-gpu=index,name,... --format=csv       # gpus.list on a live host
    cat /proc/driver/nvidia/gpus/*/information               # gpus.list with --root
    echo ${CUDA_VISIBLE_DEVICES-unset}                       # gpus.visible_devices
    echo ${NVIDIA_DRIVER_CAPABILITIES-unset}                 # gpus.driver_capabilities

gpus.list comes from the best source that answers: NVML, then nvidia-smi (live host
only, shared with probes/driver.py), then the driver's /proc files, then bare PCI ids.
A GPU's compute capability is only what the source reports; rules look up names and
PCI ids in the KB (`GpuKB.cc_for_gpu`), so a newer KB re-judges saved facts correctly.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Iterable

from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, Read, probe
from fwdoctor.probes.driver import nvml_snapshot

PCI_DEVICES = "/sys/bus/pci/devices"
PROC_GPUS = "/proc/driver/nvidia/gpus"
READS = (Read(PCI_DEVICES + "/**"), Read(PROC_GPUS + "/**"))  # kept from an image
NVIDIA_VENDOR = "0x10de"
DISPLAY_CLASS = "0x03"  # PCI base class 03: display controller (VGA 0x0300, 3D 0x0302)

_HEX_ID = re.compile(r"^0x[0-9a-fA-F]{4}$")
_HEX_CLASS = re.compile(r"^0x[0-9a-fA-F]{6}$")
_SLOT = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


# ----------------------------------------------------------------------------- parsers
def parse_proc_information(text: str) -> dict[str, str | None] | None:
    """/proc/driver/nvidia/gpus/<slot>/information -> model, uuid, bus location.

    The file is "Key:  value" lines ("Model:           NVIDIA H100 80GB HBM3"); None
    when there is no Model line (not this file, or garbage).
    """
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and key.strip() not in values:
            values[key.strip()] = value.strip()
    model = values.get("Model")
    if not model:
        return None
    bus = values.get("Bus Location")
    return {
        "name": model,
        "uuid": values.get("GPU UUID") or None,
        "bus_id": bus if bus and _SLOT.match(bus) else None,
    }


# ----------------------------------------------------------------------------- probes
@probe("pci", provides=("pci.nvidia_gpus",))
def pci_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    if not host.is_dir(PCI_DEVICES):
        yield Fact.unknown("pci.nvidia_gpus", f"no {PCI_DEVICES} here (an image or a copied tree has no sysfs)")
        return
    found: list[dict[str, str]] = []
    for slot in host.listdir(PCI_DEVICES):
        base = posixpath.join(PCI_DEVICES, slot)
        vendor = _sysfs_value(host, base, "vendor")
        if vendor != NVIDIA_VENDOR:
            continue
        device = _sysfs_value(host, base, "device")
        klass = _sysfs_value(host, base, "class")
        if device is None or not _HEX_ID.match(device) or klass is None or not _HEX_CLASS.match(klass):
            yield ProbeFailure("pci", f"{base}: unparseable output: device={device!r} class={klass!r}")
            continue
        if klass.startswith(DISPLAY_CLASS):
            found.append({"slot": slot, "device_id": device, "class": klass})
    yield Fact("pci.nvidia_gpus", found, source=PCI_DEVICES)


def _sysfs_value(host: Host, base: str, name: str) -> str | None:
    text = host.read_text(posixpath.join(base, name), limit=64)
    return None if text is None else text.strip().lower()


@probe("gpus", provides=("gpus.list",))
def gpus_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    snap = nvml_snapshot(host)
    if snap is not None and snap.gpus is not None:
        yield Fact("gpus.list", snap.gpus, source=snap.source or "")
        return
    # NVML/nvidia-smi failures are reported once, by the driver area's "nvml" probe.
    proc = list(_proc_gpus(host))
    failures = [p for p in proc if isinstance(p, ProbeFailure)]
    gpus = [p for p in proc if isinstance(p, dict)]
    yield from failures
    if gpus:
        yield Fact("gpus.list", gpus, source=PROC_GPUS)
        return
    pci = facts.get("pci.nvidia_gpus")
    if pci is not None:
        listed = [
            {"index": i, "name": f"NVIDIA device {dev['device_id']}", "cc": None, "memory_mib": None, "uuid": None,
             "bus_id": dev["slot"], "mig": None, "persistence": None, "source": "pci"}
            for i, dev in enumerate(pci)
        ]
        yield Fact("gpus.list", listed, source=PCI_DEVICES)
        return
    why = snap.why if snap is not None and snap.why else f"no NVML, no {PROC_GPUS} and no {PCI_DEVICES}"
    yield Fact.unknown("gpus.list", why)


def _proc_gpus(host: Host) -> Iterable[dict[str, Any] | ProbeFailure]:
    for index, slot in enumerate(host.listdir(PROC_GPUS)):
        path = posixpath.join(PROC_GPUS, slot, "information")
        text = host.read_text(path)
        if text is None:
            continue
        info = parse_proc_information(text)
        if info is None:
            first = (text.strip().splitlines() or [""])[0]
            yield ProbeFailure("gpus", f"{path}: unparseable output: {first[:200]!r}")
            continue
        yield {
            "index": index,
            "name": info["name"],
            "cc": None,
            "memory_mib": None,
            "uuid": info["uuid"],
            "bus_id": info["bus_id"] or slot,
            "mig": None,
            "persistence": None,
            "source": "proc",
        }


@probe("visible_devices", provides=("gpus.visible_devices",))
def visible_devices_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    """CUDA_VISIBLE_DEVICES of the inspected environment (live: the doctor's own, --root:
    the --env-file, an image: its ENV): None when unset, which CUDA reads as "every GPU"."""
    value = host.env.get("CUDA_VISIBLE_DEVICES")
    yield Fact("gpus.visible_devices", value, source="$CUDA_VISIBLE_DEVICES" if value is not None else "CUDA_VISIBLE_DEVICES unset")


@probe("driver_capabilities", provides=("gpus.driver_capabilities",))
def driver_capabilities_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    """NVIDIA_DRIVER_CAPABILITIES of the inspected environment (live: the doctor's own, which
    in a GPU container is what the runtime was given; --root: the --env-file; an image: its
    ENV): which driver libraries the NVIDIA container runtime mounts. None when unset."""
    value = host.env.get("NVIDIA_DRIVER_CAPABILITIES")
    yield Fact("gpus.driver_capabilities", value,
               source="$NVIDIA_DRIVER_CAPABILITIES" if value is not None else "NVIDIA_DRIVER_CAPABILITIES unset")


PROBES: tuple[Probe, ...] = (pci_probe, gpus_probe, visible_devices_probe, driver_capabilities_probe)
