"""NCCL could not open a TCP connection to another rank (nccl-socket-connect-failed), read
from a report (issue 26, the nccl-fabric group).

NCCL's bootstrap and its socket transport connect() to the address each rank advertised,
"ip<port>" in NCCL's words (ncclSocketToString). Where that fails for good NCCL warns, in each
release's own words (doctor/kb/errors.yaml rows `KINDS`):

    include/socket.h:185 WARN Call to connect failed : Connection refused              (2.0-2.3)
    include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed : Connection refused  (2.4-2.9; "Net : Connect to" 2.10-2.14)
    misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort  (2.18-2.26)
    misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No route to host) errno 115(...)  (2.21-2.23)
    misc/socket.cc:578 NCCL WARN socketPollConnect: connect to 10.82.101.249<54709> returned Connection refused, exceeded error retry count after 35 attempts  (2.27+)

and torch relays it as "unhandled system error" / ncclSystemError / ncclRemoteError. NCCL's
INFO lines "Call to connect returned Connection refused, retrying" and "connect returned ...,
retrying (1/34)" are retries, not failures: no row reads them, and a run that retries and then
connects says nothing here. Nor does a lone "Connection reset by peer" / "Connection closed by
remote peer": a peer that was connected and died.

The reader here (`find`) takes the interface NCCL bootstrapped on from its NCCL_DEBUG=INFO line
"Bootstrap : Using eth0:172.17.0.2<0>" (src/bootstrap.cc; "Bootstrap: Using" from 2.28; a list
"[0]eno1:172.18.40.41<0> [1]veth25f2e72:..." before 2.8; "NET : Using interface eth0:172.17.0.4<0>"
before 2.4) -> nccl.bootstrap_ifaces, so that the
finding can say which address this rank told the others to connect back to.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules import fabric
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule, sh
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

if TYPE_CHECKING:
    from fwdoctor.kb import KB

KINDS = frozenset({"nccl-socket-connect-failed", "nccl-socket-connect-returned", "nccl-call-to-connect-failed"})

_BOOTSTRAP = re.compile(r"(?:\bBootstrap ?: Using|\bNET : Using interface)(?P<list>[^\n]{1,2000})$")
_BRACKETED = re.compile(r"\[(?P<index>\d{1,3})\](?P<iface>[^\s:\[]{1,64}):(?P<addr>\S{1,120}?)<\d{1,5}>")
_PLAIN = re.compile(r"^\s{0,4}(?P<iface>[^\s:\[]{1,64}):(?P<addr>\S{1,120}?)<\d{1,5}>")
_MAX_IFACES = 16  # NCCL's MAX_IFS
# Docker's default bridge network (docker0): https://docs.docker.com/engine/network/drivers/bridge/
DOCKER_BRIDGE = ipaddress.ip_network("172.17.0.0/16")


def find(lines: Lines) -> list[Fragment]:
    """nccl.bootstrap_ifaces: [{"iface", "address"}] of every "Bootstrap : Using" line, each
    interface once (every rank of a node prints the same line)."""
    found: dict[str, dict[str, str]] = {}
    first = last = 0
    for i, text in enumerate(lines.norm):
        if "Using" not in text or ("Bootstrap" not in text and "NET : Using interface" not in text):
            continue
        m = _BOOTSTRAP.search(text)
        if not m:
            continue
        listing = m["list"]
        entries = [(e["iface"], e["addr"]) for e in _BRACKETED.finditer(listing)]
        if not entries:
            plain = _PLAIN.match(listing)
            entries = [(plain["iface"], plain["addr"])] if plain else []
        for iface, addr in entries[:_MAX_IFACES]:
            found.setdefault(iface, {"iface": iface, "address": addr})
        if entries:
            first, last = first or i + 1, i + 1
    if not found:
        return []
    frag = Fragment("NCCL_DEBUG", first, last)
    frag.add("nccl.bootstrap_ifaces", list(found.values()))
    return [frag]


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0].strip("[]"))
    except ValueError:
        return None


def address_kind(address: str) -> str | None:
    """What an address NCCL used is, where that alone says other hosts cannot reach it."""
    ip = _ip(address)
    if ip is None:
        return None
    if ip.version == 4 and ip in DOCKER_BRIDGE:
        return "an address on Docker's default bridge network (172.17.0.0/16): a container's private address, which no other host can reach"
    if ip.is_loopback:
        return "a loopback address, which only this host reaches"
    if ip.is_link_local:
        return "a link-local address, which routes only on its own link"
    return None


def _virtual(iface: str) -> bool:
    return iface.startswith(fabric.VIRTUAL_IFACE_PREFIXES)


_WHY = {
    "connection refused": "nothing listened on that port: the rank that should have been there had already exited "
                          "(its own error comes first in its log), or a firewall rejected the port",
    "connection timed out": "no answer at all: a firewall between the nodes drops the packets, or the address is one the other "
                            "node cannot reach (a container's private address, a VPN or management interface)",
    "no route to host": "this node has no route to that address, or a firewall rejects it (icmp-host-prohibited): "
                        "the address is on a network only the other node is on (a Docker bridge, virbr0, a VPN)",
    "network is unreachable": "this node has no route to that network: the other rank advertised an address of an interface "
                              "(a Docker bridge, virbr0, a VPN) that is not reachable from here",
    "software caused connection abort": "NCCL 2.18-2.23 reports a refused or timed-out connect this way "
                                        "(NVIDIA/nccl#1515): the other rank was not listening there or a firewall stopped it",
}


@rule("nccl-socket-connect-failed", needs=("report.errors",), optional=("nccl.bootstrap_ifaces", "nccl.socket_ifaces", "nccl.env"))
def nccl_socket_connect_failed(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads NCCL's own warning that its TCP connect() to another rank failed for good, in every
        release's words: "Connect to 10.38.10.112<21724> failed : Connection refused" (2.4-2.9,
        "Net : Connect to" 2.10-2.14), "socketStartConnect: Connect to ... failed : ..." (2.18-2.26),
        "socketPollConnect: Connect to ... returned 113(No route to host) ..." (2.21-2.23), "connect
        to ... returned Connection refused, exceeded error retry count" (2.27+) and "Call to connect
        failed : ..." (2.0-2.3). It names the address and port NCCL tried and, where the report
        shows NCCL_DEBUG=INFO's "Bootstrap : Using eth0:172.17.0.2<0>", the interface and address
        this rank bootstrapped on, saying so when that is Docker's default bridge network
        (172.17.0.0/16) or a virtual interface (docker0, br-*, veth*, virbr*).

    Why is this bad?
        Every rank listens on a random port of the address it advertises and the others connect
        to it; one connection that cannot be made fails ncclCommInitRank (torch: "unhandled system
        error", ncclSystemError, ncclRemoteError, DistBackendError) or hangs the job until its
        timeout. The confirmed causes: a firewall between the nodes (NVIDIA/nccl#375,
        NVIDIA/nccl-tests#162: "check with nc", "disable the firewall"); NCCL choosing an
        interface the other node cannot reach, such as a container's address on Docker's bridge
        network, docker0, virbr0 or a VPN/management interface (espnet/espnet#4466, and the
        routes of NVIDIA/nccl#1581); or the other rank having died before it accepted.
        "Software caused connection abort" is how NCCL 2.18-2.23 reports a refused or timed-out
        connect (NVIDIA/nccl#1515). NCCL's INFO "Call to connect returned Connection refused,
        retrying" alone is a retry, not a failure.

    Example
            tj1-asr-train-v100-13:941227:943077 [0] include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed : Connection refused
            RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:410, unhandled system error, NCCL version 2.4.8

    Fix
        Name the interface the nodes reach each other on, on every node
        (`export NCCL_SOCKET_IFNAME=eth0`, or per node in /etc/nccl.conf); run containers that
        span nodes with `--network=host` (Kubernetes: hostNetwork: true) so that NCCL advertises
        the hosts' addresses, not Docker's 172.17.x.x; open the ports between the nodes (NCCL uses
        random ones: allow all TCP between them) and test with `nc -l 12345` on one node and
        `nc -zv <that node> 12345` on the other. Where the other rank died first, its own error is
        the one to fix.
    """
    said = [e for e in facts.get("report.errors") or [] if e.get("kind") in KINDS]
    if not said:
        return None
    error = said[0]
    address = str(error.get("address") or "")
    port = str(error.get("port") or "")
    reason = " ".join(str(error.get("error") or "").split())
    where = f"{address} (port {port})" if address else "another rank's address"
    parts = [f"NCCL could not open a TCP connection to another rank at {where}: {reason or 'connect() failed'} "
             f"(report line {error['line']})"]
    why = _WHY.get(reason.lower())
    if why:
        parts.append(why)
    kind = address_kind(address) if address else None
    if kind:
        parts.append(f"{address} is {kind}")
    boot = [b for b in facts.get("nccl.bootstrap_ifaces") or [] if isinstance(b, dict)]
    container = bool(kind and "Docker" in kind)
    if boot:
        shown = ", ".join(f"{b['iface']}:{b['address']}" for b in boot[:4])
        parts.append(f"this rank bootstrapped on {shown} ({facts.source('nccl.bootstrap_ifaces')})")
        for b in boot[:4]:
            bkind = address_kind(str(b["address"]))
            if bkind:
                parts.append(f"{b['address']} is {bkind}")
                container = container or "Docker" in bkind
            elif _virtual(str(b["iface"])):
                parts.append(f"{b['iface']} is a virtual (container or VM bridge) interface the other nodes cannot reach")
                container = container or str(b["iface"]).startswith(("docker", "veth", "br-"))
    ifname = str((facts.get("nccl.env") or {}).get("NCCL_SOCKET_IFNAME") or "")
    if ifname:
        parts.append(f"NCCL_SOCKET_IFNAME={ifname} is set: check it names the interface the nodes reach each other on, on every node")
    listed = [str(s.get("iface")) for s in facts.get("nccl.socket_ifaces") or [] if isinstance(s, dict)]
    candidates = [n for n in [*(str(b["iface"]) for b in boot), *listed]
                  if n and not _virtual(n) and n != "lo" and not address_kind(_addr_of(n, boot, facts))]
    iface = candidates[0] if candidates and (container or any(_virtual(str(b["iface"])) for b in boot)) else "<the interface the nodes reach each other on>"
    commands = [f"export NCCL_SOCKET_IFNAME={sh(iface) if not iface.startswith('<') else iface}   # on every node (or per node in /etc/nccl.conf); `ip -brief address` lists them"]
    if container:
        commands.append("docker run --network=host ...   # containers on several nodes: NCCL then advertises the hosts' addresses (Kubernetes: hostNetwork: true)")
    # The address is the report's text: quoted as one word wherever it stands in a command.
    target = sh(address.split("%")[0], "the address NCCL tried") if address else "<the other node>"
    commands += [f"nc -l 12345   # on the node of {target}; then here: nc -zv {target} 12345 (a firewall between the nodes shows here)",
                 "sudo ufw status; sudo firewall-cmd --list-all; sudo iptables -S   # NCCL listens on random ports: allow TCP between the nodes"]
    return Hit(
        "; ".join(parts),
        evidence={"report.errors": said, "nccl.bootstrap_ifaces": boot or None, "NCCL_SOCKET_IFNAME": ifname or None},
        fix=FixRef(commands=tuple(commands),
                   note="https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/networking_troubleshooting.html "
                        "(IP network interfaces, IP ports); where the other rank died first, its own error is the one to fix"),
    )


# NCCL's bare ncclSystemError as torch relays it; fwdoctor.triage.container_shm's hook on its
# errors.yaml row records where the report names a second node (`nodes`), a container
# (`container`) and an NCCL_DEBUG log (`nccl_log`).
_SYSTEM_ERROR_KIND = "nccl-unhandled-system-error"


@rule("nccl-socket-connect-failed", needs=("report.errors",), optional=("nccl.bootstrap_ifaces",))
def system_error_containers_across_nodes(facts: Facts, kb: KB) -> Hit | None:
    """NCCL's bare "unhandled system error" where the report names a job over several nodes and
    ranks in containers (see nccl-socket-connect-failed). A container on Docker's default bridge
    network has only a private 172.17.x.x address, which NCCL's bootstrap advertises and the other
    node cannot connect to (deepinsight/insightface#1444: two machines, fixed by --network=host;
    NVIDIA/nccl#331, #929 the same with NCCL_COMM_ID). A warning naming what settles it: the
    report shows neither NCCL's WARN line nor the address it used. Where it shows an NCCL_DEBUG
    log, only a bootstrap address on a Docker bridge or a virtual interface counts."""
    if report_errors(facts, *KINDS):
        return None  # NCCL's own connect failure is in the report: nccl_socket_connect_failed says it
    said = [e for e in report_errors(facts, _SYSTEM_ERROR_KIND) if e.get("nodes") and e.get("container")]
    if not said:
        return None
    boot = [b for b in facts.get("nccl.bootstrap_ifaces") or [] if isinstance(b, dict)]
    bridged = [b for b in boot if (address_kind(str(b.get("address"))) or "").startswith("an address on Docker") or _virtual(str(b.get("iface")))]
    if said[0].get("nccl_log") and not bridged:
        return None  # the log is there and shows no bridge address: the WARN line in it names the call
    shown = f"; this rank bootstrapped on {bridged[0]['iface']}:{bridged[0]['address']}" if bridged else ""
    return Hit(
        f"NCCL failed a system call ({report_line(said[0])}) in a job over several nodes ({said[0]['nodes']}) whose ranks run in "
        f"containers ({said[0]['container']}){shown}: containers on Docker's bridge network advertise a private 172.17.x.x address "
        "to NCCL's bootstrap, which the other node cannot connect to; the report does not show the address NCCL used",
        evidence={"report.errors": said, "nccl.bootstrap_ifaces": boot or None},
        fix=FixRef(commands=("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET <the job>   # \"Bootstrap : Using eth0:172.17.0.2\" and the WARN naming the failed call",
                             "docker run --network=host ...   # on every node: NCCL then advertises the hosts' addresses (Kubernetes: hostNetwork: true)",
                             "export NCCL_SOCKET_IFNAME=<the interface the nodes reach each other on>   # `ip -brief address` on every node"),
                   note="https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/networking_troubleshooting.html"),
        severity=Severity.WARNING,
    )


def _addr_of(iface: str, boot: list[dict[str, Any]], facts: Facts) -> str:
    for entry in [*boot, *(s for s in facts.get("nccl.socket_ifaces") or [] if isinstance(s, dict))]:
        if str(entry.get("iface")) == iface:
            return str(entry.get("address") or "")
    return ""


RULES: tuple[Rule, ...] = (nccl_socket_connect_failed, system_error_containers_across_nodes)
