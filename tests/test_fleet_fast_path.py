"""`fleet report`'s fast path gives every node what a straightforward judging gives it
(issue 30, item 4): rule outcomes reused by the facts each rule read
(fwdoctor.fleet.judging), facts read fact by fact with each fact's text remembered
(fwdoctor.fleet.facttext), twins judged once (fwdoctor.fleet.documents.Twins).

The fleets here are built from the 8 x H100 fixture by seeded random changes of the kinds
that make nodes differ (another driver, a GPU missing or renamed, an unknown fact, a probe
failure, a stamp past a branch's end of life, a build request, a fact of the wrong type),
written as files, twins and .jsonl lines, and each node is compared with
`engine.judge(Facts.from_json(doc))` of its own document alone. Timing lives in
benchmarks/fleet_report.py, not here. Every command judges with the frozen tests/kb.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from conftest import DATA, TEST_KB_DIR

FACTS = DATA / "fleet-report" / "facts-h100x8-r580.json"
STAMPS = ("2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z", "2028-07-01T10:00:00Z", None)
GPU_NAMES = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla K80", "NVIDIA L4", "NVIDIA B200")


def base() -> dict[str, Any]:
    return json.loads(FACTS.read_text())


def mutate(doc: dict[str, Any], rng: random.Random, index: int) -> dict[str, Any]:
    """`doc` changed in one to four of the ways real nodes differ."""
    doc = copy.deepcopy(doc)
    facts = doc["facts"]
    def has(*keys: str) -> bool:  # a change needs its facts still known (an earlier one may have removed them)
        return all(isinstance(facts.get(k), dict) and facts[k].get("value") is not None for k in keys)

    for _ in range(rng.randint(1, 4)):
        change = rng.randrange(14)
        if change in (0, 1, 2, 3, 7, 8, 9, 13) and not has(*{0: ("driver.version", "driver.cuda_version"), 1: ("gpus.list",),
                                                            2: ("gpus.list",), 3: ("gpus.list",), 7: ("torch.version", "torch.cuda"),
                                                            8: ("nccl.installs",), 9: ("cuda.active",),
                                                            13: ("system.shm_bytes",)}[change]):
            continue
        if change == 0:
            version = rng.choice(("550.163.01", "535.104.05", "470.256.02", "580.95.05"))
            facts["driver.version"]["value"] = version
            facts["driver.cuda_version"]["value"] = {"550.163.01": "12.4", "535.104.05": "12.2", "470.256.02": "11.4"}.get(version, "13.0")
        elif change == 1:
            gpus = facts["gpus.list"]["value"]
            del gpus[rng.randrange(len(gpus) or 1):]
        elif change == 2:
            for gpu in facts["gpus.list"]["value"]:
                gpu["uuid"] = f"GPU-{rng.getrandbits(64):016x}"
        elif change == 3:
            name = rng.choice(GPU_NAMES)
            for gpu in facts["gpus.list"]["value"][: rng.randint(1, 8)]:
                gpu["name"] = name
                gpu["cc"] = {"NVIDIA A100-SXM4-80GB": "8.0", "Tesla K80": "3.7", "NVIDIA L4": "8.9", "NVIDIA B200": "10.0"}.get(name, "9.0")
        elif change == 4:
            key = rng.choice(sorted(facts))
            facts[key] = {"unknown": True, "why": rng.choice(("probe failed", "not readable", "timed out"))}
        elif change == 5:
            del facts[rng.choice(sorted(facts))]
        elif change == 6:
            doc["probe_failures"] = [{"probe": "nvml", "reason": rng.choice(("timed out", "no libnvidia-ml"))}]
        elif change == 7:
            facts["torch.version"]["value"] = rng.choice(("2.14.1+cu130", "2.9.1+cu128", "2.4.0+cu121"))
            facts["torch.cuda"]["value"] = rng.choice(("13.0", "12.8", "12.1", None))
        elif change == 8:
            for item in facts["nccl.installs"]["value"]:
                item["header_version"] = item["library_version"] = rng.choice(("2.27.3", "2.30.7", "2.18.1"))
        elif change == 9:
            facts["cuda.active"]["value"] = None
        elif change == 10:
            facts["request.build.torch"] = {"value": "2.9.1", "source": "build torch --version"}
        elif change == 11:
            facts = doc["facts"] = dict(reversed(list(facts.items())))  # another key order
        elif change == 12:
            facts["driver.legacy_notices"] = {"value": [], "source": "/proc/driver/nvidia/version"}
        else:
            facts["system.shm_bytes"]["value"] = rng.choice((64 * 2**20, 2**34))
    stamp = rng.choice(STAMPS)
    doc["host"] = {"name": f"node-{index:03d}", "source": "/etc/hostname"}
    if stamp is not None:
        doc["collected_at"] = stamp
    return doc


def write_fleet(folder: Path, seed: int, nodes: int) -> dict[str, dict[str, Any]]:
    """`nodes` varied nodes as files (each with a twin or two now and then, and some in a
    .jsonl), so every reading path runs; node name -> its document."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    shapes = [base()] + [mutate(base(), rng, -1) for _ in range(5)]  # a few recurring builds
    docs: dict[str, dict[str, Any]] = {}
    lines: list[str] = []
    for index in range(nodes):
        doc = mutate(rng.choice(shapes), rng, index) if rng.random() < 0.6 else copy.deepcopy(rng.choice(shapes))
        name = f"node-{index:03d}"
        doc["host"] = {"name": name, "source": "/etc/hostname"}
        if index % 29 == 7:
            doc["facts"]["driver.version"] = {"value": 580, "source": "hand-edited"}  # no rule can read it
        docs[name] = doc
        if index % 10 == 9:
            lines.append(json.dumps(doc))
        else:
            (folder / f"{name}.json").write_text(json.dumps(doc, indent=rng.choice((None, 1, 2))))
    (folder / "zz.jsonl").write_text("\n".join(lines) + "\n")
    return docs


def straightforward(doc: dict[str, Any], kb: Any) -> tuple[Any, ...] | None:
    """What a node's row shows when its facts are judged alone, the plain way; None when
    the document is refused (a fact no rule or column can read)."""
    from fwdoctor.engine import judge
    from fwdoctor.fleet import node as nd
    from fwdoctor.model import Facts
    from fwdoctor.rules import RULES

    facts = Facts.from_json(doc)
    try:
        nd.check_fact_types(facts)
        report = judge(facts, kb, list(RULES))
    except Exception:  # the suite re-raises rule errors (conftest): such a node is refused
        return None
    return nd.fact_cells(facts, kb), nd.findings_of(report), report.not_run, report.nothing_checked


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_node_of_a_varied_fleet_gets_what_judging_it_alone_gives(tmp_path, test_kb, seed):
    from fwdoctor.fleet.report import build

    docs = write_fleet(tmp_path / "fleet", seed, 90)
    pristine = copy.deepcopy(docs)
    report = build([str(tmp_path / "fleet")], test_kb)
    rows = {row.name: row for row in report.rows}
    refused = {b.where for b in report.bad}
    for name, doc in docs.items():
        expected = straightforward(doc, test_kb)
        if expected is None:
            assert name not in rows and any(name in where or where.endswith(".jsonl:" + str(int(name[-3:]) // 10 + 1))
                                            for where in refused), name
            continue
        row = rows[name]
        assert (row.cells, row.findings, row.not_checked, row.nothing_checked) == expected, name
    assert refused and len(rows) >= 80  # both paths ran
    assert docs == pristine  # judging changed no document (twins and reused outcomes share values)


def test_reused_rule_outcomes_are_what_the_rule_gives_on_each_node(test_kb):
    """RuleCache itself, rule by rule: every outcome it hands out equals the rule's own on
    that node, and most are reused (a node that differs in its GPU UUIDs re-runs only the
    rules that read gpus.list)."""
    from fwdoctor.fleet.judging import Fingerprints, RuleCache
    from fwdoctor.model import Facts
    from fwdoctor.rules import RULES

    rng = random.Random(7)
    cache = RuleCache(test_kb)
    shapes = [base()] + [mutate(base(), rng, -1) for _ in range(3)]
    for index in range(120):
        doc = mutate(rng.choice(shapes), rng, index) if index % 3 == 0 else copy.deepcopy(rng.choice(shapes))
        for gpu in doc["facts"].get("gpus.list", {}).get("value") or []:
            if isinstance(gpu, dict):
                gpu["uuid"] = f"GPU-{index:08d}"
        facts = Facts.from_json(doc)
        prints = Fingerprints(facts)
        for item, cached in zip(RULES, cache.rules(list(RULES), prints)):
            try:
                expected = item.evaluate(facts, test_kb)
            except Exception as exc:
                with pytest.raises(type(exc)):
                    cached.evaluate(facts, test_kb)
                continue
            assert cached.evaluate(facts, test_kb) == expected, (index, item.id)
    assert cache.hits > 5 * cache.runs


def test_a_rule_that_reads_more_than_one_key_at_a_time_is_not_reused(test_kb):
    """What no key describes (iterating over every fact) leaves the outcome unkept."""
    from fwdoctor.fleet.judging import Fingerprints, RuleCache
    from fwdoctor.model import Fact, Facts

    cache = RuleCache(test_kb)
    seen: list[int] = []

    def counting(facts: Facts) -> int:
        seen.append(len(facts))
        return len(facts)

    for count in (1, 1, 2):
        facts = Facts([Fact(f"k.{i}", i) for i in range(count)])
        assert cache.call("count", counting, facts, Fingerprints(facts)) == count
    assert seen == [1, 1, 2] and cache.hits == 0

    def reads_one(facts: Facts) -> Any:
        return ("known", facts.get("k.0"), facts.provenance.collected_at if facts.provenance else None)

    for value in (1, 1, 1.0, True, "1", 1):
        facts = Facts([Fact("k.0", value), Fact("k.1", object())])  # k.1 is never read: no fingerprint needed
        assert cache.call("one", reads_one, facts, Fingerprints(facts)) == ("known", value, None)
        assert type(cache.call("one", reads_one, facts, Fingerprints(facts))[1]) is type(value)


# ----------------------------------------------------------------------------- reading fact by fact
TEXTS = [
    '{"kind": "facts", "facts": {"a.b": {"value": 1, "source": "x"}, "c.d": {"unknown": true, "why": "w"}}}',
    '  {"facts" : {"a.b" : {"value" : [1, 2.5, "\\u00fc\\ud800"]} ,\n"c.d":{"value":{"x":null}}} , "kind":"facts"}\n',
    '{"facts": {"a.b": {"value": 1}, "a.b": {"value": 2}}}',  # a repeated fact: the last wins
    '{"facts": {"a.b": {"value": 1}}, "facts": {"c.d": {"value": 2}}}',  # a repeated "facts"
    '{"facts": {"a.b": {"value": 1}}} x',  # extra data
    '{"facts": {"a.b": {"value": 1},}}',  # a trailing comma
    '\ufeff{"facts": {}}',  # a BOM
    '{"facts": {"a.b": 5}}',  # an entry that is not an object
    '{"facts": []}',
    '{"facts": {"a.b": {"value": NaN}, "e": {"value": -Infinity}}}',
    '{"facts": {"a.b": {"value": 1}}, "host": {"name": "n"}, "collected_at": "2026-12-01T10:00:00Z"}',
    '{"facts": {"a.b": {"value": 1}}',  # unterminated
    '{"facts": {"a\\"b": {"value": "tab\\there"}}}',
    '{"facts": {"a.b": {"value": "raw\tcontrol"}}}',  # a control character json refuses
    '[{"facts": {}}]',
    '{"kind": "smoke", "results": [{"test": "kernel gpu0", "details": {"tflops": {"fp16": 700.5}}}]}',
    '{}',
]


def test_a_document_read_fact_by_fact_is_the_document_json_loads_reads():
    from fwdoctor.fleet.facttext import FactTexts

    texts = FactTexts()
    for _ in range(2):  # the second time, every fact's text is remembered
        for text in TEXTS + [text.replace('"value": 1', '"value": 10') for text in TEXTS]:
            split = texts.split(text)
            try:
                expected = json.loads(text)
            except ValueError:
                assert split is None, text
                continue
            if split is not None:
                assert json.dumps(split[0]) == json.dumps(expected), text
                if split[1] is not None:
                    assert list(split[1]) == list(expected["facts"]), text


def test_facts_read_from_remembered_texts_are_the_facts_of_the_document(tmp_path):
    from fwdoctor.fleet.facttext import FactTexts, read_facts
    from fwdoctor.model import Facts

    texts = FactTexts()
    rng = random.Random(5)
    for index in range(40):
        doc = mutate(base(), rng, index)
        if index % 7 == 3:
            doc["facts"]["deep.value"] = {"value": json.loads("[" * 31 + "]" * 31)}  # over the depth guard
        text = json.dumps(doc, indent=index % 3 or None)
        split = texts.split(text)
        assert split is not None
        data, entries = split
        try:
            expected = Facts.from_json(json.loads(text))
        except ValueError as exc:
            with pytest.raises(ValueError, match=str(exc)[:30].replace("(", r"\(").replace("[", r"\[")):
                read_facts(data, entries)
            continue
        facts = read_facts(data, entries)
        assert [facts.fact(k) for k in facts] == [expected.fact(k) for k in expected]
        assert (facts.failures, facts.provenance) == (expected.failures, expected.provenance)


def test_a_fleet_read_fact_by_fact_reports_as_one_read_whole(tmp_path, test_kb):
    """The same fleet through the command, with the fast reading and without it."""
    import fwdoctor.fleet.documents as documents
    from fwdoctor.fleet.report import build, render_text, to_json

    write_fleet(tmp_path / "fleet", 11, 60)
    fast = build([str(tmp_path / "fleet")], test_kb)

    class NoTexts(documents.FactTexts):
        def split(self, text: str):  # type: ignore[override]
            return None

    original = documents.FactTexts
    documents.FactTexts = NoTexts  # type: ignore[misc]
    try:
        plain = build([str(tmp_path / "fleet")], test_kb)
    finally:
        documents.FactTexts = original  # type: ignore[misc]
    assert render_text(fast) == render_text(plain)
    assert json.dumps(to_json(fast)) == json.dumps(to_json(plain))


def test_every_way_to_read_facts_is_noted_by_the_view_rules_run_on():
    """A method added to Facts that reads its `_facts` directly would let a rule read a
    fact RuleCache never keys it by, and reuse an outcome that fact should change: every
    public member of Facts (and of the Mapping it is) must be one that `Reads` notes."""
    from fwdoctor.fleet.judging import Reads
    from fwdoctor.model import Facts

    noted_through = {"keys", "items", "values", "__eq__", "__ne__"}  # Mapping's, through __iter__/__getitem__
    not_reads = {"from_json", "__init__", "__class_getitem__", "__init_subclass__", "__subclasshook__", "__hash__", "__reversed__"}
    members = {name for cls in Facts.__mro__ if cls is not object for name in vars(cls)
               if not name.startswith("_abc") and (not name.startswith("_") or name.startswith("__"))}
    members |= {"failures", "provenance"}  # instance attributes of Facts
    unnoted = sorted(name for name in members - noted_through - not_reads - {"__dict__", "__weakref__", "__module__", "__doc__",
                                                                            "__slots__", "__annotations__", "__abstractmethods__",
                                                                            "__parameters__", "__orig_bases__", "__contains__"}
                     if name not in vars(Reads))
    assert unnoted == []
    assert "__contains__" in vars(Reads)


def test_rules_looked_up_together_give_what_each_rule_gives_on_each_node(test_kb):
    """The bundle (RuleCache._Bundle): once the first nodes are judged, the rules reused
    on them are looked up together; a node that differs at a bundled rule's facts (another
    driver, a GPU renamed) is judged rule by rule again, and every node's whole judgement
    is engine.judge's on its own facts."""
    from fwdoctor.engine import judge
    from fwdoctor.fleet import node as nd
    from fwdoctor.fleet.judging import Fingerprints, RuleCache
    from fwdoctor.model import Facts
    from fwdoctor.rules import RULES

    rng = random.Random(12)
    cache = RuleCache(test_kb)
    rules = list(RULES)
    odd = [mutate(base(), rng, -1) for _ in range(4)]
    for index in range(300):
        doc = copy.deepcopy(odd[index % 4]) if index % 17 == 5 else base()
        for gpu in doc["facts"].get("gpus.list", {}).get("value") or []:
            if isinstance(gpu, dict):
                gpu["uuid"] = f"GPU-{index:08d}"
        doc["collected_at"] = f"2026-12-01T10:{index // 60:02d}:{index % 60:02d}Z"
        facts = Facts.from_json(doc)
        try:
            expected = judge(facts, test_kb, rules)
        except Exception as exc:
            with pytest.raises(type(exc)):
                judge(facts, test_kb, cache.rules(rules, Fingerprints(facts)))
            continue
        got = judge(facts, test_kb, cache.rules(rules, Fingerprints(facts)))
        assert (nd.findings_of(got), got.not_checked, got.evaluated) == \
            (nd.findings_of(expected), expected.not_checked, expected.evaluated), index
    assert cache.bundled > 200  # most nodes took the bundled rules in one lookup


def test_an_outcome_found_under_a_rules_other_keys_is_not_kept_for_the_bundle(test_kb):
    """A rule whose reads depend on a fact (x = 1: it reads y; else z) is bundled under
    (x, y). A node with x = 2 reads z: its outcome is not kept under (x, y), where a later
    node with x = 2 and another z would find it."""
    from fwdoctor.engine import judge
    from fwdoctor.fleet.judging import Fingerprints, RuleCache
    from fwdoctor.model import Fact, Facts
    from fwdoctor.rules.base import Hit, Rule

    def branches(facts, kb):
        return Hit(f"y={facts['y']}" if facts["x"] == 1 else f"z={facts['z']}")

    rules = [Rule("gpu-mig-enabled", (), branches)]
    cache = RuleCache(test_kb)
    nodes = [(1, 1, 0)] * 6 + [(2, 1, 5), (2, 1, 6), (2, 1, 5), (1, 1, 7), (2, 1, 7)]
    for x, y, z in nodes:
        facts = Facts([Fact("x", x), Fact("y", y), Fact("z", z)])
        got = judge(facts, test_kb, cache.rules(rules, Fingerprints(facts)))
        assert [f.message for f in got.findings] == [f"y={y}" if x == 1 else f"z={z}"], (x, y, z)
    assert cache.bundled >= 2
