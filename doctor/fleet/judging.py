"""Judging thousands of nodes whose facts all differ a little: each rule's outcome reused
by the facts that rule reads (issue 30, item 4).

A fleet's nodes are built alike but rarely byte-identical: their GPU UUIDs, serials and
stamps differ, so a cache keyed by the whole document (fwdoctor.fleet.report.JudgeCache)
judges each node in full, ~3 ms of 67 rules each, most of which read nothing that differs
(the driver floor does not read a UUID). Here every rule is run once on a `Reads` view of
the node's facts, which notes the keys it reads; its outcome is kept under those keys'
fingerprints. A later node whose facts hold the same fingerprints at those keys gets the
same outcome without running the rule.

Why this is the answer the rule would give: a rule is a pure function of (Facts, KB)
(CONTRIBUTING: rules judge, probes observe), the KB is the same for the whole report, and
the rule reads the facts only through `Facts`' methods. Run on the new node, it would ask
the same first question and get the same answer (same fingerprint), so take the same
branch and ask the same second question, and so on to the same outcome: the keys read on
the first run are all it needs to see. What a rule reads is observed, not declared, so a
rule that reads a fact its `needs` forgot is still keyed by it. What cannot be observed
key by key (iterating over every fact, `len`, `to_json`, an attribute of the provenance
other than plain values) makes that outcome unreusable: the rule then runs on every node,
as without the cache.

A fingerprint is a 16-byte BLAKE2b digest of the fact's value and source (or that it is
unknown, and why) as JSON: the facts come from JSON documents, where the encoding tells
1 from 1.0 from true and keeps key order, so two fingerprints are equal only when the
rule would see equal values of equal types (a collision of two 128-bit digests is not a
practical concern; the whole-document cache this replaces took the same view).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Iterator

from fwdoctor.model import Facts, Finding, NotChecked

if TYPE_CHECKING:
    from fwdoctor.fleet.facttext import Entry
    from fwdoctor.kb import KB
    from fwdoctor.rules.base import Rule

Outcome = tuple[list[Finding], "NotChecked | None"]

# Pseudo-keys for what a rule may read besides a fact.
_FAILURES = "\0failures"
_PROVENANCE = "\0provenance"
_ATTRIBUTE = "\0provenance."
# Read sets one rule may have (its reads can depend on what it read first), and outcomes
# kept per read set. A fleet whose nodes all differ at a fact a rule reads (a GPU UUID)
# would grow that rule's memo by a node each: past MAX_OUTCOMES it is emptied and starts
# again, so memory stays bounded whatever the fleet (issue 30: 200 MB for 10,000 nodes).
MAX_VARIANTS = 8
MAX_OUTCOMES = 4096


class Unobservable(Exception):
    """A read the fingerprints cannot describe: the outcome is not kept."""


class Fingerprints:
    """The fingerprints of one node's facts, each computed on first use."""

    __slots__ = ("facts", "_seen")

    def __init__(self, facts: Facts, entries: Mapping[str, Entry] | None = None) -> None:
        """`entries`: the facts' remembered texts (fwdoctor.fleet.facttext), whose digests
        are fingerprints already: equal texts parse to equal entries."""
        self.facts = facts
        self._seen: dict[str, bytes] = {key: entry.print for key, entry in entries.items()} if entries else {}

    def __call__(self, key: str) -> bytes:
        found = self._seen.get(key)
        if found is None:
            found = self._seen[key] = _digest(self._text(key))
        return found

    def _text(self, key: str) -> str:
        facts = self.facts
        if key == _FAILURES:
            return json.dumps([[f.probe, f.reason] for f in facts.failures])
        if key == _PROVENANCE:
            return "none" if facts.provenance is None else "some"
        if key.startswith(_ATTRIBUTE):
            value = getattr(facts.provenance, key[len(_ATTRIBUTE):])
            if value is not None and type(value) is not str:
                raise Unobservable(key)
            return json.dumps(value)
        fact = facts.fact(key)
        if fact is None:
            return "absent"
        # Tagged apart from a text's digest (b"text ..."): the two never describe one value.
        if not fact.is_known:
            return "unknown " + json.dumps(fact.why)
        # TypeError: a value no JSON document holds (facts built in memory), not fingerprinted.
        return "value " + json.dumps([fact.value, fact.source], allow_nan=True, check_circular=False)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class _Provenance:
    """A node's provenance that notes each attribute a rule reads."""

    __slots__ = ("_reads",)

    def __init__(self, reads: "Reads") -> None:
        self._reads = reads

    def __getattr__(self, name: str) -> Any:
        self._reads.seen.append(_ATTRIBUTE + name)
        return getattr(self._reads.inner.provenance, name)


class Reads(Facts):
    """A node's Facts that note every key a rule reads (`seen`, in order), and whether it
    read something no key describes (`whole`). Shares the node's facts; copies nothing."""

    def __init__(self, facts: Facts) -> None:  # no super().__init__: the facts are shared
        self._facts = facts._facts
        self.inner = facts
        self.seen: list[str] = []
        self.whole = False

    # `failures` and `provenance` are instance attributes of Facts; here they are noted.
    @property  # type: ignore[override]
    def failures(self) -> list[Any]:  # type: ignore[override]
        self.seen.append(_FAILURES)
        return self.inner.failures

    @property  # type: ignore[override]
    def provenance(self) -> Any:  # type: ignore[override]
        self.seen.append(_PROVENANCE)
        return None if self.inner.provenance is None else _Provenance(self)

    def __getitem__(self, key: str) -> Any:
        self.seen.append(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.seen.append(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            self.whole = True
        else:
            self.seen.append(key)
        return super().__contains__(key)

    def known(self, key: str) -> bool:
        self.seen.append(key)
        return super().known(key)

    def why(self, key: str) -> str:
        self.seen.append(key)
        return super().why(key)

    def source(self, key: str) -> str:
        self.seen.append(key)
        return super().source(key)

    def fact(self, key: str) -> Any:
        self.seen.append(key)
        return super().fact(key)

    # Everything at once: no key describes it (keys(), items(), values(), ==, dict(facts)
    # all come through __iter__ or __len__).
    def __iter__(self) -> Iterator[str]:
        self.whole = True
        return super().__iter__()

    def __len__(self) -> int:
        self.whole = True
        return super().__len__()

    def to_json(self) -> dict[str, Any]:
        self.whole = True
        return self.inner.to_json()


class _Memo:
    """One rule's outcomes: for each set of keys it was seen to read, outcome by the
    joined fingerprints of those keys."""

    __slots__ = ("variants",)

    def __init__(self) -> None:
        self.variants: list[tuple[tuple[str, ...], dict[bytes, Any]]] = []

    def find(self, prints: Fingerprints) -> Any:
        for keys, outcomes in self.variants:
            found = outcomes.get(b"".join([prints(k) for k in keys]))
            if found is not None:
                return found
        return None

    def keep(self, keys: tuple[str, ...], prints: Fingerprints, outcome: Any) -> None:
        for known, outcomes in self.variants:
            if known == keys:
                break
        else:
            if len(self.variants) >= MAX_VARIANTS:
                return
            outcomes = {}
            self.variants.append((keys, outcomes))
        if len(outcomes) >= MAX_OUTCOMES:
            outcomes.clear()
        outcomes[b"".join([prints(k) for k in keys])] = outcome


class RuleCache:
    """Outcomes of rules (and of any pure function of a node's Facts) by what they read,
    for one report: one KB, one set of rules. `hits` and `runs` count for tests."""

    def __init__(self, kb: KB) -> None:
        self.kb = kb
        self._memos: dict[Any, _Memo] = {}
        self.hits = 0
        self.runs = 0

    def call(self, tag: Any, func: Callable[[Facts], Any], facts: Facts, prints: Fingerprints) -> Any:
        """func(facts), or the outcome it gave facts with the same fingerprints at the keys
        it read. `tag` names the function (a rule); its outcome must never be None."""
        memo = self._memos.get(tag)
        if memo is None:
            memo = self._memos[tag] = _Memo()
        try:
            found = memo.find(prints)
        except (Unobservable, TypeError, ValueError, AttributeError):
            found = None  # an unusual value: judged as without the cache
        if found is not None:
            self.hits += 1
            return found
        self.runs += 1
        reads = Reads(facts)
        outcome = func(reads)  # an exception propagates, and nothing is kept
        if not reads.whole:
            try:
                memo.keep(tuple(dict.fromkeys(reads.seen)), prints, outcome)
            except (Unobservable, TypeError, ValueError, AttributeError):
                pass
        return outcome

    def rules(self, rules: list[Rule], prints: Fingerprints) -> list[CachedRule]:
        """`rules` as engine.judge takes them, each answering from this cache."""
        return [CachedRule(item, self, prints) for item in rules]


class CachedRule:
    """A Rule whose `evaluate` answers from a RuleCache; everything else is the rule's."""

    __slots__ = ("rule", "cache", "prints", "id")

    def __init__(self, rule: Rule, cache: RuleCache, prints: Fingerprints) -> None:
        self.rule, self.cache, self.prints = rule, cache, prints
        self.id = rule.id  # read by judge for every rule: a slot, not __getattr__

    def __getattr__(self, name: str) -> Any:  # id, area, needs, optional, severity, doc
        return getattr(self.rule, name)

    def evaluate(self, facts: Facts, kb: KB) -> Outcome:
        if kb is not self.cache.kb or facts is not self.prints.facts:
            return self.rule.evaluate(facts, kb)  # not the report's KB or node: no reuse
        findings, skipped = self.cache.call(self.rule, lambda seen: self.rule.evaluate(seen, kb), facts, self.prints)
        return list(findings), skipped
