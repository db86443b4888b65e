"""The version stamp on every JSON document fwdoctor prints or writes.

Scripts that read fwdoctor's JSON (CI gates, fleet collectors, dashboards) check
`schema_version` before trusting the layout; `kind` says which document it is:

    {"schema_version": 1, "kind": "check", "fwdoctor": "0.1.0", ...}

Bump SCHEMA_VERSION when a key is removed or changes meaning; adding keys is not a break.
Kinds: check, facts, triage, selection, plan, plans, smoke, smoke-suite, stack, lock, lock-check,
dockerfile, build, finding, finding-list, fleet.
"""

from __future__ import annotations

from typing import Any, Mapping

from fwdoctor import __version__

SCHEMA_VERSION = 1


def stamp(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """`body` with the stamp in front (the body's own keys win, except the stamp's), every
    string made valid UTF-8 (see `utf8_text`)."""
    return {"schema_version": SCHEMA_VERSION, "kind": kind, "fwdoctor": __version__,
            **{k: utf8_text(v) for k, v in body.items() if k not in ("schema_version", "kind", "fwdoctor")}}


def utf8_text(value: Any) -> Any:
    r"""`value` with every string valid UTF-8. A file name that is not UTF-8 (a folder
    `cuda-\xff` in an inspected root) reaches Python as lone surrogates (surrogateescape),
    which json.dumps writes as "\udcff": JSON many parsers reject. Such bytes are written
    as the text `\xff` instead, visibly and losslessly for a reader."""
    if isinstance(value, str):
        if not any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            return value
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if isinstance(value, Mapping):
        return {utf8_text(k): utf8_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [utf8_text(v) for v in value]
    return value
