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
