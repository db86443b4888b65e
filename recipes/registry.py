"""Every recipe, by id: `RECIPES` maps a FixRef.recipe to its plan function.

A plan function is `plan(facts, kb, options) -> fwdoctor.recipes.plan.Plan`: pure, no side
effects; only recipes/apply.py runs the result. Explicit, so grep finds them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from fwdoctor.recipes import cuda_toolkit, env, torch_wheel
from fwdoctor.recipes.plan import Plan

if TYPE_CHECKING:
    from fwdoctor.kb import KB

PlanFunc = Callable[[Any, "KB", Mapping[str, Any]], Plan]


def torch_source_plan(facts: Any, kb: KB, options: Mapping[str, Any]) -> Plan:
    """`torch-source` (a finding with no official wheel): a multi-hour build that `fix`
    does not start on its own; the plan says how to run it (recipes/torch_source.py)."""
    import shlex

    arch = str(options.get("arch_list") or "auto")
    python = str(options.get("python") or facts.get("python.executable") or "PYTHON")
    cuda = (facts.get("cuda.active") or {}).get("root") or "VERSION|PATH"
    command = " ".join(shlex.quote(a) for a in ("fwdoctor", "build", "torch", "--cuda", str(cuda), "--arch", arch, "--python", python))
    return Plan(
        "torch-source",
        f"build torch from source for {arch}",
        refused=f"no official wheel fits; building torch from source takes hours, so `fix` leaves it to you:\n{command}    # prints the plan; add --apply to build",
    )


RECIPES: tuple[tuple[str, PlanFunc], ...] = (
    (torch_wheel.RECIPE, torch_wheel.plan),
    (cuda_toolkit.RECIPE, cuda_toolkit.plan),
    (env.RECIPE, env.plan),
    ("torch-source", torch_source_plan),
)

BY_ID: dict[str, PlanFunc] = dict(RECIPES)


def recipe_ids() -> tuple[str, ...]:
    return tuple(rid for rid, _ in RECIPES)


def plan_for(recipe: str, facts: Any, kb: KB, options: Mapping[str, Any] | None = None) -> Plan:
    """The plan of recipe `recipe`. Raises KeyError naming the unknown id."""
    func = BY_ID.get(recipe)
    if func is None:
        raise KeyError(f"unknown recipe {recipe!r} (known: {', '.join(recipe_ids())})")
    return func(facts, kb, dict(options or {}))
