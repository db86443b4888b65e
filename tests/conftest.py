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

# A plugin module that a test file also imports helpers from gets its asserts rewritten
# only when pytest knows it before that import.
pytest.register_assert_rewrite("cpu_image")

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


# In CI (.ci/run sets FWDOCTOR_STRICT=1) a test may skip only for the hardware: a test
# marked `requires_gpu` (needs a GPU: CI has none) or `requires_no_gpu` (a no-GPU path,
# skipped where a GPU answers). Every other skip (no nvcc, no torch venv, no Docker engine,
# an optional module missing, no registry) means the CI machine was not set up, and a green
# run would hide it. The marker decides, not words in the reason: an apt error naming the
# `nvidia-smi` package once passed for a missing GPU.
HARDWARE_MARKERS = ("requires_gpu", "requires_no_gpu")


def strict() -> bool:
    return os.environ.get("FWDOCTOR_STRICT") == "1"


# What installs the dev venv's CUDA torch (2.14.1+cu130), for tests that read it.
TEST_VENV = "make test-venv (the dev venv's CUDA torch)"


def require_module(module: str, install: str):
    """Import an optional module, or skip saying how to install it (strict CI fails the skip).
    `install` is the command, e.g. "pip install 'fwdoctor[conda]'"."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.skip(f"needs the optional module {module} ({exc}): {install}", allow_module_level=True)


# Tests that download from the package registry carry the `network` marker: offline they
# skip naming it (and strict CI fails that skip: CI must run them).
_REGISTRY: dict[str, str | None] = {}


def registry_unreachable() -> str | None:
    """Why the package registry (PIP_INDEX_URL's host, else pypi.org) cannot be reached, or None."""
    import socket
    from urllib.parse import urlsplit

    url = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
    if url not in _REGISTRY:
        parts = urlsplit(url)
        try:
            socket.create_connection((parts.hostname or "pypi.org", parts.port or (443 if parts.scheme == "https" else 80)), timeout=5).close()
            _REGISTRY[url] = None
        except OSError as exc:
            _REGISTRY[url] = f"downloads from the package registry {url}, which is not reachable from here ({exc})"
    return _REGISTRY[url]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before any fixture runs: the session fixtures of a network test (a venv, a wheel) download.
    if item.get_closest_marker("network") is not None and (why := registry_unreachable()):
        pytest.skip(why)


def _strict_failure(reason: str) -> str:
    return (f"skipped in strict CI mode (FWDOCTOR_STRICT=1), and not a test marked {' or '.join(HARDWARE_MARKERS)}: "
            f"{reason}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail") or not strict():
        return
    if any(item.get_closest_marker(name) is not None for name in HARDWARE_MARKERS):
        return
    reason = str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr)
    report.outcome = "failed"
    report.longrepr = _strict_failure(reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # A whole module skipped at import (an optional module missing) fails strict CI too.
    outcome = yield
    report = outcome.get_result()
    if report.skipped and strict():
        reason = str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr)
        report.outcome = "failed"
        report.longrepr = _strict_failure(reason)



# ----------------------------------------------------------------------------- docker leftovers
# What a run builds (test images, dangling images, BuildKit cache: ~5-9 GB a run on the vfs
# store, once a full 32 GB disk) is removed when the run ends, by the process that started it
# (the xdist controller, after all its workers), and only what was made since it started
# (tests/image_helpers.py remove_leftovers). FWDOCTOR_KEEP_DOCKER_CACHE=1 keeps it all, for
# a developer rerunning the Docker tests who wants the cache warm.
_RUN_STARTED = "_fwdoctor_run_started"


def _runs_docker_tests(config: pytest.Config) -> bool:
    markexpr = config.getoption("markexpr", default="") or ""
    return "not docker" not in markexpr and os.environ.get("FWDOCTOR_KEEP_DOCKER_CACHE") != "1"


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput") and _runs_docker_tests(session.config):
        import time

        # A second early: the engine's clock is this machine's, its timestamps are finer.
        setattr(session.config, _RUN_STARTED, time.time() - 1)


_ran_docker_tests = False


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Under xdist the workers' reports reach the controller too, with their markers' names.
    global _ran_docker_tests
    if "docker" in report.keywords and not report.skipped:
        _ran_docker_tests = True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    started = getattr(session.config, _RUN_STARTED, None)
    if started is None or not _ran_docker_tests:
        return  # a run without Docker tests (or a worker): nothing of ours to remove
    from image_helpers import remove_leftovers

    done = remove_leftovers(started)
    if done:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"docker: removed what this run built ({len(done)} images and build cache records)")


# ----------------------------------------------------------------------------- parallel runs
# `make test` runs the suite with pytest-xdist (issue 30: the pure tests are CPU-bound and
# independent). Each test file is one unit of work, sent whole to one worker (as xdist's
# --dist loadfile does), so a module fixture (an sshd, a served channel, a built image) is
# set up once and the tests of a file keep their order. Files that share one global
# resource across files form a group below: one unit, run by one worker, file after file.
# (The table, not xdist's `xdist_group` marker: with pytest 9.2, xdist 3.8's loadgroup
# leaves the marked tests ungrouped; it renames `item._nodeid`, which pytest no longer reads.)
# Groups go out first, in this order, then files that hold slow tests, then the rest.
SERIAL_GROUPS: dict[str, tuple[str, ...]] = {
    # The real CUDA extension build (~6 min, the longest piece of work): started first so
    # everything else runs beside it.
    "build-ext": ("test_build_ext_real.py",),
    # The one Docker engine's big builds: ~1 GB CPU-torch images (on a vfs store every layer,
    # container and export is a full copy that loads the disk; .ci/setup-docker.sh starts
    # overlay2 where the kernel allows); one at a time. test_docker_e2e.py and
    # test_project_docker.py read the same image (tests/cpu_image.py, a session fixture):
    # one worker must run both.
    "docker": ("test_docker_e2e.py", "test_docker_conda.py", "test_project_docker.py"),
    # The small images these two build and share (image_helpers.LAYERED_TAG, a 480 MB one)
    # and read back, mostly in Python: beside the big builds, not inside them.
    "docker-reads": ("test_image_archive.py", "test_image_stream.py"),
    # The one venv of the built wheel (tests/wheel_helpers.py `installed`), which these change.
    "installed-venv": ("test_packaging.py", "test_mcp_server.py", "test_extras_hint.py", "test_readme_examples.py"),
    # The one-node cluster of .ci/setup-slurm.sh.
    "slurm": ("test_fleet_collect_slurm.py", "test_gate_slurm.py"),
    # Headless chromium (test_fleet_page_actions.py uses test_fleet_html.py's browser fixture).
    "chromium": ("test_fleet_html.py", "test_fleet_page_actions.py"),
}
# The committed conda channel's fixed port 38417 is used by test_conda_lock.py alone, which
# one worker runs whole.
GROUP_OF_FILE = {name: group for group, names in SERIAL_GROUPS.items() for name in names}
GROUP_ORDER = tuple(SERIAL_GROUPS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):
        return  # not an xdist worker: a plain run keeps pytest's order
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}

    def rank(pair: tuple[int, pytest.Item]) -> tuple[int, int, int]:
        index, item = pair
        group = GROUP_OF_FILE.get(item.path.name)
        if group is not None:
            return (0, GROUP_ORDER.index(group), index)
        return (1, 0 if item.path in slow_files else 1, index)

    # Every worker sorts the same collection the same way (xdist checks that they agree);
    # the scheduler below hands out the units in this order.
    items[:] = [item for _, item in sorted(enumerate(items), key=rank)]


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: a venv without pytest-xdist still runs
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadgroup`: a file is a unit, a group of SERIAL_GROUPS is one unit."""
    if config.getvalue("dist") != "loadgroup":
        return None  # another --dist asked for by hand: xdist's own scheduler
    from xdist.scheduler import LoadScopeScheduling

    class FileOrGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            group = GROUP_OF_FILE.get(path.rsplit("/", 1)[-1])
            return f"group:{group}" if group else path

    # Units go out in collection order (sorted above), not by their number of tests.
    config.option.loadscopereorder = False
    return FileOrGroupScheduling(config, log)
