"""Dependencies point one way: the core imports nothing from the recipes or the CLI, the
recipes nothing from the CLI, and nothing imports the old top-level names.

    fwdoctor.cli  ->  fwdoctor.recipes, fwdoctor.smoke  ->  the core (model, host, probes,
                                                            rules, kb, engine, report, ...)

Read from the source with `ast`, so a late import inside a function counts as much as one
at the top of a module.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from helpers import REPO

CORE = REPO / "doctor"
CLI = CORE / "cli"
MCP = CORE / "mcp"  # a front end beside the CLI (`fwdoctor mcp`), not core
RECIPES = REPO / "recipes"


def _module_name(path: Path) -> str:
    if path.is_relative_to(RECIPES):
        parts = ("fwdoctor", "recipes", *path.relative_to(RECIPES).with_suffix("").parts)
    else:
        parts = ("fwdoctor", *path.relative_to(CORE).with_suffix("").parts)
    return ".".join(p for p in parts if p != "__init__")


def _imports(path: Path) -> set[str]:
    """Every module `path` imports (absolute names), at any depth of the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _files(folder: Path, exclude: Path | None = None) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if exclude is None or not p.is_relative_to(exclude))


def _violations(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for path in files:
        for name in sorted(_imports(path)):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                bad.append(f"{_module_name(path)} imports {name}")
    return bad


def test_the_core_imports_nothing_from_the_recipes_or_the_cli():
    # The entry points above the CLI: `python -m fwdoctor` and the `fwdoctor` command
    # (fwdoctor.launch starts the CLI after the dataclass code cache, which must come first).
    entry_points = {CORE / "__main__.py", CORE / "launch.py"}
    core = [p for p in _files(CORE, exclude=CLI) if p not in entry_points and not p.is_relative_to(MCP)]
    assert _violations(core, ("fwdoctor.cli", "fwdoctor.recipes")) == []


def test_only_the_mcp_command_reaches_the_mcp_front_end_and_only_it_the_sdk():
    """fwdoctor.mcp sits on top, beside the CLI: only `fwdoctor mcp` imports it, and the MCP
    SDK (the optional extra) is imported by fwdoctor.mcp.server alone."""
    others = [p for p in [*_files(CORE, exclude=MCP), *_files(RECIPES)] if p != CLI / "mcp.py"]
    assert _violations(others, ("fwdoctor.mcp", "mcp", "mcp_types")) == []
    plain = [p for p in _files(MCP) if p.name != "server.py"]
    assert _violations(plain, ("mcp", "mcp_types")) == []


def test_the_recipes_import_nothing_from_the_cli():
    assert _violations(_files(RECIPES), ("fwdoctor.cli",)) == []


def test_nothing_imports_the_old_top_level_names():
    files = [*_files(CORE), *_files(RECIPES), *_files(REPO / "tests"), *_files(REPO / "benchmarks")]
    assert _violations(files, ("doctor", "recipes")) == []


def test_every_cli_module_is_reachable_from_the_command_table():
    from fwdoctor.cli import COMMANDS

    from fwdoctor.cli.fleet import SUBCOMMANDS

    modules = {f"fwdoctor.cli.{module}" for _, module, _ in (*COMMANDS, *SUBCOMMANDS)}
    helpers = {"fwdoctor.cli", "fwdoctor.cli.common", "fwdoctor.cli.errors", "fwdoctor.cli.output"}
    on_disk = {_module_name(p) for p in _files(CLI)}
    assert on_disk - helpers == modules


@pytest.mark.parametrize("name, module, attr", __import__("fwdoctor.cli", fromlist=["COMMANDS"]).COMMANDS)
def test_every_command_in_the_table_exists_under_its_name(name, module, attr):
    import importlib

    command = getattr(importlib.import_module(f"fwdoctor.cli.{module}"), attr)
    assert command.name == name


def test_the_rules_read_only_the_kb_areas_check_loads_up_front():
    from fwdoctor.rules import KB_AREAS

    used = set()
    for path in _files(CORE / "rules"):
        used.update(re.findall(r"\bkb\.(cuda|gpus|torch|libs|docker|build)\b", path.read_text(encoding="utf-8")))
    # The build pre-flight's rules run only for `fwdoctor build`, which loads its own area;
    # on a plain check their inputs are unknown, so kb.build is never touched there.
    assert used - {"build"} <= set(KB_AREAS), f"rules read {sorted(used - set(KB_AREAS))}; add it to fwdoctor.rules.KB_AREAS"
