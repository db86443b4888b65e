"""Hostile input, second round (issue 24, items 2 and 6): values read from an inspected root,
a facts file, a bug report or a node's document reach every output escaped for where the
bytes go. Shell: fix commands quoted (fwdoctor.quoting); terminal: control characters shown
visibly; GitHub markdown: report text only inside code; YAML: typable scalars quoted;
Prometheus: labels escaped, then merged.

Each class runs through the real CLI on a fixture root copied with a hostile folder name,
or on facts / fleet / triage documents carrying the hostile values."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import TEST_KB_DIR
from test_escape import YAML_TYPED, plain_scalars

ROOTS = Path(__file__).resolve().parent / "roots"
FLEET_DATA = Path(__file__).resolve().parent / "data" / "fleet-report"

# An OSC 52 clipboard write (puts `rm -rf /` on the clipboard), a window-title change and a
# screen clear: what a hostile GPU name, path or report line carries.
OSC52 = "\x1b]52;c;cm0gLXJmIC8K\x07"
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J\x1b[H"
GPU_NAME = f"NVIDIA H100{OSC52}{TITLE}"
NEWLINE_PATH = "/opt/venv\n; rm -rf /\nNo problems found.\n/bin/python"
MD_INJECTION = ("[click](https://evil.example/x) ![img](https://evil.example/i.png) <img src=x onerror=alert(1)> "
                "</details> @octocat owner/repo#1 www.evil.example ``` `` `")
RAW_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # a newline ends a line; nothing else may appear raw


def no_raw_control(text: str) -> None:
    found = RAW_CONTROL.search(text)
    assert found is None, f"raw control character {found.group()!r} in output: {text[max(0, found.start() - 60):found.end() + 60]!r}"


def hostile_facts(tmp_path: Path, cli) -> Path:
    """The facts of a real fixture root, with hostile values where a host could put them."""
    root = ROOTS / "torch-cpu-on-gpu-host"
    doc = json.loads(cli("facts", "--root", str(root), "--env-file", str(root / "fixture.env")).stdout)
    facts = doc["facts"]
    facts["gpus.list"]["value"][0]["name"] = GPU_NAME + MD_INJECTION
    facts["python.executable"]["value"] = NEWLINE_PATH
    facts["torch.location"] = {"value": "/opt/x" + CLEAR + MD_INJECTION, "source": "test"}
    doc["host"] = {"name": "node-1", "source": "/etc/hostname"}
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    return path


# ----------------------------------------------------------------------------- shell
VENV = "v;touch X;x"


@pytest.fixture
def venv_root(tmp_path) -> tuple[Path, Path]:
    """torch-cpu-on-gpu-host (a CPU torch on a GPU host: the fix reinstalls torch through the
    venv's interpreter) with its venv folder renamed `v;touch X;x`."""
    root = tmp_path / "root"
    shutil.copytree(ROOTS / "torch-cpu-on-gpu-host", root, symlinks=True)
    (root / "opt" / "venv").rename(root / "opt" / VENV)
    env = tmp_path / "fixture.env"
    env.write_text((ROOTS / "torch-cpu-on-gpu-host" / "fixture.env").read_text().replace("/opt/venv", f"/opt/{VENV}"))
    return root, env


def _commands_naming_the_venv(commands: list[str]) -> list[str]:
    return [c for c in commands if "touch X" in c]


def _assert_inert(commands: list[str], tmp_path: Path) -> None:
    assert commands, "no command names the venv"
    work = tmp_path / "paste"
    work.mkdir(exist_ok=True)
    for command in commands:
        assert subprocess.run(["bash", "-n", "-c", command], capture_output=True).returncode == 0, command
        # run as pasted (the interpreter does not exist, so it fails harmlessly), in a folder
        # where `touch X` would leave its mark
        subprocess.run(["bash", "-c", command], cwd=work, capture_output=True, timeout=30)
        assert not (work / "X").exists(), f"pasting {command!r} ran `touch X`"


def test_the_torch_reinstall_command_that_check_prints_keeps_a_hostile_venv_folder_one_word(cli, use_test_kb, venv_root, tmp_path):
    root, env = venv_root
    result = cli("check", "--root", str(root), "--env-file", str(env))
    assert "torch-cpu-build-on-gpu-host" in result.stdout
    shown = [line.split("$ ", 1)[1] for line in result.stdout.splitlines() if line.strip().startswith("$ ")]
    _assert_inert(_commands_naming_the_venv(shown), tmp_path)


def test_json_fix_commands_keep_a_hostile_venv_folder_one_word(cli, use_test_kb, venv_root, tmp_path):
    root, env = venv_root
    doc = json.loads(cli("check", "--json", "--root", str(root), "--env-file", str(env)).stdout)
    commands = [c for f in doc["findings"] if f.get("fix") for c in f["fix"]["commands"]]
    _assert_inert(_commands_naming_the_venv(commands), tmp_path)


def test_check_markdown_of_a_root_with_a_hostile_venv_folder_is_inert(cli, use_test_kb, venv_root):
    root, env = venv_root
    assert_markdown_inert(cli("check", "--format", "markdown", "--root", str(root), "--env-file", str(env)).stdout)


# ----------------------------------------------------------------------------- terminal
def test_check_text_shows_control_characters_in_facts_visibly(cli, use_test_kb, tmp_path):
    path = hostile_facts(tmp_path, cli)
    for args in ((), ("-v",)):
        out = cli("check", "--facts", str(path), *args).stdout
        no_raw_control(out)
        assert "\\x1b]52;c;" in out  # the GPU name is shown, escaped
        assert "; rm -rf /" not in [line.strip() for line in out.splitlines()]
        assert "No problems found." not in [line.strip() for line in out.splitlines()]


def test_check_json_keeps_values_raw(cli, use_test_kb, tmp_path):
    path = hostile_facts(tmp_path, cli)
    doc = json.loads(cli("check", "--json", "--facts", str(path)).stdout)
    assert doc["facts"]["gpus.list"]["value"][0]["name"] == GPU_NAME + MD_INJECTION  # data stays data


def test_triage_text_shows_control_characters_visibly(cli, use_test_kb, tmp_path):
    report = tmp_path / "report.md"
    report.write_text(TRIAGE_BODY)
    out = cli("triage", "-v", str(report)).stdout
    no_raw_control(out)
    assert "driver-library-mismatch" in out


def test_fleet_text_shows_a_nodes_control_characters_visibly(tmp_path):
    _fleet(tmp_path)
    code, out, _ = fleet_cli(str(tmp_path / "nodes"))
    no_raw_control(out)
    assert "\\x1b[2J" in out


def test_smoke_text_shows_a_failure_texts_control_characters_visibly():
    from fwdoctor.smoke.result import SmokeResult, render_text
    from fwdoctor.smoke.suite import SuiteResult, render_summary

    result = SmokeResult("kernel", "fail", f"CUDA error: {CLEAR}{OSC52}", error=f"RuntimeError: {TITLE}\nforged line",
                         hint=f"try {OSC52}")
    no_raw_control(render_text([result]))
    suite = SuiteResult(python="/usr/bin/python3", check={"findings": [{"severity": "error", "id": "x", "message": f"bad {OSC52}"}]},
                        kernel=[result], allreduce=[])
    no_raw_control(render_summary(suite))


def test_notes_on_stderr_show_control_characters_visibly(cli, tmp_path):
    from click.testing import CliRunner

    import click

    from fwdoctor.cli.output import note

    @click.command()
    def speak():
        note(f"interpreter under test: /opt/{OSC52}/python")

    result = CliRunner().invoke(speak, [])
    no_raw_control(result.stderr)


# ----------------------------------------------------------------------------- markdown
TRIAGE_BODY = (
    "Failed to initialize NVML: Driver/library version mismatch\n"
    f"NVML library version: 535.54.03 {MD_INJECTION}\n"
    f"GPU 0: NVIDIA H100{OSC52} (UUID: GPU-1)\n"
    "```\n"
    f"NVRM: API mismatch: the client has the version 535.54.03, but this kernel module has the version 530.30.02.  {MD_INJECTION}\n"
    "```\n"
    "````\n</details>\n<img src=x> @octocat/maintainers owner/repo#12\n"
)

_OWN_HTML = {"<details><summary>evidence from the report</summary>", "<details><summary>key facts</summary>",
             "<details><summary>Not checked: the report does not show</summary>", "</details>"}


def assert_markdown_inert(text: str) -> None:
    """Rendered by a real CommonMark + GFM-tables + linkify parser (markdown-it-py): no link,
    image or HTML but fwdoctor's own <details>, and no @mention or cross-reference in text
    outside code."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("gfm-like")
    no_raw_control(text)
    for token in md.parse(text):
        if token.type == "html_block":
            for line in token.content.splitlines():
                assert line.strip() in _OWN_HTML | {""}, line
        for child in token.children or []:
            assert child.type not in ("link_open", "image", "html_inline"), (child.type, child.content, token.content)
            if child.type == "text":
                assert "@" not in child.content, child.content
                assert not re.search(r"[\w.-]+/[\w.-]+#\d", child.content), child.content
                assert not re.search(r"(?i)(https?://|www\.)", child.content), child.content


def test_triage_markdown_puts_report_text_only_in_code(cli, use_test_kb, tmp_path):
    report = tmp_path / "report.md"
    report.write_text(TRIAGE_BODY)
    out = cli("triage", "--format", "markdown", str(report)).stdout
    assert "`driver-library-mismatch`" in out
    assert_markdown_inert(out)


def test_check_markdown_puts_fact_text_only_in_code(cli, use_test_kb, tmp_path):
    path = hostile_facts(tmp_path, cli)
    assert_markdown_inert(cli("check", "--format", "markdown", "--facts", str(path)).stdout)


def test_fleet_markdown_puts_node_text_only_in_code(tmp_path):
    _fleet(tmp_path)
    _, out, _ = fleet_cli(str(tmp_path / "nodes"), "--format", "markdown")
    assert_markdown_inert(out)


def test_fleet_html_shows_hostile_values_as_text(tmp_path):
    _fleet(tmp_path)
    _, out, _ = fleet_cli(str(tmp_path / "nodes"), "--format", "html")
    assert "<img src=x" not in out and "</details>" not in out.replace("</details>\n", "")  # escaped, not markup
    no_raw_control(out)


# ----------------------------------------------------------------------------- fleet inputs
def fleet_cli(*args: str):
    from click.testing import CliRunner

    from fwdoctor.cli import main

    result = CliRunner().invoke(main, ["-q", "fleet", "report", *args, "--kb", str(TEST_KB_DIR)], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _fleet(tmp_path: Path) -> None:
    """Three nodes: two alike, one whose driver version, GPU name and smoke failure text are
    hostile (terminal escapes, markdown injection, @mentions). No rule may raise on the
    driver version no version parser reads (the suite's switch turns a rule error into a
    failure)."""
    base = json.loads((FLEET_DATA / "facts-h100x8-r580.json").read_text())
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    for name in ("node-1", "node-2", f"node-3{MD_INJECTION}"):
        doc = json.loads(json.dumps(base))
        doc["host"] = {"name": name, "source": "/etc/hostname"}
        if name.startswith("node-3"):
            doc["facts"]["driver.version"]["value"] = "550.1" + CLEAR + MD_INJECTION
            doc["facts"]["gpus.list"]["value"][0]["name"] = GPU_NAME + MD_INJECTION
        (nodes / f"{name[:6]}.json").write_text(json.dumps(doc))
    smoke = json.loads((FLEET_DATA / "smoke-kernel-cpu.json").read_text())
    smoke["host"] = {"name": "node-2", "source": "/etc/hostname"}
    for result in smoke["results"]:
        result["status"] = "fail"
        result["message"] = f"CUDA error {OSC52} {MD_INJECTION}"
    (nodes / "node-2-smoke.json").write_text(json.dumps(smoke))


# ----------------------------------------------------------------------------- YAML
@pytest.mark.parametrize("args", [
    ("--namespace", "1e3", "--name", "y"),
    ("--namespace", "on", "--name", "0o17"),
    ("--node-selector", "a=y", "--node-selector", "b=1e3", "--node-selector", "c=0o17", "--node-selector", "d=off",
     "--node-selector", "e=1_000", "--node-selector", "f=0x1F", "--node-selector", "g=null", "--node-selector", "h=N"),
    ("--image", "1e3"),
    ("--image", "190:20:30"),
])
def test_k8s_quotes_every_scalar_a_yaml_1_1_reader_would_type(cli, args):
    result = cli("fleet", "emit", "k8s", *(("--image", "registry.example/x:1") if "--image" not in args else ()), *args)
    assert result.exit_code == 0, result.output
    # a plain scalar that looks typed must be one the manifest means as a number (PyYAML
    # reads it as one too): a string written so is read as a number or boolean elsewhere
    typed = [v for v in plain_scalars(result.stdout) if YAML_TYPED.fullmatch(v) and isinstance(yaml.safe_load(v), str)]
    assert typed == [], typed
    loaded = yaml.safe_load(result.stdout)
    strings = json.dumps(loaded)
    for value in args[1::2]:
        assert json.dumps(value.partition("=")[2] or value) in strings, value


# ----------------------------------------------------------------------------- Prometheus
def test_prometheus_labels_that_escape_alike_are_one_series(cli, use_test_kb, tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    path = hostile_facts(tmp_path, cli)
    doc = json.loads(path.read_text())
    doc["facts"]["cudnn.installs"] = {"value": [{"kind": "pip", "header_version": "9.1\x01"}, {"kind": "pip", "header_version": "9.1\x02"},
                                                {"kind": "pip\x1b", "header_version": f"9.2{OSC52}"}], "source": "test"}
    path.write_text(json.dumps(doc))
    out = cli("check", "--format", "prometheus", "--facts", str(path)).stdout
    for family in text_string_to_metric_families(out):
        sets = [frozenset(s.labels.items()) for s in family.samples]
        assert len(sets) == len(set(sets)), f"{family.name}: a label set repeats"
    assert "\x1b" not in out and "\x07" not in out


# ----------------------------------------------------------------------------- workflow
def test_the_triage_workflow_gives_the_token_only_to_the_step_that_posts():
    workflow = yaml.safe_load((Path(__file__).resolve().parent.parent / "docs" / "examples" / "triage.yml").read_text())
    assert "token" not in json.dumps(workflow.get("env") or {}).lower()
    (job,) = workflow["jobs"].values()
    assert "token" not in json.dumps(job.get("env") or {}).lower()
    posting = 0
    for step in job["steps"]:
        has_token = "github.token" in json.dumps(step) or "secrets." in json.dumps(step)
        runs = step.get("run", "")
        reads_attacker_text = any(word in runs for word in ("fwdoctor", "python", "GITHUB_EVENT_PATH", "report.md"))
        if has_token:
            posting += 1
            assert not reads_attacker_text and "gh issue comment" in runs, step.get("name")
        if reads_attacker_text:
            assert not has_token, f"step {step.get('name')!r} parses attacker text with the token in its environment"
    assert posting == 1
