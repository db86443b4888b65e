"""`fwdoctor list` and `fwdoctor explain`: the finding catalog (no probing, no KB)."""

from __future__ import annotations

import json

import click

from fwdoctor.cli.errors import fail
from fwdoctor.explain import explanation
from fwdoctor.findings import FINDING_KINDS


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_findings(as_json: bool) -> None:
    """List every finding id with its code, default severity and area."""
    if as_json:
        click.echo(json.dumps([{"id": k.id, "code": k.code, "severity": k.severity.value, "area": k.area, "title": k.title} for k in FINDING_KINDS], indent=2))
        return
    for k in FINDING_KINDS:
        click.echo(f"{k.code}  {k.severity.value:<7}  {k.id:<32} {k.title}")


@click.command()
@click.argument("finding_id")
def explain(finding_id: str) -> None:
    """Explain a finding: what it checks, the error users see, and the fix.

    FINDING_ID is an id (`driver-too-old-for-torch`) or a code (`FWD104`).
    """
    try:
        click.echo(explanation(finding_id))
    except KeyError as exc:
        fail(str(exc.args[0]))
