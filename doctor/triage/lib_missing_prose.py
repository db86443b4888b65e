"""A report that says in words that its program finds no cuDNN (or CUDA runtime, cuBLAS), read
as cuda-lib-not-found at warning strength (the regular rule and fwdoctor.rules.report_text read
the program's own loader messages, and document the id).

People often paraphrase the loader's error instead of pasting it: "cudnn 7.6.5 已经复制进去 但依然说没有cudnn"
("cuDNN 7.6.5 is copied in, but it still says there is no cuDNN", PaddlePaddle/Paddle#29428),
"it says it can't find cudnn". Where cuDNN was installed by copying its files, the usual cause is
that the folder holding them is not on the loader's search path (PATH on Windows, where a new
shell or a restart picks up a changed PATH; LD_LIBRARY_PATH / ld.so.conf on Linux) or that the
copy is of another release than the program opens. The words do not say which file or folder,
so the finding is a warning naming the commands that show it. "No CUDA" alone is not read:
it may mean the driver, the toolkit or a CPU build.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, Rule, rule
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

if TYPE_CHECKING:
    from fwdoctor.kb import KB

_MAX_LINE = 2000
_LIBS = r"(?P<lib>cudnn|cudart|cublas)"
# "(依然/还是)说没有cudnn", "提示找不到cudnn", "报错缺少cudnn"
_ZH = re.compile(r"(?:说|提示|报错|显示)\s{0,2}(?:没有|找不到|缺少|缺失|未找到)\s{0,2}" + _LIBS + r"(?![\w.])", re.IGNORECASE)
# "it says it can't find cudnn", "still says no cudnn", "it complains that cudnn is missing"
_EN = re.compile(r"\b(?:says?|said|complains?|reports?)\b(?: that)?(?: it)?(?: there is)? {1,2}(?:no|cannot find|can't find|could not find|couldn't find) {1,2}(?:the )?"
                 + _LIBS + r"\b", re.IGNORECASE)
_TITLES = {"cudnn": "cuDNN", "cudart": "the CUDA runtime (cudart)", "cublas": "cuBLAS"}


def find(lines: Lines) -> list[Fragment]:
    """report.lib_missing_said: [{"library", "line", "text"}], each sentence saying the program
    finds no cuDNN, cudart or cuBLAS."""
    rows: list[dict[str, Any]] = []
    for i, text in enumerate(lines.norm):
        if not text or len(text) > _MAX_LINE:
            continue
        low = text.lower()
        if "cudnn" not in low and "cudart" not in low and "cublas" not in low:
            continue
        m = _ZH.search(text) or _EN.search(text)
        if m:
            rows.append({"library": _TITLES[m["lib"].lower()], "line": i + 1, "text": text.strip()[:300]})
    if not rows:
        return []
    frag = Fragment("prose", rows[0]["line"], rows[-1]["line"])
    frag.add("report.lib_missing_said", rows)
    return [frag]


@rule("cuda-lib-not-found", needs=("report.lib_missing_said",))
def lib_missing_said(facts: Facts, kb: KB) -> Hit | None:
    """The report's own words that the program finds no cuDNN (cudart, cuBLAS), where it quotes
    no loader message (see cuda-lib-not-found): a warning naming the commands that show which
    file the program looks for and which folders the loader searches."""
    said = [r for r in facts.get("report.lib_missing_said") or [] if isinstance(r, dict)]
    if not said:
        return None
    first = said[0]
    return Hit(
        f"the report says the program finds no {first['library']} (report line {first['line']}: \"{first['text']}\"): its folder is "
        "probably not on the loader's search path (PATH on Windows, LD_LIBRARY_PATH or ld.so.conf on Linux), or the copy is of another "
        "release than the one the program opens; the report does not quote the loader's message, which names the file",
        evidence={"report.lib_missing_said": said},
        severity=Severity.WARNING,
        fix=FixRef(commands=("where cudnn64_*.dll   # Windows, in a new cmd.exe: which folder on PATH holds cuDNN",
                             "ldconfig -p | grep -E 'libcudnn|libcudart|libcublas'   # Linux: what the loader finds"),
                   note="put the folder holding the library on PATH (Windows; then open a new shell or restart) or LD_LIBRARY_PATH "
                        "(Linux), and install the release whose file name the program's own error names"),
    )


RULES: tuple[Rule, ...] = (lib_missing_said,)
