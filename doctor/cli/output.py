"""How commands talk: the global -q/--color/--debug settings, notes on stderr, JSON on stdout.

`fwdoctor [-q] [--color auto|always|never] [--debug] COMMAND ...` stores its settings in the
root context; commands read them through these helpers instead of deciding for themselves:

- `note(text)`: progress and remarks on stderr ("interpreter under test: ..."); silent with
  -q; control characters shown visibly (fwdoctor.render.escape.terminal). Errors never go through
  here (fwdoctor.cli.errors), so -q never hides a failure.
- `use_color()`: --color always/never, else auto: a terminal on stdout and no NO_COLOR
  (https://no-color.org: set and non-empty disables colour), and TERM is not "dumb".
- `emit_json(kind, body)`: one JSON document on stdout, stamped by fwdoctor.schema.
- `waiting(label, func, *args)`: runs work that may take seconds (a child importing torch,
  a pip step); on a terminal (stderr) and without -q, click's progress bar pulses with the
  seconds so far once it has run PROGRESS_AFTER_S. Through a pipe it prints nothing.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
import time
from typing import Any, Callable, Mapping, TypeVar

import click

from fwdoctor.background import Background
from fwdoctor.cli.errors import say
from fwdoctor.render.escape import terminal_lines
from fwdoctor.schema import stamp

_KEY = "fwdoctor.output"


@dataclass(frozen=True)
class Settings:
    color: str = "auto"  # auto | always | never
    quiet: bool = False
    debug: bool = False
    no_cache: bool = False  # --no-cache: no probe answer is served from the cache


def settings() -> Settings:
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return Settings()
    value = ctx.find_root().meta.get(_KEY)
    return value if isinstance(value, Settings) else Settings()


def configure(ctx: click.Context, color: str, quiet: bool, debug: bool, no_cache: bool = False) -> None:
    ctx.find_root().meta[_KEY] = Settings(color, quiet, debug, no_cache)
    # --no-cache also reads no KB cache entry; set on every invocation, so an in-process
    # caller's earlier --no-cache never outlives its own run.
    from fwdoctor.kb import cache

    cache.bypass(no_cache)
    # click.echo strips ANSI codes when stdout is not a terminal unless the context says
    # otherwise: --color always must survive `| less -R`; subcommands inherit it.
    ctx.find_root().color = {"always": True, "never": False}.get(color)


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
        say(terminal_lines(str(text).split("\n")))


def emit_json(kind: str, body: Mapping[str, Any]) -> None:
    click.echo(json.dumps(stamp(kind, body), indent=2, default=str))


T = TypeVar("T")
PROGRESS_AFTER_S = 1.0  # quicker work shows no bar: it would only flicker
_TICK_S = 0.1


def shows_progress(stream: Any = None) -> bool:
    """Progress is for a person at a terminal: stderr a TTY, no -q, TERM not "dumb"."""
    stream = stream or sys.stderr
    return (not settings().quiet and os.environ.get("TERM") != "dumb"
            and bool(getattr(stream, "isatty", lambda: False)()))


def waiting(label: str, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`func(*args, **kwargs)`, with progress on stderr while it runs (see the module
    docstring). The work runs in a background thread and this thread draws click's bar (its
    unknown-length form pulses); the bar's last state stays on the screen, so the terminal
    keeps how long it took. Exceptions of `func` are raised here."""
    if not shows_progress():
        return func(*args, **kwargs)
    ctx = click.get_current_context(silent=True)

    def call() -> T:
        if ctx is None:
            return func(*args, **kwargs)
        with ctx:  # click's context is per thread: the work's notes still honour -q
            return func(*args, **kwargs)

    work = Background(call)
    if work.wait(PROGRESS_AFTER_S):
        return work.result()
    started = time.monotonic() - PROGRESS_AFTER_S
    shown = lambda _item: f"{time.monotonic() - started:.0f} s"  # noqa: E731
    # An iterator without a length: click draws its pulsing bar and no ETA.
    with click.progressbar(iter(int, 1), label=terminal_lines([label]), file=sys.stderr, width=16,
                           show_eta=False, show_percent=False, item_show_func=shown) as bar:
        while not work.wait(_TICK_S):
            bar.update(1)
    return work.result()
