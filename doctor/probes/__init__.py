"""Every probe, in the order they run (later probes may read earlier facts)."""

from __future__ import annotations

from fwdoctor.probes import compilers, conda, cuda, cudnn, driver, framework_deep, frameworks, gpus, hardware, ldpath, nccl, platform, python, system, topology, torch, torch_deep
from fwdoctor.probes.base import Probe, Read

PROBES: tuple[Probe, ...] = (
    # The interpreter first: `--deep` starts `import torch` in a child (~1.5 s) as soon as
    # it knows which interpreter, and every file-reading probe below overlaps with it.
    *python.PROBES,
    *torch.PROBES,
    # The conda env's records (conda-meta) after torch's files: it fills torch.cuda from the
    # pytorch record only when torch/version.py could not say; cuda/cudnn/nccl read conda.prefix.
    *conda.PROBES,
    *torch_deep.PROBES,
    # JAX, TensorFlow, PaddlePaddle: dist-info files, then (--deep) one child per framework.
    *frameworks.PROBES,
    *framework_deep.PROBES,
    *system.PROBES,
    # The CPU's AVX and the glibc each framework wheel was built for (its manylinux tag).
    *platform.PROBES,
    *driver.PROBES,
    *gpus.PROBES,
    *cuda.PROBES,
    *compilers.PROBES,
    # They scan the inspected interpreter's site-packages (python.site_packages).
    *ldpath.PROBES,
    *cudnn.PROBES,
    *nccl.PROBES,
    # NVLink, InfiniBand, NVSwitch/fabric manager, GPU health: read gpus.list's NVML answer.
    *topology.PROBES,
    # PCIe links, IOMMU mode, ACS on bridges between GPUs, NVML clock event reasons.
    *hardware.PROBES,
)

# Not here: the source-build pre-flight's probes (fwdoctor.probes.build.BUILD_PROBES). They
# run nvcc, every g++ on PATH and the target interpreter, and answer only a build request,
# so `fwdoctor build torch` runs them and a plain check does not pay for them.

# Every file the probes above may read the bytes of, declared beside each reader: an image
# is inspected keeping only these (fwdoctor.image.keep). compilers, ldpath and torch_deep read
# names and links only, or run programs on a live host. Plain data, read by the image
# package: no probe imports fwdoctor.image (tests/test_import_graph.py).
READS: tuple[Read, ...] = (
    *python.READS,
    *torch.READS,
    *conda.READS,
    *frameworks.READS,
    *system.READS,
    *platform.READS,
    *driver.READS,
    *gpus.READS,
    *cuda.READS,
    *cudnn.READS,
    *nccl.READS,
    *topology.READS,
    *hardware.READS,
)
