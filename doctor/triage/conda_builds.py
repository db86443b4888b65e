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

from fwdoctor.versions import conda_cuda_label as cuda_label
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines, command

# conda package -> framework
PACKAGES = {"jaxlib": "jax", "tensorflow": "tensorflow", "tensorflow-base": "tensorflow", "tensorflow-cpu": "tensorflow"}
# the pytorch-nightly channel versions its builds by date: "1.11.0.dev20211001" (pytorch/pytorch#66047:
# "pytorch-1.11.0.dev20211001 |      py3.6_cpu_0" beside cudatoolkit=10.2)
_VERSION = re.compile(r"\d{1,4}(?:\.\d{1,6}){0,3}(?:[a-z]{1,5}\d{0,4}|\.dev\d{8})?")
_CPU = re.compile(r"(?:^|_)cpu(?:_|$)")
# Anaconda's defaults channel builds tensorflow and tensorflow-base in three variants told apart
# by the build string: "gpu_py38h...", and the CPU-only "mkl_py38h..." and "eigen_py38h..."
# (`conda search tensorflow=2.1` in AnacondaRecipes/tensorflow_recipes#26; "The packages for CPU
# only", eigen_ and mkl_, in AnacondaRecipes/tensorflow_recipes#24). The solver takes a CPU one
# where no gpu_ build fits ("conda update downgrades TensorFlow from GPU to MKL",
# ContinuumIO/anaconda-issues#13063; tensorflow-gpu 2.3 on Windows, ContinuumIO/anaconda-issues#12194).
_DEFAULTS_TF_CPU = re.compile(r"(?:mkl|eigen)_py\d")
_MAX_WORD = 200

# A package record written out whole, one to a line (issue 26): `conda list --explicit`'s URL
# (channel, subdir, then the file conda's repodata names "<name>-<version>-<build>.tar.bz2" or
# ".conda", with --md5's "#<hash>"), and `conda env export`'s / `conda list --export`'s pin
# "name=version=build" (the export with "  - " before it; `conda env create --dry-run` writes
# "- conda-forge/linux-64::_libgcc_mutex==0.1=conda_forge", conda/conda-libmamba-solver#115).
# conda's docs: "Building identical conda environments" (docs.conda.io,
# user-guide/tasks/manage-environments).
_EXPLICIT = re.compile(r"^\s{0,8}https?://[\w.:@/~%+-]{1,300}?/(?P<channel>[\w.-]{1,80})/(?:noarch|(?:linux|osx|win)-[a-z0-9_]{1,10})/"
                       r"(?P<file>[\w.+!-]{1,200})\.(?:tar\.bz2|conda)(?:#[0-9a-f]{32,64})?\s{0,4}$")
_PIN = re.compile(r"^\s{0,8}(?:-\s{1,4})?(?:(?P<channel>[\w.-]{1,80})(?:/[\w-]{1,30})?::)?(?P<name>[A-Za-z0-9_][\w.-]{0,80})==?(?P<version>\d[\w.+!]{0,40})=(?P<build>[\w.+]{1,80})\s{0,4}$")


def record(text: str) -> tuple[str, str, str, str | None] | None:
    """(name, version, build, channel) of an explicit-list URL or an export pin, else None:

        https://conda.anaconda.org/pytorch/linux-64/pytorch-1.12.1-py3.8_cuda11.3_cudnn8.3.2_0.tar.bz2
          - pytorch=1.13.1=py3.10_cuda11.6_cudnn8.3.2_0                 conda env export
        pytorch=1.11.0=py3.9_cuda11.3_cudnn8.2.0_0                      conda list --export"""
    if "://" in text:
        url = _EXPLICIT.match(text)
        parts = url.group("file").rsplit("-", 2) if url else []
        return (parts[0], parts[1], parts[2], url.group("channel")) if url and len(parts) == 3 and all(parts) else None
    if "=" not in text:
        return None
    pin = _PIN.match(text)
    return (pin.group("name"), pin.group("version"), pin.group("build"), pin.group("channel")) if pin else None


def _row(text: str) -> tuple[str, str, str] | None:
    """(name, version, build) of a package row, else None:

        jaxlib      0.4.23   cpu_py311h6cc994a_0   conda-forge            conda list, micromamba list
        [conda] pytorch   1.9.0   py3.8_cpu_0   pytorch                 collect_env
        jaxlib      conda-forge/linux-64::jaxlib-0.4.23-cpu_py311h6cc994a_0   conda's plan
        pytorch     pytorch::pytorch-1.12.1-py3.9_cuda11.3_0 --> conda-forge::pytorch-1.12.1-cpu_py39h...
        tensorflow   1.12.0-mkl_py36h4f00353_0 --> 1.14.0-mkl_py36hb88db5b_0
        tensorflow:  1.8.0-hb11d968_0  --> 1.7.0-0                          conda's plan, a package replaced
        tensorflow-base: 1.7.0-py36hdbcaa40_2                                conda 4.4's plan
        + jaxlib    0.4.23   cpu_py311h6cc994a_0   conda-forge   45MB     mamba's plan (+ added)
        pytorch-1.12.1   |   py3.8_cpu_0   133.8 MB  pytorch            conda's download table
        pytorch     2.5.1    cpu_mkl_py312_h...   38.9 MiB  conda  ...  pixi list

    A row mamba's plan removes ("- jaxlib ...") is not installed and is not read; an explicit
    list's URL and an export's pin are read by `record`."""
    whole = record(text) if ("=" in text or "://" in text) else None
    if whole is not None:
        return whole[:3]
    if "|" in text:
        return _download_row(text)
    words = text.split()
    if words[:1] in (["[conda]"], ["+"]):
        words = words[1:]
    if any(len(word) > _MAX_WORD for word in words[:3]):
        return None
    if 4 <= len(words) <= 5 and words[-2] == "-->":
        words = [words[0], words[-1]]  # conda's UPDATED/SUPERSEDED/DOWNGRADED rows: old --> new
    if len(words) == 2 and words[0].endswith(":"):  # conda 4.4's plan: "tensorflow-base: 1.7.0-py36hdbcaa40_2"
        parts = words[1].rsplit("-", 1)
        return (words[0][:-1], parts[0], parts[1]) if len(parts) == 2 and words[0][:-1] and parts[1] else None
    if len(words) == 2 and "-" in words[1] and "::" not in words[1]:  # "tensorflow 1.12.0-mkl_py36h4f00353_0 --> ..."
        parts = words[1].rsplit("-", 1)
        return (words[0], parts[0], parts[1]) if parts[0] and parts[1] else None
    if len(words) == 2 and "::" in words[1]:
        parts = words[1].rpartition("::")[2].rsplit("-", 2)
        return (parts[0], parts[1], parts[2]) if len(parts) == 3 and parts[0] == words[0] else None
    if 3 <= len(words) <= 4:
        return words[0], words[1], words[2]
    # mamba's and pixi's rows go on with a size ("45MB", "38.9 MiB") or mamba's "Cached"
    if 5 <= len(words) <= 7 and _SIZE.search(" ".join(words[3:])):
        return words[0], words[1], words[2]
    return None


# a download size with its unit ("45MB", "133.8 MB", "38.9 MiB"), or mamba's "Cached"
_SIZE = re.compile(r"(?<!\S)(?:\d{1,6}(?:\.\d{1,3})? ?[KMG]i?B|Cached)(?!\S)")


def _download_row(text: str) -> tuple[str, str, str] | None:
    """conda's "The following packages will be downloaded:" table: "name-version | build  size
    unit  channel" (a header row "package | build" has no version)."""
    left, _, right = text.partition("|")
    name = left.split()
    build = right.split()
    if len(name) != 1 or not build or len(name[0]) > _MAX_WORD or len(build[0]) > _MAX_WORD:
        return None
    parts = name[0].rsplit("-", 1)
    return (parts[0], parts[1], build[0]) if len(parts) == 2 and parts[0] and parts[1] else None


# "pytorch=1.9.0=py3.8_cpu_0": a conda spec with its build (a word, not a row)
_SPEC = re.compile(r"(?<![\w-])pytorch==?(?P<version>\d{1,4}(?:\.\d{1,6}){0,3})=(?P<build>[\w.]{1,80})")
# A CUDA package asked of conda: "cudatoolkit=11.3" (install command, environment.yml), "pytorch-cuda=12.1"
_CUDA_REQUEST = re.compile(r"(?<![\w-])(?:cudatoolkit|pytorch-cuda)\s{0,2}[=<>]{1,2}\s{0,2}\d{1,2}\.\d{1,2}")
# conda-forge's own way to ask for a CUDA: the cuda-version metapackage, "a meta-package for
# pinning to a CUDA release version" (https://anaconda.org/conda-forge/cuda-version), major only
# or major.minor: `mamba install -c conda-forge openmm-torch "cuda-version>=12"` got
# pytorch cpu_mkl_py311_h7bde0a3_103 (openmm/openmm-torch#170): conda-forge's CPU pytorch does not
# depend on cuda-version, so the pin does not steer the solver to the CUDA build. Read only as a
# request (an install/create command, an environment file's item), never in a solver's message
# ("└─ cuda-version >=12.0,<13 , which requires") or a package's requirement ("-> cuda-version[...]").
_CUDA_VERSION_REQUEST = re.compile(r"(?<![\w-])cuda-version\s{0,2}(?:[=<>]{1,2}|~=)\s{0,2}\d{1,2}(?:\.\d{1,2})?(?![\w.])")
_REQUEST_LINE = re.compile(r"^\s*-\s+[\"']?cuda-version|\b(?:conda|mamba|micromamba)\s+(?:install|create)\s")


def find(lines: Lines) -> list[Fragment]:
    return _frameworks(lines) + _pytorch(lines) + _cuda_labelled(lines)


_PLAN_CHANNEL = re.compile(r"(?<!\S)([\w.-]{1,100})(?:/[\w-]{1,30})?::")


def _cuda_labelled(lines: Lines) -> list[Fragment]:
    """conda.packages, as fwdoctor.probes.conda reads it from conda-meta, for the rows whose
    build string carries conda-forge's CUDA label ("tensorflow 2.15.0 cuda120py311h5cbd639_1
    conda-forge", "jaxlib 0.4.34 cuda120py312h9b6c45b_200"): what
    fwdoctor.rules.conda.conda_cuda_build_without_cuda judges against the KB's builds published
    without working CUDA (issue 26). Other rows are not kept: no rule reads them from a report."""
    found: dict[str, dict[str, Any]] = {}
    first = last = 0
    for i, text in enumerate(lines.norm):
        if "cuda" not in text:
            continue
        row = _row(text)
        if row is None or not _VERSION.fullmatch(row[1]) or cuda_label(row[2]) is None or row[0] in found or in_search_listing(lines.norm, i, row):
            continue
        plan = _PLAN_CHANNEL.search(text)  # conda's plan: "conda-forge/linux-64::jaxlib-0.4.34-cuda120py312h..._200"
        found[row[0]] = {"version": row[1], "build": row[2], "channel": plan.group(1) if plan else _channel(text, row[2]), "fn": None, "line": i + 1}
        first, last = first or i + 1, i + 1
    if not found:
        return []
    frag = Fragment("conda list", first, last)
    frag.add("conda.packages", found)
    return [frag]


def in_search_listing(norm: tuple[str, ...], i: int, row: tuple[str, str, str]) -> bool:
    """Whether row i stands in a `conda search` listing, which looks like `conda list` but names
    what a channel offers, every build of a package one per line ("pytorch 1.10.0 py3.8_cpu_0",
    then "pytorch 1.10.0 py3.8_cuda10.2_cudnn7.6.5_0": pytorch/pytorch#67642): a neighbouring
    row of the same package with another build. An environment lists a package once."""
    for j in (i - 1, i + 1):
        other = _row(norm[j]) if 0 <= j < len(norm) and norm[j] else None
        if other is not None and other[0].lower() == row[0].lower() and other[1:] != row[1:]:
            return True
    return False


def _channel(text: str, build: str) -> str | None:
    """The channel after the build in a row: the first word there that is no size ("133.8",
    "MB", "45MB") and not mamba's "Cached"."""
    whole = record(text) if ("=" in text or "://" in text) else None
    if whole is not None:
        return whole[3]
    words = text.replace("|", " ").split()
    at = words.index(build) + 1 if build in words else len(words)
    return next((w for w in words[at:] if not (w[:1].isdigit() or _UNIT.fullmatch(w) or w == "Cached")), None)


_UNIT = re.compile(r"[KMG]i?B")


def _pytorch(lines: Lines) -> list[Fragment]:
    """conda.torch_build (a CPU build only) and report.gpu_expected (a CUDA package asked of conda)."""
    out: list[Fragment] = []
    cpu: tuple[int, dict[str, Any]] | None = None
    request: tuple[int, str] | None = None
    for i, text in enumerate(lines.norm):
        if cpu is None:
            row = _row(text)
            spec = _SPEC.search(text) if "pytorch=" in text else None
            if row is not None and row[0] == "pytorch" and _VERSION.fullmatch(row[1]) and not in_search_listing(lines.norm, i, row):
                version, build, channel = row[1], row[2], _channel(text, row[2])
            elif spec is not None:
                version, build, channel = spec.group("version"), spec.group("build"), None
            else:
                version = build = channel = None
            # _CPU is fwdoctor.probes.conda's test for a CPU build string (triage imports no probe)
            if build is not None and _CPU.search(build):
                cpu = (i + 1, {"version": version, "build": build, "channel": channel, "kind": "cpu", "cuda": None, "depends": [],
                               "record": f"report line {i + 1}"})
        if request is None and "cuda-version" in text and _REQUEST_LINE.search(text):
            wanted = _CUDA_VERSION_REQUEST.search(text)
            if wanted:
                request = (i + 1, f"conda was asked for {wanted.group(0)}")
        if request is None and ("cudatoolkit" in text or "pytorch-cuda" in text):
            found = _CUDA_REQUEST.search(text)
            held = _row(text) if found is None else None
            if found:
                request = (i + 1, f"conda was asked for {found.group(0)}")
            elif (held is not None and held[0] in ("cudatoolkit", "pytorch-cuda") and _VERSION.fullmatch(held[1])
                  and not in_search_listing(lines.norm, i, held)):
                # the env holds a CUDA package (`conda list`'s "pytorch-cuda 11.7 h778d358_5"): it was
                # installed to run pytorch on a GPU (facebookresearch/DiT#109, beside py3.12_cpu_0)
                request = (i + 1, f"the env holds {held[0]} {held[1]}")
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
        asked.add("report.gpu_expected", request[1])
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
        cpu = _CPU.search(build) or (PACKAGES[name] == "tensorflow" and _DEFAULTS_TF_CPU.match(build))
        if not _VERSION.fullmatch(version) or build == "pypi_0" or not cpu or in_search_listing(lines.norm, i, row):
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
