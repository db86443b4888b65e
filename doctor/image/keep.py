"""Which files of an image keep their content, and how much: the probes' declared reads
(`fwdoctor.probes.READS`) compiled into a `KeepPlan`.

The declarations flow one way: each probe module lists the files it reads as plain `Read`
rows (fwdoctor.probes.base), `fwdoctor.probes` gathers them, and this module reads that
tuple. No probe imports the image package (tests/test_import_graph.py), so the probes stay
a leaf the image readers depend on, never the other way round.
"""

from __future__ import annotations

import re
from typing import Sequence

from fwdoctor.probes import READS
from fwdoctor.probes.base import Read


def glob_regex(pattern: str) -> str:
    """A Read pattern as a regex over "/path/in/image": `*` and `?` stay inside one
    component, `**/` matches any folders (none included), a trailing `**` anything below."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            out.append("[^" + re.escape(body[1:]) + "]" if body.startswith("!") else "[" + re.escape(body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    if not pattern.startswith(("/", "**/")):
        out.insert(0, "/")
    return "".join(out)


class KeepPlan:
    """Which files keep content, and how much: compiled from the probes' Read list."""

    def __init__(self, reads: Sequence[Read]) -> None:
        self._reads = [(re.compile(glob_regex(r.pattern) + r"\Z"), r.limit, r.until) for r in reads]
        # One combined test first: most members match nothing.
        self._any = re.compile("|".join(f"(?:{glob_regex(r.pattern)})" for r in reads) + r"\Z") if reads else None

    def rule(self, path: str) -> tuple[int, "re.Pattern[bytes] | None"] | None:
        """(bytes to keep from the start, marker after which to stop) for a file at the
        absolute image path `path`, or None for a placeholder."""
        if self._any is None or not self._any.match(path):
            return None
        limit, untils, bounded = 0, [], True
        for regex, read_limit, until in self._reads:
            if regex.match(path):
                limit = max(limit, read_limit)
                bounded = bounded and until is not None
                if until is not None:
                    untils.append(until)
        # A marker only ends the keeping when every read of this file stops at one.
        return limit, (untils[0] if bounded and len(untils) == 1 else None)


def probe_plan() -> KeepPlan:
    """The plan for the probes `fwdoctor check` runs."""
    return KeepPlan(READS)
