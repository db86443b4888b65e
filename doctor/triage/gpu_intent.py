"""What says, in a report that shows no GPU, that the user means to run on one
(report.gpu_expected), besides the issue form (fwdoctor.triage.issue_template) and conda's
CUDA packages (fwdoctor.triage.conda_builds):

    pip install tensorflow-gpu==2.12.0          the package exists only to ask for the GPU build
    torch.cuda.is_available()  /  "CUDA is not available"   the user asks a build for CUDA
    tf.config.list_physical_devices('GPU')  /  "can't detect my gpu"   the user asks TensorFlow for a GPU

Read by the triage rules that pair a CPU-only build with a GPU meant (framework- and
torch-cpu-build-on-gpu-host); neither says anything alone.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_TF_GPU = re.compile(r"\btensorflow-gpu\b", re.IGNORECASE)
_CUDA_ASKED = re.compile(r"\bcuda\.is_available\(\)|\bCUDA (?:is )?(?:not )?available\b", re.IGNORECASE)
# TensorFlow's own GPU probes (tf.config.list_physical_devices('GPU'), tf.test.is_gpu_available(),
# tf.test.is_built_with_cuda()), which a report pastes to show that no GPU is found
# (tensorflow/tensorflow#62375, #60830, #62322).
_TF_ASKED = re.compile(r"\blist_physical_devices\(\s?(?:device_type\s?=\s?)?['\"]GPU['\"]\s?\)|\bis_gpu_available\(|\bis_built_with_cuda\(")
# The report saying a framework does not find the GPU ("Tensorflow can't detect my gpu",
# tensorflow/tensorflow#73368; "Tensorflow is not detecting GPU", #38990; "not able to detect GPU").
_GPU_NOT_FOUND = re.compile(
    r"\b(?:can(?:no|')?t|can not|(?:is|are|does|do)(?:n't| not)|not able to|unable to|fails? to)\s(?:be\s)?"
    r"(?:detect(?:ing|ed)?|find(?:ing)?|recogni[sz](?:e|ing|ed)|see(?:ing)?|us(?:e|ing))\s(?:my\s|the\s|any\s)?(?:nvidia\s)?gpus?\b",
    re.IGNORECASE)


def find(lines: Lines) -> list[Fragment]:
    for i, text in enumerate(lines.norm):
        for pattern, what in ((_TF_GPU, "the report asks for tensorflow-gpu"), (_CUDA_ASKED, "the report asks whether CUDA is available"),
                              (_TF_ASKED, "the report asks TensorFlow for its GPUs"), (_GPU_NOT_FOUND, "the report says the GPU is not found")):
            if pattern.search(text):
                frag = Fragment("prose", i + 1, i + 1)
                frag.add("report.gpu_expected", what)
                return [frag]
    return []
