"""GPU products and PCI device ids -> compute capability (gpus.yaml), and the /dev/shm floor.

    kb.gpus.cc_for_name("NVIDIA A100-SXM4-80GB")   -> "8.0"
    kb.gpus.cc_for_pci_id("0x2330")                 -> "9.0"
    kb.gpus.cc_for_gpu(gpu, facts.get("pci.nvidia_gpus") or [])   # one entry of gpus.list

Name matching is pure and forgiving in the ways real names differ: case, a leading
"NVIDIA " (newer drivers add it: "NVIDIA Tesla T4") or "Tesla ", memory-size tokens, and
trailing words ("-SXM4-80GB", " PCIe", " Laptop GPU"). The longest listed name that is a
whole-token prefix of the reported one wins, so "GeForce RTX 4090 D" finds the 4090 row
while "RTX 6000 Ada Generation" never matches "Quadro RTX 6000".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from fwdoctor.arch import parse_cc
from fwdoctor.kb import Ctx

_SPLIT = re.compile(r"[\s\-_/,()]+")
_MEMORY = re.compile(r"^\d+(?:gb|g|gib|mb)$")
# Leading words people and tools drop or add: "NVIDIA GeForce RTX 4090" is "RTX 4090".
_BRANDS = ("nvidia", "tesla", "geforce")
_PCI_ID = re.compile(r"^(?:0x)?([0-9a-f]{4})$")


def name_key(name: str) -> tuple[str, ...]:
    """The tokens a product name is matched on: lower case, split on spaces and dashes,
    without leading brand words or memory sizes. Pure; never raises."""
    tokens = [t for t in _SPLIT.split(str(name).lower()) if t and not _MEMORY.match(t)]
    while tokens and tokens[0] in _BRANDS:
        tokens.pop(0)
    return tuple(tokens)


def normalize_pci_id(device_id: str) -> str | None:
    """"0x2330", "2330", "0X2330 " -> "0x2330"; None for anything else."""
    match = _PCI_ID.match(str(device_id).strip().lower())
    return f"0x{match.group(1)}" if match else None


@dataclass(frozen=True)
class GpuModel:
    name: str
    cc: str
    aliases: tuple[str, ...]
    pci_ids: tuple[str, ...]
    source: tuple[str, ...]


@dataclass(frozen=True)
class GpuKB:
    models: tuple[GpuModel, ...]
    by_name: Mapping[tuple[str, ...], GpuModel]
    by_pci: Mapping[str, GpuModel]
    shm_min_bytes: int

    def model_for_name(self, name: str) -> GpuModel | None:
        tokens = name_key(name)
        for end in range(len(tokens), 0, -1):
            model = self.by_name.get(tokens[:end])
            if model is not None:
                return model
        return None

    def cc_for_name(self, name: str) -> str | None:
        model = self.model_for_name(name)
        return model.cc if model else None

    def cc_for_pci_id(self, device_id: str) -> str | None:
        key = normalize_pci_id(device_id)
        model = self.by_pci.get(key) if key else None
        return model.cc if model else None

    def cc_for_gpu(self, gpu: Mapping[str, Any], pci: Iterable[Mapping[str, Any]] = ()) -> str | None:
        """A gpus.list entry's compute capability: as reported, else from its name, else
        from the PCI device id at its bus address (pci.nvidia_gpus)."""
        if gpu.get("cc"):
            return str(gpu["cc"])
        if gpu.get("name"):
            cc = self.cc_for_name(str(gpu["name"]))
            if cc:
                return cc
        bus = gpu.get("bus_id")
        if bus:
            wanted = normalize_slot(str(bus))
            for dev in pci:
                if normalize_slot(str(dev.get("slot", ""))) == wanted:
                    return self.cc_for_pci_id(str(dev.get("device_id", "")))
        return None


def normalize_slot(slot: str) -> str:
    """NVML's "00000000:62:00.0" and sysfs's "0000:62:00.0" -> "0000:62:00.0"."""
    domain, _, rest = slot.strip().lower().partition(":")
    return f"{domain[-4:].rjust(4, '0')}:{rest}"


def from_yaml(data: Any, ctx: Ctx) -> GpuKB:
    rows = ctx.at("gpus").rows(ctx.field(data, "gpus"))
    models: list[GpuModel] = []
    by_name: dict[tuple[str, ...], GpuModel] = {}
    by_pci: dict[str, GpuModel] = {}
    for i, row in enumerate(rows):
        at = ctx.at("gpus").at(i)
        name = at.field(row, "name", str)
        cc = str(at.field(row, "cc", (str, int, float)))
        try:
            parse_cc(cc)
        except ValueError as exc:
            raise at.at("cc").error(str(exc)) from None
        aliases = tuple(at.field(row, "aliases", list, optional=True) or ())
        pci_ids = at.field(row, "pci_ids", list, optional=True) or []
        source = at.source(row)
        normalized: list[str] = []
        for j, raw in enumerate(pci_ids):
            key = normalize_pci_id(raw) if isinstance(raw, str) else None
            if key is None or key != raw:
                raise at.at("pci_ids").at(j).error(f"expected a lower-case PCI device id like '0x2330', got {raw!r}")
            normalized.append(key)
        model = GpuModel(name, cc, tuple(str(a) for a in aliases), tuple(normalized), source)
        for spelling in (name, *model.aliases):
            key = name_key(spelling)
            if not key:
                raise at.error(f"name {spelling!r} has no tokens left after normalisation")
            if key in by_name:
                raise at.error(f"name {spelling!r} matches the same key as {by_name[key].name!r}")
            by_name[key] = model
        for key in normalized:
            if key in by_pci:
                raise at.error(f"PCI id {key} is already listed for {by_pci[key].name!r}")
            by_pci[key] = model
        models.append(model)
    runtime = ctx.at("runtime").mapping(ctx.field(data, "runtime"))
    shm_mib = ctx.at("runtime").field(runtime, "shm_min_mib", int)
    ctx.at("runtime").source(runtime)
    if shm_mib <= 0:
        raise ctx.at("runtime.shm_min_mib").error(f"expected a positive number of MiB, got {shm_mib}")
    return GpuKB(tuple(models), by_name, by_pci, shm_mib * 1024 * 1024)
