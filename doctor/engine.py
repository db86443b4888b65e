"""Runs probes to collect Facts, and rules to turn Facts + KB into a Report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from doctor.findings import kind
from doctor.host import Host, UnreadableError
from doctor.model import Fact, Facts, Finding, NotChecked, ProbeFailure, Severity
from doctor.probes.base import Probe
from doctor.rules.base import Rule


def collect(host: Host, probes: Sequence[Probe], deep: bool = False) -> Facts:
    """Run every probe in order (later probes may read earlier facts). Never raises."""
    facts = Facts()
    for item in probes:
        if item.deep and not deep:
            continue
        produced: list[Fact] = []
        failures: list[ProbeFailure] = []
        try:
            for out in item.func(host, facts):
                if isinstance(out, ProbeFailure):
                    failures.append(out)
                else:
                    produced.append(out)
        except UnreadableError as exc:
            failures.append(ProbeFailure(item.name, f"cannot read {exc.path}: {exc.reason}"))
        except Exception as exc:  # a probe bug must not cost the user the whole report
            failures.append(ProbeFailure(item.name, f"internal error: {type(exc).__name__}: {exc}"))
        have = {fact.key for fact in produced}
        reason = "; ".join(f.reason for f in failures) if failures else "not reported by the probe"
        for key in item.provides:
            if key not in have:
                produced.append(Fact.unknown(key, f"probe {item.name} failed: {reason}" if failures else reason))
        facts = Facts([*(facts.fact(k) for k in facts), *produced], [*facts.failures, *failures])  # type: ignore[misc]
    return facts


@dataclass
class Report:
    facts: Facts
    findings: list[Finding] = field(default_factory=list)
    not_checked: list[NotChecked] = field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def exit_code(self) -> int:
        return 1 if self.has_errors else 0


def judge(facts: Facts, kb: Any, rules: Iterable[Rule], only: Iterable[str] | None = None) -> Report:
    """Evaluate rules (optionally only those ids) and add `probe-failed` findings."""
    wanted = set(only) if only else None
    report = Report(facts)
    for item in rules:
        if wanted is not None and item.id not in wanted:
            continue
        try:
            findings, skipped = item.evaluate(facts, kb)
        except Exception as exc:  # a rule bug: say so, keep the rest of the report
            findings, skipped = [], NotChecked(item.id, item.area, f"internal error in rule: {type(exc).__name__}: {exc}")
        report.findings.extend(findings)
        if skipped is not None:
            report.not_checked.append(skipped)
    if wanted is None or "probe-failed" in wanted:
        pf = kind("probe-failed")
        for failure in facts.failures:
            report.findings.append(
                Finding(
                    id=pf.id,
                    severity=pf.severity,
                    message=f"probe {failure.probe} could not finish: {failure.reason}",
                    area=pf.area,
                    evidence={"probe": failure.probe, "reason": failure.reason},
                    code=pf.code,
                )
            )
    order = {k: i for i, k in enumerate(f.id for f in _kinds())}
    report.findings.sort(key=lambda f: (f.severity.rank, order.get(f.id, 999), f.message))
    return report


def _kinds():
    from doctor.findings import FINDING_KINDS

    return FINDING_KINDS
