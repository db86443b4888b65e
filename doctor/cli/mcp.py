"""`fwdoctor mcp`: serve the read-only tools of fwdoctor.mcp to a coding assistant."""

from __future__ import annotations

import importlib.util

import click

from fwdoctor import extras
from fwdoctor.cli.common import fail, kb_option

INSTALL_HINT = extras.install_hint("mcp")


@click.command("mcp")
@click.option("--allow-root", "allow_roots", multiple=True, metavar="DIR", type=click.Path(file_okay=False),
              help="A folder whose files the tools may read: roots, images' archives, facts, fleet documents (repeatable; links resolved). None: no tool accepts a path.")
@click.option("--http", "http_port", type=click.IntRange(1, 65535), metavar="PORT",
              help="Serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio (this machine only).")
@kb_option
def mcp(allow_roots: tuple[str, ...], http_port: int | None, kb_dir: str | None) -> None:
    """Serve fwdoctor to a coding assistant over MCP (stdio; needs the mcp extra).

    \b
    Tools, all read-only: check, explain, list_findings, select, plan_fix, triage,
    fleet_report. Each returns the document its command prints with --json, typed
    by the schemas in fwdoctor/schemas. Nothing installs, applies, builds or runs
    on a GPU: plan_fix names the `fwdoctor fix ID --apply` a person runs.
    Paths the assistant passes must resolve inside an --allow-root folder.

    \b
    Example (Claude Code):
      claude mcp add fwdoctor -- fwdoctor mcp --allow-root /srv/rootfs
    """
    # Before anything else: without the extra, say how to get it, in one line.
    if importlib.util.find_spec("mcp") is None:
        fail(f"`fwdoctor mcp` needs the MCP SDK: {INSTALL_HINT}")
    try:
        from fwdoctor.mcp import server
    except ImportError as exc:  # an SDK (or one of its own dependencies) half there
        fail(f"`fwdoctor mcp` cannot import {exc.name or 'the MCP SDK'}: {INSTALL_HINT}")
    from fwdoctor.mcp.tools import Context, Roots, ToolError

    try:
        ctx = Context(Roots(allow_roots), kb_dir)
    except ToolError as exc:
        fail(str(exc))
    if http_port is not None:
        server.serve_http(ctx, http_port)
    else:
        server.serve_stdio(ctx)
