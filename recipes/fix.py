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

from packaging.version import Version

from fwdoctor import selection as sel
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


@dataclass(frozen=True)
class DriverFirst:
    """The driver cannot run a GPU of this host (`select torch`'s refusal, from the same
    facts): every plan but the env file waits for the driver, because a toolkit, a wheel or
    a source build for this GPU cannot work before the driver changes."""

    problems: tuple[str, ...]
    hints: tuple[str, ...]
    held: tuple[str, ...]  # the finding ids whose plans wait

    def lines(self) -> list[str]:
        lines = [f"the driver comes first: {p}" for p in self.problems]
        lines += [f"  {h}" for h in self.hints]
        if self.held:
            lines.append(f"  nothing planned for {', '.join(self.held)} until the driver changes (then run `fwdoctor fix` again)")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"problems": list(self.problems), "hints": list(self.hints), "held": list(self.held)}


@dataclass
class FixPlan:
    groups: list[FixGroup]
    manual: list[Finding]  # a fix with commands but no recipe: the user runs them
    driver_first: DriverFirst | None = None

    @property
    def empty(self) -> bool:
        return not self.groups and not self.manual and self.driver_first is None


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


def driver_refusal(facts: Facts, kb: KB) -> sel.Selection | None:
    """`select torch`'s driver refusal for the host these facts describe, or None."""
    try:
        target = sel.target_from_facts(facts, kb)
    except sel.SelectError:
        # The Python is unknown: the driver-runs-the-GPU question does not depend on it.
        pythons = sorted({p for v in kb.torch.variants() for p in v.pythons}, key=Version, reverse=True)
        if not pythons:
            return None
        try:
            target = sel.target_from_facts(facts, kb, python=pythons[0])
        except sel.SelectError:
            return None
    return sel.driver_refusal(kb, target)


def hold_for_driver(todo: FixPlan, facts: Facts, kb: KB) -> FixPlan:
    """The driver-first rule: when the driver cannot run a GPU here, only the env file is
    planned; the other groups are held and `driver_first` says why and what the right
    branch would get."""
    refusal = driver_refusal(facts, kb)
    if refusal is None:
        return todo
    kept = [g for g in todo.groups if g.recipe == env_recipe.RECIPE]
    held = tuple(dict.fromkeys(fid for g in todo.groups if g.recipe != env_recipe.RECIPE for fid in g.finding_ids))
    return FixPlan(kept, todo.manual, DriverFirst(refusal.driver_problems, refusal.driver_hints, held))


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
