"""Each node type's normal, learned from a fleet's own results: `fwdoctor fleet baseline
facts/ smoke/ > baseline.yaml`, then `fwdoctor gate --baseline baseline.yaml` judges a node
against its type (node-differs-from-type, gpu-count-low, naming the expected value).

A node's type is its GPU model (the name most of its answering GPUs carry): a node with a
lost GPU is still an 8-GPU H100 node with one missing, not a type of its own. Per type the
file holds the median over its nodes of: the GPUs that answer, the narrowest trained PCIe
width, the lowest PCIe generation the links can reach, the fewest NVLinks up on one GPU, and
the node's GEMM TFLOP/s from `smoke kernel` (fleet report's figure). A median, not a mean
or a maximum: a few broken nodes in the fleet do not move it, and a type's variant that
differs from the vendor's datasheet (a board in Gen4 slots) is its own normal.

Reading goes through fleet report's document reader (fwdoctor.fleet.documents): one bad
file costs its row in `bad`, the rest are still learned from.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from fwdoctor.model import Facts

FIELDS = ("gpus", "pcie_width", "pcie_gen", "nvlinks", "gemm_tflops")
VERSION = 1


class BaselineError(ValueError):
    """The baseline file cannot be used; the message names it."""


@dataclass
class NodeShape:
    name: str
    node_type: str | None = None
    values: dict[str, float] = field(default_factory=dict)


def node_type(facts: Facts) -> str | None:
    names = [g.get("name") for g in facts.get("gpus.list") or [] if isinstance(g, Mapping) and g.get("name")]
    return Counter(names).most_common(1)[0][0] if names else None


def shape(facts: Facts) -> dict[str, float]:
    """The figures of one node's facts that a type's normal is made of."""
    out: dict[str, float] = {}
    gpus = facts.get("gpus.list")
    if isinstance(gpus, list):
        out["gpus"] = sum(1 for g in gpus if isinstance(g, Mapping) and g.get("name"))
    links = [x for x in facts.get("gpus.pcie_links") or [] if isinstance(x, Mapping)]
    widths = [x["width"] for x in links if isinstance(x.get("width"), int)]
    gens = [x["max_gen"] for x in links if isinstance(x.get("max_gen"), int)]
    if widths:
        out["pcie_width"] = min(widths)
    if gens:
        out["pcie_gen"] = min(gens)
    nvlink = [x.get("active") for x in facts.get("topology.nvlink") or [] if isinstance(x, Mapping) and isinstance(x.get("active"), int)]
    if nvlink and max(nvlink) > 0:
        out["nvlinks"] = min(nvlink)
    return out


def learn(paths: list[str]) -> dict[str, Any]:
    """The baseline document: {"version", "types": {type: {nodes, gpus, ...}}, "bad": [...]}."""
    from fwdoctor.fleet import node as nd
    from fwdoctor.fleet.documents import BadInput, documents

    nodes: dict[str, NodeShape] = {}
    bad: list[dict[str, str]] = []
    for doc in documents(paths):
        if isinstance(doc, BadInput):
            bad.append(doc.to_json())
            continue
        name = doc.host_name or doc.stem
        entry = nodes.setdefault(name, NodeShape(name))
        data = doc.data
        facts_data = data if doc.kind in ("facts", "check") else data.get("check") if doc.kind == "smoke-suite" else None
        results = data.get("kernel") if doc.kind == "smoke-suite" else data.get("results") if doc.kind == "smoke" else None
        try:
            if isinstance(facts_data, Mapping):
                facts = nd.read_facts(facts_data)
                entry.node_type = node_type(facts) or entry.node_type
                entry.values.update(shape(facts))
            if isinstance(results, list):
                kernel = [r for r in results if isinstance(r, Mapping) and str(r.get("test", "")).startswith("kernel")]
                gemm = nd.kernel_cells(kernel)[1].get("gemm") if kernel else None
                if isinstance(gemm, (int, float)):
                    entry.values["gemm_tflops"] = float(gemm)
        except (ValueError, TypeError, RecursionError) as exc:
            bad.append({"file": doc.where, "reason": f"not facts or smoke results fwdoctor can read: {exc}"[:300]})
    by_type: dict[str, list[NodeShape]] = {}
    for entry in nodes.values():
        if entry.node_type:
            by_type.setdefault(entry.node_type, []).append(entry)
    types: dict[str, dict[str, Any]] = {}
    for type_name, members in sorted(by_type.items()):
        row: dict[str, Any] = {"nodes": len(members)}
        for key in FIELDS:
            values = [m.values[key] for m in members if key in m.values]
            if values:
                middle = statistics.median(values) if key == "gemm_tflops" else statistics.median_low(values)
                row[key] = round(float(middle), 1) if key == "gemm_tflops" else int(middle)
        types[type_name] = row
    untyped = sorted(e.name for e in nodes.values() if not e.node_type)
    return {"version": VERSION, "types": types, "untyped_nodes": untyped, "bad": bad}


def render(doc: dict[str, Any]) -> str:
    from fwdoctor.render.escape import yaml_dump

    head = ("# fwdoctor fleet baseline: each node type's median (GPU model -> GPUs answering, narrowest PCIe width,\n"
            "# lowest PCIe generation, fewest NVLinks up, GEMM TFLOP/s). Use: fwdoctor gate --baseline THIS_FILE\n")
    return head + yaml_dump(doc)


def load_baseline(path: str) -> dict[str, Any]:
    import yaml

    from fwdoctor.sources import SourceError, read_regular_file

    try:
        data = yaml.safe_load(read_regular_file(path, 4 * 1024 * 1024, "--baseline").decode("utf-8"))
    except (SourceError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BaselineError(f"--baseline {path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    types = data.get("types") if isinstance(data, dict) else None
    if not isinstance(types, dict) or data.get("version") != VERSION:
        raise BaselineError(f"--baseline {path}: not a `fwdoctor fleet baseline` file (version {VERSION} with a types mapping)")
    for name, row in types.items():
        if not isinstance(row, dict) or not all(isinstance(row.get(k), (int, float)) and not isinstance(row.get(k), bool) for k in row):
            raise BaselineError(f"--baseline {path}: types.{name}: every value must be a number")
    return {"types": types, "where": path}


def expected_for(baseline: dict[str, Any], facts: Facts) -> dict[str, Any] | None:
    """`node.expected` for this node from the baseline, or None when its type has no row."""
    kind = node_type(facts)
    row = baseline["types"].get(kind) if kind else None
    if row is None:
        return None
    out = {k: row[k] for k in FIELDS if k in row}
    out["gpu_model"] = kind
    out["from"] = f"baseline {baseline['where']}: {kind}, median of {row.get('nodes', '?')} nodes"
    return out
