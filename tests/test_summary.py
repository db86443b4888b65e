"""Versions at a glance (fwdoctor.render.summary): one line per layer at the top of `check`'s text
and markdown reports and in its JSON. The full-stack facts are this machine's real ones
(torch 2.14.1+cu130 with its pip cuDNN/NCCL, read with `fwdoctor facts`) plus an H100 host's
driver and GPUs as NVML reports them; the root-folder case is the driver-ok fixture."""

from __future__ import annotations

import json

from click.testing import CliRunner

from fwdoctor.cli import main
from fwdoctor.engine import judge
from fwdoctor.model import Fact, Facts
from fwdoctor.render.report import render_markdown, render_text, to_json
from fwdoctor.render.summary import LAYERS, summary
from fwdoctor.render.textfit import unwrap
from helpers import REPO

ROOTS = REPO / "tests" / "roots"

H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "memory_mib": 81559, "uuid": "GPU-x", "bus_id": "00000000:18:00.0", "source": "nvml"}
SITE = "/venv/lib/python3.11/site-packages"
FULL = Facts([
    Fact("driver.loaded", True, source="/sys/module"),
    Fact("driver.version", "580.95.05", source="/proc/driver/nvidia/version"),
    Fact("driver.module_flavor", "open", source="/proc/driver/nvidia/version"),
    Fact("driver.cuda_version", "13.0", source="nvml"),
    Fact("gpus.list", [H100, {**H100, "index": 1}, {**H100, "index": 2, "name": "Tesla V100-SXM2-32GB", "cc": "7.0", "memory_mib": 32768}], source="nvml"),
    Fact("cuda.active", {"root": "/usr/local/cuda-13.0", "version": "13.0.88", "why": "nvcc first on PATH"}, source="nvcc first on PATH"),
    Fact("torch.installed", True, source=SITE),
    Fact("torch.version", "2.14.1+cu130", source=f"{SITE}/torch/version.py"),
    Fact("torch.cuda", "13.0", source=f"{SITE}/torch/version.py"),
    Fact("torch.location", f"{SITE}/torch", source=SITE),
    Fact("cudnn.installs", [{"kind": "pip", "header_version": "9.24.0", "library_version": "9", "package": "nvidia-cudnn-cu13 9.24.0.43"}], source="site-packages"),
    Fact("nccl.installs", [{"kind": "pip", "header_version": "2.30.7", "library_version": "2.30.7", "package": "nvidia-nccl-cu13 2.30.7"}], source="site-packages"),
    Fact("python.executable", "/venv/bin/python", source="$VIRTUAL_ENV/bin/python, the active environment"),
    Fact("python.version", "3.11.7", source="/venv/pyvenv.cfg"),
])


def test_every_layer_in_order_with_versions_and_where_from():
    assert summary(FULL) == [
        ("driver", "580.95.05 (open kernel module), supports CUDA up to 13.0"),
        ("GPUs", "2 x NVIDIA H100 80GB HBM3 (cc 9.0, 81559 MiB); 1 x Tesla V100-SXM2-32GB (cc 7.0, 32768 MiB)"),
        ("toolkit", "CUDA 13.0.88 at /usr/local/cuda-13.0 (nvcc first on PATH)"),
        ("torch", f"2.14.1+cu130 (CUDA 13.0) at {SITE}/torch"),
        ("cuDNN", "9.24.0 (pip nvidia-cudnn-cu13 9.24.0.43)"),
        ("NCCL", "2.30.7 (pip nvidia-nccl-cu13 2.30.7)"),
        ("Python", "3.11.7 at /venv/bin/python ($VIRTUAL_ENV/bin/python, the active environment)"),
    ]


def test_absent_unknown_and_never_collected_read_differently():
    facts = Facts([
        Fact("driver.version", None, source="no nvidia kernel module loaded"),
        Fact.unknown("torch.version", "no interpreter to inspect"),
        Fact("torch.installed", False, source=SITE),
        Fact("cudnn.installs", [], source="site-packages"),
    ])
    lines = dict(summary(facts))
    assert lines["driver"] == "none loaded (no nvidia kernel module loaded)"
    assert lines["torch"] == "unknown (no interpreter to inspect)"
    assert lines["cuDNN"] == "none found"
    assert lines["NCCL"] == "not collected"  # an old facts file, say
    assert [layer for layer, _ in summary(facts)] == list(LAYERS)


def test_text_markdown_and_json_reports_open_with_the_same_lines():
    report = judge(FULL, None, [])
    text = unwrap(render_text(report)).splitlines()  # the text wraps at 80 columns
    assert text[2:9] == [f"  {layer:<8} {line}" for layer, line in summary(FULL)]
    markdown = render_markdown(report)
    assert "| layer | version |" in markdown
    assert "| driver | `580.95.05 (open kernel module), supports CUDA up to 13.0` |" in markdown  # host text only in code
    assert to_json(report)["summary"][0] == {"layer": "driver", "text": "580.95.05 (open kernel module), supports CUDA up to 13.0"}


def test_check_on_a_root_folder_shows_the_summary_before_the_findings():
    result = CliRunner().invoke(main, ["check", "--root", str(ROOTS / "driver-ok")])
    lines = result.output.splitlines()
    assert lines[2] == "  driver   580.95.05 (open kernel module)"
    assert lines[3].startswith("  GPUs     1 x NVIDIA H100 80GB HBM3")
    data = json.loads(CliRunner().invoke(main, ["check", "--root", str(ROOTS / "driver-ok"), "--json"]).output)
    assert [row["layer"] for row in data["summary"]] == list(LAYERS)
