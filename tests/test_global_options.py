"""The root's options also work after the command (issue 29): `--no-cache` where the
command has no option of that name, and -q silences remarks such as the ignored --deep."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from fwdoctor.cli import main
from fwdoctor.findings import FINDING_KINDS

ROOT = Path(__file__).parent / "roots" / "driver-ok"
NOTICE = "--deep ignored"


@pytest.mark.parametrize("argv", [
    ["explain", FINDING_KINDS[0].id, "--no-cache"],
    ["--no-cache", "explain", FINDING_KINDS[0].id],
    ["check", "--root", str(ROOT), "--json", "--no-cache"],
    ["list", "--no-cache"],
])
def test_no_cache_is_accepted_before_or_after_any_command(argv: list[str]) -> None:
    result = CliRunner().invoke(main, argv)
    assert "No such option" not in result.output
    assert result.exit_code in (0, 1), result.output


def test_the_ignored_deep_notice_shows_without_quiet() -> None:
    result = CliRunner().invoke(main, ["check", "--root", str(ROOT), "--deep", "--json"])
    assert result.exit_code in (0, 1), result.output
    assert NOTICE in result.stderr


@pytest.mark.parametrize("argv", [
    ["-q", "check", "--root", str(ROOT), "--deep", "--json"],
    ["check", "--root", str(ROOT), "--deep", "--json", "-q"],
    ["check", "-q", "--root", str(ROOT), "--deep", "--json"],
])
def test_quiet_before_or_after_the_command_silences_the_ignored_deep_notice(argv: list[str]) -> None:
    result = CliRunner().invoke(main, argv)
    assert result.exit_code in (0, 1), result.output
    assert NOTICE not in result.stderr
    assert result.stdout.lstrip().startswith("{")  # the report itself is untouched
