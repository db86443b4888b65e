"""torch's own build summary, `torch.__config__.show()` ("PyTorch built with:"), which the
OpenMMLab and detectron2 collect_env print as "PyTorch compiling details":

    - CUDA Runtime 10.1
    - NVCC architecture flags: -gencode;arch=compute_37,code=sm_37;...;-gencode;arch=compute_75,code=compute_75

"CUDA Runtime" is the CUDA torch was built with (torch.cuda); the flags' `code=` targets are
its GPU architectures (torch.arch_list: sm_XX cubins, compute_XX PTX).
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_START = re.compile(r"PyTorch built with:")
# Not "\s*-?\s*": without the dash the two runs split a line of blanks n ways (n^2).
_RUNTIME = re.compile(r"^\s*(?:-\s*)?CUDA Runtime (\d+\.\d+)")
_FLAGS = re.compile(r"NVCC architecture flags:\s*(\S+)")


def find(lines: Lines) -> list[Fragment]:
    out = []
    norm = lines.norm
    for i, text in enumerate(norm):
        if not _START.search(text):
            continue
        frag = Fragment("torch build config", i + 1, i + 1)
        for j in range(i + 1, min(len(norm), i + 30)):
            runtime = _RUNTIME.match(norm[j])
            if runtime:
                frag.add("torch.cuda", runtime.group(1), j + 1)
                frag.end = j + 1
            flags = _FLAGS.search(norm[j])
            if flags:
                targets = list(dict.fromkeys(re.findall(r"code=((?:sm|compute)_\d+\w?)", flags.group(1))))
                if targets:
                    frag.add("torch.arch_list", targets, j + 1)
                    frag.end = j + 1
        if frag.facts:
            out.append(frag)
    return out
