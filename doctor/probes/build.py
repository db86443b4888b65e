"""The probes of the source-build pre-flight (`fwdoctor build torch`), in the order they run.

Not part of PROBES: they run nvcc twice, every g++ on PATH, cmake, ninja and the target
interpreter, which a plain `fwdoctor check` must not pay for; and they only answer a
question once a build was requested (the seed facts `request.build.*`). The cuda probe
comes first (its toolkit discovery serves `--cuda 12.8`), the GPU probes next (`--arch
auto`), then the build's own probes; later ones read earlier facts.
"""

from __future__ import annotations

from fwdoctor.probes import build_arch, build_libs, build_python, build_resources, build_source, build_tools, build_toolkit, cuda, gpus
from fwdoctor.probes.base import Probe

BUILD_PROBES: tuple[Probe, ...] = (
    *cuda.PROBES,
    *gpus.PROBES,
    *build_source.PROBES,
    *build_toolkit.PROBES,
    *build_arch.PROBES,
    # Libraries given by version are the pip wheel for the toolkit's CUDA major: after it.
    *build_libs.PROBES,
    *build_python.PROBES,
    # cmake and ninja are looked up in the target interpreter's bin/ first: after it.
    *build_tools.PROBES,
    *build_resources.PROBES,
)

# The seed facts a build request sets (recipes/torch_source.py makes them from the
# command line; doctor/FACTS.md says what each holds).
REQUEST_KEYS: tuple[str, ...] = (
    "request.build.torch",
    "request.build.cuda",
    "request.build.nccl",
    "request.build.cudnn",
    "request.build.arch",
    "request.build.python",
    "request.build.workdir",
    "request.build.source",
    "request.build.ccache",
    "request.build.cmake_only",
)

# With --docker the build runs inside an image that is not probed (recipes/torch_source.py
# states what it holds); these still describe this host, which the container runs on:
# its GPUs (--arch auto), cores, memory and the disk of --workdir, and the --source tree.
HOST_SIDE_PROBES: tuple[Probe, ...] = (
    *gpus.PROBES,
    *build_source.PROBES,
    *build_arch.PROBES,
    *build_libs.PROBES,
    *build_resources.PROBES,
)
