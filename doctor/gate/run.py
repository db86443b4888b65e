"""One gate run: gather the facts (a child `fwdoctor facts`, or a saved file), judge them with
every check rule plus the node-type rules, optionally run `smoke kernel`, and turn the
findings into a verdict by the policy, all within one time budget.

The budget is a deadline, not a hope: every child runs under runner.run's timeout, which
kills its whole process tree, and gets only what is left of the budget minus a reserve for
judging and for acting on the scheduler. A step the deadline ended is "unknown" (the
policy's `unknown` decides whether that drains); a hung NVML cannot hold the gate, which is
what a scheduler's watchdog would otherwise do (and then nothing is drained).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from fwdoctor import runner
from fwdoctor.gate.policy import Policy
from fwdoctor.model import Fact, Facts, Finding

# Kept back from the budget for judging (the KB loads in ~0.3 s) and two scontrol calls.
RESERVE_S = 2.0
# With --smoke kernel the facts may use this share of what is left; the smoke the rest.
FACTS_SHARE_WITH_SMOKE = 0.5


@dataclass(frozen=True)
class Cause:
    """One reason for the verdict: a finding, a failed smoke, or a step that did not finish."""

    id: str
    severity: str
    message: str
    verdict: str  # "drain" | "warn"


@dataclass
class Step:
    name: str
    status: str  # "ok" | "failed" | "unknown"
    seconds: float
    detail: str = ""


@dataclass
class GateResult:
    verdict: str  # "ok" | "warn" | "drain"
    budget_s: float
    elapsed_s: float = 0.0
    causes: list[Cause] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    policy: str = ""
    actions: list[str] = field(default_factory=list)

    @property
    def first_cause(self) -> Cause | None:
        drains = [c for c in self.causes if c.verdict == "drain"]
        return (drains or self.causes or [None])[0]

    @property
    def unknown(self) -> bool:
        return any(s.status == "unknown" for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "budget_s": self.budget_s,
            "elapsed_s": round(self.elapsed_s, 3),
            "policy": self.policy,
            "causes": [c.__dict__ for c in self.causes],
            "steps": [{**s.__dict__, "seconds": round(s.seconds, 3)} for s in self.steps],
            "findings": [{"id": f.id, "code": f.code, "severity": f.severity.value, "message": f.message} for f in self.findings],
            "actions": self.actions,
        }


class Deadline:
    def __init__(self, budget_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.start = clock()
        self.budget_s = budget_s
        self.end = self.start + budget_s

    def left(self) -> float:
        return max(0.0, self.end - self.clock())

    def elapsed(self) -> float:
        return self.clock() - self.start


def expected_fact(policy: Policy, baseline: dict[str, Any] | None, kb: Any, facts: Facts) -> Fact:
    """`node.expected`: the KB's row for the GPU model, overridden by the fleet's own
    baseline for the node's type, the GPU count by the policy's expect.gpus."""
    from collections import Counter

    from fwdoctor.fleet.baseline import expected_for, node_type

    expected: dict[str, Any] = {}
    devices = Counter(d.get("device_id") for d in facts.get("pci.nvidia_gpus") or [] if isinstance(d, dict)).most_common(1)
    row = kb.nodetypes.for_gpu(node_type(facts), devices[0][0] if devices else None)
    if row is not None:
        expected.update(row.expected())
    learned = expected_for(baseline, facts) if baseline else None
    if learned:
        expected.update(learned)
        if "gemm_tflops" in learned:
            pct = policy.thresholds.get("gemm_below_baseline_pct", 10)
            expected["gemm_floor"] = round(learned["gemm_tflops"] * (1 - pct / 100), 1)
    gpus = policy.expect.get("gpus")
    if isinstance(gpus, int):
        expected["gpus"] = gpus
        expected["gpus_from"] = f"{policy.source} expect.gpus"
    if not expected:
        why = "no expect.gpus in the policy, no --baseline row and no KB row for this node's GPU model"
        return Fact.unknown("node.expected", why)
    return Fact("node.expected", expected, source=str(expected.get("from") or expected.get("gpus_from")))


def gather_facts(source_args: Sequence[str], deadline: Deadline, share: float = 1.0) -> tuple[Facts | None, Step]:
    """`fwdoctor facts SOURCE...` in a child under what is left of the budget."""
    started = deadline.elapsed()
    allowed = max(0.0, (deadline.left() - RESERVE_S) * share)
    if allowed < 0.5:
        return None, Step("facts", "unknown", 0.0, f"no time left in the {deadline.budget_s:g} s budget")
    # The probes' own per-command timeout is the whole allowance: the gate's deadline, not
    # the probe's, decides when a hung NVML stops counting.
    argv = [sys.executable, "-m", "fwdoctor", "facts", *source_args, "--timeout", f"{max(allowed, 0.1):.1f}"]
    result = runner.run(argv, timeout=allowed)
    seconds = deadline.elapsed() - started
    if result.timed_out:
        return None, Step("facts", "unknown", seconds, f"the probes did not finish within {allowed:.1f} s of the {deadline.budget_s:g} s budget (killed)")
    if not result.ok:
        return None, Step("facts", "unknown", seconds, result.describe_failure())
    try:
        facts = Facts.from_json(json.loads(result.stdout))
    except ValueError as exc:
        return None, Step("facts", "unknown", seconds, f"fwdoctor facts printed no facts: {exc}")
    return facts, Step("facts", "ok", seconds)


def smoke_kernel(deadline: Deadline, python: str | None) -> tuple[Cause | None, Step, float | None]:
    """`fwdoctor smoke kernel --json` in a child: (a drain cause if it failed, the step, the
    node's GEMM TFLOP/s as fleet report reads it, or None)."""
    started = deadline.elapsed()
    allowed = deadline.left() - RESERVE_S
    if allowed < 1.0:
        return None, Step("smoke kernel", "unknown", 0.0, f"no time left in the {deadline.budget_s:g} s budget"), None
    argv = [sys.executable, "-m", "fwdoctor", "smoke", "kernel", "--json", "--timeout", f"{allowed:.1f}", *(["--python", python] if python else [])]
    result = runner.run(argv, timeout=allowed)
    seconds = deadline.elapsed() - started
    if result.timed_out:
        return None, Step("smoke kernel", "unknown", seconds, f"did not finish within {allowed:.1f} s (killed)"), None
    gemm = _smoke_gemm(result.stdout)
    if result.returncode == 1:
        why = _smoke_failure(result.stdout) or "a GPU failed the kernel smoke test"
        return Cause("smoke-kernel", "error", f"smoke kernel failed: {why}", "drain"), Step("smoke kernel", "failed", seconds, why), gemm
    if not result.ok:
        return None, Step("smoke kernel", "unknown", seconds, result.describe_failure()), None
    return None, Step("smoke kernel", "ok", seconds), gemm


def _smoke_gemm(stdout: str) -> float | None:
    from fwdoctor.fleet.node import kernel_cells

    try:
        data = json.loads(stdout)
        results = data.get("results") if isinstance(data, dict) else None
        value = kernel_cells(results)[1].get("gemm") if isinstance(results, list) else None
    except (ValueError, TypeError, AttributeError):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def _smoke_failure(stdout: str) -> str | None:
    """The first failing GPU's error from `smoke kernel --json`, in one line."""
    try:
        data = json.loads(stdout)
    except ValueError:
        return None
    for item in data.get("results", []) if isinstance(data, dict) else []:
        if isinstance(item, dict) and item.get("status") == "fail":
            return " ".join(str(item.get("error") or item.get("message") or item.get("name") or "failed").split())[:200]
    return None


def verdict_of(findings: Sequence[Finding], steps: Sequence[Step], policy: Policy, extra: Sequence[Cause] = ()) -> tuple[str, list[Cause]]:
    """The policy applied: (verdict, causes, drains first, errors before warnings)."""
    causes: list[Cause] = list(extra)
    threshold = policy.thresholds.get("ecc_uncorrected_volatile", 1)
    for finding in findings:
        if finding.id == "probe-failed":
            decided = policy.for_unknown()
        else:
            decided = policy.verdict(finding.id, finding.severity.value)
        if finding.id == "gpu-ecc-uncorrected":
            count = (finding.evidence.get("gpu") or {}).get("ecc_uncorrected_volatile") or 0
            if count < threshold:
                decided = "warn" if decided else None
        if decided:
            causes.append(Cause(finding.id, finding.severity.value, finding.message, decided))
    for step in steps:
        if step.status == "unknown" and policy.for_unknown():
            causes.append(Cause("unknown", "error", f"{step.name}: {step.detail}", policy.for_unknown() or "warn"))
    rank = {"error": 0, "warning": 1, "info": 2}
    causes.sort(key=lambda c: (c.verdict != "drain", rank.get(c.severity, 3)))
    if any(c.verdict == "drain" for c in causes):
        return "drain", causes
    return ("warn" if causes else "ok"), causes


def run_gate(
    policy: Policy,
    budget_s: float,
    source_args: Sequence[str] = (),
    facts_file: str | None = None,
    smoke: Sequence[str] = (),
    baseline: dict[str, Any] | None = None,
    kb_dir: str | None = None,
    python: str | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> GateResult:
    from fwdoctor.engine import judge
    from fwdoctor.kb import KB
    from fwdoctor.rules import KB_AREAS, RULES
    from fwdoctor.rules.hardware import GATE_RULES
    from fwdoctor.sources import read_facts_file

    deadline = Deadline(budget_s, clock)
    result = GateResult("ok", budget_s, policy=policy.source)
    if facts_file is not None:
        started = deadline.elapsed()
        facts: Facts | None = read_facts_file(facts_file)  # SourceError: the caller's one-line refusal
        result.steps.append(Step("facts", "ok", deadline.elapsed() - started, f"from {facts_file}"))
    else:
        facts, step = gather_facts(source_args, deadline, FACTS_SHARE_WITH_SMOKE if smoke else 1.0)
        result.steps.append(step)
    extra: list[Cause] = []
    gemm: float | None = None
    # The smoke before judging (judging takes a fraction of a second): its GEMM figure is
    # judged against the node type's with the facts.
    if "kernel" in smoke:
        cause, step, gemm = smoke_kernel(deadline, python)
        result.steps.append(step)
        if cause:
            extra.append(cause)
    if facts is not None:
        started = deadline.elapsed()
        kb = KB.load(kb_dir, areas=KB_AREAS)  # KBError: the caller's one-line refusal
        added = [expected_fact(policy, baseline, kb, facts)]
        if gemm is not None:
            added.append(Fact("smoke.gemm_tflops", gemm, source="smoke kernel"))
        facts = Facts([*(f for k in facts if k not in ("node.expected", "smoke.gemm_tflops") and (f := facts.fact(k)) is not None), *added],
                      facts.failures, facts.provenance)
        report = judge(facts, kb, (*RULES, *GATE_RULES))
        result.findings = list(report.findings)
        result.steps.append(Step("judge", "ok", deadline.elapsed() - started))
    result.verdict, result.causes = verdict_of(result.findings, result.steps, policy, extra)
    result.elapsed_s = deadline.elapsed()
    return result
