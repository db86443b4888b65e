"""A fake GPU host, described in JSON: load it strictly, so a typo fails loudly.

Keys starting with "_" ("_source", "_note") are comments and ignored at every level. See
README.md ("A GPU host without a GPU") for the format; the defaults are those of a
healthy host: open module, library = driver, no failure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FAILS = (None, "driver_not_loaded", "version_mismatch", "hang_init", "crash_init")
MODULES = ("open", "proprietary")
# Per-GPU NVML answers that can be made NVML_ERROR_NOT_SUPPORTED.
FIELDS = ("name", "uuid", "bus_id", "memory_total", "cc", "mig", "persistence")
# nvml.h nvmlClocksEventReason* bits, by the names the scenario uses.
CLOCK_REASONS = {"gpu_idle": 0x1, "applications_clocks_setting": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8,
                 "sync_boost": 0x10, "sw_thermal_slowdown": 0x20, "hw_thermal_slowdown": 0x40,
                 "hw_power_brake_slowdown": 0x80, "display_clock_setting": 0x100}
_SPEED = re.compile(r"^\d+(\.\d+)? GT/s( PCIe)?$")

_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
_BUS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_HEX16 = re.compile(r"^0x[0-9a-f]{4}$")
_CLASS = re.compile(r"^0x[0-9a-f]{6}$")
_UUID = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class ScenarioError(ValueError):
    """The scenario file is not a valid description of a host."""


@dataclass(frozen=True)
class Gpu:
    name: str
    uuid: str
    bus_id: str  # sysfs form, lower case: "0000:18:00.0"
    pci_device_id: str  # "0x2330"
    cc: tuple[int, int]
    memory_total: int  # bytes, as NVML's nvmlMemory_t.total
    mig: bool | None  # None: NVML_ERROR_NOT_SUPPORTED (no MIG on this GPU)
    persistence: bool | None
    pci_class: str = "0x030200"  # 3D controller; GeForce cards are VGA, 0x030000
    not_supported: tuple[str, ...] = ()
    claimed: bool = True  # False: on the PCI bus, but the kernel module did not take it
    # Hardware health (README.md, "Health"); None: the host has no such answer.
    pcie: "Pcie | None" = None  # sysfs {current,max}_link_{speed,width}
    remapped_rows: tuple[int, int, bool, bool] | None = None  # correctable, uncorrectable, pending, failed
    ecc_uncorrected: tuple[int, int] | None = None  # volatile, aggregate
    nvlinks: int = 0
    nvlinks_down: tuple[int, ...] = ()
    clocks_event_reasons: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Pcie:
    width: int
    max_width: int
    speed: str  # as sysfs prints it: "32.0 GT/s PCIe"
    max_speed: str


@dataclass(frozen=True)
class Scenario:
    driver: str
    cuda_driver_version: int  # NVML's encoding: 13000 is CUDA 13.0
    module: str = "open"
    gpus: tuple[Gpu, ...] = ()
    fail: str | None = None
    lost_gpus: tuple[int, ...] = ()
    not_supported: tuple[str, ...] = ()
    library_version: str | None = None

    @property
    def library(self) -> str:
        """The version of libnvidia-ml.so.X (the kernel module's unless half-upgraded)."""
        return self.library_version or self.driver

    @property
    def module_loaded(self) -> bool:
        return self.fail != "driver_not_loaded"

    def driver_gpus(self) -> list[tuple[int, Gpu]]:
        """(scenario index, GPU) of the GPUs the loaded module took, in NVML's index order:
        those are what NVML, /proc/driver/nvidia/gpus and /dev/nvidiaN show."""
        if not self.module_loaded:
            return []
        return [(i, g) for i, g in enumerate(self.gpus) if g.claimed]

    def unsupported(self, index: int) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.not_supported + self.gpus[index].not_supported))


def _plain(value: Any) -> Any:
    """Drop comment keys ("_...") at every level."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _need(data: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in data:
        raise ScenarioError(f"{where}: missing {key!r}")
    value = data[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ScenarioError(f"{where}: {key!r} must be {kind}, not {value!r}")
    return value


def _fields(values: Any, where: str) -> tuple[str, ...]:
    if not isinstance(values, list) or any(v not in FIELDS for v in values):
        raise ScenarioError(f"{where}: not_supported must list fields among {', '.join(FIELDS)}: {values!r}")
    return tuple(values)


def _gpu(data: Any, index: int) -> Gpu:
    where = f"gpus[{index}]"
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: must be an object")
    known = {"name", "uuid", "bus_id", "pci_device_id", "cc", "memory_total", "mig", "persistence", "pci_class", "not_supported", "claimed",
             "pcie", "remapped_rows", "ecc_uncorrected", "nvlinks", "nvlinks_down", "clocks_event_reasons"}
    unknown = set(data) - known
    if unknown:
        raise ScenarioError(f"{where}: unknown keys {sorted(unknown)}")
    bus = _need(data, "bus_id", str, where).lower()
    if not _BUS.match(bus):
        raise ScenarioError(f"{where}: bus_id {bus!r} is not DDDD:BB:DD.F")
    device = _need(data, "pci_device_id", str, where).lower()
    if not _HEX16.match(device):
        raise ScenarioError(f"{where}: pci_device_id {device!r} is not 0xNNNN")
    uuid = _need(data, "uuid", str, where)
    if not _UUID.match(uuid):
        raise ScenarioError(f"{where}: uuid {uuid!r} is not GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
    cc = _need(data, "cc", list, where)
    if len(cc) != 2 or not all(isinstance(c, int) and not isinstance(c, bool) for c in cc):
        raise ScenarioError(f"{where}: cc must be [major, minor]")
    klass = str(data.get("pci_class", "0x030200")).lower()
    if not _CLASS.match(klass):
        raise ScenarioError(f"{where}: pci_class {klass!r} is not 0xNNNNNN")
    for key in ("mig", "persistence"):
        if data.get(key) is not None and not isinstance(data[key], bool):
            raise ScenarioError(f"{where}: {key} must be true, false or null (not supported)")
    if not isinstance(data.get("claimed", True), bool):
        raise ScenarioError(f"{where}: claimed must be true or false")
    return Gpu(
        name=_need(data, "name", str, where),
        uuid=uuid,
        bus_id=bus,
        pci_device_id=device,
        cc=(cc[0], cc[1]),
        memory_total=_need(data, "memory_total", int, where),
        mig=data.get("mig"),
        persistence=data.get("persistence"),
        pci_class=klass,
        not_supported=_fields(data.get("not_supported", []), where),
        claimed=data.get("claimed", True),
        **_health(data, where),
    )


def _count(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ScenarioError(f"{what} must be a count (an integer >= 0), not {value!r}")
    return value


def _health(data: dict[str, Any], where: str) -> dict[str, Any]:
    """The per-GPU health fields, checked: each absent one stays 'no answer'."""
    out: dict[str, Any] = {}
    if "pcie" in data:
        link = data["pcie"]
        if not isinstance(link, dict) or set(link) != {"width", "max_width", "speed", "max_speed"}:
            raise ScenarioError(f"{where}: pcie must be {{width, max_width, speed, max_speed}}")
        for key in ("speed", "max_speed"):
            if not isinstance(link[key], str) or not _SPEED.match(link[key]):
                raise ScenarioError(f"{where}: pcie.{key} {link[key]!r} is not sysfs's '16.0 GT/s PCIe'")
        out["pcie"] = Pcie(_count(link["width"], f"{where}: pcie.width"), _count(link["max_width"], f"{where}: pcie.max_width"),
                           link["speed"], link["max_speed"])
    if "remapped_rows" in data:
        rows = data["remapped_rows"]
        if not isinstance(rows, dict) or set(rows) != {"correctable", "uncorrectable", "pending", "failed"} \
                or not isinstance(rows["pending"], bool) or not isinstance(rows["failed"], bool):
            raise ScenarioError(f"{where}: remapped_rows must be {{correctable, uncorrectable, pending: bool, failed: bool}}")
        out["remapped_rows"] = (_count(rows["correctable"], where), _count(rows["uncorrectable"], where), rows["pending"], rows["failed"])
    if "ecc_uncorrected" in data:
        ecc = data["ecc_uncorrected"]
        if not isinstance(ecc, dict) or set(ecc) != {"volatile", "aggregate"}:
            raise ScenarioError(f"{where}: ecc_uncorrected must be {{volatile, aggregate}}")
        out["ecc_uncorrected"] = (_count(ecc["volatile"], where), _count(ecc["aggregate"], where))
    if "nvlinks" in data:
        out["nvlinks"] = _count(data["nvlinks"], f"{where}: nvlinks")
    down = data.get("nvlinks_down", [])
    if not isinstance(down, list) or any(_count(i, f"{where}: nvlinks_down") >= out.get("nvlinks", 0) for i in down):
        raise ScenarioError(f"{where}: nvlinks_down must list link numbers below nvlinks")
    out["nvlinks_down"] = tuple(down)
    if "clocks_event_reasons" in data:
        reasons = data["clocks_event_reasons"]
        if not isinstance(reasons, list) or any(r not in CLOCK_REASONS for r in reasons):
            raise ScenarioError(f"{where}: clocks_event_reasons must list names among {', '.join(CLOCK_REASONS)}")
        out["clocks_event_reasons"] = tuple(reasons)
    return out


def parse(raw: Any, where: str = "scenario") -> Scenario:
    data = _plain(raw)
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: must be a JSON object")
    known = {"driver", "cuda_driver_version", "module", "gpus", "fail", "lost_gpus", "not_supported", "library_version"}
    unknown = set(data) - known
    if unknown:
        raise ScenarioError(f"{where}: unknown keys {sorted(unknown)} (comments start with '_')")
    driver = _need(data, "driver", str, where)
    library = data.get("library_version")
    for label, version in (("driver", driver), ("library_version", library)):
        if version is not None and not (isinstance(version, str) and _VERSION.match(version)):
            raise ScenarioError(f"{where}: {label} {version!r} is not a driver version like 580.95.05")
    module = data.get("module", "open")
    if module not in MODULES:
        raise ScenarioError(f"{where}: module must be one of {MODULES}")
    fail = data.get("fail")
    if fail not in FAILS:
        raise ScenarioError(f"{where}: fail must be one of {FAILS}")
    gpus = tuple(_gpu(g, i) for i, g in enumerate(data.get("gpus", [])))
    if len({g.bus_id for g in gpus}) != len(gpus):
        raise ScenarioError(f"{where}: two GPUs share a bus_id")
    lost = data.get("lost_gpus", [])
    if not isinstance(lost, list) or any(not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(gpus) for i in lost):
        raise ScenarioError(f"{where}: lost_gpus must list GPU indexes (0..{len(gpus) - 1})")
    return Scenario(
        driver=driver,
        cuda_driver_version=_need(data, "cuda_driver_version", int, where),
        module=module,
        gpus=gpus,
        fail=fail,
        lost_gpus=tuple(lost),
        not_supported=_fields(data.get("not_supported", []), where),
        library_version=library,
    )


def load(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    return parse(raw, str(path))
