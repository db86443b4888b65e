"""The CLI contract: exit codes, one-line errors, JSON shape, facts round-trip, explain."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import TEST_KB_DIR
from fwdoctor.findings import FINDING_KINDS

# Every command here judges with the frozen tests/kb. (docs/findings.md, checked fresh below,
# is rendered from the finding registry alone: no KB row reaches it.)
pytestmark = pytest.mark.usefixtures("use_test_kb")


@pytest.fixture
def empty_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    return root


def test_check_json_has_the_documented_top_level_shape(check_json, empty_root):
    code, report = check_json("--root", str(empty_root))
    assert code in (0, 1)
    assert report["fwdoctor"]
    assert isinstance(report["facts"], dict) and isinstance(report["findings"], list)
    for finding in report["findings"]:
        assert {"id", "severity", "message", "evidence", "fix"} <= set(finding)


def test_an_unreadable_env_file_exits_2_with_one_line(cli, empty_root, tmp_path):
    result = cli("check", "--root", str(empty_root), "--env-file", str(tmp_path / "nope.env"))
    assert result.exit_code == 2
    assert "nope.env" in result.output and "Traceback" not in result.output


def test_a_malformed_env_file_names_its_line(cli, empty_root, tmp_path):
    env = tmp_path / "bad.env"
    env.write_text("PATH=/usr/bin\nnot an assignment\n")
    result = cli("check", "--root", str(empty_root), "--env-file", str(env))
    assert result.exit_code == 2
    assert "bad.env:2" in result.output


def test_garbage_facts_file_exits_2(cli, tmp_path):
    bad = tmp_path / "host.json"
    bad.write_text("{not json")
    result = cli("check", "--facts", str(bad))
    assert result.exit_code == 2 and "not JSON" in result.output


def test_facts_with_the_wrong_shape_exit_2_naming_the_problem(cli, tmp_path):
    bad = tmp_path / "host.json"
    bad.write_text(json.dumps({"facts": {"driver.version": 5}}))
    result = cli("check", "--facts", str(bad))
    assert result.exit_code == 2 and "driver.version" in result.output


def test_saved_facts_rejudge_to_the_same_findings(cli, empty_root, tmp_path):
    saved = cli("facts", "--root", str(empty_root))
    assert saved.exit_code == 0
    path = tmp_path / "host.json"
    path.write_text(saved.output)
    direct = json.loads(cli("check", "--json", "--root", str(empty_root)).output)
    rejudged = json.loads(cli("check", "--json", "--facts", str(path)).output)
    assert [f["id"] for f in rejudged["findings"]] == [f["id"] for f in direct["findings"]]
    assert rejudged["facts"] == direct["facts"]


def test_two_fact_sources_at_once_are_refused(cli, empty_root, tmp_path):
    result = cli("check", "--root", str(empty_root), "--facts", str(tmp_path / "x.json"))
    assert result.exit_code == 2 and "cannot be combined" in result.output


def test_an_unknown_only_id_is_refused(cli):
    result = cli("check", "--only", "no-such-finding")
    assert result.exit_code == 2 and "unknown finding id" in result.output


def test_a_broken_knowledge_base_exits_2_naming_the_file(cli, tmp_path, empty_root):
    kb = tmp_path / "kb"
    shutil.copytree(TEST_KB_DIR, kb, ignore=shutil.ignore_patterns("*.md"))
    (kb / "cuda.yaml").write_text("rows: [unclosed\n")
    result = cli("check", "--kb", str(kb), "--root", str(empty_root))
    assert result.exit_code == 2
    assert "cuda.yaml" in result.output and "Traceback" not in result.output


def test_list_shows_every_finding_id(cli):
    out = cli("list").output
    for kind in FINDING_KINDS:
        assert kind.id in out and kind.code in out


@pytest.mark.parametrize("kind", FINDING_KINDS, ids=lambda k: k.id)
def test_explain_documents_every_finding_in_fixed_sections(cli, kind):
    result = cli("explain", kind.id)
    assert result.exit_code == 0
    for section in ("What it does", "Why is this bad?", "Fix"):
        assert section in result.output, f"{kind.id}: explanation lacks {section!r}"


def test_explain_accepts_codes_and_rejects_unknown_ids(cli):
    assert "driver-missing" in cli("explain", "FWD101").output
    result = cli("explain", "nope")
    assert result.exit_code == 2 and "unknown finding id" in result.output


def test_markdown_output_strips_uuids_and_home_paths():
    from fwdoctor.render.report import scrub

    text = "GPU-5c1a8e2f-1b2c-3d4e-5f60-718293a4b5c6 at /home/alice/venv and /root/.local"
    assert scrub(text) == "<uuid> at /home/<user>/venv and ~/.local"


def test_the_committed_findings_doc_is_fresh():
    from pathlib import Path

    from fwdoctor.render.explain import findings_markdown

    committed = (Path(__file__).resolve().parents[1] / "docs" / "findings.md").read_text()
    assert committed == findings_markdown(), "docs/findings.md is stale: run `make docs`"


def test_against_host_judges_a_rootfs_with_this_hosts_driver_and_gpus(check_json):
    from pathlib import Path

    root = Path(__file__).resolve().parent / "roots" / "torch-driver-too-old"
    env = root / "fixture.env"
    _, alone = check_json("--root", str(root), "--env-file", str(env))
    _, here = check_json("--root", str(root), "--env-file", str(env), "--against-host")
    # The fixture's own /proc says driver 515.76; against this host the driver facts are
    # this machine's (which, in CI, has no NVIDIA driver at all).
    assert alone["facts"]["driver.version"]["value"] == "515.76"
    assert "driver-too-old-for-torch" in {f["id"] for f in alone["findings"]}
    driver = here["facts"]["driver.version"]
    assert driver.get("source", "").startswith("this host: ") or driver.get("why", "").startswith("on this host: ")
    assert here["facts"]["torch.version"] == alone["facts"]["torch.version"]  # the rootfs's own torch


def test_overlay_takes_only_driver_pci_and_gpu_keys_from_the_host():
    from fwdoctor.engine import overlay_host
    from fwdoctor.model import Fact, Facts

    image = Facts([Fact("driver.version", "515.76", "img"), Fact("torch.cuda", "13.0", "img"), Fact("gpus.list", [], "img")])
    host = Facts([Fact("driver.version", "580.95.05", "/proc"), Fact("gpus.list", [{"name": "H100"}], "nvml"), Fact("torch.cuda", None, "host")])
    merged = overlay_host(image, host)
    assert merged["driver.version"] == "580.95.05" and merged.source("driver.version") == "this host: /proc"
    assert merged["gpus.list"] == [{"name": "H100"}]
    assert merged["torch.cuda"] == "13.0"
