"""Helpers shared by the triage reader tests: what a reader states, and what `fwdoctor
triage --json` raises for a text."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from fwdoctor.triage.text import Lines


def facts_of(parse: Callable[[Lines], Iterable[Any]], text: str) -> dict:
    """Every fact the parser's fragments state, key -> value (later fragments win)."""
    out: dict = {}
    for frag in parse(Lines.of(text)):
        for fact in frag.facts:
            out[fact.key] = fact.value
    return out


def findings(cli: Callable[..., Any], tmp_path: Any, text: str) -> dict:
    """id -> finding (its JSON object) of `fwdoctor triage --json` on `text` as a file."""
    path = tmp_path / "report.md"
    path.write_text(text)
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f for f in doc["findings"]}
