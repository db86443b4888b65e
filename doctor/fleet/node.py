"""One node's row: the few values the fleet compares, taken from its documents.

A row keeps what the report needs and nothing else: the cells of the matrix (strings),
two smoke figures, and the node's own findings as (id, severity, message). The documents
themselves are dropped as soon as they are read, so 10,000 nodes cost 10,000 small rows,
not 10,000 parsed facts files (~20 KB each as JSON, several times that as objects).

Where two documents of one node say different things (facts from Monday, a smoke report
from Tuesday), the newest `collected_at` wins per part: facts, kernel smoke, all-reduce.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Mapping  # not typing's: its isinstance is ~10x slower, and a fleet report makes millions
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from fwdoctor.model import Facts

if TYPE_CHECKING:
    from fwdoctor.engine import Report
    from fwdoctor.kb import KB


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    figure: bool = False  # a measured number: judged against peers, never "drift"
    unit: str = ""


# The matrix, left to right. Facts columns first, then what the smoke tests measured.
COLUMNS: tuple[Column, ...] = (
    Column("driver", "driver"),
    Column("driver_cuda", "driver CUDA"),
    Column("toolkit", "toolkit"),
    Column("torch", "torch"),
    Column("cudnn", "cuDNN"),
    Column("nccl", "NCCL"),
    Column("gpu_model", "GPU"),
    Column("gpu_count", "GPUs"),
    Column("kernel", "kernel smoke"),
    Column("conv2d", "conv2d"),
    Column("amp", "AMP"),
    Column("gemm", "GEMM TFLOP/s", figure=True, unit="TFLOP/s"),
    Column("busbw", "all-reduce busbw GB/s", figure=True, unit="GB/s"),
)
BY_KEY = {c.key: c for c in COLUMNS}
FACT_COLUMNS = ("driver", "driver_cuda", "toolkit", "torch", "cudnn", "nccl", "gpu_model", "gpu_count")
KERNEL_COLUMNS = ("kernel", "conv2d", "amp", "gemm")

_interned: dict[Any, Any] = {}


class DocumentError(ValueError):
    """A document with a field of the wrong type: the message names the field. `fleet
    report` makes the document one unreadable row and judges the other nodes."""


def _a(value: Any) -> str:
    name = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    kind = type(value).__name__
    return name.get(type(value), f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}")


# The facts the fleet's own columns read, and the JSON type each must have when known
# (doctor/FACTS.md). The rules read many more; a value they cannot use is caught by judging.
FACT_TYPES: dict[str, tuple[type, ...]] = {
    "driver.version": (str, type(None)),
    "driver.cuda_version": (str, type(None)),
    "cuda.active": (dict, type(None)),
    "torch.version": (str, type(None)),
    "gpus.list": (list, type(None)),
    "cudnn.installs": (list, type(None)),
    "nccl.installs": (list, type(None)),
}
_LIST_OF_OBJECTS = ("gpus.list", "cudnn.installs", "nccl.installs")


def check_fact_types(facts: Facts) -> None:
    """DocumentError naming the first fact the fleet's columns cannot read."""
    for key, types in FACT_TYPES.items():
        if not facts.known(key):
            continue
        value = facts[key]
        if not isinstance(value, types):
            raise DocumentError(f'fact "{key}" is {_a(value)}, not {_a(types[0]())}')
        if key in _LIST_OF_OBJECTS and value:
            for index, item in enumerate(value):
                if not isinstance(item, dict):
                    raise DocumentError(f'fact "{key}" item {index} is {_a(item)}, not an object')


def check_results(results: Any, field: str) -> None:
    """DocumentError naming the first field of smoke results that is of the wrong type:
    `field` is a list of objects, each one's "details" an object, its "checks" a list."""
    if not isinstance(results, list):
        raise DocumentError(f'"{field}" is {_a(results)}, not a list of results')
    for index, result in enumerate(results):
        where = f"{field}[{index}]"
        if not isinstance(result, Mapping):
            raise DocumentError(f'"{where}" is {_a(result)}, not an object')
        details = result.get("details")
        if details is not None and not isinstance(details, Mapping):
            raise DocumentError(f'"{where}.details" is {_a(details)}, not an object')
        checks = (details or {}).get("checks")
        if checks is not None and not isinstance(checks, list):
            raise DocumentError(f'"{where}.details.checks" is {_a(checks)}, not a list')


def intern(value: Any) -> Any:
    """One shared copy of a repeated value (a version string, a finding message): a
    thousand nodes on driver 580.95.05 hold one string, not a thousand."""
    if isinstance(value, str):
        return sys.intern(value)
    return _interned.setdefault(value, value)


@dataclass(slots=True)  # one per node: no per-instance __dict__
class NodeRow:
    name: str
    named_by: str  # "host.name", or why the file name stands in for it
    files: list[str] = field(default_factory=list)
    cells: dict[str, str] = field(default_factory=dict)  # column key -> shown value; absent = not said
    figures: dict[str, float] = field(default_factory=dict)  # gemm, busbw
    peer_group: dict[str, str] = field(default_factory=dict)  # figure -> what its peers share
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # (id, severity, message)
    not_checked: int = 0
    nothing_checked: bool = False
    failures: dict[str, list[str]] = field(default_factory=dict)  # smoke part -> "test: message" of each failed test
    stamps: dict[str, str] = field(default_factory=dict)  # part -> collected_at of what it shows

    def newer(self, part: str, stamp: str | None) -> bool:
        """Whether a document stamped `stamp` may replace what `part` shows now (newest
        wins; an unstamped document replaces only an unstamped one, in reading order)."""
        held = self.stamps.get(part)
        if part not in self.stamps:
            return True
        return (stamp or "") >= (held or "")

    def take(self, part: str, stamp: str | None) -> None:
        self.stamps[part] = stamp or ""

    @property
    def worst(self) -> str:
        severities = {s for _, s, _ in self.findings}
        for s in ("error", "warning", "info"):
            if s in severities:
                return s
        return "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "named_by": self.named_by,
            "files": list(self.files),
            "values": {c.key: self.cells.get(c.key) for c in COLUMNS},
            "figures": dict(self.figures),
            "findings": [{"id": i, "severity": s, "message": m} for i, s, m in self.findings],
            "not_checked": self.not_checked,
            "nothing_checked": self.nothing_checked,
            "smoke_failures": self.smoke_failures,
        }

    @property
    def smoke_failures(self) -> list[str]:
        return [text for part in ("kernel", "allreduce") for text in self.failures.get(part, [])]


# ----------------------------------------------------------------------------- facts
def fact_cells(facts: Facts, kb: KB) -> dict[str, str]:
    """The facts columns of one node. A fact the document does not hold (unknown, never
    collected) gives no cell: "n/a", never a value that would look like drift."""
    return {**software_cells(facts, kb), **gpu_cells(facts)}


def software_cells(facts: Facts, kb: KB) -> dict[str, str]:
    """The columns but the GPUs': apart, so that a fleet report reuses them for nodes that
    differ only in their GPUs' UUIDs (fwdoctor.fleet.judging keys them by what they read)."""
    cells: dict[str, str] = {}

    def put(key: str, value: Any) -> None:
        if value is not None:
            cells[key] = intern(str(value))

    put("driver", _plain(facts, "driver.version", "none loaded"))
    put("driver_cuda", _plain(facts, "driver.cuda_version", "none"))
    if facts.known("cuda.active"):
        active = facts["cuda.active"]
        put("toolkit", active.get("version") if isinstance(active, dict) else "none")
    put("torch", _plain(facts, "torch.version", "not installed"))
    from fwdoctor.libraries import CUDNN, NCCL

    put("cudnn", _library(facts, kb, CUDNN))
    put("nccl", _library(facts, kb, NCCL))
    return cells


def gpu_cells(facts: Facts) -> dict[str, str]:
    """The GPU model and count columns."""
    cells: dict[str, str] = {}

    def put(key: str, value: Any) -> None:
        cells[key] = intern(str(value))

    if facts.known("gpus.list"):
        gpus = [g for g in facts["gpus.list"] or [] if isinstance(g, dict)]
        put("gpu_count", len(gpus))
        names = Counter(str(g.get("name") or "unnamed GPU") for g in gpus)
        if not gpus:
            put("gpu_model", "none")
        elif len(names) == 1:
            put("gpu_model", next(iter(names)))
        else:
            put("gpu_model", "; ".join(f"{n} x {name}" for name, n in sorted(names.items())))
    return cells


def _plain(facts: Facts, key: str, none: str) -> Any:
    if not facts.known(key):
        return None
    value = facts[key]
    return none if value is None else value


def _library(facts: Facts, kb: KB, lib: Any) -> str | None:
    """The cuDNN/NCCL the node's torch loads (its own pip wheel, as the libs rules pick
    it), else every version installed; "none" when none is."""
    from fwdoctor.rules import libs

    if not facts.known(lib.installs_key):
        return None
    found = libs.installs(facts, lib)
    if not found:
        return "none"
    try:
        own, _ = libs.own_install(facts, kb, lib)
    except Exception:  # odd facts from a hand-edited file: fall back to the list below
        own = None
    if own is not None and libs.install_version(own):
        return libs.install_version(own)
    shown = sorted({v for v in (libs.install_version(i) for i in found) if v})
    return ", ".join(shown) if shown else None


def read_facts(data: Mapping[str, Any]) -> Facts:
    """A node's facts document as Facts (Facts.from_json: its depth guard tests exact types
    first, so reading thousands of nodes' files stays cheap)."""
    return Facts.from_json(data)


def findings_of(report: Report) -> list[tuple[str, str, str]]:
    return [(intern(f.id), intern(f.severity.value), intern(f.message)) for f in report.findings]


# ----------------------------------------------------------------------------- smoke
def kernel_cells(results: Iterable[Mapping[str, Any]]) -> tuple[dict[str, str], dict[str, float], dict[str, str], list[str]]:
    """kernel / conv2d / AMP status and the node's GEMM figure from its kernel results.

    The figure is the slowest GPU's (fp16 where measured): one slow GPU slows every step
    of a data-parallel job, so it is the one to compare. Its peers are nodes whose GPUs
    carry the same name (an L4 is not a slow H100)."""
    results = [r for r in results if isinstance(r, Mapping) and str(r.get("test", "")).startswith("kernel")]
    if not results:
        return {}, {}, {}, []
    cells: dict[str, str] = {"kernel": _status(r.get("status") for r in results)}
    failures = [f"{r.get('test')}: {r.get('message')}" for r in results if r.get("status") == "fail"]
    # One pass over every GPU's checks (a dozen each, 10,000 nodes): type() before isinstance.
    by_column: dict[str, list[Any]] = {"conv2d": [], "amp": []}
    for r in results:
        for c in (r.get("details") or {}).get("checks") or []:
            if type(c) is not dict and not isinstance(c, Mapping):
                continue
            name = c.get("name", "")
            name = name if type(name) is str else str(name)
            if name.startswith("conv2d_"):
                by_column["conv2d"].append(c.get("status"))
            elif name.startswith("amp_"):
                by_column["amp"].append(c.get("status"))
    for column, mine in by_column.items():
        if mine:
            cells[column] = _status("fail" if s == "error" else s for s in mine)
    figures: dict[str, float] = {}
    groups: dict[str, str] = {}
    per_gpu = [(tflops, str((r.get("details") or {}).get("name") or "?")) for r in results
               if (tflops := gemm_figure(r.get("details") or {})) is not None]
    if per_gpu:
        value, _ = min(per_gpu)
        figures["gemm"] = value
        groups["gemm"] = intern(" + ".join(sorted({name for _, name in per_gpu})))
        cells["gemm"] = intern(f"{value:.4g}")
    return {k: intern(v) for k, v in cells.items()}, figures, groups, failures


def gemm_figure(details: Mapping[str, Any]) -> float | None:
    """A GPU's GEMM TFLOP/s: `gemm_tflops` (a number, or a dtype -> number map), else the
    worker's `tflops` map; fp16 preferred (the dtype every GPU the worker tests has)."""
    for key in ("gemm_tflops", "tflops"):
        value = details.get(key)
        if _finite(value):
            return float(value)
        if isinstance(value, Mapping):
            numbers = {k: float(v) for k, v in value.items() if _finite(v)}
            if numbers:
                return numbers.get("fp16", max(numbers.values()))
    return None


def allreduce_cells(results: Iterable[Mapping[str, Any]]) -> tuple[dict[str, str], dict[str, float], dict[str, str], list[str]]:
    """The average busbw of the node's all-reduce run. With one rank busbw is 0 by
    definition (2(n-1)/n), so such a run gives no figure; peers are runs with the same
    backend, world size and node count (busbw depends on all three)."""
    results = [r for r in results if isinstance(r, Mapping) and r.get("test") == "allreduce"]
    if not results:
        return {}, {}, {}, []
    run = results[-1]
    details = run.get("details") or {}
    failures = [f"allreduce: {run.get('message')}"] if run.get("status") == "fail" else []
    value = details.get("avg_busbw_gbps")
    world = details.get("world_size")
    if not _finite(value) or not isinstance(world, int) or world < 2:
        return {}, {}, {}, failures
    group = intern(f"{details.get('backend', '?')}, {world} ranks, {details.get('nnodes', '?')} node(s)")
    return {"busbw": intern(f"{float(value):.4g}")}, {"busbw": float(value)}, {"busbw": group}, failures


def _status(statuses: Iterable[Any]) -> str:
    """One status for many results, as `smoke all` sums its parts: any fail fails; all
    skipped is skipped; otherwise pass."""
    seen = [str(s) for s in statuses]
    if "fail" in seen:
        return "fail"
    if seen and all(s == "skipped" for s in seen):
        return "skipped"
    return "pass"


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
