"""`fwdoctor triage FILE|-`: the command's contract (formats, JSON shape, exit codes, stdin)."""

from __future__ import annotations

import json

import pytest

from conftest import DATA

pytestmark = pytest.mark.usefixtures("use_test_kb")


def body(prefix: str) -> str:
    path = next((DATA / "triage").glob(f"{prefix}-*.md"))
    return path.read_text().split("---\n", 2)[2]


@pytest.fixture
def report_file(tmp_path):
    def write(text: str):
        path = tmp_path / "report.md"
        path.write_text(text)
        return str(path)
    return write


def test_json_has_check_shape_plus_fragments(cli, report_file, tmp_path):
    result = cli("triage", "--json", report_file(body("45")))
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert doc["kind"] == "triage" and doc["schema_version"] == 1
    # every key of `check --json`, same meaning
    empty = tmp_path / "root"
    empty.mkdir()
    check = json.loads(cli("check", "--json", "--root", str(empty)).output)
    assert set(check) - {"kind"} <= set(doc)
    assert doc["exit_code"] == 1
    (finding,) = [f for f in doc["findings"] if f["id"] == "driver-library-mismatch"]
    assert finding["evidence"]["driver.version"] == "530.30.02"
    assert doc["facts"]["driver.version"]["source"] == "report line 4: kernel log (NVRM)"
    assert doc["facts"]["torch.cuda"]["unknown"] is True and "the report does not show" in doc["facts"]["torch.cuda"]["why"]
    # the syslog line is also read for Xid events and the legacy notice (none: both [])
    assert [f["kind"] for f in doc["fragments"]] == ["kernel log (NVRM)", "error", "kernel log"]
    assert doc["facts"]["gpus.xid_events"] == {"value": [], "source": "report line 4: kernel log"}
    assert doc["fragments"][0]["lines"] == [4, 4]


def test_text_lists_fragments_then_the_report(cli, report_file):
    result = cli("triage", report_file(body("01")))
    assert result.exit_code == 1
    # the error, the framework it names (PyTorch), the GPU the prose names ("Nvidia GeForce
    # RTX 3050 laptop GPU") and nvidia-smi
    assert result.output.startswith("Recognised 4 environment fragment(s)")
    assert "driver-too-old-for-torch" in result.output and "CUDA 11.4" in result.output


def test_markdown_quotes_the_evidence_lines_and_says_what_was_not_checked(cli, report_file):
    result = cli("triage", "--format", "markdown", report_file(body("27")))
    out = result.output
    assert out.startswith("### fwdoctor") and "#### error: `torch-toolkit-mismatch` (FWD204)" in out
    assert "line 2-3:" in out and "The detected CUDA version (10.1) mismatches" in out
    assert "Not checked: the report does not show" in out and "`nvidia-smi`" in out
    assert "```sh\nsudo apt-get install cuda-toolkit-11-3\n```" in out


def test_stdin_and_a_healthy_report_exit_0(cli):
    result = cli("triage", "-", input=body("36"))
    assert result.exit_code == 0, result.output
    assert "0 error(s)" in result.output


def test_no_environment_information_is_said_plainly(cli):
    result = cli("triage", "--format", "markdown", "-", input="Thanks for the library! Feature request: dark mode.\n")
    assert result.exit_code == 0
    assert "No environment information recognised" in result.output


def test_a_missing_file_exits_2_with_one_line(cli, tmp_path):
    result = cli("triage", str(tmp_path / "nope.md"))
    assert result.exit_code == 2
    assert "nope.md" in result.output and "Traceback" not in result.output


def test_triage_is_listed_after_facts_in_help(cli):
    out = cli("--help").output
    assert out.index("  facts") < out.index("  triage") < out.index("  explain")
