"""The fleet report answers "which nodes do I act on" (issue 27, item 6): the drain list first
with each cause, node names folded into Slurm hostlist ranges (python-hostlist as the
oracle), the findings column counting every finding that is a node's own (its failed smoke
tests included), the filter to odd or failing rows and the sticky node column, at 300 nodes
in Debian's chromium (tests/test_fleet_html.py's setup)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from fwdoctor.fleet.hostlist import fold, folded

from test_fleet_html import ARGS, CHROMIUM, browser
from test_fleet_report import fleet_cli, gen

DRIVER_OLD = ("node-0055", "node-0056", "node-0057", "node-0058", "node-0060")
SMOKE_FAILED = "node-0120"
ILLEGAL = "CUDA error: an illegal memory access was encountered"
SHOT = Path("/tmp/fwdoctor-fleet-300.png")


# ----------------------------------------------------------------------------- hostlist
def test_names_fold_into_slurm_ranges():
    assert fold(["dgx-0055", "dgx-0056", "dgx-0057", "dgx-0058", "dgx-0060"]) == "dgx-[0055-0058,0060]"
    assert fold(["n9", "n10", "n11", "login"]) == "n[9-11],login"
    assert fold(["gpu099", "gpu100"]) == "gpu[099-100]"
    assert fold(["node1-ib", "node2-ib"]) == "node[1-2]-ib"
    assert folded([f"a{i}" for i in range(0, 20, 2)] + ["b1", "c1", "d1"], 2) == "a[0,2,4,6,8,10,12,14,16,18],b1 (+2 more groups)"


def test_folding_expands_back_to_the_same_names_by_python_hostlist():
    from conftest import require_module

    hostlist = require_module("hostlist", "pip install python-hostlist")
    rng = random.Random(27)
    for _ in range(500):
        names = [rng.choice(["dgx-", "gpu", "n", "rack1-"]) + f"{rng.randint(0, 1200):0{rng.choice([1, 3, 4])}d}"
                 for _ in range(rng.randint(1, 60))]
        assert sorted(set(hostlist.expand_hostlist(fold(names)))) == sorted(set(names)), names


# ----------------------------------------------------------------------------- 300 nodes
@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fleet-300") / "nodes"
    gen.write_fleet(folder, 300)
    base = json.loads(gen.FACTS.read_text())
    for name in DRIVER_OLD:  # a driver too old for torch's CUDA: each node's own error
        doc = gen.odd_facts(base, gen.ODD_DRIVER)
        doc["host"] = {"name": name, "source": "/etc/hostname"}
        (folder / f"{name}.facts.json").write_text(json.dumps(doc))
    smoke = json.loads((folder / f"{SMOKE_FAILED}.smoke.json").read_text())
    smoke["results"][3].update(status="fail", message=f"GPU 3: {ILLEGAL}", error=ILLEGAL)
    (folder / f"{SMOKE_FAILED}.smoke.json").write_text(json.dumps(smoke))
    return folder


def test_text_and_markdown_list_the_nodes_to_drain_first_with_their_cause(fleet):
    code, out, _ = fleet_cli(str(fleet))
    lines = out.splitlines()
    assert code == 1 and lines[2] == "Nodes to act on (drain): 6"
    assert lines[3].startswith("  node-[0055-0058,0060]: driver-too-old-for-torch: ")
    assert lines[4] == f"  {SMOKE_FAILED}: smoke-failed: kernel gpu3: GPU 3: {ILLEGAL}"
    assert lines.index("Nodes to act on (drain): 6") < lines.index("Drift: 292 of 300 nodes alike")
    assert any(line == "        on 5 node(s): node-[0055-0058,0060]" for line in lines)
    _, markdown, _ = fleet_cli(str(fleet), "--format", "markdown")
    assert "### Nodes to act on (drain)\n\n- `node-[0055-0058,0060]`: `driver-too-old-for-torch: " in markdown
    _, body, _ = fleet_cli(str(fleet), "--format", "json")
    act = json.loads(body)["act_on"]
    assert [(a["hostlist"], len(a["nodes"])) for a in act] == [("node-[0055-0058,0060]", 5), (SMOKE_FAILED, 1)]


@pytest.mark.slow
def test_in_chromium_300_nodes_drain_list_first_filter_sticky_column_and_own_findings(fleet, tmp_path):
    page = tmp_path / "fleet.html"
    fleet_cli(str(fleet), "--format", "html", "--out", str(page))
    with browser() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            view = chromium.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            view.on("pageerror", lambda e: errors.append(str(e)))
            view.goto(page.as_uri())
            view.wait_for_selector("#matrix[data-ready='1']")
            assert view.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent)")[0] == "Nodes to act on (drain)"
            act = view.eval_on_selector_all("#act-on li", "lis => lis.map(li => li.textContent)")
            assert act[0].startswith("drain node-[0055-0058,0060]: driver-too-old-for-torch: ")
            assert act[1] == f"drain {SMOKE_FAILED}: smoke-failed: kernel gpu3: GPU 3: {ILLEGAL}"
            row = view.locator("#matrix tbody tr", has=view.locator(f"th:text-is('{SMOKE_FAILED}')"))
            cell = row.locator("td").last
            assert cell.text_content() == "error (1)" and ILLEGAL in cell.get_attribute("title")  # was "ok"
            total = view.locator("#matrix tbody tr").count()
            flagged = view.locator("#matrix tbody tr[data-flag]").count()
            assert total == 300 and 6 < flagged < 20
            view.locator("#only-odd").check()
            visible = view.eval_on_selector_all("#matrix tbody tr", "rows => rows.filter(r => r.offsetParent !== null).length")
            assert visible == flagged
            view.locator("#only-odd").uncheck()
            # Scrolled far right, the node column is still at the table's left edge.
            view.eval_on_selector("div.wrap", "w => { w.scrollLeft = 5000; w.scrollTop = 2000; }")
            wrap = view.eval_on_selector("div.wrap", "w => w.getBoundingClientRect().left")
            first = view.eval_on_selector_all("#matrix tbody th", "ths => ths.map(t => t.getBoundingClientRect().left)")
            assert all(abs(left - wrap) < 2 for left in first[:5])
            view.eval_on_selector("div.wrap", "w => { w.scrollLeft = 0; w.scrollTop = 0; }")
            view.locator("#only-odd").check()
            view.screenshot(path=str(SHOT), full_page=False)
        finally:
            chromium.close()
    assert errors == []
