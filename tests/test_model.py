"""Facts serialise losslessly; unknown stays distinct from None."""

from __future__ import annotations

import pytest

from fwdoctor.engine import collect, judge
from fwdoctor.host import Host
from fwdoctor.model import UNKNOWN, Fact, Facts
from fwdoctor.probes.base import probe
from fwdoctor.rules.base import Hit, rule


def test_unknown_and_none_round_trip_distinctly():
    facts = Facts([Fact("torch.cuda", None, source="version.py"), Fact.unknown("driver.version", "no module")])
    again = Facts.from_json(facts.to_json())
    assert again["torch.cuda"] is None and again.known("torch.cuda")
    assert again["driver.version"] is UNKNOWN and again.why("driver.version") == "no module"


def test_a_crashing_probe_becomes_probe_failed_and_unknown_facts(tmp_path):
    @probe("boom", provides=("x.value",))
    def boom(host, facts):
        raise RuntimeError("parser bug")

    facts = collect(Host.at_root(tmp_path), (boom,))
    assert facts["x.value"] is UNKNOWN
    assert "parser bug" in facts.why("x.value")
    report = judge(facts, kb=None, rules=())
    assert [f.id for f in report.findings] == ["probe-failed"]
    assert report.exit_code == 0  # probe-failed is a warning


def test_rules_with_unknown_inputs_are_reported_as_not_checked():
    @rule("no-gpu", needs=("gpus.list",))
    def no_gpu(facts, kb):
        """What it does"""
        return Hit("no GPU")

    report = judge(Facts([Fact.unknown("gpus.list", "NVML timed out")]), kb=None, rules=(no_gpu,))
    assert report.findings == []
    assert report.not_checked[0].rule == "no-gpu" and "NVML timed out" in report.not_checked[0].reason


def test_rule_ids_are_checked_against_the_vocabulary():
    with pytest.raises(KeyError, match="unknown finding id"):
        rule("made-up-id")


def test_error_findings_set_exit_code_1():
    @rule("driver-missing", needs=())
    def fires(facts, kb):
        return Hit("GPU on the bus, no driver")

    assert judge(Facts(), None, (fires,)).exit_code == 1
