"""What hides the host's GPUs from one process although the host has them and its driver
works: a container started without them, one started with them but without the compute
driver capability (no libcuda mounted), and CUDA_VISIBLE_DEVICES.

Both look alike from inside the process (torch: "Found no NVIDIA driver on your system" or
"No CUDA GPUs are available", CUDA: CUDA_ERROR_NO_DEVICE) while `nvidia-smi` on the host
lists every GPU; the fix is in how the process was started, not in the driver.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable

from packaging.version import Version

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule, sh
from fwdoctor.versions import parse_version

if TYPE_CHECKING:
    from fwdoctor.kb import KB

_GPU_NODE = re.compile(r"nvidia\d+")  # /dev/nvidia0 ...: one per GPU (nvidiactl, nvidia-uvm are shared)
_INDEX = re.compile(r"\d+")

# The driver capabilities the NVIDIA container runtime knows (NVIDIA Container Toolkit,
# "Specialized Configurations with Docker", Driver Capabilities; the toolkit's own list adds
# ngx). Each names the driver files it mounts: compute libcuda.so.1 (CUDA, OpenCL), utility
# libnvidia-ml and nvidia-smi. Docker's device request forwards those it lists as
# NVIDIA_DRIVER_CAPABILITIES (moby daemon/nvidia_linux.go), over the image's ENV; "gpu" alone
# forwards none, and the image's ENV or the toolkit's default applies: utility,compute today,
# utility alone in nvidia-container-runtime's README of 2018-2021.
DRIVER_CAPABILITIES = frozenset({"compute", "compat32", "graphics", "utility", "video", "display", "ngx"})
_REQUEST_ONLY = frozenset({"gpu", "nvidia"})  # a Docker device request's words that pick the driver, no driver capability


# ----------------------------------------------------------------------------- CUDA_VISIBLE_DEVICES
def visible_gpus(value: str, gpus: list[dict[str, Any]]) -> list[int] | None:
    """The host GPU indices CUDA enumerates under CUDA_VISIBLE_DEVICES=`value`, in order, or
    None where this cannot tell (a UUID while the GPUs' UUIDs are unknown, a MIG device).

    NVIDIA's rules (CUDA Programming Guide, "CUDA Environment Variables"): a comma-separated
    list of indices (nvidia-smi's order, from 0) or GPU UUIDs, of which any unique prefix
    from "GPU-" on will do; an empty value shows no GPU; the first invalid entry ends the
    list ("0,2,-1,1" shows 0 and 2).
    """
    indices = [g.get("index") for g in gpus]
    uuids = [(g.get("index"), str(g.get("uuid") or "")) for g in gpus]
    shown: list[int] = []
    for entry in value.split(","):
        entry = entry.strip()
        if _INDEX.fullmatch(entry):
            if int(entry) not in indices or int(entry) in shown:
                break
            shown.append(int(entry))
        elif entry.upper().startswith("GPU-"):
            if not all(u for _, u in uuids):
                return None
            matches = [i for i, u in uuids if u.lower().startswith(entry.lower())]
            if len(matches) != 1 or matches[0] in shown:
                break
            shown.append(matches[0])
        elif entry.upper().startswith("MIG-"):
            return None  # MIG instances are not in gpus.list: not judged
        else:
            break  # "", "-1", "none", "NoDevFiles", "[0]": not an index or a UUID
    return shown


@rule("cuda-visible-devices-hides-gpus", needs=("gpus.visible_devices", "gpus.list"))
def cuda_visible_devices_hides_gpus(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads CUDA_VISIBLE_DEVICES of the inspected environment and fires when it leaves
        none of the host's GPUs visible to CUDA: set but empty, "-1", an index the host does
        not have, or a UUID of no GPU here.

    Why is this bad?
        CUDA enumerates only the GPUs the variable lists, and stops at the first entry that
        names none (NVIDIA's CUDA Programming Guide, "CUDA Environment Variables"). With
        none left, cuInit fails with CUDA_ERROR_NO_DEVICE ("no CUDA-capable device is
        detected"), torch says "No CUDA GPUs are available" (or torch.cuda.is_available()
        is False) and TensorFlow lists no GPU, while `nvidia-smi`, which ignores the
        variable, lists them all. A training script that sets
        os.environ["CUDA_VISIBLE_DEVICES"] = "1" on a one-GPU machine does exactly this
        (DetectionTeamUCAS/FPN_Tensorflow#146).

    Example
            $ nvidia-smi -L
            GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-...)
            $ echo $CUDA_VISIBLE_DEVICES
            1

    Fix
        Unset it, or list GPUs the host has (indices from 0, as `nvidia-smi -L` numbers them):
            unset CUDA_VISIBLE_DEVICES
            export CUDA_VISIBLE_DEVICES=0
        and look for a script or job launcher (os.environ, a .sh wrapper) that sets it.
    """
    value = facts["gpus.visible_devices"]
    gpus = facts["gpus.list"] or []
    if value is None or not gpus:
        return None  # unset: every GPU; no GPU at all: no-gpu says so
    shown = visible_gpus(str(value), gpus)
    if shown is None:
        # a GPU UUID where gpus.list has none, or a MIG instance gpus.list does not hold
        raise NotCheckable(f"CUDA_VISIBLE_DEVICES={str(value)!r} names a GPU UUID or MIG instance that gpus.list cannot be matched against (`nvidia-smi -L` lists both)")
    if shown:
        return None
    first = ", ".join(f"{g.get('index')}" for g in gpus)
    return Hit(
        f"CUDA_VISIBLE_DEVICES={str(value)!r} leaves none of this host's {len(gpus)} GPU(s) (indices {first}) visible to CUDA: "
        "CUDA programs find no device (CUDA_ERROR_NO_DEVICE, torch: \"No CUDA GPUs are available\")",
        evidence={"gpus.visible_devices": value, "gpu_indices": [g.get("index") for g in gpus]},
        fix=FixRef(commands=("unset CUDA_VISIBLE_DEVICES", f"export CUDA_VISIBLE_DEVICES={sh(','.join(str(g.get('index')) for g in gpus))}"),
                   note="CUDA numbers GPUs as `nvidia-smi -L` does, from 0; look for a script or launcher (os.environ, a job wrapper) that sets it"),
    )


def capabilities_without_compute(tokens: Iterable[str], request: bool = False) -> list[str] | None:
    """The driver capabilities `tokens` grant, when they leave out compute; else None: for
    compute or all among them, for none at all (then the image's ENV or the default applies),
    and for a word that is no driver capability (prose, a template like ${VAR}). `request`: the
    list of a Docker device request, where gpu and nvidia select the driver and grant nothing."""
    caps = [c for c in (t.strip().strip("'\"").lower() for t in tokens) if c]
    if not caps or "compute" in caps or "all" in caps:
        return None
    if any(c not in DRIVER_CAPABILITIES and not (request and c in _REQUEST_ONLY) for c in caps):
        return None
    granted = [c for c in caps if c in DRIVER_CAPABILITIES]
    return granted or None


_CAPS_FIX = FixRef(commands=("docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility IMAGE ...",
                             "docker run --gpus 'all,\"capabilities=compute,utility\"' IMAGE ..."),
                   note="compose: capabilities: [gpu, compute, utility] in the device reservation (driver nvidia); an image: "
                        "ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility in its Dockerfile; compute is what mounts libcuda.so.1")


@rule("container-driver-capabilities-lack-compute", needs=("gpus.driver_capabilities",),
      optional=("system.container", "system.nvidia_device_nodes", "driver.userspace_libs", "image.driver_libs"))
def container_driver_capabilities_lack_compute(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads NVIDIA_DRIVER_CAPABILITIES of the inspected environment and fires when it grants
        driver capabilities without compute (nor all): in an image (`check --image`,
        `--image-archive`), its ENV, as a warning; in a running container (or a root folder of
        one, with its --env-file), as an error when the runtime handed the GPU over (a
        /dev/nvidia0 ... node or libnvidia-ml is there) but no libcuda.so.1.

    Why is this bad?
        The NVIDIA container runtime mounts only the driver files the capabilities ask for
        (NVIDIA Container Toolkit, "Driver Capabilities"): utility brings libnvidia-ml and
        nvidia-smi, compute brings libcuda.so.1, which every CUDA program loads. With utility
        alone nvidia-smi works in the container but its header says "CUDA Version: N/A", and
        CUDA finds no driver: torch "Found no NVIDIA driver on your system" or
        torch.cuda.is_available() False, "libcuda.so.1: cannot open shared object file"
        (mudler/LocalAI#11973, containerd/nerdctl#1023). A compose device reservation with
        `capabilities: [gpu, utility]` does it (Docker turns the driver capabilities a request
        lists into NVIDIA_DRIVER_CAPABILITIES, over the image's ENV: docker/compose#8583), as
        do `--gpus 'all,capabilities=utility'` and an image whose ENV says utility or
        graphics,utility. `[gpu]` alone sets none: the image's ENV or the toolkit's default
        applies, utility,compute today but utility alone in older toolkits (weaviate/weaviate#1736).
        A container started without the GPUs at all is container-started-without-gpus.

    Example
            root@0f3c2a...:/# nvidia-smi | head -3
            | NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: N/A      |
            root@0f3c2a...:/# echo $NVIDIA_DRIVER_CAPABILITIES
            utility

    Fix
        Ask for compute beside utility:
            docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility IMAGE ...
            docker run --gpus 'all,"capabilities=compute,utility"' IMAGE ...
        compose: capabilities: [gpu, compute, utility] in the device reservation; an image:
        ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility in its Dockerfile.
    """
    value = facts["gpus.driver_capabilities"]
    if value is None:
        return None  # unset: the toolkit's default (utility,compute)
    caps = capabilities_without_compute(str(value).split(","))
    if caps is None:
        return None
    said = f"NVIDIA_DRIVER_CAPABILITIES={str(value)!r} grants {', '.join(caps)} but not compute"
    evidence: dict[str, Any] = {"gpus.driver_capabilities": value}
    if facts.get("image.driver_libs") is not None:  # an image (the probe says None on anything else)
        return Hit(
            f"the image's ENV sets {said}: the NVIDIA runtime mounts no libcuda.so.1 into its containers (nvidia-smi works, "
            "CUDA finds no driver) unless they are started with compute",
            evidence=evidence, severity=Severity.WARNING,
            fix=FixRef(commands=("ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility   # in the Dockerfile",) + _CAPS_FIX.commands,
                       note="leave it as it is for an image that only runs nvidia-smi or NVML (a monitoring agent)"),
        )
    if facts.get("system.container") is not True:
        return None  # on a host the variable steers nothing: the runtime reads it from a container's environment
    libs = facts.get("driver.userspace_libs")
    if libs is None:
        return Hit(f"this container's {said} (which driver libraries are here is unknown: {facts.why('driver.userspace_libs')}): "
                   "the NVIDIA runtime mounts libcuda.so.1 only for compute", evidence=evidence, fix=_CAPS_FIX, severity=Severity.WARNING)
    names = {str(lib.get("name")) for lib in libs}
    if "libcuda" in names:
        return None  # a libcuda is here after all (the image's own is container-image-ships-driver-libs)
    nodes = [str(n) for n in facts.get("system.nvidia_device_nodes") or []]
    gpu_nodes = [n for n in nodes if _GPU_NODE.fullmatch(n)]
    if not gpu_nodes and "libnvidia-ml" not in names:
        return None  # nothing of the GPU was handed over: container-started-without-gpus says so
    handed = ", ".join([f"/dev/{n}" for n in gpu_nodes] + (["libnvidia-ml"] if "libnvidia-ml" in names else []))
    evidence.update({"system.nvidia_device_nodes": nodes, "driver.userspace_libs": sorted(names)})
    return Hit(
        f"this container's {said}: the NVIDIA runtime handed the GPU over ({handed}) but mounted no libcuda.so.1, "
        "so CUDA programs find no driver (torch: \"Found no NVIDIA driver on your system\"), though nvidia-smi works",
        evidence=evidence, fix=_CAPS_FIX,
    )


# ----------------------------------------------------------------------------- containers
@rule("container-started-without-gpus", needs=("system.container",),
      optional=("system.nvidia_device_nodes", "pci.nvidia_gpus", "driver.version"))
def container_started_without_gpus(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Inside a container, looks for the NVIDIA device nodes (/dev/nvidia0 ... one per
        GPU, and /dev/nvidia-uvm) while the host shows NVIDIA GPUs (on the PCI bus, which a
        container sees, or a loaded NVIDIA kernel module).

    Why is this bad?
        A container gets a GPU only when it is started with one: the NVIDIA container runtime
        then creates the device nodes and mounts the driver's libraries (libcuda, nvidia-smi).
        Started without (`docker run` with no `--gpus`, NVIDIA_VISIBLE_DEVICES void or unset,
        a compose service or Kubernetes pod that requests no GPU), it has neither: torch says
        "Found no NVIDIA driver on your system", nvidia-smi is missing or fails, though the
        host's own nvidia-smi works. A container given /dev/nvidia0 and /dev/nvidiactl by hand
        (`--device`) but not /dev/nvidia-uvm runs nvidia-smi yet no CUDA program
        (NVIDIA/nvidia-docker#1085). This is not a missing runtime (container-gpu-runtime-missing:
        Docker then refuses `--gpus`) nor GPUs lost by a running container
        (container-gpu-access-lost: the nodes are there, NVML says "Unknown Error").

    Example
            root@0f3c2a...:/# ls /dev/nvidia*
            ls: cannot access '/dev/nvidia*': No such file or directory

    Fix
        Start the container with the GPUs, and the driver capabilities CUDA needs:
            docker run --gpus all ...                   # Docker 19.03+, NVIDIA Container Toolkit
            podman run --device nvidia.com/gpu=all ...  # CDI
        compose: deploy.resources.reservations.devices with driver nvidia and capabilities
        [gpu] (and compute, utility where the image does not set NVIDIA_DRIVER_CAPABILITIES);
        Kubernetes: resources.limits nvidia.com/gpu.
    """
    if facts["system.container"] is not True:
        return None  # outside a container the nodes are the driver's business (driver-missing)
    listed = facts.get("system.nvidia_device_nodes")
    if listed is None:
        raise NotCheckable(f"system.nvidia_device_nodes unknown: {facts.why('system.nvidia_device_nodes')}")
    nodes = [str(n) for n in listed]
    pci = facts.get("pci.nvidia_gpus") or []
    driver = facts.get("driver.version")
    gpu_nodes = [n for n in nodes if _GPU_NODE.fullmatch(n)]
    if not pci and not driver:
        if facts.known("pci.nvidia_gpus") or facts.known("driver.version") or (gpu_nodes and "nvidia-uvm" in nodes):
            return None  # no NVIDIA GPU behind this container (no-gpu says so), or every node is here
        # Neither the PCI bus nor a driver shown (a report's `ls /dev` alone): "no GPU behind it"
        # would be a guess, and so would "started without them".
        raise NotCheckable(f"whether the host has an NVIDIA GPU is unknown (pci.nvidia_gpus: {facts.why('pci.nvidia_gpus')}; "
                           f"driver.version: {facts.why('driver.version')})")
    host = (f"{len(pci)} NVIDIA GPU(s) on the PCI bus" if pci else "no GPU listed on the PCI bus") + (f", NVIDIA driver {driver} loaded" if driver else "")
    if not gpu_nodes and not driver and not facts.known("driver.version"):
        raise NotCheckable(f"whether the host's NVIDIA driver is loaded is unknown (driver.version: {facts.why('driver.version')}), "
                           "so a container without GPU device nodes cannot be told from a host without a driver")
    if not gpu_nodes and not driver:
        # GPUs on the bus and no NVIDIA module loaded (a container sees the host's
        # /proc/driver/nvidia and /sys/module): the host has no driver, and the runtime
        # could not have given this container a GPU anyway. driver-missing says so.
        return None
    if not gpu_nodes:
        problem = "this container has no GPU device node (no /dev/nvidia0 ...)" + (f"; /dev has only {', '.join(nodes)}" if nodes else "")
        cause = "it was started without the GPUs (no --gpus or GPU device request)"
    elif "nvidia-uvm" not in nodes:
        problem = f"this container has {', '.join('/dev/' + n for n in gpu_nodes)} but not /dev/nvidia-uvm, which every CUDA program opens"
        cause = "its devices were passed by hand (--device) without /dev/nvidia-uvm"
    else:
        return None
    return Hit(
        f"{problem}, while the host has {host}: {cause}",
        evidence={"system.nvidia_device_nodes": nodes, "pci.nvidia_gpus": len(pci), "driver.version": driver},
        fix=FixRef(commands=("docker run --gpus all IMAGE ...   # or: podman run --device nvidia.com/gpu=all IMAGE ...",)
                   + (("docker run --device /dev/nvidia-uvm ...   # beside the devices passed by hand",) if gpu_nodes else ()),
                   note="restart the container with the GPUs: --gpus all (Docker), --device nvidia.com/gpu=all (CDI), a compose device reservation "
                        "with driver nvidia and capabilities [gpu], or a Kubernetes nvidia.com/gpu limit"),
    )


RULES: tuple[Rule, ...] = (container_started_without_gpus, container_driver_capabilities_lack_compute, cuda_visible_devices_hides_gpus)


# ----------------------------------------------------------------------------- a report's text
# `fwdoctor triage` runs these where the rules above could not (a report shows no /dev listing,
# no GPU list beside CUDA_VISIBLE_DEVICES); they read the rows of doctor/kb/errors.yaml that
# matched (report.errors) and what those rows' hooks recorded around them.
_NO_DEVICE_KINDS = ("cuda-no-device", "torch-no-cuda-gpus")
# An NVIDIA image's own entrypoint check ("The NVIDIA Driver was not detected", issue 26): its hook
# keeps it only where the command that started the container asked for no GPU.
_NO_GPU_IN_CONTAINER_KINDS = ("no-nvidia-driver", "tf-no-dev-nvidia0", "nvidia-smi-not-found", "ngc-driver-not-detected")
# issue 26 (containers): Paddle's "CUDA device is not set properly" counts no device for more than one
# reason (an image whose CUDA the driver cannot run, too: Paddle#33147), so alone it is a warning.
_WEAK_NO_GPU_KINDS = ("paddle-no-cuda-device",)
_NO_GPU_IN_CONTAINER_KINDS = (*_NO_GPU_IN_CONTAINER_KINDS, *_WEAK_NO_GPU_KINDS)
# Driver capabilities without compute, as a report shows them (the rows' hooks keep only those),
# and nvidia-smi's "CUDA Version: N/A": NVML answered, libcuda was not there.
_CAPS_KINDS = ("nvidia-driver-capabilities-no-compute", "gpu-request-capabilities-no-compute")
_CUDA_NA_KIND = "nvidia-smi-cuda-version-na"
_NO_CUDA_DRIVER_KINDS = ("no-nvidia-driver", "libcuda-so-1-not-found", *_NO_DEVICE_KINDS)
# TensorFlow's cuda_diagnostics after cuInit failed: no /proc/driver/nvidia/version, so no NVIDIA
# kernel module is loaded where it ran (a machine without a GPU, a driver not loaded): no
# CUDA_VISIBLE_DEVICES value removes the module, so the "no device" beside it is not that.
_NO_KERNEL_DRIVER_KINDS = ("tf-kernel-driver-not-running",)
# issue 26 (containers): a compose GPU reservation with neither count nor device_ids (doctor/kb/errors.yaml).
_COMPOSE_NO_COUNT_KIND = "compose-gpu-reservation-without-count"
# issue 26 (containers): the command that started a container asked for no GPU and what ran in it found
# none (its hook keeps only those; doctor/kb/errors.yaml).
_RUN_WITHOUT_GPUS_KIND = "container-run-without-gpus"
REPORT_KINDS = frozenset((*_NO_DEVICE_KINDS, *_NO_GPU_IN_CONTAINER_KINDS, *_CAPS_KINDS, _CUDA_NA_KIND, "libcuda-so-1-not-found", _COMPOSE_NO_COUNT_KIND,
                          _RUN_WITHOUT_GPUS_KIND))


def _said(facts: Facts, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    return [e for e in facts.get("report.errors") or [] if e.get("kind") in kinds]


def _quote(error: dict[str, Any]) -> str:
    return f"report line {error['line']}: \"{error['text']}\""


def _capabilities_shown(facts: Facts) -> list[dict[str, Any]]:
    """Where the report shows a container's driver capabilities without compute: a setting
    (compose `capabilities:`, --gpus, NVIDIA_DRIVER_CAPABILITIES) or, in a container,
    nvidia-smi's "CUDA Version: N/A"."""
    return _said(facts, _CAPS_KINDS) + [e for e in _said(facts, (_CUDA_NA_KIND,)) if e.get("container")]


@rule("cuda-visible-devices-hides-gpus", needs=("report.errors",), optional=("platform.wsl", "report.wsl_named"))
def visible_devices_hide_gpus(facts: Facts, kb: KB) -> Hit | None:
    """CUDA's "no CUDA-capable device is detected" (CUDA_ERROR_NO_DEVICE) or torch's "No CUDA
    GPUs are available": the driver loaded and found no GPU it may use, which CUDA_VISIBLE_DEVICES
    causes far more often than anything else (see cuda-visible-devices-hides-gpus, which needs
    the variable and the host's GPUs). Not raised where the report shows it set to a list
    starting at index 0, which hides no GPU of a host that has one, nor where TensorFlow says
    no NVIDIA kernel driver is loaded ("kernel driver does not appear to be running on this
    host"): no GPU there for the variable to hide. Nor, unless the report shows the variable,
    in a report from WSL: there a libcuda other than WSL's own (/usr/lib/wsl/lib) answers
    cuInit with CUDA_ERROR_NO_DEVICE (numba/numba#7106, NVIDIA/cuml#5624, NVIDIA/cuml#6218;
    fwdoctor.rules.report_text.wsl_libcuda_not_linked says so). An error where the report
    shows the variable, a warning where it does not."""
    said = _said(facts, _NO_DEVICE_KINDS)
    if not said or _said(facts, _NO_KERNEL_DRIVER_KINDS):
        return None
    shown = next((e for e in said if e.get("visible_devices")), None)
    if shown is None and (facts.get("platform.wsl") or facts.get("report.wsl_named")):
        return None  # WSL: the libcuda loaded, not the variable (see the docstring)
    if shown is None and _capabilities_shown(facts):
        return None  # no libcuda mounted: container-driver-capabilities-lack-compute says so
    if shown is None and _said(facts, (_RUN_WITHOUT_GPUS_KIND,)):
        return None  # the container was started without any GPU: container-started-without-gpus says so
    if shown is not None and str(shown.get("visible_value", "")).split(",")[0].strip() == "0":
        return None
    if shown is not None:
        why = f"and the report sets CUDA_VISIBLE_DEVICES={str(shown.get('visible_value', ''))!r} ({shown['visible_devices']}): an index or UUID this host does not have, or none"
    else:
        why = ("the report does not show CUDA_VISIBLE_DEVICES: most often it (from the shell, a job launcher or the script's os.environ) "
               "names a GPU index this host does not have, or none")
    return Hit(
        f"CUDA found no GPU it may use ({_quote(said[0])}), {why}",
        evidence={"report.errors": said},
        fix=FixRef(commands=("nvidia-smi -L   # the GPUs and their indices, from 0", "echo \"${CUDA_VISIBLE_DEVICES-unset}\"", "grep -rn CUDA_VISIBLE_DEVICES .   # a script that sets it"),
                   note="unset CUDA_VISIBLE_DEVICES or set it to indices nvidia-smi -L lists (a one-GPU machine has only 0); "
                        "in a container, also check it was started with the GPUs (--gpus all)"),
        # unshown, the variable is the likeliest cause, not a shown one: a container without
        # its GPUs or a GPU that fell off the bus read the same
        severity=Severity.ERROR if shown is not None else Severity.WARNING,
    )


@rule("container-started-without-gpus", needs=("report.errors",))
def container_without_gpus_said(facts: Facts, kb: KB) -> Hit | None:
    """torch's "Found no NVIDIA driver on your system", TensorFlow's "/dev/nvidia0 does not
    exist" or the shell's "nvidia-smi: command not found" in a report that names a container
    (docker, podman, compose, Kubernetes): the NVIDIA runtime gives a container the driver's
    device nodes, libraries and nvidia-smi only when it is started with the GPUs (see
    container-started-without-gpus, which needs the container's /dev)."""
    said = [e for e in _said(facts, _NO_GPU_IN_CONTAINER_KINDS) if e.get("container")]
    started = _said(facts, (_RUN_WITHOUT_GPUS_KIND,))
    if not (said or started) or _capabilities_shown(facts):
        return None  # the GPU was handed over without compute: container-driver-capabilities-lack-compute
    if not said:
        # issue 26 (containers): the report shows the command, which asks for no GPU, and what ran in it.
        first = started[0]
        singularity = first.get("engine") in ("singularity", "apptainer")
        asked = "--nv" if singularity else "--gpus, --runtime=nvidia, a CDI device or NVIDIA_VISIBLE_DEVICES"
        return Hit(
            f"the container was started without the GPUs: {first.get('command')} asks for none (no {asked}), "
            f"and what ran in it found no GPU ({first.get('symptom')})",
            evidence={"report.errors": started},
            fix=FixRef(commands=(("singularity exec --nv IMAGE ...   # apptainer alike: --nv binds the host's driver libraries and GPUs",) if singularity else
                                 ("docker run --gpus all IMAGE ...   # or: podman run --device nvidia.com/gpu=all IMAGE ...",
                                  "docker run --rm --gpus all ubuntu nvidia-smi   # the host's NVIDIA Container Toolkit hands GPUs over")),
                       note="start the container with the GPUs; on a Jetson, with --runtime nvidia; the host needs the NVIDIA Container Toolkit"),
        )
    weak = all(e.get("kind") in _WEAK_NO_GPU_KINDS for e in said)
    return Hit(
        f"no NVIDIA driver or GPU inside a container ({said[0]['container']}): {_quote(said[0])}; "
        "it was started without the GPUs (no --gpus, or a device request that leaves out the compute capability)"
        + ("; `nvidia-smi` in the container settles it: it runs only where the GPUs were handed over" if weak else ""),
        evidence={"report.errors": said},
        severity=Severity.WARNING if weak else None,
        fix=FixRef(commands=("docker run --gpus all IMAGE ...   # or: podman run --device nvidia.com/gpu=all IMAGE ...",),
                   note="compose: a device reservation with driver nvidia and capabilities [gpu] (and compute, utility where the image "
                        "does not set NVIDIA_DRIVER_CAPABILITIES); Kubernetes: a nvidia.com/gpu limit; the host needs the NVIDIA Container Toolkit"),
    )


@rule("container-driver-capabilities-lack-compute", needs=("report.errors",))
def driver_capabilities_said(facts: Facts, kb: KB) -> Hit | None:
    """Driver capabilities without compute in a report (a compose `capabilities: [gpu, utility]`,
    `--gpus 'all,capabilities=utility'`, docker inspect's "Capabilities", NVIDIA_DRIVER_CAPABILITIES
    in `docker run -e`, compose, a Dockerfile ENV or an env dump), or nvidia-smi's "CUDA Version:
    N/A" inside a container: the runtime mounted no libcuda.so.1 (see
    container-driver-capabilities-lack-compute, which needs the container's environment). An
    error where the report also shows CUDA finding no driver, a warning on the setting alone."""
    shown = _capabilities_shown(facts)
    if not shown:
        return None
    first = shown[0]
    symptoms = [e for e in _said(facts, (_CUDA_NA_KIND, *_NO_CUDA_DRIVER_KINDS)) if e is not first]
    if first.get("kind") == _CUDA_NA_KIND:
        message = (f"nvidia-smi runs in the container ({first['container']}) but finds no CUDA driver ({_quote(first)}): the NVIDIA runtime "
                   "mounted its utility libraries and no libcuda.so.1, so the container's driver capabilities leave out compute "
                   "(a compose `capabilities:` list or NVIDIA_DRIVER_CAPABILITIES without it, or neither on an older toolkit whose default was utility)")
    else:
        caps = ", ".join(first.get("caps") or []) or "no compute"
        message = (f"the report gives a container the driver capabilities {caps} without compute ({_quote(first)}): the NVIDIA runtime "
                   "then mounts no libcuda.so.1 (nvidia-smi works, CUDA finds no driver)")
        if symptoms:
            message += f"; the report shows it: {_quote(symptoms[0])}"
    return Hit(message, evidence={"report.errors": shown + symptoms}, fix=_CAPS_FIX,
               severity=None if symptoms or first.get("kind") == _CUDA_NA_KIND else Severity.WARNING)


# Docker Compose 2.30.0 took compose-go 2.3.0, which reads a reservation without count or
# device_ids as count: all (compose-spec/compose-go@v2.3.0:types/device.go); 1.x passed it as all.
_COMPOSE_COUNT_DEFAULTS_ALL = Version("2.30")


@rule("container-started-without-gpus", needs=("report.errors",))
def compose_reservation_without_count(facts: Facts, kb: KB) -> Hit | None:
    """A compose file's GPU reservation (driver nvidia, capabilities [gpu]) with neither count
    nor device_ids: Docker Compose 2.0 to 2.29 sends it to the engine as Count 0, so the
    container starts without any GPU (docker/docs#20588, nv-morpheus/Morpheus#2099); 2.30 and
    later read it as count: all. An error where the report shows a compose 2.x before 2.30, a
    warning where it shows no version, nothing for 1.x or 2.30+."""
    said = _said(facts, (_COMPOSE_NO_COUNT_KIND,))
    if not said:
        return None
    first = said[0]
    version = parse_version(first.get("compose"))
    if version is not None and (version.major < 2 or version >= _COMPOSE_COUNT_DEFAULTS_ALL):
        return None
    shown = f"Docker Compose {first['compose']}" if version is not None else "Docker Compose before 2.30 (the report does not show `docker compose version`)"
    return Hit(
        f"the compose file reserves a GPU device with neither count nor device_ids ({first.get('request', _quote(first))}): "
        f"{shown} sends that as Count 0, so the container starts without any GPU",
        evidence={"report.errors": said},
        fix=FixRef(commands=("docker compose version   # 2.30 and later read a missing count as all",),
                   note="add `count: all` (or `count: 1`, or `device_ids: ['0']`) to the device next to `driver: nvidia` and `capabilities: [gpu]`, "
                        "then `docker compose up -d --force-recreate`"),
        severity=None if version is not None else Severity.WARNING,
    )


REPORT_RULES: tuple[Rule, ...] = (driver_capabilities_said, visible_devices_hide_gpus, container_without_gpus_said,
                                  compose_reservation_without_count)
