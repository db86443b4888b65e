"""Judge a report: the regular rules on the facts it shows, then the error-text rules
(fwdoctor.triage.rules) for the findings the regular ones could not check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fwdoctor.engine import Report, judge
from fwdoctor.findings import FINDING_KINDS
from fwdoctor.rules import RULES
from fwdoctor.rules.fabric import RUN_RULES
from fwdoctor.rules.report_text import REPORT_RULES
from fwdoctor.triage import Fragment, triage
from fwdoctor.triage import rules as report_rules

if TYPE_CHECKING:
    from fwdoctor.kb import KB

# Areas a bug report can speak about; the source-build pre-flight and the fabric checks
# need facts no pasted text carries, so their "not checked" is noise in a comment.
AREAS = ("driver", "toolkit", "cudnn", "nccl", "python", "torch", "frameworks", "runtime")


@dataclass
class Triage:
    report: Report
    fragments: list[Fragment] = field(default_factory=list)


def run(text: str, kb: KB) -> Triage:
    facts, fragments = triage(text)
    rules = [r for r in RULES if r.area in AREAS]
    if facts.known("nccl.run"):  # a pasted NCCL_DEBUG=INFO log: judged as `smoke allreduce` judges its ranks' logs
        rules += [r for r in RUN_RULES if r not in rules]
    report = judge(facts, kb, rules)
    report.require_facts = False  # a report with no environment in it is said so plainly, exit 0
    fired = {f.id for f in report.findings}
    regular = {r.id for r in RULES}
    # report_text's ids have no regular rule (no probe observes them yet): the text alone judges them
    for item in (*REPORT_RULES, *report_rules.RULES):
        blocked = [n for n in report.not_checked if n.rule == item.id]
        # a row's own error text is judged even where the regular rule passed on partial facts
        if item.id in fired or (item.id in regular and not blocked and item not in report_rules.TEXT_RULES):
            continue
        found, _ = item.evaluate(facts, kb)
        if found:
            report.findings.extend(found)
            report.not_checked = [n for n in report.not_checked if n.rule != item.id]
            fired.add(item.id)
    order = {kind.id: i for i, kind in enumerate(FINDING_KINDS)}
    report.findings.sort(key=lambda f: (f.severity.rank, order.get(f.id, 999), f.message))
    return Triage(report, fragments)
