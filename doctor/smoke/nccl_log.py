"""What NCCL chose, read from its own `NCCL_DEBUG=INFO` output (pure; no NCCL needed).

NCCL prints each connection it sets up, the version it is, the network devices it
found, the environment it was told and the rings/trees it built, one line each:

    host:pid:tid [cudaDev] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read
    host:pid:tid [cudaDev] NCCL INFO Channel 01/0 : 3[1] -> 1[1] [send] via NET/IB/2/GDRDMA
    host:pid:tid [cudaDev] NCCL INFO NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]; OOB enp220s0np0:...
    host:pid:tid [cudaDev] NCCL INFO NET/Socket : Using [0]eno1:10.201.24.89<0>
    host:pid:tid [cudaDev] NCCL INFO NCCL_IB_DISABLE set by environment to 1.
    host:pid:tid [cudaDev] NCCL INFO Channel 00/02 :    0   1   2   3      (rank 0: a ring's order)
    host:pid:tid [cudaDev] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1
    NCCL version 2.19.3+cuda12.3         (older releases: bare; 2.2x: "NCCL INFO NCCL version ...")

Formats are those of the recorded logs in tests/data/nccl-logs/ (public NCCL and
nccl-tests issues, 2.4 to 2.25, see its README); older releases wrote "Ring 00 : 30 -> 28
[send] via NET/Socket/0" without the device in brackets, and both forms are read.
`summarize` folds the lines of every rank into one report: the version, the network,
each (from, to, transport) pair with its channels, counts per transport, rings, trees.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

_PREFIX = re.compile(r"^(?:\[\d+\]\s+)?(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] NCCL (?P<level>INFO|WARN|ABORT|TRACE) (?P<msg>.*)$")
_VERSION = re.compile(r"NCCL version (?P<version>\d+\.\d+\.\d+)(?:\+cuda(?P<cuda>\d+\.\d+))?")
_CONN = re.compile(
    r"^(?:Channel|Ring) (?P<channel>\d+)(?:/\d+)? : (?P<src>\d+)(?:\[(?P<src_dev>[0-9a-fA-F]+)\])? -> (?P<dst>\d+)(?:\[(?P<dst_dev>[0-9a-fA-F]+)\])?"
    r"(?: \[(?P<dir>send|receive)\])? via (?P<via>\S.*?)\s*$"
)
_RING_ORDER = re.compile(r"^Channel (?P<channel>\d+)/(?P<total>\d+) :(?P<ranks>(?:\s+\d+)+)\s*$")
_RING_NEIGHBOURS = re.compile(r"^Ring (?P<channel>\d+) : (?P<prev>-?\d+) -> (?P<me>\d+) -> (?P<next>-?\d+)\s*$")
_TREES = re.compile(r"^Trees((?: \[\d+\] \S+)+)\s*$")
_TREE_ITEM = re.compile(r"\[(\d+)\] (\S+)")
_NET_IB = re.compile(r"^NET/IB ?: Using (?P<list>.*?)(?:; OOB (?P<oob>\S+))?\s*$")
_NET_SOCKET = re.compile(r"^NET/Socket ?: Using (?P<list>.*?)\s*$")
# (?<!...): a name starts where its run of name characters does; from every character of a
# long run the scan re-ran to its end (n^2). A leftmost match starts there anyway.
_IB_DEVICE = re.compile(r"(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]+):(?P<port>\d+)/(?P<link>IB|RoCE)")
_SOCKET_IFACE = re.compile(r"\[(?P<index>\d+)\](?P<iface>[^\s:\[]+):(?P<addr>\S+?)<\d+>")
_ENV = re.compile(r"^(?P<name>NCCL_[A-Z0-9_]+) set by environment to (?P<value>.*?)\.?\s*$")
_NETWORK = re.compile(r"^Using network (?P<net>\S+)\s*$")
_COMM = re.compile(r"\bcomm 0x[0-9a-f]+ rank (?P<rank>\d+) nRanks (?P<nranks>\d+) nNodes (?P<nnodes>\d+)")
_NO_IB = re.compile(r"^NET/IB ?: No device found")


def socket_interfaces(listing: str) -> list[dict[str, Any]]:
    """The interfaces of a "NET/Socket : Using" list, "[0]eno1:10.201.24.89<0> [1]br-05ab:172.19.0.1<0>",
    as [{"index", "iface", "address"}] (also what `triage` reads from a pasted log)."""
    return [{"index": int(i["index"]), "iface": i["iface"], "address": i["addr"]} for i in _SOCKET_IFACE.finditer(listing)]


def classify(via: str) -> dict[str, Any]:
    """A connection's transport text ("P2P/IPC/read", "NET/IB/2/GDRDMA", "SHM/direct/direct")
    as {"transport": "P2P/IPC" | "P2P/CUMEM" | "P2P/direct" | "SHM" | "NET/IB" | "NET/Socket" |
    "NET/<plugin>" | "COLLNET" | "NVLS" | <text>, "net_device": int | None, "gdrdma": bool,
    "read": bool}."""
    parts = via.split("/")
    head = parts[0]
    out: dict[str, Any] = {"transport": via, "net_device": None, "gdrdma": False, "read": parts[-1] == "read"}
    if head == "P2P" and len(parts) > 1:
        kind = parts[1]
        # "direct pointer": both GPUs in one process (NCCL's own threads, not torchrun ranks).
        out["transport"] = "P2P/direct" if kind.startswith("direct") else f"P2P/{kind}"
    elif head == "SHM" or via.startswith("direct shared memory"):  # 2.5 to 2.12: "via direct shared memory" (src/transport/shm.cc)
        out["transport"] = "SHM"
    elif head == "NET" and len(parts) > 1:
        out["transport"] = f"NET/{parts[1]}"
        if len(parts) > 2 and parts[2].isdigit():
            out["net_device"] = int(parts[2])
        out["gdrdma"] = "GDRDMA" in parts[3:]
    elif head.upper().startswith("COLLNET"):
        out["transport"] = "COLLNET"
    elif head.upper().startswith("NVLS"):
        out["transport"] = "NVLS"
    return out


def parse(text: str) -> dict[str, Any]:
    """One rank's (or several ranks' interleaved) output, line by line, into raw records."""
    rec: dict[str, Any] = {"version": None, "cuda": None, "connections": [], "ring_orders": {}, "ring_neighbours": [],
                           "trees": [], "ib_devices": [], "ib_none": False, "socket_ifaces": [], "oob": None,
                           "network": None, "env": {}, "comms": [], "warnings": [], "hosts": set(), "lines": 0}
    for raw in (text or "").splitlines():
        line = raw.rstrip()
        found = _VERSION.search(line)
        if found and "NCCL version" in line and (rec["version"] is None):
            rec["version"], rec["cuda"] = found["version"], found["cuda"]
        m = _PREFIX.match(line.strip())
        if not m:
            continue
        rec["lines"] += 1
        rec["hosts"].add(m["host"])
        msg = m["msg"].strip()
        if m["level"] == "WARN":
            rec["warnings"].append(f"{m['host']}: {msg}")
            continue
        _parse_message(msg, m, rec)
    rec["hosts"] = sorted(rec["hosts"])
    return rec


def _parse_message(msg: str, m: re.Match[str], rec: dict[str, Any]) -> None:
    conn = _CONN.match(msg)
    if conn:
        rec["connections"].append({
            "channel": int(conn["channel"]), "from": int(conn["src"]), "to": int(conn["dst"]),
            "from_dev": conn["src_dev"], "to_dev": conn["dst_dev"], "direction": conn["dir"], "via": conn["via"],
            "host": m["host"], **classify(conn["via"]),
        })
        return
    order = _RING_ORDER.match(msg)
    if order:
        rec["ring_orders"][int(order["channel"])] = [int(r) for r in order["ranks"].split()]
        return
    neighbours = _RING_NEIGHBOURS.match(msg)
    if neighbours:
        rec["ring_neighbours"].append({"channel": int(neighbours["channel"]), "prev": int(neighbours["prev"]),
                                       "rank": int(neighbours["me"]), "next": int(neighbours["next"])})
        return
    trees = _TREES.match(msg)
    if trees:
        rec["trees"].append({"host": m["host"], "dev": int(m["dev"]),
                             "channels": {int(c): spec for c, spec in _TREE_ITEM.findall(trees.group(1))}})
        return
    if _NO_IB.match(msg):
        rec["ib_none"] = True
        return
    ib = _NET_IB.match(msg)
    if ib:
        devices = [{"name": d["name"], "port": int(d["port"]), "link": d["link"]} for d in _IB_DEVICE.finditer(ib["list"])]
        for device in devices:
            if device not in rec["ib_devices"]:
                rec["ib_devices"].append(device)
        rec["oob"] = rec["oob"] or ib["oob"]
        return
    sock = _NET_SOCKET.match(msg)
    if sock:
        for iface in socket_interfaces(sock["list"]):
            if iface not in rec["socket_ifaces"]:
                rec["socket_ifaces"].append(iface)
        return
    env = _ENV.match(msg)
    if env:
        rec["env"][env["name"]] = env["value"]
        return
    net = _NETWORK.match(msg)
    if net:
        rec["network"] = net["net"]
        return
    comm = _COMM.search(msg)
    if comm:
        rec["comms"].append({"rank": int(comm["rank"]), "nranks": int(comm["nranks"]), "nnodes": int(comm["nnodes"]), "host": m["host"]})


def summarize(texts: Iterable[str]) -> dict[str, Any]:
    """Every rank's output folded into one report (the `nccl` of an all-reduce result).

    {"version": "2.19.3", "cuda": "12.3", "network": "IB" | "Socket" | plugin | None,
     "ib_devices": [{"name", "port", "link": "IB"|"RoCE"}], "ib_none": bool,
     "socket_ifaces": [{"index", "iface", "address"}],
     "peers": [{"from", "to", "from_dev", "to_dev", "transport", "via": [texts], "net_device",
                "gdrdma", "directions": [...], "channels": [...], "hosts": [...]}],
     "transports": {"P2P/IPC": connections, ...}, "rings": {channel: [ranks]},
     "trees": [{"host", "dev", "channels": {channel: "up/../..->rank->down"}}],
     "env": {NCCL_*: value}, "nranks", "nnodes", "hosts", "warnings", "lines"}"""
    recs = [parse(t) for t in texts]
    out: dict[str, Any] = {"version": None, "cuda": None, "network": None, "ib_devices": [], "ib_none": False, "socket_ifaces": [],
                           "peers": [], "transports": {}, "rings": {}, "trees": [], "env": {}, "nranks": None, "nnodes": None,
                           "hosts": [], "warnings": [], "lines": 0}
    versions = sorted({r["version"] for r in recs if r["version"]})
    out["version"] = versions[0] if len(versions) == 1 else (versions or [None])[0]
    if len(versions) > 1:
        out["versions"] = versions  # ranks loaded different NCCLs: say so, never pick silently
    out["cuda"] = next((r["cuda"] for r in recs if r["cuda"]), None)
    peers: dict[tuple, dict[str, Any]] = {}
    for rec in recs:
        out["network"] = out["network"] or rec["network"]
        out["ib_none"] = out["ib_none"] or rec["ib_none"]
        out["lines"] += rec["lines"]
        out["warnings"] += rec["warnings"]
        out["env"].update(rec["env"])
        out["hosts"] = sorted(set(out["hosts"]) | set(rec["hosts"]))
        out["trees"] += rec["trees"]
        for key in ("ib_devices", "socket_ifaces"):
            out[key] += [d for d in rec[key] if d not in out[key]]
        for channel, ranks in rec["ring_orders"].items():
            out["rings"].setdefault(str(channel), ranks)
        for comm in rec["comms"]:
            out["nranks"] = max(out["nranks"] or 0, comm["nranks"])
            out["nnodes"] = max(out["nnodes"] or 0, comm["nnodes"])
        for c in rec["connections"]:
            key = (c["from"], c["to"], c["transport"], c["net_device"])
            peer = peers.setdefault(key, {"from": c["from"], "to": c["to"], "from_dev": c["from_dev"], "to_dev": c["to_dev"],
                                          "transport": c["transport"], "via": [], "net_device": c["net_device"], "gdrdma": c["gdrdma"],
                                          "directions": [], "channels": [], "hosts": []})
            for field, value in (("via", c["via"]), ("directions", c["direction"]), ("channels", c["channel"]), ("hosts", c["host"])):
                if value is not None and value not in peer[field]:
                    peer[field].append(value)
            peer["gdrdma"] = peer["gdrdma"] or c["gdrdma"]
    for peer in peers.values():
        peer["channels"].sort()
        out["transports"][peer["transport"]] = out["transports"].get(peer["transport"], 0) + len(peer["channels"])
    out["peers"] = sorted(peers.values(), key=lambda p: (p["from"], p["to"], p["transport"]))
    if not out["rings"]:  # older releases print only each rank's neighbours: keep those
        for rec in recs:
            for n in rec["ring_neighbours"]:
                out["rings"].setdefault(str(n["channel"]), [])
                triple = [n["prev"], n["rank"], n["next"]]
                if triple not in out["rings"][str(n["channel"])]:
                    out["rings"][str(n["channel"])].append(triple)
    return out


def describe(summary: dict[str, Any]) -> str:
    """One line: "NCCL 2.19.3, network IB (mlx5_10:1/RoCE, mlx5_11:1/RoCE); NET/IB 12 (GDRDMA), P2P/CUMEM 4"."""
    if not summary or not summary.get("lines"):
        return "no NCCL_DEBUG output captured"
    parts = [f"NCCL {summary.get('version') or '?'}"]
    if summary.get("network"):
        devices = [f"{d['name']}:{d['port']}/{d['link']}" for d in summary.get("ib_devices") or []]
        if summary["network"] == "Socket":
            devices = [s["iface"] for s in summary.get("socket_ifaces") or []]
        parts.append(f"network {summary['network']}" + (f" ({', '.join(devices)})" if devices else ""))
    counts = []
    for transport, count in sorted((summary.get("transports") or {}).items()):
        gdr = any(p["gdrdma"] for p in summary.get("peers", []) if p["transport"] == transport)
        counts.append(f"{transport} x{count}{' (GDRDMA)' if gdr else ''}")
    text = ", ".join(parts)
    return text + ("; " + ", ".join(counts) if counts else "; no connection lines")
