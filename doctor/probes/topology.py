"""GPU topology and fabric: NVLink, InfiniBand/RoCE, NVSwitch and its fabric manager,
MIG, GPU memory-repair state, Xid events, and the NCCL_* environment.

Shell equivalents:
    nvidia-smi nvlink -s; nvidia-smi topo -m                 # topology.nvlink (NVML; topo -m when NVML cannot), topology.matrix
    cat /sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}   # fabric.ib_devices
    ls /sys/kernel/mm/memory_peers/*/version /sys/module/{nvidia_peermem,nv_peer_mem}   # fabric.peermem
    lspci -d 10de:22a3; lspci -d 10de:1af1                     # fabric.nvswitches
    dpkg -l 'nvidia-fabricmanager*'; pgrep nv-fabricmanage     # fabric.fabricmanager
    nvidia-smi -q -d PAGE_RETIREMENT,ROW_REMAPPER              # gpus.health
    dmesg | grep 'NVRM: Xid'                                   # gpus.xid_events
    dmesg | grep -A4 'NVRM: The NVIDIA'                        # driver.legacy_notices
    env | grep ^NCCL_                                          # nccl.env
    ls /sys/class/net                                          # net.interfaces
    stat -c %a /dev/shm; test -w /dev/shm                      # system.shm_access
    ls /dev/infiniband                                         # fabric.rdma_nodes
    grep 'Max locked memory' /proc/self/limits; grep CapEff /proc/self/status   # system.memlock (live only)

NVLink and memory-repair state come from the NVML child of probes/driver.py (its per-GPU
"nvlink" and "health"), `nvidia-smi topo -m` is the fallback on a live host. Everything
else is read from files and works the same under --root; what a root folder cannot say
(a running process, the kernel ring buffer) is UNKNOWN with the reason.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Any, Iterable

from fwdoctor.host import Host
from fwdoctor.kernlog import parse_legacy_notices, parse_xid_lines  # shared with triage; importable from here as before
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.proclimits import parse_cap_ipc_lock, parse_memlock_limits
from fwdoctor.probes.base import Probe, Read, probe
from fwdoctor.versions import deb_upstream_version

IB_CLASS = "/sys/class/infiniband"
PCI_DEVICES = "/sys/bus/pci/devices"
DPKG_STATUS = "/var/lib/dpkg/status"
FM_BINARY = "/usr/bin/nv-fabricmanager"
KERN_LOGS = ("/var/log/kern.log", "/var/log/messages", "/var/log/syslog")
KERN_LOG_LIMIT = 4 * 1024 * 1024
READS = (Read(IB_CLASS + "/**"), Read(DPKG_STATUS), *(Read(p, limit=KERN_LOG_LIMIT) for p in KERN_LOGS))

# NVSwitch PCI device ids (vendor 0x10de), as pci.ids names them:
# pciutils/pciids@c1c12547d626ebf05fd0223144ad87fab5e95d06:pci.ids
# ("1af1  GA100 [A100 NVSwitch]", "22a3  GH100 [H100 NVSwitch]"); the same two ids
# aws/aws-parallelcluster-cookbook counts before starting the fabric manager. Blackwell's
# NVLink 5 switches are managed over InfiniBand (NVLSM), not listed here.
NVSWITCH_IDS = {"0x1af1": "A100 NVSwitch", "0x22a3": "H100 NVSwitch"}
NVIDIA_VENDOR = "0x10de"
# /proc/PID/comm holds at most 15 characters: nv-fabricmanager shows as "nv-fabricmanage"
# (systemctl prints "Main PID: 29850 (nv-fabricmanage)", bottlerocket-kernel-kit PR 142).
FM_COMM = "nv-fabricmanage"

_DPKG_FM = re.compile(r"^nvidia-fabricmanager(?:-\d+)?$")
_NV = re.compile(r"^NV(\d+)$")


# ----------------------------------------------------------------------------- parsers
def parse_topo_matrix(text: str) -> dict[str, Any] | None:
    """`nvidia-smi topo -m` -> {"devices": ["GPU0", "NIC0", ...], "links": {"GPU0": {"GPU1":
    "NV12", ...}}, "cpu_affinity": {"GPU0": "0-15,32-47"}, "numa_affinity": {...}}; None
    without a header row. Columns are split on whitespace (the tool pads with spaces or
    tabs); the device columns are the header's GPUn/NICn/mlx5_n names before "CPU Affinity"."""
    lines = [line for line in text.splitlines()]
    header_at = next((i for i, line in enumerate(lines) if re.match(r"^\s+GPU0\b", line)), None)
    if header_at is None:
        return None
    header = lines[header_at].split()
    devices = []
    for token in header:
        if token == "CPU":
            break
        devices.append(token)
    out: dict[str, Any] = {"devices": devices, "links": {}, "cpu_affinity": {}, "numa_affinity": {}}
    for line in lines[header_at + 1:]:
        if not line.strip() or line.strip().startswith("Legend"):
            break
        tokens = line.split()
        name, cells = tokens[0], tokens[1:1 + len(devices)]
        if name not in devices or len(cells) < len(devices):
            continue
        out["links"][name] = {dev: cell for dev, cell in zip(devices, cells) if dev != name}
        rest = tokens[1 + len(devices):]
        if rest:
            out["cpu_affinity"][name] = rest[0]
        if len(rest) > 1:
            out["numa_affinity"][name] = rest[1]
    return out if out["links"] else None


def nvlink_from_matrix(matrix: dict[str, Any]) -> list[dict[str, Any]]:
    """Per GPU of a topo matrix: its NVLink peers and the widest bond ("NV12" -> 12 links)."""
    out = []
    for name in matrix["devices"]:
        if not name.startswith("GPU") or name not in matrix["links"]:
            continue
        peers, widest = [], 0
        for other, cell in matrix["links"][name].items():
            m = _NV.match(cell)
            if m and other.startswith("GPU"):
                peers.append(int(other[3:]))
                widest = max(widest, int(m.group(1)))
        out.append({"index": int(name[3:]), "links": widest, "active": widest, "peers": sorted(peers), "source": "nvidia-smi topo -m"})
    return out


def parse_ib_port(values: dict[str, str | None]) -> dict[str, Any]:
    """One port's sysfs files, in the kernel's formats (drivers/infiniband/core/sysfs.c:
    state "4: ACTIVE", phys_state "5: LinkUp", rate "400 Gb/sec (4X NDR)", link_layer
    "InfiniBand" | "Ethernet") -> {"state": "ACTIVE", "phys_state": "LinkUp",
    "rate_gbps": 400.0, "rate": "400 Gb/sec (4X NDR)", "link_layer": "InfiniBand"}."""
    def after_colon(text: str | None) -> str | None:
        if text is None:
            return None
        return text.strip().partition(": ")[2] or text.strip() or None

    rate_text = (values.get("rate") or "").strip() or None
    m = re.match(r"^(\d+(?:\.\d+)?) Gb/sec", rate_text or "")
    return {
        "state": after_colon(values.get("state")),
        "phys_state": after_colon(values.get("phys_state")),
        "rate": rate_text,
        "rate_gbps": float(m.group(1)) if m else None,
        "link_layer": (values.get("link_layer") or "").strip() or None,
    }


def parse_dpkg_fabricmanager(text: str) -> dict[str, str] | None:
    """The installed nvidia-fabricmanager[-NNN] package in dpkg's status file: {"package",
    "version"} with the upstream version ("535.129.03-1" -> "535.129.03"), or None."""
    if "Package: nvidia-fabricmanager" not in text:  # most hosts: skip splitting a 1 MB file
        return None
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(":")
            if sep and not line.startswith(" "):
                fields[key.strip()] = value.strip()
        if _DPKG_FM.match(fields.get("Package", "")) and "install ok installed" in fields.get("Status", ""):
            version = fields.get("Version", "")
            return {"package": fields["Package"], "version": deb_upstream_version(version) or version}
    return None


# ----------------------------------------------------------------------------- probes
@probe("nvlink", provides=("topology.nvlink", "topology.matrix"))
def nvlink_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    gpus = facts.get("gpus.list")
    from_nvml = [g for g in gpus or [] if g.get("source") == "nvml"]
    matrix = None
    # The fallback only: where NVML answered, `nvidia-smi topo -m` (a second driver
    # round-trip, tenths of a second) would add nothing a rule reads.
    if not from_nvml and host.live and host.which("nvidia-smi"):
        result = host.run([host.which("nvidia-smi") or "nvidia-smi", "topo", "-m"])
        if result is not None and result.ok:
            matrix = parse_topo_matrix(result.stdout)
            if matrix is None:
                first = (result.stdout.strip().splitlines() or [""])[0]
                yield ProbeFailure("nvlink", f"nvidia-smi topo -m: unparseable output: {first[:200]!r}")
        elif result is not None:
            yield ProbeFailure("nvlink", f"nvidia-smi topo -m: {result.describe_failure()}")
    if matrix is not None:
        yield Fact("topology.matrix", matrix, source="nvidia-smi topo -m")
    else:
        why = "not needed: NVML answered for NVLink" if from_nvml else "nvidia-smi topo -m not run (no nvidia-smi, or not a live host)"
        yield Fact.unknown("topology.matrix", why)
    if from_nvml:
        links = [{"index": g.get("index"), "links": (g.get("nvlink") or {}).get("links", 0), "active": (g.get("nvlink") or {}).get("active", 0),
                  "peers": None, "source": "nvml"} for g in from_nvml]
        yield Fact("topology.nvlink", links, source="nvml")
    elif matrix is not None:
        yield Fact("topology.nvlink", nvlink_from_matrix(matrix), source="nvidia-smi topo -m")
    elif gpus == []:
        yield Fact("topology.nvlink", [], source="gpus.list (no GPU)")
    else:
        yield Fact.unknown("topology.nvlink", "neither NVML nor nvidia-smi topo -m answered (a root folder, or no driver)")


# Where a loaded peer-memory client shows itself, as NCCL looks for it
# (NVIDIA/nccl@5067397c:src/transport/net_ib/gdr.cc, ibGdrSupportInitOnce: memory_peers/nv_mem,
# memory_peers/nv_mem_nc, /sys/module/nvidia_peermem/version; NCCL 2.13's net_ib.cc also
# memory_peers/nvidia-peermem), plus the legacy module's own /sys/module entry.
PEERMEM_PATHS = ("/sys/kernel/mm/memory_peers/nv_mem/version", "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
                 "/sys/kernel/mm/memory_peers/nvidia-peermem/version", "/sys/module/nvidia_peermem/version",
                 "/sys/module/nv_peer_mem/version")


def peermem_fact(host: Host) -> Fact:
    """fabric.peermem: {"loaded": bool, "found": the first path present or None}; UNKNOWN
    without /sys/module (no sysfs: an image, a copied tree)."""
    found = next((p for p in PEERMEM_PATHS if host.exists(p)), None)
    if found is None and not host.is_dir("/sys/module"):
        return Fact.unknown("fabric.peermem", "no /sys/module here (an image or a copied tree without sysfs)")
    return Fact("fabric.peermem", {"loaded": found is not None, "found": found}, source=", ".join(PEERMEM_PATHS))


@probe("infiniband", provides=("fabric.ib_devices", "fabric.peermem"))
def infiniband_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    yield peermem_fact(host)
    if not host.is_dir("/sys/class"):
        yield Fact.unknown("fabric.ib_devices", "no /sys/class here (an image or a copied tree without sysfs)")
        return
    devices = []
    for name in sorted(host.listdir(IB_CLASS)):
        base = posixpath.join(IB_CLASS, name)
        ports = []
        for port in sorted(host.listdir(posixpath.join(base, "ports")), key=lambda p: int(p) if p.isdigit() else 0):
            pbase = posixpath.join(base, "ports", port)
            values = {f: host.read_text(posixpath.join(pbase, f), limit=256) for f in ("state", "phys_state", "rate", "link_layer")}
            ports.append({"port": int(port) if port.isdigit() else port, **parse_ib_port(values)})
        devices.append({"name": name, "ports": ports})
    yield Fact("fabric.ib_devices", devices, source=IB_CLASS)


@probe("nvswitch", provides=("fabric.nvswitches", "fabric.fabricmanager"))
def nvswitch_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    if host.is_dir(PCI_DEVICES):
        found = []
        for slot in sorted(host.listdir(PCI_DEVICES)):
            base = posixpath.join(PCI_DEVICES, slot)
            vendor = (host.read_text(posixpath.join(base, "vendor"), limit=64) or "").strip().lower()
            device = (host.read_text(posixpath.join(base, "device"), limit=64) or "").strip().lower()
            if vendor == NVIDIA_VENDOR and device in NVSWITCH_IDS:
                found.append({"slot": slot, "device_id": device, "name": NVSWITCH_IDS[device]})
        yield Fact("fabric.nvswitches", found, source=PCI_DEVICES)
    else:
        yield Fact.unknown("fabric.nvswitches", f"no {PCI_DEVICES} here (an image or a copied tree has no sysfs)")
    status = host.read_text(DPKG_STATUS)  # the first MAX_READ_BYTES: as the Read above declares
    package = parse_dpkg_fabricmanager(status) if status else None
    binary = FM_BINARY if host.exists(FM_BINARY) else None
    running: bool | None = None
    if host.live and (binary or package or facts.get("fabric.nvswitches")):
        running = _process_running(host, FM_COMM)  # a /proc walk: only where it can matter
    yield Fact("fabric.fabricmanager", {
        "binary": binary,
        "package": package["package"] if package else None,
        "version": package["version"] if package else None,
        "running": running,  # None: not knowable here (a root folder: no processes)
    }, source=f"{DPKG_STATUS}, {FM_BINARY}" + (", /proc/*/comm" if host.live else ""))


def _process_running(host: Host, comm: str) -> bool:
    for pid in host.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            text = host.read_text(f"/proc/{pid}/comm", limit=64)
        except OSError:  # the process ended, or another user's and hidden
            continue
        if text is not None and text.strip() == comm:
            return True
    return False


@probe("gpu-health", provides=("gpus.health", "gpus.xid_events", "driver.legacy_notices"))
def health_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    gpus = facts.get("gpus.list")
    nvml = [g for g in gpus or [] if g.get("source") == "nvml"]
    if nvml:
        yield Fact("gpus.health", [{"index": g.get("index"), "bus_id": g.get("bus_id"), **(g.get("health") or {})} for g in nvml], source="nvml")
    elif gpus == []:
        yield Fact("gpus.health", [], source="gpus.list (no GPU)")
    else:
        yield Fact.unknown("gpus.health", "retired pages and row remapping are NVML queries: no NVML answer here")
    text, where = _kernel_log(host)
    # Read even with no module loaded: a module that found only GPUs it will not drive
    # ("No NVIDIA GPU found") does not stay loaded, and its notice says why.
    if text is None:
        yield Fact.unknown("driver.legacy_notices", where)
    else:
        yield Fact("driver.legacy_notices", parse_legacy_notices(text), source=where)
    if facts.get("driver.loaded") is False:
        yield Fact("gpus.xid_events", [], source="no NVIDIA kernel module loaded: no Xid to report")
    elif text is None:
        yield Fact.unknown("gpus.xid_events", where)
    else:
        yield Fact("gpus.xid_events", parse_xid_lines(text), source=where)


def _kernel_log(host: Host) -> tuple[str | None, str]:
    """The kernel's messages: /dev/kmsg on a live host, read as `dmesg` reads it (fwdoctor.kmsg:
    no process to start), or `dmesg` where the device cannot be opened (both are refused to
    non-root users where kernel.dmesg_restrict=1); else the first readable syslog file."""
    if host.live:
        from fwdoctor import kmsg

        try:
            # The NVIDIA module's records only: the Xid and legacy-notice parsers read nothing else.
            return kmsg.as_dmesg(kmsg.read_records(kmsg.KMSG, limit=KERN_LOG_LIMIT), containing=b"NVRM"), kmsg.KMSG
        except OSError:
            pass
        dmesg = host.which("dmesg")
        if dmesg:
            result = host.run([dmesg])
            if result is not None and result.ok:
                return result.stdout, "dmesg"
    for path in KERN_LOGS:
        try:
            text = host.read_text(path, limit=KERN_LOG_LIMIT)
        except OSError:
            continue
        if text is not None:
            return text, path
    return None, "kernel log not readable (dmesg refused or absent, no /var/log/kern.log, messages or syslog)"


@probe("nccl-env", provides=("nccl.env",))
def nccl_env_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    yield Fact("nccl.env", {k: v for k, v in sorted(host.env.items()) if k.startswith("NCCL_")}, source="environment")


NET_CLASS = "/sys/class/net"


@probe("net-interfaces", provides=("net.interfaces",))
def net_interfaces_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    """The network interface names NCCL_SOCKET_IFNAME is matched against (names only: which
    carry an IP address takes getifaddrs, which a root folder cannot answer)."""
    if not host.is_dir(NET_CLASS):
        yield Fact.unknown("net.interfaces", f"no {NET_CLASS} here (an image or a copied tree without sysfs)")
        return
    yield Fact("net.interfaces", sorted(host.listdir(NET_CLASS)), source=NET_CLASS)


SHM = "/dev/shm"
TMPFS_DEFAULT_MODE = "1777"  # tmpfs's root without mode=: "defaults to 1777" (the kernel's Documentation/filesystems/tmpfs.rst)


@probe("shm-access", provides=("system.shm_access",))
def shm_access_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    """Whether a process may create NCCL's shared-memory segments in /dev/shm: live, its
    mode and this user's write access (access(2)); with --root, the tmpfs's mount options in
    DIR/proc/mounts (mode=, ro), since a copied tree keeps no directory modes."""
    if host.live:
        st = host.stat(SHM)
        if st is None:
            yield Fact.unknown("system.shm_access", f"no {SHM} here")
            return
        mode = format(st.st_mode & 0o7777, "04o")
        yield Fact("system.shm_access", {"mode": mode, "read_only": None, "writable": os.access(SHM, os.W_OK)},
                   source=f"stat({SHM}), access({SHM}, W_OK)")
        return
    mounts = host.read_text("/proc/mounts")
    if mounts is None:
        yield Fact.unknown("system.shm_access", "a root folder has no mounts (no /proc/mounts)")
        return
    access = parse_shm_access(mounts)
    if access is None:
        yield Fact.unknown("system.shm_access", f"/proc/mounts has no mount at {SHM}")
        return
    yield Fact("system.shm_access", access, source="/proc/mounts")


def parse_shm_access(mounts: str) -> dict[str, Any] | None:
    """{"mode", "read_only", "writable"} of the last mount at /dev/shm in /proc/mounts
    ("tmpfs /dev/shm tmpfs rw,nosuid,nodev,mode=755 0 0"); writable means every user may
    create files (mode's other-write bit, not read-only), what NCCL's ranks need."""
    found = None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[1] == SHM:
            found = parts[3].split(",")
    if found is None:
        return None
    mode = next((o.split("=", 1)[1] for o in found if o.startswith("mode=")), TMPFS_DEFAULT_MODE)
    read_only = "ro" in found
    try:
        other_write = bool(int(mode, 8) & 0o002)
    except ValueError:
        return {"mode": mode, "read_only": read_only, "writable": None}
    return {"mode": mode, "read_only": read_only, "writable": other_write and not read_only}


IB_DEV = "/dev/infiniband"


@probe("rdma-device-nodes", provides=("fabric.rdma_nodes",))
def rdma_nodes_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    """The device nodes libibverbs opens (/dev/infiniband/uverbs*, rdma_cm): a container sees
    /sys/class/infiniband from the host but these only when they were passed to it."""
    if not host.is_dir("/dev"):
        yield Fact.unknown("fabric.rdma_nodes", "no /dev here (an image: Docker creates /dev at `docker run`; a copied tree)")
        return
    yield Fact("fabric.rdma_nodes", sorted(host.listdir(IB_DEV)) if host.is_dir(IB_DEV) else [], source=IB_DEV)


SELF_LIMITS = "/proc/self/limits"
SELF_STATUS = "/proc/self/status"


@probe("memlock-limit", provides=("system.memlock",))
def memlock_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    """The locked-memory limit (RLIMIT_MEMLOCK, `ulimit -l`) of this process, which every
    RDMA memory registration is counted against unless the process has CAP_IPC_LOCK (the
    kernel's ib_umem_get). A limit belongs to a process: a root folder has none."""
    if not host.live:
        yield Fact.unknown("system.memlock", "the locked-memory limit belongs to a running process and a root folder has none "
                                             "(run `fwdoctor check` on the host, or inside the container, as the job's user)")
        return
    limits = host.read_text(SELF_LIMITS, limit=8192)
    memlock = parse_memlock_limits(limits) if limits else None
    if memlock is None:
        yield Fact.unknown("system.memlock", f"no 'Max locked memory' row in {SELF_LIMITS}")
        return
    memlock["ipc_lock"] = parse_cap_ipc_lock(host.read_text(SELF_STATUS, limit=16384) or "")
    yield Fact("system.memlock", memlock, source=f"{SELF_LIMITS}, {SELF_STATUS} (CapEff)")


PROBES: tuple[Probe, ...] = (nvlink_probe, infiniband_probe, nvswitch_probe, health_probe, nccl_env_probe, net_interfaces_probe, shm_access_probe,
                             rdma_nodes_probe, memlock_probe)
