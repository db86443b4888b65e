"""`lscpu` and `cat /proc/cpuinfo`: the CPU's model and its SIMD flags -> platform.cpu.

    Architecture:             x86_64            model name	: Intel(R) Xeon(R) CPU X5690 @ 3.47GHz
    Model name:               Intel(R) Xeon...  flags		: fpu vme de pse tsc msr pae mce cx8 ...
    Flags:                    fpu vme de ...

Read only inside what is recognisably one of the two: an lscpu block (its "Architecture:" or
"CPU op-mode(s):" line within a few lines of the model) or a cpuinfo block ("vendor_id" /
"processor" keys beside "model name"). A model without a Flags line still gives the fact, with
"flags" None: the cpu-lacks-avx rule then says it cannot judge, and its report-side twin reads
the error text instead. lscpu of an arm64 machine ("Architecture: aarch64") gives None: AVX is
an x86 extension.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

# "Key:   value" (lscpu) or "key\t\t: value" (cpuinfo); keys are short words.
_ROW = re.compile(r"^\s{0,8}(?P<key>[A-Za-z][A-Za-z ()_-]{0,30}?)\s{0,40}:\s{0,40}(?P<value>.{0,4000})$")
_LSCPU_KEYS = {"architecture", "cpu op-mode(s)", "vendor id", "cpu family", "thread(s) per core", "lscpu"}  # "lscpu: Architecture: x86_64"
_CPUINFO_KEYS = {"vendor_id", "processor", "cpu family", "cpuid level"}
_NEAR = 40  # lscpu prints its model within ~10 lines of Architecture, its flags last (~30 lines)
# The flags fwdoctor.probes.platform keeps (SIMD_FLAGS), named here because triage imports no
# probe (tests/test_import_budget.py); tests/test_rules_platform.py keeps the two equal.
SIMD_FLAGS = ("avx", "avx2", "fma", "avx512f")


def simd_flags(value: str) -> list[str]:
    words = set(value.split())
    return [flag for flag in SIMD_FLAGS if flag in words]


def _x86_flag_list(value: str) -> bool:
    """Whether a "flags" value is an x86 CPU's flag list (fpu ... sse2 ..., a dozen or more
    words), not some other tool's "flags:" line."""
    words = value.split()
    return len(words) >= 12 and "fpu" in words and "sse2" in words


def find(lines: Lines) -> list[Fragment]:
    rows: list[tuple[int, str, str]] = []
    for i, text in enumerate(lines.norm):
        if ":" not in text or len(text) > 4100:
            continue
        match = _ROW.match(text)
        if match:
            rows.append((i, match.group("key").strip().lower(), match.group("value").strip()))
    # `grep flags /proc/cpuinfo` alone: a flags row that is an x86 flag list marks itself
    marks = [i for i, key, value in rows if key in _LSCPU_KEYS or key in _CPUINFO_KEYS or (key == "flags" and _x86_flag_list(value))]
    if not marks:
        return []
    model = flags = arch = None
    first = last = None
    for i, key, value in rows:
        if not any(abs(i - m) <= _NEAR for m in marks):
            continue
        if key == "architecture" and arch is None:
            arch = value
        elif key == "model name" and model is None and value:
            model = " ".join(value.split())
        elif key == "flags" and flags is None:
            flags = value
        else:
            continue
        first = i if first is None else min(first, i)
        last = i if last is None else max(last, i)
    if first is None or last is None or (model is None and flags is None):
        return []
    frag = Fragment("lscpu", first + 1, last + 1)
    if arch and arch not in ("x86_64", "i686", "i386", "amd64"):
        frag.add("platform.cpu", None)
        frag.notes.append(f"Architecture {arch}: AVX is an x86 extension")
        return [frag]
    if flags is not None and not re.search(r"\b(?:fpu|sse2?)\b", flags):
        return []  # not an x86 flags list (an arm64 cpuinfo says "Features")
    frag.add("platform.cpu", {"model": model, "flags": simd_flags(flags) if flags is not None else None})
    return [frag]
