"""JAX's CUDA extra asked of pip on native Windows, read from a report (framework-cpu-build-on-gpu-host,
through fwdoctor.triage.rules.framework_cpu_build_gpu_expected).

JAX has no GPU build for native Windows (frameworks.yaml jax `platforms`: its installation
page's table says "no" for NVIDIA GPU on Windows x86_64; the CUDA plugin has Linux wheels only),
so `pip install "jax[cuda12]"` (or 0.4.x's "jax[cuda12_pip]" with the jax_cuda_releases page)
run there installs the CPU jaxlib, and JAX falls back to the CPU (jax-ml/jax#17634). The command
is read as native Windows where its own prompt is a Windows path (`C:\\Users\\me>`, PowerShell's
`PS C:\\...>`) or the same report's pip fetches win_amd64 wheels; a WSL prompt (`user@host:/mnt/c$`)
is not that. The extra itself says a GPU is meant.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_MAX_LINE = 2000
# pip (pip3, python -m pip, py -m pip) installing jax with a CUDA extra: "jax[cuda12_pip]", "jax[cuda12]"
_JAX_CUDA = re.compile(r"\bpip3?(?:\.exe)? {1,4}install\b[^\n]{0,200}?(?<![\w-])jax\[(?P<extra>cuda[\w,-]{0,30})\]", re.IGNORECASE)
# cmd's and PowerShell's prompts: "C:\Users\me>", "(venv) C:\work>", "PS C:\Users\me>"
_WIN_PROMPT = re.compile(r"^\s{0,8}(?:\([\w.-]{1,60}\) {1,2})?(?:PS {1,2})?[A-Za-z]:\\[^>\n]{0,200}>")
_WIN_WHEEL = re.compile(r"-win_amd64\.whl\b")
_JAX_VERSION = re.compile(r"(?<![\w-])jax-(?P<version>\d{1,2}\.\d{1,3}\.\d{1,3})(?:-py3-none-any\.whl|\.tar\.gz|(?=[\s,]|$))")


def find(lines: Lines) -> list[Fragment]:
    """frameworks.installed: [JAX on native Windows (native_windows: True, its version where pip
    names it)] and report.gpu_expected, where pip is asked for jax[cuda*] on native Windows."""
    norm = lines.norm
    asked: tuple[int, str] | None = None
    windows: int | None = None
    version: str | None = None
    for i, text in enumerate(norm):
        if not text or len(text) > _MAX_LINE:
            continue
        m = _JAX_CUDA.search(text)
        if m and asked is None:
            asked = (i, m["extra"])
            if _WIN_PROMPT.search(text):
                windows = i
        if windows is None and _WIN_WHEEL.search(text):
            windows = i
        v = _JAX_VERSION.search(text) if "jax-" in text else None
        if v and version is None:
            version = v["version"]
    if asked is None or windows is None:
        return []
    line, extra = asked
    frag = Fragment("pip on native Windows", min(line, windows) + 1, max(line, windows) + 1)
    item: dict[str, Any] = {"framework": "jax", "version": version, "packages": {"jax": version} if version else {}, "gpu_build": None,
                            "cuda": None, "cudnn": None, "arch_list": None, "requires": {}, "requires_from": None, "pairing": {},
                            "location": None, "native_windows": True,
                            "why": f"pip on native Windows (report line {windows + 1}), asked for jax[{extra}]"}
    frag.add("frameworks.installed", [item], line + 1)
    frag.add("report.gpu_expected", f"the report asks pip for jax[{extra}]", line + 1)
    return [frag]
