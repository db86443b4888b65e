"""Placeholder: filled in by the owner of this area."""

from __future__ import annotations

from doctor.rules.base import Rule

RULES: tuple[Rule, ...] = ()
