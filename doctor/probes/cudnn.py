r"""cuDNN installs and the libcudnn a process would load first.

Shell equivalent:
    grep -H 'define CUDNN_\(MAJOR\|MINOR\|PATCHLEVEL\)' $SITE/nvidia/cudnn/include/cudnn_version.h \
        /usr/include/cudnn_version.h /usr/include/x86_64-linux-gnu/cudnn_version_v*.h /usr/local/cuda*/include/cudnn_version.h
    ls /usr/lib/x86_64-linux-gnu/libcudnn.so.* /usr/local/cuda*/lib64/libcudnn.so.* $SITE/nvidia/cudnn/lib
    ls -d $SITE/nvidia_cudnn_cu*.dist-info; dpkg-query -W 'libcudnn*'
Where each install is searched is in probes/libscan.py; the file and package names in
fwdoctor/libraries.py (CUDNN).
"""

from __future__ import annotations

from typing import Iterable

from fwdoctor.host import Host
from fwdoctor.libraries import CUDNN
from fwdoctor.model import Fact, Facts
from fwdoctor.probes.base import Probe, probe
from fwdoctor.probes.libscan import find_installs, ld_first, reads_for

READS = reads_for(CUDNN)  # kept from an image (fwdoctor.image.keep)


@probe("cudnn", provides=("cudnn.installs", "cudnn.ld_first"))
def cudnn(host: Host, facts: Facts) -> Iterable[Fact]:
    installs = find_installs(host, facts, CUDNN)
    yield Fact("cudnn.installs", installs, source="site-packages, /var/lib/dpkg/status, /usr/include, /usr/lib, /usr/local/cuda*, /usr/local/cudnn*, $CONDA_PREFIX")
    yield Fact("cudnn.ld_first", ld_first(host, CUDNN, installs), source="LD_PRELOAD, LD_LIBRARY_PATH")


PROBES: tuple[Probe, ...] = (cudnn,)
