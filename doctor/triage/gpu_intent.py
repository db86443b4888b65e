"""What says, in a report that shows no GPU, that the user means to run on one
(report.gpu_expected), besides the issue form (fwdoctor.triage.issue_template) and conda's
CUDA packages (fwdoctor.triage.conda_builds):

    pip install tensorflow-gpu==2.12.0          the package exists only to ask for the GPU build
    torch.cuda.is_available()  /  "CUDA is not available"   the user asks a build for CUDA

Read by the triage rules that pair a CPU-only build with a GPU meant (framework- and
torch-cpu-build-on-gpu-host); neither says anything alone.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_TF_GPU = re.compile(r"\btensorflow-gpu\b", re.IGNORECASE)
_CUDA_ASKED = re.compile(r"\bcuda\.is_available\(\)|\bCUDA (?:is )?(?:not )?available\b", re.IGNORECASE)


def find(lines: Lines) -> list[Fragment]:
    for i, text in enumerate(lines.norm):
        for pattern, what in ((_TF_GPU, "the report asks for tensorflow-gpu"), (_CUDA_ASKED, "the report asks whether CUDA is available")):
            if pattern.search(text):
                frag = Fragment("prose", i + 1, i + 1)
                frag.add("report.gpu_expected", what)
                return [frag]
    return []
