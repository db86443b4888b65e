"""Which PaddlePaddle build a report installed: the GPU wheel's name, version and CUDA tag as
pasted in `pip list` / `pip freeze`, a pip install command, a wheel's file name, and Paddle's
own environment summary (tools/summary_env.py, what Paddle's issue form asks for).

Paddle's GPU wheels off PyPI say their CUDA in the version's post tag: "2.6.1.post112" is the
build for CUDA 11.2, "post117" 11.7, "post120" 12.0 (PaddlePaddle/docs, install/pip/linux-pip_en.md:
"If you are using CUDA 11.2: python3 -m pip install paddlepaddle-gpu==2.6.1.post112 ..."); Paddle
3 puts the CUDA in the index instead ("paddlepaddle-gpu==3.0.0 -i
https://www.paddlepaddle.org.cn/packages/stable/cu126/"). Two-digit tags of Paddle 1.x ("post97",
"post87": CUDA 9 or 8 with cuDNN 7) and "post107" (CUDA 10.0, cuDNN 7) do not spell a CUDA
release and are left unread. A bare "paddlepaddle-gpu==2.4.2" from PyPI does not say its CUDA.

summary_env.py prints (PaddlePaddle/Paddle, tools/summary_env.py; PaddlePaddle/Paddle#52100):

    Paddle version: 2.4.2
    Paddle With CUDA: True

"Paddle With CUDA" is paddle.is_compiled_with_cuda(): False is a CPU-only build whatever the
package's name (paddlepaddle installed over paddlepaddle-gpu replaces its module).
Facts: Paddle's entry of frameworks.installed (version, gpu_build, cuda where a tag says it).
"""

from __future__ import annotations

import re
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_VERSION = r"(?P<version>\d{1,2}\.\d{1,2}\.\d{1,3}(?:(?:rc|b)\d{1,2})?(?:\.post(?P<post>\d{2,4}))?)"
# `pip list` row, `pip freeze`/requirement/install spec, a wheel's file name
_PIP_ROW = re.compile(r"^\s*paddlepaddle[-_]gpu\s+" + _VERSION + r"(?:\s+\S+)?\s*$", re.IGNORECASE)
_SPEC = re.compile(r"\bpaddlepaddle[-_]gpu\s{0,2}==\s{0,2}" + _VERSION + r"(?![\w.])", re.IGNORECASE)
_WHEEL = re.compile(r"\bpaddlepaddle_gpu-" + _VERSION + r"-cp\d", re.IGNORECASE)
_INDEX_CU = re.compile(r"paddlepaddle\.org\.cn/packages/(?:stable|nightly)/cu(?P<cu>\d{3})\b")
_SUMMARY_VERSION = re.compile(r"^\s*Paddle version:\s*(?P<version>\d{1,2}\.\d{1,2}\.\d{1,3}\S{0,20})\s*$")
_SUMMARY_CUDA = re.compile(r"^\s*Paddle With CUDA:\s*(?P<with>True|False)\s*$")
# the CUDA releases a tag may name (a post tag that names another is not a CUDA tag)
_MINORS = {"10": 2, "11": 8, "12": 9, "13": 9}


def tag_cuda(digits: str | None) -> str | None:
    """"112" -> "11.2", "120" -> "12.0"; None for a tag that names no CUDA release ("97", "107")."""
    if not digits or len(digits) != 3:
        return None
    major, minor = digits[:2], int(digits[2])
    top = _MINORS.get(major)
    return f"{major}.{minor}" if top is not None and minor <= top else None


def find(lines: Lines) -> list[Fragment]:
    norm = lines.norm
    seen: list[tuple[int, str, str | None]] = []  # (line, version, cuda)
    summary: tuple[int, int, str, bool] | None = None
    for i, text in enumerate(norm):
        if summary is None and text.lstrip().startswith("Paddle version:"):
            version = _SUMMARY_VERSION.match(text)
            if version and i + 1 < len(norm):
                with_cuda = _SUMMARY_CUDA.match(norm[i + 1])
                if with_cuda:
                    summary = (i + 1, i + 2, version.group("version"), with_cuda.group("with") == "True")
            continue
        low = text.lower()
        if "paddlepaddle" not in low or "gpu" not in low:
            continue
        match = _PIP_ROW.match(text) or _SPEC.search(text) or _WHEEL.search(text)
        if not match:
            continue
        cuda = tag_cuda(match.group("post"))
        index = _INDEX_CU.search(text)
        if cuda is None and index:
            cuda = tag_cuda(index.group("cu"))
        seen.append((i + 1, match.group("version"), cuda))
    if not seen and summary is None:
        return []
    cudas = {cuda for _, _, cuda in seen}
    versions = {version for _, version, _ in seen}
    lines_at = [line for line, _, _ in seen] + ([summary[0], summary[1]] if summary else [])
    frag = Fragment("pip list", min(lines_at), max(lines_at))
    # the report's installs must agree: two CUDA tags, or a tagged and an untagged install (a
    # retried install, the fix a comment gives), settle neither
    cuda = cudas.pop() if len(cudas) == 1 else None
    version = summary[2] if summary else (versions.pop() if len(versions) == 1 else None)
    gpu_build = summary[3] if summary else True
    why = "Paddle's summary_env.py: Paddle With CUDA: " + str(summary[3]) if summary else "paddlepaddle-gpu " + ", ".join(sorted({v for _, v, _ in seen}))
    if cuda and gpu_build:
        why += f" (its CUDA tag: CUDA {cuda})"
    entry = {"framework": "paddle", "version": version, "packages": {}, "gpu_build": gpu_build, "cuda": cuda if gpu_build else None,
             "cudnn": None, "arch_list": None, "requires": {}, "requires_from": None, "pairing": {}, "location": None, "why": why}
    frag.add("frameworks.installed", [entry], frag.start, frag.end)
    return [frag]

