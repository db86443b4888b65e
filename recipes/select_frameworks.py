"""`select jax` / `select tensorflow`: the newest release in kb.frameworks whose GPU build
this host runs (driver floor of its CUDA, a wheel for its Python, its GPUs in the build's
published targets), and for each newer release why not. Pure: a Target and the KB in, a
FrameworkSelection out. A host with no driver gets the CPU install.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from fwdoctor import arch
from fwdoctor.kb.frameworks import TITLES
from fwdoctor.selection import Rejection, Target

if TYPE_CHECKING:
    from fwdoctor.kb import KB
    from fwdoctor.kb.frameworks import Build, FrameworkRelease


@dataclass(frozen=True)
class FrameworkSelection:
    framework: str
    target: Target
    release: FrameworkRelease | None
    build: Build | None  # None with a release: the CPU install (no driver)
    rejected: tuple[Rejection, ...] = ()
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.release is not None

    def pip_requirement(self) -> str:
        """"jax[cuda13]==0.10.2", "tensorflow[and-cuda]==2.21.0", "jax==0.10.2" (CPU)."""
        assert self.release is not None
        base = "jax" if self.framework == "jax" else "tensorflow"
        extra = f"[{self.build.extra}]" if self.build is not None and self.build.extra else ""
        return f"{base}{extra}=={self.release.version}"

    def to_json(self) -> dict[str, Any]:
        return {
            "framework": self.framework,
            "target": {"python": self.target.python, "driver": self.target.driver, "gpus": [{"name": g.name, "cc": g.cc} for g in self.target.gpus]},
            "choice": None if self.release is None else {
                "version": self.release.version,
                "package": self.build.package if self.build else self.framework,
                "cuda": self.build.cuda if self.build else None,
                "pip": self.pip_requirement(),
                "source": list(dict.fromkeys((*self.release.source, *(self.build.source if self.build else ())))),
            },
            "rejected": [{"candidate": r.candidate, "reasons": list(r.reasons)} for r in self.rejected],
            "reason": self.reason,
        }


def _reasons(kb: KB, release: FrameworkRelease, build: Build, target: Target) -> list[str]:
    why = []
    if target.python not in build.pythons:
        why.append(f"no {build.package} wheel for Python {target.python} (has {', '.join(build.pythons) or 'none listed'})")
    floor = kb.cuda.driver_floor(build.cuda) if build.cuda else None
    if target.driver and build.cuda:
        if floor is None:
            why.append(f"no driver floor in the KB for CUDA {build.cuda}")
        elif Version(target.driver) < Version(floor):
            why.append(f"CUDA {build.cuda} needs driver >= {floor} (this host: {target.driver})")
    if build.arch_list:
        for gpu in target.gpus:
            if not arch.runs_on(list(build.arch_list), gpu.cc):
                why.append(f"no kernel for {gpu.name} (cc {gpu.cc}) in {' '.join(build.arch_list)}")
    return why


def select_framework(kb: KB, framework: str, target: Target) -> FrameworkSelection:
    releases = sorted(kb.frameworks.releases(framework), key=lambda r: Version(r.version), reverse=True)
    if not releases:
        return FrameworkSelection(framework, target, None, None, reason=f"the KB lists no {TITLES.get(framework, framework)} release")
    rejected: list[Rejection] = []
    for release in releases:
        if not target.driver:  # no GPU driver: the CPU wheels (jaxlib / tensorflow's own)
            if target.python in release.pythons:
                return FrameworkSelection(framework, target, release, None, tuple(rejected))
            rejected.append(Rejection(release.version, (f"no wheel for Python {target.python}",)))
            continue
        builds = sorted(release.gpu_builds(), key=lambda b: Version(b.cuda or "0"), reverse=True)
        misses = []
        for build in builds:
            why = _reasons(kb, release, build, target)
            if not why:
                return FrameworkSelection(framework, target, release, build, tuple(rejected))
            misses.append(f"{build.package}: " + "; ".join(why))
        rejected.append(Rejection(release.version, tuple(misses)))
    return FrameworkSelection(framework, target, None, None, tuple(rejected), reason=f"no {TITLES.get(framework, framework)} release in the KB runs on this host")


def render_text(selection: FrameworkSelection) -> str:
    t = selection.target
    title = TITLES.get(selection.framework, selection.framework)
    lines = [f"{title} for Python {t.python}, driver {t.driver or 'none'}" + (f", GPUs {', '.join(f'{g.name} ({g.cc})' for g in t.gpus)}" if t.gpus else "")]
    if selection.release is not None:
        build = selection.build
        runs = f"CUDA {build.cuda} ({build.package})" if build else "the CPU (no NVIDIA driver)"
        lines.append(f"choice: {title} {selection.release.version} on {runs}")
        lines.append(f"  pip install \"{selection.pip_requirement()}\"")
    else:
        lines.append(f"no choice: {selection.reason}")
    for r in selection.rejected:
        lines.append(f"not {r.candidate}: {' | '.join(r.reasons)}")
    return "\n".join(lines) + "\n"
