"""Driver and GPU presence rules: driver-missing, nouveau-loaded, driver-library-mismatch,
driver-gpu-unsupported, no-gpu, and container-image-ships-driver-libs (an image's own copies). Each is a pure function of (Facts, KB); fixes are advice
(commands for a human), never a silent driver install. REPORT_RULES holds driver-gpu-unsupported's
report-side twin (the legacy notice of a pasted kernel log, where the report shows no driver version).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.kb.gpus import driver_branch, normalize_slot
from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule, sh
from fwdoctor.versions import equal


if TYPE_CHECKING:
    from fwdoctor.kb import KB

_MISMATCH = re.compile(r"version mismatch", re.IGNORECASE)


def _gpu_list(pci: list[dict[str, Any]]) -> str:
    shown = ", ".join(f"{d.get('slot')} [10de:{str(d.get('device_id', '')).removeprefix('0x')}]" for d in pci[:4])
    return shown + (f" and {len(pci) - 4} more" if len(pci) > 4 else "")


@rule("driver-missing", needs=("pci.nvidia_gpus", "driver.loaded"), optional=("driver.nouveau_loaded", "driver.wsl", "driver.legacy_notices"))
def driver_missing(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Looks for NVIDIA GPUs on the PCI bus (vendor 0x10de, display or 3D controller class,
        from /sys/bus/pci/devices) while no NVIDIA kernel module is loaded (no `nvidia` in
        /proc/modules, no /sys/module/nvidia, no /proc/driver/nvidia/version).

    Why is this bad?
        Without the kernel driver no CUDA program can see the GPU. `nvidia-smi` says
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
        and torch says `torch.cuda.is_available()` is False ("Found no NVIDIA driver on your
        system").

    Example
        A fresh server, a kernel upgrade whose DKMS build of the module failed, or Secure
        Boot refusing an unsigned module:

            $ lspci -nn | grep -i nvidia
            62:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330]
            $ lsmod | grep nvidia        # nothing

    Fix
        Install the driver your distribution packages for this GPU, or load the one that is
        installed, then check the kernel log:

            sudo modprobe nvidia && nvidia-smi
            sudo dmesg | grep -iE 'nvrm|nvidia'
            mokutil --sb-state            # Secure Boot on? the module must be signed
            ubuntu-drivers list --gpgpu   # Ubuntu: the recommended server driver
    """
    pci = facts["pci.nvidia_gpus"]
    if not pci or facts["driver.loaded"] or facts.get("driver.wsl"):
        return None  # WSL2: the Windows driver serves the GPU; there is no module to load
    if facts.get("driver.legacy_notices"):
        return None  # the module said why it did not stay: driver-gpu-unsupported reports that
    nouveau = " (nouveau holds it instead)" if facts.get("driver.nouveau_loaded") else ""
    count = f"{len(pci)} NVIDIA GPU{'s' if len(pci) != 1 else ''}"
    return Hit(
        f"{count} on the PCI bus ({_gpu_list(pci)}) but no NVIDIA kernel driver is loaded{nouveau}; CUDA needs the nvidia module",
        evidence={"pci.nvidia_gpus": pci, "driver.loaded": False, "driver.nouveau_loaded": facts.get("driver.nouveau_loaded")},
        fix=FixRef(
            commands=(
                "sudo modprobe nvidia && nvidia-smi",
                "sudo dmesg | grep -iE 'nvrm|nvidia'",
                "mokutil --sb-state",
                "ubuntu-drivers list --gpgpu",
            ),
            note="Install or load the NVIDIA driver for this GPU (distribution packages or NVIDIA's installer); fwdoctor does not install drivers.",
        ),
    )


@rule("nouveau-loaded", needs=("driver.nouveau_loaded",))
def nouveau_loaded(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Checks whether the open-source `nouveau` kernel module is loaded (/proc/modules or
        /sys/module/nouveau).

    Why is this bad?
        nouveau binds the GPU first and the NVIDIA driver cannot take it: installing the
        driver fails with "ERROR: The Nouveau kernel driver is currently in use by your
        system", or the nvidia module loads but finds no device. nouveau has no CUDA.

    Example
            $ grep nouveau /proc/modules
            nouveau 1388544 4 - Live 0x0000000000000000

    Fix
        Blacklist nouveau, rebuild the initramfs so it is not loaded at boot, and reboot
        (the steps of NVIDIA's CUDA installation guide, "Disabling Nouveau"):

            printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf
            sudo update-initramfs -u     # Debian/Ubuntu; RHEL/Fedora: sudo dracut --force
            sudo reboot
    """
    if not facts["driver.nouveau_loaded"]:
        return None
    also = " alongside nvidia" if facts.get("driver.loaded") else ""
    return Hit(
        f"the nouveau kernel module is loaded{also}; it claims the GPU, so the NVIDIA driver cannot bind it (blacklist nouveau and reboot)",
        evidence={"driver.nouveau_loaded": True, "driver.loaded": facts.get("driver.loaded")},
        fix=FixRef(
            commands=(
                "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf",
                "sudo update-initramfs -u   # RHEL/Fedora: sudo dracut --force",
                "sudo reboot",
            ),
            note="Advice only: review the commands; they change boot configuration.",
        ),
    )


@rule("driver-library-mismatch", needs=("driver.version", "driver.userspace_libs"), optional=("driver.nvml_error",))
def driver_library_mismatch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the loaded kernel module's version (/sys/module/nvidia/version or
        /proc/driver/nvidia/version) with the user-space driver libraries a program loads
        (the files libcuda.so.1 and libnvidia-ml.so.1 point at, e.g.
        libcuda.so.580.95.05), and reads NVML's own initialisation error.

    Why is this bad?
        The kernel module and its libraries must be the same build. Otherwise
        `nvidia-smi` prints "Failed to initialize NVML: Driver/library version mismatch",
        CUDA calls fail with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH or "unknown error", and the
        kernel log shows "NVRM: API mismatch: the client has the version X, but this
        kernel module has the version Y".

    Example
        A package upgrade replaced the libraries while the old module stays loaded:

            $ cat /sys/module/nvidia/version
            580.82.07
            $ ls /usr/lib/x86_64-linux-gnu/libcuda.so.*
            /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05

    Fix
        Reboot, so the new module loads. Without a reboot, stop every GPU process and
        reload the modules:

            sudo reboot
            # or: sudo systemctl stop nvidia-persistenced; sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; sudo modprobe nvidia
    """
    kernel = facts["driver.version"]
    libs = facts["driver.userspace_libs"] or []
    error = facts.get("driver.nvml_error")
    if kernel is None:
        return None
    others = [lib for lib in libs if not equal(str(lib.get("version")), kernel)]
    nvml_says = bool(error and _MISMATCH.search(str(error)))
    if not others and not nvml_says:
        return None
    if others:
        versions = sorted({str(lib["version"]) for lib in others})
        files = ", ".join(lib["path"] for lib in others[:3])
        message = (f"kernel module nvidia {kernel} is loaded but the user-space driver libraries are "
                   f"{', '.join(versions)} ({files}); they must be the same version")
    else:
        message = f"kernel module nvidia {kernel} is loaded but NVML reports a mismatch: {error}"
    return Hit(
        message,
        evidence={"driver.version": kernel, "driver.userspace_libs": libs, "driver.nvml_error": error},
        fix=FixRef(
            commands=(
                "sudo reboot",
                "sudo systemctl stop nvidia-persistenced; sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; sudo modprobe nvidia",
            ),
            note="Usually a driver upgrade without a reboot: rebooting loads the module that matches the libraries.",
        ),
    )


def _gpus_on_host(facts: Facts, kb: KB, unknown: list[str] | None = None) -> list[tuple[str, str, str]]:
    """(label, cc, name) for every GPU the facts show: gpus.list entries (CC as reported,
    else from the name, else from the PCI id at its slot), then PCI devices no entry
    covers (a GPU the driver ignores is on the bus but absent from NVML's list). A listed
    GPU whose capability nothing tells is named in `unknown`, when given."""
    listed = facts.get("gpus.list") or []
    pci = facts.get("pci.nvidia_gpus") or []
    seen: set[str] = set()
    out: list[tuple[str, str, str]] = []
    for gpu in listed:
        bus = str(gpu.get("bus_id") or "")
        if bus:
            seen.add(normalize_slot(bus))
        cc = kb.gpus.cc_for_gpu(gpu, pci)
        name = str(gpu.get("name") or "")
        model = None
        if bus and (not name or name.startswith("NVIDIA device ")):
            dev = next((d for d in pci if normalize_slot(str(d.get("slot", ""))) == normalize_slot(bus)), None)
            model = kb.gpus.model_for_pci_id(str(dev.get("device_id", ""))) if dev else None
        if cc:
            out.append((bus or f"GPU {gpu.get('index')}", str(cc), model.name if model else name))
        elif unknown is not None:
            unknown.append(f"{name or bus or 'GPU ' + str(gpu.get('index'))} (compute capability unknown)")
    for dev in pci:
        slot = str(dev.get("slot", ""))
        if normalize_slot(slot) in seen:
            continue
        model = kb.gpus.model_for_pci_id(str(dev.get("device_id", "")))
        if model is not None:
            out.append((slot, model.cc, model.name))
        elif unknown is not None:
            unknown.append(f"{slot} [10de:{str(dev.get('device_id', '')).removeprefix('0x')}] (a PCI id the KB does not know)")
    return out


@rule("driver-gpu-unsupported", needs=("driver.version",), optional=("gpus.list", "pci.nvidia_gpus", "driver.module_flavor", "driver.legacy_notices"))
def driver_gpu_unsupported(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the loaded kernel module's version (its branch: 470 for 470.239.06) and
        flavour (open or proprietary, from /proc/driver/nvidia/version) with the driver
        branches that support each GPU on the host (from NVML, or the PCI device id when the
        driver does not list it): the KB records each architecture family's first and last
        branch and whether the open kernel modules drive it (gpus.yaml `families`), and
        for each product the first release of each branch whose NVIDIA "Compatible GPUs"
        table lists it (gpus.yaml `driver_floors`: a B300 is first listed by 580.82.07, an
        H200 by 550.40.65, a GB10 by 580.94.13); the message names that release. Also
        reads the module's own notice in the kernel log (dmesg, /var/log/kern.log) that it
        ignores a GPU only a legacy branch drives, which holds even for a GPU the KB does
        not know and when the module, finding no other GPU, did not stay loaded.

    Why is this bad?
        A driver outside a GPU's range does not drive it at all: the module loads, ignores
        the GPU, and nvidia-smi says "No devices were found"; CUDA sees no device. Kepler
        (Tesla K80) is supported only up to the R470 legacy branch, Maxwell, Pascal and
        Volta up to R580; Ada needs R520 or newer, Blackwell R570 or newer, and a product
        launched after its family (B300, GB10, the desktop RTX 5050) needs the first release
        that lists it, even within a branch (GB10: 580.94.13, not 580.65.06). The open kernel
        modules cannot drive GPUs before Turing, and Blackwell and Grace Hopper run only on
        the open modules.

    Example
        An AWS p2 host (Tesla K80) after a driver upgrade to R510:

            $ sudo dmesg | grep NVRM
            NVRM: The NVIDIA Tesla K80 GPU installed in this system is
            NVRM:  supported through the NVIDIA 470.xx Legacy drivers. ...
            NVRM:  The 510.47.03 NVIDIA driver will ignore this GPU.

    Fix
        Install a driver of a branch that supports every GPU here (the message names it),
        with the module flavour it needs, then reboot:

            ubuntu-drivers list --gpgpu                  # Ubuntu: the packaged branches
            sudo apt install nvidia-driver-470-server    # e.g. the R470 legacy branch for Kepler
            sudo apt install nvidia-driver-570-server-open   # e.g. open modules for Blackwell
    """
    driver = facts["driver.version"]
    notices = _legacy_notices(facts.get("driver.legacy_notices") or [], driver)
    if driver is None and not notices:
        return None  # no module loaded: driver-missing speaks
    if driver is None or not facts.known("gpus.list") and not facts.known("pci.nvidia_gpus") and notices:
        return _legacy_hit(notices, driver, facts.source("driver.legacy_notices"))
    if not facts.known("gpus.list") and not facts.known("pci.nvidia_gpus"):
        raise NotCheckable(f"which GPUs are here is unknown ({facts.why('gpus.list')})")
    if not kb.gpus.families:
        # A KB without `families` (the frozen tests/kb predates them) knows no ranges;
        # driver_problem would find nothing either, so say nothing rather than "not checked"
        # on every host judged with it.
        return _legacy_hit(notices, driver, facts.source("driver.legacy_notices")) if notices else None
    flavor = facts.get("driver.module_flavor")
    problems = []
    unknown: list[str] = []  # GPUs the KB cannot judge: with no problem found, not checked
    for where, cc, name in _gpus_on_host(facts, kb, unknown):
        problem = kb.gpus.driver_problem(cc, name or None, driver, flavor)
        if problem is not None:
            problems.append((where, problem))
        elif kb.gpus.support_for(cc, name or None) is None:
            unknown.append(f"{name or where} (no driver-support data for compute capability {cc})")
    if not problems:
        if notices:
            return _legacy_hit(notices, driver, facts.source("driver.legacy_notices"))
        if unknown:
            raise NotCheckable(f"not judged against driver {driver}: {', '.join(unknown)}")
        if driver_branch(str(driver)) is None and (facts.get("gpus.list") or facts.get("pci.nvidia_gpus")):
            raise NotCheckable(f"driver version {driver!r} names no driver branch")
        return None
    where, first = problems[0]
    more = f" (and {len(problems) - 1} more GPU{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
    branch = first.branch
    if first.kind == "open-unsupported":
        fix_line = f"install the proprietary kernel modules of driver branch R{branch} (e.g. nvidia-driver-{branch}-server on Ubuntu, not -open)"
        commands: tuple[str, ...] = (f"sudo apt install {sh(f'nvidia-driver-{branch}-server')}   # proprietary modules",)
    elif first.kind == "open-required":
        fix_line = f"install the open kernel modules of driver branch R{branch} (e.g. nvidia-driver-{branch}-server-open on Ubuntu; the .run installer: -M=open)"
        commands = (f"sudo apt install {sh(f'nvidia-driver-{branch}-server-open')}",)
    elif first.kind == "too-new":
        legacy = " legacy" if first.support.family.legacy else ""
        fix_line = f"install a driver of the R{branch}{legacy} branch{f' (e.g. {first.release})' if first.release else ''}"
        commands = (f"sudo apt install {sh(f'nvidia-driver-{branch}-server')}",)
    else:
        fix_line = f"install a driver of branch R{branch} or newer{f' (e.g. {first.release})' if first.release else ''}"
        commands = ("ubuntu-drivers list --gpgpu",)
    return Hit(
        f"{where}: {first.message}{more}; {fix_line}",
        evidence={
            "driver.version": driver,
            "driver.module_flavor": flavor,
            "gpus": [{"where": w, "problem": p.kind, "family": p.support.family.family, "branches": p.support.branches, "message": p.message} for w, p in problems],
        },
        fix=FixRef(
            commands=(*commands, "sudo reboot"),
            note=(f"Driver releases whose compatible-GPU tables list {first.floor.gpu}: "
                  + ", ".join(f"R{driver_branch(r)} from {r}" for r in first.floor.first)
                  + f" (and newer branches); open kernel modules: {first.support.open_modules}. fwdoctor does not install drivers."
                  if first.floor is not None else
                  f"Driver branches that run {first.support.family.family}: {first.support.branches}; open kernel modules: {first.support.open_modules}. fwdoctor does not install drivers."),
        ),
    )


def _legacy_notices(notices: list[Any], driver: str | None) -> list[dict[str, str]]:
    """The notices that speak of the driver in place: a kernel log file keeps earlier boots,
    whose driver may since have been replaced. With no module loaded, every notice counts
    (the last boot's module is the one that left)."""
    usable = [n for n in notices if isinstance(n, dict) and str(n.get("branch", "")).isdigit()]
    if driver is None:
        return usable
    return [n for n in usable if equal(str(n.get("driver", "")), driver)]


def _legacy_hit(notices: list[dict[str, str]], driver: str | None, source: str, left: bool | None = None) -> Hit:
    """The finding for the module's own legacy-branch notices. `left`: whether the module,
    finding no other GPU, did not stay loaded; None reads it from `driver` (no driver version:
    no module loaded). A bug report that shows the notice but not the driver in place says
    neither (legacy_notice_said passes False)."""
    first = notices[-1]  # the newest boot's
    branch = first["branch"]
    gpus = sorted({n["gpu"] for n in notices})
    running = driver or first.get("driver") or "the installed driver"
    state = " (and, finding no other GPU, did not stay loaded)" if ((not driver) if left is None else left) else ""
    return Hit(
        f"the NVIDIA {running} module ignores the {', '.join(gpus)}{state}: its kernel log notice says only the "
        f"R{branch} legacy branch drives it; install a driver of the R{branch} legacy branch",
        evidence={"driver.version": driver, "driver.legacy_notices": notices, "source": source},
        fix=FixRef(
            commands=(f"sudo apt install {sh(f'nvidia-driver-{branch}-server')}   # or your distribution's R{branch} package", "sudo reboot"),
            note=f"The kernel module's own message ({source}): the {', '.join(gpus)} is supported through the NVIDIA "
                 f"{branch}.xx Legacy drivers. A newer branch will keep ignoring it. fwdoctor does not install drivers.",
        ),
    )


@rule("driver-gpu-unsupported", needs=("driver.legacy_notices",), optional=("driver.version",))
def legacy_notice_said(facts: Facts, kb: KB) -> Hit | None:
    """The kernel module's own legacy-branch notice in a bug report that does not show the
    driver in place (see driver-gpu-unsupported): `fwdoctor triage` runs it where that rule,
    for want of driver.version, said "not checked". The notice names the driver that ignored
    the GPU; whether that module then stayed loaded the pasted lines need not say, so the
    message does not claim it."""
    driver = facts.get("driver.version")  # known only where the regular rule lacked the GPUs instead
    notices = _legacy_notices(facts["driver.legacy_notices"] or [], driver)
    if not notices:
        return None
    return _legacy_hit(notices, driver, facts.source("driver.legacy_notices"), left=None if driver else False)


@rule("no-gpu", needs=("gpus.list",), optional=("pci.nvidia_gpus", "system.container"))
def no_gpu(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reports a host with no NVIDIA GPU at all: none from NVML/nvidia-smi or the driver,
        and none with vendor 0x10de on the PCI bus.

    Why is this bad?
        It is not: it explains why the GPU checks and smoke tests are skipped. If this
        machine should have GPUs, a container may have been started without them
        (`docker run --gpus all`), or CUDA_VISIBLE_DEVICES hides them.

    Example
            $ nvidia-smi -L
            No devices were found

    Fix
        Nothing on a CPU-only host. In a container, start it with GPUs:

            docker run --gpus all ...
    """
    if facts["gpus.list"]:
        return None
    pci = facts.get("pci.nvidia_gpus")
    if pci:
        return None  # GPUs on the bus without a driver: driver-missing says so
    return Hit(
        "no NVIDIA GPU found (none reported by the driver, none with vendor 0x10de on the PCI bus); GPU checks are skipped",
        evidence={"gpus.list": [], "pci.nvidia_gpus": pci},
        fix=FixRef(
            commands=("docker run --gpus all IMAGE ...",) if facts.get("system.container") else (),
            note=(
                "nothing to do on a CPU-only machine; if this container should have GPUs, start it with --gpus all"
                if facts.get("system.container")
                else "nothing to do on a CPU-only machine"
            ),
        ),
    )


@rule("container-image-ships-driver-libs", needs=("image.driver_libs",))
def container_image_ships_driver_libs(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        In an image (`check --image`, `--image-archive`), looks for the NVIDIA driver's own
        user-space libraries in the library folders: libcuda.so.N… and libnvidia-ml.so.N…
        (files or links). The forward-compatibility libcuda in /usr/local/cuda*/compat is not
        looked at: NVIDIA's CUDA images carry it on purpose. A running system or a root folder
        is not judged (there the libraries are the driver's, or the runtime's mounts); a report
        is, from nvidia-container-cli's "file exists" (`fwdoctor triage`).

    Why is this bad?
        The driver's user-space libraries must match the host's kernel module, so the NVIDIA
        container runtime mounts the host's copies into every GPU container (on WSL2 the
        Windows driver's, from /usr/lib/wsl/lib). An image that already has them, copied from a
        GPU or WSL2 machine, pulled in by a package (libnvidia-compute-*, libnvidia-ml1) or left
        by a `docker commit` of a running GPU container, either stops the container from
        starting or shadows the host's driver with its own release ("Driver/library version
        mismatch"); NVIDIA's own sample images run on the same host (NVIDIA/nvidia-docker#1551,
        NVIDIA/nvidia-container-toolkit#289, BIOP/BIOP-desktop#2).

    Example
            nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/…/merged/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1: file exists: unknown.

    Fix
        Remove them in the Dockerfile (`RUN rm -f /usr/lib/x86_64-linux-gnu/libcuda.so.*
        /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.*`), or remove the package that brought them
        (`apt-get remove libnvidia-compute-NNN`), or build from a clean nvidia/cuda image
        instead of a commit of a running container.
    """
    libs = facts["image.driver_libs"]
    if not libs:
        return None
    shown = ", ".join(libs[:4]) + (f" and {len(libs) - 4} more" if len(libs) > 4 else "")
    return Hit(
        f"the image ships the NVIDIA driver's own libraries ({shown}); the NVIDIA container runtime mounts the host driver's there, "
        "so GPU containers of this image fail with \"file creation failed: ... file exists\" or load the image's driver release instead of the host's",
        evidence={"image.driver_libs": libs},
        fix=FixRef(commands=(f"RUN rm -f {' '.join(sh(p) for p in libs)}   # in the Dockerfile",),
                   note="or remove the package that brought them (dpkg -S on the file names it, often libnvidia-compute-NNN); "
                        "the forward-compatibility libcuda in /usr/local/cuda/compat may stay"),
    )


RULES: tuple[Rule, ...] = (driver_missing, nouveau_loaded, driver_library_mismatch, driver_gpu_unsupported, no_gpu, container_image_ships_driver_libs)
# Report-side twins, run by `fwdoctor triage` only where the regular rule could not judge.
REPORT_RULES: tuple[Rule, ...] = (legacy_notice_said,)
