"""One report, three renderers: text (for people), JSON (for scripts), markdown (for bug reports).

Values stay raw in Facts and Findings (JSON keeps them so); each renderer escapes for where
its bytes go (fwdoctor.render.escape): the text report shows control characters visibly (a GPU
name's OSC 52 clipboard write, a path's newline), markdown holds report text only in code.
Fix commands are quoted where the rules build them (fwdoctor.rules.base.sh)."""

from __future__ import annotations

import datetime as _dt
import json
import re
from typing import Any

from fwdoctor import __version__
from fwdoctor.engine import Report
from fwdoctor.findings import AREA_TITLES, AREAS
from fwdoctor.model import TIMESTAMP_FORMAT, Finding, Provenance, Severity
from fwdoctor.render.escape import md_block, md_cell, md_code, terminal
from fwdoctor.render.summary import summary
from fwdoctor.render.summary import to_json as summary_json
from fwdoctor.render.textfit import WIDTH, fit
from fwdoctor.schema import stamp

NOTHING_CHECKED = "Nothing could be checked: no check had the facts it needs (`-v` lists what each lacked)."
MARK = {Severity.ERROR: "error", Severity.WARNING: "warn ", Severity.INFO: "info "}


def _fix_lines(finding: Finding) -> list[str]:
    if finding.fix is None:
        return []
    lines = []
    if finding.fix.note:
        lines.append(f"      fix: {finding.fix.note}")
    for command in finding.fix.commands:
        lines.append(f"        $ {command}")
    if finding.fix.recipe:
        lines.append(f"        $ fwdoctor fix {finding.id}    # recipe {finding.fix.recipe}")
    return lines


def render_text(report: Report, verbose: bool = False, color: bool = False, kb_dir: str | None = None, width: int | None = WIDTH) -> str:
    """The text report; each line wrapped to `width` columns (None: as long as it is),
    nothing cut. `verbose` (-v) prints every line whole, as --json holds every value."""
    if verbose:
        width = None
    def fitted(text: str) -> list[str]:
        return fit(text, width) if width else [text]

    def paint(text: str, severity: Severity | None) -> str:
        text = terminal(text)  # escaped before fwdoctor's own colour codes go around it
        if not color or severity is None:
            return _Escaped("\n".join(fitted(text)))
        code = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}[severity]
        return _Escaped("\n".join(f"\x1b[{code}m{line}\x1b[0m" for line in fitted(text)))

    out: list[str] = [f"fwdoctor {__version__}: {_summary_line(report)}", ""]
    # A layer's text wraps under its own column.
    out += [_Escaped("\n".join(fit(terminal(f"  {layer:<8} {text}"), width, hang=11) if width else [terminal(f"  {layer:<8} {text}")]))
            for layer, text in (*summary(report.facts, report.gpu_cc), _kb_row(kb_dir))]
    by_area: dict[str, list[Finding]] = {}
    for finding in report.findings:
        by_area.setdefault(finding.area, []).append(finding)
    skipped_by_area: dict[str, list] = {}
    for item in report.not_checked:
        skipped_by_area.setdefault(item.area, []).append(item)
    # An area outside AREAS is shown when it has a finding (triage raises the extension-build
    # pre-flight's ids from a project's own refusal in the text): an error counted is an error shown.
    for area in (*AREAS, *(a for a in by_area if a not in AREAS)):
        findings = by_area.get(area, [])
        skipped = skipped_by_area.get(area, [])
        worst = min((f.severity for f in findings), key=lambda s: s.rank, default=None)
        status = "ok" if worst is None else worst.value
        out.append("")
        out.append(paint(f"[{status}] {AREA_TITLES[area]}", worst))
        for finding in findings:
            out.append(paint(f"  {MARK[finding.severity]} {finding.id}: {finding.message}", finding.severity))
            if verbose and finding.evidence:
                for key, value in finding.evidence.items():
                    out.append(f"      evidence {key} = {_short(value)}")
            out.extend(_fix_lines(finding))
        if verbose:
            for item in skipped:
                out.append(f"  not checked {item.rule}: {item.reason}")
        elif skipped:
            out.append(f"  ({len(skipped)} check(s) not run for lack of facts; -v lists them)")
    out.append("")
    if report.nothing_checked:
        out.append(NOTHING_CHECKED)
    elif not report.findings:
        out.append("No problems found.")
    else:
        out.append("`fwdoctor explain ID` explains a finding; `--json` gives machine-readable output.")
    # Every line through the terminal layer (painted ones already were, and hold no other
    # control character than the colour codes added after): one line each, nothing raw.
    return "\n".join(line if isinstance(line, _Escaped) else "\n".join(fitted(terminal(line))) for line in out) + "\n"


def _kb_row(kb_dir: str | None = None) -> tuple[str, str]:
    """The summary row that says how old the knowledge behind the judgement is (`kb_dir`:
    the --kb folder the report was judged with; None: $FWDOCTOR_KB or the bundled KB)."""
    date = _kb_refreshed(kb_dir)
    return ("kb", f"knowledge base refreshed {date}" if date else "knowledge base date unknown")


class _Escaped(str):
    """A line already through the terminal layer (and perhaps painted): left as it is."""


def _summary_line(report: Report) -> str:
    counts = {s: 0 for s in Severity}
    for finding in report.findings:
        counts[finding.severity] += 1
    return (f"{counts[Severity.ERROR]} error(s), {counts[Severity.WARNING]} warning(s), {counts[Severity.INFO]} info; "
            f"{report.not_run} check(s) not run")  # why, area by area below: the line fits 80 columns


def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Facts assembled in memory (triage reads them from a bug report) say so instead of naming
# a host they do not describe.
NOT_RECORDED = Provenance(None, "not recorded", None)


def to_json(report: Report, checked_at: str | None = None, kb_dir: str | None = None) -> dict[str, Any]:
    """The check document. `host` and `collected_at` are the facts' own (`check --facts`
    keeps the file's: whose facts, and when they were collected, not when they were
    judged); `checked_at` (UTC, default now) is when they were judged."""
    facts = report.facts.to_json()
    provenance = report.facts.provenance or NOT_RECORDED
    return stamp("check", {
        **provenance.to_json(),
        "checked_at": checked_at or _dt.datetime.now(_dt.timezone.utc).strftime(TIMESTAMP_FORMAT),
        "exit_code": report.exit_code,
        "checked": report.checked,
        "not_run": report.not_run,
        "nothing_checked": report.nothing_checked,
        "summary": summary_json(report.facts, report.gpu_cc),
        "kb_refreshed": _kb_refreshed(kb_dir),
        "facts": facts["facts"],
        "probe_failures": facts["probe_failures"],
        "findings": [f.to_json() for f in report.findings],
        "not_checked": [n.to_json() for n in report.not_checked],
    })


def _kb_refreshed(kb_dir: str | None = None) -> str | None:
    from fwdoctor.kb import kb_refreshed

    return kb_refreshed(kb_dir)


def render_json(report: Report, checked_at: str | None = None, kb_dir: str | None = None) -> str:
    return json.dumps(to_json(report, checked_at, kb_dir), indent=2, sort_keys=False, default=str) + "\n"


_UUID = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b|\b[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
# The user name stops at characters markdown escaping relies on (a backtick, a backslash, a
# pipe), so scrubbing a rendered document never shortens a code span's fence or its escapes.
_HOME = re.compile(r"(/home/|/Users/)[^/\s\"'`\\|<>]+")


def scrub(text: str) -> str:
    """Strip GPU/MIG UUIDs and home-folder user names from shareable output."""
    text = _UUID.sub("<uuid>", text)
    text = _HOME.sub(lambda m: m.group(1) + "<user>", text)
    return re.sub(r"/root(?=/)", "~", text)


def render_markdown(report: Report, kb_dir: str | None = None) -> str:
    """A bug-report comment: values from the host only inside code (fwdoctor.render.escape), so
    no folder or GPU name renders as a link, image, HTML or @mention on GitHub."""
    lines = [f"### fwdoctor {__version__} report", "", f"**{_summary_line(report)}**", ""]
    lines += ["| layer | version |", "|---|---|"]
    lines += [f"| {layer} | {md_cell(scrub(text))} |" for layer, text in (*summary(report.facts, report.gpu_cc), _kb_row(kb_dir))]
    lines.append("")
    if report.findings:
        lines += ["| severity | id | message |", "|---|---|---|"]
        for f in report.findings:
            lines.append(f"| {f.severity.value} | `{f.id}` | {md_cell(scrub(f.message))} |")
        lines.append("")
    key_facts = [
        "system.os", "driver.version", "driver.cuda_version", "gpus.list", "cuda.active",
        "cudnn.installs", "nccl.installs", "python.version", "torch.version", "torch.cuda",
    ]
    facts = []
    for key in key_facts:
        if key in report.facts:
            value = report.facts[key] if report.facts.known(key) else f"unknown ({report.facts.why(key)})"
            facts.append(scrub(f"{key}: {_short(value, 500)}"))
    lines += ["<details><summary>key facts</summary>", "", *md_block(facts), "</details>", ""]
    if report.nothing_checked:
        lines += [NOTHING_CHECKED, ""]
    if report.not_checked:
        lines.append("Not checked: " + "; ".join(f"`{n.rule}` ({md_code(scrub(n.reason))})" for n in report.not_checked))
        lines.append("")
    return "\n".join(lines)
