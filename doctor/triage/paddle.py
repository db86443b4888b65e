"""PaddlePaddle's device banner, printed by every GPU run (and by `paddle.utils.run_check()`):

    W0513 16:34:00.386127  4360 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute Capability: 12.0, Driver API Version: 12.9, Runtime API Version: 11.8
    W0513 16:34:00.390440  4360 gpu_resources.cc:164] device: 0, cuDNN Version: 8.9.

(device_context.cc before Paddle 2.3, gpu_resources.cc after; PaddlePaddle/Paddle#72746.) Older
releases wrote "CUDA Capability: 61, Driver API Version: 10.1, Runtime API Version: 10.0"
(PaddlePaddle/Paddle#23487) and, first, "CUDA Capability: 75, Driver Version: 10.0, Runtime
Version: 8.0" (PaddlePaddle/Paddle#15183; the PR that added it, PaddlePaddle/Paddle#13885:
"the current machine install CUDA 8.0, but the API level supported by the CUDA driver is up
through CUDA 9.0"); the form "GPU Compute Capability: 6.1" dates from PaddlePaddle/Paddle#29109.
"GPU Compute Capability" is the device's (gpus.list cc), "Driver API Version" the CUDA the
driver supports (cudaDriverGetVersion: driver.cuda_version), "Runtime API Version" the CUDA
this Paddle build was compiled with (cudaRuntimeGetVersion: its frameworks.installed entry,
a GPU build), "cuDNN Version" the cuDNN it loaded. The banner does not name the GPU, nor
Paddle's version or target architectures: those stay unknown.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import Fragment, gpu_entry
from fwdoctor.triage.text import Lines

_BANNER = re.compile(
    r"Please NOTE: device: (?P<device>\d{1,3}), (?:GPU Compute Capability: (?P<cc>\d{1,2}\.\d{1,2})|CUDA Capability: (?P<cc_digits>\d{2,3})), "
    r"Driver (?:API )?Version: (?P<driver>\d{1,2}\.\d{1,2}), Runtime (?:API )?Version: (?P<runtime>\d{1,2}\.\d{1,2})"
)
_CUDNN = re.compile(r"device: (?P<device>\d{1,3}), cuDNN Version: (?P<cudnn>\d{1,2}\.\d{1,2})")


def find(lines: Lines) -> list[Fragment]:
    out = []
    norm = lines.norm
    seen: set[str] = set()
    for i, text in enumerate(norm):
        if "Please NOTE: device:" not in text:
            continue
        match = _BANNER.search(text)
        if not match or match.group("device") in seen:
            continue  # one fragment per device: the banner repeats each run
        seen.add(match.group("device"))
        frag = Fragment("paddle", i + 1, i + 1)
        cudnn = None
        for j in range(i + 1, min(len(norm), i + 4)):
            found = _CUDNN.search(norm[j])
            if found and found.group("device") == match.group("device"):
                cudnn = found.group("cudnn")
                frag.end = j + 1
                break
        device = int(match.group("device"))
        digits = match.group("cc_digits")
        cc = match.group("cc") or f"{digits[:-1]}.{digits[-1]}"  # "75" -> "7.5", "120" -> "12.0"
        frag.add("gpus.list", [gpu_entry(device, "", cc=cc)], i + 1)
        frag.add("driver.cuda_version", match.group("driver"), i + 1)
        frag.add("frameworks.installed", [_paddle(match.group("runtime"), cudnn)], i + 1, frag.end)
        frag.notes.append(f"line {i + 1}: Paddle's 'Runtime API Version' {match.group('runtime')} is the CUDA this Paddle build was compiled with")
        out.append(frag)
    return out


def _paddle(cuda: str, cudnn: str | None) -> dict[str, Any]:
    return {"framework": "paddle", "version": None, "packages": {}, "gpu_build": True, "cuda": cuda, "cudnn": cudnn,
            "arch_list": None, "requires": {}, "requires_from": None, "pairing": {}, "location": None,
            "why": f"Paddle's device banner: Runtime API Version {cuda}"}
