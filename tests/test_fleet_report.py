"""`fwdoctor fleet report`: reading documents, drift, cross-node rules, text/markdown/JSON.

The fleets are built from real documents (tests/data/fleet-report/README.md says where
each came from) by the generator of benchmarks/fleet_report.py: 1,000 nodes, each with a
facts file and a smoke document, four of them odd (driver 550 on node-0417, NCCL 2.27.3
on node-0100, a GPU missing on node-0200, a slow all-reduce on node-0300). Every command
judges with the frozen tests/kb.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
from pathlib import Path

import pytest

from conftest import DATA, TEST_KB_DIR

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "fleet_report.py"
FLEET_DATA = DATA / "fleet-report"


def load_generator():
    spec = importlib.util.spec_from_file_location("fleet_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fleet_bench"] = module
    spec.loader.exec_module(module)
    return module


gen = load_generator()


def fleet_cli(*args: str):
    """`fwdoctor -q fleet report ARGS --kb tests/kb` in-process: (exit code, stdout, stderr)."""
    from click.testing import CliRunner

    from fwdoctor.cli import main

    result = CliRunner().invoke(main, ["-q", "fleet", "report", *args, "--kb", str(TEST_KB_DIR)], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def thousand(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fleet") / "nodes"
    gen.write_fleet(folder, 1000)
    return folder


@pytest.fixture(scope="module")
def thousand_text(thousand):
    return fleet_cli(str(thousand))


@pytest.fixture(scope="module")
def thousand_json(thousand):
    code, out, _ = fleet_cli(str(thousand), "--format", "json")
    return code, json.loads(out)


def facts_doc(name: str | None = "node-x", **changes) -> dict:
    doc = json.loads((FLEET_DATA / "facts-h100x8-r580.json").read_text())
    if name is not None:
        doc["host"] = {"name": name, "source": "/etc/hostname"}
    for key, value in changes.items():
        doc[key] = value
    return doc


def write(path: Path, doc) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


# ----------------------------------------------------------------------------- 1,000 nodes
def test_a_thousand_node_fleet_reports_its_four_odd_nodes_grouped_in_text(thousand_text):
    code, out, _ = thousand_text
    assert code == 1  # node-0417's own errors and the NCCL split
    lines = out.splitlines()
    assert lines[0] == "fwdoctor 0.1.0 fleet report: 1000 node(s) from 2000 document(s); 3 error(s), 4 warning(s), 0 info"
    drift = lines[lines.index("Drift: 996 of 1000 nodes alike") + 1:][:5]
    assert drift == [
        "  driver       node-0417: 550.163.01; the rest (999) 580.95.05",
        "  driver CUDA  node-0417: 12.4; the rest (999) 13.0",
        "  NCCL         node-0100: 2.27.3; the rest (999) 2.30.7",
        "  GPUs         node-0200: 7; the rest (999) 8",
        "  same on every node that says: toolkit 13.0.88, torch 2.14.1+cu130, cuDNN 9.24.0, GPU NVIDIA H100 80GB HBM3, "
        "kernel smoke pass, conv2d pass, AMP pass",
    ]
    start = lines.index("[error] Across the nodes of a fleet (`fwdoctor fleet report`)")
    assert lines[start + 1:start + 6] == [
        "  error fleet-nccl-differs: NCCL differs across nodes: node-0100: 2.27.3; the rest (999) 2.30.7",
        "  warn  fleet-driver-branch-differs: driver branch differs across nodes: node-0417: 550; the rest (999) 580",
        "  warn  fleet-cuda-differs: driver CUDA differs across nodes: node-0417: 12.4; the rest (999) 13.0",
        "  warn  fleet-gpu-count-differs: GPUs differs across nodes: node-0200: 7; the rest (999) 8",
        "  warn  fleet-smoke-slow: node-0300: all-reduce busbw 30 GB/s is below 0.8 x the median of its 999 peers "
        "(180 GB/s; nccl, 16 ranks, 2 node(s))",
    ]
    # node-0417's own checks (check --facts on its facts): its driver cannot run CUDA 13.0.
    assert "        on 1 node(s): node-0417" in lines
    assert any(line.startswith("  error driver-too-old-for-torch: torch 2.14.1+cu130") for line in lines)
    assert "Named by file name" not in out and "could not be used" not in out


def test_a_thousand_node_fleet_in_json_flags_exactly_the_odd_nodes(thousand_json):
    code, doc = thousand_json
    assert code == 1 and doc["kind"] == "fleet" and doc["schema_version"] == 1 and doc["exit_code"] == 1
    assert doc["summary"] == {"nodes": 1000, "documents": 2000, "alike": 996, "unreadable": 0, "error": 3, "warning": 4, "info": 0}
    flagged = {f["id"]: f["evidence"]["nodes"] for f in doc["findings"]}
    assert flagged == {
        "fleet-nccl-differs": ["node-0100"],
        "fleet-driver-branch-differs": ["node-0417"],
        "fleet-cuda-differs": ["node-0417"],
        "fleet-gpu-count-differs": ["node-0200"],
        "fleet-smoke-slow": ["node-0300"],
    }
    assert {f["id"]: f["code"] for f in doc["findings"]}["fleet-smoke-slow"] == "FWD966"
    assert doc["not_checked"] == []
    odd = {n["name"]: sorted(n["odd"]) for n in doc["nodes"] if n["odd"]}
    assert odd == {"node-0100": ["nccl"], "node-0200": ["gpu_count"], "node-0300": ["busbw"], "node-0417": ["driver", "driver_cuda"]}
    with_findings = {n["name"]: sorted(f["id"] for f in n["findings"]) for n in doc["nodes"] if n["findings"]}
    assert with_findings == {"node-0417": ["driver-too-old-for-toolkit", "driver-too-old-for-torch"]}
    nccl = next(d for d in doc["drift"] if d["column"] == "nccl")
    assert nccl == {"column": "nccl", "title": "NCCL", "majority": "2.30.7", "majority_nodes": 999, "has_majority": True,
                    "unknown": 0, "minorities": [{"value": "2.27.3", "nodes": ["node-0100"]}]}
    first = doc["nodes"][0]  # facts and smoke of one node merged into one row
    assert first["name"] == "node-0000" and first["named_by"] == "host.name" and len(first["files"]) == 2
    assert first["values"]["driver"] == "580.95.05" and first["values"]["busbw"] == "177"
    assert first["values"]["gemm"] == "695" and first["values"]["kernel"] == "pass"


def test_markdown_puts_the_drift_in_a_table(thousand):
    code, out, _ = fleet_cli(str(thousand), "--format", "markdown")
    assert code == 1
    # values from the nodes' documents only inside code spans (issue 24: no link, HTML or @mention)
    assert "| NCCL | `node-0100`: `2.27.3` | 999 x `2.30.7` |" in out.splitlines()
    assert "- **error** `fleet-nccl-differs`: `NCCL differs across nodes: node-0100: 2.27.3; the rest (999) 2.30.7`" in out


def test_many_odd_nodes_are_listed_up_to_max_listed_then_counted(tmp_path):
    for i in range(12):
        driver = "550.163.01" if i < 5 else "580.95.05"
        doc = facts_doc(f"n{i:02d}")
        doc["facts"]["driver.version"]["value"] = driver
        write(tmp_path / f"n{i}.json", doc)
    _, out, _ = fleet_cli(str(tmp_path), "--max-listed", "3")
    # Folded into a Slurm hostlist range (issue 27): n00..n04 are one group.
    assert "  driver    n[00-04]: 550.163.01; the rest (7) 580.95.05" in out.splitlines()
    for i, prefix in enumerate("abcde"):  # five groups that do not fold: three shown, then counted
        doc = facts_doc(f"{prefix}x{i}")
        doc["facts"]["driver.version"]["value"] = "535.129.03"
        write(tmp_path / f"{prefix}.json", doc)
    _, out, _ = fleet_cli(str(tmp_path), "--max-listed", "3")
    assert "ax0,bx1,cx2 (+2 more groups): 535.129.03" in out


# ----------------------------------------------------------------------------- inputs
def test_bad_inputs_are_named_one_per_file_and_the_good_nodes_still_reported(tmp_path):
    write(tmp_path / "good.json", facts_doc("good-node"))
    write(tmp_path / "garbage.json", "{not json")
    write(tmp_path / "plan.json", {"schema_version": 1, "kind": "plan", "steps": []})
    write(tmp_path / "list.json", [1, 2])
    os.mkfifo(tmp_path / "fifo.json")
    write(tmp_path / "lines.jsonl", json.dumps(facts_doc("line-node")) + "\nnot json either\n")
    code, out, _ = fleet_cli(str(tmp_path), str(tmp_path / "absent.json"))
    assert code == 2
    lines = out.splitlines()
    start = lines.index("Inputs that could not be used: 6")
    assert sorted(lines[start + 1:start + 7]) == sorted([
        f"  {tmp_path}/fifo.json: not a regular file (a FIFO)",
        f"  {tmp_path}/garbage.json: not JSON (Expecting property name enclosed in double quotes at line 1 column 2)",
        f"  {tmp_path}/lines.jsonl:2: not JSON (Expecting value at line 1 column 1)",
        f"  {tmp_path}/list.json: a JSON list, not an fwdoctor document (an object)",
        f"  {tmp_path}/plan.json: kind 'plan': fleet report reads facts, check, smoke-suite and smoke documents",
        f"  {tmp_path / 'absent.json'}: no such file or folder",
    ])
    assert "2 node(s) from 2 document(s)" in lines[0]
    assert "Traceback" not in out


def test_a_file_over_the_size_cap_is_refused_naming_it(tmp_path, monkeypatch):
    from fwdoctor.fleet import documents

    monkeypatch.setattr(documents, "MAX_DOCUMENT_BYTES", 1024 * 1024)
    write(tmp_path / "big.json", json.dumps(facts_doc("big")) + " " * (1024 * 1024))
    code, out, _ = fleet_cli(str(tmp_path / "big.json"))
    assert code == 2
    assert f"  {tmp_path}/big.json: too big (over 1 MiB); is this the right file?" in out.splitlines()


def test_documents_without_a_host_name_fall_back_to_the_file_name_and_say_so(tmp_path):
    write(tmp_path / "gpu-a.json", facts_doc(None))
    write(tmp_path / "gpu-b.json", facts_doc("gpu-b.example"))
    code, out, _ = fleet_cli(str(tmp_path), "--json")
    doc = json.loads(out)
    assert {n["name"]: n["named_by"] for n in doc["nodes"]} == {
        "gpu-a": "file name (the document has no host.name)", "gpu-b.example": "host.name"}
    _, text, _ = fleet_cli(str(tmp_path))
    assert "Named by file name (no host.name in the document; older fwdoctor): 1 node(s): gpu-a" in text


def test_a_jsonl_file_holds_one_node_per_line(tmp_path):
    lines = [json.dumps(facts_doc(f"j{i}")) for i in range(3)]
    write(tmp_path / "fleet.jsonl", "\n".join(lines) + "\n\n")
    code, out, _ = fleet_cli(str(tmp_path / "fleet.jsonl"), "--json")
    assert code == 0
    assert [n["name"] for n in json.loads(out)["nodes"]] == ["j0", "j1", "j2"]


def test_the_newest_document_of_a_node_wins_whatever_the_reading_order(tmp_path):
    old = facts_doc("n1", collected_at="2026-11-01T00:00:00Z")
    old["facts"]["driver.version"]["value"] = "550.163.01"
    new = facts_doc("n1", collected_at="2026-12-01T00:00:00Z")
    for first, second in ((old, new), (new, old)):
        write(tmp_path / "a.json", first)
        write(tmp_path / "b.json", second)
        _, out, _ = fleet_cli(str(tmp_path), "--json")
        (node,) = json.loads(out)["nodes"]
        assert node["values"]["driver"] == "580.95.05" and len(node["files"]) == 2


def test_real_smoke_reports_fill_the_smoke_columns(tmp_path):
    suite = json.loads((FLEET_DATA / "smoke-all-gloo-cpu.json").read_text())
    suite["host"] = {"name": "vm", "source": "/etc/hostname"}
    kernel = json.loads((FLEET_DATA / "smoke-kernel-cpu.json").read_text())  # host vm, collected after the suite
    write(tmp_path / "suite.json", suite)
    write(tmp_path / "kernel.json", kernel)
    code, out, _ = fleet_cli(str(tmp_path), "--json")
    (node,) = json.loads(out)["nodes"]
    values = node["values"]
    # The suite's check (its facts): no GPU on that machine, torch from the venv.
    assert values["torch"] == "2.14.1+cu130" and values["gpu_count"] == "0" and values["driver"] == "none loaded"
    # The real gloo run: 2 ranks, average busbw 0.3587 GB/s; the newer CPU kernel run with
    # its fp32 GEMM figure (the suite's own kernel part was a skip: no GPU).
    assert values["busbw"] == "0.3587" and node["figures"]["busbw"] == pytest.approx(0.3586577827520567)
    assert (values["kernel"], values["conv2d"], values["amp"], values["gemm"]) == ("pass", "pass", "pass", "0.0518")
    assert node["figures"]["gemm"] == 0.0518 and len(node["files"]) == 2
    assert code == 0


def test_the_fast_facts_reader_agrees_with_facts_from_json():
    from fwdoctor.fleet.node import read_facts
    from fwdoctor.model import Facts

    doc = facts_doc("n")
    assert read_facts(doc).to_json() == Facts.from_json(doc).to_json()
    deep: dict = {"v": 1}
    for _ in range(40):
        deep = {"x": deep}
    for bad in ({"facts": {"a": deep}}, {"facts": {"a": 3}}, {"facts": {"a": {"source": "s"}}}, {"facts": []},
                {"facts": {}, "probe_failures": [{"reason": "r"}]}, {"facts": {}, "host": {"name": 7}},
                {"facts": {}, "collected_at": "yesterday"}):
        with pytest.raises(ValueError) as mine:
            read_facts(bad)
        with pytest.raises(ValueError) as theirs:
            Facts.from_json(bad)
        assert str(mine.value) == str(theirs.value)


def test_hostile_host_names_are_printed_inert(tmp_path):
    write(tmp_path / "a.json", facts_doc("evil\x1b[2J\nnode"))
    _, out, _ = fleet_cli(str(tmp_path), "--json")
    assert json.loads(out)["nodes"][0]["name"] == "evil\\x1b[2J\\x0anode"


# ----------------------------------------------------------------------------- rules
def test_slow_is_below_0_8_times_the_median_of_at_least_three_comparable_nodes():
    from fwdoctor.fleet.node import NodeRow
    from fwdoctor.fleet.rules import Fleet, median_without, smoke_slow

    def rows(values, group="nccl, 16 ranks, 2 node(s)"):
        return [NodeRow(f"n{i}", "host.name", figures={"busbw": v}, peer_group={"busbw": group}) for i, v in enumerate(values)]

    findings, skipped = smoke_slow.evaluate(Fleet(rows([100.0, 40.0])))
    assert findings == [] and "at least 3" in skipped.reason  # two nodes: no peers to speak of
    findings, _ = smoke_slow.evaluate(Fleet(rows([100.0, 100.0, 80.0, 79.9])))  # 80 = 0.8 x 100: not below
    assert [f.evidence["nodes"] for f in findings] == [["n3"]]
    mixed = rows([100.0, 100.0, 100.0]) + rows([10.0, 10.0, 10.0], group="gloo, 2 ranks, 1 node(s)")
    assert smoke_slow.evaluate(Fleet(mixed))[0] == []  # other backends are not peers
    values = sorted([3.0, 1.0, 4.0, 1.5, 9.0, 2.6])
    for i in range(len(values)):
        assert median_without(values, i) == statistics.median(values[:i] + values[i + 1:])


def test_fleet_rules_are_not_checked_when_fewer_than_two_nodes_say(tmp_path):
    write(tmp_path / "one.json", facts_doc("only"))
    code, out, _ = fleet_cli(str(tmp_path), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["findings"] == []
    assert {n["rule"] for n in doc["not_checked"]} == {
        "fleet-nccl-differs", "fleet-torch-differs", "fleet-driver-branch-differs", "fleet-cuda-differs",
        "fleet-gpu-model-differs", "fleet-gpu-count-differs", "fleet-smoke-slow"}


def test_explain_documents_the_fleet_rules(cli):
    out = cli("explain", "FWD966").output
    assert out.startswith("fleet-smoke-slow (FWD966, default severity warning, area fleet)")
    assert "below 0.8 x the median of its peers'" in out
    assert "Mismatched NCCL version detected" in cli("explain", "fleet-nccl-differs").output


# ----------------------------------------------------------------------------- output
def test_out_writes_the_report_atomically_and_replaces_an_old_one(tmp_path):
    write(tmp_path / "in" / "a.json", facts_doc("a"))
    target = tmp_path / "out" / "fleet.json"
    target.parent.mkdir()
    target.write_text("old")
    code, out, _ = fleet_cli(str(tmp_path / "in"), "--json", "--out", str(target))
    assert code == 0 and out == ""
    assert json.loads(target.read_text())["summary"]["nodes"] == 1
    assert sorted(p.name for p in target.parent.iterdir()) == ["fleet.json"]  # no temporary left
    code, _, err = fleet_cli(str(tmp_path / "in"), "--out", str(tmp_path / "nowhere" / "x.html"))
    assert code == 2 and "is not a writable folder" in err


def test_nothing_readable_is_exit_2_with_a_reason(tmp_path):
    write(tmp_path / "x.json", "[]")
    code, out, err = fleet_cli(str(tmp_path / "x.json"))
    assert code == 2
    assert "Nothing to report: no facts, check or smoke document was read." in out
    assert "no facts, check or smoke document could be read" in err


def test_a_check_json_document_is_read_as_the_nodes_facts(tmp_path, cli, use_test_kb):
    facts = write(tmp_path / "facts" / "gpu-7.json", facts_doc("gpu-7"))
    checked = cli("check", "--facts", str(facts), "--json")
    write(tmp_path / "in" / "gpu-7.check.json", checked.stdout)
    assert json.loads(checked.stdout)["kind"] == "check"
    code, out, _ = fleet_cli(str(tmp_path / "in"), "--json")
    (node,) = json.loads(out)["nodes"]
    assert node["values"]["driver"] == "580.95.05" and node["values"]["nccl"] == "2.30.7"
    assert node["name"] == "gpu-7" and node["named_by"] == "host.name"  # check --json carries the facts' host
