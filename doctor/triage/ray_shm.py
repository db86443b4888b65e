"""Ray's own measure of /dev/shm, read from a report (shm-too-small, whose regular rule in
fwdoctor.rules.runtime reads the host's /dev/shm and documents it).

Ray (vLLM's tensor-parallel workers, RLlib, Ray Train) measures the free space of /dev/shm
at start (statvfs: f_bsize * f_bavail) and, where it is smaller than the object store asks,
logs "WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only
67108864 bytes available." (python/ray/_private/services.py; older releases "Warning:
Reducing object store memory because /dev/shm has only N bytes available."). The number is
the free bytes, at most the size: below the KB's floor (gpus.yaml runtime.shm_min_mib) it
says what `df -h /dev/shm` would, for NCCL's SHM transport on the same node too (vLLM's
"ncclShmOpen" failures after that warning, vllm-project/vllm#1710). The warning alone fires
at any size under 30% of RAM, so a free /dev/shm above the floor is no finding here.

Runs only where the regular rule could not (no `df /dev/shm` in the report): a size shown
beats Ray's line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, Rule, rule

if TYPE_CHECKING:
    from fwdoctor.kb import KB

KINDS = frozenset({"ray-object-store-shm-small"})


def _available(error: dict[str, Any]) -> int | None:
    value = str(error.get("available") or "")
    return int(value) if value.isdigit() and len(value) <= 15 else None


@rule("shm-too-small", needs=("report.errors",))
def ray_shm_small(facts: Facts, kb: KB) -> Hit | None:
    """Ray's "/dev/shm has only N bytes available" with N below the KB's floor (see shm-too-small)."""
    floor = kb.gpus.shm_min_bytes
    said = [e for e in facts.get("report.errors") or [] if e.get("kind") in KINDS]
    small = [e for e in said if (_available(e) if _available(e) is not None else floor) < floor]
    if not small:
        return None
    free = _available(small[0]) or 0
    return Hit(
        f"Ray found only {free // (1024 * 1024)} MiB free in /dev/shm (report line {small[0]['line']}); "
        f"NCCL's shared-memory transport and DataLoader workers need at least {floor // (1024 * 1024)} MiB "
        "(Docker's and Kubernetes' default /dev/shm is 64 MiB)",
        evidence={"report.errors": small, "floor_bytes": floor},
        fix=FixRef(
            commands=(
                "docker run --shm-size=16g ...   # or: docker run --ipc=host ...",
                "df -h /dev/shm   # where the job runs: its size and what fills it",
            ),
            note="Kubernetes: mount an emptyDir with medium: Memory at /dev/shm.",
        ),
    )


RULES: tuple[Rule, ...] = (ray_shm_small,)
