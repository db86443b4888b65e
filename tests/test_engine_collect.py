"""fwdoctor.engine.collect: the static probes run in order in one worker thread, each bounded
in time; a probe that overruns is reported and left behind, and the rest still run.

tests/test_stalled_mount.py proves the same on a real stalled FUSE mount through the CLI;
these drive the engine directly with probes that block on an event, so the order, the
facts each probe sees and what an abandoned probe may still add are visible.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.model import Fact, ProbeFailure
from fwdoctor.probes.base import Probe

ROOT = Path(__file__).parent / "roots" / "driver-ok"


def _host() -> Host:
    return Host.at_root(str(ROOT), {})


def _counting(name: str, seen: list[tuple[str, list[str]]]) -> Probe:
    def func(host, facts):
        seen.append((name, sorted(facts)))
        yield Fact(f"t.{name}", name, source="test")
    return Probe(name, (f"t.{name}",), func)


def test_probes_run_in_order_each_seeing_the_facts_before_it():
    seen: list[tuple[str, list[str]]] = []
    facts = collect(_host(), [_counting(n, seen) for n in ("a", "b", "c")], seed=[Fact("request.python", "x", source="t")])
    assert [name for name, _ in seen] == ["a", "b", "c"]
    assert seen[2][1] == ["request.python", "t.a", "t.b"]
    assert [facts.get(f"t.{n}") for n in "abc"] == ["a", "b", "c"]


def test_a_probe_that_overruns_is_reported_and_the_next_ones_still_run():
    release = threading.Event()
    late = threading.Event()
    seen: list[tuple[str, list[str]]] = []

    def stuck(host, facts):
        release.wait(10)  # a read that never returns, until the test lets it go
        yield Fact("t.stuck", "too late", source="test")
        late.set()

    def lets_it_go(host, facts):
        # The abandoned probe finishes while a later one runs: what it found must not be added.
        release.set()
        assert late.wait(5)
        time.sleep(0.15)  # time for its thread to try to hand its facts over
        yield Fact("t.b", "b", source="test")

    items = [_counting("a", seen), Probe("stuck", ("t.stuck",), stuck), Probe("b", ("t.b",), lets_it_go), _counting("c", seen)]
    try:
        facts = collect(_host(), items, deadline=0.6)
    finally:
        release.set()
    assert [name for name, _ in seen] == ["a", "c"]
    assert "t.stuck" in seen[1][1]  # c saw the overrun probe's key, as unknown
    assert facts.fact("t.stuck") is not None and not facts.fact("t.stuck").is_known
    assert [f.probe for f in facts.failures] == ["stuck"] and "did not finish in 0.6 s" in facts.failures[0].reason
    assert facts.get("t.b") == "b" and facts.get("t.c") == "c"


def test_after_one_overrun_every_later_probe_gets_one_command_timeout():
    release = threading.Event()

    def stuck(host, facts):
        release.wait(10)
        yield from ()

    host = _host()
    host.command_timeout = 0.2
    try:
        facts = collect(host, [Probe("one", ("t.one",), stuck), Probe("two", ("t.two",), stuck)], deadline=0.4)
    finally:
        release.set()
    reasons = {f.probe: f.reason for f in facts.failures}
    assert "did not finish in 0.4 s" in reasons["one"] and "did not finish in 0.2 s" in reasons["two"]


def test_a_probe_that_raises_costs_only_its_own_facts():
    def broken(host, facts):
        raise ValueError("a probe bug")
        yield  # pragma: no cover

    seen: list[tuple[str, list[str]]] = []
    facts = collect(_host(), [Probe("broken", ("t.broken",), broken), _counting("after", seen)])
    assert [f.probe for f in facts.failures] == ["broken"] and "internal error: ValueError" in facts.failures[0].reason
    assert facts.get("t.after") == "after"


def test_a_probe_failure_it_yields_is_kept():
    def partial(host, facts):
        yield ProbeFailure("partial", "cannot read /x")
        yield Fact("t.partial", 1, source="test")

    facts = collect(_host(), [Probe("partial", ("t.partial",), partial)])
    assert [f.reason for f in facts.failures] == ["cannot read /x"] and facts.get("t.partial") == 1
