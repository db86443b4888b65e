"""A plain static `fwdoctor check`, and `fwdoctor triage`, import only what their answer
needs (issue 30, items 1 and 3).

An import audit, not a timing: the modules below cost a plain check time (PyYAML ~15 ms
measured with `python -X importtime -m fwdoctor check`) and nothing in its output needs
them. A second run is audited: the first one fills the KB's JSON cache (fwdoctor/kb/cache.py),
after which the KB loads without YAML. Each output format imports its own renderer only
(prometheus's for --format prometheus), and triage, which judges text, imports no probe,
no source of facts and nothing that runs programs for them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Not needed by `check` (text or JSON): YAML (the KB comes from its JSON cache, nothing is
# written as YAML), the recipes, images and archives, the fleet, triage, smoke tests, the
# MCP server, the other commands' CLI modules.
NOT_IMPORTED = (
    "yaml", "tarfile", "fwdoctor.recipes", "fwdoctor.image",
    "fwdoctor.fleet", "fwdoctor.triage", "fwdoctor.smoke", "fwdoctor.mcp", "fwdoctor.gate", "fwdoctor.render.explain", "fwdoctor.render.testreport",
    "fwdoctor.cli.recipes", "fwdoctor.cli.stack", "fwdoctor.cli.fleet", "fwdoctor.cli.smoke", "fwdoctor.cli.triage",
    "fwdoctor.render.prometheus",
    # The host's name is os.uname's; the caches name entries by zlib's CRCs, and a warm KB
    # comes from its compiled entries (fwdoctor.kb.cache), not the parsed-YAML layer.
    "socket", "hashlib",
)

# Not needed by `triage FILE` (text or JSON): everything `check` does without, plus the
# probes, the sources of facts (host, interpreter, --deep's child) and check's own CLI.
NOT_IMPORTED_BY_TRIAGE = (
    *(name for name in NOT_IMPORTED if name not in ("fwdoctor.triage", "fwdoctor.cli.triage")),
    "fwdoctor.probes", "fwdoctor.sources", "fwdoctor.interpreter", "fwdoctor.deepstart", "fwdoctor.cli.check",
    # Nothing that runs programs: the CLI's signal handlers are fwdoctor.children's, and a
    # warm KB reads no file through the host (issue 30).
    "fwdoctor.host", "fwdoctor.runner", "subprocess",
)

# As the `fwdoctor` command starts (fwdoctor.launch: the dataclass code cache, then the CLI).
AUDIT = """
import json, sys
out, sys.argv = sys.argv[1], ["fwdoctor", *sys.argv[2:]]
from fwdoctor.launch import main
try:
    main()
except SystemExit:
    pass
with open(out, "w") as handle:
    json.dump(sorted(sys.modules), handle)
"""

REPORT = Path(__file__).parent / "data" / "triage" / "01-driver-too-old-fooocus-11040.md"


def _modules_after(tmp_path: Path, argv: list[str]) -> set[str]:
    """The modules loaded by `fwdoctor ARGV`, on its second run (the KB cache warm)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FWDOCTOR_NO_CACHE", "FWDOCTOR_KB")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    out = tmp_path / "modules.json"
    for _ in range(2):
        subprocess.run([sys.executable, "-c", AUDIT, str(out), *argv], env=env, cwd=tmp_path, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return set(json.loads(out.read_text()))


def _unwanted(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(name for name in modules for heavy in names if name == heavy or name.startswith(heavy + "."))


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_plain_static_check_does_not_import_yaml_recipes_other_commands_or_other_renderers(tmp_path: Path, fmt: str) -> None:
    modules = _modules_after(tmp_path, ["check", "--format", fmt])
    assert "fwdoctor.engine" in modules and "fwdoctor.render.report" in modules  # the check did run and render
    assert _unwanted(modules, NOT_IMPORTED) == []


def test_check_imports_the_prometheus_renderer_when_that_format_is_asked(tmp_path: Path) -> None:
    # The audit's other side: the lazy import is where the format needs it.
    assert "fwdoctor.render.prometheus" in _modules_after(tmp_path, ["check", "--format", "prometheus"])


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_triage_imports_no_probe_no_source_and_nothing_check_alone_needs(tmp_path: Path, fmt: str) -> None:
    modules = _modules_after(tmp_path, ["triage", "--format", fmt, str(REPORT)])
    assert "fwdoctor.triage.judge" in modules and "fwdoctor.rules" in modules  # it did judge the report
    assert _unwanted(modules, NOT_IMPORTED_BY_TRIAGE) == []
