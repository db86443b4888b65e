"""Fabric and GPU-health rules: NVSwitch fabric manager, memory repairs, Xid, MIG, and the
NCCL transport rules (environment switches; what an all-reduce's NCCL_DEBUG log showed).

`RULES` are judged by `check`. `RUN_RULES` need `nccl.run` (the NCCL_DEBUG=INFO summary
of a real all-reduce, doctor/smoke/nccl_log.py): `smoke allreduce` judges them beside the
check facts of the same host, so `check` does not list them as "not checked".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.quoting import comment
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule, sh
from fwdoctor.versions import equal, parse_version

if TYPE_CHECKING:
    from fwdoctor.kb import KB

# "Define and set to 1 to disable" each transport; NCCL_P2P_LEVEL=LOC (0 before 2.4.7)
# "Never use P2P" (https://docs.nvidia.com/deeplearning/nccl/archives/nccl_2134/user-guide/docs/env.html).
# NCCL reads them as integers (NCCL_PARAM), so any non-zero value counts as set here.
DISABLE_VARS = ("NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE")


def disabled(env: dict[str, str], name: str) -> bool:
    value = str(env.get(name, "")).strip()
    try:
        return int(value) != 0
    except ValueError:
        return False


def _nvlink_gpus(facts: Facts) -> list[dict[str, Any]]:
    return [g for g in facts["topology.nvlink"] or [] if (g.get("active") or 0) > 0]


# ----------------------------------------------------------------------------- fabric
@rule("nvswitch-fabricmanager-not-running", needs=("fabric.nvswitches", "fabric.fabricmanager"))
def nvswitch_fabricmanager_not_running(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        On a host whose PCI bus has NVSwitches (HGX/DGX A100 and H100 boards: PCI ids
        10de:1af1 and 10de:22a3), checks that nvidia-fabricmanager is installed and that
        its daemon (`nv-fabricmanager`) is running.

    Why is this bad?
        The NVSwitches route NVLink traffic only after the fabric manager has configured
        them. Until then every GPU reports its fabric state as "In Progress" and CUDA
        refuses to start: `cudaGetDeviceCount` returns error 802, "system not yet
        initialized" (cudaErrorSystemNotReady), and `torch.cuda.is_available()` is False
        on a machine full of healthy GPUs.

    Example
            $ lspci -d 10de:22a3 | wc -l       # 4 NVSwitches on an HGX H100
            4
            $ systemctl is-active nvidia-fabricmanager
            inactive

    Fix
        Install the fabric manager of exactly the driver's version and start it:

            sudo apt-get install nvidia-fabricmanager-580=580.95.05-1
            sudo systemctl enable --now nvidia-fabricmanager
    """
    switches = facts["fabric.nvswitches"]
    if not switches:
        return None
    fm = facts["fabric.fabricmanager"]
    installed = fm.get("binary") or fm.get("package")
    evidence = {"fabric.nvswitches": switches, "fabric.fabricmanager": fm}
    fix = FixRef(commands=("sudo apt-get install nvidia-fabricmanager-<driver branch>   # the driver's exact version",
                           "sudo systemctl enable --now nvidia-fabricmanager"))
    if not installed:
        return Hit(f"{len(switches)} NVSwitch(es) on the PCI bus but no nvidia-fabricmanager installed: CUDA will fail with \"system not yet initialized\"",
                   evidence=evidence, fix=fix)
    if fm.get("running") is None:
        raise NotCheckable("whether nv-fabricmanager runs cannot be seen here (no processes under --root)")
    if fm["running"]:
        return None
    return Hit(f"{len(switches)} NVSwitch(es) on the PCI bus and nvidia-fabricmanager {fm.get('version') or ''} installed but not running: CUDA will fail with \"system not yet initialized\"".replace("  ", " "),
               evidence=evidence, fix=fix)


@rule("fabricmanager-driver-mismatch", needs=("fabric.fabricmanager", "driver.version"))
def fabricmanager_driver_mismatch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the installed nvidia-fabricmanager package's version with the loaded
        driver's (/proc/driver/nvidia/version).

    Why is this bad?
        The fabric manager must be the same release as the driver ("The
        nvidia-fabricmanager extension version has to match with the NVIDIA driver version
        in use", Talos NVIDIA Fabric Manager guide); after a driver upgrade without the
        matching fabric manager the daemon refuses to start, the NVSwitches stay
        unconfigured and CUDA reports "system not yet initialized".

    Example
            driver 580.95.05, nvidia-fabricmanager-570 570.133.20-1

    Fix
        Install the fabric manager of the driver's exact version and restart it:

            sudo apt-get install nvidia-fabricmanager-580=580.95.05-1
            sudo systemctl restart nvidia-fabricmanager
    """
    fm = facts["fabric.fabricmanager"]
    driver = facts["driver.version"]
    if not fm.get("version") or not driver or equal(fm["version"], driver):
        return None
    return Hit(f"nvidia-fabricmanager is {fm['version']} ({fm.get('package')}) but the driver is {driver}: they must be the same release",
               evidence={"fabric.fabricmanager": fm, "driver.version": driver},
               fix=FixRef(commands=(f"sudo apt-get install {sh('nvidia-fabricmanager-' + str(driver).split('.')[0])}   # version {comment(str(driver))}",
                                    "sudo systemctl restart nvidia-fabricmanager")))


# ----------------------------------------------------------------------------- GPU health
@rule("gpu-memory-repair-pending", needs=("gpus.health",))
def gpu_memory_repair_pending(facts: Facts, kb: KB) -> list[Hit]:
    """What it does
        Reads, per GPU through NVML (no root needed), whether retired pages are pending
        (before Ampere) or a row remapping is pending or has failed (Ampere and later).

    Why is this bad?
        A pending retirement or remapping means the GPU found uncorrectable memory errors
        and keeps using the bad rows until it is reset; jobs on it can crash with ECC
        errors (Xid 48, 63, 64) or return wrong results. A failed remapping means the
        GPU ran out of spare rows and needs service.

    Example
            $ nvidia-smi -q -d ROW_REMAPPER
                Pending                   : Yes

    Fix
        Drain the GPU and reset it so the repair takes effect; a failed remapping is an
        RMA case:

            sudo nvidia-smi -r -i <index>      # or reboot the node
    """
    hits = []
    for gpu in facts["gpus.health"]:
        failed = gpu.get("remapping_failed") is True
        pending = [name for name in ("retired_pages_pending", "remapped_rows_pending") if gpu.get(name) is True]
        if not failed and not pending:
            continue
        what = "row remapping failed (no spare rows left)" if failed else " and ".join(p.replace("_", " ") for p in pending)
        hits.append(Hit(f"GPU {gpu.get('index')} ({gpu.get('bus_id')}): {what}; reset the GPU before running jobs on it",
                        evidence={"gpu": gpu}, severity=Severity.ERROR if failed else None,
                        fix=FixRef(commands=(f"sudo nvidia-smi -r -i {sh(gpu.get('index'))}   # after draining it",))))
    return hits


@rule("gpu-xid-errors", needs=("gpus.xid_events",))
def gpu_xid_errors(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Looks for "NVRM: Xid" lines in the kernel log (dmesg on a live host where it is
        readable, else /var/log/kern.log, messages or syslog) and counts them per GPU
        and Xid code.

    Why is this bad?
        An Xid is the driver reporting a GPU error: 79 "GPU has fallen off the bus", 48
        a double-bit ECC error, 13/31/43 faults in an application, 74 an NVLink error.
        Repeated Xids explain hangs, NCCL timeouts and wrong answers that no software
        fix will cure.

    Example
            NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus.

    Fix
        Look up each code in NVIDIA's Xid catalog; hardware codes (48, 63, 64, 74, 79,
        94, 95) mean draining the node and a reset, a reseat or service:

            sudo dmesg -T | grep 'NVRM: Xid'
    """
    events = facts["gpus.xid_events"]
    if not events:
        return None
    counts: dict[tuple[str, int], int] = {}
    for e in events:
        counts[(e["bus"], e["xid"])] = counts.get((e["bus"], e["xid"]), 0) + 1
    summary = ", ".join(f"Xid {xid} x{n} on {bus}" for (bus, xid), n in sorted(counts.items()))
    return Hit(f"the kernel log has {len(events)} NVIDIA Xid event(s): {summary}",
               evidence={"xid_events": events[:20], "counts": {f"{bus} Xid {xid}": n for (bus, xid), n in counts.items()}, "source": facts.source("gpus.xid_events")},
               fix=FixRef(commands=("sudo dmesg -T | grep 'NVRM: Xid'",), note="Hardware Xids (48, 63, 64, 74, 79, 94, 95): drain the node and reset or service the GPU."))


@rule("gpu-mig-enabled", needs=("gpus.list",))
def gpu_mig_enabled(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reports GPUs whose MIG (Multi-Instance GPU) mode is on, as NVML says.

    Why is this bad?
        Nothing is broken, but a MIG GPU is not one device any more: CUDA sees a MIG
        instance only through CUDA_VISIBLE_DEVICES=MIG-<uuid>, one process sees one
        instance, and NCCL does not run collectives across MIG instances. A training job
        that expects the whole GPU gets a slice, or no GPU at all.

    Example
            $ nvidia-smi --query-gpu=index,mig.mode.current --format=csv
            0, Enabled

    Fix
        Use MIG instances on purpose (one per process), or turn MIG off:

            sudo nvidia-smi -i 0 -mig 0        # then reset the GPU
    """
    mig = [g for g in facts["gpus.list"] or [] if g.get("mig") is True]
    if not mig:
        return None
    return Hit(f"MIG mode is on for GPU(s) {', '.join(str(g.get('index')) for g in mig)}: CUDA sees MIG instances, not whole GPUs, and NCCL cannot span them",
               evidence={"gpus": [{"index": g.get("index"), "name": g.get("name"), "mig": True} for g in mig]},
               fix=FixRef(commands=("sudo nvidia-smi -i <index> -mig 0   # then reset the GPU",)))


# ----------------------------------------------------------------------------- NCCL
def _env_of(facts: Facts) -> dict[str, str]:
    env = dict(facts.get("nccl.env") or {})
    run = facts.get("nccl.run") or {}
    for key, value in (run.get("env") or {}).items():  # what NCCL itself says it was told
        env.setdefault(key, value)
    return env


@rule("nccl-transport-disabled", needs=("nccl.env",), optional=("nccl.run",))
def nccl_transport_disabled(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Looks for NCCL_IB_DISABLE, NCCL_P2P_DISABLE or NCCL_SHM_DISABLE set to a non-zero
        value in the environment (and, after `smoke allreduce`, in what NCCL's log says
        it was told: "NCCL_IB_DISABLE set by environment to 1.").

    Why is this bad?
        Each switches a fast transport off for every job started from this environment:
        no InfiniBand/RoCE (traffic between nodes goes over TCP sockets), no GPU
        peer-to-peer over NVLink or PCIe, no shared memory between GPUs of a node. They
        are usually left over from debugging a hang, and cost a large factor of
        bandwidth silently (nccl-tests busbw drops several-fold).

    Example
            $ env | grep NCCL_
            NCCL_P2P_DISABLE=1

    Fix
        Unset them where they are set (shell profile, job script, container image ENV,
        /etc/nccl.conf) unless a known bug needs them:

            unset NCCL_IB_DISABLE NCCL_P2P_DISABLE NCCL_SHM_DISABLE
    """
    env = _env_of(facts)
    off = [name for name in DISABLE_VARS if disabled(env, name)]
    if not off:
        return None
    return Hit(f"{', '.join(f'{n}={env[n]}' for n in off)} set: NCCL will not use {', '.join(n.split('_')[1] for n in off)} and falls back to slower paths",
               evidence={"nccl.env": {n: env[n] for n in off}},
               fix=FixRef(commands=(f"unset {' '.join(sh(n) for n in off)}",), note="Also check job scripts, the image's ENV and /etc/nccl.conf."))


@rule("nccl-p2p-disabled-nvlink", needs=("topology.nvlink",), optional=("nccl.env", "nccl.run"))
def nccl_p2p_disabled_nvlink(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        On a host whose GPUs have active NVLinks (NVML, or NV# in `nvidia-smi topo -m`),
        checks that NCCL may use peer-to-peer: NCCL_P2P_DISABLE not set, NCCL_P2P_LEVEL
        not LOC, and (after `smoke allreduce`) that the GPUs of one node were connected
        via P2P, not via SHM or the network.

    Why is this bad?
        NVLink is only used through peer-to-peer. With P2P off, NCCL copies through host
        shared memory instead: on 8x A100/H100 that is a few percent of the NVLink
        bandwidth, and an all-reduce that should take milliseconds takes tens.

    Example
            GPU0..7: 18 NVLinks active;  NCCL_P2P_DISABLE=1
            NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct

    Fix
        Unset the switch; if P2P was disabled to work around a hang, fix the cause
        instead (IOMMU/ACS on PCIe, a driver bug) and test with `fwdoctor smoke allreduce`:

            unset NCCL_P2P_DISABLE NCCL_P2P_LEVEL
    """
    linked = _nvlink_gpus(facts)
    if not linked:
        return None
    env = _env_of(facts)
    reasons = []
    if disabled(env, "NCCL_P2P_DISABLE"):
        reasons.append(f"NCCL_P2P_DISABLE={env['NCCL_P2P_DISABLE']}")
    if str(env.get("NCCL_P2P_LEVEL", "")).strip().upper() in ("LOC", "0"):
        reasons.append(f"NCCL_P2P_LEVEL={env['NCCL_P2P_LEVEL']}")
    run = facts.get("nccl.run") or {}
    transports = run.get("transports") or {}
    if transports and not any(t.startswith("P2P") for t in transports) and "SHM" in transports and _shm_over_nvlink(facts["topology.nvlink"] or [], run):
        reasons.append(f"the all-reduce connected its GPUs via SHM ({transports['SHM']} channel(s)), never P2P")
    if not reasons:
        return None
    return Hit(f"{len(linked)} GPU(s) have active NVLinks but NCCL peer-to-peer is off: {'; '.join(reasons)}",
               evidence={"nvlink": linked, "reasons": reasons, "transports": transports},
               fix=FixRef(commands=("unset NCCL_P2P_DISABLE NCCL_P2P_LEVEL",), note="Then rerun `fwdoctor smoke allreduce` and check the transports say P2P."))


def _shm_over_nvlink(gpus: list[dict[str, Any]], run: dict[str, Any]) -> bool:
    """Whether the log's SHM connections join GPUs an NVLink joins. Known only where the
    links name their peers (`nvidia-smi topo -m`) and the log its GPUs: since NCCL 2.18.3 a
    connection line names each rank's NVML index, "0[2] -> 1[3] via SHM/direct/direct" (src/transport/shm.cc;
    before, its PCI bus id in hex, "0[3b000] -> 1[5e000]"), the index `nvidia-smi topo -m`
    numbers its GPUs by. A run on GPU1 and GPU2 of a board whose NVLink pairs GPU0 and GPU1
    goes over SHM rightly. Where the log's numbers are not all GPUs of the matrix (bus ids),
    or the links name no peers (NVML's counts), any SHM connection counts, as before."""
    pairs = {(g.get("index"), p) for g in gpus for p in g.get("peers") or []}
    indices = {g.get("index") for g in gpus}
    named = [(p.get("from_dev"), p.get("to_dev")) for p in run.get("peers") or [] if p.get("transport") == "SHM"]
    if not pairs or not named or not all(str(d).isdigit() and int(d) in indices for pair in named for d in pair):
        return True
    return any((int(a), int(b)) in pairs for a, b in named)


@rule("nccl-socket-with-ib", needs=("nccl.run", "fabric.ib_devices"))
def nccl_socket_with_ib(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        After `smoke allreduce`, checks NCCL's own log: if traffic between nodes went
        over NET/Socket (TCP) while this host has an InfiniBand or RoCE port in state
        ACTIVE (/sys/class/infiniband/*/ports/*/state).

    Why is this bad?
        TCP sockets give a fraction of an RDMA network's bandwidth and add latency to
        every step. NCCL falls back to sockets silently when it cannot use the IB devices:
        NCCL_IB_DISABLE set, no libibverbs (rdma-core) in the container, the devices not
        passed into it (/dev/infiniband), or NCCL_IB_HCA naming absent devices.

    Example
            NCCL INFO NET/IB : No device found.
            NCCL INFO Channel 03/0 : 15[7] -> 6[6] [send] via NET/Socket/3
            /sys/class/infiniband/mlx5_0/ports/1/state: 4: ACTIVE

    Fix
        Make the IB devices usable by NCCL: install rdma-core/libibverbs in the image,
        run the container with --device=/dev/infiniband (or the RDMA device plugin),
        unset NCCL_IB_DISABLE, and check NCCL_IB_HCA:

            NCCL_DEBUG=INFO fwdoctor smoke allreduce ...   # expect "via NET/IB/.../GDRDMA"
    """
    run = facts["nccl.run"] or {}
    socket_peers = [p for p in run.get("peers") or [] if p.get("transport") == "NET/Socket"]
    # NCCL's own choice, before any connection: it looked for IB devices, found none it could
    # open, and took sockets ("NET/IB : No device found." then "Using network Socket",
    # src/transport/net_ib.cc, net_ib/init.cc after 2.28, and src/init.cc), as logs pasted
    # from containers without /dev/infiniband show (NVIDIA/nccl#451, #941).
    fell_back = run.get("network") == "Socket" and run.get("ib_none") is True
    if not socket_peers and not fell_back:
        return None
    active = [f"{d['name']}:{p['port']} ({p.get('link_layer')}, {p.get('rate')})" for d in facts["fabric.ib_devices"] for p in d.get("ports", []) if p.get("state") == "ACTIVE"]
    if not active:
        return None
    ifaces = ", ".join(sorted({s["iface"] for s in run.get("socket_ifaces") or []})) or "?"
    what = (f"NCCL sent {len(socket_peers)} inter-rank connection(s) over NET/Socket ({ifaces})" if socket_peers
            else f"NCCL found no IB device it could use (\"NET/IB : No device found\") and chose sockets ({ifaces})")
    return Hit(f"{what} while InfiniBand/RoCE port(s) are ACTIVE: {', '.join(active)}",
               evidence={"socket_peers": socket_peers[:8], "ib_active": active, "ib_none": run.get("ib_none"), "env": run.get("env")},
               fix=FixRef(commands=("unset NCCL_IB_DISABLE", "docker run --device=/dev/infiniband ...   # and rdma-core/libibverbs in the image"),
                          note="NCCL's log says why: look for 'NET/IB : No device found' or 'NCCL_IB_DISABLE set by environment'."))


@rule("nccl-runtime-not-torch", needs=("nccl.run", "torch.requires"))
def nccl_runtime_not_torch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        After `smoke allreduce`, compares the NCCL version the ranks actually loaded (the
        "NCCL version 2.x.y+cudaZ" line of NCCL_DEBUG=INFO) with the nvidia-nccl-cuNN
        wheel this torch pins (its Requires-Dist), and checks that all ranks loaded the
        same one.

    Why is this bad?
        torch is built and tested against the NCCL it pins. Another libnccl, loaded first
        through LD_LIBRARY_PATH, LD_PRELOAD or a system package, can lack symbols torch
        calls ("undefined symbol: ncclCommRegister"), behave differently in hangs and
        error handling, or differ between nodes, which makes collectives fail at start-up.

    Example
            torch 2.14.1 requires nvidia-nccl-cu13==2.30.7
            NCCL version 2.21.5+cuda12.4       # what the ranks printed

    Fix
        Let torch load its own NCCL: drop the other libnccl from LD_LIBRARY_PATH /
        LD_PRELOAD (see `fwdoctor check` for nccl-shadowed), or reinstall the pinned wheel:

            pip install --force-reinstall 'nvidia-nccl-cu13==2.30.7'
    """
    run = facts["nccl.run"] or {}
    loaded = run.get("versions") or ([run["version"]] if run.get("version") else [])
    if not loaded:
        raise NotCheckable("NCCL's log has no 'NCCL version' line")
    pins = {name: spec for name, spec in (facts["torch.requires"] or {}).items() if name.startswith("nvidia-nccl-")}
    if len(loaded) > 1:
        return Hit(f"the ranks loaded different NCCL versions: {', '.join(loaded)}", evidence={"versions": loaded, "pins": pins})
    if not pins:
        raise NotCheckable("this torch pins no nvidia-nccl wheel (a source build, or NCCL linked in)")
    wheel, spec = next(iter(pins.items()))
    wanted = str(spec).lstrip("=<>~! ").split(",")[0]
    if not str(spec).startswith("==") or equal(loaded[0], wanted):
        return None
    return Hit(f"the all-reduce loaded NCCL {loaded[0]} but torch requires {wheel}{spec}",
               evidence={"loaded": loaded[0], "cuda": run.get("cuda"), "torch.requires": {wheel: spec}},
               fix=FixRef(commands=(f"pip install --force-reinstall {sh(f'{wheel}{spec}')}",), note="And remove other libnccl from LD_LIBRARY_PATH / LD_PRELOAD."))


def socket_ifname_matches(value: str, names: list[str]) -> list[str]:
    """The interfaces of `names` NCCL_SOCKET_IFNAME=`value` selects, as NCCL reads it
    (src/misc/utils.cc parseStringList, src/os/linux.cc): a comma list of name prefixes,
    each "name[:port]"; a leading `^` excludes them, then a leading `=` makes them exact
    names. NCCL ignores a value of at most one character (it falls back to its own pick)."""
    spec = value.strip()
    exclude = spec.startswith("^")
    spec = spec[1:] if exclude else spec
    exact = spec.startswith("=")
    spec = spec[1:] if exact else spec
    wanted = [entry.split(":", 1)[0] for entry in spec.split(",") if entry.split(":", 1)[0]]
    return [n for n in names if any(n == w if exact else n.startswith(w) for w in wanted) != exclude]


@rule("nccl-socket-interface-missing", needs=("nccl.env", "net.interfaces"), optional=("nccl.run",))
def nccl_socket_interface_missing(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Matches NCCL_SOCKET_IFNAME (a comma list of interface-name prefixes; `^` excludes
        them, `=` asks for exact names) against the host's network interfaces
        (/sys/class/net). Reading a report, it takes NCCL's own words for the same fault:
        "Bootstrap : no socket interface found", "NET/Socket : no interface found", or
        "Socket creation failed : Address family not supported by protocol".

    Why is this bad?
        NCCL needs an IP interface for its bootstrap whenever more than one process
        takes part, even on one node (NVIDIA/nccl#210). When the variable is set, NCCL
        uses only what it matches: "Specified by user : find or fail" (src/misc/socket.cc,
        ncclFindInterfaces). A name that exists on another node, or a typo, and
        ncclCommInitRank fails with "invalid usage" or "unhandled system error".

    Example
            $ ls /sys/class/net
            eno1  ib0  lo
            $ echo $NCCL_SOCKET_IFNAME
            eth0                   # invalid: no interface starts with eth0
            NCCL_SOCKET_IFNAME=eno1   # valid

    Fix
        Name an interface this node has and the other nodes reach, or unset the variable
        and let NCCL pick one (it skips lo, docker* and virbr* unless nothing else is up):

            ip -brief address
            export NCCL_SOCKET_IFNAME=<interface with the nodes' subnet>
    """
    env = _env_of(facts)
    value = str(env.get("NCCL_SOCKET_IFNAME") or "")
    if len(value.strip()) <= 1:
        return None
    names = [str(n) for n in facts["net.interfaces"] or []]
    if socket_ifname_matches(value, names):
        return None
    return Hit(f"NCCL_SOCKET_IFNAME={value} matches no network interface of this host ({', '.join(names) or 'none'}): "
               "NCCL's bootstrap finds no socket interface and ncclCommInitRank fails",
               evidence={"nccl.env": {"NCCL_SOCKET_IFNAME": value}, "net.interfaces": names},
               fix=FixRef(commands=("ip -brief address   # the interfaces and their addresses",
                                    "export NCCL_SOCKET_IFNAME=<an interface listed there>   # or unset it: NCCL then picks one"),
                          note="The variable may come from a job script, the image's ENV or /etc/nccl.conf; "
                               "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-socket-ifname"))


# Interfaces of containers' networks, not of the host's fabric: Docker's default bridge
# (docker0) and its user-defined ones (br-<network id>), the host ends of containers' veth
# pairs, libvirt's virbr*. NCCL's default NCCL_SOCKET_IFNAME leaves out only docker, lo
# and virbr (src/misc/socket.cc, ncclFindInterfaces), so br-* and veth* join the list.
VIRTUAL_IFACE_PREFIXES = ("br-", "veth", "docker", "virbr")


def virtual_interfaces(names: list[str]) -> list[str]:
    """The container-network interfaces among `names`, when at least one other interface is
    there too (NCCL then stripes its socket traffic over both kinds)."""
    virtual = [n for n in names if n.startswith(VIRTUAL_IFACE_PREFIXES)]
    return virtual if virtual and len(virtual) < len(names) else []


@rule("nccl-socket-virtual-interfaces", needs=("nccl.run",))
def nccl_socket_virtual_interfaces(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads the interfaces NCCL's socket transport uses ("NET/Socket : Using [0]bond0:...
        [1]br-05ab815fa14e:... [12]veth6163fba:...", from NCCL_DEBUG=INFO: the all-reduce's
        log, or a pasted one) and looks for Docker bridges (br-*, docker*), veth pairs or
        libvirt's virbr* beside a real interface.

    Why is this bad?
        NCCL spreads its socket traffic over every interface in that list. A container
        bridge's address (172.19.0.1 on each node) does not lead to the other node, so the
        connections through it fail or hang ("ncclSystemError: System call ... failed"),
        while the real interface would work: NCCL's default NCCL_SOCKET_IFNAME leaves out
        only docker*, lo and virbr* (NVIDIA/nccl#697, fixed by NCCL_SOCKET_IFNAME=bond0;
        NVIDIA/nccl#913, a veth* interface hanging ncclCommInitRank).

    Example
            NCCL INFO NET/Socket : Using [0]bond0:192.168.1.161<0> [1]br-05ab815fa14e:172.19.0.1<0>   # invalid
            NCCL INFO NET/Socket : Using [0]bond0:192.168.1.161<0>                                   # valid

    Fix
        Name the interface the nodes reach each other on, or exclude the container ones:

            export NCCL_SOCKET_IFNAME=bond0
            export NCCL_SOCKET_IFNAME=^lo,docker,br-,veth,virbr
    """
    run = facts["nccl.run"] or {}
    names = [str(s.get("iface")) for s in run.get("socket_ifaces") or []]
    virtual = virtual_interfaces(names)
    if not virtual:
        return None
    return socket_virtual_hit(names, virtual, evidence={"nccl.run": {"socket_ifaces": run.get("socket_ifaces")}})


def socket_virtual_hit(names: list[str], virtual: list[str], evidence: dict[str, Any], where: str = "") -> Hit:
    """The finding for NCCL's socket list `names` that holds the container interfaces `virtual`
    (also fwdoctor.triage.nccl_fabric's, from a pasted log)."""
    real = [n for n in names if n not in virtual]
    shown = ", ".join(virtual[:4]) + (f" and {len(virtual) - 4} more" if len(virtual) > 4 else "")
    return Hit(f"NCCL's socket transport uses container-network interfaces ({shown}) beside {', '.join(real)}{where}: "
               "traffic through a bridge or veth does not reach the other nodes",
               evidence=evidence,
               fix=FixRef(commands=(f"export NCCL_SOCKET_IFNAME={sh(real[0])}   # the interface the nodes reach each other on",
                                    "export NCCL_SOCKET_IFNAME=^lo,docker,br-,veth,virbr   # or: every interface but the container ones"),
                          note="https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-socket-ifname"))


@rule("nccl-net-plugin-failed", needs=("nccl.env", "fabric.ib_devices", "fabric.rdma_nodes"))
def nccl_net_plugin_failed(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        On a host, checks that NCCL_NET=IB (NCCL may use only its InfiniBand/RoCE plugin)
        has an RDMA device to start on: a device in /sys/class/infiniband and its verbs
        nodes in /dev/infiniband (uverbs*), which a container has only when they are passed
        to it. Reading a report, it takes NCCL's "Failed to initialize any NET plugin":
        none of the network plugins NCCL may use started, not an external one
        (NCCL_NET_PLUGIN, libnccl-net.so), not its IB one, not its Socket one, or not the
        one NCCL_NET names.

    Why is this bad?
        ncclCommInitRank fails with "invalid usage" and no rank starts (src/plugin/net.cc,
        ncclNetInit). The cause is printed at INFO level above the warning: most often
        NCCL_NET=IB (or an RDMA plugin) where no RDMA device is usable, as in a container
        started without /dev/infiniband (getainode/ainode#87: `docker inspect` showed
        "Devices: []"), or libibverbs missing; else no socket interface either.

    Example
            $ docker run --gpus all -e NCCL_NET=IB image ...     # no --device /dev/infiniband
            NCCL WARN Failed to initialize any NET plugin        # invalid
            $ docker run --gpus all --device /dev/infiniband --cap-add IPC_LOCK ...   # valid

    Fix
        Give the process the devices and libraries the network it asks for needs, or let
        NCCL fall back to sockets:

            ls /dev/infiniband          # uverbs*, rdma_cm: inside the container too
            NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET <the job>   # the plugin and why it failed
            unset NCCL_NET              # NCCL may then use Socket
    """
    net = str(_env_of(facts).get("NCCL_NET") or "")
    if net.strip().lower() != "ib":  # NCCL compares the name case-insensitively (strcasecmp)
        return None
    devices = [d.get("name") for d in facts["fabric.ib_devices"] or []]
    nodes = [n for n in facts["fabric.rdma_nodes"] or [] if str(n).startswith("uverbs")]
    if devices and nodes:
        return None
    why = "no RDMA device in /sys/class/infiniband" if not devices else f"{', '.join(map(str, devices))} but no /dev/infiniband/uverbs* node (a container started without them)"
    return Hit(f"NCCL_NET={net} asks for NCCL's InfiniBand/RoCE plugin only, and this host has {why}: NCCL will fail with "
               "\"Failed to initialize any NET plugin\"",
               evidence={"nccl.env": {"NCCL_NET": net}, "fabric.ib_devices": devices, "fabric.rdma_nodes": facts["fabric.rdma_nodes"]},
               fix=FixRef(commands=("ls /dev/infiniband   # uverbs*: docker run --device /dev/infiniband (and --cap-add IPC_LOCK)",
                                    "unset NCCL_NET   # NCCL may then fall back on Socket"),
                          note="https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-net"))


def memlock_size(value: int | None) -> str:
    """A locked-memory limit as `ulimit -l` prints it, with its size: "64 KiB (ulimit -l 64)"."""
    if value is None:
        return "unlimited"
    kib = value // 1024
    size = f"{kib // 1024} MiB" if kib >= 1024 and kib % 1024 == 0 else f"{kib} KiB" if value % 1024 == 0 else f"{value} bytes"
    return f"{size} (ulimit -l {kib})"


def memlock_fix(container: bool, hard_too_low: bool) -> FixRef:
    """How to raise RLIMIT_MEMLOCK where the job starts: its shell, a container, a login, a daemon."""
    commands = []
    if not hard_too_low:
        commands.append("ulimit -l unlimited   # in the job's shell or batch script, before the launcher (up to the hard limit: ulimit -Hl)")
    launch = "docker run --ulimit memlock=-1:-1 --cap-add IPC_LOCK --device /dev/infiniband ...   # a container: no limit, and the right to pin"
    commands.append(launch)
    commands += ["printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' | sudo tee /etc/security/limits.d/rdma.conf   # new logins",
                 "sudo systemctl edit docker   # [Service] LimitMEMLOCK=infinity: also slurmd, or any daemon that starts the job; then restart it"]
    if container:
        commands.insert(0, commands.pop(commands.index(launch)))
    return FixRef(commands=tuple(commands),
                  note="check it where the job runs: `mpirun ... bash -c 'ulimit -l'`, `srun bash -c 'ulimit -l'`; Slurm copies the submitting "
                       "shell's limits into the job unless slurm.conf says PropagateResourceLimitsExcept=MEMLOCK "
                       "(https://slurm.schedmd.com/faq.html#memlock); NCCL: --ulimit memlock=-1 (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/"
                       "troubleshooting/runtime_and_mpi_issues.html)")


@rule("rdma-memlock-too-low", needs=("fabric.ib_devices",), optional=("system.memlock", "fabric.rdma_nodes", "system.container"))
def rdma_memlock_too_low(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Where the host has RDMA devices (/sys/class/infiniband: InfiniBand, RoCE, EFA),
        reads this process's locked-memory limit (RLIMIT_MEMLOCK, `ulimit -l`, from
        /proc/self/limits) and whether it holds CAP_IPC_LOCK, and compares the limit with
        the KB's floor (gpus.yaml runtime.rdma_memlock_min_mib). A limit belongs to a
        process: with --root it is "not checked". Reading a report, it takes UCX's "Please
        set max locked memory (ulimit -l) to 'unlimited' (current: 64 kbytes)", the limit
        a pasted `ulimit -a` / `ulimit -l` shows, and NCCL's "Call to ibv_create_cq failed
        with error Cannot allocate memory" (ibv_reg_mr the same): an error where the report
        also shows a low `ulimit -l`, else a warning, since that errno has other causes.

    Why is this bad?
        RDMA reads and writes memory the NIC was given, so every buffer is pinned
        (ibv_reg_mr), and the kernel counts pinned pages against RLIMIT_MEMLOCK unless the
        process has CAP_IPC_LOCK (ib_umem_get: -ENOMEM). With a small limit (64 KiB in
        many containers and login shells, 8 MiB under Docker's daemon) NCCL fails at
        init with "Call to ibv_create_cq failed with error Cannot allocate memory",
        ncclSystemError, or UCX turns its InfiniBand transports off and MPI falls back to
        TCP. The limit that counts is the job's: a launcher (mpirun, Slurm, dockerd,
        SGE) hands its own down, so `ulimit -l` in a login shell can say unlimited while
        the job gets 64 KiB (the Open MPI users list, 2009: "adding 'ulimit -l
        unlimited' near the top of the SGE startup script").

    Example
            $ ulimit -l            # inside `docker run` without --ulimit
            64                     # invalid: 64 KiB with mlx5_0 present
            $ ulimit -l
            unlimited              # valid

    Fix
        Lift the limit where the job starts (or give it CAP_IPC_LOCK):

            ulimit -l unlimited                                # the job's shell, up to the hard limit
            docker run --ulimit memlock=-1:-1 --cap-add IPC_LOCK ...
            echo '* soft memlock unlimited' | sudo tee -a /etc/security/limits.d/rdma.conf
            echo '* hard memlock unlimited' | sudo tee -a /etc/security/limits.d/rdma.conf
            sudo systemctl edit slurmd     # [Service] LimitMEMLOCK=infinity (dockerd too)
            # slurm.conf: PropagateResourceLimitsExcept=MEMLOCK
    """
    devices = [str(d.get("name")) for d in facts["fabric.ib_devices"] or [] if isinstance(d, dict)]
    if not devices:
        return None
    if facts.get("fabric.rdma_nodes") == []:
        return None  # no verbs nodes: nothing here can register memory (nccl-net-plugin-failed says so where NCCL_NET=IB)
    if not facts.known("system.memlock"):
        raise NotCheckable(f"system.memlock unknown: {facts.why('system.memlock')}")
    floor = kb.gpus.rdma_memlock_min_bytes
    if floor is None:
        raise NotCheckable("no data: the KB has no runtime.rdma_memlock_min_mib (gpus.yaml)")
    memlock = facts["system.memlock"] or {}
    soft, hard = memlock.get("soft_bytes"), memlock.get("hard_bytes")
    if soft is None or not isinstance(soft, int) or soft >= floor or memlock.get("ipc_lock") is True:
        return None  # unlimited, high enough, or CAP_IPC_LOCK (root outside a container): the kernel does not count
    hard_too_low = hard is not None and isinstance(hard, int) and hard < floor
    limits = f"{memlock_size(soft)}" + (f", hard limit {memlock_size(hard)}" if "hard_bytes" in memlock and hard != soft else "")
    container = facts.get("system.container") is True
    return Hit(
        f"this process may lock only {limits} of memory (RLIMIT_MEMLOCK, no CAP_IPC_LOCK) while the host has RDMA devices "
        f"({', '.join(devices[:4])}{', ...' if len(devices) > 4 else ''}): NCCL and UCX cannot pin their InfiniBand/RoCE buffers "
        f"(ibv_reg_mr / ibv_create_cq: Cannot allocate memory) and fail at init or fall back to TCP; needs at least "
        f"{floor // (1024 * 1024)} MiB, or unlimited",
        evidence={"system.memlock": memlock, "fabric.ib_devices": devices, "floor_bytes": floor, "system.container": facts.get("system.container")},
        fix=memlock_fix(container, hard_too_low),
    )


# DMA-BUF, the other way NCCL registers GPU memory with the NIC (no peer-memory module):
# the kernel's ib_umem_dmabuf (Linux 5.12) and an open GPU kernel module that exports it.
DMABUF_MIN_KERNEL = "5.12"
_KERNEL_RELEASE = re.compile(r"^(\d{1,3})\.(\d{1,3})")
PEERMEM_FIX = FixRef(
    commands=("sudo modprobe nvidia-peermem   # every node; needs MLNX_OFED/DOCA-OFED's peer-memory API (or nv_peer_mem on old drivers)",
              "echo nvidia-peermem | sudo tee /etc/modules-load.d/nvidia-peermem.conf   # load it at boot",
              "ls /sys/module/nvidia_peermem   # present once loaded; NCCL_DEBUG=INFO then shows 'via NET/IB/<n>/GDRDMA'"),
    note="nvidia-peermem ships with the NVIDIA driver since R470 (https://download.nvidia.com/XFree86/Linux-x86_64/495.44/README/nvidia-peermem.html); "
         "with the open GPU kernel modules on Linux >= 5.12 NCCL can use DMA-BUF instead and needs no module "
         "(https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-rdma.html)")


def kernel_release(text: object) -> Version | None:
    """'6.8.0-45-generic' -> Version('6.8'); None when no release."""
    match = _KERNEL_RELEASE.match(text) if isinstance(text, str) else None
    return parse_version(f"{match.group(1)}.{match.group(2)}") if match else None


def dmabuf_possible(kernel: object, flavor: object) -> tuple[bool | None, str]:
    """Whether NCCL could register GPU memory through DMA-BUF instead of a peer-memory module:
    True/False, or None when the facts do not say; and why, in words."""
    release = kernel_release(kernel)
    if release is not None and release < Version(DMABUF_MIN_KERNEL):
        return False, f"kernel {kernel} is older than {DMABUF_MIN_KERNEL}, so DMA-BUF cannot stand in"
    if flavor == "proprietary":
        return False, "the proprietary NVIDIA kernel module exports no DMA-BUF for RDMA, so DMA-BUF cannot stand in"
    if release is not None and flavor == "open":
        return True, f"kernel {kernel} and the open NVIDIA kernel module allow DMA-BUF"
    unknown = [what for what, known in (("the kernel release", release is not None), ("the kernel module flavour (open or proprietary)", flavor in ("open", "proprietary"))) if not known]
    return None, f"whether DMA-BUF can stand in (Linux >= {DMABUF_MIN_KERNEL} and the open kernel module) is unknown: {' and '.join(unknown)} not known"


@rule("nccl-gdr-module-missing", needs=("fabric.ib_devices", "fabric.peermem", "driver.loaded"), optional=("system.kernel", "driver.module_flavor"))
def nccl_gdr_module_missing(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Where the host has an InfiniBand or RoCE port in state ACTIVE (/sys/class/infiniband)
        and the NVIDIA kernel module is loaded, checks that a peer-memory client is loaded
        where NCCL looks for one (/sys/kernel/mm/memory_peers/nv_mem/version,
        .../nv_mem_nc/version, /sys/module/nvidia_peermem/version; NVIDIA/nccl
        src/transport/net_ib/gdr.cc). Silent where DMA-BUF can stand in: Linux >= 5.12 with
        the open GPU kernel module (/proc/driver/nvidia/version says "Open Kernel Module");
        where the facts do not say, the message says so. Reading a report, it takes NCCL's
        "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)" (NCCL before 2.13
        and the nccl-rdma-sharp plugin before mid-2023), unless the same log shows "GPU Direct
        RDMA (DMABUF) enabled" or "(nvidia-peermem) enabled" for an HCA.

    Why is this bad?
        Without GPUDirect RDMA the NIC cannot read or write GPU memory: NCCL's IB transport
        offers only host pointers and stages every inter-node transfer through a host
        bounce buffer (`via NET/IB/0` instead of `via NET/IB/0/GDRDMA`), a slower all-reduce
        and more CPU/PCIe traffic. It is a frequent one-node slip: a module not loaded after
        a reboot or a driver update on one node, the others fine (NVIDIA/nccl#897:
        "Perhaps the nv_peer_mem or nvidia-peermem module is not installed/loaded on the
        second node?"; the fix there was `modprobe nvidia-peermem`).

    Example
            $ ls /sys/class/infiniband; ls /sys/module | grep -E 'peer'
            mlx5_0                      # invalid: an HCA, no nvidia_peermem
            $ ls /sys/module/nvidia_peermem
            version ...                 # valid

    Fix
        Load the module on every node and at boot:

            sudo modprobe nvidia-peermem
            echo nvidia-peermem | sudo tee /etc/modules-load.d/nvidia-peermem.conf
    """
    active = [f"{d['name']}:{p['port']}" for d in facts["fabric.ib_devices"] or [] if isinstance(d, dict)
              for p in d.get("ports", []) if p.get("state") == "ACTIVE"]
    if not active or facts["driver.loaded"] is not True:
        return None
    peermem = facts["fabric.peermem"] or {}
    if peermem.get("loaded"):
        return None
    possible, why = dmabuf_possible(facts.get("system.kernel"), facts.get("driver.module_flavor"))
    if possible:
        return None
    return Hit(f"InfiniBand/RoCE port(s) {', '.join(active[:4])}{', ...' if len(active) > 4 else ''} are ACTIVE and the NVIDIA driver is loaded, "
               f"but no peer-memory module (nvidia-peermem, nv_peer_mem) is: NCCL turns GPUDirect RDMA off and stages every inter-node "
               f"transfer through host memory; {why}",
               evidence={"fabric.ib_devices": active, "fabric.peermem": peermem, "system.kernel": facts.get("system.kernel"),
                         "driver.module_flavor": facts.get("driver.module_flavor")},
               fix=PEERMEM_FIX)


RULES: tuple[Rule, ...] = (
    nvswitch_fabricmanager_not_running,
    fabricmanager_driver_mismatch,
    gpu_memory_repair_pending,
    gpu_xid_errors,
    gpu_mig_enabled,
    nccl_transport_disabled,
    nccl_p2p_disabled_nvlink,
    nccl_socket_interface_missing,
    nccl_net_plugin_failed,
    rdma_memlock_too_low,
    nccl_gdr_module_missing,
)

# Judged by `smoke allreduce` with nccl.run known (and by a check over a saved facts file
# that holds it); the first two of RULES again, because the log shows the run's own env.
RUN_RULES: tuple[Rule, ...] = (nccl_socket_with_ib, nccl_runtime_not_torch, nccl_transport_disabled, nccl_p2p_disabled_nvlink,
                               nccl_socket_virtual_interfaces)
