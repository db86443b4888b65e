"""`fwdoctor list` and `fwdoctor explain`: the finding catalog (no probing, no KB)."""

from __future__ import annotations

from typing import Any

import click

from fwdoctor.cli.errors import fail
from fwdoctor.cli.output import emit_json
from fwdoctor.findings import BY_ID, FINDING_KINDS, FindingKind
from fwdoctor.render.explain import explanation
from fwdoctor.render.textfit import fit, fit_paragraphs


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_findings(as_json: bool) -> None:
    """List every finding id with its code, default severity and area."""
    if as_json:
        emit_json("finding-list", finding_list())
        return
    column = max(len(k.id) for k in FINDING_KINDS)
    for k in FINDING_KINDS:
        # 80 columns: the title wraps under its own column (--json has every field whole).
        for line in fit(f"{k.code}  {k.severity.value:<7}  {k.id:<{column}} {k.title}", hang=18 + column):
            click.echo(line)


def finding_list() -> dict[str, Any]:
    """The body of `list --json` (also the MCP server's `list_findings` tool)."""
    return {"findings": [_kind_json(k) for k in FINDING_KINDS]}


def finding_entry(finding_id: str) -> dict[str, str]:
    """The body of `explain ID --json` (also the MCP server's `explain` tool): the catalog
    entry and its explanation; DoctorError for an unknown id or code."""
    try:
        text = explanation(finding_id)
    except KeyError as exc:
        fail(str(exc.args[0]))
    kind = BY_ID.get(finding_id.strip()) or next(k for k in FINDING_KINDS if k.code.lower() == finding_id.strip().lower())
    return {**_kind_json(kind), "explanation": text}


def _kind_json(kind: FindingKind) -> dict[str, str]:
    return {"id": kind.id, "code": kind.code, "severity": kind.severity.value, "area": kind.area, "title": kind.title}


@click.command()
@click.argument("finding_id")
@click.option("--json", "as_json", is_flag=True, help="The finding's catalog entry and its explanation text as JSON.")
def explain(finding_id: str, as_json: bool) -> None:
    """Explain a finding: what it checks, the error users see, and the fix.

    FINDING_ID is an id (`driver-too-old-for-torch`) or a code (`FWD104`).
    """
    entry = finding_entry(finding_id)
    if as_json:
        emit_json("finding", entry)
        return
    # Text fits 80 columns (issue 29); --json keeps the explanation as written.
    click.echo(fit_paragraphs(entry["explanation"]))
