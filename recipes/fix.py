"""`fwdoctor fix`: from findings to plans, and the check again afterwards.

Findings that name the same recipe with the same options share one plan; every `env`
finding goes into one env file (their options merged). Findings whose fix is only a
command to run by hand are returned apart. After the plans ran, `recheck_env` builds the
environment a shell that sourced the written env file would have, so the re-check sees
the host as the user will.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from fwdoctor.kb import KB
from fwdoctor.model import Facts, Finding
from fwdoctor.recipes import env as env_recipe
from fwdoctor.recipes import registry
from fwdoctor.recipes.plan import Plan


@dataclass
class FixGroup:
    """One plan to make: a recipe, its (merged) options, and the findings it answers."""

    recipe: str
    options: dict[str, Any]
    finding_ids: list[str] = field(default_factory=list)


@dataclass
class FixPlan:
    groups: list[FixGroup]
    manual: list[Finding]  # a fix with commands but no recipe: the user runs them

    @property
    def empty(self) -> bool:
        return not self.groups and not self.manual


def group_findings(findings: Sequence[Finding], wanted: Sequence[str] = ()) -> FixPlan:
    """Group `findings` (only the ids in `wanted`, when given) into one plan per recipe."""
    groups: dict[tuple[str, str], FixGroup] = {}
    manual: list[Finding] = []
    for finding in findings:
        if wanted and finding.id not in wanted:
            continue
        fix = finding.fix
        if fix is None or not fix.recipe:
            if fix is not None and fix.commands:
                manual.append(finding)
            continue
        options = dict(fix.options)
        if fix.recipe == env_recipe.RECIPE:
            # One env file for everything: merge what each finding asks of it.
            group = groups.setdefault((fix.recipe, ""), FixGroup(fix.recipe, {}))
            merge_options(group.options, options)
        else:
            key = (fix.recipe, json.dumps(options, sort_keys=True, default=str))
            group = groups.setdefault(key, FixGroup(fix.recipe, options))
        group.finding_ids.append(finding.id)
    return FixPlan(list(groups.values()), manual)


def merge_options(into: dict[str, Any], more: Mapping[str, Any]) -> None:
    """Lists add up, mappings merge, a scalar already set stays (the first finding's)."""
    for key, value in more.items():
        have = into.get(key)
        if isinstance(have, list) and isinstance(value, (list, tuple)):
            into[key] = have + [v for v in value if v not in have]
        elif isinstance(have, dict) and isinstance(value, Mapping):
            into[key] = {**value, **have}
        elif key not in into:
            into[key] = list(value) if isinstance(value, tuple) else value


def plan_group(group: FixGroup, facts: Facts, kb: KB, host_path: str, python: str | None) -> Plan:
    """The plan for one group. Raises KeyError naming an unknown recipe."""
    options = dict(group.options)
    if group.recipe == env_recipe.RECIPE:
        options.setdefault("path", host_path)
    if python and "python" not in options:
        options["python"] = python
    return registry.plan_for(group.recipe, facts, kb, options)


def recheck_env(plans: Sequence[Plan], base: Mapping[str, str] | None = None) -> str | None:
    """A temporary env file (for `--env-file`): `base` (default: our environment) plus what
    the env recipe's files set or unset; None when no plan wrote an env file."""
    if not any(p.recipe == env_recipe.RECIPE for p in plans):
        return None
    env = dict(os.environ if base is None else base)
    for plan in plans:
        if plan.recipe != env_recipe.RECIPE:
            continue
        for written in plan.files:
            for line in written.content.splitlines():
                if line.startswith("export ") and "=" in line and "$" not in line:
                    key, _, value = line[len("export "):].partition("=")
                    parts = shlex.split(value)
                    env[key] = parts[0] if parts else ""
                elif line.startswith("unset "):
                    env.pop(line.split()[1], None)
    handle = tempfile.NamedTemporaryFile("w", suffix=".env", delete=False)
    with handle:
        for key, value in env.items():
            if "\n" not in value and key.isidentifier():
                handle.write(f"{key}={value}\n")
    return handle.name
