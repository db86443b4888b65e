"""The conda environments a report shows in use: where their prefix is, or their name.

    $ conda activate wiki-grx-gym                       (a name; `mamba`/`micromamba activate`, `source activate`)
    $ conda activate /scratch/me/envs/train             (a prefix)
        active env location : /u/project/conda-envs/test        (conda info)
    # packages in environment at /home/me/miniconda3/envs/nn:   (conda list)
      environment location: /home/me/miniconda3/envs/nn         (conda's install plan)

conda.envs: one entry per environment named so, {"prefix" or "name", "line", "how"}: the
report's program ran in a conda env. A conda env's python loads the env's own lib/ first (its
RPATH is $ORIGIN/../lib), so fwdoctor.triage.rules reads this beside the loader's
"libstdc++.so.6: version `GLIBCXX_3.4.32' not found" whose path the reporter cut.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

# a command at the line's start (after a prompt), after "&&"/";", in a code span, or a notebook's "!"
_ACTIVATE = re.compile(r"(?:^|&&|;|`|!)\s*(?:(?:conda|mamba|micromamba)\s+activate|source\s+activate)\s+(?P<env>[^\s`'\";&|<>]{1,200})")
_PREFIX_LINES = (
    ("conda info", re.compile(r"^\s*active env location\s*:\s*(?P<env>/[^\s]{1,300})")),
    ("conda list", re.compile(r"^\s*#\s*packages in environment at\s+(?P<env>/[^\s:]{1,300}):")),
    ("conda plan", re.compile(r"^\s*environment location:\s*(?P<env>/[^\s]{1,300})")),
)
# A conda env's own libstdc++ named anywhere (a command, `ls -l`, `ldd`, a maintainer's "mv
# /home/me/miniconda3/envs/x/lib/libstdc++.so.6 ..."): the env is the one in question. The
# literal is found first, then the path is read back to a blank or quote (linear in the line).
_LIBSTDCXX = "libstdc++.so"
_PATH_STOP = frozenset(" \t`'\"=(>")
_MAX_PATH = 300
_PROMPT_START = re.compile(r"^\s*(?:\([^)]{1,60}\)\s*)?(?:[\w.-]+@[\w.-]+(?::[^$#\s]*)?\s*[$#%]|[$#%])\s+")


def find(lines: Lines) -> list[Fragment]:
    envs: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, text in enumerate(lines.norm):
        if "activate" in text:
            body = _PROMPT_START.sub("", text, count=1)
            found = _ACTIVATE.search(body)
            env = found.group("env").rstrip(".,)") if found else ""
            if env and env not in seen and not env.startswith("-"):
                seen.add(env)
                key = "prefix" if "/" in env else "name"
                envs.append({key: env.rstrip("/") if key == "prefix" else env, "line": i + 1, "how": "activate"})
            continue
        if _LIBSTDCXX in text:
            env = _env_of_libstdcxx(text)
            if env and env not in seen:
                seen.add(env)
                envs.append({"prefix": env, "line": i + 1, "how": "libstdc++ path"})
        for how, pattern in _PREFIX_LINES:
            found = pattern.match(text)
            if found and found.group("env") not in seen:
                seen.add(found.group("env"))
                envs.append({"prefix": found.group("env").rstrip("/"), "line": i + 1, "how": how})
    if not envs:
        return []
    frag = Fragment("conda env", min(e["line"] for e in envs), max(e["line"] for e in envs))
    frag.add("conda.envs", envs)
    return [frag]


def _env_of_libstdcxx(text: str) -> str | None:
    """The conda prefix whose lib/libstdc++.so* the line names ("/home/me/miniconda3/envs/x"),
    where the folder is a conda installation's or env's (conda_libstdcxx below)."""

    at = text.find(_LIBSTDCXX)
    while at >= 0:  # ldd's "libstdc++.so.6 => /path/lib/libstdc++.so.6": the bare name first
        start = at
        while start > max(0, at - _MAX_PATH) and text[start - 1] not in _PATH_STOP:
            start -= 1
        folder = text[start:at].replace("\\", "/")
        if folder.endswith("/lib/") and conda_libstdcxx(folder + _LIBSTDCXX):
            return folder[:-len("/lib/")] or None
        at = text.find(_LIBSTDCXX, at + len(_LIBSTDCXX))
    return None


# Folders a conda installation lives in; a libstdc++ under one of them (or under an env's
# envs/NAME/lib) is conda's own, the one conda's python loads first (its RPATH $ORIGIN/../lib).
_CONDA_DIRS = frozenset({"anaconda", "anaconda3", "miniconda", "miniconda3", "miniforge", "miniforge3", "mambaforge",
                         "micromamba", ".conda", "conda", "envs"})


# ... and the names installers and pyenv give them ("anaconda3-2023.03", "miniforge3-22.11.1-4",
# "Miniconda3-py39"), micromamba's newer root prefix (~/.local/share/mamba), pixi's envs (.pixi).
_CONDA_DIR_STARTS = ("anaconda", "miniconda", "miniforge", "mambaforge", "micromamba")
_CONDA_DIRS_MORE = frozenset({"mamba", ".pixi", "conda_prefix"})  # "$CONDA_PREFIX/lib/libstdc++.so.6" as pasted


def conda_libstdcxx(path: str) -> bool:
    """Whether the loader's `path` is a libstdc++ inside a conda installation or env."""
    parts = [p for p in path.replace("\\", "/").split("/") if p and p not in (".", "..")]
    return bool(parts) and parts[-1].startswith("libstdc++.so") and \
        any(p.lower() in _CONDA_DIRS or p.lower() in _CONDA_DIRS_MORE or p.lower().startswith(_CONDA_DIR_STARTS) for p in parts[:-1])
