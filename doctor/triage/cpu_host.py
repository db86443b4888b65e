"""The report saying the machine it runs on has no GPU (report.cpu_only_host): "a CPU
cluster", "CPU-only nodes", "on a CPU machine", Chinese "cpu集群" / "CPU 节点" / "CPU服务器".

Why it matters: the CUDA runtime returns cudaErrorInsufficientDriver (35, "CUDA driver
version is insufficient for CUDA runtime version") not only for a driver older than it but
also where there is no NVIDIA driver at all, as on a CPU-only node (PaddlePaddle/Paddle#14625:
a CUDA build of Paddle on a paddlecloud CPU cluster; NVIDIA/DIGITS#252: error #35 where no
driver could be installed). A report that says its host is CPU-only has not shown a driver
that is too old; the GPU build is the thing to change. fwdoctor.triage.rules reads it.

Only the host's kind counts, not a wish ("run on CPU", "use the CPU instead"): those are said
on GPU hosts too.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

# "CPU cluster", "CPU-only node(s)", "cpu only machine", "CPU server"; the host noun must follow.
_EN = re.compile(r"\bcpu(?:[- ]only)?[- ](?:cluster|node|machine|server|host|instance|box)s?\b", re.IGNORECASE)
# Chinese: 集群 cluster, 节点 node, 机器 machine, 服务器 server ("cpu集群", "CPU 节点").
_ZH = re.compile(r"cpu\s?(?:集群|节点|機器|机器|服务器|伺服器)", re.IGNORECASE)
_MAX_LINE = 2000  # a prose line; longer ones are logs or minified data, not a statement


def find(lines: Lines) -> list[Fragment]:
    for i, text in enumerate(lines.norm):
        if len(text) > _MAX_LINE:
            continue
        match = _EN.search(text) or _ZH.search(text)
        if match:
            frag = Fragment("prose", i + 1, i + 1)
            frag.add("report.cpu_only_host", match.group(0))
            return [frag]
    return []
