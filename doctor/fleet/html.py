"""`fleet report --format html`: one self-contained page, the matrix of nodes by checks.

Everything is inline (page.css, page.js beside this module, read as package data); a
Content-Security-Policy forbids every fetch, so the page works offline, from a mail
attachment or an artifact store. Every value that came from a document (node names,
versions, messages) goes through html.escape (control characters shown visibly first,
fwdoctor.render.escape.terminal): a host name is input like any other.

Cells the documents do not fill show "n/a". An odd cell (a minority value, a figure far
below its peers') has class "odd" and a title saying what the rest have.
"""

from __future__ import annotations

from html import escape
from importlib import resources
from typing import Iterator

from fwdoctor import __version__
from fwdoctor.findings import AREA_TITLES
from fwdoctor.fleet import node as nd
from fwdoctor.fleet.hostlist import folded
from fwdoctor.fleet.report import FleetReport, _differing, _summary, grouped_node_findings, own, to_act_on, worst_of
from fwdoctor.render.escape import terminal

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def _asset(name: str) -> str:
    return resources.files("fwdoctor.fleet").joinpath(name).read_text(encoding="utf-8")


def e(value: object) -> str:
    """A document's value as HTML text: control characters shown as the terminal shows
    them (HTML forbids them, and the page may be read with `cat`), then html.escape."""
    return escape(terminal(value), quote=True)


def render_html(report: FleetReport) -> Iterator[str]:
    """The page in chunks (10,000 rows are written as they are made, never held twice)."""
    n = report.max_listed
    yield ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
           f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
           f"<title>fwdoctor fleet report: {len(report.rows)} nodes</title>\n"
           f"<style>\n{_asset('page.css')}</style>\n</head>\n<body>\n")
    yield f"<h1>fwdoctor fleet report</h1>\n<p class=\"summary\">fwdoctor {e(__version__)}: {e(_summary(report))}</p>\n"
    yield "<h2>Nodes to act on (drain)</h2>\n<ul class=\"findings\" id=\"act-on\">\n"
    act = to_act_on(report)
    for cause, nodes in act:
        yield f"<li><span class=\"sev-error\">drain</span> <code>{e(folded(nodes, n))}</code>: {e(cause)}</li>\n"
    if not act:
        yield "<li>None.</li>\n"
    yield "</ul>\n"
    yield f"<h2>Drift: {report.alike} of {len(report.rows)} nodes alike</h2>\n<ul class=\"drift\">\n"
    differing = _differing(report)
    for column, found in differing:
        yield f"<li><b>{e(column.title)}</b>: {e(found.text(n))}</li>\n"
    if not differing:
        yield "<li>Nothing differs between the nodes.</li>\n"
    yield f"</ul>\n<h2>{e(AREA_TITLES['fleet'])}</h2>\n<ul class=\"findings\" id=\"fleet-findings\">\n"
    for finding in report.findings:
        sev = finding.severity.value
        yield f"<li><span class=\"sev-{sev}\">{sev}</span> <code>{e(finding.id)}</code>: {e(finding.message)}</li>\n"
    for item in report.not_checked:
        yield f"<li>not checked <code>{e(item.rule)}</code>: {e(item.reason)}</li>\n"
    if not report.findings and not report.not_checked:
        yield "<li>No finding.</li>\n"
    yield "</ul>\n<h2>Each node's own checks</h2>\n<ul class=\"findings\" id=\"node-findings\">\n"
    groups = grouped_node_findings(report)
    for (finding_id, severity, message), nodes in groups:
        yield (f"<li><span class=\"sev-{e(severity)}\">{e(severity)}</span> <code>{e(finding_id)}</code>: {e(message)} "
               f"({len(nodes)} node(s): {e(folded(nodes, n))})</li>\n")
    if not groups:
        yield "<li>No finding.</li>\n"
    yield "</ul>\n"
    if report.bad:
        yield "<h2>Inputs that could not be used</h2>\n<ul id=\"unreadable\">\n"
        for item in report.bad:
            yield f"<li><code>{e(item.where)}</code>: {e(item.reason)}</li>\n"
        yield "</ul>\n"
    yield ("<h2>Nodes by checks</h2>\n<p class=\"legend\"><span class=\"odd\">odd</span>differs from the rest "
           "(hover for the majority)<span class=\"fail\">fail</span>a failed smoke test; n/a: the documents do not say. "
           "Click a header to sort.</p>\n"
           "<p class=\"filter\"><label><input type=\"checkbox\" id=\"only-odd\"> only nodes that are odd or have findings</label></p>\n")
    yield from _table(report)
    yield f"<script>\n{_asset('page.js')}</script>\n</body>\n</html>\n"


def _table(report: FleetReport) -> Iterator[str]:
    heads = ['<th scope="col" tabindex="0" data-type="text">node</th>']
    for column in nd.COLUMNS:
        kind = "number" if column.figure or column.key == "gpu_count" else "text"
        heads.append(f'<th scope="col" tabindex="0" data-type="{kind}" data-key="{column.key}">{e(column.title)}</th>')
    heads.append('<th scope="col" tabindex="0" data-type="text" data-key="findings">findings</th>')
    yield f"<div class=\"wrap\">\n<table class=\"matrix\" id=\"matrix\">\n<thead><tr>{''.join(heads)}</tr></thead>\n<tbody>\n"
    for row in report.rows:
        marks = report.odd(row)
        cells = [f'<th scope="row" data-v="{e(row.name)}" title="{e(row.named_by)}">{e(row.name)}</th>']
        for column in nd.COLUMNS:
            value = row.cells.get(column.key)
            classes = []
            if value is None:
                cells.append('<td class="na" data-v="">n/a</td>')
                continue
            if column.figure or column.key == "gpu_count":
                classes.append("num")
            if value == "fail":
                classes.append("fail")
            title = ""
            if column.key in marks:
                classes.append("odd")
                title = f' title="{e(marks[column.key])}"'
            sort_value = repr(row.figures[column.key]) if column.key in row.figures else value
            cls = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f'<td{cls} data-v="{e(sort_value)}"{title}>{e(value)}</td>')
        # Every finding that is this node's own: its checks', its failed smoke tests (their
        # reasons in the title) and a fleet finding naming it alone.
        mine = own(report, row)
        worst = worst_of(mine)
        text = f"{worst} ({len(mine)})" if mine else "ok"
        rank = {"error": "0", "warning": "1", "info": "2", "ok": "3"}[worst]
        why = "; ".join(dict.fromkeys(f"{i}: {m}" if i == "smoke-failed" else i for i, _, m in mine))
        cells.append(f'<td class="sev-{worst}" data-v="{rank}{len(mine):06d}" title="{e(why)}">{e(text)}</td>')
        flag = ' data-flag="1"' if mine or marks else ""
        yield f"<tr{flag}>{''.join(cells)}</tr>\n"
    yield "</tbody>\n</table>\n</div>\n"
