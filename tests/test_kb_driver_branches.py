"""NVIDIA's data-center driver lifecycle in the KB (cuda.yaml `driver_branches`, issue 25,
item 2): an audit of the shipped rows against the tables they cite, the loader's refusals,
and the rule that uses them (driver-branch-eol), judged with the frozen tests/kb."""

from __future__ import annotations

import shutil

import pytest
import yaml

from fwdoctor.engine import judge
from fwdoctor.kb import KB, KB_DIR, KBError
from fwdoctor.model import Fact, Facts, Provenance, Severity
from fwdoctor.rules import lifecycle

RAW = yaml.safe_load((KB_DIR / "cuda.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def shipped():
    return KB.load(KB_DIR)


# ----------------------------------------------------------------------------- audit
def test_the_branch_picture_is_the_one_nvidias_newest_table_states(shipped):
    """S-DCDRV620 (R620 documentation, Table 2): R580 LTS June 2028, R595 production March
    2027, R620 LTS September 2029; R535 (LTS, June 2026 in the R615 table) is past its end."""
    row = shipped.cuda.driver_branch_row
    assert (row(580).kind, row(580).eol) == ("lts", "2028-06")
    assert (row(595).kind, row(595).eol) == ("production", "2027-03")
    assert (row(620).kind, row(620).eol) == ("lts", "2029-09")
    assert (row(535).kind, row(535).eol) == ("lts", "2026-06")
    assert "S-DCDRV620" in row(580).source and "S-DCDRV620" in row(595).source and "S-DCDRV620" in row(620).source
    refreshed = shipped.refreshed
    assert row(535).past_eol(refreshed) and row(570).past_eol(refreshed)
    assert [r.branch for r in shipped.cuda.supported_branches(refreshed)] == [620, 595, 580]


def test_every_branch_row_cites_a_defined_source_and_says_when_or_that_it_ended(shipped):
    sources = {**shipped.sources, **RAW.get("sources", {})}
    assert len(RAW["driver_branches"]) == len(shipped.cuda.driver_branches) >= 20
    for raw, row in zip(RAW["driver_branches"], shipped.cuda.driver_branches):
        keys = [raw["source"]] if isinstance(raw["source"], str) else raw["source"]
        assert all(k in sources for k in keys), raw
        assert (row.eol is None) == row.eol_listed, raw
        # Every cited table that gives a month quotes it: the row's month is in its source text.
        if row.eol:
            month = lifecycle_month_words(row.eol)
            assert any(month in sources[k] for k in keys), f"R{row.branch}: {month} in none of {keys}"


def lifecycle_month_words(eol: str) -> str:
    from fwdoctor.kb.cuda import month_name
    return month_name(eol)


def test_the_branches_listed_only_as_ended_are_the_ones_the_v580_table_names(shipped):
    text = RAW["sources"]["S-DCDRV580"]
    for row in shipped.cuda.driver_branches:
        if row.eol_listed:
            assert f"R{row.branch}" in text


@pytest.mark.parametrize("row, message", [
    ({"branch": 470, "kind": "lts", "eol": "June 2026", "confidence": "C", "source": "S-DCDRV580"}, "YYYY-MM"),
    ({"branch": 470, "kind": "longterm", "eol": "2026-06", "confidence": "C", "source": "S-DCDRV580"}, "kind"),
    ({"branch": 470, "kind": "lts", "eol": None, "confidence": "C", "source": "S-DCDRV580"}, "eol_listed"),
    ({"branch": 53, "kind": "lts", "eol": "2026-06", "confidence": "C", "source": "S-DCDRV580"}, "branch"),
    ({"branch": 580, "kind": "lts", "eol": "2028-06", "confidence": "C", "source": "S-DCDRV580"}, "duplicate driver branch"),
])
def test_a_malformed_branch_row_is_a_kb_error_naming_it(tmp_path, row, message):
    shutil.copytree(KB_DIR, tmp_path / "kb", ignore=shutil.ignore_patterns("*.md", "__pycache__", "*.py"))
    data = yaml.safe_load((tmp_path / "kb" / "cuda.yaml").read_text())
    data["driver_branches"].append(row)
    (tmp_path / "kb" / "cuda.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(KBError, match=message) as err:
        KB.load(tmp_path / "kb")
    assert "driver_branches" in str(err.value)


# ----------------------------------------------------------------------------- the rule
def _facts(version, collected_at=None):
    provenance = Provenance("node-1", "test", collected_at) if collected_at else None
    return Facts([Fact("driver.version", version, source="test")], provenance=provenance)


def _judge(facts, kb):
    report = judge(facts, kb, lifecycle.RULES)
    return report.findings, {n.rule: n.reason for n in report.not_checked}


def test_a_driver_on_a_branch_past_its_end_of_life_is_named_with_the_date(test_kb):
    [hit], skipped = _judge(_facts("535.288.01", "2026-12-01T09:00:00Z"), test_kb)
    assert skipped == {} and hit.id == "driver-branch-eol" and hit.severity is Severity.WARNING
    assert hit.message.startswith("driver 535.288.01 is on R535 (Long Term Support Branch), past NVIDIA's end of life (June 2026) as of 2026-12-01")
    assert "R620 (Long Term Support Branch, until September 2029), R595 (Production Branch, until March 2027), R580" in hit.fix.note
    assert hit.evidence["as_of_from"] == "facts collected"


def test_the_month_of_the_end_of_life_is_still_supported(test_kb):
    assert _judge(_facts("535.288.01", "2026-06-30T23:59:59Z"), test_kb) == ([], {})
    assert len(_judge(_facts("535.288.01", "2026-07-01T00:00:00Z"), test_kb)[0]) == 1


def test_a_supported_branch_fires_nothing(test_kb):
    for version in ("580.95.05", "595.71.05", "620.10.01"):
        assert _judge(_facts(version, "2026-12-01T09:00:00Z"), test_kb) == ([], {})


def test_a_branch_listed_as_ended_without_a_date_is_named_so(test_kb):
    [hit], _ = _judge(_facts("575.57.08", "2026-12-01T09:00:00Z"), test_kb)
    assert "R575, past NVIDIA's end of life (date not stated)" in hit.message


def test_a_branch_no_table_lists_is_not_checked_rather_than_healthy(test_kb):
    findings, skipped = _judge(_facts("590.48.01", "2026-12-01T09:00:00Z"), test_kb)
    assert findings == [] and "no lifecycle row for R590" in skipped["driver-branch-eol"]


def test_without_a_collection_date_the_kb_date_is_used_and_without_either_it_is_not_checked(shipped, test_kb):
    [hit], _ = _judge(_facts("535.288.01"), shipped)
    assert f"as of {shipped.refreshed}" in hit.message and hit.evidence["as_of_from"] == "knowledge base refreshed"
    findings, skipped = _judge(_facts("535.288.01"), test_kb)  # tests/kb carries no refreshed date
    assert findings == [] and "no date to judge" in skipped["driver-branch-eol"]


def test_the_newest_lifecycle_branch_is_not_newer_than_the_kb(shipped):
    from fwdoctor.rules import knowledge
    assert knowledge.newest_branch(shipped) >= 620
