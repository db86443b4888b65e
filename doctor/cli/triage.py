"""`fwdoctor triage FILE|-`: judge the environment a bug report shows (see fwdoctor.triage)."""

from __future__ import annotations

import sys

import click

from fwdoctor.cli.common import fail, kb_option, load_kb
from fwdoctor.cli.output import emit_json, use_color
from fwdoctor.rules import KB_AREAS
from fwdoctor.triage.judge import Triage, run
from fwdoctor.triage.render import render_markdown, render_text, to_json

# Bigger than any issue body GitHub accepts (65536 characters): a report, not a log dump.
MAX_BYTES = 4 * 1024 * 1024


@click.command()
@click.argument("report", metavar="FILE|-", type=click.File("rb"))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (same as --format json).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True,
              help="markdown: a comment to post on the issue (evidence quoted, fixes, what could not be checked).")
@click.option("-v", "--verbose", is_flag=True, help="Show each finding's evidence, the fragments' notes and the checks that could not run.")
@kb_option
def triage(report: click.utils.LazyFile, as_json: bool, fmt: str, verbose: bool, kb_dir: str | None) -> None:
    """Read a bug report (a file, or - for stdin) and judge the environment it shows.

    Finds what people paste into issues: torch's and vLLM's collect_env, nvidia-smi and
    its errors, /proc/driver/nvidia/version, nvcc -V, gcc --version, pip list / freeze,
    conda list, dpkg -l / rpm -qa, ds_report, transformers/accelerate env, and the error
    texts that state a fact ("found version 11040", "sm_120 is not compatible ...",
    "unsupported GNU version!", ...). Runs the same rules as `check`; what the report
    does not show is "not checked", never guessed. Exit 1 on an error finding.

    \b
    Examples:
      fwdoctor triage issue.md
      gh issue view 123 --json body -q .body | fwdoctor triage --format markdown -
    """
    text, result = triage_text(report.read(MAX_BYTES + 1), getattr(report, "name", "-"), kb_dir)
    fmt = "json" if as_json else fmt
    if fmt == "json":
        emit_json("triage", to_json(result))
    elif fmt == "markdown":
        click.echo(render_markdown(result, text), nl=False)
    else:
        click.echo(render_text(result, verbose=verbose, color=use_color()), nl=False)
    sys.exit(result.report.exit_code)


def triage_text(data: bytes, name: str, kb_dir: str | None = None) -> tuple[str, Triage]:
    """The report's text and its judgement (also the MCP server's `triage` tool): the same
    size cap as a file or stdin; DoctorError past it."""
    if len(data) > MAX_BYTES:
        fail(f"{name}: more than {MAX_BYTES} bytes; pass the report, not a whole log")
    text = data.decode("utf-8", errors="replace")
    return text, run(text, load_kb(kb_dir, KB_AREAS))
