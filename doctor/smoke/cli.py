"""Placeholder: the owner of this feature defines its click commands here."""

from __future__ import annotations

import click

COMMANDS: tuple[click.Command, ...] = ()
