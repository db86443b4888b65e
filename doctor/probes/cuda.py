"""Placeholder: filled in by the owner of this area (see doctor/FACTS.md for the keys)."""

from __future__ import annotations

from doctor.probes.base import Probe

PROBES: tuple[Probe, ...] = ()
