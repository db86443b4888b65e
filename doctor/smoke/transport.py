"""Judge what NCCL chose in a real all-reduce: the fabric RUN_RULES over this host's facts
plus the run's own `nccl.run` (doctor/smoke/nccl_log.py) and environment.

Pure given its inputs: the caller gathers the host's facts (a live `check`) and the KB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from fwdoctor.engine import judge
from fwdoctor.model import Fact, Facts
from fwdoctor.rules.fabric import RUN_RULES

if TYPE_CHECKING:
    from fwdoctor.kb import KB

# Ours, set for the run itself (allreduce.nccl_debug_env): not the user's choice to judge.
OWN_VARS = ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE")


def run_facts(host_facts: Facts, summary: Mapping[str, Any], env: Mapping[str, str]) -> Facts:
    """The host's facts with `nccl.run` (the log summary) and `nccl.env` (the run's NCCL_*)."""
    kept = [host_facts.fact(key) for key in host_facts if key not in ("nccl.run", "nccl.env")]
    nccl_env = {k: v for k, v in sorted(env.items()) if k.startswith("NCCL_") and k not in OWN_VARS}
    return Facts([f for f in kept if f is not None] + [
        Fact("nccl.run", dict(summary), source="NCCL_DEBUG=INFO of `fwdoctor smoke allreduce`"),
        Fact("nccl.env", nccl_env, source="the all-reduce's environment"),
    ], host_facts.failures)


def judge_run(host_facts: Facts, summary: Mapping[str, Any], env: Mapping[str, str], kb: "KB") -> dict[str, list[dict[str, Any]]]:
    """{"findings": [finding JSON], "not_checked": [...]} for the run's NCCL transport rules."""
    report = judge(run_facts(host_facts, summary, env), kb, RUN_RULES, only=[r.id for r in RUN_RULES])
    return {"findings": [f.to_json() for f in report.findings], "not_checked": [n.to_json() for n in report.not_checked]}
