"""The architectures a source build targets (--arch), as TORCH_CUDA_ARCH_LIST.

`--arch "8.0;9.0+PTX"` (or nvcc's names, "sm_80,compute_90") is normalized; `--arch auto`
takes the compute capabilities this host's GPUs report (gpus.list, from NVML or
nvidia-smi: the gpus probe runs first). Shell equivalent of auto:
    nvidia-smi --query-gpu=compute_cap --format=csv,noheader
"""

from __future__ import annotations

import re
from typing import Iterable

from packaging.version import Version

from fwdoctor.arch import Target, parse_targets
from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, probe

NAME = "build-arch"
_CC = re.compile(r"^\d+\.\d+$")


def normalize_arch_list(text: str) -> tuple[str, list[Target]]:
    """"8.0;9.0+PTX" or "sm_80,compute_90" -> ("8.0;9.0+PTX", targets). Raises ValueError
    naming the bad entry."""
    targets = parse_targets(text)
    if not targets:
        raise ValueError("empty architecture list (expected e.g. '8.0;9.0+PTX')")
    order: list[tuple[int, int, str]] = []
    ptx: set[tuple[int, int, str]] = set()
    for t in targets:
        key = (t.major, t.minor, t.suffix)
        if key not in order:
            order.append(key)
        if t.kind == "ptx":
            ptx.add(key)
    order.sort()
    entries = [f"{ma}.{mi}{sfx}" + ("+PTX" if (ma, mi, sfx) in ptx else "") for ma, mi, sfx in order]
    return ";".join(entries), targets


def arch_list_from_ccs(ccs: Iterable[str]) -> str:
    """Host GPUs' compute capabilities ("9.0", "8.6", "9.0") -> "8.6;9.0"."""
    unique = sorted({Version(c) for c in ccs})
    return ";".join(f"{v.major}.{v.minor}" for v in unique)


def from_gpus(facts: Facts) -> tuple[str, str]:
    """(arch list, where from) for --arch auto. Raises ValueError saying why there is none."""
    gpus = facts.get("gpus.list")
    ccs = [str(g["cc"]) for g in gpus or [] if isinstance(g, dict) and _CC.match(str(g.get("cc") or ""))]
    if ccs:
        return arch_list_from_ccs(ccs), f"host GPUs ({', '.join(ccs)})"
    if not facts.known("gpus.list"):
        why = facts.why("gpus.list")
    elif not gpus:
        why = f"{facts.source('gpus.list') or 'the GPU probe'} lists none"
    else:
        why = "no compute capability reported for " + ", ".join(str(g.get("name")) for g in gpus)
    raise ValueError(f"no GPU found on this host ({why}); name the targets, e.g. --arch '8.0;9.0+PTX'")


@probe(NAME, provides=("build.arch",))
def build_arch(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    spec = facts.get("request.build.arch")
    if spec is None:
        yield Fact.unknown("build.arch", "no --arch requested")
        return
    try:
        if str(spec).strip().lower() == "auto":
            arch_list, where = from_gpus(facts)
        else:
            arch_list, where = normalize_arch_list(str(spec))[0], "--arch"
    except ValueError as exc:
        yield Fact.unknown("build.arch", f"--arch {spec}: {exc}")
        return
    yield Fact("build.arch", {"list": arch_list, "from": where}, source=where)


PROBES: tuple[Probe, ...] = (build_arch,)
