"""What a smoke test reports: one `SmokeResult` per thing tested, like a finding.

`status` is "pass", "fail" or "skipped". A skip always says why and never counts as a
pass; a failure carries the real error text and, when the text is recognised, the
diagnosis id (docs/findings.md) that `fwdoctor explain` documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from fwdoctor.render.escape import terminal_lines
from fwdoctor.smoke.diagnose import diagnose, first_error_line

PASS, FAIL, SKIPPED = "pass", "fail", "skipped"


@dataclass(frozen=True)
class SmokeResult:
    test: str  # "kernel gpu0", "compile sm_75", "allreduce"
    status: str
    message: str  # one line with the observed values
    details: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""  # the real error text, verbatim (first telling line)
    diagnosis: str | None = None  # a finding id
    hint: str = ""  # what to try

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "status": self.status,
            "message": self.message,
            "error": self.error,
            "diagnosis": self.diagnosis,
            "hint": self.hint,
            "details": dict(self.details),
        }


def failed(test: str, message: str, error_text: str, details: Mapping[str, Any] | None = None, hint: str = "") -> SmokeResult:
    """A failure whose diagnosis and hint come from the error text when it is recognised."""
    found = diagnose(error_text)
    return SmokeResult(
        test,
        FAIL,
        message,
        details=dict(details or {}),
        error=first_error_line(error_text),
        diagnosis=found.finding if found else None,
        hint=hint or (found.hint if found else ""),
    )


def exit_code(results: Iterable[SmokeResult]) -> int:
    """0 when nothing failed (skips included), else 1."""
    return 1 if any(r.status == FAIL for r in results) else 0


def render_text(results: Iterable[SmokeResult]) -> str:
    lines = []
    for r in results:
        lines.append(f"[{r.status}] {r.test}: {r.message}")
        if r.error and r.error not in r.message:
            lines.append(f"      error: {r.error}")
        if r.diagnosis:
            lines.append(f"      diagnosis: {r.diagnosis}   (fwdoctor explain {r.diagnosis})")
        if r.hint:
            lines.append(f"      try: {r.hint}")
    # The error text is the child's own output (a driver's, a library's): control characters
    # in it are shown, not sent to the terminal (fwdoctor.render.escape).
    return terminal_lines(lines) + ("\n" if lines else "")
