"""A real, working H200 machine (tests/data/hosts/h200-2026-12-04, recorded by `make
gpu-check`'s run there): its saved facts re-judged, and its outputs triaged as a user would
paste them. A working machine must get no error and no warning. The triage tests failed
before the fixes they name; the facts test guards the rules on a real GPU host's facts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pasting import forms

HOST = Path(__file__).resolve().parent / "data" / "hosts" / "h200-2026-12-04"
TEXTS = ("collect_env", "jax_env", "nvidia-smi", "smi-csv", "topo", "nvcc", "ldconfig", "pip-list", "env-vars", "os-release", "uname")


def _triage(cli, tmp_path: Path, text: str) -> dict:
    report = tmp_path / "report.txt"
    report.write_text(text, encoding="utf-8")
    result = cli("triage", str(report), "--json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def _layer(report: dict, layer: str) -> str:
    return next(row["text"] for row in report["summary"] if row["layer"] == layer)


def test_the_saved_facts_rejudged_give_no_error_or_warning(cli):
    result = cli("check", "--facts", str(HOST / "check-deep.json"), "--json")
    report = json.loads(result.output)
    assert result.exit_code == 0, report["findings"]
    assert {f["severity"] for f in report["findings"]} <= {"info"}, report["findings"]
    assert _layer(report, "GPUs") == "1 x NVIDIA H200 (cc 9.0, 143771 MiB)"
    assert _layer(report, "driver").startswith("580.159.04 (open kernel module)")


def test_every_output_pasted_together_is_judged_healthy_and_read(cli, tmp_path):
    # Before: a warning cuda-home-invalid ("CUDA_HOME=/usr/local/cuda has no bin/nvcc"), from
    # an nvcc the report shows without its folder; and "cc unknown" for the H200.
    text = "".join(f"$ {name}\n{(HOST / f'{name}.txt').read_text()}\n" for name in TEXTS)
    report = _triage(cli, tmp_path, text)
    assert [f["id"] for f in report["findings"] if f["severity"] != "info"] == []
    assert _layer(report, "GPUs").startswith("1 x NVIDIA H200 (cc 9.0")  # the table's row, cc from the KB or the CSV
    assert _layer(report, "driver").startswith("580.159.04")
    assert report["facts"]["torch.version"]["value"] == "2.11.0+cu130"


@pytest.mark.parametrize("text", forms((HOST / "smi-csv.txt").read_text()), ids=["quoted", "fenced", "crlf", "coloured", "stamped"])
def test_the_csv_query_fwdoctor_asks_for_is_read(cli, tmp_path, text):
    # Before: no reader; the GPU came from prose with no compute capability or driver.
    facts = _triage(cli, tmp_path, text)["facts"]
    gpus = facts["gpus.list"]["value"]
    assert [(g["name"], g["cc"]) for g in gpus] == [("NVIDIA H200", "9.0")]
    assert facts["driver.version"]["value"] == "580.159.04"
    assert facts["gpus.list"]["source"].endswith("nvidia-smi")


def test_the_csv_query_without_header_is_read_when_the_command_is_pasted(cli, tmp_path):
    text = "$ nvidia-smi --query-gpu=index,name,compute_cap --format=csv,noheader\n0, NVIDIA GeForce RTX 5090, 12.0\n1, NVIDIA GeForce RTX 5090, 12.0\n"
    gpus = _triage(cli, tmp_path, text)["facts"]["gpus.list"]["value"]
    assert [(g["index"], g["cc"]) for g in gpus] == [(0, "12.0"), (1, "12.0")]
    # Rows without their command stay unread: "0, NVIDIA ..., 12.0" alone names no columns.
    alone = _triage(cli, tmp_path, "0, NVIDIA GeForce RTX 5090, 12.0\n")["facts"]["gpus.list"]
    assert all(g["cc"] is None for g in alone.get("value") or [])


def test_a_gpu_listed_without_cc_gets_the_kbs_in_the_summary(cli, tmp_path):
    report = _triage(cli, tmp_path, (HOST / "nvidia-smi.txt").read_text())
    assert report["facts"]["gpus.list"]["value"][0]["cc"] is None  # the table has none
    assert _layer(report, "GPUs") == "1 x NVIDIA H200 (cc 9.0 per the KB)"
