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


def expected_fact(policy: Policy, baseline: dict[str, Any] | None) -> Fact:
    """`node.expected`: the baseline's row for this node type, else the policy's expect."""
    if baseline:
        return Fact("node.expected", baseline, source=str(baseline.get("from", "--baseline")))
    gpus = policy.expect.get("gpus")
    if isinstance(gpus, int):
        return Fact("node.expected", {"gpus": gpus, "from": f"{policy.source} expect.gpus"}, source=policy.source)
    return Fact.unknown("node.expected", "no expect.gpus in the policy and no --baseline")


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


def smoke_kernel(deadline: Deadline, python: str | None) -> tuple[Cause | None, Step]:
    started = deadline.elapsed()
    allowed = deadline.left() - RESERVE_S
    if allowed < 1.0:
        return None, Step("smoke kernel", "unknown", 0.0, f"no time left in the {deadline.budget_s:g} s budget")
    argv = [sys.executable, "-m", "fwdoctor", "smoke", "kernel", "--json", "--timeout", f"{allowed:.1f}", *(["--python", python] if python else [])]
    result = runner.run(argv, timeout=allowed)
    seconds = deadline.elapsed() - started
    if result.timed_out:
        return None, Step("smoke kernel", "unknown", seconds, f"did not finish within {allowed:.1f} s (killed)")
    if result.returncode == 1:
        why = _smoke_failure(result.stdout) or "a GPU failed the kernel smoke test"
        return Cause("smoke-kernel", "error", f"smoke kernel failed: {why}", "drain"), Step("smoke kernel", "failed", seconds, why)
    if not result.ok:
        return None, Step("smoke kernel", "unknown", seconds, result.describe_failure())
    return None, Step("smoke kernel", "ok", seconds)


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
    if facts is not None:
        started = deadline.elapsed()
        facts = Facts([*(f for k in facts if k != "node.expected" and (f := facts.fact(k)) is not None), expected_fact(policy, baseline)],
                      facts.failures, facts.provenance)
        kb = KB.load(kb_dir, areas=KB_AREAS)  # KBError: the caller's one-line refusal
        report = judge(facts, kb, (*RULES, *GATE_RULES))
        result.findings = list(report.findings)
        result.steps.append(Step("judge", "ok", deadline.elapsed() - started))
    if "kernel" in smoke:
        cause, step = smoke_kernel(deadline, python)
        result.steps.append(step)
        if cause:
            extra.append(cause)
    result.verdict, result.causes = verdict_of(result.findings, result.steps, policy, extra)
    result.elapsed_s = deadline.elapsed()
    return result
