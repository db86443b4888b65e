"""Every probe, in the order they run (later probes may read earlier facts)."""

from __future__ import annotations

from doctor.probes import compilers, cuda, cudnn, driver, gpus, ldpath, nccl, python, system, torch, torch_deep
from doctor.probes.base import Probe

PROBES: tuple[Probe, ...] = (
    *system.PROBES,
    *driver.PROBES,
    *gpus.PROBES,
    *cuda.PROBES,
    *compilers.PROBES,
    *python.PROBES,
    *torch.PROBES,
    # Deep probes start here in the background (they need python.executable) and are
    # merged last, so the file-reading probes below overlap with `import torch`.
    *torch_deep.PROBES,
    # After python/torch: they scan the inspected interpreter's site-packages.
    *ldpath.PROBES,
    *cudnn.PROBES,
    *nccl.PROBES,
)
