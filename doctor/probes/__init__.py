"""Every probe, in the order they run (later probes may read earlier facts)."""

from __future__ import annotations

from fwdoctor.probes import compilers, cuda, cudnn, driver, gpus, ldpath, nccl, python, system, torch, torch_deep
from fwdoctor.probes.base import Probe

PROBES: tuple[Probe, ...] = (
    # The interpreter first: `--deep` starts `import torch` in a child (~1.5 s) as soon as
    # it knows which interpreter, and every file-reading probe below overlaps with it.
    *python.PROBES,
    *torch.PROBES,
    *torch_deep.PROBES,
    *system.PROBES,
    *driver.PROBES,
    *gpus.PROBES,
    *cuda.PROBES,
    *compilers.PROBES,
    # They scan the inspected interpreter's site-packages (python.site_packages).
    *ldpath.PROBES,
    *cudnn.PROBES,
    *nccl.PROBES,
)

# Not here: the source-build pre-flight's probes (fwdoctor.probes.build.BUILD_PROBES). They
# run nvcc, every g++ on PATH and the target interpreter, and answer only a build request,
# so `fwdoctor build torch` runs them and a plain check does not pay for them.
