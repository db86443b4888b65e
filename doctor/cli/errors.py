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

EXIT_OK, EXIT_FINDINGS, EXIT_DOCTOR = 0, 1, 2


class DoctorError(click.ClickException):
    """The doctor itself failed: one line on stderr, exit 2."""

    exit_code = EXIT_DOCTOR

    def show(self, file: Any = None) -> None:
        click.echo(f"fwdoctor: error: {self.format_message()}", err=True)


def fail(message: str) -> NoReturn:
    raise DoctorError(message)


def findings_exit(message: str) -> NoReturn:
    """A refusal or a failed result (not a doctor failure): the reason, then exit 1."""
    click.echo(f"fwdoctor: {message}", err=True)
    sys.exit(EXIT_FINDINGS)
