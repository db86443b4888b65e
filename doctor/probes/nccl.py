r"""NCCL installs and the libnccl a process would load first.

Shell equivalent:
    grep -H 'define NCCL_\(MAJOR\|MINOR\|PATCH\) ' $SITE/nvidia/nccl/include/nccl.h /usr/include/nccl.h
    strings $SITE/nvidia/nccl/lib/libnccl.so.2 | grep 'NCCL version'   # "NCCL version 2.30.7+cuda13.3"
    ls /usr/lib/x86_64-linux-gnu/libnccl.so.*; ls -d $SITE/nvidia_nccl_cu*.dist-info; dpkg-query -W libnccl2
Where each install is searched is in probes/libscan.py; the file and package names in
fwdoctor/libraries.py (NCCL).
"""

from __future__ import annotations

from typing import Iterable

from fwdoctor.host import Host
from fwdoctor.libraries import NCCL
from fwdoctor.model import Fact, Facts
from fwdoctor.probes.base import Probe, probe
from fwdoctor.probes.libscan import find_installs, ld_first, reads_for

READS = reads_for(NCCL)  # kept from an image (fwdoctor.image.keep)


@probe("nccl", provides=("nccl.installs", "nccl.ld_first"))
def nccl(host: Host, facts: Facts) -> Iterable[Fact]:
    installs = find_installs(host, facts, NCCL)
    yield Fact("nccl.installs", installs, source="site-packages, /var/lib/dpkg/status, /usr/include, /usr/lib, /usr/local/cuda*, /usr/local/nccl*, $CONDA_PREFIX")
    yield Fact("nccl.ld_first", ld_first(host, NCCL, installs), source="LD_PRELOAD, LD_LIBRARY_PATH")


PROBES: tuple[Probe, ...] = (nccl,)
