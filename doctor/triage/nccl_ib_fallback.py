"""An NCCL_DEBUG=INFO log that shows NCCL falling back to TCP sockets on an InfiniBand
fabric -> report.nccl_ib_fallback:

    NCCL INFO Failed to open libibverbs.so[.1]
    NCCL INFO NET/Socket : Using [0]ib0.<ip>                 (sgl-project/sglang#1427)

    NCCL INFO Bootstrap : Using ibp12s0:10.149.0.32<0>
    NCCL INFO NET/IB : No device found.                      (NVIDIA/nccl#952)

Two things must both be in NCCL's own lines:
  - an IPoIB interface named where NCCL lists the IP interfaces it uses ("Bootstrap : Using",
    "NET/Socket : Using", "OOB", before 2.4 "NET : Using interface"): the kernel names
    IPoIB netdevs ib0, ib1, ibp12s0, ibs65 (ibp<bus>s<slot>), so an InfiniBand HCA is up on
    the node;
  - NCCL saying it could not use that HCA: "Failed to open libibverbs.so[.1]" (no
    rdma-core in the image; NCCL >= 2.27 writes "Count not open libibverbs.so",
    src/misc/ibvsymbols.cc), "NET/IB : No device found." (src/transport/net_ib), "NET/IB :
    Unable to open device" (no /dev/infiniband in the container), "Failed to initialize NET
    plugin IB" (src/plugin/net.cc), or its choice itself: "Using network Socket",
    "Assigned NET plugin Socket to comm".
A log in which NCCL also lists an IB device it uses ("NET/IB : Using [0]mlx5_0:1/IB",
"via NET/IB") is left alone: NCCL before 2.5 initialised its socket transport beside IB and
printed "NET/Socket : Using [0]ib0" on healthy nodes (Mellanox/nv_peer_memory#56). So is a
log that says NCCL was told to use sockets (NCCL_IB_DISABLE=1, NCCL_NET=Socket): that is
nccl-transport-disabled's. "Failed to open libibverbs" alone says nothing: NCCL prints it
on every node without rdma-core, Ethernet-only ones included (NVIDIA/nccl-tests#14).
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.nccl_debug import nccl_line
from fwdoctor.triage.text import Lines

# An IPoIB netdev where NCCL lists the interface it uses: "Bootstrap : Using [0]ib0:...",
# "NET/Socket : Using [0]eth0:... [1]ibp24s0:...", "OOB ibs65:...", "NET : Using interface ib0:...".
_LISTS = re.compile(r"(?:Bootstrap ?: ?Using|NET/Socket ?: ?Using|; OOB|NET ?: ?Using interface)\b")
_IPOIB = re.compile(r"(?:Using|OOB|interface|\])\s{0,2}(?:\[\d{1,2}\])?(?P<iface>ib(?:\d{1,3}|[ps]\d{1,4}[a-z0-9]{0,12})(?:\.[0-9a-fA-F]{1,6})?)(?=[:<.\s]|$)")
_COULD_NOT = re.compile(r"Failed to open libibverbs\.so|Coul[dt] not open libibverbs\.so|NET/IB ?: ?No device found"
                        r"|NET/IB ?: ?Unable to open device|Failed to initialize NET plugin IB\b|Using network Socket\b|Assigned NET plugin Socket\b")
_IB_USED = re.compile(r"NET/IB ?: ?Using \[\d{1,2}\]\w|via NET/IB|Using network IB\b|Assigned NET plugin IB\b")
_TOLD = re.compile(r"NCCL_IB_DISABLE(?:\s{0,2}=\s{0,2}|\s{1,2}set by environment to\s{1,2})[\"']?[1-9]|NCCL_NET(?:\s{0,2}=\s{0,2}|\s{1,2}set by environment to\s{1,2})[\"']?Socket\b")


def find(lines: Lines) -> list[Fragment]:
    ipoib = said = None
    for i, text in enumerate(lines.norm):
        if "NCCL" not in text and "NET" not in text:
            continue
        own = nccl_line(text)
        if _IB_USED.search(own) or _TOLD.search(own):
            return []
        if ipoib is None and _LISTS.search(own):
            found = _IPOIB.search(own)
            if found:
                ipoib = (i, found["iface"])
        if said is None:
            found = _COULD_NOT.search(own)
            if found:
                said = (i, found.group(0))
    if ipoib is None or said is None:
        return []
    frag = Fragment("NCCL_DEBUG", min(ipoib[0], said[0]) + 1, max(ipoib[0], said[0]) + 1)
    frag.add("report.nccl_ib_fallback", {"iface": ipoib[1], "iface_line": ipoib[0] + 1, "said": said[1], "said_line": said[0] + 1})
    return [frag]
