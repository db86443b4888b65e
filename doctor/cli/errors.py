"""Exit codes and the one-line error every command shares.

Kept apart from fwdoctor.cli.common (which imports the probes and the KB) so that the
command table, `--help` and `--version` import nothing heavy.

Exit codes: 0 no error findings, 1 error findings (or a failed gate, a refused plan),
2 fwdoctor itself failed (bad arguments, unreadable input, broken KB), always with a
one-line reason naming the input.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click

from fwdoctor.render.textfit import fit_text

EXIT_OK, EXIT_FINDINGS, EXIT_DOCTOR = 0, 1, 2
# The reader of standard output went away (`fwdoctor list | head`): 128 + SIGPIPE, as a
# shell reports any program that a closed pipe ended.
EXIT_PIPE_CLOSED = 141


class DoctorError(click.ClickException):
    """The doctor itself failed: one line on stderr, exit 2."""

    exit_code = EXIT_DOCTOR

    def show(self, file: Any = None) -> None:
        say(f"fwdoctor: error: {self.format_message()}")


def fail(message: str) -> NoReturn:
    raise DoctorError(message)


def findings_exit(message: str) -> NoReturn:
    """A refusal or a failed result (not a doctor failure): the reason, then exit 1."""
    say(f"fwdoctor: {message}")
    sys.exit(EXIT_FINDINGS)


def say(text: str) -> None:
    """A line for the person at the terminal, on stderr. On a terminal it is folded to 80
    columns like every report (issue 29), continuation lines hanging by four so that
    fwdoctor.render.textfit.unwrap joins them again, and a path longer than the room stays
    whole on its own line (it is there to be copied); through a pipe or into a file it stays
    one line per remark, because scripts grep for a whole message and a log has no width.
    Never hidden by -q (errors use it)."""
    click.echo(fit_text(text, break_words=False) if stderr_is_terminal() else text, err=True)


def stderr_is_terminal() -> bool:
    """True when stderr is a terminal; a closed or odd stream counts as not one."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError, OSError):
        return False
