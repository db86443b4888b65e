"""The version stamp on every JSON document fwdoctor prints or writes.

Scripts that read fwdoctor's JSON (CI gates, fleet collectors, dashboards) check
`schema_version` before trusting the layout; `kind` says which document it is:

    {"schema_version": 1, "kind": "check", "fwdoctor": "0.1.0", ...}

Bump SCHEMA_VERSION when a key is removed or changes meaning; adding keys is not a break.
Kinds: check, facts, triage, selection, plan, plans, smoke, smoke-suite, stack, lock, lock-check,
dockerfile, build, finding, finding-list.
"""

from __future__ import annotations

from typing import Any, Mapping

from fwdoctor import __version__

SCHEMA_VERSION = 1


def stamp(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """`body` with the stamp in front (the body's own keys win, except the stamp's)."""
    return {"schema_version": SCHEMA_VERSION, "kind": kind, "fwdoctor": __version__,
            **{k: v for k, v in body.items() if k not in ("schema_version", "kind", "fwdoctor")}}
