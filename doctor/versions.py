"""Version strings as facts, KB rows and file names hold them, read one way everywhere.

Facts carry versions as text ("12.4.131", "3.11.7", "580.95.05", "2.21.5-1+cuda12.4");
every comparison goes through `packaging.version`, here. Nothing in this module raises on
garbage except `cuda_parts`, whose callers turn its ValueError into a message naming the
input; the rest answer None (or False) so a probe or rule never crashes on a strange value.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, TypeVar

from packaging.version import InvalidVersion, Version

T = TypeVar("T")

_LEADING_INT = re.compile(r"^\s*(\d+)")
_CUDA = re.compile(r"^\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?")
# Debian: [epoch:]upstream[-revision], and NVIDIA's packages add "+cudaX.Y" to the revision.
_DEBIAN_UPSTREAM = re.compile(r"^(?:\d+:)?(\d+(?:\.\d+)*)")


def parse_version(text: object) -> Version | None:
    """packaging's Version of a fact value; None when it is None or no version."""
    if text is None:
        return None
    try:
        return Version(str(text))
    except InvalidVersion:
        return None


def release(text: object) -> tuple[int, ...] | None:
    """'9.24.0.43' -> (9, 24, 0, 43); None when no version."""
    parsed = parse_version(text)
    return parsed.release if parsed is not None else None


def major(text: object) -> int | None:
    """The leading number of a version-like string: '9.1.0' -> 9, '2' -> 2, '12.9' -> 12;
    None for a non-string or text that does not start with a number. Lenient on purpose:
    file names and package versions ("2.21.5-1+cuda12.4") need not be PEP 440."""
    match = _LEADING_INT.match(text) if isinstance(text, str) else None
    return int(match.group(1)) if match else None


def major_minor(text: object, pad: bool = True) -> str | None:
    """'12.4.131' -> '12.4', '3.11.7' -> '3.11'; a bare '13' -> '13.0' (None with
    pad=False, for callers that need a real minor); None when no version."""
    parsed = parse_version(text)
    if parsed is None or (not pad and len(parsed.release) < 2):
        return None
    return f"{parsed.major}.{parsed.minor}"


def short(text: str | None, parts: int = 3) -> str:
    """'9.24.0.43' -> '9.24.0' for messages; the text itself when it is no version."""
    found = release(text)
    return ".".join(str(p) for p in found[:parts]) if found else (text or "unknown")


def same_release(a: str | None, b: str | None, parts: int = 3) -> bool | None:
    """True when two versions agree to `parts` parts (9.24.0 == 9.24.0.43), False when they
    differ anywhere both are precise, None when one is too vague to tell (a bare "9")."""
    ra, rb = release(a), release(b)
    if ra is None or rb is None:
        return None
    n = min(len(ra), len(rb), parts)
    if ra[:n] != rb[:n]:
        return False
    return True if n >= parts else None


def equal(a: str, b: str) -> bool:
    """Equal as versions ("580.95" == "580.95.0"), else as text when either is no version."""
    va, vb = parse_version(a), parse_version(b)
    return va == vb if va is not None and vb is not None else a == b


def cuda_parts(cuda: str) -> tuple[int, int | None, int | None]:
    """'12.4.131' -> (12, 4, 131); '13' -> (13, None, None); trailing text after the numbers
    is ignored ('11.8.20220929', nvcc's '12.4 V12.4.131'). ValueError for garbage."""
    m = _CUDA.match(str(cuda)) if cuda is not None else None
    if not m:
        raise ValueError(f"not a CUDA version: {cuda!r} (expected e.g. 12.4 or 12.4.1)")
    first, second, third = m.groups()
    return int(first), None if second is None else int(second), None if third is None else int(third)


def deb_upstream_version(version: str) -> str | None:
    """The upstream part of a Debian package version: 8.9.7.29-1+cuda12.2 -> "8.9.7.29",
    1:2.21.5-1 -> "2.21.5"; None when it does not start with a number."""
    match = _DEBIAN_UPSTREAM.match(version)
    return match.group(1) if match else None


def best_match(want: object, items: Iterable[T], version_of: Callable[[T], object]) -> T | None:
    """The first item whose version has `want`'s major.minor, else the first with its major;
    None when `want` is no version or nothing matches. How a toolkit is picked for torch's
    CUDA (rules/toolkit.py and recipes/env.py must pick the same one)."""
    wanted = release(want)
    if wanted is None:
        return None
    listed = list(items)
    for depth in (2, 1):
        for item in listed:
            have = release(version_of(item))
            if have is not None and have[:depth] == wanted[:depth]:
                return item
    return None


# conda-forge's CUDA build strings: cuda120py311h5cbd639_1, cuda126_mkl_py312_h30b5a27_300,
# cuda12py312h..._0; the build number is what follows the last "_".
_CUDA_LABEL = re.compile(r"^cuda(\d{2,3})(?=[_p])")
_BUILD_NUMBER = re.compile(r"_(\d{1,6})$")


def conda_cuda_label(build: str) -> str | None:
    """"12.0" for cuda120py311h..._1, "12" for cuda12py312h..._0, "11.8" for cuda118_...;
    None when the build string does not start with a CUDA label."""
    match = _CUDA_LABEL.match(build)
    if not match:
        return None
    digits = match.group(1)
    return digits if len(digits) == 2 else f"{digits[:2]}.{digits[2]}"


def build_number(build: str) -> int | None:
    match = _BUILD_NUMBER.search(build)
    return int(match.group(1)) if match else None
