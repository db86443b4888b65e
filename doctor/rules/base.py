"""How a rule is declared and how the engine evaluates it.

A rule is a small pure function of (Facts, KB) that returns None when healthy, or one or
more `Hit`s. The engine turns hits into `Finding`s with the rule's id, severity and area,
and turns missing inputs into `NotChecked` so an unknown never looks healthy.

    @rule("no-gpu", needs=("gpus.list",))
    def no_gpu(facts, kb):
        '''What it does: ... / Why is this bad? ... / Fix: ...'''
        if facts["gpus.list"]:
            return None
        return Hit("no NVIDIA GPU found", evidence={"gpus.list": []})
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from fwdoctor.findings import kind
from fwdoctor.model import Facts, Finding, FixRef, NotChecked, Severity

if TYPE_CHECKING:  # the KB's modules import yaml: only the type is needed here
    from fwdoctor.kb import KB


@dataclass(frozen=True)
class Hit:
    """What a rule returns when it fires. `severity` overrides the id's default (e.g. a
    `torch-toolkit-mismatch` on the minor version is a warning, not an error)."""

    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    fix: FixRef | None = None
    severity: Severity | None = None


# The test suite sets this (tests/conftest.py) so that a rule that raises fails the test
# that ran it instead of becoming "not checked ... the rule has a bug", which a robustness
# test cannot tell from a correct "not checked". Users never set it: for them one broken
# rule costs one row, not the report.
RAISE_RULE_ERRORS_ENV = "FWDOCTOR_RAISE_RULE_ERRORS"


def raise_rule_errors() -> bool:
    """True when a rule's exception should propagate (the test suite's switch)."""
    return os.environ.get(RAISE_RULE_ERRORS_ENV) == "1"


class NotCheckable(Exception):
    """Raised by a rule whose question the KB cannot answer ("no data for CUDA 13.5")."""


def report_errors(facts: Facts, *kinds: str) -> list[dict[str, Any]]:
    """The report's error texts of these kinds (doctor/kb/errors.yaml row ids), in the
    report's order: what the report-side rules read (fwdoctor.triage)."""
    return [e for e in facts.get("report.errors") or [] if isinstance(e, dict) and e.get("kind") in kinds]


def report_line(error: Mapping[str, Any]) -> str:
    """'report line N: "text"': where a report said it, for a finding's message."""
    return f"report line {error.get('line')}: \"{error.get('text')}\""


def sh(value: Any, what: str = "a value") -> str:
    """`value` as one quoted word of a fix command (fwdoctor.quoting.shell_word): a folder
    named `cuda-13.0$(touch X)` is shown quoted, never as a command to paste. A value no
    command can hold (a NUL from a facts file) makes the rule not checkable, with the reason."""
    from fwdoctor.quoting import QuotingError, shell_word

    try:
        return shell_word(str(value), what)
    except QuotingError as exc:
        raise NotCheckable(f"no fix command can be written: {exc}") from None


# Fact values that are versions ("12.4.131", "3.11.7", "580.95.05") are read and compared
# through fwdoctor.versions.
RuleFunc = Callable[[Facts, "KB"], "Hit | Iterable[Hit] | None"]


@dataclass(frozen=True)
class Rule:
    id: str
    needs: tuple[str, ...]
    func: RuleFunc
    # Facts that may be UNKNOWN without blocking the rule (it handles them itself).
    optional: tuple[str, ...] = ()

    @property
    def severity(self) -> Severity:
        return kind(self.id).severity

    @property
    def area(self) -> str:
        return kind(self.id).area

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.func.__doc__ or "")

    def evaluate(self, facts: Facts, kb: KB) -> tuple[list[Finding], NotChecked | None]:
        missing = [key for key in self.needs if not facts.known(key)]
        if missing:
            reasons = "; ".join(f"{key} unknown ({facts.why(key)})" for key in missing)
            return [], NotChecked(self.id, self.area, reasons)
        try:
            result = self.func(facts, kb)
        except NotCheckable as exc:
            return [], NotChecked(self.id, self.area, str(exc))
        hits: list[Hit]
        if result is None:
            hits = []
        elif isinstance(result, Hit):
            hits = [result]
        else:
            hits = [h for h in result if h is not None]
        code = kind(self.id).code
        findings = [
            Finding(
                id=self.id,
                severity=hit.severity or self.severity,
                message=hit.message,
                area=self.area,
                evidence=dict(hit.evidence),
                fix=hit.fix,
                code=code,
            )
            for hit in hits
        ]
        return findings, None


def rule(finding_id: str, needs: Iterable[str] = (), optional: Iterable[str] = ()) -> Callable[[RuleFunc], Rule]:
    """Declare a rule for a finding id from doctor/findings.py (checked at import)."""
    kind(finding_id)  # fail loudly on a typo in an id

    def wrap(func: RuleFunc) -> Rule:
        return Rule(finding_id, tuple(needs), func, tuple(optional))

    return wrap
