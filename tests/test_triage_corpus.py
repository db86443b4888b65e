"""`fwdoctor triage` on a corpus of real bug reports (tests/data/triage, see its README).

An item is right when every `expect` id is reported, no `forbid` id is, every
`not_checked` id comes out "not checked", and (for a `healthy` item, where the bug was in
code) no finding is an error. Each item is its own test, so a rule that stops firing fails
the reports it should read and names them (an overall percentage let two whole rules go
missing); a known miss is listed in KNOWN_MISSES with the reason, as an xfail that must keep
failing (strict), so a fix shows up too.

Each error-text signature of fwdoctor.triage.errors also has its own test on its own real
example (SIGNATURES): the entry it writes to `report.errors` and the finding it supports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from conftest import DATA
from fwdoctor.kb import KB_DIR as REPO_KB
from fwdoctor.findings import BY_ID
from fwdoctor.model import Severity
from fwdoctor.triage.judge import run
from fwdoctor.render.textfit import unwrap

CORPUS = DATA / "triage"
ITEMS = sorted(CORPUS.glob("[0-9][0-9]-*.md"))


@dataclass
class Item:
    path: Path
    meta: dict
    body: str


def load(path: Path) -> Item:
    _, head, body = path.read_text(encoding="utf-8").split("---\n", 2)
    return Item(path, yaml.safe_load(head), body)


def verdict(item: Item, kb) -> tuple[bool, str]:
    report = run(item.body, kb).report
    ids = {f.id for f in report.findings}
    skipped = {n.rule for n in report.not_checked}
    errors = sorted(f.id for f in report.findings if f.severity is Severity.ERROR)
    problems = []
    if missing := set(item.meta["expect"]) - ids:
        problems.append(f"missing {sorted(missing)}")
    if wrong := set(item.meta["forbid"]) & ids:
        problems.append(f"forbidden {sorted(wrong)}")
    if unsaid := set(item.meta.get("not_checked") or []) - skipped:
        problems.append(f"not reported as not checked: {sorted(unsaid)}")
    if item.meta["healthy"] and errors:
        problems.append(f"error findings on a healthy report: {errors}")
    return not problems, "; ".join(problems) or f"ok ({sorted(ids) or 'no findings'})"


def test_the_corpus_is_big_enough_and_well_formed():
    items = [load(p) for p in ITEMS]
    assert len(items) >= 40
    assert sum(1 for i in items if i.meta["healthy"]) >= 5
    for item in items:
        meta = item.meta
        assert re.match(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$", meta["source"]), item.path.name
        assert meta["cause"].strip(), item.path.name
        for finding_id in [*meta["expect"], *meta["forbid"], *(meta.get("not_checked") or [])]:
            assert finding_id in BY_ID, f"{item.path.name}: unknown finding id {finding_id}"
        if meta["healthy"]:
            assert not meta["expect"], f"{item.path.name}: a healthy report expects no finding"
        assert item.body.strip(), item.path.name
    assert len({i.meta["source"] for i in items}) == len(items), "one item per thread"


# Reports triage is known to get wrong, each with the reason (none today: all 52 are right).
# An entry here is an xfail that must keep failing: when triage learns the report, delete it.
KNOWN_MISSES: dict[str, str] = {}


@pytest.mark.parametrize("path", ITEMS, ids=[p.stem for p in ITEMS])
def test_triage_reads_each_real_report_right(path, test_kb, request):
    """One case per report: the findings its thread confirmed, none it rules out, and
    "not checked" where the KB cannot judge."""
    if path.name in KNOWN_MISSES:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_MISSES[path.name], strict=True))
    ok, why = verdict(load(path), test_kb)
    assert ok, why


def test_the_known_misses_are_corpus_items():
    assert set(KNOWN_MISSES) <= {p.name for p in ITEMS}


# Every signature row of doctor/kb/errors.yaml (fwdoctor.triage.errors interprets them), on
# each of its verbatim examples from a public thread (quoted from a corpus item when `corpus`
# names one): the `report.errors` entry it must give, the facts it implies and the findings it
# supports (a row with none: no error finding, and its note is printed).
def _examples():
    from fwdoctor.triage.errors import signatures

    return [(sig, ex) for sig in signatures().signatures for ex in sig.examples]


EXAMPLES = _examples()


@pytest.mark.parametrize("sig, example", EXAMPLES, ids=[f"{sig.id}-{i}" for i, (sig, _) in enumerate(EXAMPLES)])
def test_each_error_signature_reads_its_own_real_example(sig, example, test_kb):
    from fwdoctor.kb.errors import fill
    from fwdoctor.triage.render import render_markdown, render_text

    if example.corpus:  # the example is quoted from that corpus item, verbatim
        item = load(CORPUS / example.corpus)
        assert example.text in item.body, example.corpus
    result = run(example.text, test_kb)
    report = result.report
    # A more specific row may read a line a general one reads too (Paddle's operator naming
    # "no kernel image" is also the CUDA runtime's message): this row's entry is the one.
    (entry,) = [e for e in report.facts["report.errors"] if e["kind"] == sig.id]
    assert entry["line"] == 1
    assert {key: entry.get(key) for key in example.expect} == dict(example.expect)
    for key, template in sig.facts.items():
        assert report.facts[key] == fill(template, entry), key
    ids = {f.id for f in report.findings}
    assert set(sig.findings) <= ids, ids
    if not sig.findings:
        assert not [f for f in report.findings if f.severity is Severity.ERROR], ids
        note = entry["note"]  # the row's note with the values this text named
        assert "(not shown)" not in note or not example.expect, note
        # The text report wraps the note at 80 columns (continuations indented): unwrap it.
        assert note in unwrap(render_text(result)) and note in render_markdown(result, example.text)


def test_every_signature_has_a_public_source_and_a_linear_pattern():
    from fwdoctor.triage.errors import signatures

    sources = yaml.safe_load((REPO_KB / "errors.yaml").read_text(encoding="utf-8"))["sources"]
    rows = signatures().signatures
    assert len(rows) >= 11 and len({s.id for s in rows}) == len(rows)
    for sig in rows:
        for example in sig.examples:
            assert re.match(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+", sources[example.source]), sig.id


def test_torch_not_compiled_with_cuda_says_the_torch_is_a_cpu_build(test_kb):
    facts = run("# Torch not compiled with CUDA enabled\n", test_kb).report.facts
    assert facts["torch.installed"] is True and facts["torch.cuda"] is None
