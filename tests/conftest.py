"""Shared test helpers: paths to fixtures, a CLI runner, and the frozen test KB.

Tests of logic (rules, select, plans, stack resolution, golden files, whole `check` runs)
read the frozen copy in tests/kb/ (see its README.md), so a correct update of the shipped
doctor/kb/*.yaml never changes their answers. Only audits of the shipped KB (sources,
ranges, coverage) and freshness checks of committed lockfiles/ and dockerfiles/ read
doctor/kb. Two ways in:
  - `test_kb`: the loaded frozen KB, for code that takes a KB argument;
  - `use_test_kb`: points $FWDOCTOR_KB at tests/kb for one test, so every `KB()` without a
    folder reads it too: CLI commands (with or without --kb), the torch probe's arch-list
    lookup, child processes. A whole module opts in with
    `pytestmark = pytest.mark.usefixtures("use_test_kb")`.
`roomy_host` (opted into the same way) keeps the machine's free disk and memory out of
tests that plan builds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fwdoctor.kb import KB, KB_ENV
from fwdoctor.rules.base import RAISE_RULE_ERRORS_ENV

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
ROOTS = TESTS / "roots"
TEST_KB_DIR = TESTS / "kb"


def pytest_configure(config: pytest.Config) -> None:
    # A rule that raises fails the test that ran it (fwdoctor.engine.judge re-raises under
    # this switch) instead of becoming "not checked ... the rule has a bug", which the
    # hostile, fuzz and fixture-root tests could not tell from a correct "not checked".
    # Set in os.environ so child `fwdoctor` processes inherit it; tests that build a child's
    # environment from scratch pass it on (tests/test_fuzz_inputs.py). The tests that prove
    # users get "not checked" turn it off with `rule_errors_reported`.
    os.environ[RAISE_RULE_ERRORS_ENV] = "1"


@pytest.fixture
def rule_errors_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """What users get: a rule that raises becomes "not checked" (the switch is off)."""
    monkeypatch.delenv(RAISE_RULE_ERRORS_ENV, raising=False)


@pytest.fixture(autouse=True)
def _shipped_kb_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """A FWDOCTOR_KB exported in the developer's shell must not change what tests read."""
    if os.environ.get(KB_ENV):
        monkeypatch.delenv(KB_ENV)


@pytest.fixture(scope="session")
def test_kb() -> KB:
    """The frozen test KB (tests/kb), loaded and validated like the shipped one."""
    return KB.load(TEST_KB_DIR)


@pytest.fixture
def use_test_kb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Make every `KB()` without a folder read tests/kb for this test; yields the folder."""
    monkeypatch.setenv(KB_ENV, str(TEST_KB_DIR))
    yield TEST_KB_DIR


@pytest.fixture
def roomy_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Free disk and memory are the machine's and change under us; tests about other things
    have the resource probes report a roomy host (the checks themselves are tested in
    test_build_rules.py)."""
    from fwdoctor.probes import build_resources

    monkeypatch.setattr(build_resources, "disk_free", lambda host, path: {"path": path, "checked_at": path, "bytes": 500 * 1024**3})
    monkeypatch.setattr(build_resources, "mem_available", lambda host: 64 * 1024**3)


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
