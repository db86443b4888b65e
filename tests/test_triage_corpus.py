"""`fwdoctor triage` on a corpus of real bug reports (tests/data/triage, see its README).

An item is right when every `expect` id is reported, no `forbid` id is, every
`not_checked` id comes out "not checked", and (for a `healthy` item, where the bug was in
code) no finding is an error. The corpus must be at least 90% right and every healthy
item free of errors; the figure is printed (`pytest -s` shows it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from conftest import DATA
from fwdoctor.findings import BY_ID
from fwdoctor.model import Severity
from fwdoctor.triage.judge import run

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


def test_triage_is_right_on_at_least_90_percent_of_the_corpus_and_never_errs_on_a_healthy_report(test_kb):
    items = [load(p) for p in ITEMS]
    results = [(item, *verdict(item, test_kb)) for item in items]
    right = sum(1 for _, ok, _ in results if ok)
    healthy = [(item, ok, why) for item, ok, why in results if item.meta["healthy"]]
    healthy_errors = [item.path.name for item, ok, why in healthy if "healthy" in why]
    print(f"\ntriage corpus: {right}/{len(items)} right ({100 * right / len(items):.1f}%); "
          f"healthy reports with an error finding: {len(healthy_errors)}/{len(healthy)}")
    for item, ok, why in results:
        if not ok:
            print(f"  wrong: {item.path.name}: {why}")
    assert right / len(items) >= 0.9
    assert not healthy_errors


HEALTHY = [p for p in ITEMS if load(p).meta["healthy"]]


@pytest.mark.parametrize("path", HEALTHY, ids=[p.stem for p in HEALTHY])
def test_a_healthy_report_gets_no_error_finding(path, test_kb):
    """One case per healthy report (all must pass), so a regression names the thread."""
    ok, why = verdict(load(path), test_kb)
    assert ok, why
