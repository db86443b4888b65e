"""Each GPU model's normal on a node (nodetypes.yaml): PCIe generation and width, NVLink
links per GPU. Queried by fwdoctor.gate for `node.expected` when no fleet baseline names
the node's type."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from fwdoctor.kb import Ctx

_HEX_ID = re.compile(r"^0x[0-9a-f]{4}$")


@dataclass(frozen=True)
class NodeType:
    name: str
    pci_device_id: str
    pcie_gen: int
    pcie_width: int
    nvlinks: int | None
    source: tuple[str, ...]

    def expected(self) -> dict[str, Any]:
        """The row as `node.expected` (fwdoctor.rules.hardware reads these keys)."""
        out: dict[str, Any] = {"gpu_model": self.name, "pcie_gen": self.pcie_gen, "pcie_width": self.pcie_width,
                               "from": f"the KB's {self.name} row"}
        if self.nvlinks is not None:
            out["nvlinks"] = self.nvlinks
        return out


@dataclass(frozen=True)
class NodeTypesKB:
    types: tuple[NodeType, ...] = ()

    def for_gpu(self, name: str | None, pci_device_id: str | None = None) -> NodeType | None:
        """The row for a GPU by its PCI device id, else its exact NVML name; None: no data."""
        for row in self.types:
            if pci_device_id and row.pci_device_id == pci_device_id.lower():
                return row
        return next((row for row in self.types if name and row.name == name), None)


def from_yaml(data: Any, ctx: Ctx) -> NodeTypesKB:
    rows = []
    names: set[str] = set()
    for i, row in enumerate(ctx.rows(data.get("node_types", []))):
        at = ctx.at("node_types").at(i)
        name = at.field(row, "name", str)
        device = at.field(row, "pci_device_id", str)
        if not _HEX_ID.match(device):
            raise at.at("pci_device_id").error(f"not 0xNNNN (lower case): {device!r}")
        gen, width = at.field(row, "pcie_gen", int), at.field(row, "pcie_width", int)
        if not 1 <= gen <= 6 or width not in (1, 2, 4, 8, 16, 32):
            raise at.error(f"pcie_gen {gen} / pcie_width {width}: not a PCIe generation 1-6 and a link width")
        nvlinks = at.field(row, "nvlinks", int, optional=True)
        if name in names:
            raise at.error(f"{name!r} listed twice")
        names.add(name)
        rows.append(NodeType(name, device, gen, width, nvlinks, at.source(row)))
    return NodeTypesKB(tuple(rows))
