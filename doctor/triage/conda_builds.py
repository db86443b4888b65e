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

The same for pytorch (issue 26): the pytorch channel's CPU build "py3.8_cpu_0" (and
conda-forge's "cpu_mkl_...") in a `conda list` row or in a conda spec that names the build
("pytorch=1.9.0=py3.8_cpu_0", as a reply quotes the package list) is conda.torch_build with
kind "cpu", as fwdoctor.probes.conda reads a conda-meta record. A conda request for a CUDA
package beside it ("cudatoolkit=11.3" in `conda install` or an environment.yml,
"pytorch-cuda=12.1") says the user means to run on a GPU (report.gpu_expected): conda gives
the CPU build when no build of that pytorch exists for that CUDA (pytorch/pytorch#69202) or
another package pins the CPU one (meta-pytorch/data#315's cpuonly).
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines, command

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


# "pytorch=1.9.0=py3.8_cpu_0": a conda spec with its build (a word, not a row)
_SPEC = re.compile(r"(?<![\w-])pytorch==?(?P<version>\d{1,4}(?:\.\d{1,6}){0,3})=(?P<build>[\w.]{1,80})")
# A CUDA package asked of conda: "cudatoolkit=11.3" (install command, environment.yml), "pytorch-cuda=12.1"
_CUDA_REQUEST = re.compile(r"(?<![\w-])(?:cudatoolkit|pytorch-cuda)\s{0,2}[=<>]{1,2}\s{0,2}\d{1,2}\.\d{1,2}")


def find(lines: Lines) -> list[Fragment]:
    return _frameworks(lines) + _pytorch(lines)


def _pytorch(lines: Lines) -> list[Fragment]:
    """conda.torch_build (a CPU build only) and report.gpu_expected (a CUDA package asked of conda)."""
    out: list[Fragment] = []
    cpu: tuple[int, dict[str, Any]] | None = None
    request: tuple[int, str] | None = None
    for i, text in enumerate(lines.norm):
        if cpu is None:
            row = _row(text)
            spec = _SPEC.search(text) if "pytorch=" in text else None
            if row is not None and row[0] == "pytorch" and _VERSION.fullmatch(row[1]):
                version, build, channel = row[1], row[2], (text.split()[3:4] or [None])[0]
            elif spec is not None:
                version, build, channel = spec.group("version"), spec.group("build"), None
            else:
                version = build = channel = None
            # _CPU is fwdoctor.probes.conda's test for a CPU build string (triage imports no probe)
            if build is not None and _CPU.search(build):
                cpu = (i + 1, {"version": version, "build": build, "channel": channel, "kind": "cpu", "cuda": None, "depends": [],
                               "record": f"report line {i + 1}"})
        if request is None and ("cudatoolkit" in text or "pytorch-cuda" in text):
            found = _CUDA_REQUEST.search(text)
            if found:
                request = (i + 1, found.group(0))
    kind = "conda list"
    if cpu is None:
        cpu = _said_cpu(lines)
        kind = "prose"
    if cpu is None:
        return out
    frag = Fragment(kind, cpu[0], cpu[0])
    frag.add("conda.torch_build", cpu[1])
    out.append(frag)
    if request is not None:
        asked = Fragment("conda list", request[0], request[0])
        asked.add("report.gpu_expected", f"conda was asked for {request[1]}")
        out.append(asked)
    return out


# The reporter's own word that conda gave the CPU build: "This command installs cpu version
# instead of cuda", "conda installed the CPU-only build". Read only where the report also
# holds a conda command that asks for pytorch (the command the sentence is about).
_SAYS_CPU = re.compile(r"\b(?:install|get|got|pull|pick|give|gave|download|resolve)[a-z]{0,3}\s+(?:(?:the|a|only)\s+)?(?:py)?(?:torch\s+)?"
                       r"cpu(?:-only|only)?(?:\s+|-)(?:only\s+)?(?:version|build|variant|package)", re.IGNORECASE)
_CONDA_TORCH_COMMAND = re.compile(r"(?:^\s*|&&\s*|^\s*!\s*|^\s*RUN\s+)(?:conda|mamba|micromamba)\s+(?:install|create)\s.{0,400}?(?<![\w-])pytorch(?![\w-])")
_COMMAND_VERSION = re.compile(r"(?<![\w-])pytorch==?(?P<version>\d{1,4}(?:\.\d{1,6}){0,3})(?![\w.])")


def _said_cpu(lines: Lines) -> tuple[int, dict[str, Any]] | None:
    """(line, conda.torch_build) from the reporter's sentence that conda installed the CPU
    build, beside the conda command that asked for pytorch; else None."""
    asked = next((text for text in lines.norm if _CONDA_TORCH_COMMAND.search(command(text) or text)), None)
    if asked is None:
        return None
    for i, text in enumerate(lines.norm):
        if _SAYS_CPU.search(text) and not _CONDA_TORCH_COMMAND.search(text):
            version = _COMMAND_VERSION.search(asked)
            return i + 1, {"version": version.group("version") if version else None, "build": None, "channel": None, "kind": "cpu",
                           "cuda": None, "depends": [], "record": f"report line {i + 1} (the reporter says conda installed the CPU build)"}
    return None


def _frameworks(lines: Lines) -> list[Fragment]:
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
