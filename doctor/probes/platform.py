"""What the prebuilt binaries of an environment ask of the machine: the CPU's SIMD extensions
(AVX) and the glibc each framework wheel was built for (its manylinux tag).

Shell equivalents:
    grep -m1 -E '^(model name|flags)' /proc/cpuinfo
    grep ^Tag: "$SITE"/{torch,jaxlib,tensorflow,paddlepaddle}*.dist-info/WHEEL

With --root the CPU is the root's proc/cpuinfo when it holds one (a root folder rarely does:
then UNKNOWN), and the wheels are those of the root's interpreter. The system's own glibc is
the system probe's (system.glibc).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Iterable

from fwdoctor.host import Host, UnreadableError
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, Read, probe
from fwdoctor.probes.frameworks import MEMBERS, first_dists
from fwdoctor.probes.torch import import_dirs

CPUINFO = "/proc/cpuinfo"
# The first processor's block is enough (every core of one machine reports the same flags),
# and a 256-core machine's cpuinfo is ~400 KB: the first 64 KiB holds several blocks.
CPUINFO_READ_BYTES = 64 * 1024
# The SIMD extensions prebuilt framework binaries are compiled with (jaxlib's
# cpu_feature_guard checks AVX, AVX2 and FMA as its build used them); kept in the fact so a
# report shows what was looked at, not the CPU's hundred other flags.
SIMD_FLAGS = ("avx", "avx2", "fma", "avx512f")
# The distributions whose native code decides whether `import` works: torch and the
# frameworks of probes/frameworks.py.
WHEELS = ("torch", *(name for names in MEMBERS.values() for name in names))
WHEEL_READ_BYTES = 16 * 1024  # a WHEEL file is a few hundred bytes: Wheel-Version, Generator, Root-Is-Purelib, Tag lines
READS = (Read(CPUINFO, limit=CPUINFO_READ_BYTES), Read("**/*.dist-info/WHEEL", limit=WHEEL_READ_BYTES))
KEYS = ("platform.cpu", "platform.wheel_glibc")

# PEP 600: manylinux_X_Y runs on glibc >= X.Y; the legacy tags are its aliases
# (manylinux1 = 2_5, manylinux2010 = 2_12, manylinux2014 = 2_17).
_MANYLINUX = re.compile(r"^manylinux_(\d{1,2})_(\d{1,3})_\w{1,20}$")
_LEGACY = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}


# ----------------------------------------------------------------------------- parsers
def parse_cpuinfo(text: str) -> dict[str, Any] | None:
    """{"model", "flags"} of the first processor in /proc/cpuinfo; "flags" keeps the
    SIMD_FLAGS it names. None when the text has no x86 "flags" line (an arm64 cpuinfo says
    "Features"): AVX is an x86 extension."""
    model = None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "model name" and model is None:
            model = " ".join(value.split()) or None
        elif key == "flags":
            return {"model": model, "flags": simd_flags(value)}
    return None


def simd_flags(value: str) -> list[str]:
    """The SIMD_FLAGS among a blank-separated flags list, in SIMD_FLAGS order."""
    words = set(value.split())
    return [flag for flag in SIMD_FLAGS if flag in words]


def glibc_of_tags(text: str) -> tuple[str, str] | None:
    """(tag, glibc) of the oldest glibc a WHEEL file's manylinux `Tag:` lines accept, e.g.
    ("manylinux_2_27_x86_64", "2.27"); None for a wheel with no manylinux tag (pure
    Python, macOS, Windows, musllinux)."""
    best: tuple[tuple[int, int], str, str] | None = None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep or key.strip() != "Tag":
            continue
        # interpreter-abi-platform; a compressed platform ("a.b") lists several
        for platform in value.strip().rsplit("-", 1)[-1].split("."):
            glibc = _glibc_of(platform)
            if glibc is None:
                continue
            major, minor = (int(p) for p in glibc.split("."))
            if best is None or (major, minor) < best[0]:
                best = ((major, minor), platform, glibc)
    return (best[1], best[2]) if best else None


def _glibc_of(platform: str) -> str | None:
    match = _MANYLINUX.match(platform)
    if match:
        return f"{int(match.group(1))}.{int(match.group(2))}"
    legacy = platform.split("_", 1)[0]  # "manylinux2014_x86_64" -> "manylinux2014"
    return _LEGACY.get(legacy)


# ----------------------------------------------------------------------------- probe
@probe("platform", provides=KEYS)
def platform_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    yield cpu_fact(host)
    yield from wheel_glibc_facts(host, facts)


def cpu_fact(host: Host) -> Fact:
    try:
        text = host.read_text(CPUINFO, limit=CPUINFO_READ_BYTES)
    except UnreadableError as exc:
        return Fact.unknown("platform.cpu", f"cannot read {CPUINFO}: {exc.reason}")
    if text is None:
        where = "this host" if host.live else "the root"
        return Fact.unknown("platform.cpu", f"{where} has no {CPUINFO}")
    parsed = parse_cpuinfo(text)
    if parsed is None:
        return Fact("platform.cpu", None, source=f"{CPUINFO} (no x86 flags line: not an x86 CPU)")
    return Fact("platform.cpu", parsed, source=CPUINFO)


def wheel_glibc_facts(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    dirs = import_dirs(host, facts)
    if dirs is None:
        yield Fact.unknown("platform.wheel_glibc", f"no interpreter to inspect ({facts.why('python.site_packages')})")
        return
    found: list[dict[str, Any]] = []
    for name, dist in first_dists(host, dirs, lambda name: name in WHEELS).items():
        path = posixpath.join(dist["path"], "WHEEL")
        try:
            text = host.read_text(path, limit=WHEEL_READ_BYTES)
        except UnreadableError as exc:
            yield ProbeFailure("platform", f"cannot read {exc.path}: {exc.reason}")
            continue
        tagged = glibc_of_tags(text or "")
        if tagged:
            found.append({"dist": name, "version": dist["version"], "tag": tagged[0], "glibc": tagged[1], "path": path})
    yield Fact("platform.wheel_glibc", found, source=" ".join(dirs) or "no site dirs")


PROBES: tuple[Probe, ...] = (platform_probe,)
