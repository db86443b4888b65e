"""The RDMA devices a report lists, and their ports' states -> fabric.ib_devices (what
`fwdoctor check` reads from /sys/class/infiniband), from the three tools people paste:

    hca_id:	mlx5_0                                   ibv_devinfo (rdma-core,
    	...                                              libibverbs/examples/devinfo.c)
    		port:	1
    			state:			PORT_ACTIVE (4)
    			link_layer:		InfiniBand

    CA 'mlx5_0'                                          ibstat (rdma-core,
    	Port 1:                                          infiniband-diags/ibstat.c)
    		State: Active
    		Link layer: Ethernet

    Infiniband device 'mlx5_bond_0' port 1 status:       ibstatus (rdma-core,
    	state:		 4: ACTIVE                           infiniband-diags/scripts/ibstatus:
    	link_layer:	 Ethernet                            the sysfs files as they are)

A port's state is kept in sysfs's words (ACTIVE, DOWN, INIT, ARMED), as the live probe keeps
it; a port line belongs to the last device header above it, until a line at column 0 that is
not a "key: value" field (a prompt, prose) ends the listing. A
report where these tools ran on the host and NCCL ran in a container (NVIDIA/nccl#451,
#941) shows ports NCCL could not use.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_NAME = r"(?P<name>[A-Za-z0-9_.-]{1,64})"
_DEVICE = (
    re.compile(rf"^\s*hca_id:\s+{_NAME}\s*$"),                          # ibv_devinfo
    re.compile(rf"^\s*CA '{_NAME}'\s*$"),                                 # ibstat
    re.compile(rf"^\s*Infiniband device '{_NAME}' port (?P<port>\d{{1,3}}) status:\s*$"),  # ibstatus
)
_PORT = re.compile(r"^\s*(?:port:\s+(?P<a>\d{1,3})|Port (?P<b>\d{1,3}):)\s*$")
_STATE = re.compile(r"^\s*(?:state:\s+PORT_(?P<verbs>[A-Z_]{2,12}) \(\d\)|State: (?P<diags>Down|Initializing|Armed|Active)|state:\s+\d: (?P<sysfs>[A-Z_]{2,12}))\s*$")
_LINK = re.compile(r"^\s*(?:link_layer|Link layer):\s+(?P<link>InfiniBand|Ethernet|IB|Unspecified)\s*$")
_RATE = re.compile(r"^\s*(?:rate|Rate):\s+(?P<rate>\d{1,4}(?:\.\d{1,2})?(?: Gb/sec)?[^\n]{0,30})$")
_DIAGS_STATE = {"Down": "DOWN", "Initializing": "INIT", "Armed": "ARMED", "Active": "ACTIVE"}
_MAX_LISTING = 600  # lines from a device header to its ports: `ibv_devinfo -v` prints ~150 of capabilities first
_FIELD = re.compile(r"^[A-Za-z_ ]{1,40}:\s")  # a listing's "key: value" line, even where the paste lost its indent


def find(lines: Lines) -> list[Fragment]:
    devices: dict[str, dict] = {}
    first = last = 0
    device: dict | None = None
    port: dict | None = None
    since = 0
    for i, text in enumerate(lines.norm):
        head = _device(text)
        if head:
            name, number = head
            device = devices.setdefault(name, {"name": name, "ports": []})
            port = _port(device, number) if number is not None else None
            since = i
            first = first or i + 1
            continue
        ended = text[:1].strip() and not _FIELD.match(text)  # a prompt or prose at column 0: the listing is over
        if device is None or i - since > _MAX_LISTING or ended:
            device = port = None
            continue
        found = _PORT.match(text)
        if found:
            port = _port(device, int(found["a"] or found["b"]))
            continue
        if port is None:
            continue
        state = _STATE.match(text)
        if state:
            port["state"] = state["verbs"] or _DIAGS_STATE.get(state["diags"] or "") or state["sysfs"]
            last = i + 1
            continue
        link = _LINK.match(text)
        if link:
            port["link_layer"] = "InfiniBand" if link["link"] == "IB" else link["link"]
            last = i + 1
            continue
        rate = _RATE.match(text)
        if rate and port.get("rate") is None:
            port["rate"] = rate["rate"].strip()
            number = re.match(r"\d+(?:\.\d+)?", port["rate"])
            port["rate_gbps"] = float(number.group(0)) if number else None
    listed = [d for d in devices.values() if any(p.get("state") for p in d["ports"])]
    if not listed:
        return []
    frag = Fragment("ibv_devinfo", first, max(last, first))
    frag.add("fabric.ib_devices", listed)
    return [frag]


def _device(text: str) -> tuple[str, int | None] | None:
    if "hca_id" not in text and "CA '" not in text and "Infiniband device" not in text:
        return None
    for pattern in _DEVICE:
        found = pattern.match(text)
        if found:
            number = found.groupdict().get("port")
            return found["name"], int(number) if number else None
    return None


def _port(device: dict, number: int) -> dict:
    for port in device["ports"]:
        if port["port"] == number:
            return port
    port = {"port": number, "state": None, "phys_state": None, "rate": None, "rate_gbps": None, "link_layer": None}
    device["ports"].append(port)
    return port
