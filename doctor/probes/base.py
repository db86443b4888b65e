"""How a probe is declared. A probe reads the host and returns facts; it never judges.

A probe may also return `ProbeFailure`s for the parts it could not finish (a hung
nvidia-smi) while still returning what it did learn. An exception escaping a probe is a
bug or an unreadable file: the engine turns it into `probe-failed` and marks every key the
probe `provides` (and did not set) as unknown, with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from fwdoctor.host import MAX_READ_BYTES, Host
from fwdoctor.model import Fact, Facts, ProbeFailure

ProbeFunc = Callable[[Host, Facts], Iterable["Fact | ProbeFailure"]]


@dataclass(frozen=True)
class Probe:
    name: str
    provides: tuple[str, ...]
    func: ProbeFunc
    # Deep probes import torch or load libraries in a child process: only with --deep.
    deep: bool = False


@dataclass(frozen=True)
class Read:
    """A file a probe may read the bytes of, declared so that an image is inspected by
    keeping only these (fwdoctor.image.keep): everything else keeps its name, type, mode, size
    and link target, never its content.

    `pattern` is a glob over the file's path in the image: `*` and `?` stay inside one path
    component, a leading `**/` matches any folders. `limit` is the most the probe reads from
    the start of the file (the rest is never looked at). `until`, for a bounded scan of a
    large binary, lets the reader stop keeping bytes once the pattern has been seen."""

    pattern: str
    limit: int = MAX_READ_BYTES
    until: "re.Pattern[bytes] | None" = None


def probe(name: str, provides: Iterable[str], deep: bool = False) -> Callable[[ProbeFunc], Probe]:
    def wrap(func: ProbeFunc) -> Probe:
        return Probe(name, tuple(provides), func, deep)

    return wrap
