"""How old the knowledge is (issue 25, item 4 of the issue / item 3 of the brief): the KB
carries the day it was last refreshed; `--version` and the reports show it; a torch, CUDA
minor or driver branch newer than every KB row is reported as newer-than-kb ("not judged"),
and the checks that would need its row say "not checked" instead of using an older row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fwdoctor.engine import judge
from fwdoctor.kb import KB, KB_DIR, KBError, kb_refreshed
from fwdoctor.model import Fact, Facts
from fwdoctor.rules import RULES
from fwdoctor.rules import knowledge

TESTS = Path(__file__).resolve().parent


def test_the_shipped_kb_says_when_it_was_refreshed():
    assert KB(KB_DIR).refreshed == kb_refreshed(KB_DIR) and KB(KB_DIR).refreshed.startswith("20")


def test_a_kb_without_the_field_has_no_date():
    assert KB(TESTS / "kb").refreshed is None and kb_refreshed(TESTS / "kb") is None


def test_a_malformed_date_is_a_kb_error(tmp_path):
    shutil.copy(KB_DIR / "sources.yaml", tmp_path / "sources.yaml")
    text = (tmp_path / "sources.yaml").read_text().replace('refreshed: "', 'refreshed: "soon ', 1)
    (tmp_path / "sources.yaml").write_text(text)
    with pytest.raises(KBError, match="refreshed"):
        KB(tmp_path).refreshed


def test_version_shows_the_kb_date(cli, monkeypatch):
    monkeypatch.delenv("FWDOCTOR_KB", raising=False)
    result = cli("--version")
    assert result.exit_code == 0
    assert result.output.splitlines()[1].endswith(f"refreshed {kb_refreshed(KB_DIR)}")


def _facts(**values):
    return Facts([Fact(k, v, source="test") for k, v in values.items()])


def test_each_kind_of_release_newer_than_the_kb_is_named():
    kb = KB.load(KB_DIR)
    newer = knowledge.newer_than_kb(_facts(**{
        "torch.version": "2.99.0+cu139", "torch.cuda": "13.9", "driver.version": "699.10.01",
        "cuda.active": {"root": "/usr/local/cuda", "version": "13.9.0", "why": "CUDA_HOME"},
    }), kb)
    assert [n.split(" ")[0] for n in newer] == ["torch", "torch's", "driver"]
    assert "the KB describes CUDA up to 13.5" in newer[1]


def test_releases_the_kb_lists_are_not_newer():
    kb = KB.load(KB_DIR)
    assert knowledge.newer_than_kb(_facts(**{"torch.version": "2.14.1+cu130", "torch.cuda": "13.0", "driver.version": "580.95.05"}), kb) == []


def test_the_finding_names_the_kb_date_and_says_not_judged():
    kb = KB.load(KB_DIR)
    report = judge(_facts(**{"torch.version": "2.99.0+cu139", "torch.cuda": "13.9", "driver.version": "580.95.05"}), kb, RULES, only=("newer-than-kb",))
    [hit] = report.findings
    assert hit.message.startswith(f"newer than the knowledge base ({kb.refreshed}): torch 2.99.0+cu139")
    assert hit.message.endswith(": not judged")


def test_a_torch_newer_than_the_kb_is_not_judged_by_an_older_row(cli, tmp_path):
    doc = {"facts": {
        "torch.version": {"value": "2.99.0+cu139", "source": "test"},
        "torch.cuda": {"value": "13.9", "source": "test"},
        "driver.version": {"value": "580.95.05", "source": "test"},
        "gpus.list": {"value": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "bus_id": "00000000:01:00.0", "source": "nvml"}], "source": "test"},
    }, "probe_failures": []}
    path = tmp_path / "host.json"
    path.write_text(json.dumps(doc))
    report = json.loads(cli("check", "--json", "--facts", str(path), "--kb", str(KB_DIR)).output)
    ids = {f["id"] for f in report["findings"]}
    assert "newer-than-kb" in ids and "gpu-arch-unsupported-by-torch" not in ids
    skipped = {n["rule"]: n["reason"] for n in report["not_checked"]}
    assert "gpu-arch-unsupported-by-torch" in skipped, skipped
    assert report["kb_refreshed"] == kb_refreshed()


def test_the_text_and_markdown_reports_show_the_kb_date(cli, tmp_path):
    path = tmp_path / "host.json"
    path.write_text(json.dumps({"facts": {"driver.version": {"value": "580.95.05", "source": "test"}}, "probe_failures": []}))
    date = kb_refreshed()
    assert f"knowledge base refreshed {date}" in cli("check", "--facts", str(path)).output
    assert f"| kb | `knowledge base refreshed {date}` |" in cli("check", "--format", "markdown", "--facts", str(path)).output


def test_a_report_judged_with_another_kb_shows_that_kb_s_date(cli, tmp_path):
    folder = tmp_path / "kb"
    shutil.copytree(KB_DIR, folder)
    text = (folder / "sources.yaml").read_text()
    (folder / "sources.yaml").write_text(text.replace(f'refreshed: "{kb_refreshed(KB_DIR)}"', 'refreshed: "2031-01-02"', 1))
    path = tmp_path / "host.json"
    path.write_text(json.dumps({"facts": {"driver.version": {"value": "580.95.05", "source": "test"}}, "probe_failures": []}))
    assert json.loads(cli("check", "--json", "--facts", str(path), "--kb", str(folder)).output)["kb_refreshed"] == "2031-01-02"
    assert "knowledge base refreshed 2031-01-02" in cli("check", "--facts", str(path), "--kb", str(folder)).output
