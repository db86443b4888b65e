"""`fleet report` judges each distinct set of facts once (issue 30, item 4): the cache must
never change what a node shows. Every test here builds a fleet whose nodes share facts
and compares each node with that node reported alone, or names a field that must split
the cache. Also: the JSON's exit_code is the process's under --fail-on and --ignore
(issue 29). Every command judges with the frozen tests/kb.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from conftest import DATA, TEST_KB_DIR

FACTS = DATA / "fleet-report" / "facts-h100x8-r580.json"


def base_doc(name: str | None, collected_at: str = "2026-12-01T10:00:00Z") -> dict:
    doc = json.loads(FACTS.read_text())
    if name is not None:
        doc["host"] = {"name": name, "source": "/etc/hostname"}
    doc["collected_at"] = collected_at
    return doc


def on_driver_550(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    facts = doc["facts"]
    facts["driver.version"]["value"] = "550.163.01"
    facts["driver.cuda_version"]["value"] = "12.4"
    for lib in facts["driver.userspace_libs"]["value"]:
        lib["path"] = lib["path"].replace(lib["version"], "550.163.01")
        lib["version"] = "550.163.01"
    return doc


def write(folder: Path, file_name: str, doc: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def build(*paths: Path):
    from fwdoctor.fleet.report import build as build_report
    from fwdoctor.kb import KB

    return build_report([str(p) for p in paths], KB.load(TEST_KB_DIR))


def alone(tmp_path: Path, name: str, doc: dict):
    """The row `name` gets when its document is the only one read (nothing to reuse)."""
    folder = tmp_path / f"alone-{name}"
    write(folder, f"{name}.facts.json", doc)
    (row,) = build(folder).rows
    return row


def fleet_cli(*args: str):
    from click.testing import CliRunner

    from fwdoctor.cli import main

    result = CliRunner().invoke(main, ["-q", "fleet", "report", *args, "--kb", str(TEST_KB_DIR)], catch_exceptions=False)
    return result.exit_code, result.stdout


# ----------------------------------------------------------------------------- the cache
def test_nodes_with_the_same_facts_but_one_field_each_get_the_findings_they_get_alone(tmp_path):
    same = base_doc("n-1")
    odd = on_driver_550(base_doc("n-3"))  # one fact differs: the driver (and its libraries)
    docs = {"n-1": same, "n-2": {**same, "host": {"name": "n-2", "source": "/etc/hostname"}}, "n-3": odd,
            "n-4": {**odd, "host": {"name": "n-4", "source": "/etc/hostname"}}, "n-5": base_doc("n-5")}
    folder = tmp_path / "fleet"
    for name, doc in docs.items():
        write(folder, f"{name}.facts.json", doc)
    rows = {row.name: row for row in build(folder).rows}
    assert list(rows) == ["n-1", "n-2", "n-3", "n-4", "n-5"]
    for name, doc in docs.items():
        own = alone(tmp_path, name, doc)
        assert (rows[name].cells, rows[name].findings, rows[name].not_checked, rows[name].nothing_checked) == \
            (own.cells, own.findings, own.not_checked, own.nothing_checked), name
    # ... and the field that differs does split them: n-3's driver cannot run torch's CUDA.
    assert "driver-too-old-for-torch" in {i for i, _, _ in rows["n-3"].findings}
    assert "driver-too-old-for-torch" not in {i for i, _, _ in rows["n-2"].findings}
    assert rows["n-3"].findings == rows["n-4"].findings and rows["n-1"].findings == rows["n-2"].findings
    assert rows["n-3"].findings is not rows["n-4"].findings  # each row its own list


def test_the_stamp_is_part_of_the_facts_a_node_is_judged_by(tmp_path):
    # driver-branch-eol judges as of collected_at: R580's end of life is 2028-06 in tests/kb.
    # Two nodes alike but for their stamps must not share a judgement.
    folder = tmp_path / "fleet"
    write(folder, "early.facts.json", base_doc("early", "2028-05-30T10:00:00Z"))
    write(folder, "late.facts.json", base_doc("late", "2028-07-01T10:00:00Z"))
    rows = {row.name: row for row in build(folder).rows}
    assert "driver-branch-eol" not in {i for i, _, _ in rows["early"].findings}
    assert "driver-branch-eol" in {i for i, _, _ in rows["late"].findings}


def test_identical_facts_are_judged_once_and_each_distinct_set_once(tmp_path, monkeypatch):
    import fwdoctor.engine

    calls: list[str] = []
    real = fwdoctor.engine.judge

    def counting(facts, *args, **kwargs):
        calls.append(facts.provenance.host_name)
        return real(facts, *args, **kwargs)

    monkeypatch.setattr(fwdoctor.engine, "judge", counting)
    folder = tmp_path / "fleet"
    for index in range(40):
        doc = on_driver_550(base_doc(f"n-{index:02d}")) if index in (7, 30) else base_doc(f"n-{index:02d}")
        write(folder, f"n-{index:02d}.facts.json", doc)
    report = build(folder)
    assert calls == ["n-00", "n-07"]  # the first of each distinct set, in reading order
    assert len(report.rows) == 40 and report.drifts["driver"].minorities[0].nodes == ("n-07", "n-30")


def test_a_node_with_another_nodes_facts_keeps_its_own_name_and_files_in_every_format(tmp_path):
    folder = tmp_path / "fleet"
    for index in range(1, 5):
        write(folder, f"gpu-{index}.facts.json", base_doc(f"gpu-{index}"))
    twin = on_driver_550(base_doc("twin-a"))
    write(folder, "twin-a.facts.json", twin)
    write(folder, "twin-b.facts.json", {**twin, "host": {"name": "twin-b", "source": "/etc/hostname"}})
    write(folder, "no-host-name.json", {k: v for k, v in base_doc(None).items() if k != "host"})  # named by its file
    code, out = fleet_cli(str(folder), "--json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 1
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert sorted(nodes) == ["gpu-1", "gpu-2", "gpu-3", "gpu-4", "no-host-name", "twin-a", "twin-b"]
    for name, node in nodes.items():
        assert node["files"] == [str(folder / (f"{name}.json" if name == "no-host-name" else f"{name}.facts.json"))]
    assert nodes["no-host-name"]["named_by"].startswith("file name") and nodes["twin-b"]["named_by"] == "host.name"
    assert [a["nodes"] for a in doc["act_on"]] == [["twin-a", "twin-b"]]
    assert {f["id"]: f["evidence"]["nodes"] for f in doc["findings"]}["fleet-driver-branch-differs"] == ["twin-a", "twin-b"]
    for fmt in ("text", "markdown", "html"):
        code, out = fleet_cli(str(folder), "--format", fmt)
        assert code == 1, fmt
        assert "twin-[a-b]" not in out  # letters are not folded into ranges
        assert re.search(r"twin-a\W+twin-b|twin-a,twin-b", out), fmt
    code, html = fleet_cli(str(folder), "--format", "html")
    for name in nodes:
        assert f'<th scope="row" data-v="{name}"' in html


def test_a_name_of_the_wrong_type_is_refused_even_when_the_rest_was_judged_before(tmp_path):
    folder = tmp_path / "fleet"
    write(folder, "a.facts.json", base_doc("a"))
    write(folder, "b.facts.json", {**base_doc("a"), "host": {"name": 42, "source": "/etc/hostname"}})
    report = build(folder)
    assert [row.name for row in report.rows] == ["a"]
    assert [(Path(b.where).name, b.reason) for b in report.bad] == [
        ("b.facts.json", 'not facts fwdoctor can read: "host.name": expected a string or null, got int')]


def test_a_document_that_crashes_a_rule_costs_one_row_after_its_twins_were_judged(tmp_path):
    folder = tmp_path / "fleet"
    for name in ("a", "b", "c"):
        write(folder, f"{name}.facts.json", base_doc(name))
    broken = base_doc("d")
    broken["facts"]["driver.version"]["value"] = 580  # a number: no rule can read it as a version
    write(folder, "d.facts.json", broken)
    write(folder, "e.facts.json", base_doc("e"))
    report = build(folder)
    assert [row.name for row in report.rows] == ["a", "b", "c", "e"]
    assert [Path(b.where).name for b in report.bad] == ["d.facts.json"] and "driver.version" in report.bad[0].reason


def test_no_rule_reads_the_host_name_so_judging_may_ignore_it():
    """The cache's key leaves host.name out: it is sound only while no rule reads it."""
    import fwdoctor.rules

    folder = Path(fwdoctor.rules.__file__).parent
    readers = [path.name for path in sorted(folder.rglob("*.py")) if "host_name" in path.read_text()]
    assert readers == []


# ----------------------------------------------------------------------------- exit codes (issue 29)
@pytest.fixture(scope="module")
def warned_fleet(tmp_path_factory) -> Path:
    """Four nodes, one with a GPU missing: fleet-gpu-count-differs, a warning, and no error."""
    folder = tmp_path_factory.mktemp("warned") / "nodes"
    for index in range(4):
        doc = base_doc(f"w-{index}")
        if index == 3:
            doc["facts"]["gpus.list"]["value"] = doc["facts"]["gpus.list"]["value"][:-1]
        write(folder, f"w-{index}.facts.json", doc)
    return folder


@pytest.mark.parametrize(("options", "expected"), [
    ((), 0),
    (("--fail-on", "error"), 0),
    (("--fail-on", "warning"), 1),
    (("--fail-on", "warning", "--ignore", "fleet-gpu-count-differs"), 0),
    (("--ignore", "fleet-gpu-count-differs"), 0),
    (("--fail-on", "warning", "--ignore", "fleet-nccl-differs"), 1),
])
def test_the_json_exit_code_is_the_process_exit_code_under_fail_on_and_ignore(warned_fleet, tmp_path, options, expected):
    code, out = fleet_cli(str(warned_fleet), "--json", *options)
    assert (code, json.loads(out)["exit_code"]) == (expected, expected)
    target = tmp_path / "report.json"
    code, _ = fleet_cli(str(warned_fleet), "--format", "json", "--out", str(target), *options)
    assert (code, json.loads(target.read_text())["exit_code"]) == (expected, expected)


def test_an_incomplete_report_is_exit_2_in_the_json_whatever_fail_on_says(warned_fleet, tmp_path):
    folder = tmp_path / "nodes"
    for path in warned_fleet.iterdir():
        write(folder, path.name, path.read_text())
    write(folder, "broken.json", "{not json")
    for options in ((), ("--fail-on", "warning"), ("--ignore", "fleet-gpu-count-differs")):
        code, out = fleet_cli(str(folder), "--json", *options)
        assert (code, json.loads(out)["exit_code"]) == (2, 2), options


# ----------------------------------------------------------------------------- twins (read without parsing again)
def read_all(folder: Path) -> dict[str, tuple[str, dict, bool]]:
    """file name -> (kind, data, read as a twin) of every document `fleet report` reads."""
    from fwdoctor.fleet.documents import Document, documents

    # A template's own document carries its Template too, with the very data it was parsed to;
    # a twin's data is a new object, read without parsing.
    return {Path(d.where).name: (d.kind, d.data, d.twin is not None and d.data is not d.twin.data)
            for d in documents([str(folder)]) if isinstance(d, Document)}


def parsed_alone(path: Path) -> tuple[str, dict]:
    from fwdoctor.fleet.documents import parse

    doc = parse(path.read_bytes(), str(path), path.stem)
    return doc.kind, doc.data


def test_a_file_that_is_another_but_for_its_name_reads_as_that_file_parsed(tmp_path):
    folder = tmp_path / "fleet"
    text = json.dumps(base_doc("@@NAME@@"), indent=1)
    for index, name in enumerate(("a-1", "a-2", "ü-3", 'quote"and\\back-4')):
        write(folder, f"f{index}.facts.json", text.replace('"@@NAME@@"', json.dumps(name)))
    write(folder, "z-odd.facts.json", text.replace('"@@NAME@@"', '"z-odd"').replace("580.95.05", "580.95.06"))
    read = read_all(folder)
    assert sum(twin for _, _, twin in read.values()) == 3  # all but the first, and the odd one
    for file_name, (kind, data, _) in read.items():
        assert (kind, data) == parsed_alone(folder / file_name), file_name
    assert {data["host"]["name"] for _, data, _ in read.values()} == {"a-1", "a-2", "ü-3", 'quote"and\\back-4', "z-odd"}


def test_a_name_that_is_also_a_fact_value_is_not_cut_as_the_name(tmp_path):
    folder = tmp_path / "fleet"
    for name in ("n1", "n2", "n3"):
        doc = base_doc(name)
        doc["facts"]["python.virtual_env"] = {"value": name, "source": "test"}  # the name's text twice
        write(folder, f"{name}.facts.json", json.dumps(doc))
    read = read_all(folder)
    assert not any(twin for _, _, twin in read.values())
    assert [data["facts"]["python.virtual_env"]["value"] for _, data, _ in read.values()] == ["n1", "n2", "n3"]


def test_an_escaped_host_name_with_the_same_text_elsewhere_is_never_a_template(tmp_path):
    # host.name written escaped ("n\u0031" is "n1") and a fact value "n1" written plainly: the
    # one plain "n1" is the fact, not the name. Were it cut as the name, the second file would
    # read as a node "n2" with the first file's fact; parsed, it is node "n1" with fact "n2".
    folder = tmp_path / "fleet"
    for index, value in enumerate(("n1", "n2", "n3")):
        doc = base_doc("@@NAME@@")
        doc["facts"]["python.virtual_env"] = {"value": value, "source": "test"}
        write(folder, f"f{index}.facts.json", json.dumps(doc).replace('"@@NAME@@"', '"n\\u0031"'))
    read = read_all(folder)
    for file_name, (kind, data, _) in read.items():
        assert (kind, data) == parsed_alone(folder / file_name), file_name
    assert [(d["host"]["name"], d["facts"]["python.virtual_env"]["value"]) for _, d, _ in read.values()] == [
        ("n1", "n1"), ("n1", "n2"), ("n1", "n3")]


def test_a_twin_whose_name_is_not_one_json_string_is_read_in_full(tmp_path):
    folder = tmp_path / "fleet"
    text = json.dumps(base_doc("@@NAME@@"))
    write(folder, "a.facts.json", text.replace('"@@NAME@@"', '"a"'))
    write(folder, "b.facts.json", text.replace('"@@NAME@@"', '"b", "name": "c"'))  # a duplicate key: the last wins
    write(folder, "d.facts.json", text.replace('"@@NAME@@"', '42'))
    read = read_all(folder)
    assert [(name, twin) for name, (_, _, twin) in read.items()] == [("a.facts.json", False), ("b.facts.json", False), ("d.facts.json", False)]
    assert read["b.facts.json"][1]["host"]["name"] == "c"
    report = build(folder)
    assert [row.name for row in report.rows] == ["a", "c"] and [Path(b.where).name for b in report.bad] == ["d.facts.json"]


def test_a_judgement_is_reused_only_under_the_knowledge_base_and_rules_it_was_made_with(tmp_path, test_kb):
    """absorb() with a cache made for another KB, or twins judged under other rules, judge
    again: a kept judgement says what one KB's rules found, not another's."""
    from fwdoctor.fleet.documents import Document, documents
    from fwdoctor.fleet.report import JudgeCache, absorb
    from fwdoctor.kb import KB
    from fwdoctor.rules import RULES

    folder = tmp_path / "fleet"
    for name in ("a", "b"):
        write(folder, f"{name}.facts.json", on_driver_550(base_doc(name)))  # a finding to reuse, or not
    first, second = [d for d in documents([str(folder)]) if isinstance(d, Document)]
    assert second.twin is first.twin is not None
    rows: dict = {}
    assert absorb(rows, first, test_kb, list(RULES), JudgeCache(test_kb)) is None
    shipped = KB.load()
    no_rules: dict = {}
    assert absorb(no_rules, second, shipped, [], JudgeCache(test_kb)) is None  # the cache is another KB's
    assert no_rules["b"].findings == [] and rows["a"].findings
    other: dict = {}
    assert absorb(other, second, test_kb, [], JudgeCache(test_kb)) is None  # the twin was judged under all rules
    assert other["b"].findings == [] and other["b"].not_checked == 0  # judged by no rule, as asked


# ----------------------------------------------------------------------------- a list of objects read field by field
# A rule that reads some fields of each GPU is keyed by those fields (judging.Fields); one
# that sees a GPU whole, or lets it out in its outcome, by the whole of gpus.list.
def with_uuids(doc: dict, tag: str) -> dict:
    doc = copy.deepcopy(doc)
    for index, gpu in enumerate(doc["facts"]["gpus.list"]["value"]):
        gpu["uuid"] = f"GPU-{tag}-{index}"
    return doc


def counting_rule(rule_id: str, func, needs=("gpus.list",), optional=()):
    """A Rule under an existing id (its severity and area) that runs `func` and counts it."""
    from fwdoctor.rules.base import Rule

    calls: list[int] = []

    def counted(facts, kb):
        calls.append(1)
        return func(facts, kb)

    return Rule(rule_id, tuple(needs), counted, tuple(optional)), calls


def rule_runs(rule, docs: list[dict], kb) -> tuple[list, int]:
    """The outcome RuleCache gives each document for `rule`, and the rule's own outcome."""
    from fwdoctor.fleet.judging import Fingerprints, RuleCache
    from fwdoctor.model import Facts

    cache = RuleCache(kb)
    outcomes = []
    for doc in docs:
        facts = Facts.from_json(doc)
        (cached,) = cache.rules([rule], Fingerprints(facts))
        outcomes.append((cached.evaluate(facts, kb), rule.evaluate(facts, kb)))
    return outcomes, cache.runs


@pytest.fixture(scope="module")
def shipped_kb():
    """The driver rule reads the GPUs only with the KB's architecture families, which the
    frozen tests/kb predates: these two tests judge with the shipped KB, and compare the
    cache with the rule itself, so a KB update cannot break them."""
    from fwdoctor.kb import KB

    return KB.load()


def test_nodes_that_differ_only_in_gpu_uuids_reuse_the_driver_rules_outcome(shipped_kb):
    import fwdoctor.rules.driver as driver

    test_kb = shipped_kb
    rule, calls = counting_rule("driver-gpu-unsupported", driver.driver_gpu_unsupported.func,
                                needs=driver.driver_gpu_unsupported.needs, optional=driver.driver_gpu_unsupported.optional)
    docs = [with_uuids(base_doc(f"n-{i}"), str(i)) for i in range(5)]
    outcomes, runs = rule_runs(rule, docs, test_kb)
    assert all(cached == own for cached, own in outcomes)
    assert runs == 1  # the first node; the other four are reused: the rule never reads a UUID


def test_a_gpu_renamed_on_one_node_is_judged_again(shipped_kb):
    import fwdoctor.rules.driver as driver

    test_kb = shipped_kb
    rule, _ = counting_rule("driver-gpu-unsupported", driver.driver_gpu_unsupported.func,
                            needs=driver.driver_gpu_unsupported.needs, optional=driver.driver_gpu_unsupported.optional)
    odd = with_uuids(base_doc("odd"), "odd")
    odd["facts"]["gpus.list"]["value"][3].update(name="Tesla K80", cc="3.7")
    short = with_uuids(base_doc("short"), "short")
    del short["facts"]["gpus.list"]["value"][-1]  # one GPU fewer: the count is part of the key
    docs = [with_uuids(base_doc("a"), "a"), odd, with_uuids(base_doc("b"), "b"), short]
    outcomes, runs = rule_runs(rule, docs, test_kb)
    assert all(cached == own for cached, own in outcomes)
    assert runs == 3 and outcomes[1][0] != outcomes[0][0]


def _hit(message: str, **evidence):
    from fwdoctor.rules.base import Hit

    return Hit(message, evidence=evidence)


# Each reads a GPU in a way that depends on its UUID (or lets the GPU out): never reused
# across UUIDs. The message or evidence shows what it saw, so a reuse would show.
SEES_THE_UUID = {
    "reads the field": lambda f, kb: _hit(f["gpus.list"][0]["uuid"]),
    "gets the field": lambda f, kb: _hit(str(f.get("gpus.list")[1].get("uuid"))),
    "puts the list in evidence": lambda f, kb: _hit("gpus", **{"gpus.list": f["gpus.list"]}),
    "puts a GPU in evidence": lambda f, kb: _hit("one", gpu=f["gpus.list"][2]),
    "puts a GPU in a tuple in evidence": lambda f, kb: _hit("one", gpus=(1, [f["gpus.list"][2]])),
    "formats a GPU": lambda f, kb: _hit(f"GPU {f['gpus.list'][0]}"),
    "repr of the list": lambda f, kb: _hit(repr(f["gpus.list"])),
    "str of a GPU": lambda f, kb: _hit(str(f["gpus.list"][0])),
    "json of a GPU": lambda f, kb: _hit(json.dumps(f["gpus.list"][0])),
    "json of the list": lambda f, kb: _hit(json.dumps(f["gpus.list"], indent=1)),
    "copies with **": lambda f, kb: _hit(str(sorted({**g, "cc": "x"}.values(), key=str)) if (g := f["gpus.list"][0]) else ""),
    "copies with dict()": lambda f, kb: _hit("copy", gpu=dict(f["gpus.list"][0])),
    "copies with update": lambda f, kb: _hit(str(sorted(((d := {}).update(f["gpus.list"][0]) or d).items()))),
    "copies with |": lambda f, kb: _hit(str(({} | f["gpus.list"][0])["uuid"])),
    "copies with .copy()": lambda f, kb: _hit(f["gpus.list"][0].copy()["uuid"]),
    "deep copies": lambda f, kb: _hit(copy.deepcopy(f["gpus.list"][0])["uuid"]),
    "reads values": lambda f, kb: _hit(str(list(f["gpus.list"][0].values()))),
    "reads items": lambda f, kb: _hit(str(sorted(f["gpus.list"][0].items(), key=str))),
    "iterates and reads": lambda f, kb: _hit(",".join(str(g[k]) for g in f["gpus.list"] for k in g)),
    "compares GPUs": lambda f, kb: _hit(str(f["gpus.list"][0] == {**f["gpus.list"][0], "uuid": "GPU-a-0"})),
    "compares from a plain dict": lambda f, kb: _hit(str(dict(base_doc(None)["facts"]["gpus.list"]["value"][0], uuid="GPU-a-0") == f["gpus.list"][0])),
    "finds in the list": lambda f, kb: _hit(str(dict(base_doc(None)["facts"]["gpus.list"]["value"][0], uuid="GPU-a-0") in f["gpus.list"])),
    "reads the fact": lambda f, kb: _hit(f.fact("gpus.list").value[0]["uuid"]),
    "changes a GPU and reads it back": lambda f, kb: _hit(str(g.setdefault("uuid", "none")) if (g := f["gpus.list"][0]) else ""),
}


@pytest.mark.parametrize("how", sorted(SEES_THE_UUID))
def test_a_rule_that_sees_a_gpus_uuid_is_not_reused_across_uuids(tmp_path, test_kb, how):
    rule, calls = counting_rule("gpu-mig-enabled", SEES_THE_UUID[how])
    docs = [with_uuids(base_doc(f"n-{i}"), "a" if i in (0, 2) else str(i)) for i in range(4)]
    outcomes, runs = rule_runs(rule, docs, test_kb)
    for cached, own in outcomes:
        assert cached == own, how
    assert outcomes[0][0] != outcomes[1][0] or how in ("compares GPUs", "compares from a plain dict", "finds in the list"), how
    # No Fields is left in what the cache hands out or keeps.
    from fwdoctor.fleet.judging import Fields

    def walk(value):
        assert not isinstance(value, Fields), how
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)
    for (findings, _), _own in outcomes:
        for finding in findings:
            walk(dict(finding.evidence))
    # ... and the whole fleet reports what each node reports alone.
    folder = tmp_path / "fleet"
    for index, doc in enumerate(docs):
        write(folder, f"n-{index}.facts.json", doc)
    from fwdoctor.fleet.report import build as build_report

    rows = {row.name: row for row in build_report([str(folder)], test_kb, rules=[rule]).rows}
    for index, doc in enumerate(docs):
        folder = tmp_path / f"alone-{index}"
        write(folder, "n.facts.json", doc)
        (own,) = build_report([str(folder)], test_kb, rules=[rule]).rows
        assert rows[f"n-{index}"].findings == own.findings, how


# Each reads only fields the nodes share (or how many GPUs there are): reused across UUIDs.
SEES_NO_UUID = {
    "names": lambda f, kb: _hit(",".join(g["name"] for g in f["gpus.list"])),
    "gets with a default": lambda f, kb: _hit(str([g.get("serial", "none") for g in f["gpus.list"]])),
    "asks in": lambda f, kb: _hit(str(["serial" in g for g in f["gpus.list"]])),
    "counts": lambda f, kb: _hit(str(len(f["gpus.list"]))),
    "known and why": lambda f, kb: _hit(f"{f.known('gpus.list')} {f.why('gpus.list')}"),
    "a missing field": lambda f, kb: _hit(str(f["gpus.list"][0]["serial"])),  # KeyError: not checked alike on each
    "isinstance": lambda f, kb: _hit(str([isinstance(g, dict) and g.get("cc") for g in f["gpus.list"]])),
}


@pytest.mark.parametrize("how", sorted(SEES_NO_UUID))
def test_a_rule_that_reads_fields_the_nodes_share_is_reused_across_uuids(test_kb, how, monkeypatch):
    from fwdoctor.rules.base import RAISE_RULE_ERRORS_ENV

    monkeypatch.delenv(RAISE_RULE_ERRORS_ENV, raising=False)
    rule, calls = counting_rule("gpu-mig-enabled", SEES_NO_UUID[how])
    docs = [with_uuids(base_doc(f"n-{i}"), str(i)) for i in range(4)]
    if how == "a missing field":
        from fwdoctor.fleet.judging import Fingerprints, RuleCache
        from fwdoctor.model import Facts

        cache = RuleCache(test_kb)
        for doc in docs:
            facts = Facts.from_json(doc)
            with pytest.raises(KeyError):
                cache.rules([rule], Fingerprints(facts))[0].evaluate(facts, test_kb)
        return
    outcomes, runs = rule_runs(rule, docs, test_kb)
    assert all(cached == own for cached, own in outcomes), how
    assert runs == 1, how


def test_an_error_a_rule_raises_on_a_gpu_reads_as_on_the_nodes_own_facts(test_kb):
    """What a rule raises is what it raises on the node's facts: its message names a dict,
    never the view the cache hands the rule."""
    from fwdoctor.fleet.judging import Fingerprints, RuleCache
    from fwdoctor.model import Facts

    def compares(facts):
        gpus = facts["gpus.list"]
        return gpus[0] < gpus[1]

    facts = Facts.from_json(base_doc("a"))
    with pytest.raises(TypeError) as own:
        compares(facts)
    with pytest.raises(TypeError) as cached:
        RuleCache(test_kb).call("compares", compares, facts, Fingerprints(facts))
    assert str(cached.value) == str(own.value) and "'dict'" in str(own.value)


def test_the_copies_the_json_and_dict_constructors_make_of_a_gpu_read_it_whole():
    """Fields' promise: dict(), {**}, update(), | and the json encoder reach its contents
    through methods it overrides, never its storage directly."""
    from fwdoctor.fleet.judging import Fields, Reads
    from fwdoctor.model import Fact, Facts

    ways = [dict, lambda g: {**g}, lambda g: {}.update(g), lambda g: {} | g, lambda g: g | {}, json.dumps,
            lambda g: json.dumps(g, indent=1), lambda g: json.dumps(g, sort_keys=True), copy.copy, copy.deepcopy,
            lambda g: list(g), len, bool, repr, str, lambda g: f"{g}", lambda g: g == {}, lambda g: {} == g,
            lambda g: {} != g, lambda g: sorted(g), lambda g: [*g], lambda g: set(g.keys()), lambda g: g.items()]
    for way in ways:
        reads = Reads(Facts([Fact("gpus.list", [{"uuid": "a", "name": "b"}])]))
        (gpu,) = reads["gpus.list"]
        assert isinstance(gpu, Fields) and isinstance(gpu, dict)
        assert reads.seen == []
        way(gpu)
        assert set(reads.seen) == {"gpus.list"}, way


def test_a_fleet_whose_gpus_differ_reports_what_judging_each_node_in_full_gives(tmp_path, shipped_kb):
    """Every rule, the shipped KB (its GPU families make the driver rule read each GPU):
    UUIDs differ on every node, and some nodes have a GPU renamed, one fewer, or a field
    more or less; each row is judged as the node's own facts judged alone."""
    import random

    from fwdoctor.engine import judge
    from fwdoctor.fleet import node as nd
    from fwdoctor.fleet.report import build as build_report
    from fwdoctor.model import Facts
    from fwdoctor.rules import RULES

    rng = random.Random(30)
    folder = tmp_path / "fleet"
    docs = {}
    for index in range(36):
        doc = with_uuids(base_doc(f"n-{index:02d}", f"2026-12-01T10:{index:02d}:00Z"), str(index))
        gpus = doc["facts"]["gpus.list"]["value"]
        change = index % 6
        if change == 1:
            gpus[rng.randrange(len(gpus))].update(name=rng.choice(("Tesla K80", "NVIDIA A100-SXM4-80GB")), cc=rng.choice(("3.7", "8.0")))
        elif change == 2:
            del gpus[rng.randrange(len(gpus))]
        elif change == 3:
            gpus[0]["serial"] = str(index)
        elif change == 4:
            del gpus[1]["cc"]
        docs[f"n-{index:02d}"] = doc
        write(folder, f"n-{index:02d}.facts.json", doc)
    rows = {row.name: row for row in build_report([str(folder)], shipped_kb).rows}
    assert len(rows) == len(docs)
    for name, doc in docs.items():
        facts = Facts.from_json(doc)
        report = judge(facts, shipped_kb, list(RULES))
        assert rows[name].findings == nd.findings_of(report), name
        assert (rows[name].cells, rows[name].not_checked) == (nd.fact_cells(facts, shipped_kb), report.not_run), name
    assert len({tuple(r.findings) for r in rows.values()}) > 2  # the GPUs' changes show
