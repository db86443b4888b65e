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
