"""RDMA memory registration against a low locked-memory limit, read from a report
(rdma-memlock-too-low, whose regular rule in fwdoctor.rules.fabric reads the host and
documents it).

UCX's "Please set max locked memory (ulimit -l) to 'unlimited' (current: 64 kbytes)" names
the limit itself: an error. NCCL's
"Call to ibv_create_cq failed with error Cannot allocate memory" (and UCX's bare "ibv_... failed:
Cannot allocate memory") is the kernel's -ENOMEM from pinning, which a low RLIMIT_MEMLOCK gives
most often but not only (CMA exhaustion on DGX Spark, MiaAI-Lab/...#259; device resources at
700 nodes, NVIDIA/nccl#1191): an error where the report also shows a `ulimit -l` below the KB's
floor (system.memlock, fwdoctor.triage.ulimit), else a warning that says what to check.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, Severity
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule
from fwdoctor.rules.fabric import memlock_fix, memlock_size

if TYPE_CHECKING:
    from fwdoctor.kb import KB

NAMED = ("ucx-memlock-limit",)
ENOMEM = "ibverbs-enomem"
KINDS = frozenset({*NAMED, ENOMEM})


def _limit_bytes(error: dict[str, Any]) -> int | None:
    """The limit a UCX line names, in bytes."""
    if error.get("current_kb") and str(error["current_kb"]).isdigit():
        return int(error["current_kb"]) * 1024
    return None


@rule("rdma-memlock-too-low", needs=("report.errors",), optional=("system.memlock", "system.container"))
def memlock_said(facts: Facts, kb: KB) -> Hit | None:
    """UCX's own words about the locked-memory limit, or a verbs call's
    "Cannot allocate memory" beside a low `ulimit -l` (see rdma-memlock-too-low)."""
    floor = kb.gpus.rdma_memlock_min_bytes or 0
    container = facts.get("system.container") is True
    named = report_errors(facts, *NAMED)
    if named:
        limit = _limit_bytes(named[0])
        said = f"{memlock_size(limit)} " if limit is not None else ""
        return Hit(f"the job may lock only {said}of memory (RLIMIT_MEMLOCK), too little for RDMA memory registration; "
                   f"UCX says so: {report_line(named[0])}",
                   evidence={"report.errors": named}, fix=memlock_fix(container, hard_too_low=False))
    enomem = report_errors(facts, ENOMEM)
    if not enomem:
        return None
    call = enomem[0].get("call") or "a verbs call"
    memlock = facts.get("system.memlock")
    soft = memlock.get("soft_bytes") if isinstance(memlock, dict) else None
    shown_low = isinstance(soft, int) and soft < floor
    if isinstance(memlock, dict) and not shown_low:
        return None  # the report shows the job's limit unlimited or high: another cause of ENOMEM
    if shown_low:
        return Hit(f"{call} failed with ENOMEM and the report shows a locked-memory limit of {memlock_size(soft)} "
                   f"({facts.source('system.memlock')}), below the {floor // (1024 * 1024)} MiB RDMA registration needs: {report_line(enomem[0])}",
                   evidence={"report.errors": enomem, "system.memlock": memlock}, fix=memlock_fix(container, hard_too_low=False))
    fix = memlock_fix(container, hard_too_low=False)
    return Hit(f"{call} failed with ENOMEM: pinning memory for RDMA was refused, most often because the job's locked-memory limit "
               f"(`ulimit -l` where it runs) is low; the report does not show it: {report_line(enomem[0])}",
               evidence={"report.errors": enomem},
               fix=replace(fix, commands=("srun bash -c 'ulimit -l'   # or: mpirun <args> bash -c 'ulimit -l'; docker exec <c> sh -c 'ulimit -l'",
                                       *fix.commands),
                             note=f"{fix.note}; where the limit is already unlimited, look at the kernel log (dmesg) for the NIC's own "
                                  "allocation errors"),
               severity=Severity.WARNING)


RULES: tuple[Rule, ...] = (memlock_said,)
