"""`nvcc -V` / `nvcc --version`: "Cuda compilation tools, release 11.8, V11.8.89".

This is the nvcc the person ran: the one on PATH unless the prompt line shows a path
(`/usr/local/cuda-12.1/bin/nvcc -V`). torch builds extensions with CUDA_HOME's nvcc first,
so an nvcc on PATH is one of cuda.toolkits, never cuda.active by itself.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import VERSION, Fragment, toolkit_entry
from fwdoctor.triage.text import Lines, command

_RELEASE = re.compile(r"Cuda compilation tools, release (\d+\.\d+)(?:, V(" + VERSION + r"))?", re.IGNORECASE)
# (?<!\S): from the start of a word only; from every character, "\S*" re-ran to the end of
# the word each time (a word of 65,000 '/' cost n^2). A leftmost match starts there anyway.
_PATH = re.compile(r"(?<!\S)(\S*/)bin/nvcc\b")
# OpenMMLab's "NVCC: Cuda compilation tools": not "\s*:?\s+", which splits blanks n ways.
_MM_NVCC = re.compile(r"^\s*(NVCC|nvcc)(?:\s*:\s+|\s+)Cuda")


# NVIDIA apex's setup.py (and the many setup.py files copied from it) prints
# "\nCompiling cuda extensions with", then `$CUDA_HOME/bin/nvcc -V`, then "from $CUDA_HOME/bin"
# (check_cuda_torch_binary_vs_bare_metal): that nvcc is CUDA_HOME's, not the one on PATH.
_APEX_HEAD = re.compile(r"^\s*Compiling cuda extensions with\s*$")
_APEX_FROM = re.compile(r"^\s*from (/\S{1,400}?|[A-Za-z]:\\[^\n]{1,400}?)/bin/?\s*$")


def _apex_cuda_home(norm: list[str], start: int, end: int) -> tuple[str, int] | None:
    """(CUDA_HOME, the "from .../bin" line's index) when lines start..end are apex's banner."""
    if not any(_APEX_HEAD.match(norm[j]) for j in range(max(0, start - 2), start + 1)):
        return None
    for j in range(end + 1, min(len(norm), end + 3)):
        match = _APEX_FROM.match(norm[j])
        if match:
            return match.group(1).rstrip("/"), j
    return None


def find(lines: Lines) -> list[Fragment]:
    out: list[Fragment] = []
    for i, text in enumerate(lines.norm):
        match = _RELEASE.search(text)
        if not match or _MM_NVCC.match(text) and not text.lstrip().startswith("nvcc: NVIDIA"):
            continue  # OpenMMLab's "NVCC: Cuda compilation tools ..." belongs to its env block
        start = i
        for j in range(i - 1, max(-1, i - 6), -1):
            if "nvcc" in lines.norm[j].lower() or "Cuda compiler driver" in lines.norm[j]:
                start = j
        version = match.group(2) or match.group(1)
        root = None
        for j in range(start, max(-1, start - 2), -1):
            cmd = command(lines.norm[j]) or ""
            path = _PATH.search(cmd)
            if path and path.group(1).startswith("/"):
                root = path.group(1).rstrip("/")
                start = j
        home = _apex_cuda_home(lines.norm, start, i)
        if home:  # apex's banner: CUDA_HOME's nvcc, the one torch builds extensions with
            root = home[0]
        frag = Fragment("nvcc", start + 1, (home[1] if home else i) + 1)
        via = "CUDA_HOME (apex's setup.py banner)" if home else "nvcc run by path" if root else "nvcc on PATH"
        frag.add("cuda.toolkits", [toolkit_entry(version, via, root=root, nvcc=f"{root}/bin/nvcc" if root else None)], i + 1)
        if home:
            frag.add("cuda.active", {"root": root, "version": version, "why": "CUDA_HOME (apex's setup.py ran its bin/nvcc -V)"}, i + 1)
        out.append(frag)
    return out
