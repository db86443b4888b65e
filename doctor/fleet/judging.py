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

A list of objects (gpus.list: one object per GPU, each with its UUID and serial) is read
finer: a rule that reads it by value (`facts["gpus.list"]`, `facts.get`) gets a new list
of `Fields`, dicts that note each field read by name (`gpu["cc"]`, `gpu.get("name")`,
`"mig" in gpu`), and the outcome is keyed by those fields of every object: how many
objects, in order, and for each the value of each of those fields or that it lacks it.
Run on a node with the same projection, the rule gets a list of the same length whose
objects answer every question it asked the same way, so the argument above holds; the
UUIDs it never read differ freely. Whether the fact is known, and `why`, are keyed apart
for such a fact (Rule.evaluate asks `known` of every need). Anything that sees an object
at once (its keys, items, length, ==, repr, a copy, json.dumps, a change) notes the whole
fact, as before. So does a Fields that outlives the rule (a GPU put into a finding's
evidence, as gpu-count-low puts gpus.list): the rule then runs again on the node's facts
with no views, and that outcome, keyed by the whole fact, is the one kept and returned,
so no finding ever holds a Fields. A rule that raises is run again on the node's own
facts, so that what it raises names a dict, not a Fields. `type(gpu) is dict` is the one
question a Fields answers differently; no rule asks it (they ask isinstance).

A fingerprint is a 16-byte BLAKE2b digest of the fact's value and source (or that it is
unknown, and why) as JSON: the facts come from JSON documents, where the encoding tells
1 from 1.0 from true and keeps key order, so two fingerprints are equal only when the
rule would see equal values of equal types (a collision of two 128-bit digests is not a
practical concern; the whole-document cache this replaces took the same view).
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Iterator

from fwdoctor.model import UNKNOWN, Facts, Finding, NotChecked

if TYPE_CHECKING:
    from fwdoctor.fleet.facttext import Entry
    from fwdoctor.kb import KB
    from fwdoctor.rules.base import Rule

Outcome = tuple[list[Finding], "NotChecked | None"]

# Pseudo-keys for what a rule may read besides a fact: tuples, so that no fact key a
# document holds (any JSON string, NULs included) can be taken for one.
_FAILURES = ("failures",)
_PROVENANCE = ("provenance",)
_ATTRIBUTE = "provenance."  # ("provenance.", name): an attribute of the provenance
_FIELDS = "fields"  # ("fields", key, (field, ...)): those fields of a list of objects
_KNOWN = "known"  # ("known", key): whether the fact is known
_WHY = "why"  # ("why", key): Facts.why(key)
_OF_ONE_FACT = (_FIELDS, _KNOWN, _WHY)  # pseudo-keys (tag, key, ...) that read the fact `key` alone
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

    __slots__ = ("facts", "entries", "_seen")

    def __init__(self, facts: Facts, entries: Mapping[str, Entry] | None = None) -> None:
        """`entries`: the facts' remembered texts (fwdoctor.fleet.facttext), whose digests
        are fingerprints already: equal texts parse to equal entries. What is read of one
        fact alone (whether it is known, some fields of its objects) is kept on its entry,
        so a fact whose text other nodes share is projected once, not once a node."""
        self.facts = facts
        self.entries = entries
        self._seen: dict[Any, bytes] = {key: entry.print for key, entry in entries.items()} if entries else {}

    def __call__(self, key: Any) -> bytes:
        found = self._seen.get(key)
        if found is None:
            if type(key) is str and key not in self.facts._facts:
                found = self._seen[key] = _ABSENT  # most keys a rule reads are facts this node has not
                return found
            if type(key) is tuple and key[0] == _KNOWN:
                found = self._seen[key] = _KNOWN_PRINTS[self.facts.known(key[1])]
                return found
            entry = self.entries.get(key[1]) if self.entries and type(key) is tuple and key[0] in _OF_ONE_FACT else None
            if entry is None:
                found = _digest(self._text(key))
            else:
                derived = entry.derived
                if derived is None:
                    derived = entry.derived = {}
                found = derived.get(key)
                if found is None:
                    found = derived[key] = _digest(self._text(key))
            self._seen[key] = found
        return found

    def _text(self, key: Any) -> str:
        facts = self.facts
        if type(key) is tuple:
            if key == _FAILURES:
                return json.dumps([[f.probe, f.reason] for f in facts.failures])
            if key == _PROVENANCE:
                return "none" if facts.provenance is None else "some"
            if key[0] == _KNOWN:
                return "known " + json.dumps(facts.known(key[1]))
            if key[0] == _WHY:
                return "why " + json.dumps(facts.why(key[1]))
            if key[0] == _ATTRIBUTE:
                value = getattr(facts.provenance, key[1])
                if value is not None and type(value) is not str:
                    raise Unobservable(key)
                return json.dumps(value)
            return self._fields_text(key[1], key[2])
        fact = facts.fact(key)
        if fact is None:
            return "absent"
        # Tagged apart from a text's digest (b"text ..."): the two never describe one value.
        if not fact.is_known:
            return "unknown " + json.dumps(fact.why)
        # TypeError: a value no JSON document holds (facts built in memory), not fingerprinted.
        return "value " + json.dumps([fact.value, fact.source], allow_nan=True, check_circular=False)

    def _fields_text(self, key: str, fields: tuple[str, ...]) -> str:
        """The fact `key` as a rule that read only `fields` of its objects saw it: how many
        objects, in order, each with the fields it has of those and their values (a field
        it lacks is left out, so "absent" and null differ). Tagged apart from the other
        texts: a fact that is not a list of objects here cannot match a projection."""
        fact = self.facts.fact(key)
        value = fact.value if fact is not None and fact.is_known else None
        if not _objects(value):
            return "whole " + self._text(key)
        projected = [[[name, item[name]] for name in fields if name in item] for item in value]
        return "fields " + json.dumps(projected, allow_nan=True, check_circular=False)


def _objects(value: Any) -> bool:
    """Whether a fact's value is a list of plain objects (what Reads hands out as Fields)."""
    return type(value) is list and all(type(item) is dict for item in value)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


# The fingerprints of the commonest answers, computed once: the same digests of the same texts.
_ABSENT = _digest("absent")
_KNOWN_PRINTS = {answer: _digest("known " + json.dumps(answer)) for answer in (False, True)}


class _Provenance:
    """A node's provenance that notes each attribute a rule reads."""

    __slots__ = ("_reads",)

    def __init__(self, reads: "Reads") -> None:
        self._reads = reads

    def __getattr__(self, name: str) -> Any:
        self._reads.seen.append((_ATTRIBUTE, name))
        return getattr(self._reads.inner.provenance, name)


class Fields(dict):  # type: ignore[type-arg]
    """One object of a list-of-objects fact (a GPU of gpus.list) as a rule sees it: a
    copy that notes each field the rule reads of it, so that the rule's outcome is kept
    under those fields of every object, not the whole fact (whose UUIDs differ on every
    node). A dict, as the rule would get: isinstance(gpu, dict) holds, and every read
    answers what the object's own dict answers.

    A field read by name (`[]`, get, `in`, setdefault) is noted; anything that sees the
    object at once (its keys, values, items, length, iteration, ==, repr/str, copy, |,
    pickling, dict(gpu), json.dumps) or changes it notes the whole fact instead, as a rule
    that read it through Facts without this view. dict(), {**gpu}, update() and the json
    encoder reach a dict subclass that overrides __iter__ through keys() or items(), not
    its storage (tests/test_fleet_judge_cache.py holds each to that)."""

    __slots__ = ("_reads", "_key", "_names", "__weakref__")

    def _field(self, name: Any) -> None:
        if type(name) is str:
            self._names.add(name)
        else:
            self._whole()

    def _whole(self) -> None:
        self._reads.seen.append(self._key)

    def __getitem__(self, name: Any) -> Any:
        self._field(name)
        return dict.__getitem__(self, name)

    def get(self, name: Any, default: Any = None) -> Any:
        self._field(name)
        return dict.get(self, name, default)

    def __contains__(self, name: Any) -> bool:
        self._field(name)
        return dict.__contains__(self, name)

    # The object at once: the whole fact.
    def keys(self) -> Any:
        self._whole()
        return dict.keys(self)

    def values(self) -> Any:
        self._whole()
        return dict.values(self)

    def items(self) -> Any:
        self._whole()
        return dict.items(self)

    def __iter__(self) -> Iterator[Any]:
        self._whole()
        return dict.__iter__(self)

    def __reversed__(self) -> Iterator[Any]:
        self._whole()
        return dict.__reversed__(self)

    def __len__(self) -> int:
        self._whole()
        return dict.__len__(self)

    def __eq__(self, other: object) -> bool:
        self._whole()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        self._whole()
        return dict.__ne__(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        self._whole()
        return dict.__repr__(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        self._whole()
        return format(dict.copy(self), spec)

    def __sizeof__(self) -> int:
        self._whole()
        return dict.__sizeof__(self)

    def copy(self) -> dict[Any, Any]:
        self._whole()
        return dict.copy(self)

    def __or__(self, other: Any) -> Any:
        self._whole()
        return dict.__or__(dict.copy(self), other)

    def __ror__(self, other: Any) -> Any:
        self._whole()
        return dict.__ror__(dict.copy(self), other)

    def __reduce_ex__(self, protocol: Any) -> Any:  # copy, deepcopy, pickle: a plain dict
        self._whole()
        return dict, (dict.copy(self),)

    def __reduce__(self) -> Any:
        return self.__reduce_ex__(2)

    # Changes: the rule's copy changes, never the node's facts; noted as the whole fact.
    def __setitem__(self, name: Any, value: Any) -> None:
        self._whole()
        dict.__setitem__(self, name, value)

    def __delitem__(self, name: Any) -> None:
        self._whole()
        dict.__delitem__(self, name)

    def __ior__(self, other: Any) -> Any:
        self._whole()
        return dict.__ior__(self, other)

    def setdefault(self, name: Any, default: Any = None) -> Any:
        self._whole()
        return dict.setdefault(self, name, default)

    def pop(self, name: Any, *default: Any) -> Any:
        self._whole()
        return dict.pop(self, name, *default)

    def popitem(self) -> Any:
        self._whole()
        return dict.popitem(self)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._whole()
        dict.update(self, *args, **kwargs)

    def clear(self) -> None:
        self._whole()
        dict.clear(self)

    @classmethod
    def fromkeys(cls, *args: Any) -> dict[Any, Any]:  # type: ignore[override]
        return dict.fromkeys(*args)


class Reads(Facts):
    """A node's Facts that note every key a rule reads (`seen`, in order), and whether it
    read something no key describes (`whole`). Shares the node's facts; copies nothing
    but a list of objects (gpus.list) that the rule reads by value: that it gets as a new
    list of Fields, and `views` holds it, so that the fields it read are what is noted
    for that key (`fields_read`), unless something noted the whole fact. `project=False`:
    no views, every read notes the whole fact (as before there were views)."""

    def __init__(self, facts: Facts, project: bool = True) -> None:  # no super().__init__: the facts are shared
        self._facts = facts._facts
        self.inner = facts
        self.seen: list[Any] = []
        self.whole = False
        self.project = project
        self.views: dict[str, tuple[list[Fields], set[str]]] = {}

    def _view(self, key: str, fact: Any) -> Any:
        """The value of a known fact: a list of Fields for a list of objects, else itself."""
        view = self.views.get(key)
        if view is not None:
            return view[0]
        value = fact.value
        if not self.project or not _objects(value):
            self.seen.append(key)
            return value
        names: set[str] = set()
        items = []
        for item in value:
            copy = Fields(item)
            copy._reads, copy._key, copy._names = self, key, names
            items.append(copy)
        self.views[key] = (items, names)
        return items

    def fields_read(self) -> list[Any]:
        """`seen`, each fact read through a view as (_FIELDS, key, the fields read) unless
        it is also read whole, without repeats, in the order first read."""
        keys = dict.fromkeys(self.seen)
        for key, (_, names) in self.views.items():
            if key not in keys:
                keys[(_FIELDS, key, tuple(sorted(names)))] = None
        return list(keys)

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
        fact = self._facts.get(key)
        if fact is None or fact.value is UNKNOWN:
            self.seen.append(key)
            return UNKNOWN if fact is None else fact.value
        return self._view(key, fact)

    def get(self, key: str, default: Any = None) -> Any:
        fact = self._facts.get(key)
        if fact is None or fact.value is UNKNOWN:
            self.seen.append(key)
            return default
        return self._view(key, fact)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            self.whole = True
        else:
            self.seen.append(key)
        return super().__contains__(key)

    def known(self, key: str) -> bool:
        # Of a list of objects (read by fields), only whether it is known: not its value.
        fact = self._facts.get(key)
        self.seen.append((_KNOWN, key) if self.project and fact is not None and _objects(fact.value) else key)
        return fact is not None and fact.value is not UNKNOWN

    def why(self, key: str) -> str:
        fact = self._facts.get(key)
        self.seen.append((_WHY, key) if self.project and fact is not None and _objects(fact.value) else key)
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
        self.variants: list[tuple[tuple[Any, ...], dict[bytes, Any]]] = []

    def find(self, prints: Fingerprints) -> tuple[Any, tuple[Any, ...] | None]:
        """(the outcome kept for these fingerprints, the keys it was kept under), or (None, None)."""
        for keys, outcomes in self.variants:
            found = outcomes.get(b"".join([prints(k) for k in keys]))
            if found is not None:
                return found, keys
        return None, None

    def keep(self, keys: tuple[Any, ...], prints: Fingerprints, outcome: Any) -> tuple[Any, ...] | None:
        """Keep `outcome` under `keys`; the keys as kept (None: not kept)."""
        for known, outcomes in self.variants:
            if known == keys:
                keys = known
                break
        else:
            if len(self.variants) >= MAX_VARIANTS:
                return None
            outcomes = {}
            self.variants.append((keys, outcomes))
        if len(outcomes) >= MAX_OUTCOMES:
            outcomes.clear()
        outcomes[b"".join([prints(k) for k in keys])] = outcome
        return keys


def _kept_alive(reads: Reads) -> bool:
    """Whether anything but `reads` still holds one of the Fields it handed out. CPython
    frees an object when its last reference goes, so once the rule has returned, a Fields
    still alive after `reads` lets go of them is held by the outcome (or by something the
    rule kept; or by a reference cycle, which only costs the outcome its views)."""
    probes = [weakref.ref(item) for items, _ in reads.views.values() for item in items]
    reads.views = {key: ([], names) for key, (_, names) in reads.views.items()}
    return any(probe() is not None for probe in probes)


class RuleCache:
    """Outcomes of rules (and of any pure function of a node's Facts) by what they read,
    for one report: one KB, one set of rules. `hits`, `runs` and `bundled` count for tests.

    Looking up 70 rules one by one is most of what judging a node costs once few run
    (~5 us each). So the rules that keep being reused are looked up together (`_Bundle`):
    after BUNDLE_AFTER nodes, every rule that has one set of keys and was reused on the
    last nodes is bundled under those keys; a node's bundled outcomes are then kept, all
    at once, under the fingerprints of the union of their keys, and a later node with the
    same fingerprints there takes them in one lookup. Each bundled rule's keys are within
    the union, so each outcome is what that rule's own lookup would give (and the rule
    would give, by the argument above). Only outcomes found or kept under the bundled
    keys are kept in a bundle entry (an outcome found under a rule's other keys is not),
    and a node judged only in part (a rule that raised) keeps none. The rules that read
    what differs on every node (the stamp, a GPU whole) stay outside and are looked up,
    or run, one by one."""

    def __init__(self, kb: KB) -> None:
        self.kb = kb
        self._memos: dict[Any, _Memo] = {}
        self.hits = 0
        self.runs = 0
        self.bundled = 0
        self.viewed_whole = False
        self.prints: Fingerprints | None = None  # the node being judged
        self._rules: list[Rule] = []
        self._cached: list[CachedRule] = []
        self._nodes = 0
        self._bundle: _Bundle | None = None
        self._preset: tuple[Outcome, ...] | None = None  # this node's bundled outcomes, found
        self._got: list[Any] | None = None  # this node's bundled outcomes as judged, to keep
        self._sig = b""

    def call(self, tag: Any, func: Callable[[Facts], Any], facts: Facts, prints: Fingerprints) -> Any:
        """func(facts), or the outcome it gave facts with the same fingerprints at the keys
        it read. `tag` names the function (a rule); its outcome must never be None."""
        memo = self._memos.get(tag)
        if memo is None:
            memo = self._memos[tag] = _Memo()
        return self._call(memo, func, facts, prints)[0]

    def _call(self, memo: _Memo, func: Callable[[Facts], Any], facts: Facts, prints: Fingerprints,
              project: bool = True) -> tuple[Any, tuple[Any, ...] | None]:
        """(the outcome, the keys it was found or kept under: None when it was not kept).
        `project=False`: no views (Reads). After a run, `viewed_whole` says whether a fact
        it was handed as a view was read whole all the same."""
        try:
            found, keys = memo.find(prints)
        except (Unobservable, TypeError, ValueError, AttributeError):
            found = None  # an unusual value: judged as without the cache
        if found is not None:
            self.hits += 1
            return found, keys
        self.runs += 1
        reads = Reads(facts, project)
        self.viewed_whole = False
        try:
            outcome = func(reads)
        except Exception:
            if not reads.views:
                raise  # nothing is kept
            # What it raised may show a Fields (its type, its repr): raise what the rule
            # raises on the node's own facts instead.
            return func(facts), None
        if reads.views and _kept_alive(reads):
            # A Fields outlived the rule: in the outcome (a GPU in a finding's evidence, as
            # gpu-count-low puts gpus.list there) or anywhere else. What it holds and what
            # is read of it later is not what the rule read: the rule runs again with no
            # views, and its outcome is kept under the whole facts it read.
            reads = Reads(facts, project=False)
            outcome = func(reads)
            self.viewed_whole = True
        elif reads.views:
            self.viewed_whole = any(key in reads.views for key in reads.seen)
        kept = None
        if not reads.whole:
            try:
                kept = memo.keep(tuple(reads.fields_read()), prints, outcome)
            except (Unobservable, TypeError, ValueError, AttributeError):
                pass
        return outcome, kept

    def rules(self, rules: list[Rule], prints: Fingerprints) -> list[CachedRule]:
        """`rules` as engine.judge takes them, each answering from this cache for the node
        whose fingerprints are `prints` (the next call is for the next node)."""
        self._finish()
        if rules is not self._rules and (len(rules) != len(self._rules) or any(a is not b for a, b in zip(rules, self._rules))):
            self._rules, self._cached, self._bundle, self._nodes = rules, [CachedRule(item, self) for item in rules], None, 0
        self._rules = rules
        self.prints = prints
        self._nodes += 1
        if self._nodes in BUNDLE_AFTER:
            self._form()
        self._preset = self._got = None
        bundle = self._bundle
        if bundle is not None:
            try:
                sig = b"".join([prints(k) for k in bundle.keys])
            except (Unobservable, TypeError, ValueError, AttributeError):
                return self._cached  # an unusual value: every rule looked up alone
            self._preset = bundle.outcomes.get(sig)
            if self._preset is None:
                self._sig, self._got = sig, [None] * len(bundle.rules)
            else:
                self.bundled += 1
        return self._cached

    def _form(self) -> None:
        """Bundle the rules that were reused on the last nodes, each under its one set of keys."""
        chosen = [item for item in self._cached if item.streak >= 2 and len(item.memo.variants) == 1]
        for item in self._cached:
            item.slot, item.keys = -1, None
        if not chosen:
            self._bundle = None
            return
        for slot, item in enumerate(chosen):
            item.slot, item.keys = slot, item.memo.variants[0][0]
        union = tuple(dict.fromkeys(key for item in chosen for key in item.keys or ()))
        self._bundle = _Bundle(tuple(chosen), union)

    def _finish(self) -> None:
        """Keep the last node's bundled outcomes, if every one was found or kept under its
        bundled keys."""
        got, bundle = self._got, self._bundle
        self._got = None
        if got is None or bundle is None or any(outcome is None for outcome in got):
            return
        if len(bundle.outcomes) >= MAX_OUTCOMES:
            bundle.outcomes.clear()
        bundle.outcomes[self._sig] = tuple(got)


PLAIN_RUNS = 64  # CachedRule.plain

# Nodes after which the rules reused so far are bundled (again): early, and again later in
# case the first nodes were the odd ones.
BUNDLE_AFTER = (4, 32, 256)


class _Bundle:
    """Rules looked up together: their outcomes by the fingerprints of all their keys."""

    __slots__ = ("rules", "keys", "outcomes")

    def __init__(self, rules: tuple[CachedRule, ...], keys: tuple[Any, ...]) -> None:
        self.rules, self.keys = rules, keys
        self.outcomes: dict[bytes, tuple[Outcome, ...]] = {}


class CachedRule:
    """A Rule whose `evaluate` answers from a RuleCache; everything else is the rule's."""

    __slots__ = ("rule", "cache", "id", "memo", "slot", "keys", "streak", "plain")

    def __init__(self, rule: Rule, cache: RuleCache) -> None:
        self.rule, self.cache = rule, cache
        self.id = rule.id  # read by judge for every rule: a slot, not __getattr__
        self.memo = _Memo()
        self.slot = -1  # its place in the bundle, -1 outside it
        self.keys: tuple[Any, ...] | None = None  # the keys it is bundled under
        self.streak = 0  # nodes in a row whose outcome was reused
        # Runs left without views (Fields): after a run that read a viewed fact whole all
        # the same (a rule that copies each GPU, {**gpu, ...}), the next PLAIN_RUNS are
        # plain, as the views would cost it time on every node and save no run; then it
        # is tried with views again (a rule that sees a GPU whole only when it fires).
        self.plain = 0

    def __getattr__(self, name: str) -> Any:  # area, needs, optional, severity, doc
        return getattr(self.rule, name)

    def evaluate(self, facts: Facts, kb: KB) -> Outcome:
        cache = self.cache
        prints = cache.prints
        if kb is not cache.kb or prints is None or facts is not prints.facts:
            return self.rule.evaluate(facts, kb)  # not the report's KB or node: no reuse
        slot = self.slot
        if slot >= 0 and cache._preset is not None:
            cache.hits += 1
            self.streak += 1
            findings, skipped = cache._preset[slot]
            return list(findings), skipped
        runs = cache.runs
        plain = self.plain
        outcome, keys = cache._call(self.memo, lambda seen: self.rule.evaluate(seen, kb), facts, prints, not plain)
        if cache.runs == runs:
            self.streak += 1
        else:
            self.streak = 0
            self.plain = plain - 1 if plain else PLAIN_RUNS if cache.viewed_whole else 0
        got = cache._got
        if slot >= 0 and got is not None and keys is not None and keys is self.keys:
            got[slot] = outcome
        findings, skipped = outcome
        return list(findings), skipped
