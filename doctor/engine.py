"""Runs probes to collect Facts, and rules to turn Facts + KB into a Report."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from fwdoctor.background import Background
from fwdoctor.findings import FINDING_KINDS, kind
from fwdoctor.model import Fact, Facts, Finding, NotChecked, ProbeFailure, Severity
from fwdoctor.rules.base import Rule, raise_rule_errors

if TYPE_CHECKING:
    from fwdoctor.host import Host
    from fwdoctor.kb import KB
    # Annotations only: importing fwdoctor.probes imports every probe module (and the host
    # its runner), which `judge` alone (triage, fleet) never runs (issue 30).
    from fwdoctor.probes.base import Probe


def probe_deadline(command_timeout: float) -> float:
    """Seconds one static probe may take: a few of its commands' timeouts (a probe runs
    at most a handful of commands, each bounded by --timeout), plus room for its reads."""
    return 3 * command_timeout + 5


def collect(host: Host, probes: Sequence[Probe], deep: bool = False, seed: Sequence[Fact] = (),
            deadline: float | None = None) -> Facts:
    """Run every probe in order (later probes may read earlier facts). Never raises.

    Deep probes (an `import torch` in a child process, ~2 s) start in a background thread
    as soon as their turn comes, with the facts known so far, and run while the remaining
    static probes read files; their facts are merged at the end.

    Each static probe has `deadline` seconds (default: `probe_deadline` of the host's
    command timeout). A read on a stalled network mount blocks in the kernel where no
    timeout reaches it; the probe then runs on in its thread, unwaited for, and is reported
    as failed, naming the last path it asked about. After one overrun the host is treated
    as stalled: each later probe gets one command timeout, so a mount that stalls every
    read costs seconds per probe, not minutes.

    The static probes run one after another in one worker thread (_ProbeRun), which the
    caller watches probe by probe; a probe that overruns is left to its thread and a new
    worker goes on with the next one. A thread per probe cost a static check ~8 ms of
    thread starts and hand-overs for its ~30 probes (issue 30)."""
    facts: list[Fact] = list(seed)  # what the user asked for (request.python), seen by every probe
    failures: list[ProbeFailure] = []
    pending: list[Background[tuple[list[Fact], list[ProbeFailure]]]] = []
    allowed = probe_deadline(host.command_timeout) if deadline is None else deadline
    items = [item for item in probes if deep or not item.deep]
    start = 0
    while start < len(items):
        run = _ProbeRun(items[start:], host, facts, failures, pending)
        overran = run.watch(allowed)
        if overran is None:
            break
        item = items[start + overran]
        where = f"; the last path it asked about: {host.last_path}" if host.last_path else ""
        reason = f"did not finish in {allowed:g} s (a read that never returns: a stalled network mount?){where}"
        failures.append(ProbeFailure(item.name, reason))
        facts.extend(Fact.unknown(key, f"probe {item.name} {reason}") for key in item.provides)
        allowed = min(allowed, host.command_timeout)
        start += overran + 1
    for job in pending:
        produced, failed = job.result()
        facts.extend(produced)
        failures.extend(failed)
    return Facts(facts, failures)


class _ProbeRun:
    """Probes run in order in one daemon thread, each one's facts added to `facts` and
    `failures` as it finishes (deep ones started into `pending`); `watch` waits probe by
    probe. Once a probe overruns, this run is abandoned: its thread adds nothing more."""

    def __init__(self, items: Sequence[Probe], host: Host, facts: list[Fact], failures: list[ProbeFailure],
                 pending: list[Background[tuple[list[Fact], list[ProbeFailure]]]]) -> None:
        import threading
        import time

        self._clock = time.monotonic
        self._items, self._host = items, host
        self._facts, self._failures, self._pending = facts, failures, pending
        self._changed = threading.Condition()
        self._done = 0  # probes finished, their facts added
        self._started_at = self._clock()  # when the probe now running started
        self._abandoned = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        for item in self._items:
            with self._changed:
                if self._abandoned:
                    return
                snapshot = Facts(self._facts, self._failures)
            if item.deep:
                job: Background[tuple[list[Fact], list[ProbeFailure]]] = Background(_run_probe, item, self._host, snapshot)
                result = None
            else:
                job, result = None, _run_probe(item, self._host, snapshot)
            with self._changed:
                if self._abandoned:
                    return
                if job is not None:
                    self._pending.append(job)
                elif result is not None:
                    self._facts.extend(result[0])
                    self._failures.extend(result[1])
                self._done += 1
                self._started_at = self._clock()
                self._changed.notify()

    def watch(self, allowed: float) -> int | None:
        """Wait until every probe has finished (None), or one has run `allowed` seconds:
        its index among this run's probes, the run abandoned."""
        with self._changed:
            while self._done < len(self._items):
                left = self._started_at + allowed - self._clock()
                if left <= 0:
                    self._abandoned = True
                    return self._done
                self._changed.wait(left)
            return None


def _run_probe(item: Probe, host: Host, facts: Facts) -> tuple[list[Fact], list[ProbeFailure]]:
    from fwdoctor.host import UnreadableError  # imported by then: the probes read through a Host

    produced: list[Fact] = []
    failures: list[ProbeFailure] = []
    try:
        for out in item.func(host, facts):
            if isinstance(out, ProbeFailure):
                failures.append(out)
            else:
                produced.append(out)
    except UnreadableError as exc:
        failures.append(ProbeFailure(item.name, f"cannot read {exc.path}: {exc.reason}"))
    except Exception as exc:  # a probe bug must not cost the user the whole report
        failures.append(ProbeFailure(item.name, f"internal error: {type(exc).__name__}: {exc}"))
    have = {fact.key for fact in produced}
    reason = "; ".join(f.reason for f in failures)
    for key in item.provides:
        if key not in have:
            why = f"probe {item.name} failed: {reason}" if failures else "not reported by the probe"
            produced.append(Fact.unknown(key, why))
    return produced, failures


# What a container gets from the machine it runs on rather than from its image: the
# kernel module, the driver libraries (the NVIDIA container toolkit mounts them in) and
# the GPUs. An image or rootfs is judged against these from the live host.
HOST_PREFIXES: tuple[str, ...] = ("driver.", "pci.", "gpus.")


def overlay_host(facts: Facts, host_facts: Facts, prefixes: Sequence[str] = HOST_PREFIXES) -> Facts:
    """`facts` with every key under `prefixes` replaced by the host's, its source marked."""
    merged: list[Fact] = [facts.fact(k) for k in facts if not k.startswith(tuple(prefixes))]  # type: ignore[misc]
    for key in host_facts:
        if key.startswith(tuple(prefixes)):
            fact = host_facts.fact(key)
            assert fact is not None
            if fact.is_known:
                merged.append(Fact(key, fact.value, source=f"this host: {fact.source}"))
            else:
                merged.append(Fact.unknown(key, f"on this host: {fact.why}"))
    failures = [*facts.failures, *(f for f in host_facts.failures if f.probe in ("driver", "nvml", "pci", "gpus"))]
    return Facts(merged, failures)


@dataclass
class Report:
    facts: Facts
    findings: list[Finding] = field(default_factory=list)
    not_checked: list[NotChecked] = field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)

    evaluated: int = 0  # rules asked; `checked` of them had the facts they need
    # False where the caller says "no facts" itself (triage: "No environment information
    # recognised", exit 0) rather than failing with "nothing could be checked".
    require_facts: bool = True
    # The compute capability the KB gives each GPU that gpus.list holds without one (a
    # report's nvidia-smi table, an old driver), by position: the summary line shows it.
    gpu_cc: dict[int, str] = field(default_factory=dict)

    @property
    def not_run(self) -> int:
        return len(self.not_checked)

    @property
    def checked(self) -> int:
        return self.evaluated - self.not_run

    @property
    def nothing_checked(self) -> bool:
        """No rule could run (an empty facts file, a root with nothing readable): such a
        report must not read as a clean bill of health."""
        return self.require_facts and self.evaluated > 0 and self.checked == 0

    @property
    def exit_code(self) -> int:
        return self.exit_for(Severity.ERROR)

    def exit_for(self, fail_on: Severity) -> int:
        """2 when nothing could be checked, 1 when a finding is at least as severe as
        `fail_on` (`check --fail-on warning` in CI), else 0."""
        if self.nothing_checked:
            return 2
        return 1 if any(f.severity.rank <= fail_on.rank for f in self.findings) else 0


def applies(item: Rule, facts: Facts) -> bool:
    """Whether a rule is a check of this report at all. The source-build pre-flight rules
    (area "build", in `check`'s RULES so that a facts file of a build request is judged by
    `check` too) apply only to facts that hold a build request (`request.build.torch`);
    elsewhere their "not checked" would count checks the command never makes ("9 checks
    not run" on every check, in text, markdown and Prometheus alike)."""
    return item.area != "build" or facts.fact("request.build.torch") is not None


@functools.lru_cache(maxsize=1)
def _catalog_order() -> dict[str, int]:
    """Finding id -> its place in the catalog (the report's order); built once per process,
    not per judged node (a fleet report judges thousands)."""
    return {kind.id: i for i, kind in enumerate(FINDING_KINDS)}


def kb_gpu_ccs(facts: Facts, kb: KB) -> dict[int, str]:
    """{position in gpus.list: compute capability} for the GPUs listed without one, from the
    KB (name, else PCI id at its bus address); the KB is not asked when every GPU has one."""
    gpus = facts.get("gpus.list") if facts.known("gpus.list") else None
    if kb is None or not isinstance(gpus, list) or all(not isinstance(g, dict) or g.get("cc") for g in gpus):
        return {}
    pci = facts.get("pci.nvidia_gpus") if facts.known("pci.nvidia_gpus") else None
    pci = [d for d in pci if isinstance(d, dict)] if isinstance(pci, list) else []
    out = {}
    for i, gpu in enumerate(gpus):
        try:
            cc = kb.gpus.cc_for_gpu(gpu, pci) if isinstance(gpu, dict) and not gpu.get("cc") else None
        except (TypeError, ValueError, AttributeError):  # a hand-edited facts file: the summary says "cc unknown"
            cc = None
        if cc:
            out[i] = cc
    return out


def judge(
    facts: Facts,
    kb: KB,
    rules: Iterable[Rule],
    only: Iterable[str] | None = None,
    on_rule_error: Callable[[Rule, Exception], None] | None = None,
    ignore: Iterable[str] = (),
) -> Report:
    """Evaluate rules (optionally only those ids) and add `probe-failed` findings.

    A rule that raises (facts of an unexpected shape from a hand-edited facts file, or a
    bug) becomes "not checked" with the reason; `on_rule_error` sees the exception (the
    CLI prints its traceback under --debug, so a real bug stays visible). Under the test
    suite's switch (FWDOCTOR_RAISE_RULE_ERRORS=1, fwdoctor.rules.base) the exception
    propagates, so a rule that crashes fails the test that ran it."""
    wanted = set(only) if only else None
    ignored = set(ignore)  # `--ignore ID`: not judged at all, neither reported nor "not run"
    report = Report(facts)
    for item in rules:
        if (wanted is not None and item.id not in wanted) or item.id in ignored:
            continue
        report.evaluated += 1
        crashed = False
        try:
            findings, skipped = item.evaluate(facts, kb)
        except Exception as exc:  # keep the rest of the report
            crashed = True
            if raise_rule_errors():
                raise
            if on_rule_error is not None:
                on_rule_error(item, exc)
            findings, skipped = [], NotChecked(
                item.id, item.area,
                f"could not be evaluated: a fact has an unexpected type or shape, or the rule has a bug ({type(exc).__name__}: {exc}; --debug shows where)",
            )
        report.findings.extend(findings)
        if skipped is not None and not crashed and not applies(item, facts):
            report.evaluated -= 1  # not a check this command makes: neither run nor "not run"
            continue
        if skipped is not None:
            report.not_checked.append(skipped)
    if (wanted is None or "probe-failed" in wanted) and "probe-failed" not in ignored:
        pf = kind("probe-failed")
        for failure in facts.failures:
            report.findings.append(
                Finding(
                    id=pf.id,
                    severity=pf.severity,
                    message=f"probe {failure.probe} could not finish: {failure.reason}",
                    area=pf.area,
                    evidence={"probe": failure.probe, "reason": failure.reason},
                    code=pf.code,
                )
            )
    report.gpu_cc = kb_gpu_ccs(facts, kb)
    order = _catalog_order()
    report.findings.sort(key=lambda f: (f.severity.rank, order.get(f.id, 999), f.message))
    return report

