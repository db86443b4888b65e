"""What a source build has to work with: CPU cores, available memory, and free disk where
it will write (--workdir, else ./fwdoctor-build).

Shell equivalents:
    nproc; grep MemAvailable /proc/meminfo; df -B1 --output=avail WORKDIR

Free disk is measured at the nearest folder of the work folder that exists (it is created
later). Under --root the disk and the CPUs are the target machine's, not this one's:
they are unknown unless the root holds a /proc/cpuinfo.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Any, Iterable

from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, probe

_MEM_AVAILABLE = re.compile(r"^MemAvailable:\s+(\d+)\s+kB", re.M)
_PROCESSOR = re.compile(r"^processor\s*:", re.M)


def parse_mem_available(text: str) -> int | None:
    """/proc/meminfo's MemAvailable in bytes; None when absent."""
    match = _MEM_AVAILABLE.search(text or "")
    return int(match.group(1)) * 1024 if match else None


def cores(host: Host) -> int | None:
    """The CPUs this process may use on a live host (a cgroup or taskset may allow fewer than
    the machine has); the processors in /proc/cpuinfo under --root."""
    if host.live:
        try:
            return len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            return os.cpu_count()
    found = len(_PROCESSOR.findall(host.read_text("/proc/cpuinfo") or ""))
    return found or None


def mem_available(host: Host) -> int | None:
    return parse_mem_available(host.read_text("/proc/meminfo") or "")


def existing_parent(host: Host, path: str) -> str:
    """`path`, or the nearest folder above it that exists."""
    probe_path = posixpath.normpath(path)
    while not host.exists(probe_path) and probe_path != "/":
        probe_path = posixpath.dirname(probe_path)
    return probe_path


def disk_free(host: Host, path: str) -> dict[str, Any] | None:
    """{"path", "checked_at", "bytes"} free to an unprivileged user at `path`; None where it
    cannot be measured (a root folder lives on this machine's disk, not the target's)."""
    if not host.live:
        return None
    where = existing_parent(host, path)
    try:
        st = os.statvfs(host.real_path(where))
    except OSError:
        return None
    return {"path": path, "checked_at": where, "bytes": st.f_bavail * st.f_frsize}


@probe("build-resources", provides=("build.cores", "build.mem_available_bytes", "build.disk_free"))
def build_resources(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    count = cores(host)
    if count:
        yield Fact("build.cores", count, source="sched_getaffinity" if host.live else "/proc/cpuinfo")
    else:
        yield Fact.unknown("build.cores", "no /proc/cpuinfo in the root")
    mem = mem_available(host)
    if mem is not None:
        yield Fact("build.mem_available_bytes", mem, source="/proc/meminfo MemAvailable")
    else:
        yield Fact.unknown("build.mem_available_bytes", "no MemAvailable in /proc/meminfo")
    # Without --workdir the build writes under ./fwdoctor-build: the folder fwdoctor runs in.
    workdir = facts.get("request.build.workdir") or (posixpath.join(os.getcwd(), "fwdoctor-build") if host.live else None)
    free = disk_free(host, workdir) if workdir else None
    if free is not None:
        yield Fact("build.disk_free", free, source=f"statvfs({free['checked_at']})")
    elif not workdir:
        yield Fact.unknown("build.disk_free", "no work folder requested")
    elif not host.live:
        yield Fact.unknown("build.disk_free", "a root folder's free disk is not the target machine's")
    else:
        yield Fact.unknown("build.disk_free", f"statvfs failed at {existing_parent(host, workdir)}")


PROBES: tuple[Probe, ...] = (build_resources,)
