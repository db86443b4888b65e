"""Each node type's normal (issue 27, item 4): the KB's rows per GPU model (nodetypes.yaml),
`fleet baseline` learning medians per node type from facts and smoke documents, and
`gate --baseline` naming the expected value where a node differs from its type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fwdoctor.fleet import baseline
from fwdoctor.kb import KB, KBError

TESTS = Path(__file__).resolve().parent
ROOTS = TESTS / "roots"
SMOKE = TESTS / "data" / "fleet-report" / "smoke-kernel-cpu.json"


def facts_doc(cli, root: str, host: str) -> dict:
    doc = json.loads(cli("facts", "--root", str(ROOTS / root)).stdout)
    doc["host"] = {"name": host, "source": "test"}
    return doc


def smoke_doc(host: str, tflops: float) -> dict:
    doc = json.loads(SMOKE.read_text())
    doc["host"] = {"name": host, "source": "test"}
    for result in doc["results"]:
        result["test"], result["details"]["name"], result["details"]["gemm_tflops"] = "kernel cuda:0", "NVIDIA H100 PCIe", tflops
    return doc


@pytest.fixture
def fleet(cli, use_test_kb, tmp_path) -> Path:
    """Four H100 PCIe nodes: three healthy, dgx-0004 trained at x8; GEMM 600, 610, 590, 400."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    for i, (root, tflops) in enumerate((("hw-healthy", 600.0), ("hw-healthy", 610.0), ("hw-healthy", 590.0), ("hw-degraded", 400.0)), 1):
        (folder / f"dgx-{i:04d}.json").write_text(json.dumps(facts_doc(cli, root, f"dgx-{i:04d}")))
        (folder / f"dgx-{i:04d}.smoke.json").write_text(json.dumps(smoke_doc(f"dgx-{i:04d}", tflops)))
    (folder / "broken.json").write_text("{not json")
    return folder


def test_the_kb_rows_load_with_their_sources_and_answer_by_device_id():
    rows = KB().nodetypes
    h100 = rows.for_gpu(None, "0x2330")
    assert (h100.name, h100.pcie_gen, h100.pcie_width, h100.nvlinks) == ("NVIDIA H100 80GB HBM3", 5, 16, 18)
    assert rows.for_gpu("NVIDIA A100-SXM4-80GB").nvlinks == 12
    assert rows.for_gpu("NVIDIA H100 PCIe").nvlinks is None  # NVLink bridges are optional on PCIe cards
    assert rows.for_gpu("NVIDIA GeForce RTX 4090") is None  # no data: not judged


def test_a_bad_kb_row_names_its_place(tmp_path):
    for name in ("sources.yaml",):
        (tmp_path / name).write_text((Path(KB().directory) / name).read_text())
    (tmp_path / "nodetypes.yaml").write_text("node_types:\n  - {name: X, pci_device_id: '0x2330', pcie_gen: 9, pcie_width: 16, source: S-H100-DS}\n")
    with pytest.raises(KBError, match=r"nodetypes.yaml: node_types\[0\]: pcie_gen 9"):
        KB(tmp_path).nodetypes


def test_the_baseline_is_the_median_of_each_type_and_one_bad_file_costs_one_row(fleet):
    doc = baseline.learn([str(fleet)])
    assert doc["types"] == {"NVIDIA H100 PCIe": {"nodes": 4, "gpus": 2, "pcie_width": 16, "pcie_gen": 5, "gemm_tflops": 595.0}}
    assert [b["file"] for b in doc["bad"]] == [str(fleet / "broken.json")]


def test_fleet_baseline_writes_what_gate_reads(cli, fleet, tmp_path):
    out = tmp_path / "baseline.yaml"
    result = cli("fleet", "baseline", str(fleet), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(out.read_text())["types"]["NVIDIA H100 PCIe"]["pcie_width"] == 16
    loaded = baseline.load_baseline(str(out))
    assert loaded["types"]["NVIDIA H100 PCIe"]["nodes"] == 4


def test_gate_with_the_baseline_names_the_types_normal(cli, fleet, tmp_path):
    out = tmp_path / "baseline.yaml"
    cli("fleet", "baseline", str(fleet), "--out", str(out))
    body = json.loads(cli("gate", "--facts", str(fleet / "dgx-0004.json"), "--baseline", str(out), "--json").stdout)
    differs = [c["message"] for c in body["causes"] if c["id"] == "node-differs-from-type"]
    assert differs == [f"GPU 0000:04:00.0 PCIe width x8, the type's normal is x16 (baseline {out}: NVIDIA H100 PCIe, median of 4 nodes)"]
    healthy = json.loads(cli("gate", "--facts", str(fleet / "dgx-0001.json"), "--baseline", str(out), "--json").stdout)
    assert not [c for c in healthy["causes"] if c["id"] == "node-differs-from-type"]


def test_without_a_baseline_the_kb_row_is_the_normal(cli, use_test_kb):
    body = json.loads(cli("gate", "--root", str(ROOTS / "hw-degraded"), "--json").stdout)
    differs = [c["message"] for c in body["causes"] if c["id"] == "node-differs-from-type"]
    assert differs == ["GPU 0000:04:00.0 PCIe width x8, the type's normal is x16 (the KB's NVIDIA H100 PCIe row)"]


def test_a_gemm_below_the_types_median_less_the_margin_is_named(fleet):
    from fwdoctor.engine import judge
    from fwdoctor.model import Fact, Facts
    from fwdoctor.rules.hardware import node_differs_from_type

    expected = {"gemm_tflops": 595.0, "gemm_floor": 535.5, "from": "baseline b.yaml: NVIDIA H100 PCIe, median of 4 nodes"}
    facts = Facts([Fact("node.expected", expected, source="t"), Fact("smoke.gemm_tflops", 400.0, source="t")])
    (hit,) = judge(facts, None, [node_differs_from_type]).findings
    assert hit.message == "GEMM 400 TFLOP/s, below 535.5 (the type's median 595.0 less the policy's margin; baseline b.yaml: NVIDIA H100 PCIe, median of 4 nodes)"
    facts = Facts([Fact("node.expected", expected, source="t"), Fact("smoke.gemm_tflops", 580.0, source="t")])
    assert judge(facts, None, [node_differs_from_type]).findings == []


def test_a_file_that_is_no_baseline_is_refused_naming_it(cli, tmp_path):
    bad = tmp_path / "b.yaml"
    bad.write_text("types: [1, 2]\n")
    result = cli("gate", "--facts", str(bad), "--baseline", str(bad))
    assert result.exit_code == 2 and "not a `fwdoctor fleet baseline` file" in result.output
