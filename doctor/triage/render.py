"""A triage in three forms, from one `Triage`: text (like `check`), markdown to post as an
issue comment, and JSON shaped like `check --json` plus the fragments.

JSON: kind "triage" (fwdoctor.schema stamp); every key of `check --json` (exit_code,
summary, facts, probe_failures, findings, not_checked) with the same meaning, plus
"fragments": [{"kind", "lines": [first, last], "facts": {key: value}, "notes": [...]}].
Each fact's "source" names the report lines it came from ("report line 12-14: collect_env").

The markdown is posted by a bot on an issue whose text anyone can write: text from the report
(values, messages, quoted lines, fix commands) goes only inside code spans and fenced blocks
(fwdoctor.render.escape), where GitHub renders no link, image, HTML, @mention or cross-reference;
fences are longer than any backtick run inside them. The text form goes through the terminal
layer like `check`'s.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor import __version__
from fwdoctor.model import Facts, Finding
from fwdoctor.render import report as rep
from fwdoctor.render.escape import md_block, md_cell, md_code, terminal_lines
from fwdoctor.render.textfit import fit
from fwdoctor.triage import UNSHOWN
from fwdoctor.triage.judge import Triage
from fwdoctor.triage.text import Lines

_LINES = re.compile(r"report line (\d+)(?:-(\d+))?")


def to_json(result: Triage) -> dict[str, Any]:
    body = {k: v for k, v in rep.to_json(result.report).items() if k not in ("schema_version", "kind", "fwdoctor")}
    body["fragments"] = [f.to_json() for f in result.fragments]
    return body


def render_text(result: Triage, verbose: bool = False, color: bool = False) -> str:
    head = [f"Recognised {len(result.fragments)} environment fragment(s) in the report:"]
    head += [f"  line {f.start}-{f.end}  {f.kind}" + (f"  ({'; '.join(f.notes)})" if verbose and f.notes else "") for f in result.fragments]
    if not result.fragments:
        head.append("  (none: no collect_env, nvidia-smi, nvcc -V, pip list ... nor known errors)")
    said = _error_notes(result)
    if said:
        head += ["", "Error texts no finding id covers (doctor/kb/errors.yaml says what they mean):"]
        # Fitted to 80 columns like check's report (issue 29); --json holds each note whole.
        head += [part for line, kind, note in said for part in fit(f"  line {line}  {kind}: {note}", hang=4)]
    return terminal_lines(head) + "\n\n" + rep.render_text(result.report, verbose=verbose, color=color)


def _error_notes(result: Triage) -> list[tuple[int, str, str]]:
    """(line, kind, note) of each error text in the report whose signature row names no
    finding: what a correct tool would say about it, once per kind."""
    facts = result.report.facts
    entries = facts["report.errors"] if facts.known("report.errors") else []
    # An entry a raised finding cites is covered by it (a rule that reads a row with the
    # facts beside it: driver-insufficient in TensorFlow's form, libcuda.so on WSL2).
    cited = {(e.get("kind"), e.get("line")) for f in result.report.findings
             for e in (f.evidence.get("report.errors") or []) if isinstance(e, dict)}
    seen: dict[str, tuple[int, str, str]] = {}
    for entry in entries or []:
        if (entry.get("kind"), entry.get("line")) in cited if isinstance(entry, dict) else False:
            continue
        if isinstance(entry, dict) and entry.get("note") and entry.get("kind") not in seen:
            seen[entry["kind"]] = (int(entry.get("line") or 0), str(entry["kind"]), str(entry["note"]))
    return list(seen.values())


def _ranges(source: str) -> list[tuple[int, int]]:
    return [(int(a), int(b or a)) for a, b in _LINES.findall(source or "")]


def _evidence_ranges(finding: Finding, facts: Facts) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for key, value in finding.evidence.items():
        if key == "report.errors" and isinstance(value, list):
            ranges += [(int(e["line"]), int(e.get("end") or e["line"])) for e in value if isinstance(e, dict) and "line" in e]
        elif key in facts and facts.known(key):
            ranges += _ranges(facts.source(key))
        elif key == "gpus":
            ranges += _ranges(facts.source("gpus.list"))
        elif key == "source" and isinstance(value, str):
            # A rule that cites its fact's source under its own evidence names (gpu-xid-errors:
            # "xid_events", "source"): from a report that source is the lines to quote.
            ranges += _ranges(value)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(set(ranges)):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def render_markdown(result: Triage, text: str) -> str:
    report, facts = result.report, result.report.facts
    lines = Lines.of(text)
    out = [f"### fwdoctor {__version__} triage", ""]
    if not result.fragments:
        out += ["No environment information recognised in this report (no `python -m torch.utils.collect_env`, "
                "`nvidia-smi`, `nvcc -V`, `pip list`, ... output, and no known error text).", ""]
    else:
        kinds = ", ".join(f"{f.kind} (line {f.start}" + (f"-{f.end})" if f.end != f.start else ")") for f in result.fragments)
        out += [f"**{rep._summary_line(report)}** from what this report shows: {kinds}.", ""]
        out += ["| layer | as the report shows it |", "|---|---|"]
        out += [f"| {layer} | {md_cell(rep.scrub(value))} |" for layer, value in _layers(facts)]
        out.append("")
    for finding in report.findings:
        out += [f"#### {finding.severity.value}: `{finding.id}` ({finding.code})", "", *md_block([rep.scrub(finding.message)]), ""]
        quoted = []
        for start, end in _evidence_ranges(finding, facts)[:4]:
            quoted += [f"line {start}" + (f"-{end}" if end != start else "") + ":"]
            quoted += [rep.scrub(q) for q in lines.quote(start, end, limit=8)]
        if quoted:
            # The fence is longer than any backtick run in the quoted lines, so a report's own
            # fences and `</details>` stay text inside the block.
            out += ["<details><summary>evidence from the report</summary>", "", *md_block(quoted), "</details>", ""]
        if finding.fix is not None:
            if finding.fix.note:
                out += [f"**Fix:** {md_code(rep.scrub(finding.fix.note))}", ""]
            if finding.fix.commands:
                out += [*md_block([rep.scrub(c) for c in finding.fix.commands], info="sh"), ""]
        out += [f"`fwdoctor explain {finding.id}` says more.", ""]
    said = _error_notes(result)
    if said:
        # The note may quote nothing from the report, but it is kept in code like every value.
        out += ["#### Error texts no finding id covers", ""]
        out += [*md_block([f"line {line}: {kind}: {note}" for line, kind, note in said]), ""]
    missing = _missing(result)
    if missing:
        out += ["<details><summary>Not checked: the report does not show</summary>", ""]
        out += [f"- {what}: {', '.join(f'`{r}`' for r in rules)}" if rules else f"- {what}" for what, rules in missing]
        out += ["", "</details>", ""]
    out.append("_Read from the pasted text only; values the report does not state were not guessed._")
    return "\n".join(out) + "\n"


def _layers(facts: Facts) -> list[tuple[str, str]]:
    rows = []

    def val(key: str) -> Any:
        return facts[key] if facts.known(key) else None

    def where(key: str) -> str:
        source = facts.source(key)
        match = _LINES.search(source)
        return f" (line {match.group(1)}{'-' + match.group(2) if match.group(2) else ''})" if match else ""

    if val("driver.version") or val("driver.cuda_version") or facts.known("driver.nvml_error") and val("driver.nvml_error"):
        parts = []
        if val("driver.version"):
            parts.append(f"{val('driver.version')}{where('driver.version')}")
        if val("driver.cuda_version"):
            parts.append(f"supports CUDA {val('driver.cuda_version')}{where('driver.cuda_version')}")
        if val("driver.nvml_error"):
            parts.append(f"NVML: {val('driver.nvml_error')}{where('driver.nvml_error')}")
        rows.append(("driver", ", ".join(parts)))
    gpus = val("gpus.list")
    if isinstance(gpus, list):
        names = sorted({str(g.get("name")) for g in gpus if isinstance(g, dict)})
        rows.append(("GPUs", (f"{len(gpus)} x {', '.join(names)}" if gpus else "none") + where("gpus.list")))
    toolkits = val("cuda.toolkits")
    active = val("cuda.active")
    if toolkits or active:
        text = "; ".join(f"nvcc {tk.get('version')} ({', '.join(tk.get('found_via') or [])})" for tk in toolkits or [])
        if active:
            text += ("; " if text else "") + f"CUDA_HOME's: {active.get('version')}{where('cuda.active')}"
        rows.append(("toolkit", text))
    if val("torch.version") or facts.known("torch.cuda"):
        cuda = facts["torch.cuda"] if facts.known("torch.cuda") else "?"
        rows.append(("torch", f"{val('torch.version') or '?'} (CUDA {cuda if cuda is not None else 'none: CPU build'}){where('torch.version') or where('torch.cuda')}"))
    if val("compilers.gcc_default"):
        rows.append(("gcc", f"{val('compilers.gcc_default').get('version')}{where('compilers.gcc_default')}"))
    if val("python.version"):
        rows.append(("Python", f"{val('python.version')}{where('python.version')}"))
    return rows


def _missing(result: Triage) -> list[tuple[str, list[str]]]:
    """(what the report would need to show, the rules waiting for it), for the keys a report
    can reasonably show (UNSHOWN); the rest are summarised in one line."""
    by_key: dict[str, list[str]] = {}
    other: list[str] = []
    for item in result.report.not_checked:
        keys = [k for k in UNSHOWN if f"{k} unknown" in item.reason]
        if not keys:
            other.append(item.rule)
            continue
        for key in keys[:1]:
            by_key.setdefault(key, []).append(item.rule)
    rows = [(UNSHOWN[key], sorted(set(rules))) for key, rules in by_key.items()]
    if other:
        rows.append((f"{len(set(other))} more checks need what a report rarely shows (cuDNN/NCCL installs, environment variables, "
                     "JAX/TensorFlow, NVLink and fabric; `fwdoctor check` on the machine reads them)", []))
    return rows
