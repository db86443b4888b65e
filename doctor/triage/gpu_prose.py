"""The NVIDIA GPU a report names in its prose or logs, where no tool output lists it:

    GPU is GeForce GT 740M | 3.0                      (pytorch/pytorch#14681)
    I have a GTX1080Ti and CUDA 10.0 ...
    Training on 8x A100-SXM4-80GB hangs in all_reduce

-> gpus.list with that GPU ("8x A100": eight of them; its name only: the compute capability comes from the GPU KB
when a rule asks, fwdoctor.kb.gpus.GpuKB.cc_for_gpu), trusted least of all ("prose"):
nvidia-smi, collect_env and the framework's own device lines win wherever the report has them.

Only a report that names exactly one product is read. "Works on the RTX 3090, fails on the
V100" names two, and the sentence alone cannot say which one failed: no fact then, and the
report's own tool output (if any) decides. Product names are matched by their shape, not
from the KB, so that a GPU the KB does not list yet is still named (its rules then say "not
checked" for want of its capability):

    GeForce / Quadro / TITAN / RTX A / RTX PRO lines     GTX 1080 Ti, RTX 4090, GT 740M, MX450, TITAN Xp,
                                                         Quadro P4000, Quadro FX 2800M, RTX A6000
    data-centre parts                                     V100, A100, H100, H200, B200, GH200, L40S, A10G, K80

Some data-centre names (T4, L4, A2, A10, L20, ...) are also a paper size, a cache level or a
line number: they count only after "NVIDIA" or "Tesla", or before "GPU". A line longer than the parsed limit is not read (fwdoctor.triage.text.Lines).
"""

from __future__ import annotations

import re

from fwdoctor.kb.gpus import name_key
from fwdoctor.triage.base import Fragment, gpu_entry
from fwdoctor.triage.text import Lines

# Each alternative is a run of fixed words and bounded tokens, no nested repetition: the
# search stays linear in the line's length. (?<![\w.-]) / (?![\w]) keep "sm_80", "cu121",
# "x86_64" and "RTX3090xyz" out.
_CONSUMER = (
    r"(?:GeForce\s{1,3})?(?:GTX|RTX|GT|MX)\s?-?\d{3,4}M?(?:\s?Ti)?(?:\s(?:SUPER|Super))?(?:\s(?:Laptop\s)?GPU)?"
    r"|(?:GeForce\s{1,3})?(?:GTX\s{1,3})?TITAN(?:\s(?:Xp|X|V|RTX|Black|Z))?"
    r"|Quadro\s{1,3}(?:RTX\s|FX\s)?(?:GV|GP|[KMPT])?\d{2,4}M?"
    r"|RTX\s?A\d{3,4}|RTX\sPRO\s\d{3,4}(?:\sBlackwell)?|RTX\s\d{4}\sAda(?:\sGeneration)?"
)
# Data-centre parts, listed: a shape such as "letter and three digits" would take "H264",
# "T480" (a ThinkPad) or "P200" for GPUs.
_DATACENTER = (r"V100S?|P100|P40|P4|K80|K40|K20X?|M40|M60|T4|A100|A800|A30|A40|A10G?|A16|A2|H100|H200|H800|H20"
               r"|B100|B200|B300|GB200|GB300|GH200|L40S?|L20|L4")
# Also a paper size, a cache level, a line or layer number: a GPU only with a cue.
_NEEDS_CUE = frozenset({"A2", "T4", "P4", "L4", "A10", "A16", "L20", "L40", "H20", "K20"})
_NAME = re.compile(
    rf"(?<![\w.-])(?P<cue>(?:NVIDIA\s{{1,3}})?(?:Tesla\s{{1,3}})?)(?:(?P<consumer>{_CONSUMER})|(?P<dc>{_DATACENTER}))(?![\w])"
    r"(?P<after>(?:-\w{1,12}){0,3}\s{0,2}(?:GPU)?)",
    re.IGNORECASE,
)
# "8x A100", "2 x RTX 3090", "4*V100", "8× H100": how many, right before the name.
_COUNT = re.compile(r"(?<![\d.])(\d{1,2}) ?[x×*] ?$", re.IGNORECASE)
_MAX_COUNT = 64  # more GPUs than one node holds is a cluster's count, not this host's
_LETTER_DIGIT = re.compile(r"(?i)^(GTX|RTX|GT|MX)\s?-?(\d)")
_DIGIT_TI = re.compile(r"(?i)(\d)(Ti)\b")


def _canonical(match: re.Match[str]) -> str | None:
    """The product as written, spaced as the KB spells it ("GTX1080Ti" -> "GTX 1080 Ti",
    "NVIDIA GeForce RTX 2060" kept whole), or None for a data-centre token that needs a cue."""
    cue = " ".join(match.group("cue").split())  # "NVIDIA", "Tesla", "NVIDIA Tesla" as written
    if match.group("consumer"):
        name = _DIGIT_TI.sub(r"\1 \2", _LETTER_DIGIT.sub(r"\1 \2", match.group("consumer").strip()))
        name = re.sub(r"\s+(?:Laptop\s+)?GPU$", "", name, flags=re.IGNORECASE)
    else:
        name = match.group("dc").upper()
        if name in _NEEDS_CUE and not cue and not match.group("after").strip().upper().endswith("GPU"):
            return None
    return f"{cue} {name}" if cue else name


def find(lines: Lines) -> list[Fragment]:
    named: dict[tuple[str, ...], tuple[int, str]] = {}  # name key -> (first line, name)
    count = 1
    for i, text in enumerate(lines.norm):
        if not text:
            continue
        for match in _NAME.finditer(text):
            name = _canonical(match)
            if name is None:
                continue
            key = name_key(name)
            if key and key not in named:
                named[key] = (i + 1, name)
            if len(named) > 1:
                return []  # two products named: which one failed is not in the text
            # Only the 8 characters before the name: a bounded look, whatever the line's length.
            said = _COUNT.search(text[max(0, match.start() - 8):match.start()])
            if said and 1 < int(said.group(1)) <= _MAX_COUNT:
                count = max(count, int(said.group(1)))
    if not named:
        return []
    (line, name), = named.values()
    frag = Fragment("prose", line, line)
    frag.add("gpus.list", [gpu_entry(index, name) for index in range(count)], line)
    frag.notes.append(f"line {line}: the report names one NVIDIA GPU model, {name}" + (f", {count} of them" if count > 1 else ""))
    return [frag]
