"""GPUDirect RDMA off for want of a peer-memory module, read from a report
(nccl-gdr-module-missing, whose regular rule in fwdoctor.rules.fabric reads the host and
documents it).

NCCL 2.5.6 to 2.12 (and the nccl-rdma-sharp plugin until mid-2023) wrote why it turned
GPUDirect RDMA off for an HCA: "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no
module)" when neither /sys/kernel/mm/memory_peers/nv_mem/version nor .../nvidia-peermem/version
existed (NVIDIA/nccl@299c554d:src/transport/net_ib.cc; the errors.yaml row nccl-ib-gdr-no-module).
The plugin tested DMA-BUF separately and, where the kernel and driver allow it, also wrote
"NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0'" (Mellanox/nccl-rdma-sharp-plugins
PR 104): GPUDirect RDMA then works without the module, so a log that shows that line is left
alone. NCCL 2.13.4 and later print "GPU Direct RDMA Disabled for HCA 0 'mlx5_0'" with no
reason, which other causes give too (a GPU without GDR, Soft-RoCE, DGX Spark): not read here.
NCCL_NET_GDR_LEVEL does not change this: NCCL checks the NIC's GDR support before the level
(src/graph/paths.cc, ncclTopoCheckGdr: "if (net->net.gdrSupport == 0) return ncclSuccess"), so
a forced level gives no error of its own and the finding stays a warning.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts
from fwdoctor.rules import fabric
from fwdoctor.rules.base import Hit, Rule, rule
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.nccl_debug import nccl_line
from fwdoctor.triage.text import Lines

if TYPE_CHECKING:
    from fwdoctor.kb import KB

KINDS = frozenset({"nccl-ib-gdr-no-module"})
_DMABUF = re.compile(r"GPU Direct RDMA \(DMABUF\) enabled for HCA (?P<index>\d{1,3}) '(?P<hca>[^'\s]{1,64})")


def find(lines: Lines) -> list[Fragment]:
    """report.nccl_gdr_dmabuf: [{"hca", "line"}] of NCCL's "GPU Direct RDMA (DMABUF) enabled
    for HCA n 'name'" lines, each HCA once."""
    found: dict[str, int] = {}
    for i, text in enumerate(lines.norm):
        if "DMABUF" not in text:
            continue
        m = _DMABUF.search(nccl_line(text))
        if m and m["hca"] not in found:
            found[m["hca"]] = i
    if not found:
        return []
    rows = sorted(found.values())
    frag = Fragment("NCCL_DEBUG", rows[0] + 1, rows[-1] + 1)
    frag.add("report.nccl_gdr_dmabuf", [{"hca": hca, "line": i + 1} for hca, i in found.items()])
    return [frag]


def _said(facts: Facts) -> list[dict[str, Any]]:
    return [e for e in facts.get("report.errors") or [] if e.get("kind") in KINDS]


@rule("nccl-gdr-module-missing", needs=("report.errors",), optional=("report.nccl_gdr_dmabuf",))
def gdr_no_module_said(facts: Facts, kb: KB) -> Hit | None:
    """NCCL's "GPU Direct RDMA Disabled for HCA n 'mlx5_n' (no module)", unless the same log
    shows "GPU Direct RDMA (DMABUF) enabled" (see nccl-gdr-module-missing)."""
    said = _said(facts)
    if not said:
        return None
    dmabuf = facts.get("report.nccl_gdr_dmabuf") or []
    if dmabuf:
        return None  # DMA-BUF stands in for the module: GPUDirect RDMA works
    hcas = list(dict.fromkeys(str(e.get("hca")) for e in said if e.get("hca")))
    first = said[0]
    return Hit(f"NCCL found no peer-memory module (nvidia-peermem, nv_peer_mem) and turned GPUDirect RDMA off for "
               f"{', '.join(hcas[:4]) or 'an HCA'}{', ...' if len(hcas) > 4 else ''}: every inter-node transfer is staged through host "
               f"memory (report line {first['line']}: \"{first['text']}\")",
               evidence={"report.errors": said}, fix=fabric.PEERMEM_FIX)


RULES: tuple[Rule, ...] = (gdr_no_module_said,)
