"""`fleet report` reading in worker processes (fwdoctor.fleet.documents._read_in_workers)
gives the report it gives reading in this process, byte for byte, in every format.

The workers start for a fleet of WORKERS_MIN .json files or more; here the env knob
FWDOCTOR_FLEET_WORKERS_MIN=1 sends small fleets through them: fleets of nodes alike and
of nodes that all differ (the benchmark's generator), and a varied fleet with twins, a
.jsonl, refused documents, older documents of a node (whose rule errors must not count)
and files that are no document at all.
"""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from test_fleet_fast_path import write_fleet as write_varied
from conftest import TEST_KB_DIR
from test_fleet_report import facts_doc, gen, write

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="workers start only with the 'fork' start method")

FORMATS = ("text", "json", "markdown", "html")


def odd_documents(folder: Path) -> None:
    """Documents whose use depends on their order: an older one of a node (its rule error
    is not the node's problem, as the node shows newer facts), a newer one that cannot be
    judged (refused), smoke of a node older than its facts, and files that are no document."""
    folder.mkdir(parents=True, exist_ok=True)
    unreadable = {"driver.version": {"value": 580, "source": "hand-edited"}}
    older = facts_doc("node-0003", collected_at="2026-11-01T00:00:00Z")
    older["facts"].update(unreadable)
    write(folder / "a-older.json", older)
    newer = facts_doc("node-0004", collected_at="2027-01-01T00:00:00Z")
    newer["facts"].update(unreadable)
    write(folder / "b-newer-refused.json", newer)
    write(folder / "c-newest.json", facts_doc("node-0005", collected_at="2027-02-01T00:00:00Z"))
    write(folder / "d-bad-stamp.json", facts_doc("node-0006", collected_at="last week"))
    write(folder / "e-smoke-no-results.json", {"kind": "smoke", "results": {}})
    (folder / "f-not-json.json").write_text("{")
    write(folder / "g-list.json", [1, 2])
    smoke = json.loads((folder.parent / "nodes" / "node-0001.smoke.json").read_text())
    smoke["collected_at"] = "2026-01-01T00:00:00Z"
    smoke["results"][-1]["details"]["avg_busbw_gbps"] = 1.0
    write(folder / "h-old-smoke.json", smoke)


@pytest.fixture(scope="module")
def fleets(tmp_path_factory) -> dict[str, list[str]]:
    root = tmp_path_factory.mktemp("workers")
    gen.write_fleet(root / "nodes", 40)
    odd_documents(root / "odd")
    gen.write_fleet(root / "distinct", 40, distinct=True)
    write_varied(root / "varied", 5, 60)
    return {"alike": [str(root / "nodes"), str(root / "odd")], "distinct": [str(root / "distinct")],
            "varied": [str(root / "varied"), str(root / "odd")]}


# The comparison runs in a fresh interpreter: workers are never forked beside another thread
# (see test_no_workers_are_forked_beside_another_thread), and a pytest worker may run threads
# that earlier tests left (servers, xdist's own). It prints, per format, the report read here
# and in workers and how often the workers were started each time.
COMPARE = """
import json, os, sys
from click.testing import CliRunner
from fwdoctor.cli import main
from fwdoctor.fleet import documents

started = []
real = documents._read_in_workers
def counted(*args, **kwargs):
    started.append(1)
    return real(*args, **kwargs)
documents._read_in_workers = counted

kb, formats, paths = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
def report(fmt, knob):
    os.environ.pop(documents.WORKERS_MIN_ENV, None)
    if knob:
        os.environ[documents.WORKERS_MIN_ENV] = knob
    started.clear()
    result = CliRunner().invoke(main, ["-q", "fleet", "report", *paths, "--format", fmt, "--kb", kb], catch_exceptions=False)
    return [result.exit_code, result.stdout, result.stderr, len(started)]
print(json.dumps({fmt: {"here": report(fmt, ""), "workers": report(fmt, "1")} for fmt in formats}))
"""


@pytest.mark.parametrize("fleet", ["alike", "distinct", "varied"])
def test_reading_in_workers_gives_the_same_report(fleets, fleet):
    done = subprocess.run([sys.executable, "-c", COMPARE, str(TEST_KB_DIR), ",".join(FORMATS), *fleets[fleet]],
                          capture_output=True, text=True, timeout=300, check=True)
    runs = json.loads(done.stdout)
    assert sorted(runs) == sorted(FORMATS)
    for fmt, run in runs.items():
        *here, here_started = run["here"]
        *in_workers, workers_started = run["workers"]
        assert here_started == 0, f"{fleet} {fmt}: a fleet this small is read in this process by default"
        assert workers_started == 1, f"{fleet} {fmt}: FWDOCTOR_FLEET_WORKERS_MIN=1 reads in workers"
        assert in_workers == here, (fleet, fmt)
        assert here[0] in (0, 1, 2) and here[1], (fleet, fmt, here)


def test_the_knob_and_its_defaults(monkeypatch):
    import threading

    from fwdoctor.fleet import documents

    # Alone in the process, as the CLI is (the guard against other threads is tested below).
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setenv(documents.WORKERS_MIN_ENV, "7")
    assert documents.workers_min() == 7
    monkeypatch.setenv(documents.WORKERS_MIN_ENV, "not a number")
    assert documents.workers_min() in (documents.WORKERS_MIN, float("inf"))
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    monkeypatch.setenv(documents.WORKERS_MIN_ENV, "1")
    assert documents.workers_min() == float("inf")  # no fork: always in this process


def test_no_workers_are_forked_beside_another_thread(monkeypatch):
    """A fork copies only the calling thread: a lock another thread holds (the MCP server
    runs build() beside its own threads) would stay held in the worker for ever."""
    import threading

    from fwdoctor.fleet import documents

    monkeypatch.setenv(documents.WORKERS_MIN_ENV, "1")
    if threading.active_count() == 1:
        assert documents.workers_min() == 1
    release = threading.Event()
    other = threading.Thread(target=release.wait, daemon=True)
    other.start()
    try:
        assert documents.workers_min() == float("inf")
    finally:
        release.set()
        other.join()
