"""The locked-memory limit a report shows -> system.memlock ({"soft_bytes", "hard_bytes"};
None: unlimited), what RDMA memory registration is counted against (rdma-memlock-too-low):

    max locked memory       (kbytes, -l) 64          # bash's `ulimit -a` (openucx/ucx#8229)
    $ ulimit -l                                      # the command, then its answer alone
    64
    Max locked memory         8388608              8388608              bytes   # /proc/PID/limits

bash prints `ulimit -a`'s soft limits in KiB (the "(kbytes, -l)" column) and `ulimit -l`'s
answer the same way; /proc/PID/limits prints soft and hard in bytes (its parser is the live
probe's, fwdoctor.proclimits.parse_memlock_limits). A row is split on blanks after its
fixed label, never matched whole; a value other than digits or "unlimited" is skipped.
"""

from __future__ import annotations

import re

from fwdoctor.proclimits import parse_memlock_limits
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines, command

KIND = "ulimit"
_ULIMIT_A = "max locked memory"
_KBYTES_L = "(kbytes, -l)"
_ASK = re.compile(r"^ulimit -S?l$")
_MAX_KIB = 10**15  # a petabyte of locked memory is no real limit


def _kib(token: str) -> int | None | bool:
    """Bytes for a KiB count, None for "unlimited", False for anything else."""
    if token == "unlimited":
        return None
    if token.isdigit() and len(token) <= 16 and int(token) <= _MAX_KIB:
        return int(token) * 1024
    return False


def find(lines: Lines) -> list[Fragment]:
    out = []
    for i, text in enumerate(lines.norm):
        low = text.strip()
        if low.lower().startswith(_ULIMIT_A) and _KBYTES_L in low:
            value = _kib(low.rpartition(_KBYTES_L)[2].strip())
            if value is not False:
                frag = Fragment(KIND, i + 1, i + 1)
                frag.add("system.memlock", {"soft_bytes": value})
                out.append(frag)
            continue
        if low.startswith("Max locked memory"):
            limits = parse_memlock_limits(low)
            if limits is not None:
                frag = Fragment(KIND, i + 1, i + 1)
                frag.add("system.memlock", limits)
                out.append(frag)
            continue
        asked = command(text) or low
        if _ASK.match(asked):
            answer = next((j for j in range(i + 1, min(i + 3, len(lines.norm))) if lines.norm[j].strip()), None)
            if answer is None:
                continue
            value = _kib(lines.norm[answer].strip())
            if value is not False:
                frag = Fragment(KIND, i + 1, answer + 1)
                frag.add("system.memlock", {"soft_bytes": value})
                out.append(frag)
    return out
