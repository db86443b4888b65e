"""`fwdoctor check` and `fwdoctor facts`: judge a host (or a root, an image, saved facts)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Sequence

import click

from fwdoctor.background import Background
from fwdoctor.cli.common import facts_from, fail, kb_option, load_kb, source_options
from fwdoctor.cli.errors import say
from fwdoctor.cli.output import emit_json, settings, use_color, waiting
from fwdoctor.model import Severity
from fwdoctor.sources import SourceRequest, utc_now

if TYPE_CHECKING:
    from fwdoctor.engine import Report
    from fwdoctor.kb import KB

# Imports here are where they are used (issue 30): this module is imported to look the
# command up, and `check --deep` starts its torch child (fwdoctor.sources.gather) before
# the rules and the engine are imported; each format imports only its own renderer
# (prometheus and markdown are not imported for text or JSON).


@click.command()
@source_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (same as --format json).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "prometheus"]), default="text", show_default=True,
              help="markdown strips UUIDs and home paths, for pasting into a bug report; prometheus writes node_exporter textfile metrics.")
@click.option("-v", "--verbose", is_flag=True, help="Show the evidence behind each finding and the checks that could not run.")
@click.option("--only", multiple=True, metavar="ID", help="Only evaluate these finding ids (repeatable).")
@click.option("--ignore", multiple=True, metavar="ID", help="Do not evaluate these finding ids (repeatable): accepted findings in CI.")
@click.option("--fail-on", "fail_on", type=click.Choice(["error", "warning"]), default="error", show_default=True,
              help="Exit 1 on findings of this severity or worse (warning: warnings too).")
@kb_option
def check(source: SourceRequest, as_json: bool, fmt: str, verbose: bool, only: tuple[str, ...], ignore: tuple[str, ...], fail_on: str,
          kb_dir: str | None) -> None:
    """Inspect the host and report problems, each with evidence and a fix.

    \b
    Examples:
      fwdoctor check
      fwdoctor check --deep -v
      fwdoctor check --root /srv/rootfs --env-file image.env --json
      fwdoctor check --image-archive image.tar   # docker save / OCI, no engine
      fwdoctor facts > host.json; fwdoctor check --facts host.json

    
    Monitoring (node_exporter's textfile collector,
    --collector.textfile.directory=DIR): write to a temporary file in DIR, then
    rename it, so the collector never reads half a file; exit 1 (error findings)
    still writes metrics, a failed run writes none:
      f=DIR/fwdoctor.prom.$$; fwdoctor check --format prometheus > $f
      [ -s $f ] && mv $f DIR/fwdoctor.prom || rm -f $f
    Series: fwdoctor_finding{id,code,severity,area},
    fwdoctor_findings{severity}, fwdoctor_version_info{component,version,source},
    fwdoctor_check_not_run{rule,area}, fwdoctor_check_timestamp_seconds
    (docs/monitoring.md).
    """
    report = check_report(source, only, kb_dir, ignore)
    fmt = "json" if as_json else fmt
    if fmt == "json":
        from fwdoctor.render.report import render_json

        click.echo(render_json(report, checked_at=utc_now(), kb_dir=kb_dir), nl=False)
    elif fmt == "prometheus":
        from fwdoctor.render import prometheus

        click.echo(prometheus.render(report, checked_at=utc_now()), nl=False)
    elif fmt == "markdown":
        from fwdoctor.render.report import render_markdown

        click.echo(render_markdown(report, kb_dir=kb_dir), nl=False)
    else:
        from fwdoctor.render.report import render_text

        click.echo(render_text(report, verbose=verbose, color=use_color(), kb_dir=kb_dir), nl=False)
    if report.nothing_checked:
        say("fwdoctor: error: nothing could be checked: no check had the facts it needs")
    sys.exit(report.exit_for(Severity(fail_on)))


def check_report(source: SourceRequest, only: Sequence[str] = (), kb_dir: str | None = None, ignore: Sequence[str] = ()) -> Report:
    """The judged report `check` renders (also the MCP server's `check` tool); raises
    DoctorError with the one-line reason when the facts or the KB cannot be had."""
    if only or ignore:
        _known_ids(only, ignore)
    # The KB parses while the probes read the host (and, with --deep, while torch imports
    # in its child): neither waits for the other. The rules are imported in that thread
    # too, so the main thread goes straight to the facts (and starts --deep's child).
    kb_loading = Background(_load_kb_for_rules, kb_dir)
    facts = waiting("fwdoctor: importing torch in a child (--deep)", facts_from, source) if source.deep else facts_from(source)
    kb = kb_loading.result()
    from fwdoctor.rules import RULES

    return judge(facts, kb, RULES, only=tuple(only) or None, on_rule_error=_show_rule_error, ignore=ignore)


def _load_kb_for_rules(kb_dir: str | None) -> KB:
    from fwdoctor.rules import KB_AREAS

    return load_kb(kb_dir, KB_AREAS)


def judge(*args: Any, **kwargs: Any) -> Report:
    """fwdoctor.engine.judge, imported when the rules run."""
    from fwdoctor.engine import judge as run_rules

    return run_rules(*args, **kwargs)


def _known_ids(only: Sequence[str], ignore: Sequence[str]) -> None:
    from fwdoctor.findings import BY_ID, did_you_mean

    for finding_id in only:
        if finding_id not in BY_ID:
            fail(f"--only {finding_id}: unknown finding id{did_you_mean(finding_id)} (see `fwdoctor list`)")
    for finding_id in ignore:
        if finding_id not in BY_ID:
            fail(f"--ignore {finding_id}: unknown finding id{did_you_mean(finding_id)} (see `fwdoctor list`)")


def _show_rule_error(rule: object, exc: Exception) -> None:
    """--debug: the traceback of a rule that raised (it is reported as not checked)."""
    if settings().debug:
        import traceback

        click.echo(f"fwdoctor: rule {getattr(rule, 'id', rule)} raised:", err=True)
        traceback.print_exception(exc)


@click.command()
@source_options
def facts(source: SourceRequest) -> None:
    """Print the facts about the host as JSON (save them; re-judge with `check --facts`)."""
    collected = facts_from(source)
    emit_json("facts", collected.to_json())
