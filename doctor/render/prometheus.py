"""`fwdoctor check --format prometheus`: a check as node_exporter textfile metrics.

The Prometheus text exposition format (version 0.0.4,
https://prometheus.io/docs/instrumenting/exposition_formats/), one gauge family per block:

    fwdoctor_finding{id="driver-too-old-for-torch",code="FWD104",severity="error",area="driver"} 1
    fwdoctor_findings{severity="error"} 1              # counts, every severity present (0 too)
    fwdoctor_checks{state="run"} 60                    # and state="not_run"
    fwdoctor_check_not_run{rule="...",area="..."} 1    # one per check that lacked its facts
    fwdoctor_version_info{component="driver",version="580.95.05",source=""} 1
    fwdoctor_info{fwdoctor="0.1.0",host="node-0417"} 1
    fwdoctor_check_exit_code 1
    fwdoctor_check_timestamp_seconds 1.7648e+09        # when the facts were judged (UTC epoch)
    fwdoctor_facts_collected_timestamp_seconds ...     # when they were collected, when known

A finding id that fires more than once (two probes failed) is one series whose value is
how many: node_exporter refuses a file with two samples of the same labels. Component
versions that are unknown are absent rather than "unknown": alert on absence with
`absent()` or on `fwdoctor_check_not_run`. No sample carries a timestamp (the textfile
collector rejects them); the time is its own gauge.

Label values come from the inspected host (a root's file names, a hostile package's
version string): they are escaped as the format says (backslash, double quote, line feed)
and any other control character is replaced, so no value can end a line or a label early.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Iterable, Mapping

from fwdoctor import __version__
from fwdoctor.engine import Report
from fwdoctor.model import TIMESTAMP_FORMAT, Facts, Severity
from fwdoctor.schema import utf8_text

PREFIX = "fwdoctor"
# C0 controls other than line feed (escaped as \n) and DEL: the format has no escape for
# them and some parsers end a line at a carriage return.
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def escape_label_value(value: Any) -> str:
    """A label value as the exposition format writes it between double quotes."""
    text = utf8_text(str(value))
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return _CONTROL.sub("\N{REPLACEMENT CHARACTER}", text)


def _labels(labels: Mapping[str, Any]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{name}="{escape_label_value(value)}"' for name, value in labels.items()) + "}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, help_text: str, samples: Iterable[tuple[Mapping[str, Any], float]]) -> None:
        """One gauge family; duplicate label sets are summed (node_exporter rejects repeats).
        Labels are escaped first and merged on what is written: two raw values that escape
        alike ("9.1\\x01" and "9.1\\x02" both end in U+FFFD) are one series, not two."""
        merged: dict[str, float] = {}
        for labels, value in samples:
            key = _labels(labels)
            merged[key] = merged.get(key, 0) + value
        full = f"{PREFIX}_{name}"
        self.lines.append(f"# HELP {full} {help_text}")
        self.lines.append(f"# TYPE {full} gauge")
        for key, value in merged.items():
            self.lines.append(f"{full}{key} {_number(value)}")


def _epoch(text: str | None) -> float | None:
    if not text:
        return None
    try:
        when = _dt.datetime.strptime(text, TIMESTAMP_FORMAT).replace(tzinfo=_dt.timezone.utc)
    except ValueError:
        return None
    return when.timestamp()


def component_versions(facts: Facts) -> list[dict[str, str]]:
    """{"component", "version", "source"} for each layer whose version is known: the driver,
    the CUDA it supports, the active toolkit, torch and its CUDA, every cuDNN and NCCL
    install (source: pip, system, conda ...)."""
    out: list[dict[str, str]] = []

    def add(component: str, version: Any, source: str = "") -> None:
        if isinstance(version, (str, int, float)) and not isinstance(version, bool) and str(version):
            out.append({"component": component, "version": str(version), "source": source})

    add("driver", facts.get("driver.version"))
    add("driver_cuda", facts.get("driver.cuda_version"))
    active = facts.get("cuda.active")
    if isinstance(active, Mapping):
        add("cuda_toolkit", active.get("version"), str(active.get("root") or ""))
    add("torch", facts.get("torch.version"))
    add("torch_cuda", facts.get("torch.cuda"))
    for component, key in (("cudnn", "cudnn.installs"), ("nccl", "nccl.installs")):
        installs = facts.get(key)
        for item in installs if isinstance(installs, list) else []:
            if isinstance(item, Mapping):
                add(component, item.get("header_version") or item.get("library_version"), str(item.get("kind") or ""))
    return out


def render(report: Report, checked_at: str) -> str:
    """The whole textfile for one check (`checked_at`: UTC, TIMESTAMP_FORMAT)."""
    out = _Writer()
    out.family("finding", "A finding of fwdoctor check, by id (value: how many times it fired). `fwdoctor explain ID` documents it.",
               (({"id": f.id, "code": f.code, "severity": f.severity.value, "area": f.area}, 1) for f in report.findings))
    counts = {s.value: 0 for s in Severity}
    for finding in report.findings:
        counts[finding.severity.value] += 1
    out.family("findings", "Findings of fwdoctor check by severity.", (({"severity": s}, n) for s, n in counts.items()))
    out.family("checks", "Checks fwdoctor evaluated (run) and those that lacked the facts they need (not_run).",
               (({"state": "run"}, report.checked), ({"state": "not_run"}, report.not_run)))
    out.family("check_not_run", "A check that could not run for lack of facts (never a silent pass).",
               (({"rule": n.rule, "area": n.area}, 1) for n in report.not_checked))
    out.family("version_info", "A component's version on the host (absent when unknown).",
               ((item, 1) for item in component_versions(report.facts)))
    provenance = report.facts.provenance
    host = provenance.host_name if provenance is not None and provenance.host_name else ""
    out.family("info", "The fwdoctor that checked, and the host name the facts carry.", [({"fwdoctor": __version__, "host": host}, 1)])
    out.family("check_exit_code", "fwdoctor check's exit status: 0 no error finding, 1 error findings, 2 nothing could be checked.",
               [({}, report.exit_code)])
    checked = _epoch(checked_at)
    if checked is not None:
        out.family("check_timestamp_seconds", "When the facts were judged (Unix time).", [({}, checked)])
    collected = _epoch(provenance.collected_at if provenance is not None else None)
    if collected is not None:
        out.family("facts_collected_timestamp_seconds", "When the facts were collected (Unix time; older than the check with --facts).",
                   [({}, collected)])
    return "\n".join(out.lines) + "\n"
