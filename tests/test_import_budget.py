"""A plain static `fwdoctor check` imports only what its answer needs (issue 30, item 1).

An import audit, not a timing: the modules below cost a plain check time (PyYAML ~15 ms
measured with `python -X importtime -m fwdoctor check`) and nothing in its output needs
them. A second run is audited: the first one fills the KB's JSON cache (fwdoctor/kb/cache.py),
after which the KB loads without YAML.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Not needed by `check` (text or JSON): YAML (the KB comes from its JSON cache, nothing is
# written as YAML), the recipes, images and archives, the fleet, triage, smoke tests, the
# MCP server, the other commands' CLI modules.
NOT_IMPORTED = (
    "yaml", "tarfile", "fwdoctor.recipes", "fwdoctor.image",
    "fwdoctor.fleet", "fwdoctor.triage", "fwdoctor.smoke", "fwdoctor.mcp", "fwdoctor.gate", "fwdoctor.render.explain", "fwdoctor.render.testreport",
    "fwdoctor.cli.recipes", "fwdoctor.cli.stack", "fwdoctor.cli.fleet", "fwdoctor.cli.smoke", "fwdoctor.cli.triage",
)

AUDIT = """
import json, sys
from fwdoctor.cli import main
try:
    main(["check", "--json"], standalone_mode=True)
except SystemExit:
    pass
with open(sys.argv[1], "w") as handle:
    json.dump(sorted(sys.modules), handle)
"""


def test_a_plain_static_check_does_not_import_yaml_recipes_or_other_commands(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("FWDOCTOR_NO_CACHE", "FWDOCTOR_KB")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    out = tmp_path / "modules.json"
    for _ in range(2):
        subprocess.run([sys.executable, "-c", AUDIT, str(out)], env=env, cwd=tmp_path, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    modules = set(json.loads(out.read_text()))
    assert "fwdoctor.engine" in modules  # the check did run
    imported = sorted(name for name in modules for heavy in NOT_IMPORTED if name == heavy or name.startswith(heavy + "."))
    assert imported == []
