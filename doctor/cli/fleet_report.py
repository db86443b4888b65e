"""`fwdoctor fleet report PATH...`: what differs between the nodes, and each node's findings."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Iterable

import click

from fwdoctor.cli.common import fail, kb_option, load_kb
from fwdoctor.cli.errors import say
from fwdoctor.cli.output import emit_json, note
from fwdoctor.findings import BY_ID, did_you_mean
from fwdoctor.fleet.drift import MAX_LISTED
from fwdoctor.schema import stamp


@click.command("report")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json", "html"]), default="text", show_default=True,
              help="html: one self-contained page, the matrix of nodes by checks (sortable).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Write the report to FILE (atomically) instead of stdout.")
@click.option("--max-listed", type=click.IntRange(1, 10000), default=MAX_LISTED, show_default=True,
              help="Odd nodes named per value before '+K more'.")
@click.option("--ignore", multiple=True, metavar="ID", help="Leave these finding ids out, fleet and node findings alike (repeatable).")
@click.option("--fail-on", "fail_on", type=click.Choice(["error", "warning"]), default="error", show_default=True,
              help="Exit 1 on findings of this severity or worse (warning: warnings too).")
@kb_option
def fleet_report(paths: tuple[str, ...], fmt: str, as_json: bool, out_file: str | None, max_listed: int, ignore: tuple[str, ...], fail_on: str,
                 kb_dir: str | None) -> None:
    """Compare many nodes: drift between them, cross-node findings, each node's own findings.

    PATH is a file or a folder (walked for *.json and *.jsonl) of documents from
    `fwdoctor facts`, `check --json`, `smoke all --report` or `smoke ... --json`.
    Documents of one node (by host.name, else the file name) merge into one row.

    \b
    Exit codes: 0 no error; 1 an error finding or a failed smoke test;
    2 an input could not be used, or nothing was read.
    \b
    Examples:
      fwdoctor fleet report facts/
      fwdoctor fleet report facts/ smoke/ --format html --out fleet.html
      fwdoctor fleet report all.jsonl --json | jq '.findings[].id'
    """
    from fwdoctor.fleet import report as fr
    from fwdoctor.rules import KB_AREAS

    fmt = "json" if as_json else fmt
    for finding_id in ignore:
        if finding_id not in BY_ID:
            fail(f"--ignore {finding_id}: unknown finding id{did_you_mean(finding_id)} (see `fwdoctor list`)")
    if out_file:
        _check_out(out_file)
    kb = load_kb(kb_dir, KB_AREAS)
    report = fr.build(list(paths), kb, max_listed=max_listed, progress=lambda n: note(f"fwdoctor: fleet report: {n} documents read ..."))
    report.ignore(ignore)
    report.fail_on = fail_on  # before rendering: the JSON's exit_code is the process's (issue 29)
    chunks: Iterable[str] = ()
    if fmt == "json" and not out_file:
        pass
    elif fmt == "json":
        chunks = [json.dumps(stamp("fleet", fr.to_json(report)), indent=2, default=str) + "\n"]
    elif fmt == "markdown":
        chunks = [fr.render_markdown(report)]
    elif fmt == "html":
        from fwdoctor.fleet.html import render_html

        chunks = render_html(report)
    else:
        chunks = [fr.render_text(report)]
    if fmt == "json" and not out_file:
        emit_json("fleet", fr.to_json(report))
    elif out_file:
        _write_atomically(out_file, chunks)
        note(f"fwdoctor: fleet report ({fmt}): {out_file}")
    else:
        for chunk in chunks:
            click.echo(chunk, nl=False)
    for item in report.bad if (out_file or fmt != "text") else ():  # the text report lists them itself
        say(f"fwdoctor: {item.where}: {item.reason}")
    if not report.rows:
        say("fwdoctor: error: no facts, check or smoke document could be read from " + ", ".join(paths))
    sys.exit(report.exit_code)


def _check_out(path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        fail(f"--out {path}: {folder} is not a writable folder")
    if os.path.isdir(path):
        fail(f"--out {path}: is a directory")


def _write_atomically(path: str, chunks: Iterable[str]) -> None:
    """A temporary file beside `path`, renamed over it when complete: a reader (a web
    server, a dashboard) sees the old report or the new one, never half of one."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=".fwdoctor-fleet-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for chunk in chunks:
                handle.write(chunk)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # what open() would have made (mkstemp makes 0600)
        os.replace(temp, path)
    except OSError as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        fail(f"--out {path}: {exc.strerror or exc}")
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
