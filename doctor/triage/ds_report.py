"""DeepSpeed's `ds_report` ("torch version .................... 2.0.1+cu117").

Its "nvcc version" is the nvcc under torch.utils.cpp_extension.CUDA_HOME (DeepSpeed's
op_builder installed_cuda_version), the toolkit extensions build with -> cuda.active;
"torch cuda version" is torch.version.cuda.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import VERSION, Fragment, cuda_from_local, is_value
from fwdoctor.triage.text import Lines

# A row is "key .... value": the key is what comes before the first four dots. Split there
# first, then match the key: the one pattern "^\s*([a-z][\w /().,-]*?)\s*\.{4,}" tried
# every end of a lazy key against a run of blanks (a line of blanks cost n^2).
_KEY = re.compile(r"^\s*([a-z][\w /().,-]*)", re.IGNORECASE)


def _row(text: str) -> tuple[str, str] | None:
    """(key, value) of a ds_report row, else None."""
    dots = text.find("....")
    if dots < 0:
        return None
    key = _KEY.fullmatch(text[:dots].rstrip())
    if not key:
        return None
    return key.group(1).strip(), text[dots:].lstrip(".").strip()


def find(lines: Lines) -> list[Fragment]:
    rows = []
    for i, text in enumerate(lines.norm):
        row = _row(text)
        if row:
            rows.append((i + 1, row[0].lower(), row[1]))
    keys = {key for _, key, _ in rows}
    if not {"torch version", "deepspeed info", "torch cuda version"} & keys:
        return []
    frag = Fragment("ds_report", rows[0][0], rows[-1][0])
    for number, key, value in rows:
        if key == "torch version" and re.match(r"\d", value):
            frag.add("torch.installed", True, number)
            frag.add("torch.version", value.split()[0], number)
            settled, cuda = cuda_from_local(value)
            if settled and "torch cuda version" not in keys:
                frag.add("torch.cuda", cuda, number)
        elif key == "torch cuda version" and is_value(value):
            match = re.match(r"\d+\.\d+", value)
            if match:
                frag.add("torch.cuda", match.group(0), number)
        elif key == "nvcc version" and is_value(value):
            match = re.match(VERSION, value)
            if match:
                frag.add("cuda.active", {"root": "(torch's CUDA_HOME, not shown)", "version": match.group(0), "why": "CUDA_HOME (ds_report)"}, number)
    return [frag] if frag.facts else []
