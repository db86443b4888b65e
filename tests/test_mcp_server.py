"""`fwdoctor mcp` as an assistant meets it: the INSTALLED wheel (with its `mcp` extra) started
by the MCP SDK's own stdio client, outside this repository. Every tool is called on fixture
roots and recorded reports, every result is checked against the project's JSON Schemas (the
SDK client checks it too, against the output schema the server lists), and paths outside
the allowed roots, or links out of them, are refused as one-line tool errors.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from referencing import Registry, Resource

from helpers import REPO, run

pytestmark = pytest.mark.slow
# The shared wheel and venv (built once per run): tests/wheel_helpers.py.
pytest_plugins = ("wheel_helpers",)

ROOTS = REPO / "tests" / "roots"
DATA = REPO / "tests" / "data"
TEST_KB = REPO / "tests" / "kb"
TOO_OLD = ROOTS / "torch-driver-too-old"  # an H100 on driver 515 with torch 2.14.1+cu130
REPORT = DATA / "triage" / "01-driver-too-old-fooocus-11040.md"
TOOLS = ["check", "explain", "list_findings", "select", "plan_fix", "triage", "fleet_report"]

SCHEMAS = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (REPO / "doctor" / "schemas").glob("*.json")}
REGISTRY = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in SCHEMAS.values()])


def schema_errors(document: dict[str, Any]) -> list[str]:
    validator = Draft202012Validator(SCHEMAS[document["kind"]], registry=REGISTRY)
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(document)]


@pytest.fixture(scope="session")
def server_venv(installed, wheel) -> Path:
    """The shared venv of the installed wheel, with the `mcp` extra as a user installs it."""
    run([str(installed / "bin" / "python"), "-m", "pip", "install", "-q", f"fwdoctor[mcp] @ {wheel.as_uri()}"], cwd=installed)
    return installed


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX")}
    env["HOME"] = str(home)
    env["FWDOCTOR_KB"] = str(TEST_KB)  # logic answers from the frozen test KB, not the shipped one
    return env


def exchange(venv: Path, home: Path, allow: list[Path], calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    """Start `fwdoctor mcp --allow-root ...` from `venv`, list the tools, make `calls`."""
    argv = ["mcp"] + [word for folder in allow for word in ("--allow-root", str(folder))]
    params = StdioServerParameters(command=str(venv / "bin" / "fwdoctor"), args=argv, env=_env(home), cwd=str(home))

    async def talk() -> tuple[list[Any], list[Any]]:
        with open(home / "server.stderr", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = (await session.list_tools()).tools
                    # call_tool validates structured content against the listed output schema.
                    results = [await session.call_tool(name, args) for name, args in calls]
                    return tools, results

    return anyio.run(talk)


def _ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    document = result.structured_content
    assert json.loads(result.content[0].text) == document  # the same document as text, for clients without structured content
    assert schema_errors(document) == []
    return document


def _refused(result: Any) -> str:
    assert result.is_error and result.structured_content is None
    (text,) = [block.text for block in result.content]
    assert "\n" not in text and "Traceback" not in text
    return text


def test_the_installed_server_lists_seven_read_only_tools_typed_by_the_projects_schemas(server_venv, tmp_path):
    tools, _ = exchange(server_venv, tmp_path, [ROOTS], [])
    assert [t.name for t in tools] == TOOLS
    kinds = {"check": "check", "explain": "finding", "list_findings": "finding-list", "select": "selection",
             "plan_fix": "plans", "triage": "triage", "fleet_report": "fleet"}
    inputs = SCHEMAS["mcp-tools"]["tools"]
    for tool in tools:
        assert tool.input_schema == inputs[tool.name]
        assert tool.output_schema["$id"] == SCHEMAS[kinds[tool.name]]["$id"]
        assert tool.output_schema["properties"]["kind"] == {"const": kinds[tool.name]}
        assert tool.annotations.read_only_hint and not tool.annotations.destructive_hint
        assert "Use it" in tool.description or "use it" in tool.description.lower()


def test_check_on_a_fixture_root_is_the_document_check_json_prints(server_venv, tmp_path):
    _, (result,) = exchange(server_venv, tmp_path, [ROOTS], [("check", {"root": str(ROOTS / "driver-ok")})])
    document = _ok(result)
    cli = subprocess.run([str(server_venv / "bin" / "fwdoctor"), "check", "--root", str(ROOTS / "driver-ok"), "--json"],
                         capture_output=True, text=True, timeout=300, env=_env(tmp_path), cwd=tmp_path)
    expected = json.loads(cli.stdout)
    for moment in ("checked_at", "collected_at"):  # when it ran differs, nothing else
        document.pop(moment), expected.pop(moment)
    assert document == expected
    assert document["summary"][0] == {"layer": "driver", "text": "580.95.05 (open kernel module)"}


def test_every_tool_answers_fixture_roots_and_recorded_reports_with_schema_valid_documents(server_venv, tmp_path):
    facts = json.loads((DATA / "fleet-report" / "facts-h100x8-r580.json").read_text(encoding="utf-8"))
    calls = [
        ("check", {"root": str(TOO_OLD), "env_file": str(TOO_OLD / "fixture.env")}),
        ("check", {"facts": str(DATA / "fleet-report" / "facts-h100x8-r580.json")}),
        ("check", {"facts_document": facts, "only": ["driver-too-old-for-torch"]}),
        ("explain", {"id": "FWD104"}),
        ("list_findings", {}),
        ("select", {"driver": "580.95.05", "gpus": ["9.0"], "python": "3.12"}),
        ("select", {"framework": "jax", "driver": "580.95.05", "gpus": ["9.0"], "python": "3.12"}),
        ("select", {"driver": "470.82.01", "gpus": ["Tesla K80"], "python": "3.12"}),
        ("plan_fix", {"id": "driver-too-old-for-torch", "root": str(TOO_OLD), "env_file": str(TOO_OLD / "fixture.env")}),
        ("triage", {"report": REPORT.read_text(encoding="utf-8")}),
        ("fleet_report", {"paths": [str(DATA / "fleet-report")]}),
    ]
    _, results = exchange(server_venv, tmp_path, [ROOTS, DATA], calls)
    root_check, facts_check, only_check, explained, listed, torch, jax, k80, plan, triaged, fleet = map(_ok, results)

    assert {f["id"] for f in root_check["findings"]} >= {"driver-too-old-for-torch"}
    assert facts_check["facts"] == only_check["facts"] and only_check["checked"] == 1  # the file and the document alike
    assert explained["id"] == "driver-too-old-for-torch" and "What it does" in explained["explanation"]
    assert "driver-too-old-for-torch" in {k["id"] for k in listed["findings"]}
    assert torch["choice"]["version"].endswith("+cu132") and jax["framework"] == "jax" and jax["choice"]
    assert k80["choice"]["version"] == "2.5.1+cu118" and k80["rejected"]  # newer wheels dropped Kepler
    # A dry run: the plan as data and as the quoted script, and the command a person runs.
    (entry,) = plan["plans"]
    assert entry["applied"] is None and entry["plan"]["recipe"] == "torch-wheel"
    assert plan["script"].startswith("#!/bin/sh\n# fwdoctor plan: torch-wheel") and "torch==2.5.1+cu118" in plan["script"]
    assert plan["apply_command"] == "fwdoctor fix driver-too-old-for-torch --apply"
    assert [f["id"] for f in triaged["findings"]] == ["driver-too-old-for-torch"] and triaged["fragments"]
    assert fleet["summary"]["nodes"] == 3 and fleet["summary"]["unreadable"] == 0
    # The new schemas are not "anything goes": one wrong field in each real document fails.
    wrong = [({**triaged, "fragments": [{"kind": "nvidia-smi"}]}, "fragments"), ({**k80, "choice": 5}, "choice"),
             ({**explained, "code": "104"}, "code"), ({**listed, "findings": [{"id": "x"}]}, "findings"),
             ({**plan, "plans": [{"plan": {**entry["plan"], "steps": "pip install torch"}, "applied": None}]}, "plans"),
             ({**fleet, "summary": {**fleet["summary"], "nodes": -1}}, "summary")]
    for document, field in wrong:
        assert any(error.startswith(f"['{field}'") for error in schema_errors(document)), field


def test_paths_outside_the_allowed_roots_and_links_out_of_them_are_refused(server_venv, tmp_path):
    allowed = tmp_path / "allowed"
    (allowed / "fleet").mkdir(parents=True)
    (allowed / "rootfs-link").symlink_to(ROOTS / "driver-ok")  # a link out of the allowed folder
    (allowed / "fleet" / "node.json").symlink_to(DATA / "fleet-report" / "facts-h100x8-r580.json")
    calls = [
        ("check", {"root": str(ROOTS / "driver-ok")}),
        ("check", {"root": str(allowed / "rootfs-link")}),
        ("check", {"root": str(allowed / ".." / ".." / "etc")}),
        ("check", {"root": "allowed"}),
        ("check", {"image_archive": "/etc/passwd"}),
        ("fleet_report", {"paths": [str(allowed / "fleet")]}),
        ("plan_fix", {"id": "driver-too-old-for-torch", "facts": "/etc/hostname"}),
    ]
    _, results = exchange(server_venv, tmp_path, [allowed], calls)
    messages = [_refused(r) for r in results]
    assert messages[0] == f"fwdoctor: root {ROOTS / 'driver-ok'}: outside the folders allowed with --allow-root ({allowed})"
    assert messages[1].endswith(f"(it resolves to {ROOTS / 'driver-ok'})")
    assert "outside the folders allowed" in messages[2]
    assert messages[3] == f"fwdoctor: root allowed: give an absolute path within {allowed}"
    assert "image_archive /etc/passwd: outside" in messages[4]
    assert f"paths {allowed / 'fleet' / 'node.json'}: outside" in messages[5]
    assert "facts /etc/hostname: outside" in messages[6]


def test_without_an_allowed_root_no_tool_takes_a_path_but_the_others_answer(server_venv, tmp_path):
    calls = [("triage", {"report": REPORT.read_text(encoding="utf-8")}), ("check", {"root": str(ROOTS / "driver-ok")}),
             ("fleet_report", {"paths": [str(DATA / "fleet-report")]})]
    _, (triaged, check, fleet) = exchange(server_venv, tmp_path, [], calls)
    assert _ok(triaged)["kind"] == "triage"
    assert _refused(check) == f"fwdoctor: root {ROOTS / 'driver-ok'}: no path is accepted: the server was started without --allow-root DIR"
    assert "no path is accepted" in _refused(fleet)


def test_bad_arguments_and_unknown_ids_are_one_line_tool_errors(server_venv, tmp_path):
    calls = [("explain", {"id": "no-such-finding"}), ("explain", {}), ("check", {"timeout": -1}),
             ("check", {"root": str(ROOTS / "driver-ok"), "image": "nvidia/cuda:13.0.0-base-ubuntu24.04"}),
             ("select", {"framework": "jax", "cuda": "12.6"}), ("plan_fix", {"id": "no-such-finding"}),
             ("triage", {"report": "x" * (4 * 1024 * 1024 + 1)}), ("apply", {})]
    _, results = exchange(server_venv, tmp_path, [ROOTS], calls)
    assert [_refused(r) for r in results] == [
        "fwdoctor: unknown finding id 'no-such-finding'; `fwdoctor list` shows them all",
        "fwdoctor: explain: 'id' is a required property",
        "fwdoctor: check: timeout: -1 is less than or equal to the minimum of 0",
        "fwdoctor: root and image cannot be combined: pick one source of facts",
        "fwdoctor: torch_spec and cuda are torch's alone, not jax's",
        "fwdoctor: no-such-finding: unknown finding id (see `fwdoctor list`)",
        f"fwdoctor: report: more than {4 * 1024 * 1024} bytes; pass the report, not a whole log",
        "fwdoctor: unknown tool 'apply'; tools/list shows them",
    ]


def test_without_the_extra_fwdoctor_mcp_names_pip_and_pipx_before_doing_anything(server_venv, tmp_path):
    # The SDK made unimportable in the installed wheel's own interpreter, as where the extra is missing.
    code = "import sys; sys.modules['mcp'] = None; from fwdoctor.cli import main; main(['mcp', '--allow-root', '/nonexistent'])"
    proc = subprocess.run([str(server_venv / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=120,
                          env=_env(tmp_path), cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "fwdoctor: error: `fwdoctor mcp` needs the MCP SDK: pip install 'fwdoctor[mcp]' (pipx: pipx inject fwdoctor mcp)\n"


def _listening(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp{,6} write them) listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as rows:
            for row in list(rows)[1:]:
                local, state = row.split()[1], row.split()[3]
                address, _, hex_port = local.partition(":")
                if state == "0A" and int(hex_port, 16) == port:
                    found.append(address)
    return found


def test_streamable_http_listens_on_127_0_0_1_only_and_answers_like_stdio(server_venv, tmp_path):
    with socket.socket() as probe:  # a free port, handed to the server
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([str(server_venv / "bin" / "fwdoctor"), "mcp", "--http", str(port), "--allow-root", str(ROOTS)],
                              env=_env(tmp_path), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None and time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.2)
        assert _listening(port) == ["0100007F"]  # 127.0.0.1 alone, as the kernel lists it (no 0.0.0.0, no IPv6)

        async def talk() -> tuple[list[str], Any]:
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    names = [t.name for t in (await session.list_tools()).tools]
                    return names, await session.call_tool("check", {"root": str(ROOTS / "driver-ok")})

        names, result = anyio.run(talk)
        assert names == TOOLS
        assert _ok(result)["summary"][0] == {"layer": "driver", "text": "580.95.05 (open kernel module)"}
    finally:
        server.terminate()
        server.wait(timeout=30)

