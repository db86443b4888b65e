"""One question, one answer: the torch wheel `check` and `fix` recommend is the wheel
`select torch` and `install torch` pick, on every host of a matrix (no GPU, old driver,
new GPU, mixed GPUs, several Pythons), through the command line as users run it.

Hosts are facts files (the `fwdoctor facts` format) so each command sees the same host;
answers come from the frozen tests/kb."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.usefixtures("use_test_kb")

H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "memory_mib": 81559}
V100 = {"index": 1, "name": "Tesla V100-SXM2-32GB", "cc": "7.0", "memory_mib": 32768}
P100 = {"index": 0, "name": "Tesla P100-PCIE-16GB", "cc": "6.0", "memory_mib": 16280}
RTX5090 = {"index": 0, "name": "NVIDIA GeForce RTX 5090", "cc": "12.0", "memory_mib": 32607}

# name: (driver version or None, GPUs, Python)
HOSTS: dict[str, tuple[str | None, list[dict[str, Any]], str]] = {
    "cpu-only-3.12": (None, [], "3.12.8"),
    "cpu-only-3.10": (None, [], "3.10.14"),
    "h100-r580-3.12": ("580.95.05", [H100], "3.12.8"),
    "h100-r535-3.11": ("535.230.02", [H100], "3.11.7"),
    "h100-r515-3.11": ("515.76", [H100], "3.11.7"),
    "h100+v100-r580-3.12": ("580.95.05", [H100, V100], "3.12.8"),
    "p100-r535-3.10": ("535.230.02", [P100], "3.10.14"),
    "rtx5090-r575-3.13": ("575.57.08", [RTX5090], "3.13.1"),
    "h100-r580-3.14": ("580.95.05", [H100], "3.14.0"),
}


def _facts(driver: str | None, gpus: list[dict[str, Any]], python: str, torch: dict[str, Any]) -> dict[str, Any]:
    def fact(value: Any, source: str = "test matrix") -> dict[str, Any]:
        return {"value": value, "source": source}

    facts = {
        "driver.loaded": fact(driver is not None),
        "driver.version": fact(driver),
        "gpus.list": fact([{**g, "uuid": None, "bus_id": None, "mig": False, "persistence": True} for g in gpus]),
        "pci.nvidia_gpus": fact([]),
        "python.executable": fact("/opt/venv/bin/python", "$VIRTUAL_ENV/bin/python, the active environment"),
        "python.version": fact(python),
        "python.site_packages": fact(["/opt/venv/lib/site-packages"]),
        "python.externally_managed": fact(None),
    }
    facts.update({f"torch.{key}": fact(value) for key, value in torch.items()})
    return {"facts": facts, "probe_failures": []}


def _write(tmp_path: Path, name: str, data: dict[str, Any]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return str(path)


def _stdout_json(result) -> dict[str, Any]:
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def _fix_wheel(cli, facts_file: str, finding_id: str) -> str | None:
    report = _stdout_json(cli("check", "--facts", facts_file, "--json"))
    (finding,) = [f for f in report["findings"] if f["id"] == finding_id]
    options = (finding.get("fix") or {}).get("options") or {}
    return f"{options['torch']}+{options['variant']}" if options.get("variant") else None


def _selected(cli, facts_file: str, *extra: str) -> str | None:
    chosen = _stdout_json(cli("select", "torch", "--facts", facts_file, "--json", *extra))["choice"]
    return chosen["version"] if chosen else None


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_without_torch_check_fix_select_and_install_name_one_wheel(cli, tmp_path, host):
    driver, gpus, python = HOSTS[host]
    facts_file = _write(tmp_path, host, _facts(driver, gpus, python, {"installed": False}))
    selected = _selected(cli, facts_file)
    assert _fix_wheel(cli, facts_file, "torch-not-installed") == selected
    plans = _stdout_json(cli("fix", "--facts", facts_file, "--json"))["plans"]
    fixed = [p["plan"]["title"] for p in plans if p["plan"]["recipe"] == "torch-wheel"]
    installed = _stdout_json(cli("install", "torch", "--facts", facts_file, "--json"))["plan"]
    if selected is None:
        assert installed["refused"]
    else:
        assert fixed == [f"install torch {selected} into /opt/venv/bin/python"]
        assert installed["title"] == f"install torch {selected} into /opt/venv/bin/python"


def test_a_cpu_only_host_gets_the_cpu_wheel_everywhere(cli, tmp_path):
    facts_file = _write(tmp_path, "cpu", _facts(None, [], "3.12.8", {"installed": False}))
    selected = _selected(cli, facts_file)
    assert selected is not None and selected.endswith("+cpu")
    # Asked for a GPU host, the same command plans a CUDA wheel.
    assert not _selected(cli, facts_file, "--gpu", "9.0", "--driver", "580.95.05").endswith("+cpu")


@pytest.mark.parametrize(
    ("host", "torch", "finding"),
    [
        ("h100-r515-3.11", {"installed": True, "version": "2.14.1+cu130", "cuda": "13.0"}, "driver-too-old-for-torch"),
        ("h100-r535-3.11", {"installed": True, "version": "2.14.1+cu130", "cuda": "13.0"}, "driver-too-old-for-torch"),
        ("h100-r580-3.12", {"installed": True, "version": "2.13.0+cpu", "cuda": None}, "torch-cpu-build-on-gpu-host"),
        ("h100+v100-r580-3.12", {"installed": True, "version": "2.14.1+cu130", "cuda": "13.0"}, "gpu-arch-unsupported-by-torch"),
        ("p100-r535-3.10", {"installed": True, "version": "2.14.1+cu130", "cuda": "13.0"}, "gpu-arch-unsupported-by-torch"),
    ],
)
def test_a_broken_torch_is_fixed_with_what_select_picks_for_its_release_or_else_the_newest(cli, tmp_path, host, torch, finding):
    """A fix changes as little as it can: the installed release when one of its wheels fits
    this host (`select torch --torch ==RELEASE`), else the newest that does (`select torch`)."""
    driver, gpus, python = HOSTS[host]
    facts_file = _write(tmp_path, host, _facts(driver, gpus, python, torch))
    release = torch["version"].split("+")[0]
    same = _selected(cli, facts_file, "--torch", f"=={release}")
    expected = same if same is not None and not same.endswith("+cpu") else _selected(cli, facts_file)
    assert expected is not None
    assert _fix_wheel(cli, facts_file, finding) == expected
