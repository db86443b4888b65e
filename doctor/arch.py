"""Will code built for an arch list run on a GPU of compute capability CC?

The CUDA rules (CUDA C Programming Guide, "Binary Compatibility" / "PTX Compatibility"):
- a cubin for sm_X.y runs on a GPU X.z with z >= y (same major only);
- PTX for compute_N is JIT-compiled by the driver for any GPU with CC >= N;
- arch-specific targets (sm_90a, sm_100a) run only on exactly that CC; family targets
  (sm_100f) run on the same major with minor >= theirs.
Arch lists are given as nvcc names ("sm_86", "compute_90") or TORCH_CUDA_ARCH_LIST
entries ("8.6", "9.0+PTX").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import Version

_NVCC = re.compile(r"^(sm|compute)_(\d+)(\d)([af]?)$")
_TORCH = re.compile(r"^(\d+)\.(\d+)([af]?)(\+PTX)?$")


@dataclass(frozen=True, order=True)
class Target:
    major: int
    minor: int
    kind: str  # "sass" or "ptx"
    suffix: str = ""  # "", "a" (arch-specific) or "f" (family)

    @property
    def cc(self) -> str:
        return f"{self.major}.{self.minor}"

    def __str__(self) -> str:
        prefix = "sm" if self.kind == "sass" else "compute"
        return f"{prefix}_{self.major}{self.minor}{self.suffix}"


def parse_targets(entries: list[str] | str) -> list[Target]:
    """Parse an arch list in either notation. Raises ValueError naming a bad entry."""
    if isinstance(entries, str):
        entries = [e for e in re.split(r"[;,\s]+", entries) if e]
    targets: list[Target] = []
    for entry in entries:
        text = entry.strip()
        m = _NVCC.match(text)
        if m:
            kind = "sass" if m.group(1) == "sm" else "ptx"
            targets.append(Target(int(m.group(2)), int(m.group(3)), kind, m.group(4)))
            continue
        m = _TORCH.match(text)
        if m:
            major, minor, suffix = int(m.group(1)), int(m.group(2)), m.group(3)
            targets.append(Target(major, minor, "sass", suffix))
            if m.group(4):
                targets.append(Target(major, minor, "ptx", suffix))
            continue
        raise ValueError(f"not an architecture: {entry!r} (expected e.g. sm_86, compute_90 or 8.6+PTX)")
    return targets


def parse_cc(cc: str) -> tuple[int, int]:
    """'8.6' -> (8, 6). Raises ValueError for anything else."""
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", str(cc))
    if not m:
        raise ValueError(f"not a compute capability: {cc!r} (expected MAJOR.MINOR, e.g. 8.6)")
    return int(m.group(1)), int(m.group(2))


@dataclass(frozen=True)
class ArchVerdict:
    runs: bool
    how: str  # "sass sm_86", "ptx compute_80 (JIT)", or why not

    def __bool__(self) -> bool:
        return self.runs


def runs_on(targets: list[Target] | list[str] | str, cc: str) -> ArchVerdict:
    """Whether code built for `targets` has something a GPU of compute capability `cc` runs."""
    if not targets or isinstance(targets, str) or isinstance(targets[0], str):
        targets = parse_targets(targets)  # type: ignore[arg-type]
    major, minor = parse_cc(cc)
    sass = [t for t in targets if t.kind == "sass"]  # type: ignore[union-attr]
    ptx = [t for t in targets if t.kind == "ptx"]  # type: ignore[union-attr]
    for t in sorted(sass, reverse=True):
        if t.major != major:
            continue
        if t.suffix == "a" and t.minor != minor:
            continue
        if t.minor <= minor:
            return ArchVerdict(True, f"sass {t}")
    for t in sorted(ptx, reverse=True):
        if t.suffix == "a" and (t.major, t.minor) != (major, minor):
            continue
        if t.suffix == "f" and (t.major != major or t.minor > minor):
            continue
        if (t.major, t.minor) <= (major, minor):
            return ArchVerdict(True, f"ptx {t} (JIT)")
    have = ", ".join(str(t) for t in targets) or "nothing"  # type: ignore[union-attr]
    return ArchVerdict(False, f"no sm_{major}{minor}-compatible cubin and no PTX at or below compute_{major}{minor} (built for: {have})")


def sm_name(cc: str) -> str:
    major, minor = parse_cc(cc)
    return f"sm_{major}{minor}"


def cc_key(cc: str) -> Version:
    major, minor = parse_cc(cc)
    return Version(f"{major}.{minor}")
