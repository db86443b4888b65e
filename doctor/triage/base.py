"""What every fragment parser returns: a `Fragment`, the facts it establishes, and where.

A parser is a pure function `find(lines) -> list[Fragment]` over `Lines`: it never raises
(a line it cannot read is skipped) and never guesses (a value the text does not state is
left out, so the fact stays unknown). Each fact carries the report lines it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fwdoctor.model import Fact

# How much a fragment kind is trusted when two fragments state the same key differently:
# a program's own output about itself beats a listing beats free text.
PRIORITY = {
    "error": 90,            # torch/nvcc/NVML messages: the program that failed says it
    "nvidia-smi": 80,
    "proc-driver-version": 85,
    "nvcc": 80,
    "collect_env": 70,
    "vllm collect_env": 70,
    "openmmlab env": 70,
    "torch build config": 75,
    "python": 65,
    "torch device properties": 70,  # torch.cuda.get_device_properties(): the CUDA runtime's name and capability
    "ds_report": 60,
    "hf env": 55,
    "pip list": 50,
    "conda list": 50,
    "conda info": 60,  # conda's virtual packages: the driver's CUDA as libcuda told conda
    "dpkg/rpm": 40,
    "gcc": 60,
    "df /dev/shm": 60,
    "ulimit": 60,  # `ulimit -a` / `ulimit -l` / /proc/PID/limits (fwdoctor.triage.ulimit)
    "lspci": 60,
    "kernel log": 85,  # dmesg / journalctl -k: the kernel module's own messages (fwdoctor.triage.kernel_log)
    "paddle": 70,  # Paddle's own device banner
    "jax env": 70,  # jax.print_environment_info()
    "env": 55,  # `env`/`export` lines: what was set, perhaps not for the failing run
    "NCCL_DEBUG": 60,  # NCCL's "X set by environment to Y": what the failing run itself was told
    "issue template": 45,  # what a person typed into a form
    "prose": 30,  # what a person wrote in a sentence ("my tensorflow version is 2.12.0")
}


@dataclass
class Fragment:
    """One recognised piece of the report: lines `start`..`end` (1-based) of `kind`."""

    kind: str
    start: int
    end: int
    facts: list[Fact] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"report line {self.start}" if self.start == self.end else f"report line {self.start}-{self.end}"

    def add(self, key: str, value: Any, line: int | None = None, end: int | None = None) -> None:
        """A fact stated at `line` (..`end`), else by the whole fragment."""
        if line is None:
            where = self.where
        elif end is None or end == line:
            where = f"report line {line}"
        else:
            where = f"report line {line}-{end}"
        self.facts.append(Fact(key, value, source=f"{where}: {self.kind}"))

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "lines": [self.start, self.end],
            "facts": {f.key: f.value for f in self.facts},
            "notes": list(self.notes),
        }


# (?<!\d): a search starts only at the first digit of a run. Without it a line of n digits
# and no dot costs n^2 (each start runs \d+ to the end, then backs off one digit at a
# time); a leftmost match always starts at a run's first digit anyway.
VERSION = r"(?<!\d)\d+(?:\.\d+)+"
_NOT_VALUES = re.compile(r"^(could not collect|n/?a|none|not (?:set|available|installed|found)|unknown|-|\?)$", re.IGNORECASE)


def is_value(text: str | None) -> bool:
    """False for the fillers tools print instead of a value ("Could not collect", "N/A")."""
    return bool(text and text.strip() and not _NOT_VALUES.match(text.strip()))


def first_version(text: str) -> str | None:
    match = re.search(VERSION, text or "")
    return match.group(0) if match else None


def cuda_from_local(version: str) -> tuple[bool, str | None]:
    """("2.1.0+cu121") -> (True, "12.1"); "+cpu" -> (True, None); no/other tag -> (False, None).

    The first item says whether the tag settles the question at all."""
    match = re.search(r"\+cu(\d{2,3})\b", version or "")
    if match:
        digits = match.group(1)
        return True, f"{digits[:-1]}.{digits[-1]}"
    if re.search(r"\+cpu\b", version or ""):
        return True, None
    return False, None


def gpu_entry(index: int, name: str, bus_id: str | None = None, cc: str | None = None) -> dict[str, Any]:
    """A gpus.list entry (doctor/FACTS.md) from what a report shows: no memory, UUID, MIG."""
    return {"index": index, "name": name.strip(), "cc": cc, "memory_mib": None, "uuid": None, "bus_id": bus_id,
            "mig": None, "persistence": None, "source": "report"}


def toolkit_entry(version: str, via: str, root: str | None = None, nvcc: str | None = None) -> dict[str, Any]:
    """A cuda.toolkits entry for a toolkit the report shows (root unknown unless printed)."""
    parts = version.split(".")
    return {"root": root or f"(the toolkit of the nvcc the report shows)", "version": version, "version_source": "nvcc",
            "nvcc": nvcc or "nvcc", "nvcc_release": ".".join(parts[:2]), "host_gcc_max": None, "found_via": [via]}
