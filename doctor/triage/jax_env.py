"""`jax.print_environment_info()` (what JAX's issue form asks for):

    jax:    0.4.24
    jaxlib: 0.4.24
    numpy:  1.26.4
    python: 3.12.1 | packaged by Anaconda, Inc. | (main, Jan 19 2024, 15:51:05) [GCC 11.2.0]
    jax.devices (1 total, 1 local): [cuda(id=0)]

(jax-ml/jax#19821; newer JAX prints "device info: NVIDIA A100-SXM4-80GB-1, 1 local devices",
jax-ml/jax#32157.) Facts: jax's entry of frameworks.installed (its jax and jaxlib versions; a
GPU build when a device it lists is a CUDA one, else left unknown: a CPU-only list may be a
plugin that failed to load) and python.version. The CUDA plugin's version is not printed:
the entry's "cuda" stays unknown, so no driver floor is guessed from it. Each line is split
at its first ':' and the value checked whole: no pattern runs over the line.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import Fragment, first_version
from fwdoctor.triage.text import Lines

_VERSION = re.compile(r"\d{1,4}(?:\.\d{1,6}){1,3}(?:\.?(?:dev|rc|a|b)\d{0,10})?")
_GPU_DEVICE = ("cuda(id=", "CudaDevice(id=", "gpu(id=", "GpuDevice(id=")
_WINDOW = 8  # lines from "jax:" to the devices line


def _value(text: str, key: str) -> str | None:
    head, colon, value = text.partition(":")
    return value.strip() if colon and head.strip() == key else None


def find(lines: Lines) -> list[Fragment]:
    out = []
    norm = lines.norm
    for i, text in enumerate(norm):
        jax = _value(text, "jax")
        if jax is None or not _VERSION.fullmatch(jax) or i + 1 >= len(norm):
            continue
        jaxlib = _value(norm[i + 1], "jaxlib")
        if jaxlib is None or not _VERSION.fullmatch(jaxlib):
            continue
        frag = Fragment("jax env", i + 1, i + 2)
        gpu_build: bool | None = None
        for j in range(i + 2, min(len(norm), i + _WINDOW)):
            line = norm[j]
            python = _value(line, "python")
            if python is not None:
                version = first_version(python)
                if version:
                    frag.add("python.version", version, j + 1)
                    frag.end = j + 1
            elif line.startswith("jax.devices") or line.startswith("device info:"):
                if any(marker in line for marker in _GPU_DEVICE) or line.startswith("device info: NVIDIA"):
                    gpu_build = True
                frag.end = j + 1
        frag.add("frameworks.installed", [_jax(jax, jaxlib, gpu_build)], i + 1, frag.end)
        out.append(frag)
    return out


def _jax(jax: str, jaxlib: str, gpu_build: bool | None) -> dict[str, Any]:
    return {"framework": "jax", "version": jax, "packages": {"jax": jax, "jaxlib": jaxlib}, "gpu_build": gpu_build, "cuda": None,
            "cudnn": None, "arch_list": None, "requires": {}, "requires_from": None, "pairing": {}, "location": None,
            "why": "jax.print_environment_info()"}
