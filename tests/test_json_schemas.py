"""The JSON Schemas in doctor/schemas/ (draft 2020-12) hold for REAL outputs: live `facts`,
`check --json` on fixture roots and on facts files (new and old), `smoke kernel
--compile-only` with the real nvcc, `smoke kernel --cpu`, `smoke all --report`, and any
committed fixture document of those kinds. A mutated document must fail: a schema that
accepts anything would pass all of the above.
"""

from __future__ import annotations

import copy
import json
import os
from importlib import resources
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from helpers import torch_python

TESTS = Path(__file__).resolve().parent
ROOTS = TESTS / "roots"
KINDS = ("facts", "check", "smoke", "smoke-suite")
NVCC = "/usr/local/cuda/bin/nvcc"
TORCH_PY = torch_python()


def _load_schemas() -> dict[str, dict]:
    # Read as package data (the installed layout: tests/test_packaging.py builds the wheel).
    folder = resources.files("fwdoctor") / "schemas"
    return {kind: json.loads((folder / f"{kind}.json").read_text(encoding="utf-8")) for kind in KINDS}


SCHEMAS = _load_schemas()
REGISTRY = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in SCHEMAS.values()])


def errors(doc: dict, kind: str | None = None) -> list[str]:
    kind = kind or doc["kind"]
    validator = Draft202012Validator(SCHEMAS[kind], registry=REGISTRY)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(doc)]


def assert_valid(doc: dict, kind: str) -> None:
    assert doc["kind"] == kind
    assert errors(doc, kind) == []


# ----------------------------------------------------------------------------- the schemas
@pytest.mark.parametrize("kind", KINDS)
def test_each_schema_is_a_valid_draft_2020_12_schema_with_its_own_id(kind):
    schema = SCHEMAS[kind]
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"urn:fwdoctor:schema:{kind}"
    assert schema["properties"]["kind"] == {"const": kind}
    assert {"schema_version", "kind", "fwdoctor", "host", "collected_at"} <= set(schema["required"])


# ----------------------------------------------------------------------------- real outputs
def test_live_facts_validate(cli):
    doc = json.loads(cli("facts").stdout)
    assert_valid(doc, "facts")


@pytest.mark.parametrize("root", ["torch-driver-too-old", "toolkit-clean", "libs-nccl-header-mismatch", "fabric-ib-xid", "driver-missing", "frameworks-jax"])
def test_check_json_on_fixture_roots_validates(cli, use_test_kb, root):
    env = ROOTS / root / "fixture.env"
    args = ["--env-file", str(env)] if env.exists() else []
    result = cli("check", "--json", "--root", str(ROOTS / root), *args)
    doc = json.loads(result.stdout)
    assert_valid(doc, "check")
    facts = json.loads(cli("facts", "--root", str(ROOTS / root), *args).stdout)
    assert_valid(facts, "facts")


def test_check_json_with_findings_and_fixes_validates(cli, use_test_kb):
    root = ROOTS / "torch-driver-too-old"
    doc = json.loads(cli("check", "--json", "--root", str(root), "--env-file", str(root / "fixture.env")).stdout)
    assert doc["findings"] and any(f["fix"] for f in doc["findings"])  # the fix object is exercised
    assert_valid(doc, "check")


def test_check_json_on_facts_files_new_and_old_validates(cli, use_test_kb, tmp_path):
    root = ROOTS / "torch-driver-too-old"
    saved = json.loads(cli("facts", "--root", str(root), "--env-file", str(root / "fixture.env")).stdout)
    new = tmp_path / "new.json"
    new.write_text(json.dumps(saved))
    assert_valid(json.loads(cli("check", "--json", "--facts", str(new)).stdout), "check")
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"facts": saved["facts"], "probe_failures": saved["probe_failures"]}))
    doc = json.loads(cli("check", "--json", "--facts", str(old)).stdout)
    assert doc["collected_at"] is None
    assert_valid(doc, "check")
    # `facts --facts OLD` passes the facts on: when they were collected stays unknown (null)
    again = json.loads(cli("facts", "--facts", str(old)).stdout)
    assert again["collected_at"] is None and again["host"]["source"].startswith("facts file ")
    assert_valid(again, "facts")


def test_smoke_compile_json_with_the_real_nvcc_validates(cli):
    if not os.access(NVCC, os.X_OK):
        pytest.skip("no CUDA toolkit at /usr/local/cuda")
    result = cli("smoke", "kernel", "--compile-only", "--arch", "8.0", "--arch", "9.0", "--json",
                 env={"PATH": f"{os.path.dirname(NVCC)}:{os.environ['PATH']}"})
    doc = json.loads(result.stdout)
    assert [r["test"] for r in doc["results"]] == ["compile sm_80", "compile sm_90"]
    assert_valid(doc, "smoke")


@pytest.mark.slow  # the real worker: torch import, oneDNN, AMP steps, the GEMM figure (~5-15 s)
@pytest.mark.skipif(TORCH_PY is None, reason="no interpreter with torch")
def test_smoke_kernel_cpu_json_validates_and_carries_the_gemm_figure(cli):
    doc = json.loads(cli("smoke", "kernel", "--cpu", "--python", TORCH_PY, "--json").stdout)
    assert_valid(doc, "smoke")
    (result,) = doc["results"]
    details = result["details"]
    assert details["gemm_tflops"] > 0 and details["gemm_tflops"] == details["tflops"]["fp32"]
    assert details["gemm"]["dtype"] == "fp32" and details["gemm"]["n"] == 1024 and details["gemm"]["iters"] >= 3
    # the figure is timed for about GEMM_BUDGET_S (0.15 s): the smoke stays short
    assert 0.1 < details["gemm"]["seconds"] < 1.0


@pytest.mark.slow  # check --deep, the kernel worker and the all-reduce step for real (~10-40 s)
@pytest.mark.skipif(TORCH_PY is None, reason="no interpreter with torch")
def test_smoke_all_report_validates(cli, tmp_path):
    report = tmp_path / "smoke.json"
    result = cli("smoke", "all", "--python", TORCH_PY, "--max-bytes", "64K", "--report", str(report))
    doc = json.loads(report.read_text())
    assert result.exit_code == doc["exit_code"]
    assert doc["host"]["name"] and doc["host"] == doc["check"]["host"]
    assert doc["collected_at"] == doc["check"]["collected_at"]
    assert_valid(doc, "smoke-suite")


def _committed_documents() -> list[Path]:
    found = []
    for path in sorted(TESTS.rglob("*.json")):
        if "kb" in path.relative_to(TESTS).parts[:1] or path.stat().st_size > 8 * 1024 * 1024:
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("kind") in KINDS and "schema_version" in doc:
            found.append(path)
    return found


# Fixtures recorded before documents carried host/collected_at (tests/data/fleet-report/
# README.md says so) are checked on every other key: the two they predate are filled with
# placeholders, the way their own tests add them.
PREDATES = {"host": {"name": None, "source": "not recorded"}, "collected_at": "1970-01-01T00:00:00Z"}


def _fill_predated(doc: dict) -> dict:
    if "host" in doc or "collected_at" in doc:
        return doc
    doc = {**PREDATES, **doc}
    if doc.get("kind") == "smoke-suite" and isinstance(doc.get("check"), dict):
        doc["check"] = {**PREDATES, **doc["check"]}
    return doc


@pytest.mark.parametrize("path", _committed_documents(), ids=lambda p: str(p.relative_to(TESTS)))
def test_committed_fixture_documents_validate(path):
    doc = _fill_predated(json.loads(path.read_text(encoding="utf-8")))
    assert errors(doc) == [], path


# ----------------------------------------------------------------------------- mutations fail
@pytest.fixture(scope="module")
def real_docs(tmp_path_factory) -> dict[str, dict]:
    """One real document of each kind, made in-process (check on a root with findings)."""
    from click.testing import CliRunner

    from fwdoctor.cli import main
    from fwdoctor.model import Provenance
    from fwdoctor.smoke.result import SmokeResult
    from fwdoctor.smoke.suite import SuiteResult

    run = CliRunner().invoke
    root = ROOTS / "torch-driver-too-old"
    env = ["--root", str(root), "--env-file", str(root / "fixture.env")]
    check = json.loads(run(main, ["check", "--json", *env]).stdout)
    facts = json.loads(run(main, ["facts", *env]).stdout)
    kernel = SmokeResult("kernel cpu", "pass", "CPU: matmul_fp32 within tolerance", details={
        "checks": [{"name": "matmul_fp32", "status": "pass"}], "tflops": {"fp32": 0.1}, "gemm_tflops": 0.1,
        "gemm": {"dtype": "fp32", "n": 1024, "iters": 7, "seconds": 0.15}})
    suite = SuiteResult(python="/venv/bin/python", check=check, kernel=[kernel],
                        provenance=Provenance("node-1", "gethostname()", "2026-12-01T10:00:00Z")).to_json()
    smoke = {k: v for k, v in suite.items() if k in ("schema_version", "fwdoctor", "host", "collected_at", "exit_code")}
    smoke.update(kind="smoke", python={"path": "/venv/bin/python", "why": "--python"}, results=[kernel.to_json()])
    docs = {"facts": facts, "check": check, "smoke": smoke, "smoke-suite": suite}
    for kind, doc in docs.items():
        assert errors(doc, kind) == [], kind
    return docs


MUTATIONS = [
    ("facts", "missing host", lambda d: d.pop("host")),
    ("facts", "missing collected_at", lambda d: d.pop("collected_at")),
    ("facts", "host name a number", lambda d: d["host"].__setitem__("name", 417)),
    ("facts", "host without source", lambda d: d["host"].pop("source")),
    ("facts", "collected_at not UTC", lambda d: d.__setitem__("collected_at", "2026-12-01T10:00:00+02:00")),
    ("facts", "collected_at a number", lambda d: d.__setitem__("collected_at", 1764582000)),
    ("facts", "a fact with neither value nor unknown", lambda d: d["facts"].__setitem__("driver.version", {"source": "x"})),
    ("facts", "a fact key that is not area.attribute", lambda d: d["facts"].__setitem__("Driver Version", {"value": 1, "source": ""})),
    ("facts", "system.hostname a number", lambda d: d["facts"].__setitem__("system.hostname", {"value": 5, "source": "x"})),
    ("facts", "wrong kind", lambda d: d.__setitem__("kind", "check")),
    ("facts", "schema_version a string", lambda d: d.__setitem__("schema_version", "1")),
    ("check", "missing findings", lambda d: d.pop("findings")),
    ("check", "unknown severity", lambda d: d["findings"][0].__setitem__("severity", "fatal")),
    ("check", "finding without message", lambda d: d["findings"][0].pop("message")),
    ("check", "fix commands not a list", lambda d: next(f for f in d["findings"] if f["fix"])["fix"].__setitem__("commands", "apt install x")),
    ("check", "exit_code 3", lambda d: d.__setitem__("exit_code", 3)),
    ("check", "checked a string", lambda d: d.__setitem__("checked", "40")),
    ("check", "checked_at not a time", lambda d: d.__setitem__("checked_at", "now")),
    ("check", "not_checked entry without reason", lambda d: d["not_checked"][0].pop("reason")),
    ("smoke", "result status unknown", lambda d: d["results"][0].__setitem__("status", "ok")),
    ("smoke", "gemm_tflops a string", lambda d: d["results"][0]["details"].__setitem__("gemm_tflops", "fast")),
    ("smoke", "gemm without its size", lambda d: d["results"][0]["details"]["gemm"].pop("n")),
    ("smoke", "missing results", lambda d: d.pop("results")),
    ("smoke", "python a bare string", lambda d: d.__setitem__("python", "/venv/bin/python")),
    ("smoke-suite", "summary kernel unknown", lambda d: d["summary"].__setitem__("kernel", "maybe")),
    ("smoke-suite", "embedded check missing facts", lambda d: d["check"].pop("facts")),
    ("smoke-suite", "ok a string", lambda d: d.__setitem__("ok", "yes")),
    ("smoke-suite", "missing host", lambda d: d.pop("host")),
    ("smoke-suite", "kernel result without details", lambda d: d["kernel"][0].pop("details")),
]


@pytest.mark.parametrize("kind, what, mutate", MUTATIONS, ids=[f"{k}: {w}" for k, w, _ in MUTATIONS])
def test_a_mutated_document_fails_its_schema(real_docs, kind, what, mutate):
    doc = copy.deepcopy(real_docs[kind])
    mutate(doc)
    assert errors(doc, kind), f"{kind} with {what} still validates"
