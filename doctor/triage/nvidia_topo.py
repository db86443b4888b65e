"""`nvidia-smi topo -m`, as pasted into NCCL reports -> topology.nvlink (which GPUs an NVLink
joins, the fact `fwdoctor check` reads from NVML, or from the same matrix on a live host):

            GPU0    GPU1    GPU2    CPU Affinity    NUMA Affinity   GPU NUMA ID
    GPU0     X      NV12    SYS     0-15,32-47      0               N/A
    GPU1    NV12     X      SYS     0-15,32-47      0               N/A

    (older drivers)  GPU0  GPU1  mlx5_0  CPU Affinity       GPU0   X   NV1  PHB  0-19,40-59

A header row of device names (GPUn, NICn, mlx5_n, ...) up to "CPU Affinity", then one row per
device whose cells are the matrix's legend: X (self), NV# ("a bonded set of # NVLinks"), SYS,
NODE, PHB, PXB, PIX (PCIe paths; SOC before SYS). A row with any other cell is not this matrix
(`nvidia-smi topo -p2p r` prints OK/CNS/GNS/NS in the same shape: what CUDA allows, not the
links). Per GPU: its NVLink peers and the widest bond, as fwdoctor.probes.topology's
nvlink_from_matrix gives it on a live host (a pasted matrix shows links, not their state, so
`active` is the bond's width). A report with several matrices (one per node, or beside
`nvlink -s`) gives each GPU index once, the first matrix's row first. The header may have lost
its indent in the paste.

`nvidia-smi nvlink -s` (--status), the other listing NCCL's maintainers ask for
(NVIDIA/nccl-tests#228, NVIDIA/nccl#1608), gives each GPU's links and their speeds:

    GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-ff8a40d4-...)
    	 Link 0: 25 GB/s
    	 Link 4: <inactive>

Per GPU, the links with a speed are its active ones (peers unknown: the listing names none).
Both counts are those links: a board wires fewer links than the GPU has (an H100 NVL pair's
bridge uses 12 of 18, the other six print "<inactive>" on a healthy card, NVIDIA/nccl#1608),
so a pasted "<inactive>" is not read as a link down.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_DEVICE = re.compile(r"^(?:GPU|NIC|mlx\d_|ib|bnxt_re|irdma|efa_|rdmap)\w{0,20}$")
_CELL = re.compile(r"^(?:X|NV\d{1,3}|SYS|SOC|NODE|PHB|PXB|PIX|PXN)$")
_GPU = re.compile(r"^GPU(\d{1,3})$")
_NV = re.compile(r"^NV(\d{1,3})$")
_MAX_DEVICES = 64
_NVLINK_GPU = re.compile(r"^GPU (?P<index>\d{1,3}): [^\n]{1,120}\(UUID: ")
_NVLINK_LINK = re.compile(r"^\s*Link (?P<link>\d{1,2}): (?:(?P<speed>\d{1,4}(?:\.\d{1,3})?) GB/s|<inactive>)\s*$")


def find(lines: Lines) -> list[Fragment]:
    out = []
    i = 0
    norm = lines.norm
    while i < len(norm):
        header = _header(norm[i])
        if header is None:
            i += 1
            continue
        rows, end = _rows(norm, i + 1, header)
        gpus = _nvlink(header, rows)
        if gpus:
            frag = Fragment("nvidia-smi topo -m", i + 1, end)
            frag.add("topology.nvlink", gpus)
            out.append(frag)
        i = max(end, i + 1)
    out.extend(_nvlink_status(norm))
    if len(out) > 1:  # one fact: each GPU once, a matrix's row (it names the peers) before nvlink -s's
        gpus: dict[int, dict] = {}
        for frag in out:
            for fact in frag.facts:
                for gpu in fact.value:
                    gpus.setdefault(gpu["index"], gpu)
        merged = Fragment(out[0].kind, min(f.start for f in out), max(f.end for f in out))
        merged.add("topology.nvlink", list(gpus.values()))
        return [merged]
    return out


def _header(text: str) -> list[str] | None:
    """The device names of a header row: "GPU0 GPU1 ... CPU Affinity", GPU0 first."""
    if "GPU0" not in text or "Affinity" not in text:
        return None
    tokens = text.split()
    if not tokens or tokens[0] != "GPU0":
        return None
    devices = []
    for token in tokens:
        if token == "CPU":
            break
        if not _DEVICE.match(token) or len(devices) >= _MAX_DEVICES:
            return None
        devices.append(token)
    return devices if len(devices) >= 2 else None


def _rows(norm: tuple[str, ...], start: int, devices: list[str]) -> tuple[dict[str, list[str]], int]:
    """The matrix rows after a header, up to the first line that is not one; and the last row's line number."""
    rows: dict[str, list[str]] = {}
    end = start
    for j in range(start, min(len(norm), start + _MAX_DEVICES + 1)):
        tokens = norm[j].split()
        if len(tokens) < 1 + len(devices) or tokens[0] not in devices:
            break
        cells = tokens[1:1 + len(devices)]
        if not all(_CELL.match(c) for c in cells):
            break
        rows[tokens[0]] = cells
        end = j + 1
    return rows, end


def _nvlink(devices: list[str], rows: dict[str, list[str]]) -> list[dict]:
    out = []
    for name, cells in rows.items():
        gpu = _GPU.match(name)
        if not gpu:
            continue
        peers, widest = [], 0
        for other, cell in zip(devices, cells):
            nv, peer = _NV.match(cell), _GPU.match(other)
            if nv and peer and other != name:
                peers.append(int(peer.group(1)))
                widest = max(widest, int(nv.group(1)))
        out.append({"index": int(gpu.group(1)), "links": widest, "active": widest, "peers": sorted(peers), "source": "nvidia-smi topo -m"})
    return out


def _nvlink_status(norm: tuple[str, ...]) -> list[Fragment]:
    """topology.nvlink from `nvidia-smi nvlink -s`: per GPU, its links that show a speed."""
    gpus: dict[int, dict] = {}
    current: dict | None = None
    first = last = 0
    for i, text in enumerate(norm):
        head = _NVLINK_GPU.match(text) if text.startswith("GPU ") else None
        if head:
            current = gpus.setdefault(int(head["index"]), {"index": int(head["index"]), "links": 0, "active": 0, "peers": None, "source": "nvidia-smi nvlink -s"})
            continue
        link = _NVLINK_LINK.match(text) if current is not None and "Link" in text else None
        if link is None:
            if text.strip():
                current = None
            continue
        if link["speed"]:
            current["links"] += 1
            current["active"] += 1
        first, last = first or i + 1, i + 1
    listed = [g for g in gpus.values() if first]
    if not listed:
        return []
    frag = Fragment("nvidia-smi nvlink -s", first, last)
    frag.add("topology.nvlink", listed)
    return [frag]
