"""Error texts that state facts (errors.yaml): one row per signature, read by
fwdoctor.triage.errors, which is only an interpreter of these rows.

A row: `id` (the `report.errors` kind it writes), `program` (who prints it), `pattern` (a
Python regex, linear: no nested quantifiers, bounded gaps; its named groups are the values
the text names and go into the entry as they are), optional `ignorecase`, `wrapped` (also
found on a line joined with the next one: a terminal wrapped the message; fwdoctor.triage.errors
now reads every row so, and the flag only records that the row's examples need it), `hook` (a named
post-processing step of fwdoctor.triage.errors.HOOKS, for what a regex cannot say linearly),
`facts` (fact key -> value; a string "{group}" is that group's value, "... {group} ..." is
formatted; a fact whose group did not match is left out), `findings` (the finding ids the
text supports; fwdoctor.triage.rules raises them), `note` (when no finding id fits: what a
correct tool would say, printed by triage), `examples` (each a verbatim `text` from a public
thread, its `source` key, the entry values it must give in `expect`, and `corpus` when the
text is quoted from a tests/data/triage item) and `source` (keys of the file's `sources:`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from fwdoctor.kb import Ctx

_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_TEMPLATE = re.compile(r"\{([A-Za-z_]\w*)\}")
# What would make a pattern's cost grow faster than its line: a group holding a quantifier
# repeated without bound ("(a+)+", "(?:x\d+)*", "(?:x\d+){2,}"; a bounded "{0,2}" only
# multiplies by a constant), or an unbounded ".*"/".+" gap.
_NESTED = re.compile(r"\((?:[^()]|\([^()]*\))*[*+}]\)(?:[*+]|\{\d*,\})")
_OPEN_GAP = re.compile(r"(?<!\\)\.[*+]")


@dataclass(frozen=True)
class Example:
    text: str
    source: str
    expect: Mapping[str, Any]
    corpus: str | None


@dataclass(frozen=True)
class Signature:
    id: str
    program: str
    pattern: re.Pattern[str]
    wrapped: bool
    hook: str | None
    facts: Mapping[str, Any]
    findings: tuple[str, ...]
    note: str | None
    examples: tuple[Example, ...]
    source: tuple[str, ...]
    # the longest literal phrase every match holds (required_literal): a line without it is
    # not searched; computed here so that the compiled KB cache keeps it
    literal: tuple[str, bool] = ("", False)


@dataclass(frozen=True)
class ErrorsKB:
    signatures: tuple[Signature, ...] = ()

    def by_id(self, kind: str) -> Signature | None:
        return next((s for s in self.signatures if s.id == kind), None)


def from_yaml(data: Any, ctx: Ctx, hooks: frozenset[str] | None = None) -> ErrorsKB:
    from fwdoctor.findings import BY_ID

    if hooks is None:
        from fwdoctor.triage.errors import HOOKS

        hooks = frozenset(HOOKS)
    rows = []
    seen: set[str] = set()
    for i, row in enumerate(ctx.rows(data.get("signatures", []))):
        at = ctx.at("signatures").at(i)
        sig_id = at.field(row, "id", str)
        if not _ID.match(sig_id) or sig_id in seen:
            raise at.at("id").error(f"not a unique lower-case-dashed id: {sig_id!r}")
        seen.add(sig_id)
        text = at.field(row, "pattern", str)
        if _NESTED.search(text) or _OPEN_GAP.search(text):
            raise at.at("pattern").error(f"not linear in its line (a nested quantifier or an unbounded '.*' gap): {text!r}")
        try:
            pattern = re.compile(text, re.IGNORECASE if at.field(row, "ignorecase", bool, optional=True) else 0)
        except re.error as exc:
            raise at.at("pattern").error(f"not a regex: {exc}") from None
        hook = at.field(row, "hook", str, optional=True)
        if hook is not None and hooks is not None and hook not in hooks:
            raise at.at("hook").error(f"no such hook {hook!r} (fwdoctor.triage.errors.HOOKS)")
        facts = at.field(row, "facts", Mapping, optional=True) or {}
        for key, value in facts.items():
            for name in _names(value):
                if name not in pattern.groupindex and hook is None:
                    raise at.at("facts").at(str(key)).error(f"{{{name}}} is no named group of the pattern")
        findings = tuple(at.field(row, "findings", list, optional=True) or ())
        for finding in findings:
            if finding not in BY_ID:
                raise at.at("findings").error(f"unknown finding id {finding!r} (doctor/findings.py)")
        note = at.field(row, "note", str, optional=True)
        if not findings and not (note and note.startswith("no finding id fits: ")):
            raise at.error("a row with no finding says why in `note: \"no finding id fits: ...\"`")
        source = at.source(row)
        examples = []
        for j, ex in enumerate(at.rows(at.field(row, "examples", list))):
            eat = at.at("examples").at(j)
            ex_source = eat.field(ex, "source", str)
            if ex_source not in source:
                raise eat.at("source").error(f"{ex_source!r} is not among the row's sources {list(source)}")
            examples.append(Example(eat.field(ex, "text", str), ex_source, dict(eat.field(ex, "expect", Mapping, optional=True) or {}),
                                    eat.field(ex, "corpus", str, optional=True)))
        if not examples:
            raise at.at("examples").error("every signature has at least one verbatim real example")
        rows.append(Signature(sig_id, at.field(row, "program", str), pattern, bool(at.field(row, "wrapped", bool, optional=True)),
                              hook, dict(facts), findings, note, tuple(examples), source, required_literal(pattern)))
    return ErrorsKB(tuple(rows))


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return _TEMPLATE.findall(value)
    if isinstance(value, Mapping):
        return [n for v in value.values() for n in _names(v)]
    if isinstance(value, list):
        return [n for v in value for n in _names(v)]
    return []


def fill(value: Any, groups: Mapping[str, Any]) -> Any:
    """`value` with each "{name}" replaced by groups[name]; a whole-string "{name}" keeps the
    group's own type. Raises KeyError when a named value is absent (the fact is left out)."""
    if isinstance(value, str):
        whole = _TEMPLATE.fullmatch(value)
        if whole:
            got = groups[whole.group(1)]
            if got is None:
                raise KeyError(whole.group(1))
            return got
        def one(m: re.Match[str]) -> str:
            got = groups[m.group(1)]
            if got is None:
                raise KeyError(m.group(1))
            return str(got)
        return _TEMPLATE.sub(one, value)
    if isinstance(value, Mapping):
        return {k: fill(v, groups) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, groups) for v in value]
    return value


try:
    from re import _parser as _sre_parse  # the stdlib's own pattern parser (3.11+)
except ImportError:  # Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]


def required_literal(pattern: re.Pattern[str]) -> tuple[str, bool]:
    """The longest run of literal characters at the pattern's top level (6 or more), which
    every match holds, lower-cased where the pattern ignores case, and whether it does:
    fwdoctor.triage.errors runs a row's regex only on text holding it. ("", False) where there
    is none, or where this Python's parser is not the one expected (every line is searched)."""
    try:
        parsed = list(_sre_parse.parse(pattern.pattern, pattern.flags))
        literal = _sre_parse.LITERAL
    except Exception:  # noqa: BLE001 - a private parser that changed: no shortcut, same result
        return "", False
    best, run = "", []
    for op, arg in parsed:
        if op is literal:
            run.append(chr(arg))
            continue
        best, run = max(best, "".join(run), key=len), []
    best = max(best, "".join(run), key=len)
    if len(best) < 6:
        return "", False
    icase = bool(pattern.flags & re.IGNORECASE)
    return (best.lower() if icase else best), icase
