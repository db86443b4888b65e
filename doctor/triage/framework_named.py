"""Which GPU frameworks a report names at all (report.frameworks_named), in the order it
first names them: a package or install name ("tensorflow-gpu", "pytorch", "paddle=2.2.2",
"jaxlib"), an import, or a framework's own source path in a log line
("...\\tensorflow\\stream_executor\\cuda\\cuda_driver.cc").

A name says which framework the report is about, not which release or build it runs; the
rules that read it (fwdoctor.triage.arch_floors) judge only what holds for every release
of that framework, e.g. a GPU below the lowest compute capability any release ran on.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

# Word-bounded names; "torch" alone is too common a word ("torch light", a project named
# torch-something), so torch counts only as "pytorch", an import or a torch.* call.
_NAMES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("tensorflow", re.compile(r"\btensorflow(?:[-_]gpu)?\b", re.IGNORECASE)),
    ("torch", re.compile(r"\bpytorch\b|\bimport torch\b|\bfrom torch\b|\btorch\.(?:cuda|version|__version__|from_numpy|tensor|nn)\b", re.IGNORECASE)),
    ("paddle", re.compile(r"\bpaddle(?:paddle)?(?:[-_]gpu)?\b", re.IGNORECASE)),
    ("jax", re.compile(r"\bjax(?:lib)?\b", re.IGNORECASE)),
)


def find(lines: Lines) -> list[Fragment]:
    first: dict[str, int] = {}
    for i, text in enumerate(lines.norm):
        for name, pattern in _NAMES:
            if name not in first and pattern.search(text):
                first[name] = i
        if len(first) == len(_NAMES):
            break
    if not first:
        return []
    named = sorted(first, key=lambda n: first[n])
    frag = Fragment("prose", first[named[0]] + 1, first[named[0]] + 1)
    frag.add("report.frameworks_named", named)
    return [frag]
