"""What people print from Python: `torch.__version__`, `torch.version.cuda`,
`torch.cuda.get_arch_list()`, at a `>>>` prompt (answer on the next line) or inline
("torch.version.cuda: 12.1", "torch.__version__ = 2.1.0+cu121"), also inside a sentence or a
title; a wheel's local tag ("+cu121") says torch's CUDA."""

from __future__ import annotations

import ast
import re

from fwdoctor.triage.base import Fragment, cuda_from_local
from fwdoctor.triage.text import Lines

_EXPR = {
    "torch.__version__": "version",
    "torch.version.cuda": "cuda",
    "torch.cuda.get_arch_list()": "arch",
}
_INLINE = re.compile(r"^\s*(?:print\()?(torch\.__version__|torch\.version\.cuda|torch\.cuda\.get_arch_list\(\))\)?\s*[:=]\s*(.+)$")
# A version and what may follow it ("2.1.0+cu121", "2.4.0a0+git1234"). Not VERSION + "[\w.+-]*":
# the two overlap on ".1", so a long "1.1.1...!" that fails is split every way (n^2).
_TORCH_VERSION = re.compile(r"(?<!\d)\d+\.\d+[\w.+-]*")
# torch.cuda.get_arch_list() prints ~10 names; a longer "list" is not one, and ast would
# parse a 65 KB "[[[[..." until it ran out of stack.
_MAX_ARCH_LIST = 1000
_ASK = re.compile(r"^\s*(?:>>>\s*|In \[\d+\]:\s*)(?:print\()?(torch\.__version__|torch\.version\.cuda|torch\.cuda\.get_arch_list\(\))\)?\s*$")
# Inside a sentence, a quote or a title ('My environment is "torch.__version__  = 2.3.1+cu121"',
# "# torch.__version__ = 2.2.0+cu118 but ..."): the version that follows "=" or ":" (never a
# comparison's "=="). Bounded gaps: searched at every position of a line.
_IN_PROSE = re.compile(r"torch\.__version__\)?\s{0,8}(?::|=(?!=))\s{0,8}[\"'`]?(?P<version>(?<!\d)\d{1,3}\.\d{1,3}[\w.+-]{0,40})")


def _value(kind: str, text: str) -> tuple[bool, object]:
    text = text.strip()
    text = re.sub(r"^Out\[\d+\]:\s*", "", text)
    if kind == "arch":
        if len(text) > _MAX_ARCH_LIST:
            return False, None
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            return False, None
        ok = isinstance(value, list) and all(isinstance(v, str) and re.fullmatch(r"(sm|compute)_\d+[af]?", v) for v in value)
        return ok, value if ok else None
    bare = text.strip("'\"")
    if kind == "cuda" and bare == "None":
        return True, None
    if kind == "cuda" and re.fullmatch(r"\d+\.\d+", bare):
        return True, bare
    bare = bare.rstrip(".,;") if kind == "version" else bare  # a sentence's full stop is no part of "2.0.1+cpu"
    if kind == "version" and _TORCH_VERSION.fullmatch(bare):
        return True, bare
    return False, None


def find(lines: Lines) -> list[Fragment]:
    out = []
    norm = lines.norm
    for i, text in enumerate(norm):
        answer = None
        match = _ASK.match(text)
        if match and i + 1 < len(norm):
            answer = (match.group(1), norm[i + 1], i + 2)
        else:
            match = _INLINE.match(text)
            if match:
                answer = (match.group(1), match.group(2), i + 1)
            elif "__version__" in text and (prose := _IN_PROSE.search(text)):
                answer = ("torch.__version__", prose.group("version").rstrip(".-"), i + 1)
        if not answer:
            continue
        expr, raw, end = answer
        kind = _EXPR[expr]
        ok, value = _value(kind, raw)
        if not ok:
            continue
        frag = Fragment("python", i + 1, end)
        if kind == "version":
            frag.add("torch.installed", True)
            frag.add("torch.version", value)
            settled, cuda = cuda_from_local(str(value))  # a wheel's local tag: "+cu121" is CUDA 12.1
            if settled:
                frag.add("torch.cuda", cuda)
        elif kind == "cuda":
            frag.add("torch.cuda", value)
        else:
            frag.add("torch.arch_list", value)
        out.append(frag)
    return out
