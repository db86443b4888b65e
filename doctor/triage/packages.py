"""torch in `pip list`, `pip freeze` (also collect_env's "[pip3] torch==2.1.0") and
`conda list` (also "[conda] pytorch 1.10.2 py3.7_cuda10.2_cudnn7.6.5_0 pytorch").

A wheel's local tag says its CUDA ("+cu121" -> 12.1, "+cpu" -> none); a conda build string
does too ("py3.10_cuda12.1_cudnn8_0", conda-forge "cuda120_py310h..." -> 12.0, "*cpu*" ->
none). A bare "2.1.0" from PyPI does not say which CUDA it has: torch.cuda stays unknown.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment, cuda_from_local
from fwdoctor.triage.conda_builds import in_search_listing, record
from fwdoctor.versions import conda_cuda_label
from fwdoctor.triage.text import Lines

_FREEZE = re.compile(r"^\s*(?:\[pip3?\]\s*)?(torch)\s*==\s*(\d[\w.+-]*)\s*$", re.IGNORECASE)
# pip list's optional third column is the editable install's location (a path, or one
# holding site-packages). It is taken as one word and judged in `_pip`: the pattern
# "\S+site-packages\S*" re-scans the word at each "site-packages" in it (n^2).
_PIP = re.compile(r"^\s*(torch)\s+(\d[\w.+-]*)(?:\s+(\S+))?\s*$", re.IGNORECASE)
_CONDA = re.compile(r"^\s*(?:\[conda\]\s*)?(pytorch|torch)\s+(\d[\w.+-]*)\s+(\S+)(?:\s+(\S+))?\s*$", re.IGNORECASE)


def _conda_cuda(build: str, channel: str | None) -> tuple[bool, str | None]:
    if build == "pypi_0" or channel == "pypi":
        return False, None
    match = re.search(r"cuda(\d+)\.(\d+)", build)
    if match:
        return True, f"{match.group(1)}.{match.group(2)}"
    match = re.search(r"cuda(\d{2,3})(?:_|$)", build)
    if match:
        digits = match.group(1)
        return True, f"{digits[:-1]}.{digits[-1]}"
    # conda-forge's older label runs on into the Python tag: "cuda112py39h4de5995_1" (pytorch
    # 1.10-1.12 on conda-forge/pytorch-cpu-feedstock); a bare major ("cuda12py...") says no minor
    label = conda_cuda_label(build)
    if label and "." in label:
        return True, label
    if re.search(r"(^|_)cpu(_|$)", build):
        return True, None
    return False, None


def _pip(text: str) -> re.Match[str] | None:
    match = _PIP.match(text)
    where = match.group(3) if match else None
    if where is not None and not (where.startswith("/") or "site-packages" in where[1:]):
        return None
    return match


def find(lines: Lines) -> list[Fragment]:
    out = []
    for i, text in enumerate(lines.norm):
        conda = _CONDA.match(text)
        whole = record(text) if ("=" in text or "://" in text) and "torch" in text else None
        if whole is not None and whole[0] in ("pytorch", "torch"):  # `conda list --explicit`'s URL, an export's pin
            frag = Fragment("conda list", i + 1, i + 1)
            frag.add("torch.installed", True)
            frag.add("torch.version", whole[1])
            settled, cuda = _conda_cuda(whole[2], whole[3])
            if not settled:
                settled, cuda = cuda_from_local(whole[1])
            if settled:
                frag.add("torch.cuda", cuda)
            out.append(frag)
            continue
        if conda and not _pip(text):
            version, build, channel = conda.group(2), conda.group(3), conda.group(4)
            if in_search_listing(lines.norm, i, (conda.group(1), version, build)):
                continue  # `conda search`: the builds a channel offers, not the one installed
            frag = Fragment("conda list", i + 1, i + 1)
            frag.add("torch.installed", True)
            frag.add("torch.version", version)
            settled, cuda = _conda_cuda(build, channel)
            if not settled:
                settled, cuda = cuda_from_local(version)
            if settled:
                frag.add("torch.cuda", cuda)
            out.append(frag)
            continue
        match = _FREEZE.match(text) or _pip(text)
        if match:
            version = match.group(2)
            frag = Fragment("pip list", i + 1, i + 1)
            frag.add("torch.installed", True)
            frag.add("torch.version", version)
            settled, cuda = cuda_from_local(version)
            if settled:
                frag.add("torch.cuda", cuda)
            out.append(frag)
    return out
