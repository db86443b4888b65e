"""Conventions people rely on: --json with schema_version on every reporting command,
NO_COLOR and --color, a global -q, --debug tracebacks, and shell completion.

The JSON sweep runs each command the way a script would (subprocess of the installed
console script, stdout parsed as one document); inputs are this repository's committed
stacks, locks and root fixtures, so every command has real work to report on."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fwdoctor.cli import main, output
from fwdoctor.schema import SCHEMA_VERSION
from helpers import REPO

pytestmark = pytest.mark.usefixtures("use_test_kb")

FWDOCTOR = str(Path(sys.executable).with_name("fwdoctor"))
ROOTS = REPO / "tests" / "roots"
# An H100 host on driver 515 with torch 2.14.1+cu130: one error finding (driver-too-old-for-torch).
TOO_OLD = ["--root", str(ROOTS / "torch-driver-too-old"), "--env-file", str(ROOTS / "torch-driver-too-old" / "fixture.env")]


def _json_of(args: list[str], tmp_path: Path, expect_codes: tuple[int, ...] = (0, 1)) -> dict:
    proc = subprocess.run([FWDOCTOR, *args], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert proc.returncode in expect_codes, f"{args}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
    document = json.loads(proc.stdout)
    assert isinstance(document, dict), args
    return document


def _reporting_commands(tmp_path: Path) -> list[tuple[str, list[str]]]:
    python = sys.executable
    return [
        ("check", ["check", "--root", str(ROOTS / "driver-ok"), "--json"]),
        ("check", ["check", "--root", str(ROOTS / "driver-ok"), "--format", "json"]),
        ("facts", ["facts", "--root", str(ROOTS / "driver-ok")]),
        ("triage", ["triage", "tests/data/triage/01-driver-too-old-fooocus-11040.md", "--json"]),
        ("finding-list", ["list", "--json"]),
        ("finding", ["explain", "FWD104", "--json"]),
        ("plans", ["fix", *TOO_OLD, "--json"]),
        ("selection", ["select", "torch", "--driver", "580.95.05", "--gpu", "9.0", "--python", "3.12", "--json"]),
        ("plan", ["install", "torch", "--python", python, "--cuda", "cpu", "--json"]),
        ("plan", ["install", "cuda-toolkit", "13.0", "--method", "pip", "--prefix", str(tmp_path / "cuda"), "--json"]),
        ("smoke", ["smoke", "kernel", "--python", python, "--json"]),
        ("stack", ["stack", "resolve", "stacks/cpu-py311.yaml", "--json"]),
        ("lock-check", ["lock", "stacks/cpu-py311.yaml", "--check", "--json"]),
        ("dockerfile", ["docker", "generate", "stacks/cpu-py311.yaml", "--out", str(tmp_path / "Dockerfile"), "--json"]),
        ("build", ["build", "torch", "--version", "2.9.1", "--cuda", "13.0", "--arch", "8.0", "--python", python,
                   "--workdir", str(tmp_path / "w"), "--dry-run", "--json"]),
    ]


@pytest.mark.slow
def test_every_reporting_command_prints_one_stamped_json_document(tmp_path):
    kinds = set()
    for kind, args in _reporting_commands(tmp_path):
        document = _json_of(args, tmp_path)
        assert document["schema_version"] == SCHEMA_VERSION, args
        assert document["kind"] == kind, args
        assert document["fwdoctor"], args
        kinds.add(kind)
    assert kinds == {"check", "facts", "triage", "finding-list", "finding", "plans", "selection", "plan", "smoke", "stack",
                     "lock-check", "dockerfile", "build"}


def test_a_saved_stamped_facts_file_reads_back(tmp_path, cli):
    saved = tmp_path / "host.json"
    saved.write_text(cli("facts", "--root", str(ROOTS / "driver-ok")).stdout)
    assert json.loads(saved.read_text())["kind"] == "facts"
    again = cli("check", "--facts", str(saved), "--json")
    assert json.loads(again.stdout)["facts"]["driver.version"]["value"] == "580.95.05"


def test_fix_json_names_the_plan_and_nothing_is_applied(cli):
    document = json.loads(cli("fix", *TOO_OLD, "--json").stdout)
    recipes = [entry["plan"]["recipe"] for entry in document["plans"]]
    assert recipes == ["torch-wheel", "cuda-toolkit"]
    selected = json.loads(cli("select", "torch", *TOO_OLD, "--json").stdout)["choice"]["version"]
    assert document["plans"][0]["plan"]["title"] == f"install torch {selected} into /opt/venv/bin/python"
    assert all(entry["applied"] is None for entry in document["plans"]) and document["still_present"] is None


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("mode", "env", "expected"),
    [
        ("auto", {}, True),
        ("auto", {"NO_COLOR": "1"}, False),
        ("auto", {"NO_COLOR": ""}, True),  # no-color.org: only a non-empty value disables
        ("auto", {"TERM": "dumb"}, False),
        ("always", {"NO_COLOR": "1"}, True),
        ("never", {}, False),
    ],
)
def test_colour_follows_no_color_term_and_the_flag(monkeypatch, mode, env, expected):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    ctx = main.make_context("fwdoctor", ["--color", mode, "list"])
    with ctx:
        output.configure(ctx, ctx.params["color"], False, False)
        assert output.use_color(_Tty()) is expected


def test_color_always_paints_findings_and_never_does_not():
    # color=True: CliRunner would otherwise strip the escapes it is handed.
    painted = CliRunner().invoke(main, ["--color", "always", "check", *TOO_OLD], color=True)
    plain = CliRunner().invoke(main, ["--color", "never", "check", *TOO_OLD], env={"NO_COLOR": ""}, color=True)
    assert "\x1b[31m" in painted.output
    assert "\x1b[" not in plain.output


def test_quiet_silences_remarks_but_not_errors(tmp_path):
    venv_python = sys.executable
    loud = subprocess.run([FWDOCTOR, "smoke", "kernel", "--python", venv_python], capture_output=True, text=True, timeout=300)
    quiet = subprocess.run([FWDOCTOR, "-q", "smoke", "kernel", "--python", venv_python], capture_output=True, text=True, timeout=300)
    assert "interpreter under test" in loud.stderr
    assert "interpreter under test" not in quiet.stderr
    assert quiet.stdout == loud.stdout
    failing = subprocess.run([FWDOCTOR, "-q", "check", "--python", str(tmp_path / "nope")], capture_output=True, text=True, timeout=120)
    assert failing.returncode == 2 and "no such interpreter" in failing.stderr


def test_debug_shows_the_traceback_behind_an_internal_error(monkeypatch):
    import fwdoctor.cli.check as check_cli

    def broken(*args, **kwargs):
        raise RuntimeError("a rule fell over")

    monkeypatch.setattr(check_cli, "judge", broken)
    root = str(ROOTS / "driver-ok")
    plain = CliRunner().invoke(main, ["check", "--root", root])
    assert plain.exit_code == 2
    assert "internal error: RuntimeError: a rule fell over" in plain.output and "Traceback" not in plain.output
    debug = CliRunner().invoke(main, ["--debug", "check", "--root", root])
    assert debug.exit_code == 2
    assert "Traceback (most recent call last)" in debug.output and 'raise RuntimeError("a rule fell over")' in debug.output
    from_env = CliRunner().invoke(main, ["check", "--root", root], env={"FWDOCTOR_DEBUG": "1"})
    assert "Traceback (most recent call last)" in from_env.output


def test_bash_completion_script_loads_and_completes_commands():
    env = {**os.environ, "_FWDOCTOR_COMPLETE": "bash_source"}
    script = subprocess.run([FWDOCTOR], capture_output=True, text=True, timeout=60, env=env)
    assert script.returncode == 0 and "_fwdoctor_completion" in script.stdout
    syntax = subprocess.run(["bash", "-n"], input=script.stdout, capture_output=True, text=True, timeout=60)
    assert syntax.returncode == 0, syntax.stderr
    env = {**os.environ, "_FWDOCTOR_COMPLETE": "bash_complete", "COMP_WORDS": "fwdoctor ch", "COMP_CWORD": "1"}
    words = subprocess.run([FWDOCTOR], capture_output=True, text=True, timeout=60, env=env).stdout.split()
    assert "plain,check" in words
