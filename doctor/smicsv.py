"""nvidia-smi's `--query-gpu=FIELDS --format=csv` rows read into the gpus.list shape: one
parser for the live probe (fwdoctor.probes.driver, `noheader`) and for a report that pastes
the query's output (fwdoctor.triage.nvidia_smi). Only `re` at import: triage's import budget."""

from __future__ import annotations

import re
from typing import Any, Sequence

_VERSION = r"(\d+\.\d+(?:\.\d+)?)"


def parse_smi_csv(text: str, fields: Sequence[str]) -> list[dict[str, Any]] | None:
    """`nvidia-smi --query-gpu=FIELDS --format=csv,noheader[,nounits]` -> one dict per GPU
    in the gpus.list shape (plus "driver_version"); None when any row is unparseable.

    "[N/A]", "N/A" and "[Not Supported]" read as None for that field only.
    """
    import csv  # here: only nvidia-smi's CSV needs it, and a host with no GPU never runs it

    rows: list[dict[str, Any]] = []
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        parsed = list(csv.reader(lines, skipinitialspace=True))
    except csv.Error:  # Python 3.10's csv refuses a NUL byte ("line contains NUL"); 3.11 reads it
        return None
    for position, row in enumerate(parsed):
        if len(row) != len(fields):
            return None
        raw = {name: _smi_value(value) for name, value in zip(fields, row)}
        if "index" not in fields:
            raw["index"] = str(position)  # nvidia-smi lists GPUs in index order
        try:
            gpu = _smi_gpu(raw)
        except ValueError:
            return None
        rows.append(gpu)
    return rows


def _smi_value(value: str) -> str | None:
    value = value.strip()
    if not value or value.strip("[]") in ("N/A", "Not Supported", "Unknown Error", "Insufficient Permissions"):
        return None
    return value


def _smi_gpu(raw: dict[str, str | None]) -> dict[str, Any]:
    index = raw.get("index")
    if index is None or not index.isdigit():
        raise ValueError(f"index {index!r}")
    memory = raw.get("memory.total")
    memory_mib = None
    if memory is not None:
        number = memory.removesuffix("MiB").strip()
        if not number.isdigit():
            raise ValueError(f"memory.total {memory!r}")
        memory_mib = int(number)
    cc = raw.get("compute_cap")
    if cc is not None and not re.fullmatch(r"\d+\.\d+", cc):
        raise ValueError(f"compute_cap {cc!r}")
    persistence = raw.get("persistence_mode")
    if persistence not in (None, "Enabled", "Disabled"):
        raise ValueError(f"persistence_mode {persistence!r}")
    driver = raw.get("driver_version")
    if driver is not None and not re.fullmatch(_VERSION, driver):
        raise ValueError(f"driver_version {driver!r}")
    if "name" in raw and raw["name"] is None:
        raise ValueError("empty name")
    return {
        "index": int(index),
        "name": raw.get("name"),
        "cc": cc,
        "memory_mib": memory_mib,
        "uuid": raw.get("uuid"),
        "bus_id": raw.get("pci.bus_id"),
        "mig": None,
        "persistence": None if persistence is None else persistence == "Enabled",
        "driver_version": driver,
    }
