"""`transformers env`, `accelerate env`, `diffusers-cli env`, `huggingface-cli env`:
"- PyTorch version (GPU?): 2.0.1+cu118 (True)", "- Python version: 3.10.12",
"- GPU type: NVIDIA A100-SXM4-80GB" (accelerate)."""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment, cuda_from_local, first_version, gpu_entry, is_value
from fwdoctor.triage.text import Lines

# "- key: value": the key is what comes before the first ':'. Split there first, then match
# the key: the one pattern "^\s*[-*]\s+`?([A-Za-z][\w .()?/-]*?)`?\s*:" tried every end of
# a lazy key against a run of blanks (a line of blanks cost n^2).
_KEY = re.compile(r"^\s*[-*]\s+`?([A-Za-z][\w .()?/-]*)")


def _row(text: str) -> tuple[str, str] | None:
    """(key, value) of a "- key: value" row, else None."""
    head, colon, value = text.partition(":")
    if not colon:
        return None
    head = head.rstrip()
    key = _KEY.fullmatch(head[:-1].rstrip() if head.endswith("`") else head)
    return (key.group(1), value.strip()) if key else None
_MARKERS = ("`transformers` version", "`accelerate` version", "`diffusers` version", "huggingface_hub version", "pytorch version (gpu?)", "platform")


def find(lines: Lines) -> list[Fragment]:
    rows = []
    for i, text in enumerate(lines.norm):
        row = _row(text)
        if row:
            rows.append((i + 1, row[0].strip().lower().replace("`", ""), row[1]))
    out = []
    group: list[tuple[int, str, str]] = []
    for row in rows + [(10**9, "", "")]:
        if group and row[0] - group[-1][0] > 3:
            keys = {k for _, k, _ in group}
            if any(k.endswith(" version") and k.split()[0] in ("transformers", "accelerate", "diffusers", "huggingface_hub") for k in keys) \
                    and any(k.startswith("pytorch version") for k in keys):
                out.append(_fragment(group))
            group = []
        group.append(row)
    return [f for f in out if f.facts]


def _fragment(group: list[tuple[int, str, str]]) -> Fragment:
    frag = Fragment("hf env", group[0][0], group[-1][0])
    for number, key, value in group:
        if key.startswith("pytorch version") and re.match(r"\d", value):
            version = value.split()[0]
            frag.add("torch.installed", True, number)
            frag.add("torch.version", version, number)
            settled, cuda = cuda_from_local(version)
            if settled:
                frag.add("torch.cuda", cuda, number)
        elif key == "python version" and is_value(value):
            version = first_version(value)
            if version:
                frag.add("python.version", version, number)
        elif key == "gpu type" and is_value(value):
            frag.add("gpus.list", [gpu_entry(0, value)], number)
            frag.notes.append(f"line {number}: accelerate shows the GPU type, not how many")
        elif key == "platform":
            match = re.search(r"glibc(\d+\.\d+)", value)
            if match:
                frag.add("system.glibc", match.group(1), number)
    return frag
