"""Cross-node rules: what differs between nodes that are meant to run one job together.

Each rule is a pure function of the fleet (the node rows, with their cells and figures)
and returns `FleetHit`s; its docstring is the explanation `fwdoctor explain ID` prints
(What it does / Why is this bad? / Example / Fix), like every rule in doctor/rules/.
All the nodes in one report are taken to train together: report one partition (one
folder) at a time when they do not.

"Far below its peers" (fleet-smoke-slow) is defined here, in one place:
a node's figure is below SLOW_FRACTION (0.8) x the median of its peers' figures, where
its peers are the other nodes measured the same way (GEMM: the same GPU model; busbw:
the same backend, world size and node count) and there are at least MIN_PEER_GROUP (3)
nodes in that group, the node included. A 20% gap is well outside the run-to-run spread
of the GEMM and all-reduce figures `fwdoctor smoke` measures on a healthy node, and a
median of three or more is not moved by the one slow node it is judging.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from fwdoctor import versions
from fwdoctor.findings import kind
from fwdoctor.fleet.drift import MAX_LISTED, Drift, drift, listed
from fwdoctor.fleet.node import BY_KEY, NodeRow
from fwdoctor.model import Finding, NotChecked, Severity

SLOW_FRACTION = 0.8
MIN_PEER_GROUP = 3


@dataclass(frozen=True)
class FleetHit:
    message: str
    nodes: tuple[str, ...]  # the nodes the finding is about (the odd ones)
    evidence: dict[str, Any] = field(default_factory=dict)
    severity: Severity | None = None


class NotJudged(Exception):
    """A rule whose question the documents cannot answer (fewer than two nodes say)."""


@dataclass(frozen=True)
class Fleet:
    rows: Sequence[NodeRow]
    max_listed: int = MAX_LISTED


FleetFunc = Callable[[Fleet], "Iterable[FleetHit]"]


@dataclass(frozen=True)
class FleetRule:
    id: str
    func: FleetFunc

    @property
    def doc(self) -> str:
        import inspect

        return inspect.cleandoc(self.func.__doc__ or "")

    def evaluate(self, fleet: Fleet) -> tuple[list[Finding], NotChecked | None]:
        spec = kind(self.id)
        try:
            hits = list(self.func(fleet))
        except NotJudged as exc:
            return [], NotChecked(self.id, spec.area, str(exc))
        return [Finding(id=self.id, severity=h.severity or spec.severity, message=h.message, area=spec.area,
                        evidence={"nodes": list(h.nodes), **h.evidence}, code=spec.code) for h in hits], None


def fleet_rule(finding_id: str) -> Callable[[FleetFunc], FleetRule]:
    kind(finding_id)  # fail loudly on a typo in an id

    def wrap(func: FleetFunc) -> FleetRule:
        return FleetRule(finding_id, func)

    return wrap


# ----------------------------------------------------------------------------- helpers
def cell(key: str) -> Callable[[NodeRow], str | None]:
    return lambda row: row.cells.get(key)


def _differs(fleet: Fleet, what: str, value_of: Callable[[NodeRow], str | None], label: Callable[[str], str] = str) -> list[FleetHit]:
    found: Drift = drift(what, fleet.rows, value_of)
    if found.known < 2:
        raise NotJudged(f"{what}: known for {found.known} node(s); comparing needs two")
    if not found.differs:
        return []
    return [FleetHit(f"{what} differs across nodes: {found.text(fleet.max_listed, label)}",
                     tuple(sorted(found.odd)),
                     {"what": what, "majority": found.majority, "majority_nodes": found.majority_count,
                      "values": {g.value: list(g.nodes) for g in found.minorities}})]


def _branch(row: NodeRow) -> str | None:
    """The driver branch: 580 of 580.95.05 (each branch is a release line of its own)."""
    value = row.cells.get("driver")
    number = versions.major(value)
    return value if number is None else str(number)  # "none loaded" is a branch of its own here


def _cuda_release(key: str) -> Callable[[NodeRow], str | None]:
    """major.minor of a CUDA version (13.0 of 13.0.88): patch releases of one toolkit
    build the same code."""
    def value_of(row: NodeRow) -> str | None:
        value = row.cells.get(key)
        return versions.major_minor(value) if value not in (None, "none") else value
    return value_of


def median_without(ordered: list[float], index: int) -> float:
    """The median of `ordered` (sorted) with the item at `index` left out, in O(1)."""
    n = len(ordered) - 1

    def at(j: int) -> float:
        return ordered[j] if j < index else ordered[j + 1]

    return at(n // 2) if n % 2 else (at(n // 2 - 1) + at(n // 2)) / 2


# ----------------------------------------------------------------------------- rules
@fleet_rule("fleet-nccl-differs")
def nccl_differs(fleet: Fleet) -> list[FleetHit]:
    """What it does
        Compares the NCCL version each node's torch loads (its own pip wheel, else the
        NCCL installed) across the nodes of the report, and names the nodes that differ
        from the rest.

    Why is this bad?
        NCCL refuses to build a communicator across versions. Every rank sends its
        version code at init, and a rank that sees another fails with
        `NCCL WARN Mismatched NCCL version detected : rank 3 version 23007 rank 0 version 22703`
        and ncclInvalidUsage (NVIDIA/nccl src/init.cc): the job dies in
        `init_process_group`, or hangs where ranks wait on the one that failed.

    Example
        999 nodes on NCCL 2.30.7, node-0100 on 2.27.3 (an older image):
        `fleet-nccl-differs: NCCL differs across nodes: node-0100: 2.27.3; the rest (999) 2.30.7`

    Fix
        Give every node the same image or environment (the same torch wheel pins the same
        nvidia-nccl wheel), then collect and report again:
            fwdoctor fleet collect --slurm --out facts/ && fwdoctor fleet report facts/
    """
    return _differs(fleet, "NCCL", cell("nccl"))


@fleet_rule("fleet-torch-differs")
def torch_differs(fleet: Fleet) -> list[FleetHit]:
    """What it does
        Compares the torch version (with its local tag: 2.14.1+cu130) across the nodes of
        the report and names the nodes that differ from the rest.

    Why is this bad?
        Ranks of one job run one program; on another torch release a rank runs other
        code. Each torch wheel pins its own NCCL (torch 2.14.1+cu130 requires
        nvidia-nccl-cu13==2.30.7), so two torch releases usually bring two NCCLs, and NCCL
        refuses a communicator across versions:
        `NCCL WARN Mismatched NCCL version detected` (see fleet-nccl-differs).

    Example
        `fleet-torch-differs: torch differs across nodes: node-0042: 2.13.0+cu130; the rest (999) 2.14.1+cu130`

    Fix
        Install the same torch everywhere: one image, or one hash-pinned lock written
        once and installed on every node:
            fwdoctor lock stack.yaml
            pip install --require-hashes -r lockfiles/<stack>/requirements.lock
        then collect and report again.
    """
    return _differs(fleet, "torch", cell("torch"))


@fleet_rule("fleet-driver-branch-differs")
def driver_branch_differs(fleet: Fleet) -> list[FleetHit]:
    """What it does
        Compares the NVIDIA driver's branch (580 of 580.95.05) across the nodes and names
        the nodes on another branch. Versions within one branch are shown in the drift
        section without a finding.

    Why is this bad?
        A node left on an older branch after an upgrade supports an older CUDA: a job
        built for the newer one fails there alone (`CUDA driver version is insufficient
        for CUDA runtime version`), and per-branch behaviour (fabric manager, which must
        match the driver exactly, NVLink and P2P fixes) differs from its peers'.

    Example
        `fleet-driver-branch-differs: driver branch differs across nodes: node-0417: 550; the rest (999) 580`

    Fix
        Upgrade the odd nodes to the fleet's driver branch (and its fabric manager on
        NVSwitch systems), reboot them, and report again.
    """
    hits = _differs(fleet, "driver branch", _branch)
    for hit in hits:  # name the full versions too: "550 (550.163.01)"
        shown = set(hit.nodes[: fleet.max_listed])
        full = {row.name: row.cells.get("driver") for row in fleet.rows if row.name in shown}
        hit.evidence["versions"] = full
    return hits


@fleet_rule("fleet-cuda-differs")
def cuda_differs(fleet: Fleet) -> list[FleetHit]:
    """What it does
        Compares the CUDA version each node's driver supports (driver CUDA) and the
        active CUDA toolkit's release (major.minor) across the nodes; one finding for
        each that differs.

    Why is this bad?
        Code compiled on one node (a JIT-compiled extension, a Triton kernel cache on a
        shared file system) may not load on a node whose driver supports an older CUDA,
        and extensions built against two toolkits are two different builds.

    Example
        `fleet-cuda-differs: toolkit differs across nodes: node-0007: 12.8; the rest (999) 13.0`

    Fix
        Install the same toolkit on every node (or use one image), and keep the drivers
        on one branch (see fleet-driver-branch-differs).
    """
    hits: list[FleetHit] = []
    judged = 0
    for key, what in (("driver_cuda", "driver CUDA"), ("toolkit", "toolkit")):
        try:
            hits += _differs(fleet, what, _cuda_release(key))
            judged += 1
        except NotJudged:
            continue
    if not judged:
        raise NotJudged("neither the driver's CUDA nor the toolkit is known for two nodes")
    return hits


@fleet_rule("fleet-gpu-model-differs")
def gpu_model_differs(fleet: Fleet) -> list[FleetHit]:
    """What it does
        Compares the GPU model(s) each node reports (by name, from NVML) across the nodes.

    Why is this bad?
        A data-parallel job runs at the pace of its slowest GPU, a model sharded by
        memory size does not fit on a smaller one, and kernels tuned (or compiled) for
        one architecture are not what another runs best or at all.

    Example
        `fleet-gpu-model-differs: GPU differs across nodes: node-0900: NVIDIA A100-SXM4-80GB; the rest (999) NVIDIA H100 80GB HBM3`

    Fix
        Schedule the job on a partition of one GPU model (a Slurm feature or constraint,
        a Kubernetes node label), or report each partition separately.
    """
    return _differs(fleet, "GPU", cell("gpu_model"))


@fleet_rule("fleet-gpu-count-differs")
def gpu_count_differs(fleet: Fleet) -> list[FleetHit]:
    """What it does
        Compares how many GPUs NVML sees on each node across the nodes.

    Why is this bad?
        A node that sees one GPU fewer than its peers usually lost one (fallen off the
        bus, an Xid 79, a failed row remap): a job launched with 8 ranks per node fails
        there (`CUDA error: invalid device ordinal`) or waits for a rank that never starts.

    Example
        `fleet-gpu-count-differs: GPUs differs across nodes: node-0200: 7; the rest (999) 8`

    Fix
        Drain the node and look at it: `nvidia-smi -L`, `dmesg | grep -i xid`,
        `fwdoctor check` on it; a GPU missing from the bus needs a reset or a repair.
    """
    return _differs(fleet, "GPUs", cell("gpu_count"))


@fleet_rule("fleet-smoke-slow")
def smoke_slow(fleet: Fleet) -> list[FleetHit]:
    """What it does
        Compares each node's smoke figures with its peers': the GEMM TFLOP/s of its
        slowest GPU (`fwdoctor smoke kernel`; peers: nodes with the same GPU model) and
        the average all-reduce busbw (`fwdoctor smoke allreduce`; peers: runs with the
        same backend, world size and node count). A node is flagged when its figure is
        below 0.8 x the median of its peers' and its group has at least 3 nodes.

    Why is this bad?
        Synchronous training runs at the pace of the slowest rank: one node whose GPU
        clocks are throttled (power, heat) or whose network falls back to a slower path
        slows every step of the whole job, with no error anywhere.

    Example
        `fleet-smoke-slow: node-0300: all-reduce busbw 30 GB/s is below 0.8 x the median of its 999 peers (180 GB/s; nccl, 16 ranks, 2 node(s))`

    Fix
        Look at the node: `nvidia-smi -q -d PERFORMANCE,CLOCK,POWER` for throttle reasons,
        `fwdoctor smoke allreduce` with NCCL_DEBUG=INFO for the transport it chose, the
        NIC's link speed; drain it until it measures like its peers.
    """
    hits: list[FleetHit] = []
    judged = False
    for key in ("gemm", "busbw"):
        column = BY_KEY[key]
        groups: dict[str, list[tuple[float, str]]] = {}
        for row in fleet.rows:
            if key in row.figures:
                groups.setdefault(row.peer_group.get(key, ""), []).append((row.figures[key], row.name))
        for group, members in groups.items():
            if len(members) < MIN_PEER_GROUP:
                continue
            judged = True
            ordered = sorted(members)
            values = [v for v, _ in ordered]
            for index, (value, name) in enumerate(ordered):
                median = median_without(values, index)
                if value >= SLOW_FRACTION * median:
                    break  # sorted: every later node is at least as fast
                title = "GEMM" if key == "gemm" else "all-reduce busbw"
                hits.append(FleetHit(
                    f"{name}: {title} {value:.4g} {column.unit} is below {SLOW_FRACTION:g} x the median of its "
                    f"{len(members) - 1} peers ({median:.4g} {column.unit}; {group})",
                    (name,), {"figure": key, "value": value, "peer_median": median, "peers": len(members) - 1, "peer_group": group}))
    if not judged:
        raise NotJudged(f"no smoke figure measured on at least {MIN_PEER_GROUP} comparable nodes")
    hits.sort(key=lambda h: h.nodes)
    return hits


RULES: tuple[FleetRule, ...] = (
    nccl_differs,
    torch_differs,
    driver_branch_differs,
    cuda_differs,
    gpu_model_differs,
    gpu_count_differs,
    smoke_slow,
)

__all__ = ["RULES", "Fleet", "FleetHit", "FleetRule", "MIN_PEER_GROUP", "SLOW_FRACTION", "listed"]
