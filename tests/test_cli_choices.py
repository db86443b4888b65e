"""What users expect of a command line (issue 29, item 5): global options after the command
too, --color always through a pipe, "did you mean" for commands and finding ids,
`--ignore ID` and `--fail-on error|warning` on `check` and `fleet report`, and "not run"
counting only the checks that apply to `check` (the source-build pre-flight's do not)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fwdoctor.engine import judge
from fwdoctor.model import Fact, Facts
from fwdoctor.rules import RULES

pytestmark = pytest.mark.usefixtures("use_test_kb")

ROOTS = Path(__file__).resolve().parent / "roots"
MISMATCH = str(ROOTS / "driver-mismatch")  # driver-library-mismatch (error) and warnings
ESC = "\x1b["


def _ids(cli, *args: str) -> dict[str, str]:
    report = json.loads(cli("check", "--root", MISMATCH, "--json", *args).stdout)
    return {f["id"]: f["severity"] for f in report["findings"]}


@pytest.mark.parametrize("args", [["check", "-q"], ["check", "--debug"], ["check", "--color", "never"], ["check", "--color=never", "-q"]])
def test_global_options_are_accepted_after_the_command(cli, args):
    result = cli(*args, "--root", MISMATCH)
    assert result.exit_code == 1, result.output
    assert "No such option" not in result.output


def test_quiet_after_the_command_is_the_global_quiet(cli, tmp_path):
    from test_fix_select_agree import DRIVERS, TORCHES, _facts_file

    facts = _facts_file(tmp_path, "H100", DRIVERS[580], TORCHES["no-torch"])
    loud = cli("fix", "--facts", facts)
    quiet = cli("fix", "--facts", facts, "-q")
    assert "# plan for: torch-not-installed" in loud.stderr and "# plan for:" not in quiet.stderr
    assert quiet.stdout == loud.stdout


def test_a_commands_own_option_of_the_same_name_stays_its_own():
    from click import Context

    from fwdoctor.cli import main

    with Context(main) as ctx:
        assert main._hoist_globals(ctx, ["build", "torch", "--debug"]) == ["build", "torch", "--debug"]
        assert main._hoist_globals(ctx, ["smoke", "allreduce", "--quiet"]) == ["smoke", "allreduce", "--quiet"]
        assert main._hoist_globals(ctx, ["smoke", "kernel", "--color", "always", "-q"]) == ["--color", "always", "-q", "smoke", "kernel"]
        # After `--` everything belongs to the command (fleet collect passes srun's flags on).
        assert main._hoist_globals(ctx, ["fleet", "collect", "--slurm", "--", "-q"]) == ["fleet", "collect", "--slurm", "--", "-q"]


def test_color_always_survives_a_pipe(tmp_path):
    argv = [sys.executable, "-m", "fwdoctor", "check", "--root", MISMATCH, "--kb", str(Path(__file__).parent / "kb")]
    piped = subprocess.run([*argv, "--color", "always"], capture_output=True, text=True, timeout=120)
    plain = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert ESC in piped.stdout and ESC not in plain.stdout


def test_an_unknown_command_gets_did_you_mean(cli):
    result = cli("chek")
    assert result.exit_code == 2 and "No such command 'chek'. Did you mean 'check'?" in result.output


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["explain", "driver-too-old-for-torc"], "unknown finding id 'driver-too-old-for-torc'; did you mean 'driver-too-old-for-torch'"),
        (["explain", "no-such-thing-at-all"], "unknown finding id 'no-such-thing-at-all'; `fwdoctor list` shows them all"),
        (["check", "--only", "torch-not-instaled"], "--only torch-not-instaled: unknown finding id; did you mean 'torch-not-installed'?"),
        (["check", "--ignore", "driver-libary-mismatch"], "--ignore driver-libary-mismatch: unknown finding id; did you mean 'driver-library-mismatch'"),
        (["fix", "torch-not-instaled"], "torch-not-instaled: unknown finding id; did you mean 'torch-not-installed'?"),
        (["fleet", "report", ".", "--ignore", "fleet-nccl-diffrs"], "--ignore fleet-nccl-diffrs: unknown finding id; did you mean 'fleet-nccl-differs'"),
    ],
)
def test_an_unknown_finding_id_gets_did_you_mean(cli, args, expected):
    result = cli(*args)
    assert result.exit_code == 2 and expected in result.output, result.output


def test_check_ignore_and_fail_on(cli):
    found = _ids(cli)
    errors = [i for i, s in found.items() if s == "error"]
    warnings = [i for i, s in found.items() if s == "warning"]
    assert errors and warnings, found
    ignore_errors = [a for i in errors for a in ("--ignore", i)]
    assert cli("check", "--root", MISMATCH).exit_code == 1
    assert not set(errors) & set(_ids(cli, *ignore_errors))
    assert cli("check", "--root", MISMATCH, *ignore_errors).exit_code == 0
    assert cli("check", "--root", MISMATCH, *ignore_errors, "--fail-on", "warning").exit_code == 1
    ignore_warnings = [a for i in warnings for a in ("--ignore", i)]
    assert cli("check", "--root", MISMATCH, *ignore_errors, *ignore_warnings, "--fail-on", "warning").exit_code == 0


def test_fleet_report_ignore_and_fail_on(cli, tmp_path):
    found = _ids(cli)
    (tmp_path / "node.json").write_text(cli("check", "--root", MISMATCH, "--json").stdout)
    errors = [a for i, s in found.items() if s == "error" for a in ("--ignore", i)]
    warnings = [a for i, s in found.items() if s == "warning" for a in ("--ignore", i)]
    assert cli("fleet", "report", str(tmp_path)).exit_code == 1
    assert cli("fleet", "report", str(tmp_path), *errors).exit_code == 0
    assert cli("fleet", "report", str(tmp_path), *errors, "--fail-on", "warning").exit_code == 1
    assert cli("fleet", "report", str(tmp_path), *errors, *warnings, "--fail-on", "warning").exit_code == 0
    text = cli("fleet", "report", str(tmp_path), *errors).stdout
    assert not any(i in text for i, s in found.items() if s == "error")


def test_not_run_counts_only_the_checks_check_makes(use_test_kb):
    from fwdoctor.kb import KB

    kb = KB.load(use_test_kb)
    plain = judge(Facts([Fact("driver.version", "580.95.05", source="test")]), kb, RULES)
    assert not [n for n in plain.not_checked if n.area == "build"]
    # A facts file of a build request (`fwdoctor build torch`'s) is judged by check too.
    asked = judge(Facts([Fact("request.build.torch", "2.9.1", source="--version")]), kb, RULES)
    assert [n for n in asked.not_checked if n.area == "build"]


def test_not_run_agrees_in_text_markdown_and_prometheus(cli):
    text = cli("check", "--root", MISMATCH, "-v").stdout
    listed = sum(1 for line in text.splitlines() if line.strip().startswith("not checked "))
    report = json.loads(cli("check", "--root", MISMATCH, "--json").stdout)
    assert report["not_run"] == len(report["not_checked"]) == listed
    assert f"{listed} check(s) not run" in text
    prom = cli("check", "--root", MISMATCH, "--format", "prometheus").stdout
    assert f'fwdoctor_checks{{state="not_run"}} {listed}' in prom


def test_gate_ignore_and_fail_on(cli):
    def verdict(*args: str) -> tuple[str, list[tuple[str, str]], int]:
        result = cli("gate", "--root", MISMATCH, "--json", *args)
        document = json.loads(result.stdout)
        return document["verdict"], [(c["id"], c["verdict"]) for c in document["causes"]], result.exit_code

    first, causes, code = verdict()
    drains = [a for i, v in causes if v == "drain" for a in ("--ignore", i)]
    warns = [a for i, v in causes if v == "warn" for a in ("--ignore", i)]
    assert first == "drain" and code == 1 and drains and warns, causes
    assert verdict(*drains)[::2] == ("warn", 0)
    assert verdict(*drains, "--fail-on", "warning")[::2] == ("warn", 1)
    assert verdict(*drains, *warns, "--fail-on", "warning")[2] == 0
    bad = cli("gate", "--root", MISMATCH, "--ignore", "driver-libary-mismatch")
    assert bad.exit_code == 2 and "did you mean 'driver-library-mismatch'" in bad.output
