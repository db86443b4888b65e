"""The GitHub Actions workflow of docs/examples/triage.yml, run here: its "Triage the report"
and "Post the comment" steps' scripts, extracted from the YAML and run by bash one after the
other in one folder (as the runner does), each with its own `env:` block, a fake event
payload (what GitHub writes to $GITHUB_EVENT_PATH), the real `fwdoctor` and a stand-in `gh`
on PATH that records the comment instead of posting it (no network). Only the posting step
gets GH_TOKEN (issue 24): the step that parses the attacker's text runs without it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import DATA

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / "docs" / "examples" / "triage.yml"

pytestmark = pytest.mark.usefixtures("use_test_kb")


def _step(name: str) -> dict:
    doc = yaml.safe_load(WORKFLOW.read_text())
    (job,) = doc["jobs"].values()
    return next(s for s in job["steps"] if s.get("name") == name)


FAKE_GH = """#!/bin/sh
# stands in for the GitHub CLI: records its arguments, the token it was given and the comment
printf '%s\\n' "$@" > "$GH_LOG.args"
printf '%s' "${GH_TOKEN-}" > "$GH_LOG.token"
while [ $# -gt 0 ]; do
  if [ "$1" = "--body-file" ]; then cp "$2" "$GH_LOG.body"; fi
  shift
done
"""


def _env(step: dict, event: dict) -> dict:
    """A step's env: block, as the runner would set it."""
    return {k: str(v).replace("${{ github.event.issue.number }}", str(event["issue"]["number"])).replace("${{ github.token }}", "t0ken")
            for k, v in (step.get("env") or {}).items()}


def run_step(tmp_path: Path, event: dict) -> tuple[subprocess.CompletedProcess, Path]:
    """Both steps, in order, in one work folder; the result is the last one run (the
    posting step is skipped, as the runner skips after a failure, when triage fails)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    gh = bindir / "gh"
    gh.write_text(FAKE_GH)
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "event.json").write_text(json.dumps(event))
    work = tmp_path / "work"
    work.mkdir()
    base = {k: v for k, v in os.environ.items() if k != "GH_TOKEN"}
    base.update({
        # fwdoctor and python from this venv, gh from the stand-in
        "PATH": os.pathsep.join([str(bindir), str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_REPOSITORY": "octo/repo",
        "GH_LOG": str(tmp_path / "gh"),
    })
    result = None
    for name in ("Triage the report", "Post the comment"):
        step = _step(name)
        script = tmp_path / f"{name.replace(' ', '-')}.sh"
        script.write_text(step["run"])
        result = subprocess.run(["bash", "-e", str(script)], cwd=work, env={**base, **_env(step, event)},
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            break
        if name == "Triage the report":
            triaged = result
    if result.returncode == 0:
        result = subprocess.CompletedProcess(result.args, 0, triaged.stdout + result.stdout, triaged.stderr + result.stderr)
    return result, tmp_path / "gh"


def corpus_body(prefix: str) -> str:
    path = next((DATA / "triage").glob(f"{prefix}-*.md"))
    return path.read_text().split("---\n", 2)[2]


def test_an_issue_with_an_environment_problem_gets_a_markdown_comment(tmp_path):
    body = corpus_body("45")  # NVRM API mismatch from syslog
    result, log = run_step(tmp_path, {"action": "opened", "issue": {"number": 17, "body": body}})
    assert result.returncode == 0, result.stderr
    args = Path(f"{log}.args").read_text().split("\n")
    assert args[:4] == ["issue", "comment", "17", "--repo"] and "octo/repo" in args
    assert Path(f"{log}.token").read_text() == "t0ken"  # the posting step has the token
    comment = Path(f"{log}.body").read_text()
    assert comment.startswith("### fwdoctor") and "`driver-library-mismatch`" in comment
    assert "530.30.02" in comment and "535.54.03" in comment


def test_a_comment_event_is_triaged_from_the_comment_not_the_issue(tmp_path):
    event = {"action": "created", "issue": {"number": 3, "body": "It crashes, see below."},
             "comment": {"body": corpus_body("19"), "user": {"type": "User"}}}
    result, log = run_step(tmp_path, event)
    assert result.returncode == 0, result.stderr
    assert "`host-compiler-unsupported`" in Path(f"{log}.body").read_text()


def test_a_report_without_environment_information_gets_no_comment(tmp_path):
    result, log = run_step(tmp_path, {"action": "opened", "issue": {"number": 5, "body": "The docs have a typo on page 3."}})
    assert result.returncode == 0, result.stderr
    assert not Path(f"{log}.args").exists()
    assert "no comment" in result.stdout


def test_a_healthy_report_is_answered_without_error_findings(tmp_path):
    result, log = run_step(tmp_path, {"action": "opened", "issue": {"number": 9, "body": corpus_body("37")}})
    assert result.returncode == 0, result.stderr
    comment = Path(f"{log}.body").read_text()
    assert "**0 error(s)" in comment


def test_the_issue_text_never_reaches_a_shell(tmp_path):
    marker = tmp_path / "pwned"
    body = (f'$(touch {marker}) `touch {marker}` "; touch {marker}; echo "\n'
            "Failed to initialize NVML: Driver/library version mismatch\n@octo/maintainers please look\n")
    result, log = run_step(tmp_path, {"action": "opened", "issue": {"number": 11, "body": body}})
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
    comment = Path(f"{log}.body").read_text()
    assert "`driver-library-mismatch`" in comment
    # report text outside a code block never @-mentions anyone
    inside = False
    for line in comment.splitlines():
        if line.startswith(("```", "````")):
            inside = not inside
        elif not inside:
            assert "@" not in line, line


def test_our_own_comment_is_not_answered(tmp_path):
    event = {"action": "created", "issue": {"number": 4, "body": ""},
             "comment": {"body": "### fwdoctor 0.1.0 triage\n\nFailed to initialize NVML: Driver/library version mismatch\n", "user": {"type": "User"}}}
    result, log = run_step(tmp_path, event)
    assert result.returncode == 0, result.stderr
    assert not Path(f"{log}.args").exists()


def test_the_workflow_never_interpolates_event_text_into_a_script():
    text = WORKFLOW.read_text()
    for field in ("issue.body", "comment.body", "issue.title", "head_ref"):
        assert f"github.event.{field}" not in text, field
    doc = yaml.safe_load(text)
    (job,) = doc["jobs"].values()
    for step in job["steps"]:
        assert "${{" not in step.get("run", ""), step.get("name")
    assert doc["permissions"] == {"contents": "read", "issues": "write"}


def test_only_the_posting_step_has_the_token():
    """The step that reads the issue text and runs fwdoctor on it has no GH_TOKEN (a parser
    bug exploited by a hostile issue cannot reach the token); `gh` gets it in its own step."""
    (job,) = yaml.safe_load(WORKFLOW.read_text())["jobs"].values()
    triage, post = _step("Triage the report"), _step("Post the comment")
    assert "GH_TOKEN" not in (triage.get("env") or {}) and "token" not in json.dumps(job.get("env") or {})
    assert post["env"]["GH_TOKEN"] == "${{ github.token }}"
    assert "fwdoctor" not in post["run"] and "report.md" not in post["run"] and "gh issue comment" in post["run"]
