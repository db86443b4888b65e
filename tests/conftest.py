"""Shared test helpers: paths to fixtures and a CLI runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
ROOTS = TESTS / "roots"


@pytest.fixture
def cli():
    """Invoke `fwdoctor ARGS...` in-process; returns click's Result (exit_code, output)."""
    from doctor.cli import main

    runner = CliRunner()

    def invoke(*args: str, **kwargs):
        return runner.invoke(main, list(args), catch_exceptions=False, **kwargs)

    return invoke


@pytest.fixture
def check_json(cli):
    """Run `fwdoctor check --json ARGS...` and return (exit_code, parsed JSON)."""

    def run(*args: str):
        result = cli("check", "--json", *args)
        return result.exit_code, json.loads(result.output)

    return run


def finding_ids(report: dict) -> set[str]:
    return {f["id"] for f in report["findings"]}
