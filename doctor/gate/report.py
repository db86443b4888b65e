"""A gate result for the readers it has: a person (text), scripts (JSON), CI dashboards
(CTRF JSON, JUnit XML), Nagios/NHC and Node Problem Detector (their exit codes and one line).

Values stay raw in the result; each renderer escapes for its target: the terminal through
fwdoctor.render.escape, XML through xml.etree (which escapes text and attributes), JSON by json.
"""

from __future__ import annotations

from typing import Any

from fwdoctor.gate.run import GateResult
from fwdoctor.render import testreport
from fwdoctor.render.escape import terminal
from fwdoctor.render.textfit import fit

# Exit codes by convention.
# fwdoctor's own: 0 the node may take jobs (ok or warn), 1 drain, 2 the doctor failed.
# Nagios plugin guidelines (also NHC's checks): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN
# (https://nagios-plugins.org/doc/guidelines.html, "Plugin Return Codes").
# Node Problem Detector's custom plugins: 0 OK, 1 NonOK, anything else Unknown; the first
# max_output_length bytes of stdout (default 80) become the condition's message
# (kubernetes/node-problem-detector docs/custom_plugin_monitor.md, pkg/custompluginmonitor/types/config.go).
NAGIOS = {"ok": 0, "warn": 1, "drain": 2, "unknown": 3}
NPD = {"ok": 0, "warn": 0, "drain": 1, "unknown": 2}
NPD_MESSAGE_MAX = 80


def status_of(result: GateResult) -> str:
    """"ok" | "warn" | "drain" | "unknown": unknown when nothing but an unfinished step
    stands behind the verdict (Nagios' UNKNOWN, NPD's Unknown)."""
    if result.unknown and all(c.id == "unknown" for c in result.causes if c.verdict == "drain") and result.verdict != "ok":
        return "unknown"
    return result.verdict


def exit_code(result: GateResult, scheme: str) -> int:
    if scheme == "nagios":
        return NAGIOS[status_of(result)]
    if scheme == "npd":
        return NPD[status_of(result)]
    return 1 if result.verdict == "drain" else 0


def one_line(result: GateResult, limit: int | None = None) -> str:
    cause = result.first_cause
    text = f"{result.verdict.upper()}" + (f": {cause.id}: {cause.message}" if cause else f": {len(result.findings)} finding(s), none that matter to the policy")
    text = " ".join(terminal(text).split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def render_text(result: GateResult) -> str:
    lines = [f"fwdoctor gate: {result.verdict.upper()} ({result.elapsed_s:.1f} s of the {result.budget_s:g} s budget; policy: {result.policy})"]
    for cause in result.causes:
        lines.append(f"  {cause.verdict:5} {cause.id}: {cause.message}")
    for step in result.steps:
        lines.append(f"  step {step.name}: {step.status} ({step.seconds:.1f} s)" + (f": {step.detail}" if step.detail else ""))
    for action in result.actions:
        lines.append(f"  {action}")
    # 80 columns, as check's report (issue 29): a long message hangs under its verdict;
    # --json and the JUnit/NPD forms keep every message whole.
    return "\n".join(part for line in lines for part in fit(terminal(line), hang=8)) + "\n"


def _tests(result: GateResult) -> list[dict[str, Any]]:
    """One test per step, then one per cause (failed for drain, other for warn)."""
    tests = []
    for step in result.steps:
        status = {"ok": "passed", "failed": "failed", "unknown": "other"}[step.status]
        tests.append({"name": f"gate step: {step.name}", "status": status, "duration": int(step.seconds * 1000),
                      **({"message": step.detail} if step.detail else {})})
    for cause in result.causes:
        tests.append({"name": f"{cause.id}", "status": "failed" if cause.verdict == "drain" else "other",
                      "duration": 0, "message": cause.message, "extra": {"verdict": cause.verdict, "severity": cause.severity}})
    if not result.causes:
        tests.append({"name": "gate verdict", "status": "passed", "duration": 0, "message": one_line(result)})
    return tests


def render_ctrf(result: GateResult, finished: float | None = None) -> str:
    """CTRF JSON (fwdoctor.render.testreport): a test per step and per cause."""
    return testreport.ctrf("fwdoctor gate", _tests(result), result.elapsed_s, finished,
                           {"verdict": result.verdict, "budget_s": result.budget_s})


def render_junit(result: GateResult) -> str:
    """JUnit XML (fwdoctor.render.testreport): drains are <failure>, warnings and unknowns pass
    with <system-out>."""
    return testreport.junit("fwdoctor gate", "fwdoctor.gate", _tests(result), result.elapsed_s)
