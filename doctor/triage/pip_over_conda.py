"""pip's install log uninstalling the torch that conda installed in the same env.

      Attempting uninstall: torch
        Found existing installation: torch 1.12.1          (pip's log)
        Uninstalling torch-1.12.1:
          Successfully uninstalled torch-1.12.1
    Successfully installed ... torch-2.0.1 ...

    pytorch                   1.12.1          py3.10_cuda11.3_cudnn8.3.2_0    pytorch    (conda list)
    - pytorch=1.11.0                                  (an environment file; conda install pytorch==1.11.0)

conda.pip_over_conda: the fact the `check` probe of the same name gives (fwdoctor.probes.conda),
here read from text: pip uninstalled torch X in a report whose conda side (a `conda list` row
or a conda spec of the conda package `pytorch`) shows the same release X, so the torch pip
removed was conda's. pip only sees the dist-info conda wrote, removes it, and installs its own
wheel (a requirement that asks for another torch: learnables/learn2learn#408, thousandbrainsproject/
tbp.monty#391 "On some setups, `pip` would override the PyTorch version installed by `conda`").
A torch that pip installed earlier into the env is not conda's: without the conda side, or with
another release there, nothing is read.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_VERSION = r"\d{1,3}\.\d{1,3}(?:\.\d{1,3})?(?:\.post\d{1,3})?"
# pip >= 10's words; the markdown quote ("> ") and a prompt-free indent are stripped by the match start
_FOUND = re.compile(rf"Found existing installation: torch (?P<old>{_VERSION})\b")
_UNINSTALLED = re.compile(rf"Successfully uninstalled torch-(?P<old>{_VERSION})\b")
_INSTALLED = re.compile(r"Successfully installed ")
_NEW = re.compile(rf"(?:^|\s)torch-(?P<new>{_VERSION}(?:\+\w{{1,20}})?)(?:\s|$)")
# conda's side: a `conda list` row (name, version, build string; the channel may follow) ...
_CONDA_ROW = re.compile(rf"^[\s>]{{0,8}}pytorch\s+(?P<version>{_VERSION})\s+(?P<build>[\w.+-]{{1,80}})(?:\s+(?P<channel>[\w./-]{{1,80}}))?\s*$")
# ... or a conda spec of the package `pytorch` (environment file, `conda install`, a code span):
# conda's "=" (a prefix match) or "==", a channel prefix allowed ("pytorch::pytorch=2.0.1")
_CONDA_SPEC = re.compile(rf"(?<![\w.-])(?:[\w.-]{{1,80}}::)?pytorch\s?==?\s?(?P<version>{_VERSION})(?![\d])")


def find(lines: Lines) -> list[Fragment]:
    removed: list[tuple[str, int]] = []
    new: tuple[str, int] | None = None
    conda: list[tuple[str, int, str]] = []
    for i, text in enumerate(lines.norm):
        if "torch" not in text:
            continue
        for pattern in (_FOUND, _UNINSTALLED):
            hit = pattern.search(text)
            if hit:
                removed.append((hit.group("old"), i + 1))
        if _INSTALLED.search(text):
            after = text[_INSTALLED.search(text).end():]
            hit = _NEW.search(" " + after)
            if hit:
                new = (hit.group("new"), i + 1)
        if "pytorch" in text:
            row = _CONDA_ROW.match(text)
            if row:
                conda.append((row.group("version"), i + 1, "conda list"))
                continue
            for spec in _CONDA_SPEC.finditer(text):
                conda.append((spec.group("version"), i + 1, "conda spec"))
    if not removed or not conda:
        return []
    for old, line in removed:
        owner = next((c for c in conda if _same_release(c[0], old, c[2])), None)
        if owner is None:
            continue
        item: dict[str, Any] = {
            "package": "torch",
            "conda": f"pytorch {owner[0] if owner[2] == 'conda list' else old}",
            "dist_version": new[0] if new and new[1] >= line else "(another release)",
            "dist_info": f"report line {line}: pip uninstalled torch {old}",
            "installer": "pip",
            "conda_line": owner[1],
            "how": owner[2],
        }
        lines_used = [line, owner[1]] + ([new[1]] if new and new[1] >= line else [])
        frag = Fragment("pip over conda", min(lines_used), max(lines_used))
        frag.add("conda.pip_over_conda", [item])
        return [frag]
    return []


def _same_release(conda_version: str, pip_version: str, how: str) -> bool:
    """Whether conda's `pytorch` release is the torch pip removed: a `conda list` row names it
    whole; a spec "pytorch=1.11" is conda's prefix match (1.11.x)."""
    if conda_version == pip_version:
        return True
    return how == "conda spec" and pip_version.startswith(conda_version + ".")
