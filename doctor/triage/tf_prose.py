"""TensorFlow on native Windows, as people write it in prose rather than in the issue form:

    My system is Windows 11. My tensorflow version is 2.12.0. My GPUs are NVIDIA GeForce
    RTX 2060 and Intel® UHD Graphics 630. My NVIDIA CUDA version is 12.1.

(tensorflow/tensorflow#60269.) The report names a TensorFlow version ("tensorflow version is
2.12.0", "tensorflow==2.12.0", "TensorFlow 2.12"), native Windows ("Windows 11", "win10")
and nowhere WSL, Linux, Ubuntu or Docker. Facts: frameworks.installed (TensorFlow on native
Windows, its build unknown: whether that release has a GPU build there is the KB's, see
fwdoctor.triage.issue_template) and report.gpu_expected when the prose names an NVIDIA GPU
or a CUDA version. The issue form's fields, where present, are more trusted (PRIORITY).
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.issue_template import tensorflow_on_windows
from fwdoctor.triage.text import Lines

# "tensorflow version is 2.12.0", "TensorFlow==2.12.0", "tensorflow-gpu 2.10", "tensorflow: 2.15"
_TF = re.compile(r"\btensorflow(?:-gpu)?(?: version)?(?: is| ?==?| ?:)? ?v?(?P<version>(?<!\d)\d{1,2}\.\d{1,3}(?:\.\d{1,4})?)\b", re.IGNORECASE)
_WINDOWS = re.compile(r"\bwin(?:dows)? ?(?:7|8|10|11)\b", re.IGNORECASE)
# Any of these anywhere: the Windows named may be the host of WSL2, a VM or a container.
_ELSEWHERE = re.compile(r"\bwsl|subsystem for linux|\blinux|\bubuntu|\bdocker|\bcolab", re.IGNORECASE)
_GPU = re.compile(r"\bNVIDIA (?:GeForce |Quadro |Tesla )?(?:RTX|GTX|TITAN|Quadro|Tesla|[AHLT]\d{1,3}\b) ?[\w-]{0,12}|\bCUDA(?: version)?(?: is| ?:)? \d{1,2}\.\d{1,2}\b",
                  re.IGNORECASE)


def find(lines: Lines) -> list[Fragment]:
    tf = windows = gpu = None
    for i, text in enumerate(lines.norm):
        if not text:
            continue
        if _ELSEWHERE.search(text):
            return []
        if tf is None and (m := _TF.search(text)):
            tf = (i + 1, m.group("version"))
        if windows is None and (m := _WINDOWS.search(text)):
            windows = (i + 1, m.group(0))
        if gpu is None and (m := _GPU.search(text)):
            gpu = (i + 1, m.group(0).strip())
    if tf is None or windows is None:
        return []
    lines_used = [tf[0], windows[0], *([gpu[0]] if gpu else [])]
    frag = Fragment("prose", min(lines_used), max(lines_used))
    frag.add("frameworks.installed", [tensorflow_on_windows(tf[1])], tf[0])
    frag.notes.append(f"line {tf[0]}: TensorFlow {tf[1]} on native Windows ({windows[1]}, line {windows[0]})")
    if gpu:
        frag.add("report.gpu_expected", f"the report names {gpu[1]}", gpu[0])
    return [frag]
