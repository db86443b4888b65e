"""`fleet report`: stream the documents into node rows, judge each node, compare them.

    build(paths, kb) -> FleetReport -> render_text / render_markdown / to_json (html.py: the page)

Memory: a document is parsed, judged and dropped before the next one is read; what stays
is one NodeRow per node (interned strings, a few hundred bytes) and the list of files
that could not be used. Time (issue 30): a file that is another but for its host name is
not parsed and not judged again (`JudgeCache`, documents.Twins); any other node's rules are
run only where the facts a rule read differ from a node judged before (judging.RuleCache),
and its facts are parsed and built only where their text differs (facttext.FactTexts).
Everything else read from a document (its host name, its stamp, its smoke results) is
read from that document alone.

Two cores: a fleet of fleet.documents.WORKERS_MIN .json files or more (the env knob
FWDOCTOR_FLEET_WORKERS_MIN sets it) is read and judged in worker processes forked from
this one ('fork' only; elsewhere, and for smaller fleets, all in this process): each
document becomes its `Parts`, what it alone gives its node, and `_fold_parts` folds them
into the rows here, in the files' order, as `absorb` folds a document read here. Which
document a node shows, and so whether a judgement (and its rule error) is used, is
decided only here; the report is the same byte for byte (tests/test_fleet_workers.py).

Exit codes, as `check`: 0 no error; 1 an error finding (on a node or across nodes) or a
failed smoke test; 2 the report is incomplete: an input could not be used, a node's
facts allowed no check at all, or nothing was read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping  # not typing's: its isinstance is ~10x slower
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple

from fwdoctor import __version__
from fwdoctor.findings import AREA_TITLES
from fwdoctor.fleet import node as nd
from fwdoctor.fleet.documents import BadInput, Document, StampError, Template, documents
from fwdoctor.fleet.drift import MAX_LISTED, Drift, drift, listed
from fwdoctor.fleet.hostlist import folded
from fwdoctor.fleet.facttext import read_facts
from fwdoctor.fleet.judging import Fingerprints, RuleCache
from fwdoctor.fleet.rules import MIN_PEER_GROUP, RULES as FLEET_RULES, SLOW_FRACTION, Fleet
from fwdoctor.model import Facts, Finding, NotChecked, Provenance, Severity
from fwdoctor.render.escape import md_cell, md_code, terminal_lines

if TYPE_CHECKING:
    from fwdoctor.kb import KB

NAMED_BY_HOST = "host.name"
NAMED_BY_FILE = "file name (the document has no host.name)"
MAX_NAME = 253  # a DNS name's limit; anything longer is not a host name


@dataclass
class FleetReport:
    rows: list[nd.NodeRow]
    drifts: dict[str, Drift]
    findings: list[Finding]
    not_checked: list[NotChecked]
    bad: list[BadInput]
    documents: int
    max_listed: int = MAX_LISTED
    slow: dict[tuple[str, str], Finding] = field(default_factory=dict)  # (node, figure) -> finding
    fail_on: str = "error"  # `--fail-on`: "warning" makes warnings exit 1 too
    _slow_index: tuple[dict[tuple[str, str], Finding], dict[str, list[tuple[str, Finding]]]] | None = field(
        default=None, init=False, repr=False, compare=False)

    def ignore(self, ids: Iterable[str]) -> None:
        """`--ignore ID...`: leave these finding ids out, fleet and node findings alike,
        before anything (the exit code included) is read from the report."""
        ignored = set(ids)
        if not ignored:
            return
        self.findings[:] = [f for f in self.findings if f.id not in ignored]
        self.slow = {key: f for key, f in self.slow.items() if f.id not in ignored}
        for row in self.rows:
            row.findings = [found for found in row.findings if found[0] not in ignored]

    @property
    def node_findings(self) -> int:
        return sum(len(r.findings) for r in self.rows)

    def counts(self) -> dict[str, int]:
        counts = {"error": 0, "warning": 0, "info": 0}
        for finding in self.findings:
            counts[finding.severity.value] += 1
        for row in self.rows:
            for _, severity, _ in row.findings:
                counts[severity] = counts.get(severity, 0) + 1
        return counts

    @property
    def incomplete(self) -> bool:
        return not self.rows or bool(self.bad) or any(r.nothing_checked for r in self.rows)

    @property
    def exit_code(self) -> int:
        """The process's exit code, and the one the JSON report carries (one place: issue
        29), under --fail-on and --ignore alike."""
        if self.incomplete:
            return 2
        errors = any(f.severity is Severity.ERROR for f in self.findings) or any(
            s == "error" for r in self.rows for _, s, _ in r.findings)
        if errors or any(r.failures for r in self.rows):
            return 1
        return 1 if self.fail_on == "warning" and self.counts().get("warning") else 0

    def odd(self, row: nd.NodeRow) -> dict[str, str]:
        """column key -> why the cell is marked (the majority value, or the peers' median)."""
        marks: dict[str, str] = {}
        for key, found in self.drifts.items():
            if row.name in found.odd:
                marks[key] = f"the rest ({found.majority_count} nodes) have {found.majority}" if found.has_majority \
                    else f"no majority; the most nodes ({found.majority_count}) have {found.majority}"
        for key, finding in self.slow_of(row.name):
            marks[key] = (f"below {SLOW_FRACTION:g} x the median of {finding.evidence['peers']} peers "
                          f"({finding.evidence['peer_median']:.4g}; {finding.evidence['peer_group']})")
        return marks

    def slow_of(self, name: str) -> list[tuple[str, Finding]]:
        """(figure, finding) of each slow figure of node `name`, in `slow`'s order: looked
        up, not searched, so each row's marks cost the same in a fleet of 10,000 nodes
        with thousands of slow figures (issue 30)."""
        if self._slow_index is None or self._slow_index[0] is not self.slow:  # `slow` replaced by ignore()
            index: dict[str, list[tuple[str, Finding]]] = {}
            for (node, key), finding in self.slow.items():
                index.setdefault(node, []).append((key, finding))
            self._slow_index = (self.slow, index)
        return self._slow_index[1].get(name, [])

    @property
    def alike(self) -> int:
        odd = {name for d in self.drifts.values() for name in d.odd} | {name for name, _ in self.slow}
        return sum(1 for r in self.rows if r.name not in odd)


# ----------------------------------------------------------------------------- building
def build(paths: list[str], kb: KB, max_listed: int = MAX_LISTED, rules: Iterable[Any] | None = None,
          progress: Callable[[int], None] | None = None) -> FleetReport:
    global _WORKER_JUDGING
    from fwdoctor.rules import RULES

    node_rules = list(RULES if rules is None else rules)
    rows: dict[str, nd.NodeRow] = {}
    bad: list[BadInput] = []
    cache = JudgeCache(kb, node_rules)
    count = 0
    _WORKER_JUDGING = (kb, node_rules)  # what a forked worker judges with (parts_of)
    import fwdoctor.engine  # noqa: F401  imported before any worker forks, not in each (_judge)
    try:
        for item in documents(paths, parts_of):
            if isinstance(item, BadInput):
                bad.append(item)
                continue
            count += 1
            if type(item) is Parts:  # a document read in a worker (documents._read_in_workers)
                problem = _fold_parts(rows, _interned(item))
            else:
                problem = absorb(rows, item, kb, node_rules, cache)
            if problem:
                bad.append(BadInput(item.where, problem))
            if progress is not None and count % 1000 == 0:
                progress(count)
    finally:
        _WORKER_JUDGING = None
    ordered = sorted(rows.values(), key=lambda r: natural_key(r.name))
    fleet = Fleet(ordered, max_listed)
    drifts = {c.key: drift(c.title, ordered, _cell(c.key)) for c in nd.COLUMNS if not c.figure}
    findings: list[Finding] = []
    not_checked: list[NotChecked] = []
    for item in FLEET_RULES:
        found, skipped = item.evaluate(fleet)
        findings += found
        if skipped is not None:
            not_checked.append(skipped)
    findings.sort(key=lambda f: (f.severity.rank, f.code, f.message))
    slow = {(f.evidence["nodes"][0], f.evidence["figure"]): f for f in findings if f.id == "fleet-smoke-slow"}
    return FleetReport(ordered, drifts, findings, not_checked, bad, count, max_listed, slow)


def _cell(key: str) -> Callable[[nd.NodeRow], str | None]:
    return lambda row: row.cells.get(key)


class Judged(NamedTuple):
    """What judging a node's facts gives its row; shared by every node with those facts."""

    cells: dict[str, str]  # the facts columns (fact_cells)
    findings: tuple[tuple[str, str, str], ...]  # (id, severity, message)
    not_checked: int
    nothing_checked: bool


class JudgeCache:
    """What judging gave, kept where it can be reused: for the twins of one document
    (fwdoctor.fleet.documents.Twins: files that parse to that document but for host.name)
    on the document's Template, and for every rule by the facts it read (RuleCache).

    "Same" for a whole judgement is the Template's identity: Twins.match returns a twin
    only for a file whose bytes are the template's prefix, one JSON string (the name) and
    its suffix, and only once the template was proven to hold host.name at that cut. Two
    nodes share a Judged only then. No rule reads the host's name (tests/test_fleet_judge_cache.py
    holds every rule to that), and what a node is called is taken from its own document,
    never from the cache. The judgement lives on the Template, so it goes when Twins drops
    the template (a fleet of distinct documents keeps no parsed document alive). Before,
    the key was a digest of the whole document less its name: the same answer for twins, and
    ~0.3 ms of json.dumps per document that never hit when every node differs.

    Every other node is judged rule by rule (fwdoctor.fleet.judging.RuleCache): a rule's
    outcome is reused for a node whose facts are the same at the keys that rule read. A
    document that cannot be judged keeps nothing: each is refused by itself, as before."""

    def __init__(self, kb: KB, rules: Iterable[Any] = ()) -> None:
        # What a judgement depends on besides the facts: it is reused under these alone.
        self.kb, self.node_rules = kb, tuple(rules)
        self._served: Any = None  # a list found to hold node_rules (a list is compared by identity after)
        self.rules = RuleCache(kb)

    def serves(self, kb: KB, rules: list[Any]) -> bool:
        if kb is not self.kb:
            return False
        if rules is self._served:  # the list build() passes for every document: compared once
            return True
        same = len(rules) == len(self.node_rules) and all(a is b for a, b in zip(rules, self.node_rules))
        if same:
            self._served = rules
        return same

    def get(self, twin: Template | None) -> Judged | None:
        # A template read by another report (or absorb() with another cache) judged it
        # under its own KB and rules: not this one's answer.
        if twin is None or twin.judged is None or twin.judged[0] is not self:
            return None
        return twin.judged[1]  # type: ignore[no-any-return]

    def put(self, twin: Template | None, judged: Judged) -> None:
        if twin is not None:
            twin.judged = (self, judged)


def absorb(rows: dict[str, nd.NodeRow], doc: Document, kb: KB, rules: list[Any], cache: JudgeCache | None = None) -> str | None:
    """Fold one document into its node's row; the reason it cannot be used, else None.

    One bad document costs one row: a field of the wrong type (details not an object,
    gpus.list not a list, a stamp that is no date, a fact no rule can read) makes this
    document unreadable, named with the field, and leaves every row as it was."""
    cache = cache if cache is not None and cache.serves(kb, rules) else JudgeCache(kb, rules)

    def used(name: str, stamp: str | None) -> bool:  # judge only facts the node will show
        held = rows.get(name)
        return held is None or held.newer("facts", stamp)

    return _fold_parts(rows, _parts(doc, kb, rules, cache, used))


class Parts(NamedTuple):
    """What one document gives its node, read from that document alone: so a worker
    process can read it (fwdoctor.fleet.documents._read_in_workers) and the main process
    folds it into the rows in the documents' order (_fold_parts)."""

    where: str
    problem: str | None  # why the document cannot be used at all; else None
    stamp: str | None = None
    name: str = ""
    named_by: str = ""
    has_facts: bool = False  # the document holds facts (whether or not judged)
    judged: Judged | None = None  # None with has_facts: not judged (the node shows newer facts), or:
    judge_error: str | None = None  # why its facts cannot be judged: the document's problem if they are used
    kernel: tuple[dict[str, str], dict[str, float], dict[str, str], list[str]] | None = None  # nd.kernel_cells
    allreduce: tuple[dict[str, str], dict[str, float], dict[str, str], list[str]] | None = None  # nd.allreduce_cells


# (kb, rules) of the report being built, for the workers it forks; each worker's JudgeCache.
_WORKER_JUDGING: tuple[Any, list[Any]] | None = None
_WORKER_CACHE: JudgeCache | None = None


def parts_of(doc: Document) -> Parts:
    """In a worker: the document's Parts, its facts judged whether or not the node will
    show them (only the main process knows; a judgement not used, and its rule error,
    are dropped there)."""
    global _WORKER_CACHE
    assert _WORKER_JUDGING is not None, "parts_of runs in a worker forked by build()"
    kb, rules = _WORKER_JUDGING
    if _WORKER_CACHE is None or not _WORKER_CACHE.serves(kb, rules):
        _WORKER_CACHE = JudgeCache(kb, rules)
    return _parts(doc, kb, rules, _WORKER_CACHE, None)


def _interned(parts: Parts) -> Parts:
    """Parts unpickled from a worker, their strings shared again as reading here shares them."""
    def again(part: Any) -> Any:
        if part is None:
            return None
        cells, figures, groups, failures = part
        return {k: nd.intern(v) for k, v in cells.items()}, figures, {k: nd.intern(v) for k, v in groups.items()}, failures
    judged = parts.judged
    if judged is not None:
        judged = judged._replace(cells={k: nd.intern(v) for k, v in judged.cells.items()},
                                 findings=tuple(tuple(nd.intern(x) for x in f) for f in judged.findings))
    return parts._replace(judged=judged, kernel=again(parts.kernel), allreduce=again(parts.allreduce))


def _parts(doc: Document, kb: KB, rules: list[Any], cache: JudgeCache,
           used: Callable[[str, str | None], bool] | None) -> Parts:
    """`used(name, stamp)`: whether the node will show this document's facts (None: judge
    them anyway). Everything is read before any row changes, so a document that fails
    half way leaves the node as the documents before it showed it."""
    try:
        return _read_parts(doc, kb, rules, cache, used)
    except (nd.DocumentError, StampError) as exc:
        return Parts(doc.where, str(exc))


def _read_parts(doc: Document, kb: KB, rules: list[Any], cache: JudgeCache,
                used: Callable[[str, str | None], bool] | None) -> Parts:
    data = doc.data
    facts_data: Any = None
    kernel: Any = None
    allreduce: Any = None
    if doc.kind in ("facts", "check"):
        facts_data = data
    elif doc.kind == "smoke-suite":
        facts_data = data.get("check")
        kernel, allreduce = data.get("kernel"), data.get("allreduce")
    else:  # a single `smoke kernel|allreduce --json`
        results = data.get("results")
        if not isinstance(results, list):
            return Parts(doc.where, 'a smoke document without a "results" list')
        nd.check_results(results, "results")
        kernel = [r for r in results if isinstance(r, Mapping) and str(r.get("test", "")).startswith("kernel")] or None
        allreduce = [r for r in results if isinstance(r, Mapping) and r.get("test") == "allreduce"] or None
    for part, value in (("kernel", kernel), ("allreduce", allreduce)):
        if value is not None and not isinstance(value, list):
            return Parts(doc.where, f'"{part}" is a {type(value).__name__}, not a list of results')
        if value is not None and doc.kind == "smoke-suite":
            nd.check_results(value, part)
    facts: Facts | None = None
    twin: Template | None = None
    judged: Judged | None = None
    if facts_data is not None:
        if not isinstance(facts_data, Mapping):
            return Parts(doc.where, f'"check" is a {type(facts_data).__name__}, not a check report')
        twin = doc.twin if facts_data is data else None  # the twins of one document share one judging
        judged = cache.get(twin)
        if judged is not None:
            # The same document but for host.name was read as facts before; its name is
            # still checked here (a name of the wrong type is refused), as reading would.
            try:
                Provenance.from_json(facts_data)
            except ValueError as exc:
                return Parts(doc.where, f"not facts fwdoctor can read: {exc}")
        else:
            try:
                facts = read_facts(data, doc.entries) if doc.entries is not None and facts_data is data \
                    else nd.read_facts(facts_data)
            except (ValueError, RecursionError) as exc:
                return Parts(doc.where, f"not facts fwdoctor can read: {exc}")
            nd.check_fact_types(facts)
    stamp = doc.collected_at  # StampError: a stamp that is no date orders nothing
    name, named_by = _name(doc)
    judge_error: str | None = None
    if facts is not None and (used is None or used(name, stamp)):
        prints = Fingerprints(facts, doc.entries if facts_data is data else None)
        try:
            report = _judge(facts, kb, cache.rules.rules(rules, prints))
            # nd.fact_cells in two parts: the GPUs' differ wherever gpus.list does (UUIDs), the rest seldom.
            cells = {**cache.rules.call(nd.software_cells, lambda seen: nd.software_cells(seen, kb), facts, prints),
                     **nd.gpu_cells(facts)}
        except (nd.DocumentError, StampError) as exc:
            judge_error = str(exc)
        else:
            judged = Judged(cells, tuple(nd.findings_of(report)), report.not_run, report.nothing_checked)
            cache.put(twin, judged)
    return Parts(doc.where, None, stamp, name, named_by, facts_data is not None, judged, judge_error,
                 nd.kernel_cells(kernel) if kernel else None, nd.allreduce_cells(allreduce) if allreduce else None)


def _fold_parts(rows: dict[str, nd.NodeRow], parts: Parts) -> str | None:
    """Fold a document's Parts into its node's row, in the documents' order: each part
    only where it is newer than what the node shows; the reason it cannot be used, else None."""
    if parts.problem is not None:
        return parts.problem
    name, stamp = parts.name, parts.stamp
    held = rows.get(name)
    judged = parts.judged
    if parts.has_facts and not (held is None or held.newer("facts", stamp)):
        judged = None  # older than the facts the node shows: not used
    elif parts.judge_error is not None:
        return parts.judge_error
    kernel_part = parts.kernel if parts.kernel is not None and (held is None or held.newer("kernel", stamp)) else None
    allreduce_part = parts.allreduce if parts.allreduce is not None and (held is None or held.newer("allreduce", stamp)) else None
    _fold(rows, held, name, parts.named_by, parts.where, stamp, judged, kernel_part, allreduce_part)
    return None


def _fold(rows: dict[str, nd.NodeRow], held: nd.NodeRow | None, name: str, named_by: str, where: str, stamp: str | None,
          judged: Judged | None, kernel_part: Any, allreduce_part: Any) -> None:
    """The node's row with what one document gave it (every part read and checked before)."""
    row = held if held is not None else rows.setdefault(name, nd.NodeRow(nd.intern(name), named_by))
    row.files.append(nd.intern(where))
    if judged is not None:
        row.take("facts", stamp)
        for key in nd.FACT_COLUMNS:
            row.cells.pop(key, None)
        row.cells.update(judged.cells)
        # Each row its own list: --ignore and the renderers must never reach another node.
        row.findings, row.not_checked, row.nothing_checked = list(judged.findings), judged.not_checked, judged.nothing_checked
    if kernel_part is not None:
        cells, figures, groups, failures = kernel_part
        if cells:
            row.take("kernel", stamp)
            _replace(row, nd.KERNEL_COLUMNS, cells, figures, groups)
            row.failures["kernel"] = failures
    if allreduce_part is not None:
        cells, figures, groups, failures = allreduce_part
        row.take("allreduce", stamp)
        _replace(row, ("busbw",), cells, figures, groups)
        row.failures["allreduce"] = failures
    for part in [p for p, f in row.failures.items() if not f]:
        del row.failures[part]


def _judge(facts: Facts, kb: KB, rules: list[Any]) -> Any:
    """The node's own checks; DocumentError naming the facts a rule could not read (users
    get the rule's inputs; the test suite's FWDOCTOR_RAISE_RULE_ERRORS re-raises inside
    judge, so the failing rule is found again by running each alone)."""
    from fwdoctor.engine import judge

    failed: list[tuple[Any, Exception]] = []
    try:
        report = judge(facts, kb, rules, on_rule_error=lambda item, exc: failed.append((item, exc)))
    except Exception as exc:
        failed.append((_failing_rule(facts, kb, rules), exc))
    if not failed:
        return report
    item, exc = failed[0]
    reads = [k for k in (*getattr(item, "needs", ()), *getattr(item, "optional", ())) if facts.known(k)]
    rule = f"rule {item.id}" if item is not None else "a rule"
    fields = ", ".join(f'"{k}"' for k in reads) or "its facts"
    raise nd.DocumentError(f"a fact of an unexpected type or shape: {rule} could not read {fields} ({type(exc).__name__}: {str(exc)[:120]})")


def _failing_rule(facts: Facts, kb: KB, rules: list[Any]) -> Any:
    for item in rules:
        try:
            item.evaluate(facts, kb)
        except Exception:
            return item
    return None


def _replace(row: nd.NodeRow, keys: Iterable[str], cells: dict[str, str], figures: dict[str, float], groups: dict[str, str]) -> None:
    for key in keys:
        row.cells.pop(key, None)
        row.figures.pop(key, None)
        row.peer_group.pop(key, None)
    row.cells.update(cells)
    row.figures.update(figures)
    row.peer_group.update(groups)


def _name(doc: Document) -> tuple[str, str]:
    """(the node's name, what named it)."""
    name = doc.host_name
    if name is None:
        return clean_name(doc.stem), NAMED_BY_FILE
    return clean_name(name), NAMED_BY_HOST


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def clean_name(name: str) -> str:
    """A node name safe to print on a terminal: control characters (an escape sequence
    in a hostile host name) written as \\xNN, and at most MAX_NAME characters."""
    name = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", name)
    return name if len(name) <= MAX_NAME else name[:MAX_NAME] + "..."


def natural_key(text: str) -> tuple[Any, ...]:
    """node-9 before node-10."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part)


# ----------------------------------------------------------------------------- grouping
def grouped_node_findings(report: FleetReport) -> list[tuple[tuple[str, str, str], list[str]]]:
    """Each distinct per-node finding (id, severity, message) with the nodes that have it,
    worst first: a warning on 1000 nodes is one line, not a thousand."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for row in report.rows:
        for finding in row.findings:
            groups.setdefault(finding, []).append(row.name)
    rank = {"error": 0, "warning": 1, "info": 2}
    return sorted(groups.items(), key=lambda item: (rank.get(item[0][1], 3), item[0][0], -len(item[1]), item[0][2]))


def own(report: FleetReport, row: nd.NodeRow) -> list[tuple[str, str, str]]:
    """Everything that is this node's own: its checks' findings, each failed smoke test
    (an error: the node cannot run that workload), and the fleet findings naming it alone
    (its smoke figure far below its peers')."""
    found = list(row.findings)
    found += [("smoke-failed", "error", text) for text in row.smoke_failures]
    found += [(f.id, f.severity.value, f.message) for _, f in report.slow_of(row.name)]
    return found


def worst_of(found: list[tuple[str, str, str]]) -> str:
    severities = {s for _, s, _ in found}
    return next((s for s in ("error", "warning", "info") if s in severities), "ok")


def to_act_on(report: FleetReport) -> list[tuple[str, list[str]]]:
    """(cause, nodes) of the nodes to drain: an error of their own or a failed smoke test.
    A node's cause is its first error ("id: message"); nodes with the same cause are one
    entry, most nodes first, so the list reads as the commands to run."""
    by_cause: dict[str, list[str]] = {}
    for row in report.rows:
        errors = [(i, m) for i, s, m in own(report, row) if s == "error"]
        if errors:
            by_cause.setdefault(f"{errors[0][0]}: {errors[0][1]}", []).append(row.name)
    return sorted(by_cause.items(), key=lambda item: (-len(item[1]), item[0]))


def _summary(report: FleetReport) -> str:
    c = report.counts()
    return (f"{len(report.rows)} node(s) from {report.documents} document(s); "
            f"{c['error']} error(s), {c['warning']} warning(s), {c['info']} info")


def _differing(report: FleetReport) -> list[tuple[nd.Column, Drift]]:
    return [(nd.BY_KEY[key], d) for key, d in report.drifts.items() if d.differs]


def _same(report: FleetReport) -> list[str]:
    return [f"{nd.BY_KEY[key].title} {d.majority}" for key, d in report.drifts.items() if d.majority is not None and not d.differs]


MARK = {"error": "error", "warning": "warn ", "info": "info "}


def render_text(report: FleetReport) -> str:
    n = report.max_listed
    out = [f"fwdoctor {__version__} fleet report: {_summary(report)}", ""]
    act = to_act_on(report)
    out.append(f"Nodes to act on (drain): {sum(len(nodes) for _, nodes in act)}" if act else "Nodes to act on (drain): none")
    for cause, nodes in act:
        out.append(f"  {folded(nodes, n)}: {cause}")
    out.append("")
    differing = _differing(report)
    out.append(f"Drift: {report.alike} of {len(report.rows)} nodes alike" + ("" if differing or report.slow else " (nothing differs)"))
    width = max([len(c.title) for c, _ in differing] + [8])
    for column, found in differing:
        out.append(f"  {column.title:<{width}}  {found.text(n)}")
    same = _same(report)
    if same:
        out.append(f"  same on every node that says: {', '.join(same)}")
    out += ["", f"[{_status(report.findings)}] {AREA_TITLES['fleet']}"]
    for finding in report.findings:
        out.append(f"  {MARK[finding.severity.value]} {finding.id}: {finding.message}")
    for item in report.not_checked:
        out.append(f"  not checked {item.rule}: {item.reason}")
    groups = grouped_node_findings(report)
    out += ["", f"Each node's own checks (`fwdoctor check --facts`): {sum(len(nodes) for _, nodes in groups)} finding(s), {len(groups)} distinct"]
    for (finding_id, severity, message), nodes in groups:
        out.append(f"  {MARK.get(severity, severity)} {finding_id}: {message}")
        out.append(f"        on {len(nodes)} node(s): {folded(nodes, n)}")
    nothing = [r.name for r in report.rows if r.nothing_checked]
    if nothing:
        out.append(f"  nothing could be checked on {len(nothing)} node(s) (their facts hold nothing the checks need): {listed(nothing, n)}")
    failed = [(r.name, text) for r in report.rows for text in r.smoke_failures]
    if failed:
        out += ["", f"Smoke tests that failed: {len(failed)}"]
        out += [f"  {name}: {text}" for name, text in failed[: n * 3]]
        if len(failed) > n * 3:
            out.append(f"  +{len(failed) - n * 3} more (--format json lists them all)")
    by_file = [r.name for r in report.rows if r.named_by == NAMED_BY_FILE]
    if by_file:
        out += ["", f"Named by file name (no host.name in the document; older fwdoctor): {len(by_file)} node(s): {listed(by_file, n)}"]
    if report.bad:
        out += ["", f"Inputs that could not be used: {len(report.bad)}"]
        out += [f"  {item.where}: {item.reason}" for item in report.bad]
    out.append("")
    if not report.rows:
        out.append("Nothing to report: no facts, check or smoke document was read.")
    else:
        out.append("`fwdoctor explain ID` explains a finding; --format json|markdown|html for other views.")
    # A node's values (driver version, GPU name, smoke failure text, file names) reach the
    # terminal with their control characters shown, one line each (fwdoctor.render.escape).
    return terminal_lines(out) + "\n"


def _status(findings: list[Finding]) -> str:
    worst = min((f.severity for f in findings), key=lambda s: s.rank, default=None)
    return "ok" if worst is None else worst.value


def md(text: Any) -> str:
    """A value from the nodes' documents in markdown: an inline code span (fwdoctor.render.escape),
    where GitHub renders no link, image, HTML or @mention; use `md_cell` in a table."""
    return md_code(text)


def render_markdown(report: FleetReport) -> str:
    n = report.max_listed
    out = [f"## fwdoctor fleet report", "", f"fwdoctor {__version__}: {_summary(report)}", "", "### Nodes to act on (drain)", ""]
    act = to_act_on(report)
    out += [f"- {md(folded(nodes, n))}: {md(cause)}" for cause, nodes in act] or ["None."]
    out += ["", f"### Drift: {report.alike} of {len(report.rows)} nodes alike", ""]
    differing = _differing(report)
    if differing:
        out += ["| check | odd nodes | the rest |", "|---|---|---|"]
        for column, found in differing:
            odd = "; ".join(f"{md_cell(listed(g.nodes, n))}: {md_cell(g.value)}" for g in found.minorities[:n])
            out.append(f"| {column.title} | {odd} | {found.majority_count} x {md_cell(found.majority)} |")
    else:
        out.append("Nothing differs between the nodes.")
    same = _same(report)
    if same:
        out += ["", f"Same on every node that says: {md(', '.join(same))}"]
    out += ["", f"### {AREA_TITLES['fleet']}", ""]
    out += [f"- **{f.severity.value}** `{f.id}`: {md(f.message)}" for f in report.findings] or ["No finding."]
    out += [f"- not checked `{item.rule}`: {md(item.reason)}" for item in report.not_checked]
    out += ["", "### Each node's own checks", ""]
    groups = grouped_node_findings(report)
    out += [f"- **{s}** {md(i)}: {md(m)} ({len(nodes)} node(s): {md(folded(nodes, n))})" for (i, s, m), nodes in groups] or ["No finding."]
    failed = [(r.name, text) for r in report.rows for text in r.smoke_failures]
    if failed:
        out += ["", "### Smoke tests that failed", ""] + [f"- {md(name)}: {md(text)}" for name, text in failed]
    if report.bad:
        out += ["", "### Inputs that could not be used", ""] + [f"- {md(b.where)}: {md(b.reason)}" for b in report.bad]
    return "\n".join(out) + "\n"


def to_json(report: FleetReport) -> dict[str, Any]:
    """The body of `fleet report --format json` (emit_json stamps kind "fleet")."""
    return {
        "exit_code": report.exit_code,
        "summary": {"nodes": len(report.rows), "documents": report.documents, "alike": report.alike,
                    "unreadable": len(report.bad), **report.counts()},
        "thresholds": {"slow_fraction": SLOW_FRACTION, "min_peer_group": MIN_PEER_GROUP},
        "columns": [{"key": c.key, "title": c.title, "figure": c.figure} for c in nd.COLUMNS],
        "drift": [{"column": key, "title": nd.BY_KEY[key].title, "majority": d.majority, "majority_nodes": d.majority_count,
                   "has_majority": d.has_majority, "unknown": d.unknown,
                   "minorities": [{"value": g.value, "nodes": list(g.nodes)} for g in d.minorities]}
                  for key, d in report.drifts.items()],
        "findings": [f.to_json() for f in report.findings],
        "not_checked": [item.to_json() for item in report.not_checked],
        "act_on": [{"cause": cause, "nodes": nodes, "hostlist": folded(nodes, len(nodes))} for cause, nodes in to_act_on(report)],
        "nodes": [{**row.to_json(), "odd": report.odd(row)} for row in report.rows],
        "unreadable": [b.to_json() for b in report.bad],
    }
