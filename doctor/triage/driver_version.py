"""/proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05 ...",
or "... Open Kernel Module for x86_64  ..."; the kernel log's "NVRM: loading NVIDIA UNIX ...") and the kernel log's "NVRM: API mismatch: the
client has the version X, but this kernel module has the version Y"."""

from __future__ import annotations

import re

from fwdoctor.triage.base import VERSION, Fragment
from fwdoctor.triage.text import Lines

_NVRM = re.compile(r"NVRM(?: version:|: loading)\s*NVIDIA UNIX\s+(Open Kernel Module for \S+|\S+ Kernel Module)\s+(" + VERSION + r")")
_API = re.compile(r"API mismatch: the client(?: '[^']*')?(?: \(pid \d+\))? has the version (" + VERSION + r"), but this kernel module has the version (" + VERSION + r")", re.IGNORECASE)
# What the kernel log puts in front of each continuation line: "[ 12.01] ", "Jun 30 11:07:05 gpu-0 kernel: ",
# "NVRM: "; syslog writes the line breaks as "#012".
# (?<!\s): a match starts at the first blank of a run, not at each one (n^2 on blanks).
_NVRM_MARK = re.compile(r"(?<!\s)\s*NVRM:\s*")
_PREFIX = re.compile(r"^\s*(?:\[\s*\d+\.\d+\]\s*)?(?:\w{3}\s+\d+\s+[\d:]+\s+\S+\s+kernel:\s*)?(?:NVRM:\s*)?")


def find(lines: Lines) -> list[Fragment]:
    out: list[Fragment] = []
    norm = lines.norm
    for i, text in enumerate(norm):
        match = _NVRM.search(text)
        if match:
            frag = Fragment("proc-driver-version", i + 1, i + 1)
            frag.add("driver.version", match.group(2))
            frag.add("driver.loaded", True)
            frag.add("driver.module_flavor", "open" if match.group(1).startswith("Open") else "proprietary")
            out.append(frag)
            continue
        if "API mismatch" in text:
            # The message is wrapped over up to four log lines, each with its own prefix.
            joined = ""
            for j in range(i, min(len(norm), i + 4)):
                piece = _PREFIX.sub("", norm[j].replace("#012", " ")) if j > i else norm[j].replace("#012", " ")
                joined = f"{joined} {piece.strip()}"
                match = _API.search(_NVRM_MARK.sub(" ", joined))
                if match:
                    frag = Fragment("kernel log (NVRM)", i + 1, j + 1)
                    frag.add("driver.version", match.group(2))
                    frag.add("driver.loaded", True)
                    frag.add("driver.userspace_libs", [{"path": "(the library of the NVRM client)", "name": "libnvidia-ml", "version": match.group(1)}])
                    out.append(frag)
                    break
    return out
