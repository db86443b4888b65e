"""The operating system around the GPU stack: host name, distribution, kernel, CPU
architecture, glibc, container, /dev/shm.

Shell equivalents:
    hostname; cat /etc/os-release; uname -rm; getconf GNU_LIBC_VERSION
    ls /.dockerenv /run/.containerenv; cat /proc/1/cgroup; ls /dev/nvidia*
    df -B1 /dev/shm; cmake --version; ninja --version

With --root nothing runs: the host name is the root's /etc/hostname, the kernel comes
from DIR/proc/sys/kernel/osrelease, glibc from the libc file's name or its version
banner, /dev/shm from DIR/proc/mounts; what cannot be read is UNKNOWN with the reason.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Iterable

from fwdoctor.host import Host, UnreadableError
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, Read, probe

OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")
LIBC_PATHS = (
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6",
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib/aarch64-linux-gnu/libc.so.6",
    "/lib64/libc.so.6",
    "/usr/lib64/libc.so.6",
    "/lib/libc.so.6",
)
LD_PATHS = ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", "/lib/ld-linux-x86-64.so.2")
MUSL_GLOB = ("/lib", "ld-musl-*.so.1")
# What this probe reads (fwdoctor.image.keep keeps only declared reads): libc.so.6's version
# banner is looked for in its first MAX_READ_BYTES, wherever a merged /usr puts it.
# /etc/hostname holds one name of at most 64 characters (hostname(5)); 4 KiB leaves room
# for comment lines before it.
HOSTNAME_FILE = "/etc/hostname"
HOSTNAME_READ_BYTES = 4096
READS = (Read("/etc/os-release"), Read("/usr/lib/os-release"), Read("**/libc.so.6"), Read("/proc/**"),
         Read(HOSTNAME_FILE, limit=HOSTNAME_READ_BYTES))
# Directory -> architecture, for a root folder (nothing there can be asked `uname -m`).
ARCH_MARKERS = (
    ("/usr/lib/x86_64-linux-gnu", "x86_64"),
    ("/lib/x86_64-linux-gnu", "x86_64"),
    ("/lib64/ld-linux-x86-64.so.2", "x86_64"),
    ("/usr/lib/aarch64-linux-gnu", "aarch64"),
    ("/lib/aarch64-linux-gnu", "aarch64"),
    ("/lib/ld-linux-aarch64.so.1", "aarch64"),
)
# Words in /proc/1/cgroup (cgroup v1) that mean PID 1 runs in a container.
CONTAINER_CGROUP_WORDS = ("docker", "kubepods", "containerd", "lxc", "libpod", "podman", "crio")

_GLIBC_NAME = re.compile(r"^(?:libc|ld)-(\d+\.\d+)\.so$")
_GLIBC_BANNER = re.compile(rb"GNU C Library [^\n\x00]*?release version (\d+\.\d+)")
_SIZE = re.compile(r"^(\d+)([kKmMgG]?)$")


# ----------------------------------------------------------------------------- parsers
def parse_os_release(text: str) -> dict[str, str] | None:
    """KEY=value lines (values optionally quoted) -> {"id", "version_id", "pretty"}; None
    when there is no ID."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep or not key or key.startswith("#"):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    if not values.get("ID"):
        return None
    return {"id": values["ID"], "version_id": values.get("VERSION_ID", ""), "pretty": values.get("PRETTY_NAME", "")}


def glibc_from_filename(name: str) -> str | None:
    """"libc-2.31.so" / "ld-2.31.so" (glibc < 2.34 names its files by version) -> "2.31"."""
    match = _GLIBC_NAME.match(posixpath.basename(name))
    return match.group(1) if match else None


def glibc_from_banner(data: bytes) -> str | None:
    """The version in libc.so.6's own banner: "GNU C Library (Debian GLIBC 2.36-9+deb12u14)
    stable release version 2.36." -> "2.36"."""
    match = _GLIBC_BANNER.search(data)
    return match.group(1).decode() if match else None


def parse_shm_size(mounts: str) -> int | None:
    """The size= of the tmpfs at /dev/shm in /proc/mounts, in bytes; None when absent or
    not given in bytes/k/m/g (a bare tmpfs defaults to half the RAM, unknown here)."""
    size = None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[1] == "/dev/shm":
            size = None  # a later mount over /dev/shm wins, as in the kernel
            for option in parts[3].split(","):
                if option.startswith("size="):
                    match = _SIZE.match(option[5:])
                    if match:
                        unit = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[match.group(2).lower()]
                        size = int(match.group(1)) * unit
    return size


def parse_hostname_file(text: str) -> str | None:
    """The name in an /etc/hostname: its first line that is neither blank nor a comment,
    stripped; None when there is none. hostname(5) (systemd): "It should contain a single
    newline-terminated hostname string. Comments (lines starting with a `#') are ignored."
    (https://www.freedesktop.org/software/systemd/man/247/hostname.html)"""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line
    return None


def cgroup_says_container(text: str) -> bool:
    return any(word in line for line in text.splitlines() for word in CONTAINER_CGROUP_WORDS)


# ----------------------------------------------------------------------------- probes
@probe(
    "system",
    provides=("system.hostname", "system.os", "system.kernel", "system.arch", "system.glibc", "system.container", "system.shm_bytes",
              "system.nvidia_device_nodes"),
)
def system_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    yield hostname_fact(host)
    yield _os(host)
    yield _kernel(host)
    yield _arch(host)
    yield _glibc(host)
    yield _container(host)
    yield _shm(host)
    yield _nvidia_device_nodes(host)


def hostname_fact(host: Host) -> Fact:
    """`system.hostname`: whose facts these are. The live host's own name (gethostname(),
    what `hostname` prints); a root folder has no kernel to ask, so its /etc/hostname (None
    when it has none). An image names no host: the /etc/hostname in it is Docker's (written
    for each container: `docker export` shows the name of the machine that created it, a
    `docker save` of the same image shows none), so it would name whoever inspected it."""
    if host.live:
        try:
            # The kernel's node name, which is what gethostname(2) returns on Linux
            # (glibc asks uname(2)); os.uname spares every check importing socket (~2 ms).
            return Fact("system.hostname", os.uname().nodename, source="gethostname()")
        except OSError as exc:
            return Fact.unknown("system.hostname", f"gethostname(): {exc.strerror or exc}")
    if host.is_image:
        return Fact("system.hostname", None, source="an image (its /etc/hostname, if any, is Docker's per-container file)")
    try:
        text = host.read_text(HOSTNAME_FILE, limit=HOSTNAME_READ_BYTES)
    except UnreadableError as exc:  # a FIFO or a folder in its place: the other facts still count
        return Fact.unknown("system.hostname", f"cannot read {HOSTNAME_FILE}: {exc.reason}")
    if text is None:
        return Fact("system.hostname", None, source=f"no {HOSTNAME_FILE}")
    name = parse_hostname_file(text)
    if name is None:
        return Fact("system.hostname", None, source=f"{HOSTNAME_FILE} (no name in it)")
    return Fact("system.hostname", name, source=HOSTNAME_FILE)


def _os(host: Host) -> Fact:
    for path in OS_RELEASE:
        text = host.read_text(path)
        if text is not None:
            return Fact("system.os", parse_os_release(text), source=path)
    return Fact("system.os", None, source="no /etc/os-release")


def _kernel(host: Host) -> Fact:
    if host.live:
        return Fact("system.kernel", os.uname().release, source="uname")
    text = host.read_text("/proc/sys/kernel/osrelease")
    if text and text.strip():
        return Fact("system.kernel", text.strip(), source="/proc/sys/kernel/osrelease")
    return Fact.unknown("system.kernel", "a root folder has no running kernel (no /proc/sys/kernel/osrelease)")


def _arch(host: Host) -> Fact:
    if host.live:
        return Fact("system.arch", os.uname().machine, source="uname")
    for marker, arch in ARCH_MARKERS:
        if host.exists(marker):
            return Fact("system.arch", arch, source=marker)
    return Fact.unknown("system.arch", "no multiarch library folder or dynamic loader found in the root")


def _glibc(host: Host) -> Fact:
    if host.live:
        try:
            value = os.confstr("CS_GNU_LIBC_VERSION") or ""
        except (ValueError, OSError):
            value = ""
        match = re.fullmatch(r"glibc (\d+\.\d+)", value.strip())
        if match:
            return Fact("system.glibc", match.group(1), source="confstr(CS_GNU_LIBC_VERSION)")
        return Fact.unknown("system.glibc", f"confstr(CS_GNU_LIBC_VERSION) gave {value!r}")
    for path in (*LIBC_PATHS, *LD_PATHS):
        if not host.exists(path):
            continue
        version = glibc_from_filename(host.resolve(path))
        if version:
            return Fact("system.glibc", version, source=f"{path} -> {host.resolve(path)}")
        if path in LIBC_PATHS:
            data = host.read_bytes(path)
            version = glibc_from_banner(data or b"")
            if version:
                return Fact("system.glibc", version, source=f"{path} (version banner)")
    if host.glob(*MUSL_GLOB):
        return Fact("system.glibc", None, source="musl libc, no glibc")
    return Fact.unknown("system.glibc", "no libc.so.6 whose name or banner gives a version")


def _container(host: Host) -> Fact:
    for marker in ("/.dockerenv", "/run/.containerenv"):
        if host.exists(marker):
            return Fact("system.container", True, source=marker)
    cgroup = host.read_text("/proc/1/cgroup")
    if cgroup is not None and cgroup_says_container(cgroup):
        return Fact("system.container", True, source="/proc/1/cgroup")
    if host.env.get("container"):
        return Fact("system.container", True, source="$container")
    return Fact("system.container", False, source="no /.dockerenv, /run/.containerenv or container cgroup")


def _nvidia_device_nodes(host: Host) -> Fact:
    """The names of /dev/nvidia* (nvidia0, nvidiactl, nvidia-uvm, ...): what the NVIDIA
    container runtime (--gpus) puts into a container. Names only. An image or a copied tree
    usually has no /dev (Docker creates it at `docker run`): UNKNOWN then."""
    if not host.is_dir("/dev"):
        return Fact.unknown("system.nvidia_device_nodes", "no /dev here (an image or a copied tree has none)")
    names = sorted(posixpath.basename(p) for p in host.glob("/dev", "nvidia*"))
    return Fact("system.nvidia_device_nodes", names, source="/dev/nvidia*")


def _shm(host: Host) -> Fact:
    if host.live:
        try:
            st = os.statvfs("/dev/shm")
        except OSError as exc:
            return Fact.unknown("system.shm_bytes", f"statvfs /dev/shm: {exc.strerror or exc}")
        return Fact("system.shm_bytes", st.f_frsize * st.f_blocks, source="statvfs(/dev/shm)")
    mounts = host.read_text("/proc/mounts")
    if mounts is None:
        return Fact.unknown("system.shm_bytes", "a root folder has no mounts (no /proc/mounts)")
    size = parse_shm_size(mounts)
    if size is None:
        return Fact.unknown("system.shm_bytes", "/proc/mounts gives no size= for /dev/shm")
    return Fact("system.shm_bytes", size, source="/proc/mounts")


# cmake and ninja are the source build's (fwdoctor.probes.build_tools: build.cmake,
# build.ninja): a plain check has no rule that reads them and does not run them.
PROBES: tuple[Probe, ...] = (system_probe,)
