"""Issue 11, item 4: nothing is judged without facts, and the summary says what did not run."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fwdoctor.engine import judge
from fwdoctor.model import Facts
from fwdoctor.render.report import render_markdown, render_text, to_json
from fwdoctor.render.textfit import unwrap
from fwdoctor.rules import RULES

SUMMARY = re.compile(r"\d+ error\(s\), \d+ warning\(s\), \d+ info; (\d+) check\(s\) not run")


def test_empty_facts_file_is_exit_2_nothing_checked(cli, tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"facts": {}, "probe_failures": []}))
    result = cli("check", "--facts", str(path))
    assert result.exit_code == 2, result.output
    assert "nothing could be checked" in result.output
    assert "No problems found" not in result.output
    as_json = cli("check", "--facts", str(path), "--json")
    assert as_json.exit_code == 2
    doc = json.loads(as_json.stdout)
    assert doc["exit_code"] == 2 and doc["nothing_checked"] is True
    assert doc["not_run"] == len(doc["not_checked"]) > 0 and doc["checked"] == 0


def test_summary_line_counts_the_checks_not_run(test_kb) -> None:
    report = judge(Facts(), test_kb, RULES)
    text = unwrap(render_text(report))  # the text wraps at 80 columns
    match = SUMMARY.search(text.splitlines()[0])
    # Every rule but the source-build pre-flight's, which applies to a build request only.
    applying = [r for r in RULES if r.area != "build"]
    assert match and int(match.group(1)) == len(report.not_checked) == len(applying), text.splitlines()[0]
    assert SUMMARY.search(render_markdown(report))
    assert to_json(report)["not_run"] == len(applying)


def test_a_real_root_says_how_many_did_not_run(cli) -> None:
    result = cli("check", "--root", str(Path(__file__).parent / "roots" / "driver-ok"))
    assert SUMMARY.search(unwrap(result.output).splitlines()[0]), result.output.splitlines()[0]
    assert result.exit_code in (0, 1)
