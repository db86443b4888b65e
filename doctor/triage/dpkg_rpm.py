"""Package listings: `dpkg -l` rows ("ii  libnvidia-compute-535:amd64  535.129.03-0ubuntu1 ...")
and `rpm -qa` names ("nvidia-driver-cuda-libs-535.104.05-1.el8.x86_64", "cuda-nvcc-12-1-12.1.105-1.x86_64").

Only the rows that carry facts the rules read: the user-space driver library package
(libnvidia-compute-NNN holds libcuda; nvidia-driver-*-libs on RHEL) and the CUDA compiler
packages (cuda-nvcc-X-Y, Debian/Ubuntu's nvidia-cuda-toolkit). Only installed rows count
("ii"/"hi"; "rc" is removed, its config files left).
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import VERSION, Fragment
from fwdoctor.triage.text import Lines
from fwdoctor.versions import deb_upstream_version

# dpkg -l truncates wide columns ("libnvidia-compute-410:amd6"), so the arch suffix is any word.
_DPKG = re.compile(r"^\s*(ii|hi)\s+(\S+?)(?::\w+)?\s+(\S+)\s+(?:amd64|arm64|i386|all)\b")
_RPM = re.compile(r"^\s*(nvidia-driver(?:-latest-dkms)?(?:-cuda)?-libs|cuda-nvcc-\d+-\d+)-(" + VERSION + r")-[\w.]+\.(?:x86_64|aarch64)\s*$")


def _upstream(version: str) -> str | None:
    plain = deb_upstream_version(version) or version
    match = re.match(VERSION, plain.split("~")[0])
    return match.group(0) if match else None


def find(lines: Lines) -> list[Fragment]:
    libs: list[tuple[int, dict[str, Any]]] = []
    toolkits: list[tuple[int, dict[str, Any]]] = []
    for i, text in enumerate(lines.norm):
        match = _DPKG.match(text)
        if match:
            name, version = match.group(2), _upstream(match.group(3))
            if not version:
                continue
            branch = re.fullmatch(r"libnvidia-compute-(\d+)(?:-server)?", name)
            if branch and version.split(".")[0] == branch.group(1):
                # A package of another branch than its version is a transitional stub
                # ("libnvidia-compute-418 430.50-0ubuntu3"): it holds no library.
                libs.append((i + 1, {"path": f"(dpkg package {name})", "name": "libcuda", "version": version}))
            elif name == "nvidia-cuda-toolkit":
                toolkits.append((i + 1, _toolkit("/usr/lib/nvidia-cuda-toolkit", version, "dpkg", "/usr/bin/nvcc")))
            elif re.fullmatch(r"cuda-nvcc-\d+-\d+", name):
                xy = ".".join(name.split("-")[2:4])
                toolkits.append((i + 1, _toolkit(f"/usr/local/cuda-{xy}", version, "dpkg", f"/usr/local/cuda-{xy}/bin/nvcc")))
            continue
        match = _RPM.match(text)
        if match:
            name, version = match.group(1), match.group(2)
            if name.startswith("nvidia-driver"):
                libs.append((i + 1, {"path": f"(rpm package {name})", "name": "libcuda", "version": version}))
            else:
                xy = ".".join(name.split("-")[2:4])
                toolkits.append((i + 1, _toolkit(f"/usr/local/cuda-{xy}", version, "rpm", f"/usr/local/cuda-{xy}/bin/nvcc")))
    out = []
    if libs:
        frag = Fragment("dpkg/rpm", libs[0][0], libs[-1][0])
        frag.add("driver.userspace_libs", [lib for _, lib in libs])
        out.append(frag)
    if toolkits:
        frag = Fragment("dpkg/rpm", toolkits[0][0], toolkits[-1][0])
        frag.add("cuda.toolkits", [tk for _, tk in toolkits])
        out.append(frag)
    return out


def _toolkit(root: str, version: str, source: str, nvcc: str) -> dict[str, Any]:
    return {"root": root, "version": version, "version_source": source, "nvcc": nvcc,
            "nvcc_release": ".".join(version.split(".")[:2]), "host_gcc_max": None, "found_via": [f"{source} package"]}
