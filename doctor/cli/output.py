"""How commands talk: the global -q/--color/--debug settings, notes on stderr, JSON on stdout.

`fwdoctor [-q] [--color auto|always|never] [--debug] COMMAND ...` stores its settings in the
root context; commands read them through these helpers instead of deciding for themselves:

- `note(text)`: progress and remarks on stderr ("interpreter under test: ..."); silent with
  -q; control characters shown visibly (fwdoctor.escape.terminal). Errors never go through
  here (fwdoctor.cli.errors), so -q never hides a failure.
- `use_color()`: --color always/never, else auto: a terminal on stdout and no NO_COLOR
  (https://no-color.org: set and non-empty disables colour), and TERM is not "dumb".
- `emit_json(kind, body)`: one JSON document on stdout, stamped by fwdoctor.schema.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Mapping

import click

from fwdoctor.escape import terminal_lines
from fwdoctor.schema import stamp

_KEY = "fwdoctor.output"


@dataclass(frozen=True)
class Settings:
    color: str = "auto"  # auto | always | never
    quiet: bool = False
    debug: bool = False


def settings() -> Settings:
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return Settings()
    value = ctx.find_root().meta.get(_KEY)
    return value if isinstance(value, Settings) else Settings()


def configure(ctx: click.Context, color: str, quiet: bool, debug: bool) -> None:
    ctx.find_root().meta[_KEY] = Settings(color, quiet, debug)


def use_color(stream: Any = None) -> bool:
    mode = settings().color
    if mode != "auto":
        return mode == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def note(text: str) -> None:
    """A remark for the person at the terminal (stderr), unless -q; each line through the
    terminal layer (a path's escape sequence is shown, not obeyed)."""
    if not settings().quiet:
        click.echo(terminal_lines(str(text).split("\n")), err=True)


def emit_json(kind: str, body: Mapping[str, Any]) -> None:
    click.echo(json.dumps(stamp(kind, body), indent=2, default=str))
