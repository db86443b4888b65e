"""A facts document read fact by fact, each fact's text remembered: nodes that differ in a
few facts (their GPU UUIDs, their stamp) parse, build and fingerprint only those (issue 30,
item 4).

10,000 facts files of ~20 KB that all differ are 10,000 parses of ~54 facts, 10,000
`Facts.from_json` walks and 10,000 x 54 fingerprints, when most facts of most nodes are
the same text as the node before. Here the document's top level and its "facts" object
are walked entry by entry with the json module's own scanner (the C `scan_once` that
json.loads runs, one value at a time): a fact whose text is the text seen last for that
key is taken as it was, not parsed; any other is parsed by the scanner and remembered.

Why the result is json.loads's: a JSON object's text ends at its own closing brace, so a
text that starts at a fact's place with a remembered object's complete text holds that
object there, whatever follows; everything else is parsed by json's own scanner, keys by
json's own scanstring, with json's whitespace and its last-key-wins. Anything this walk
does not expect (another layout, a syntax error, a BOM) returns None, and the caller
parses the whole text with json.loads as before, so errors read as they always did.
"""

from __future__ import annotations

import hashlib
import json
import re
from json.decoder import scanstring
from typing import Any

from fwdoctor.model import Fact, Facts

_SCAN = json.JSONDecoder().scan_once  # the scanner json.loads uses (default options)
_SPACE = re.compile(r"[ \t\n\r]*").match  # json.decoder.WHITESPACE
# A key without escapes or control characters (its text is its value, as scanstring would
# give it), its colon and the whitespace around: one match per fact instead of four calls.
_KEY = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*').match
# What may follow a member: whitespace, a comma or the closing brace, whitespace.
_NEXT = re.compile(r"[ \t\n\r]*([,}])[ \t\n\r]*").match


class Entry:
    """One fact's text and what it gives: the parsed entry, its Fact (None: the entry is
    not one Facts.from_json accepts, so the whole document is read the usual way), and
    its fingerprint for fwdoctor.fleet.judging (a digest of the text)."""

    __slots__ = ("text", "value", "fact", "print", "derived")

    def __init__(self, key: str, text: str, value: Any) -> None:
        self.text, self.value = text, value
        # Fingerprints of what a rule read of this fact alone (judging.Fingerprints).
        self.derived: dict[Any, bytes] | None = None
        try:
            # The checks and the depth guard of Facts.from_json, on this entry where the
            # document holds it (depth 2: document, "facts", entry).
            self.fact: Fact | None = Facts.from_json({"facts": {key: value}}).fact(key)
        except (ValueError, RecursionError):
            self.fact = None
        self.print = hashlib.blake2b(b"text " + text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class FactTexts:
    """The facts texts seen so far, by key: the last one (tried first, by comparing text)
    and up to MAX per key (looked up by text once parsed)."""

    MAX = 64  # per key; a key whose text differs on every node is forgotten, not hoarded

    def __init__(self) -> None:
        self._last: dict[str, Entry] = {}
        self._seen: dict[str, dict[str, Entry]] = {}

    def split(self, text: str) -> tuple[dict[str, Any], dict[str, Entry] | None] | None:
        """(the document as json.loads gives it, the Entry of each fact; None for a document
        without a "facts" object), or None when the text is not an object whose "facts",
        if any, is an object of objects (parse it in full)."""
        if '"facts"' not in text:
            return None  # no facts to remember (a smoke document): json.loads reads it whole
        try:
            return self._split(text)
        except (ValueError, RecursionError, IndexError, StopIteration):
            return None

    def _split(self, text: str) -> tuple[dict[str, Any], dict[str, Entry] | None] | None:
        at = _SPACE(text, 0).end()
        if text[at:at + 1] != "{":
            return None
        data: dict[str, Any] = {}
        entries: dict[str, Entry] = {}
        at = _SPACE(text, at + 1).end()
        if text[at:at + 1] == "}":
            return None
        while True:
            simple = _KEY(text, at)
            if simple is not None:
                key, at = simple.group(1), simple.end()
            else:
                key, at = _key(text, at)
            if key == "facts" and text[at:at + 1] == "{":
                value, at = self._facts(text, at, entries)
            else:
                value, at = _SCAN(text, at)
                if key == "facts":
                    return None
            data[key] = value
            after = _NEXT(text, at)
            if after is None:
                return None
            if after.group(1) == ",":
                at = after.end()
                continue
            if after.end() != len(text):
                return None  # extra data after the document
            if "facts" not in data:
                return data, None  # a smoke document: parsed once, by the same scanner
            if len(entries) != len(data["facts"]):
                return None  # a repeated "facts" key: json.loads keeps the last; read in full
            return data, entries

    def _facts(self, text: str, at: int, entries: dict[str, Entry]) -> tuple[dict[str, Any], int]:
        facts: dict[str, Any] = {}
        at = _SPACE(text, at + 1).end()
        if text[at:at + 1] == "}":
            return facts, at + 1
        while True:
            simple = _KEY(text, at)
            if simple is not None:
                key, at = simple.group(1), simple.end()
            else:
                key, at = _key(text, at)
            entry = self._last.get(key)
            if entry is None or not text.startswith(entry.text, at):
                value, end = _SCAN(text, at)
                if type(value) is not dict:
                    raise ValueError("not an object")  # Facts.from_json's own error, read in full
                part = text[at:end]
                seen = self._seen.setdefault(key, {})
                entry = seen.get(part)
                if entry is None:
                    if len(seen) >= self.MAX:
                        seen.clear()
                    entry = seen[part] = Entry(key, part, value)
                self._last[key] = entry
            if key in entries:
                raise ValueError("a repeated fact")
            entries[key] = entry
            facts[key] = entry.value
            after = _NEXT(text, at + len(entry.text))
            if after is None:
                raise ValueError("no comma or closing brace")
            if after.group(1) == ",":
                at = after.end()
                continue
            return facts, after.start(1) + 1


def _key(text: str, at: int) -> tuple[str, int]:
    """A member's key and the place of its value, by json's own scanstring (escapes)."""
    if text[at:at + 1] != '"':
        raise ValueError("not a key")
    key, at = scanstring(text, at + 1, True)
    at = _SPACE(text, at).end()
    if text[at:at + 1] != ":":
        raise ValueError("no colon")
    return key, _SPACE(text, at + 1).end()


def read_facts(data: dict[str, Any], entries: dict[str, Entry]) -> Facts:
    """Facts.from_json(data), from the Facts of its entries: the rest of the document (its
    probe failures, host and stamp) goes through Facts.from_json itself. Any entry or part
    it would refuse: the whole document through Facts.from_json, for its own error."""
    if any(entry.fact is None for entry in entries.values()):
        return Facts.from_json(data)
    try:
        rest = Facts.from_json({**data, "facts": {}})
    except (ValueError, RecursionError):
        return Facts.from_json(data)
    return Facts([entry.fact for entry in entries.values()], rest.failures, rest.provenance)  # type: ignore[misc]
