"""The NVIDIA driver: kernel module, user-space libraries, nouveau, and what NVML says.

Shell equivalents:
    cat /sys/module/nvidia/version /proc/driver/nvidia/version
    ls /usr/lib/x86_64-linux-gnu/libcuda.so.* /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.*
    grep -E '^(nvidia|nouveau) ' /proc/modules
    python doctor/probes/nvml_child.py        # NVML, in a child process with a timeout
    nvidia-smi --query-gpu=... --format=csv,noheader,nounits   # when NVML is unavailable

NVML and nvidia-smi only run on a live host (`Host.run` returns None for --root). Their
answer is computed once per host and shared with probes/gpus.py (`nvml_snapshot`).
Parsers are pure and never raise: garbage in gives None, which the probe reports as a
`probe-failed` "unparseable output".
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
import signal
import sys
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from fwdoctor.smicsv import parse_smi_csv  # noqa: F401  (the live probe's reader; kept importable from here)
from fwdoctor.host import Host, UnreadableError
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, Read, probe

PROC_VERSION = "/proc/driver/nvidia/version"
SYS_VERSION = "/sys/module/nvidia/version"
PROC_MODULES = "/proc/modules"
READS = (Read(PROC_VERSION), Read(SYS_VERSION), Read(PROC_MODULES))  # kept from an image

# Where distributions, the runfile and the NVIDIA container toolkit put the user-space
# driver libraries (libcuda.so.X.Y.Z, libnvidia-ml.so.X.Y.Z).
LIB_DIRS: tuple[str, ...] = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/lib/aarch64-linux-gnu",
)
DRIVER_LIBS: tuple[str, ...] = ("libcuda", "libnvidia-ml")

CHILD = Path(__file__).resolve().with_name("nvml_child.py")

# The fields asked of nvidia-smi, in order. compute_cap needs a driver from ~2021 on;
# without it nvidia-smi refuses the whole query, so we retry without it.
SMI_FIELDS: tuple[str, ...] = (
    "index", "name", "uuid", "pci.bus_id", "memory.total", "compute_cap", "persistence_mode", "driver_version",
)

_VERSION = r"(\d+\.\d+(?:\.\d+)?)"
# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  515.76  Mon Sep 12 ..." (proprietary)
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ..."
_PROC_RE = re.compile(r"NVRM version:.*?(Open )?Kernel Module(?: for \S+)?\s+" + _VERSION + r"(?!\S)")
_LIB_RE = re.compile(r"^(libcuda|libnvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)$")
_SMI_HEADER_RE = re.compile(r"Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)")


# ----------------------------------------------------------------------------- parsers
@dataclass(frozen=True)
class ModuleVersion:
    version: str
    flavor: str  # "open" or "proprietary"


def parse_proc_version(text: str) -> ModuleVersion | None:
    """/proc/driver/nvidia/version -> version and flavor; None when unparseable.

    Tried once per line, from its first "NVRM version:" (a later one on the same line can
    only match if the first does): a search from every one re-ran the lazy ".*?" to the
    line's end each time, n^2 on a file of repeats in an inspected image."""
    at = text.find("NVRM version:")
    while at >= 0:
        match = _PROC_RE.match(text, at)
        if match:
            return ModuleVersion(match.group(2), "open" if match.group(1) else "proprietary")
        end = text.find("\n", at)
        at = text.find("NVRM version:", end) if end >= 0 else -1
    return None


def parse_sys_version(text: str) -> str | None:
    """/sys/module/nvidia/version holds only the version string ("580.95.05\\n")."""
    value = text.strip()
    return value if re.fullmatch(_VERSION, value) else None


def parse_modules(text: str) -> set[str]:
    """Module names from /proc/modules ("nvidia 56578048 2 nvidia_uvm, Live 0x0")."""
    names = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            names.add(parts[0])
    return names


def lib_version(filename: str) -> tuple[str, str] | None:
    """("libcuda", "580.95.05") from "libcuda.so.580.95.05"; None for anything else."""
    match = _LIB_RE.match(filename)
    return (match.group(1), match.group(2)) if match else None


def parse_smi_header(text: str) -> tuple[str | None, str | None] | None:
    """Plain `nvidia-smi` table -> (driver version, CUDA version); "N/A" reads as None."""
    match = _SMI_HEADER_RE.search(text)
    if not match:
        return None
    driver, cuda = (None if v in ("N/A", "") else v for v in match.groups())
    if driver is not None and not re.fullmatch(_VERSION, driver):
        return None
    if cuda is not None and not re.fullmatch(r"\d+\.\d+", cuda):
        return None
    return driver, cuda


# ----------------------------------------------------------------------------- NVML / nvidia-smi
@dataclass
class NvmlSnapshot:
    """What the GPU management stack says on a live host: NVML first, nvidia-smi second.

    `source` is "nvml", "nvidia-smi" or None (neither answered). `error` is the text of
    a failed NVML initialisation ("Driver/library version mismatch"); `why` explains an
    empty answer ("libnvidia-ml.so.1 not found").
    """

    source: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: list[dict[str, Any]] | None = None
    error: str | None = None
    why: str = ""
    failures: list[ProbeFailure] = field(default_factory=list)


_SNAPSHOTS: dict[int, tuple[weakref.ref, NvmlSnapshot]] = {}


def nvml_snapshot(host: Host, child_argv: Sequence[str] | None = None) -> NvmlSnapshot | None:
    """NVML's (or nvidia-smi's) answer for a live host, computed once per Host object;
    None for a root folder, where nothing runs."""
    if not host.live:
        return None
    cached = _SNAPSHOTS.get(id(host))
    if cached is not None and cached[0]() is host and child_argv is None:
        return cached[1]
    if child_argv is None and not _driver_traces(host):
        # No module, no nvidia-smi, no libnvidia-ml: starting a Python child to ask NVML
        # costs ~50 ms (a sixth of `check`) to learn nothing.
        snapshot = NvmlSnapshot()
        snapshot.why = "no NVIDIA driver on this host (no kernel module, nvidia-smi or libnvidia-ml): NVML not queried"
        _SNAPSHOTS[id(host)] = (weakref.ref(host, lambda _ref, key=id(host): _SNAPSHOTS.pop(key, None)), snapshot)
        return snapshot
    snapshot = _take_snapshot(host, child_argv or (sys.executable, str(CHILD)))
    if child_argv is None:
        _SNAPSHOTS[id(host)] = (weakref.ref(host, lambda _ref, key=id(host): _SNAPSHOTS.pop(key, None)), snapshot)
    return snapshot


def _driver_traces(host: Host) -> bool:
    """Whether anything of an NVIDIA driver is present that NVML or nvidia-smi could answer for."""
    if host.exists("/proc/driver/nvidia/version") or host.exists("/sys/module/nvidia"):
        return True
    if host.which("nvidia-smi"):
        return True
    return any(host.glob(directory, "libnvidia-ml.so*") for directory in LIB_DIRS)


def _take_snapshot(host: Host, child_argv: Sequence[str]) -> NvmlSnapshot:
    snap = NvmlSnapshot()
    result = host.run(list(child_argv))
    data: dict[str, Any] | None = None
    if result is None:
        snap.why = "NVML child did not run"
    elif result.timed_out or result.error:
        snap.failures.append(ProbeFailure("nvml", result.describe_failure()))
        snap.why = f"NVML query failed: {result.describe_failure()}"
    else:
        data = _child_json(result.stdout)
        if data is None:
            tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
            reason = f"NVML child: unparseable output (exit status {result.returncode}): {tail[0][:200]!r}"
            if result.returncode is not None and result.returncode < 0:
                # Killed by a signal before printing: libnvidia-ml crashed it (SIGSEGV, SIGABRT).
                reason = f"NVML child died of {_signal_name(-result.returncode)} (a crash inside libnvidia-ml): {tail[0][:200]!r}"
            snap.failures.append(ProbeFailure("nvml", reason))
            snap.why = reason
    if data is None and result is not None and result.timed_out:
        return snap  # nvidia-smi loads the same library: it would hang the same way
    if data is not None and data.get("ok"):
        snap.source = "nvml"
        snap.driver_version = data.get("driver_version")
        snap.cuda_version = data.get("cuda_driver_version")
        snap.gpus = [dict(g, source="nvml") for g in data.get("gpus", []) if isinstance(g, dict)]
        for gpu in snap.gpus:
            error = gpu.pop("error", None)
            if error:  # NVML counts the GPU but cannot reach it ("GPU is lost"): say so
                snap.failures.append(ProbeFailure("nvml", f"GPU {gpu.get('index')}: {error}"))
        return snap
    if data is not None:
        kind, error = data.get("kind"), str(data.get("error") or "")
        if kind == "no-library":
            snap.why = ("libnvidia-ml.so.1 not found: the NVIDIA user-space driver is not installed, "
                        "or not mounted into this container (docker run --gpus all)")
        elif kind == "no-pynvml":
            snap.why = f"NVML not queried: {error}"
        else:
            snap.error = f"NVML: {error}"
            snap.why = f"NVML failed to initialize: {error}"
    smi_query(host, snap)
    return snap


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _child_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        return value if isinstance(value, dict) and isinstance(value.get("ok"), bool) else None
    return None


def smi_query(host: Host, snap: NvmlSnapshot) -> None:
    """Fill `snap` from nvidia-smi (the fallback when NVML cannot be used)."""
    smi = host.which("nvidia-smi")
    if smi is None:
        return
    fields: tuple[str, ...] = SMI_FIELDS
    result = host.run([smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
    if result is not None and not result.ok and "compute_cap" in (result.stdout + result.stderr) and "not a valid field" in (result.stdout + result.stderr):
        fields = tuple(f for f in SMI_FIELDS if f != "compute_cap")
        result = host.run([smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
    if result is None:
        return
    if result.timed_out or result.error:
        snap.failures.append(ProbeFailure("nvidia-smi", result.describe_failure()))
        return
    if not result.ok and "No devices were found" in result.stdout + result.stderr:
        snap.source, snap.error, snap.gpus = "nvidia-smi", None, []  # a driver with no GPU to manage
        return
    if not result.ok:
        message = smi_error(result.stdout + "\n" + result.stderr)
        if message:
            snap.error = message
        else:
            snap.failures.append(ProbeFailure("nvidia-smi", result.describe_failure()))
        return
    gpus = parse_smi_csv(result.stdout, fields)
    if gpus is None:
        first = (result.stdout.strip().splitlines() or [""])[0]
        snap.failures.append(ProbeFailure("nvidia-smi", f"{smi} --query-gpu: unparseable output: {first[:200]!r}"))
        return
    snap.source = "nvidia-smi"
    snap.error = None
    snap.driver_version = next((g["driver_version"] for g in gpus if g.get("driver_version")), None)
    snap.gpus = [{k: v for k, v in g.items() if k != "driver_version"} | {"source": "nvidia-smi"} for g in gpus]
    header = host.run([smi])
    if header is not None and header.ok:
        parsed = parse_smi_header(header.stdout)
        if parsed is not None:
            snap.cuda_version = parsed[1]


def smi_error(text: str) -> str | None:
    """The one line in nvidia-smi's output that says why NVML failed, if any."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Failed to initialize NVML") or line.startswith("NVIDIA-SMI has failed"):
            return line
    return None


# ----------------------------------------------------------------------------- probes
# WSL2: the GPU belongs to the Windows driver, reached through /dev/dxg; its libcuda and
# nvidia-smi are mounted at /usr/lib/wsl/lib (libcuda.so, .so.1, .so.1.1 as plain files:
# microsoft/WSL#8587; /usr/lib/wsl/lib/nvidia-smi: microsoft/WSL#8174). There is no nvidia
# kernel module, so no /proc/driver/nvidia (nvidia-container-cli: "skipping kernel modules
# load on WSL", NVIDIA/nvidia-container-toolkit#289). The WSL2 kernel's release ends in
# "-microsoft-standard-WSL2".
WSL_LIB_DIR = "/usr/lib/wsl/lib"


# WSL 1's kernel is Microsoft's Linux emulation; its release names the Windows build it ships
# with ("4.4.0-19041-Microsoft", capital M); WSL 2's is a real kernel
# ("5.15.153.1-microsoft-standard-WSL2"; older ones "4.19.128-microsoft-standard").
_WSL1_RELEASE = re.compile(r"\b\d\.\d{1,2}\.\d{1,3}-(\d{5})-Microsoft\b")
_WSL2_RELEASE = re.compile(r"-microsoft-standard(?:-WSL2)?\b|\bWSL2\b", re.IGNORECASE)
# Where a Linux NVIDIA driver puts its nvidia-smi (the Windows driver's is WSL_LIB_DIR/nvidia-smi).
_LINUX_SMI = ("/usr/bin/nvidia-smi", "/usr/local/bin/nvidia-smi")


def wsl_version(kernel: str | None) -> tuple[int | None, int | None]:
    """(WSL version, Windows build) from a kernel release or /proc/version line: (1, 19041)
    for "4.4.0-19041-Microsoft", (2, None) for "...-microsoft-standard-WSL2" (WSL 2's kernel
    does not say the Windows build), (None, None) when the text names neither."""
    if not kernel:
        return None, None
    if match := _WSL1_RELEASE.search(kernel):
        return 1, int(match.group(1))
    if _WSL2_RELEASE.search(kernel):
        return 2, None
    return None, None


def _first_line(host: Host, path: str) -> str | None:
    try:
        text = host.read_text(path, limit=4096)
    except UnreadableError:
        return None  # only a hint; libcuda and /dev/dxg decide as well
    return (text or "").strip().split("\n", 1)[0].strip() or None


def wsl_driver(host: Host) -> dict[str, Any] | None:
    """{"lib_dir", "libcuda", "nvidia_smi", "dxg", "kernel", "version", "windows_build",
    "linux_nvidia_smi"} when this is WSL (the Windows GPU driver's libraries mounted, /dev/dxg,
    or a Microsoft kernel); None otherwise."""
    libcuda = next((p for p in (posixpath.join(WSL_LIB_DIR, n) for n in ("libcuda.so.1", "libcuda.so")) if host.exists(p)), None)
    kernel = _first_line(host, "/proc/sys/kernel/osrelease")
    if not (kernel and "microsoft" in kernel.lower()):
        version_line = _first_line(host, "/proc/version")  # "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) ..."
        if version_line and "microsoft" in version_line.lower():
            kernel = version_line
    dxg = host.exists("/dev/dxg")
    wsl_kernel = bool(kernel and "microsoft" in kernel.lower())
    if libcuda is None and not dxg and not wsl_kernel:
        return None
    version, build = wsl_version(kernel) if wsl_kernel else (None, None)
    smi = posixpath.join(WSL_LIB_DIR, "nvidia-smi")
    # A Linux driver's nvidia-smi: one on the usual paths that is not a link into WSL_LIB_DIR.
    linux_smi = next((p for p in _LINUX_SMI if host.exists(p) and not host.resolve(p).startswith(WSL_LIB_DIR + "/")), None)
    return {"lib_dir": WSL_LIB_DIR, "libcuda": libcuda, "nvidia_smi": smi if host.exists(smi) else None, "dxg": dxg, "kernel": kernel,
            "version": version, "windows_build": build, "linux_nvidia_smi": linux_smi}


@probe(
    "driver",
    provides=("driver.loaded", "driver.version", "driver.module_flavor", "driver.userspace_libs", "driver.nouveau_loaded", "driver.wsl"),
)
def driver_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    wsl = wsl_driver(host)
    yield Fact("driver.wsl", wsl, source="/usr/lib/wsl/lib, /dev/dxg, /proc/sys/kernel/osrelease")
    if wsl is not None:
        yield from _wsl_facts(host, wsl)
        yield Fact("driver.userspace_libs", userspace_libs(host), source=", ".join(LIB_DIRS))
        return
    modules_text = host.read_text(PROC_MODULES)
    modules = parse_modules(modules_text) if modules_text is not None else None
    sys_module = host.is_dir("/sys/module")
    proc_text = host.read_text(PROC_VERSION)
    sys_text = host.read_text(SYS_VERSION)

    if modules is None and not sys_module and proc_text is None:
        why = "no /proc/modules, /sys/module or /proc/driver/nvidia in this root (an image or a copied tree?)"
        yield Fact.unknown("driver.loaded", why)
        yield Fact.unknown("driver.version", why)
        yield Fact.unknown("driver.module_flavor", why)
        yield Fact.unknown("driver.nouveau_loaded", why)
    else:
        loaded = bool(modules and "nvidia" in modules) or host.is_dir("/sys/module/nvidia") or proc_text is not None
        yield Fact("driver.loaded", loaded, source=PROC_MODULES if modules_text is not None else "/sys/module")
        yield from _module_version(loaded, proc_text, sys_text)
        nouveau = bool(modules and "nouveau" in modules) or host.is_dir("/sys/module/nouveau")
        yield Fact("driver.nouveau_loaded", nouveau, source=PROC_MODULES if modules_text is not None else "/sys/module/nouveau")
    yield Fact("driver.userspace_libs", userspace_libs(host), source=", ".join(LIB_DIRS))


def _wsl_facts(host: Host, wsl: dict[str, Any]) -> Iterable[Fact]:
    """WSL2: the driver is the Windows host's, not a Linux kernel module."""
    why = "WSL2: the GPU driver is the Windows host's (no Linux kernel module)"
    yield Fact("driver.loaded", wsl["libcuda"] is not None, source=f"{WSL_LIB_DIR}/libcuda.so.1" if wsl["libcuda"] else f"{why}; no libcuda in {WSL_LIB_DIR}")
    yield Fact("driver.module_flavor", None, source=why)
    yield Fact("driver.nouveau_loaded", False, source=why)
    snap = nvml_snapshot(host)
    if snap is not None and snap.driver_version:
        yield Fact("driver.version", snap.driver_version, source=f"{snap.source} (WSL2: the Windows driver)")
    elif wsl["libcuda"] is None:
        yield Fact("driver.version", None, source=f"{why}; no libcuda in {WSL_LIB_DIR}")
    else:
        yield Fact.unknown("driver.version", f"{why}: its version is only known from nvidia-smi or NVML on the running system" + (f" ({snap.why})" if snap is not None and snap.why else ""))


def _module_version(loaded: bool, proc_text: str | None, sys_text: str | None) -> Iterable[Fact | ProbeFailure]:
    if not loaded:
        yield Fact("driver.version", None, source="no nvidia kernel module loaded")
        yield Fact("driver.module_flavor", None, source="no nvidia kernel module loaded")
        return
    parsed = parse_proc_version(proc_text) if proc_text is not None else None
    sys_version = parse_sys_version(sys_text) if sys_text is not None else None
    if proc_text is not None and parsed is None:
        first = (proc_text.strip().splitlines() or [""])[0]
        yield ProbeFailure("driver", f"{PROC_VERSION}: unparseable output: {first[:200]!r}")
    if sys_text is not None and sys_version is None:
        yield ProbeFailure("driver", f"{SYS_VERSION}: unparseable output: {sys_text.strip()[:200]!r}")
    version = sys_version or (parsed.version if parsed else None)
    if version is not None:
        yield Fact("driver.version", version, source=SYS_VERSION if sys_version else PROC_VERSION)
    else:
        yield Fact.unknown("driver.version", f"the nvidia module is loaded but neither {SYS_VERSION} nor {PROC_VERSION} gave a version")
    if parsed is not None:
        yield Fact("driver.module_flavor", parsed.flavor, source=PROC_VERSION)
    else:
        yield Fact.unknown("driver.module_flavor", f"{PROC_VERSION} missing or unparseable")


def userspace_libs(host: Host) -> list[dict[str, str]]:
    """The libcuda / libnvidia-ml a program would load, one per library directory.

    Where `libcuda.so.1` points at a versioned file, only that file counts (leftover
    versioned files beside it are never loaded); otherwise every versioned file counts.
    """
    found: list[dict[str, str]] = []
    seen: set[str] = set()
    for directory in LIB_DIRS:
        real_dir = host.resolve(directory)
        listing: list[str] | None = None  # read at most once per folder (it holds ~1000 files)
        for name in DRIVER_LIBS:
            soname = posixpath.join(directory, f"{name}.so.1")
            resolved = host.resolve(soname) if host.exists(soname) else ""
            target = posixpath.basename(resolved)
            parsed = lib_version(target)
            if parsed is not None and parsed[0] == name:
                # Debian's link leads through /etc/alternatives to nvidia/current/: name
                # the file that is really there.
                same_dir = posixpath.dirname(resolved) == real_dir
                candidates = [(posixpath.join(directory, target) if same_dir else resolved, parsed)]
            else:  # no link, or a link whose target name carries no version
                if listing is None:
                    listing = host.listdir(directory)
                candidates = [(posixpath.join(directory, n), lib_version(n)) for n in listing if fnmatch.fnmatchcase(n, f"{name}.so.*.*")]
            for path, parsed in candidates:
                key = posixpath.join(real_dir, posixpath.basename(path))
                if parsed is None or key in seen:
                    continue
                seen.add(key)
                found.append({"path": path, "name": parsed[0], "version": parsed[1]})
    return found


@probe("nvml", provides=("driver.cuda_version", "driver.nvml_error"))
def nvml_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    snap = nvml_snapshot(host)
    if snap is None:
        why = "not checked inside --root: needs NVML or nvidia-smi on a live host"
        yield Fact.unknown("driver.cuda_version", why)
        yield Fact.unknown("driver.nvml_error", why)
        return
    yield from snap.failures
    source = snap.source or "NVML / nvidia-smi"
    yield Fact("driver.nvml_error", snap.error, source=source)
    if snap.cuda_version is not None:
        yield Fact("driver.cuda_version", snap.cuda_version, source=source)
    elif facts.get("driver.loaded") is False:
        yield Fact("driver.cuda_version", None, source="no nvidia kernel module loaded")
    else:
        yield Fact.unknown("driver.cuda_version", snap.error or snap.why or "NVML and nvidia-smi did not report it")


# The driver's own user-space libraries an image must not carry: the NVIDIA container runtime
# mounts the host driver's copies (on WSL2 /usr/lib/wsl/lib's libcuda.so.1, libnvidia-ml.so.1)
# at these names, and an image that already has them fails with "file creation failed: ...
# file exists" (NVIDIA/nvidia-docker#1551) or shadows the host's with its own driver release.
# The forward-compatibility libcuda of NVIDIA's CUDA images lives in /usr/local/cuda*/compat,
# outside LIB_DIRS, and is not listed: it is meant to be there.
_IMAGE_DRIVER_LIB_RE = re.compile(r"^(?:libcuda|libnvidia-ml)\.so\.\d+(?:\.\d+){0,2}$")


def image_driver_libs(host: Host) -> list[str]:
    """The paths of libcuda.so.N[.X.Y] / libnvidia-ml.so.N[.X.Y] in the library folders, plain
    files and links alike (a `docker commit` of a GPU container keeps the runtime's empty
    mount points, which collide the same way). Names only: nothing is read."""
    found: list[str] = []
    seen: set[str] = set()
    for directory in LIB_DIRS:
        real_dir = host.resolve(directory)
        if real_dir in seen:  # /usr/lib64 -> /usr/lib on merged-/usr images
            continue
        seen.add(real_dir)
        found.extend(posixpath.join(directory, n) for n in sorted(host.listdir(directory)) if _IMAGE_DRIVER_LIB_RE.match(n))
    return found


@probe("image_driver_libs", provides=("image.driver_libs",))
def image_driver_libs_probe(host: Host, facts: Facts) -> Iterable[Fact]:
    """Driver libraries an image ships (`check --image`, `--image-archive`). A running system's
    are its driver's, and inside a GPU container the runtime's own mounts: None there."""
    if not host.is_image:
        yield Fact("image.driver_libs", None, source="not an image (a running system's driver libraries are its driver's, or in a GPU container the runtime's mounts)")
        return
    yield Fact("image.driver_libs", image_driver_libs(host), source=", ".join(LIB_DIRS))


PROBES: tuple[Probe, ...] = (driver_probe, nvml_probe, image_driver_libs_probe)
