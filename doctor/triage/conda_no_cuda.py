"""A conda/mamba/micromamba `info` listing of virtual packages without __cuda, beside the
solver refusing a CUDA package:

           virtual packages : __unix=0=0                  (micromamba info: no __cuda listed)
                              __linux=4.18.0=0
                              __glibc=2.28=0
                              __archspec=1=x86_64
                   channels :
    ...
    info     libsolv  conflicting pytorch-cuda-11.6-h867d48c_1 (assertion)

conda lists __cuda only where a driver answered (conda's docs, "Managing virtual packages":
"__cuda: Maximum version of CUDA supported by the display driver"); a CUDA build that needs it
then has no solution (mamba-org/mamba#2194: micromamba on a host whose info listed no __cuda
could not place pytorch-cuda 11.6; "CONDA_OVERRIDE_CUDA=11.6 micromamba create -f env.yml"
solved it). The listing is read whole, from its "virtual packages :" header to the next
"key :" line, so a cut paste that ends inside it says nothing.

conda.no_cuda_virtual: {"line" (the listing), "names" (what it lists), "solver_line",
"package" (the CUDA package the solver refused)} where both are in the report.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, Rule, rule
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

if TYPE_CHECKING:
    from fwdoctor.kb import KB

_HEADER = re.compile(r"^\s*virtual packages\s*:\s*(?P<rest>.*)$")
_KEY = re.compile(r"^\s*[A-Za-z][\w ./-]{0,40}\s:(?:\s|$)")  # the next "channels :" ends the listing
_NAME = re.compile(r"(?<![\w-])__(?P<name>[a-z][a-z0-9_]{0,20})(?==|\s|$)")
_LISTING_LINES = 20
# the solver refusing a CUDA package (libsolv's verbose "conflicting X (assertion)", mamba's
# "requires X, but none of the providers can be installed", libmamba's "is not installable",
# conda's "nothing provides"): the package is a CUDA one by name or build string
_REFUSED = re.compile(r"conflicting|none of the providers can be installed|is not installable|is uninstallable|nothing provides|conflicts for:")
_CUDA_PACKAGE = re.compile(r"(?<![\w.-])(?P<package>pytorch-cuda|cudatoolkit|cuda-version|[\w.-]{1,60}[_-]cuda\d[\w.]{0,40})(?![\w])")


def _listing(norm: tuple[str, ...]) -> dict[str, Any] | None:
    for i, text in enumerate(norm):
        found = _HEADER.match(text)
        if not found:
            continue
        names = [m.group("name") for m in _NAME.finditer(found.group("rest"))]
        for j in range(i + 1, min(len(norm), i + 1 + _LISTING_LINES)):
            if _KEY.match(norm[j]):
                return {"line": i + 1, "names": names}  # the listing ended: it is whole
            names += [m.group("name") for m in _NAME.finditer(norm[j])]
        return None  # the paste ends inside the listing
    return None


def find(lines: Lines) -> list[Fragment]:
    listing = _listing(lines.norm)
    if listing is None or "cuda" in listing["names"] or not listing["names"]:
        return []
    for i, text in enumerate(lines.norm):
        if not _REFUSED.search(text):
            continue
        package = _CUDA_PACKAGE.search(text)
        if package:
            frag = Fragment("conda info", listing["line"], i + 1)
            frag.add("conda.no_cuda_virtual", {**listing, "solver_line": i + 1, "package": package.group("package"), "text": text.strip()[:300]})
            return [frag]
    return []


@rule("conda-cuda-pin-conflict", needs=("conda.no_cuda_virtual",))
def conda_cuda_build_without_cuda_virtual(facts: Facts, kb: "KB") -> Hit | None:
    """conda's (mamba's, micromamba's) `info` lists its virtual packages without __cuda, and the
    same report shows the solver refusing a CUDA package (see conda-cuda-pin-conflict): the
    solve ran where no driver answered, so nothing provides the __cuda a CUDA build needs."""
    seen = facts["conda.no_cuda_virtual"]
    if not isinstance(seen, dict):
        return None
    listed = ", ".join(f"__{n}" for n in seen.get("names") or [])
    return Hit(
        f"conda cannot solve {seen['package']} (report line {seen['solver_line']}): its virtual packages (report line {seen['line']}: {listed}) "
        "have no __cuda, so no NVIDIA driver answered where it solved",
        evidence={"conda.no_cuda_virtual": seen},
        fix=FixRef(commands=("nvidia-smi   # does a driver answer on this machine?",
                             "CONDA_OVERRIDE_CUDA=11.8 conda install ...   # solve for the CUDA of the driver the env will run on (a login node, a docker build)"),
                   note="solve where the driver is, or set CONDA_OVERRIDE_CUDA to that driver's CUDA (conda's docs, 'Managing virtual packages'); "
                        "on a machine without an NVIDIA GPU, install the CPU build"),
    )


RULES: tuple[Rule, ...] = (conda_cuda_build_without_cuda_virtual,)
