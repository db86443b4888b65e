"""`fwdoctor fix` (doctor/cli/recipes.py, recipes/fix.py): plans for current findings, a dry run by default,
--apply with a re-check that fails when the finding remains, and a second apply that has
nothing left to do. The findings come from small stand-in rules (monkeypatched into the
fix command's RULES) whose fix is the real `env` recipe writing into a temp folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fwdoctor.model import FixRef
from fwdoctor.rules.base import Hit, Rule

pytestmark = pytest.mark.usefixtures("use_test_kb")  # `fix` loads the frozen tests/kb


def _rule(finding_id: str, marker: Path, env_file: Path) -> Rule:
    def check(facts, kb):
        if marker.exists():
            return None
        return Hit(f"{marker.name} missing", fix=FixRef("env", {"env_file": str(env_file), "set": {"FWD_TEST": "1"}}))

    return Rule(finding_id, (), check)


@pytest.fixture
def stand_in_rules(tmp_path, monkeypatch):
    import fwdoctor.cli.recipes

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    env_file = tmp_path / "fw env's.sh"
    fixed_by_env = _rule("cuda-path-inconsistent", env_file, env_file)  # fixed once the file exists
    never_fixed = _rule("multiple-toolkits", tmp_path / "never", tmp_path / "other.sh")
    monkeypatch.setattr(fwdoctor.cli.recipes, "RULES", (fixed_by_env, never_fixed))
    return env_file


def test_fix_prints_the_plan_and_changes_nothing_without_apply(cli, stand_in_rules):
    result = cli("fix", "cuda-path-inconsistent")
    assert result.exit_code == 0
    assert "# fwdoctor plan: env: consistent CUDA environment" in result.output
    assert "export FWD_TEST=1" in result.output
    assert not stand_in_rules.exists()


def test_fix_apply_runs_the_plan_rechecks_and_a_second_apply_has_nothing_to_do(cli, stand_in_rules):
    result = cli("fix", "cuda-path-inconsistent", "--apply", "--yes")
    assert result.exit_code == 0, result.output
    assert "export FWD_TEST=1" in stand_in_rules.read_text()
    assert "fixed: cuda-path-inconsistent" in result.output
    assert "log: " in result.output
    again = cli("fix", "cuda-path-inconsistent", "--apply", "--yes")
    assert again.exit_code == 0
    assert "nothing to fix for cuda-path-inconsistent" in again.output


def test_fix_apply_exits_1_when_the_finding_is_still_there_afterwards(cli, stand_in_rules):
    result = cli("fix", "multiple-toolkits", "--apply", "--yes")
    assert result.exit_code == 1
    assert "still present after the fix: multiple-toolkits" in result.output


def test_fix_apply_asks_first_and_a_no_changes_nothing(cli, stand_in_rules):
    result = cli("fix", "cuda-path-inconsistent", "--apply", input="n\n")
    assert result.exit_code == 1
    assert "env: declined" in result.output
    assert not stand_in_rules.exists()


def test_fix_apply_refuses_saved_facts_and_unknown_ids(cli, stand_in_rules, tmp_path):
    facts = tmp_path / "host.json"
    facts.write_text(json.dumps({"facts": {}}))
    result = cli("fix", "--facts", str(facts), "--apply")
    assert result.exit_code == 2 and "--apply changes this host; it cannot be combined with --facts" in result.output
    result = cli("fix", "no-such-finding")
    assert result.exit_code == 2 and "no-such-finding: unknown finding id" in result.output


def test_fix_merges_what_several_findings_ask_of_the_env_file_into_one_plan(cli, tmp_path, monkeypatch):
    import fwdoctor.cli.recipes

    env_file = tmp_path / "env.sh"

    def asks(finding_id: str, options: dict) -> Rule:
        return Rule(finding_id, (), lambda facts, kb: Hit("x", fix=FixRef("env", {"env_file": str(env_file), **options})))

    monkeypatch.setattr(fwdoctor.cli.recipes, "RULES", (asks("cudnn-shadowed", {"set": {"A": "1"}}), asks("nccl-shadowed", {"set": {"B": "2"}})))
    result = cli("fix")
    assert result.output.count("# fwdoctor plan: env") == 1
    assert "export A=1" in result.output and "export B=2" in result.output
