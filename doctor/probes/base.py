"""How a probe is declared. A probe reads the host and returns facts; it never judges.

A probe may also return `ProbeFailure`s for the parts it could not finish (a hung
nvidia-smi) while still returning what it did learn. An exception escaping a probe is a
bug or an unreadable file: the engine turns it into `probe-failed` and marks every key the
probe `provides` (and did not set) as unknown, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, ProbeFailure

ProbeFunc = Callable[[Host, Facts], Iterable["Fact | ProbeFailure"]]


@dataclass(frozen=True)
class Probe:
    name: str
    provides: tuple[str, ...]
    func: ProbeFunc
    # Deep probes import torch or load libraries in a child process: only with --deep.
    deep: bool = False


def probe(name: str, provides: Iterable[str], deep: bool = False) -> Callable[[ProbeFunc], Probe]:
    def wrap(func: ProbeFunc) -> Probe:
        return Probe(name, tuple(provides), func, deep)

    return wrap
