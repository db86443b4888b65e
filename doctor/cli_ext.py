"""Feature commands registered on `fwdoctor` (explicit, so grep finds them all)."""

from __future__ import annotations

import click

from doctor.smoke import cli as smoke_cli
from recipes import cli as recipes_cli
from recipes import cli_build, cli_stack

COMMANDS: tuple[click.Command, ...] = (
    *smoke_cli.COMMANDS,
    *recipes_cli.COMMANDS,
    *cli_stack.COMMANDS,
    *cli_build.COMMANDS,
)
