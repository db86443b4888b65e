"""The CPU-only conda builds of JAX and TensorFlow, in `conda list` and in conda's install plan.

    jaxlib                    0.4.4           cpu_py311h7146453_1    conda-forge     (conda list)
      jaxlib             conda-forge/linux-64::jaxlib-0.4.4-cpu_py311h7146453_1     (the plan)

conda-forge builds jaxlib and tensorflow in a CPU and a CUDA variant told apart by the build
string ("cpu_py311h...", "cuda120py311h..."): the JAX docs' conda instructions ask for the
CUDA one explicitly with `jaxlib=*=*cuda*`, because on a machine where the solver does not
see a GPU (no working nvidia-smi, a container, a login node) the CPU variant is picked
silently (jax-ml/jax#189, https://github.com/jax-ml/jax/issues/189; jax-ml/jax#25374,
https://github.com/jax-ml/jax/pull/25374). A "cpu" build string is a CPU-only framework
(frameworks.installed, gpu_build False); a CUDA or a pip ("pypi_0") build is left to the
other readers, which know its CUDA. Rows are split on blanks, never matched whole.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

# conda package -> framework
PACKAGES = {"jaxlib": "jax", "tensorflow": "tensorflow", "tensorflow-base": "tensorflow", "tensorflow-cpu": "tensorflow"}
_VERSION = re.compile(r"\d{1,4}(?:\.\d{1,6}){0,3}(?:[a-z]{1,5}\d{0,4})?")
_CPU = re.compile(r"(?:^|_)cpu(?:_|$)")
_MAX_WORD = 200


def _row(text: str) -> tuple[str, str, str] | None:
    """(name, version, build) of a `conda list` row (also collect_env's "[conda] ..." rows)
    or a plan row, else None."""
    words = text.split()
    if words[:1] == ["[conda]"]:
        words = words[1:]
    if any(len(word) > _MAX_WORD for word in words[:3]):
        return None
    if len(words) == 2 and "::" in words[1]:
        parts = words[1].rpartition("::")[2].rsplit("-", 2)
        return (parts[0], parts[1], parts[2]) if len(parts) == 3 and parts[0] == words[0] else None
    if 3 <= len(words) <= 4:
        return words[0], words[1], words[2]
    return None


def find(lines: Lines) -> list[Fragment]:
    found: dict[str, tuple[int, dict[str, Any]]] = {}  # framework -> (line, entry): one per framework
    for i, text in enumerate(lines.norm):
        row = _row(text)
        if row is None or row[0].lower() not in PACKAGES:
            continue
        name, version, build = row[0].lower(), row[1], row[2]
        if not _VERSION.fullmatch(version) or build == "pypi_0" or not _CPU.search(build):
            continue
        found.setdefault(PACKAGES[name], (i + 1, _cpu_build(PACKAGES[name], name, version, build)))
    if not found:
        return []
    numbers = [n for n, _ in found.values()]
    frag = Fragment("conda list", min(numbers), max(numbers))
    frag.add("frameworks.installed", [entry for _, entry in found.values()])
    return [frag]


def _cpu_build(framework: str, package: str, version: str, build: str) -> dict[str, Any]:
    return {"framework": framework, "version": version, "packages": {package: version}, "gpu_build": False, "cuda": None,
            "cudnn": None, "arch_list": None, "requires": {}, "requires_from": None, "pairing": {}, "location": None,
            "why": f"conda build {build} is the CPU variant"}
