"""Shared test helpers: paths to fixtures and a CLI runner."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
ROOTS = TESTS / "roots"


@pytest.fixture
def cli():
    """Invoke `fwdoctor ARGS...` in-process; returns click's Result (exit_code, output)."""
    from fwdoctor.cli import main

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


# In CI (.ci/run sets FWDOCTOR_STRICT=1) a test may skip only for lack of a GPU: every
# other skip (no nvcc, no torch venv, no Docker engine) means the CI machine was not set
# up, and a green run would hide it.
_GPU_WORDS = ("gpu", "driver", "nvml", "nvidia-smi")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get("FWDOCTOR_STRICT") != "1":
        return
    reason = str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr).lower()
    if not any(word in reason for word in _GPU_WORDS):
        report.outcome = "failed"
        report.longrepr = f"skipped in strict CI mode (FWDOCTOR_STRICT=1) for a reason other than a missing GPU: {reason}"
