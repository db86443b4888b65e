"""`make test` runs the suite in parallel with pytest-xdist (issue 30): strict CI must fail
a skip there as it does in one process, and the groups of tests that share one global
resource (tests/conftest.py SERIAL_GROUPS) must each run in one worker. Run on a copy of
the real conftest in pytest's own `pytester` sandbox, in 2 workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SERIAL_GROUPS, require_module
from test_strict_skips import CONFTEST, MODULE_SKIP, TESTS

require_module("xdist", "pip install -e '.[dev]' (pytest-xdist)")

pytest_plugins = ["pytester"]

WORKER = '''
import os


def test_{n}(tmp_path):
    # Which worker ran this file, for the test below to read.
    (tmp_path.parent.parent / "{name}-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])
'''


@pytest.fixture
def sandbox(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\nmarkers =\n    requires_gpu: x\n    requires_no_gpu: x\n    network: x\n    slow: x\n")
    return pytester


def test_strict_mode_fails_every_skip_but_a_gpu_markers_in_parallel_workers(sandbox: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox.makepyfile(test_skips=TESTS, test_module_skip=MODULE_SKIP)
    monkeypatch.setenv("FWDOCTOR_STRICT", "1")
    result = sandbox.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-rA")
    out = result.stdout.str()
    outcomes = result.parseoutcomes()
    # The module skipped at import is a collection error in each worker: nothing runs, and
    # the run fails (as in one process without --continue-on-collection-errors).
    assert result.ret != 0 and outcomes.get("errors", 0) >= 1 and "test_module_skip.py" in out, out
    # Without the broken module, the strict verdicts come back from the workers as they are in one process.
    (sandbox.path / "test_module_skip.py").unlink()
    result = sandbox.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-rA")
    out = result.stdout.str()
    assert result.parseoutcomes() == {"skipped": 2, "failed": 2}, out
    assert "FAILED test_skips.py::test_apt_error_that_names_nvidia_smi" in out
    assert "FAILED test_skips.py::test_optional_module" in out
    assert "not a test marked requires_gpu or requires_no_gpu: Skipped: E: Unable to locate package nvidia-smi" in out


def test_each_group_of_files_runs_in_one_worker_and_other_files_spread(sandbox: pytest.Pytester) -> None:
    group = SERIAL_GROUPS["chromium"]
    names = [Path(name).stem for name in group] + [f"test_plain_{i}" for i in range(6)]
    sandbox.makepyfile(**{name: "".join(WORKER.format(name=name, n=n) for n in range(3)) for name in names})
    result = sandbox.runpytest_subprocess("-n", "2", "--dist", "loadgroup")
    assert result.parseoutcomes() == {"passed": 3 * len(names)}, result.stdout.str()
    base = next(sandbox.path.parent.glob("basetemp*"), None) or sandbox.path
    workers = {path.name: path.read_text() for path in Path(base).rglob("test_*-[0-9]")}
    ran = {name: {workers[f"{name}-{n}"] for n in range(3)} for name in names}
    assert all(len(ran[name]) == 1 for name in names), ran  # a file never splits
    assert len({w for name in names[: len(group)] for w in ran[name]}) == 1, ran  # a group never splits
    assert len({w for name in names for w in ran[name]}) == 2, ran  # and both workers worked


def test_every_file_named_in_a_group_exists() -> None:
    here = Path(__file__).resolve().parent
    missing = [name for names in SERIAL_GROUPS.values() for name in names if not (here / name).is_file()]
    assert missing == []
