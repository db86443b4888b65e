"""`gcc --version` ("gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0"): the default gcc, which nvcc
runs unless told otherwise. A versioned name (gcc-12 --version) is not the default."""

from __future__ import annotations

import re

from fwdoctor.triage.base import VERSION, Fragment
from fwdoctor.triage.text import Lines

# "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0", "gcc (GCC) 5.3.1 20151207 (Red Hat 5.3.1-2)"
_GCC = re.compile(r"^\s*(?:gcc|cc|x86_64-linux-gnu-gcc)(?:\.exe)? \([^)]*\) (" + VERSION + r")\b")


def find(lines: Lines) -> list[Fragment]:
    out = []
    for i, text in enumerate(lines.norm):
        match = _GCC.match(text)
        if match:
            frag = Fragment("gcc", i + 1, i + 1)
            frag.add("compilers.gcc_default", {"path": "gcc (as the report shows it)", "version": match.group(1)})
            out.append(frag)
    return out
