"""`install jax` / `install tensorflow`: pip-install the release `select jax|tensorflow` picks,
with the extra that brings its CUDA wheels (jax[cuda13], tensorflow[and-cuda]), pinned, into
the target interpreter; then verify by importing it and listing its devices.

A plan, never an action: recipes/apply.py runs it after confirmation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from fwdoctor.recipes.plan import Plan, Step
from fwdoctor.recipes.select_frameworks import select_framework
from fwdoctor.selection import Target

if TYPE_CHECKING:
    from fwdoctor.kb import KB

RECIPE = "framework-wheel"
# What each framework prints to prove it imported and what it runs on.
VERIFY = {
    "jax": "import jax; print(jax.__version__, jax.devices())",
    "tensorflow": "import tensorflow as tf; print(tf.__version__, tf.config.list_physical_devices())",
}


def plan(framework: str, target: Target, kb: KB, options: Mapping[str, Any]) -> Plan:
    python = str(options.get("python") or "")
    if framework not in VERIFY:
        return Plan(RECIPE, f"install {framework}", refused=f"no install recipe for {framework!r} (jax, tensorflow)")
    if not python:
        return Plan(RECIPE, f"install {framework}", refused="no target interpreter: pass --python /path/to/python")
    choice = select_framework(kb, framework, target)
    if choice.release is None:
        lines = [choice.reason, *(f"not {r.candidate}: {' | '.join(r.reasons)}" for r in choice.rejected[:6])]
        return Plan(RECIPE, f"install {framework}", refused="\n".join(lines))
    requirement = choice.pip_requirement()
    argv: list[str] = [python, "-m", "pip", "install"]
    if framework == "tensorflow":
        # tensorflow-cpu and tensorflow install the same `tensorflow` package: keep one.
        steps = [Step(argv=(python, "-m", "pip", "uninstall", "-y", "tensorflow-cpu"), why="tensorflow-cpu would shadow the GPU build (same import name)")]
    else:
        steps = []
    if options.get("index_url"):
        argv += ["--index-url", str(options["index_url"])]
    argv.append(requirement)
    steps.append(Step(argv=tuple(argv), why=f"the newest {framework} release this host runs ({choice.build.package + ' for CUDA ' + str(choice.build.cuda) if choice.build else 'CPU'})", undo=f"{python} -m pip uninstall -y {requirement.split('[')[0].split('==')[0]}"))
    notes = [f"not {r.candidate}: {' | '.join(r.reasons)}" for r in choice.rejected[:8]]
    return Plan(
        recipe=RECIPE,
        title=f"install {requirement} into {python}",
        steps=tuple(steps),
        verify=(Step(argv=(python, "-c", VERIFY[framework]), why="import it and list its devices", timeout_s=300.0),),
        notes=tuple(notes),
        clears=("framework-cpu-build-on-gpu-host", "driver-too-old-for-framework", "framework-nvidia-wheel-mismatch", "framework-packages-mismatched"),
    )
