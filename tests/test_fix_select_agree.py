"""One story (issue 29, item 1): on every host of the select grid (tests/test_select_grid.py's
drivers x GPUs), `fix` plans from the same selection `select torch` makes. Where `select`
refuses because the driver cannot run the GPU (an RTX 5090 on R550), `fix` says the driver
comes first, names the same problem and plans no toolkit, wheel or source build before it
changes; elsewhere `fix` installs exactly the wheel `select` picks.

Hosts are facts files as `fwdoctor facts` writes them; answers from the shipped KB, like the
grid's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fwdoctor.cli.recipes import plan_fixes, select_for
from fwdoctor.kb import KB_DIR
from fwdoctor.sources import SourceRequest

from test_select_grid import DRIVERS, GPUS

TORCHES = {"no-torch": {"installed": False}, "torch-2.3-cu121": {"installed": True, "version": "2.3.0+cu121", "cuda": "12.1"}}


def _facts_file(tmp_path: Path, gpu: str, driver: str, torch: dict[str, Any]) -> str:
    def fact(value: Any) -> dict[str, Any]:
        return {"value": value, "source": "the select grid"}

    listed = [{"index": 0, "name": gpu, "cc": GPUS[gpu][0], "memory_mib": 16384, "uuid": None, "bus_id": None, "mig": False, "persistence": True}]
    facts = {
        "driver.loaded": fact(True), "driver.version": fact(driver), "gpus.list": fact(listed), "pci.nvidia_gpus": fact([]),
        "python.executable": fact("/opt/venv/bin/python"), "python.version": fact("3.12.8"),
        "python.site_packages": fact(["/opt/venv/lib/site-packages"]), "python.externally_managed": fact(None),
        **{f"torch.{k}": fact(v) for k, v in torch.items()},
    }
    path = tmp_path / "host.json"
    path.write_text(json.dumps({"facts": facts, "probe_failures": []}))
    return str(path)


@pytest.mark.parametrize("torch", sorted(TORCHES))
@pytest.mark.parametrize("branch", sorted(DRIVERS))
@pytest.mark.parametrize("gpu", sorted(GPUS))
def test_fix_and_select_tell_one_story_on_every_host_of_the_grid(tmp_path, gpu, branch, torch):
    source = SourceRequest(facts_file=_facts_file(tmp_path, gpu, DRIVERS[branch], TORCHES[torch]))
    selection = select_for("torch", source, kb_dir=str(KB_DIR))
    planned = plan_fixes((), source, str(KB_DIR))
    first = planned.todo.driver_first
    if selection.driver_problems:
        # The driver first: the same problem and hints, and nothing planned that needs a new driver.
        assert first is not None and first.problems == selection.driver_problems and first.hints == selection.driver_hints
        assert [g.recipe for g in planned.todo.groups if g.recipe != "env"] == []
        return
    assert first is None
    wheels = [p for p in planned.plans if p.recipe == "torch-wheel" and not p.refused]
    if torch == "no-torch":
        if selection.choice is None:
            assert wheels == []
        else:
            assert [p.title for p in wheels] == [f"install torch {selection.choice.local_version} into /opt/venv/bin/python"]


def test_an_rtx_5090_on_r550_gets_the_driver_first_through_the_cli(cli, tmp_path):
    facts = _facts_file(tmp_path, "GeForce RTX 5090", DRIVERS[550], TORCHES["torch-2.3-cu121"])
    result = cli("fix", "--facts", facts, "--kb", str(KB_DIR))
    assert result.exit_code == 1
    assert "fwdoctor: the driver comes first: " in result.stderr and "(R570)" in result.stderr
    assert "nothing planned for gpu-arch-unsupported-by-torch until the driver changes" in result.stderr
    assert "#!/bin/sh" not in result.stdout  # no toolkit, wheel or source-build plan
    document = json.loads(cli("fix", "--facts", facts, "--kb", str(KB_DIR), "--json").stdout)
    assert document["plans"] == [] and document["driver_first"]["held"] == ["gpu-arch-unsupported-by-torch"]
