"""Write the files of a fake GPU host into a folder, and the list of mounts that put them
where the kernel and the loader would.

Nothing here mounts anything or touches the real paths: `build` only reads them (to keep
what is there and hide real NVIDIA entries) and writes under `world`. inside.py performs
the mounts in a private mount namespace.

Where things go (what fwdoctor's probes read, see doctor/probes/driver.py, gpus.py and
doctor/smoke/kernel.py):
  /usr/lib/x86_64-linux-gnu  libnvidia-ml.so.<library>, libnvidia-ml.so.1 -> it (overlay)
  /sys/module                nvidia/version and the other nvidia modules (overlay)
  /sys/bus/pci/devices       <bus>/{vendor,device,class} per GPU (overlay)
  /dev                       nvidiactl, nvidia0..N-1 (char 195:N) and nvidia-uvm{,-tools} as the driver makes them (overlay)
  /proc/driver               nvidia/version, nvidia/gpus/<bus>/information (bind; procfs takes no overlay)
  /proc/modules              the host's lines plus the nvidia modules' (bind, where the kernel has the file)
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from .scenario import CLOCK_REASONS, Gpu, Scenario

LIB_DIR = "/usr/lib/x86_64-linux-gnu"
SYS_MODULE = "/sys/module"
PCI_DEVICES = "/sys/bus/pci/devices"
DEV = "/dev"
PROC_DRIVER = "/proc/driver"
PROC_MODULES = "/proc/modules"

# /dev/nvidiaN is char 195:N, /dev/nvidiactl 195:255: the CUDA Linux installation guide's
# "Device Node Verification" script, as in kubernetes-sigs/kubespray roles/nvidia-driver-runfile/files/nv-dev-create.sh
NVIDIA_MAJOR = 195
CTL_MINOR = 255
# nvidia-uvm takes a dynamic major (listed in /proc/devices); nvidia-modprobe makes
# /dev/nvidia-uvm (minor 0) and /dev/nvidia-uvm-tools (minor 1) when the module loads, as
# nv-dev-create.sh above does. 508 is what such a host shows; only the names are read.
UVM_MAJOR = 508
UVM_NODES = {"nvidia-uvm": 0, "nvidia-uvm-tools": 1}

# /proc/driver/nvidia/version as the two module flavours print it; the build host and date
# are those of the recorded files (tests/data/driver/proc-version-580.95.05-open.txt and
# proc-version-515.76-proprietary.txt), only the version is the scenario's.
PROC_VERSION = {
    "open": ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build  "
             "(dvs-builder@U22-I3-B17-02-5)  Tue Sep 23 09:55:41 UTC 2025\n"
             "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04.2) \n"),
    "proprietary": ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Mon Sep 12 19:21:56 UTC 2022\n"
                    "GCC version:  gcc version 7.5.0 (Ubuntu 7.5.0-3ubuntu1~18.04)\n"),
}

# /proc/driver/nvidia/gpus/<bus>/information, laid out as tests/data/driver/proc-gpu-information-h100.txt
# (that file's IRQ, Video BIOS and DMA lines are kept for every GPU; fwdoctor reads only
# Model, GPU UUID and Bus Location).
INFORMATION = (
    "Model:           {name}\n"
    "IRQ:             10\n"
    "GPU UUID:        {uuid}\n"
    "Video BIOS:      96.00.99.00.01\n"
    "Bus Type:        PCIe\n"
    "DMA Size:        52 bits\n"
    "DMA Mask:        0xfffffffffffff\n"
    "Bus Location:    {bus}\n"
    "Device Minor:    {minor}\n"
    "GPU Firmware:    {driver}\n"
    "GPU Excluded:    No\n"
)

# The nvidia lines of /proc/modules, from tests/data/driver/proc-modules-nvidia.txt.
MODULE_LINES = (
    "nvidia_drm 131072 12 - Live 0x0000000000000000 (OE)\n"
    "nvidia_modeset 1712128 6 nvidia_drm, Live 0x0000000000000000 (OE)\n"
    "nvidia_uvm 3960832 0 - Live 0x0000000000000000 (OE)\n"
    "nvidia 78815232 62 nvidia_modeset,nvidia_uvm, Live 0x0000000000000000 (OE)\n"
)
MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm")


def nvml_conf(scenario: Scenario) -> str:
    """The key=value file nvml_standin.c reads (see its header comment)."""
    lines = [
        f"fail={scenario.fail or 'none'}",
        f"driver={scenario.driver}",
        f"library={scenario.library}",
        f"cuda={scenario.cuda_driver_version}",
        f"gpus={len(scenario.driver_gpus())}",
    ]
    for index, (number, gpu) in enumerate(scenario.driver_gpus()):
        combined = (int(gpu.pci_device_id, 16) << 16) | 0x10DE  # nvmlPciInfo_t.pciDeviceId: device << 16 | vendor
        values = {
            "name": gpu.name,
            "uuid": gpu.uuid,
            "bus_id": gpu.bus_id,
            "pci_device_id": f"0x{combined:08x}",
            "cc": f"{gpu.cc[0]}.{gpu.cc[1]}",
            "memory_total": str(gpu.memory_total),
            "mig": "1" if gpu.mig else "0",
            "persistence": "1" if gpu.persistence else "0",
            "lost": "1" if number in scenario.lost_gpus else "0",
            "not_supported": ",".join(_unsupported(scenario, number, gpu)),
        }
        if gpu.remapped_rows is not None:
            values["remapped_rows"] = ",".join(str(int(v)) for v in gpu.remapped_rows)
        if gpu.ecc_uncorrected is not None:
            values["ecc"] = ",".join(str(v) for v in gpu.ecc_uncorrected)
        if gpu.nvlinks:
            values["nvlinks"] = str(gpu.nvlinks)
            values["nvlink_down"] = str(sum(1 << link for link in gpu.nvlinks_down))
        if gpu.clocks_event_reasons is not None:
            values["clocks_event_reasons"] = str(sum(CLOCK_REASONS[r] for r in gpu.clocks_event_reasons))
        lines += [f"gpu.{index}.{key}={value}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def _unsupported(scenario: Scenario, index: int, gpu: Gpu) -> tuple[str, ...]:
    fields = list(scenario.unsupported(index))
    for key in ("mig", "persistence"):  # null in the scenario: this GPU has no such feature
        if getattr(gpu, key) is None and key not in fields:
            fields.append(key)
    return tuple(fields)


# ----------------------------------------------------------------------------- helpers
def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _whiteout(path: Path) -> None:
    """Hide `path` of the layer below (overlayfs: a 0:0 character device)."""
    os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(0, 0))


def _opaque(path: Path) -> None:
    """Hide the contents of the directory of the same name below (overlayfs)."""
    os.setxattr(path, "trusted.overlay.opaque", b"y")


def _device(path: Path, minor: int, major: int = NVIDIA_MAJOR) -> None:
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        os.chmod(path, 0o666)  # mknod applies the umask; the driver makes them 0666
    except PermissionError:  # no CAP_MKNOD: the probes only look at the name
        path.touch()


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _read(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def _hide_below(stage: Path, real: str, ours: set[str], theirs: list[str]) -> None:
    """For names the real folder has: hide the NVIDIA ones we do not define, make ours opaque."""
    present = set(_listdir(real))
    for name in theirs:
        if name in present and name not in ours:
            _whiteout(stage / name)
    for name in ours & present:
        if (stage / name).is_dir():
            _opaque(stage / name)


# ----------------------------------------------------------------------------- the world
def build(scenario: Scenario, world: Path, library: Path) -> dict[str, Any]:
    """Write the fake host's files under `world`; return the manifest for inside.py."""
    loaded = scenario.module_loaded
    steps: list[dict[str, Any]] = []

    # The library, laid out as the driver package (and ldconfig) lay it out.
    lib = world / "lib"
    lib.mkdir(parents=True)
    versioned = f"libnvidia-ml.so.{scenario.library}"
    shutil.copyfile(library, lib / versioned)
    os.chmod(lib / versioned, 0o755)
    os.symlink(versioned, lib / "libnvidia-ml.so.1")
    real_libs = [n for n in _listdir(LIB_DIR) if n.startswith(("libnvidia-ml.so", "libcuda.so"))]
    _hide_below(lib, LIB_DIR, {versioned, "libnvidia-ml.so.1"}, real_libs)
    steps.append({"op": "overlay", "target": LIB_DIR, "stage": str(lib)})

    # Kernel modules.
    sysmod = world / "sys-module"
    sysmod.mkdir()
    ours = set(MODULES) if loaded else set()
    for name in ours:
        (sysmod / name).mkdir()
    if loaded:
        _write(sysmod / "nvidia" / "version", f"{scenario.driver}\n")
    _hide_below(sysmod, SYS_MODULE, ours, [n for n in _listdir(SYS_MODULE) if n.startswith("nvidia") or n == "nouveau"])
    steps.append({"op": "overlay", "target": SYS_MODULE, "stage": str(sysmod)})

    # PCI functions: the GPUs are on the bus whether or not a driver is loaded.
    pci = world / "pci-devices"
    pci.mkdir()
    for gpu in scenario.gpus:
        _write(pci / gpu.bus_id / "vendor", "0x10de\n")
        _write(pci / gpu.bus_id / "device", f"{gpu.pci_device_id}\n")
        _write(pci / gpu.bus_id / "class", f"{gpu.pci_class}\n")
        if gpu.pcie is not None:  # as drivers/pci/pci-sysfs.c prints them
            _write(pci / gpu.bus_id / "current_link_width", f"{gpu.pcie.width}\n")
            _write(pci / gpu.bus_id / "max_link_width", f"{gpu.pcie.max_width}\n")
            _write(pci / gpu.bus_id / "current_link_speed", f"{gpu.pcie.speed}\n")
            _write(pci / gpu.bus_id / "max_link_speed", f"{gpu.pcie.max_speed}\n")
    real_nvidia = [n for n in _listdir(PCI_DEVICES) if (_read(f"{PCI_DEVICES}/{n}/vendor") or "").strip() == "0x10de"]
    _hide_below(pci, PCI_DEVICES, {g.bus_id for g in scenario.gpus}, real_nvidia)
    if os.path.isdir(PCI_DEVICES):
        steps.append({"op": "overlay", "target": PCI_DEVICES, "stage": str(pci)})

    # Device nodes.
    dev = world / "dev"
    dev.mkdir()
    nodes: set[str] = set()
    if loaded:
        _device(dev / "nvidiactl", CTL_MINOR)
        nodes.add("nvidiactl")
        for index in range(len(scenario.driver_gpus())):
            _device(dev / f"nvidia{index}", index)
            nodes.add(f"nvidia{index}")
        # MODULE_LINES load nvidia_uvm, so its nodes are there: a CUDA program opens
        # /dev/nvidia-uvm (and fwdoctor, run in a container as CI is, checks for it).
        for name, minor in UVM_NODES.items():
            _device(dev / name, minor, UVM_MAJOR)
            nodes.add(name)
    _hide_below(dev, DEV, nodes, [n for n in _listdir(DEV) if n.startswith("nvidia")])
    steps.append({"op": "overlay", "target": DEV, "stage": str(dev)})

    # /proc/driver: a folder bound over it, the host's own entries bound back into it.
    procdriver = world / "proc-driver"
    procdriver.mkdir()
    for name in _listdir(PROC_DRIVER):
        if name == "nvidia":
            continue
        placeholder = procdriver / name
        if os.path.isdir(f"{PROC_DRIVER}/{name}"):
            placeholder.mkdir()
        else:
            placeholder.touch()
        steps.append({"op": "bind", "source": f"{PROC_DRIVER}/{name}", "target": str(placeholder)})
    if loaded:
        nvidia = procdriver / "nvidia"
        _write(nvidia / "version", PROC_VERSION[scenario.module].format(v=scenario.driver))
        for index, (_number, gpu) in enumerate(scenario.driver_gpus()):
            text = INFORMATION.format(name=gpu.name, uuid=gpu.uuid, bus=gpu.bus_id, minor=index, driver=scenario.driver)
            _write(nvidia / "gpus" / gpu.bus_id / "information", text)
    if os.path.isdir(PROC_DRIVER):
        steps.append({"op": "bind", "source": str(procdriver), "target": PROC_DRIVER, "recursive": True})

    # /proc/modules: only where the kernel has one (a kernel built without module support
    # has none, and procfs cannot gain a file; the probe then reads /sys/module).
    modules = _read(PROC_MODULES)
    if modules is not None:
        kept = [line for line in modules.splitlines(keepends=True) if line.split(" ", 1)[0] not in (*MODULES, "nouveau")]
        _write(world / "proc-modules", (MODULE_LINES if loaded else "") + "".join(kept))
        steps.append({"op": "bind", "source": str(world / "proc-modules"), "target": PROC_MODULES})

    conf = world / "nvml.conf"
    conf.write_text(nvml_conf(scenario))
    manifest = {"steps": steps, "env": {"FWDOCTOR_GPUHOST_NVML": str(conf)}, "keep": str(world / "keep")}
    (world / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest
