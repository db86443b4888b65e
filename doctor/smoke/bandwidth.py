"""Sizes and bandwidths of an all-reduce sweep, as nccl-tests defines them.

Definitions (NVIDIA/nccl-tests@03a204a1 doc/PERFORMANCE.md, "Bandwidth"; the code is
src/all_reduce.cu AllReduceGetBw):
  algbw = S / t                          S bytes per rank, t seconds per operation
  busbw = algbw * 2 * (n - 1) / n        n ranks; all-reduce's correction factor
both in decimal GB/s (nccl-tests divides bytes by 1.0E9). The average reported beside a
sweep is the arithmetic mean of busbw over sizes, like nccl-tests' "Avg bus bandwidth".
(nccl-tests uses (n-1)/(n+1) instead when NCCL_ALGO is NVLS/NVLSTREE, in-network
reduction; a plain torch all_reduce sweep reports the ring/tree factor.)
"""

from __future__ import annotations

import re

_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_bytes(text: str) -> int:
    """'8', '64K', '256M', '1G' (binary multiples, as nccl-tests' -b/-e take them)."""
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"not a byte count: {text!r} (expected e.g. 8, 64K, 256M, 1G)")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def sweep_sizes(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    """min, min*factor, ... up to max inclusive (nccl-tests -b/-e/-f). Raises ValueError."""
    if min_bytes < 1:
        raise ValueError(f"--min-bytes must be at least 1, got {min_bytes}")
    if max_bytes < min_bytes:
        raise ValueError(f"--max-bytes {max_bytes} is below --min-bytes {min_bytes}")
    if factor < 2:
        raise ValueError(f"--factor must be at least 2, got {factor}")
    sizes = []
    size = min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= factor
    return sizes


def algbw_gbps(nbytes: int, seconds: float) -> float:
    """S / t in decimal GB/s. 0 for a zero or negative time (cannot be measured)."""
    if seconds <= 0:
        return 0.0
    return nbytes / 1e9 / seconds


def busbw_factor(nranks: int) -> float:
    """2(n-1)/n for all-reduce; 0 for a single rank (nothing crosses a bus)."""
    if nranks < 1:
        raise ValueError(f"nranks must be at least 1, got {nranks}")
    return 2.0 * (nranks - 1) / nranks


def busbw_gbps(nbytes: int, seconds: float, nranks: int) -> float:
    return algbw_gbps(nbytes, seconds) * busbw_factor(nranks)


def average(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def human_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"
