"""Findings only a report's own text establishes (judged by `fwdoctor triage`, not by `check`).

Each rule here reads `report.errors` (the rows of doctor/kb/errors.yaml that matched the
pasted text) for a cause no probe observes on a live host yet: a container's lost device
cgroup, Docker without the NVIDIA runtime, WSL2's libcuda copies, an extension compiled
against another torch, a system libstdc++ or an mkl too old or too new for what loads it,
a CUDA library a program could not open.
No regular rule has these ids, so triage judges them from the text alone
(fwdoctor.triage.judge); they are not in fwdoctor.rules.RULES, so a live `check` never
lists them as "not checked". When a probe learns one of these facts, its rule moves to the
area's module and this one becomes its report-side twin, as fwdoctor.triage.rules does.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule, sh
from fwdoctor.versions import parse_version

if TYPE_CHECKING:
    from fwdoctor.kb import KB


@rule("container-gpu-access-lost", needs=("report.errors",))
def container_gpu_access_lost(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads NVML's "Failed to initialize NVML: Unknown Error" in a report.

    Why is this bad?
        In a container that could use its GPUs before, NVML answers "Unknown Error" when the
        container's device cgroup no longer allows the NVIDIA device nodes: systemd re-applied
        the container unit's device rules (`systemctl daemon-reload`, often from an unattended
        package upgrade) and recent runc versions need /dev/char links to the NVIDIA devices to
        keep them. Every running GPU container of the host loses its GPUs at once while the
        host's own nvidia-smi still works (NVIDIA's notice, NVIDIA/nvidia-docker#1730).

    Example
            root@098b49afe624:/# nvidia-smi
            Failed to initialize NVML: Unknown Error

    Fix
        Restart the container (it gets its devices back), then stop it from recurring: create the
        /dev/char links (`sudo nvidia-ctk system create-dev-char-symlinks --create-all`, and the
        udev rule NVIDIA's notice gives) or run Docker with the cgroupfs driver
        (`"exec-opts": ["native.cgroupdriver=cgroupfs"]` in /etc/docker/daemon.json).
    """
    said = report_errors(facts, "nvml-unknown-error")
    if not said:
        return None
    return Hit(
        f"NVML cannot open the GPU device nodes: {report_line(said[0])}; in a container that used its GPUs before, "
        "systemd re-applied the container's device cgroup (systemctl daemon-reload) and took them away",
        evidence={"report.errors": said},
        fix=FixRef(commands=("sudo nvidia-ctk system create-dev-char-symlinks --create-all",),
                   note="restart the affected containers; the /dev/char links (or Docker's cgroupfs driver) keep a later daemon-reload from detaching them (NVIDIA/nvidia-docker#1730)"),
    )


@rule("container-gpu-runtime-missing", needs=("report.errors",))
def container_gpu_runtime_missing(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads Docker's refusal to start a container with `--gpus` ("could not select device
        driver "" with capabilities: [[gpu]]") or with `--runtime=nvidia` ("unknown or invalid
        runtime name: nvidia", older Docker: "Unknown runtime specified nvidia"),
        nvidia-container-cli's "load library failed: libnvidia-ml.so.1", an NVIDIA runtime binary
        Docker is set up to run but that is not installed ("exec: "nvidia-container-runtime":
        executable file not found in $PATH", "...-runtime-hook"), nvidia-container-cli's "ldcache
        error: open failed: /sbin/ldconfig.real: no such file or directory" (its config names an
        ldconfig this host does not have), a CDI engine's
        "unresolvable CDI devices nvidia.com/gpu=all" (podman, Docker 25+) and the Kubernetes
        device plugin's "If this is a GPU node, did you configure the NVIDIA Container
        Toolkit?" ("Incompatible strategy detected auto", "could not load NVML library") in a report;
        and the scheduler's "Insufficient nvidia.com/gpu" where the report's node lists no
        nvidia.com/gpu (a warning where it shows no node).

    Why is this bad?
        `--gpus` (and compose's `capabilities: [gpu]`) needs the NVIDIA Container Toolkit
        registered with Docker; without it Docker knows no device driver for GPUs. When the
        toolkit's hook runs but cannot load the host's libnvidia-ml.so.1, the host has no NVIDIA
        driver its runtime can see: no driver installed, or Docker installed as a snap, whose
        confined runtime does not see the host's driver libraries on Ubuntu classic
        (canonical/docker-snap#148). No container of this host gets a GPU.

    Example
            docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].

    Fix
        Install the NVIDIA Container Toolkit and register it with Docker
        (`sudo nvidia-ctk runtime configure --runtime=docker`, then restart Docker). If
        `snap list docker` lists Docker, replace the snap with Docker's own packages (docker-ce).
    """
    no_driver = report_errors(facts, "docker-no-gpu-device-driver")
    no_nvml = report_errors(facts, "nvidia-container-cli-no-nvml")
    # --runtime=nvidia (compose `runtime: nvidia`, default-runtime) names a runtime dockerd was
    # never given: the toolkit's runtime is not in the config the running daemon loaded.
    no_runtime = report_errors(facts, "docker-unknown-runtime-nvidia")
    if no_runtime and not no_driver:
        return Hit(
            f"Docker has no runtime named nvidia (the NVIDIA Container Toolkit's runtime is not registered with this daemon): {report_line(no_runtime[0])}",
            evidence={"report.errors": no_runtime + no_nvml},
            fix=FixRef(commands=("sudo apt-get install -y nvidia-container-toolkit   # from NVIDIA's repository; dnf/zypper alike",
                                 "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker",
                                 "docker info | grep -i runtimes   # must list nvidia"),
                       note="the daemon reads /etc/docker/daemon.json only when it starts: restart it after an edit; "
                            "Docker Desktop keeps its own daemon config (Settings > Docker Engine); or drop --runtime=nvidia and use --gpus all"),
        )
    if no_driver:
        return Hit(
            f"Docker has no device driver for GPUs (the NVIDIA Container Toolkit is not installed or not registered): {report_line(no_driver[0])}",
            evidence={"report.errors": no_driver + no_nvml},
            fix=FixRef(commands=("sudo apt-get install -y nvidia-container-toolkit   # from NVIDIA's repository; dnf/zypper alike",
                                 "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker"),
                       note="`snap list docker`: a snap-installed Docker cannot use the toolkit on Ubuntu classic; install docker-ce instead"),
        )
    # issue 26 (containers): the toolkit's config names an ldconfig this host does not have.
    ldconfig = report_errors(facts, "nvidia-container-cli-ldconfig-missing")
    if ldconfig:
        path = ldconfig[0].get("ldconfig", "ldconfig")
        return Hit(
            f"nvidia-container-cli cannot run the host's ldconfig its config names ({path}): {report_line(ldconfig[0])}",
            evidence={"report.errors": ldconfig},
            fix=FixRef(commands=("ls -l /sbin/ldconfig* /usr/sbin/ldconfig*",
                                 "grep -n ldconfig /etc/nvidia-container-runtime/config.toml"),
                       note="set ldconfig in /etc/nvidia-container-runtime/config.toml to the one this host has (\"@/sbin/ldconfig.real\" is Ubuntu's; "
                            "Debian, Fedora, Arch: \"@/sbin/ldconfig\"), or install the toolkit package built for this distribution; "
                            "a host without ldconfig needs glibc's (libc-bin)"),
        )
    # issue 26 (containers): dockerd's config or the runtime's hook names an NVIDIA binary that is
    # not installed (removed, or the EOL nvidia-container-runtime-hook package's): doctor/kb/errors.yaml.
    no_binary = report_errors(facts, "nvidia-runtime-binary-missing")
    if no_binary:
        return Hit(
            f"Docker is set up to run {no_binary[0].get('binary', 'an NVIDIA runtime binary')}, which is not installed: {report_line(no_binary[0])}",
            evidence={"report.errors": no_binary + no_nvml},
            fix=FixRef(commands=("sudo apt-get install -y nvidia-container-toolkit   # from NVIDIA's repository; dnf/zypper alike",
                                 "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker",
                                 "which nvidia-container-runtime nvidia-container-runtime-hook"),
                       note="the toolkit ships nvidia-container-runtime and the hook (nvidia-container-runtime-hook links to nvidia-container-toolkit); "
                            "a daemon.json or default-runtime naming a runtime that is gone breaks every container, GPU or not"),
        )
    # issue 26: engines that take GPUs through CDI specs, and the Kubernetes device plugin, whose
    # pod sees the GPUs only through the NVIDIA runtime (doctor/kb/errors.yaml).
    # A spec the report's `nvidia-ctk cdi list` lists, or one this engine is too old to read,
    # is there: cdi-spec-too-new-for-engine speaks for it (issue 26, containers).
    no_cdi = [e for e in report_errors(facts, "cdi-device-unresolvable") if not e.get("listed") and _cdi_too_new(e) is None]
    if report_errors(facts, "cdi-spec-unknown-field"):
        no_cdi = []  # the engine's own log says it refused the spec there is
    if no_cdi and not no_nvml:
        return Hit(
            f"no CDI specification names {no_cdi[0].get('device', 'the GPU')} for this container engine: {report_line(no_cdi[0])}",
            evidence={"report.errors": no_cdi},
            fix=FixRef(commands=("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
                                 "nvidia-ctk cdi list   # must list nvidia.com/gpu=all"),
                       note="generate it again after every driver upgrade; an engine reads only its CDI folders (/etc/cdi, /var/run/cdi; "
                            "podman --cdi-spec-dir); Docker needs 25+ with CDI enabled, or use --gpus all with the NVIDIA runtime"),
        )
    plugin = report_errors(facts, "k8s-device-plugin-no-nvml")
    if plugin and not no_nvml:
        return Hit(
            f"the Kubernetes device plugin finds no GPU in its pod (the node's container runtime does not run it through the NVIDIA runtime): {report_line(plugin[0])}",
            evidence={"report.errors": plugin},
            fix=FixRef(commands=("sudo nvidia-ctk runtime configure --runtime=containerd --set-as-default && sudo systemctl restart containerd",
                                 "kubectl describe node NODE | grep nvidia.com/gpu   # Capacity/Allocatable once the plugin sees the GPUs"),
                       note="configure the runtime the kubelet uses (containerd, CRI-O: --runtime=crio; k3s/microk8s/RKE2 keep their own containerd config), "
                            "or create a RuntimeClass nvidia and deploy the plugin with runtimeClassName: nvidia"),
        )
    # issue 26 (containers): the scheduler finds no free nvidia.com/gpu. Only where the report's node
    # lists none (error) or shows no node at all (warning); a node advertising GPUs is not this.
    unscheduled = [e for e in report_errors(facts, "k8s-insufficient-gpu") if not e.get("unhealthy") and not e.get("registered") and not e.get("capacity")]
    if unscheduled and not no_nvml:
        first = unscheduled[0]
        shown = "capacity" in first
        where = (f"and the node lists no nvidia.com/gpu ({first.get('node')})" if shown else
                 "and the report does not show the node's nvidia.com/gpu (`kubectl describe node`)")
        return Hit(
            f"the Kubernetes scheduler finds no node with a free GPU: {report_line(first)} {where}; most often the NVIDIA device plugin "
            "advertises none, because it is not deployed or the node's container runtime does not run it through the NVIDIA runtime",
            evidence={"report.errors": unscheduled},
            fix=FixRef(commands=("kubectl describe node NODE | grep nvidia.com/gpu   # Capacity/Allocatable: 0 or absent means the plugin advertises none",
                                 "kubectl -n kube-system logs -l name=nvidia-device-plugin-ds   # or the gpu-operator namespace's device-plugin pod",
                                 "sudo nvidia-ctk runtime configure --runtime=containerd --set-as-default && sudo systemctl restart containerd"),
                       note="deploy the device plugin (or the GPU operator); configure the runtime the kubelet uses as NVIDIA's default "
                            "(containerd, CRI-O: --runtime=crio, Docker: default-runtime nvidia), or create a RuntimeClass nvidia and run the plugin with it"),
            severity=None if shown else Severity.WARNING,
        )
    if no_nvml:
        return Hit(
            f"the NVIDIA container runtime cannot load the host's driver library: {report_line(no_nvml[0])}; no NVIDIA driver on the host, or Docker installed as a snap",
            evidence={"report.errors": no_nvml},
            fix=FixRef(commands=("nvidia-smi   # on the host: is a driver installed?", "snap list docker   # a snap Docker cannot see the host's driver libraries"),
                       note="install the NVIDIA driver on the host, or replace the snap Docker with docker-ce and nvidia-container-toolkit"),
        )
    return None


# issue 26 (containers): CDI spec v0.7.0 (toolkit 1.19.1's default) needs podman 5.1 or later
# (NVIDIA/nvidia-container-toolkit#1860, #1940 and the 1.19.1 release notes' Known Issues).
_CDI_070_TOOLKIT = Version("1.19.1")
_CDI_070_PODMAN = Version("5.1")


def _cdi_too_new(error: dict[str, Any]) -> Severity | None:
    """For an "unresolvable CDI devices" entry: ERROR where the report shows a podman older than
    5.1 beside a toolkit that writes spec v0.7.0; WARNING where it shows the old podman and its
    own `nvidia-ctk cdi list` lists the device (a spec is there) without the toolkit's version;
    None otherwise (a toolkit shown older than 1.19.1 writes a spec that podman reads)."""
    podman, toolkit = parse_version(error.get("podman")), parse_version(error.get("toolkit"))
    if podman is None or podman >= _CDI_070_PODMAN:
        return None
    if toolkit is not None:
        return Severity.ERROR if toolkit >= _CDI_070_TOOLKIT else None
    return Severity.WARNING if error.get("listed") else None


_CDI_FIX = FixRef(
    commands=("podman --version   # CDI spec v0.7.0 needs podman >= 5.1",
              "sudo nvidia-ctk cdi generate --feature-flag no-additional-gids-for-device-nodes --output=/etc/cdi/nvidia.yaml",
              "grep -H cdiVersion /etc/cdi/*.yaml /var/run/cdi/*.yaml   # the spec versions the engine reads"),
    note="upgrade the engine (podman >= 5.1) or keep the toolkit's spec at an older version: the feature flag leaves out additionalGids, "
         "and NVIDIA_CTK_CDI_GENERATE_FEATURE_FLAGS=no-additional-gids-for-device-nodes in /etc/nvidia-container-toolkit/nvidia-cdi-refresh.env "
         "keeps the automatic refresh (/var/run/cdi/nvidia.yaml) from writing it again; or pin nvidia-container-toolkit to 1.18.x")


@rule("cdi-spec-too-new-for-engine", needs=("report.errors",))
def cdi_spec_too_new_for_engine(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads a CDI engine's refusal of the NVIDIA spec in its debug log ("failed to parse CDI
        Spec ... json: unknown field "additionalGids""), and an "unresolvable CDI devices" in a
        report that shows a podman older than 5.1 beside NVIDIA Container Toolkit 1.19.1 or
        later (or beside its own `nvidia-ctk cdi list` listing the device, then a warning).

    Why is this bad?
        Toolkit 1.19.1 writes its CDI spec (/etc/cdi/nvidia.yaml, and the automatic
        /var/run/cdi/nvidia.yaml) as version v0.7.0 of the CDI schema, with additionalGids on the
        device nodes. An engine whose CDI parser is older (podman before 5.1, Ubuntu 24.04's
        podman 4.9.3) refuses the whole file on the unknown field, so no device of it resolves:
        every `--device nvidia.com/gpu=...` fails with "unresolvable CDI devices" although the
        spec names the device. Regenerating the spec the usual way writes the same file again.

    Example
            Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all
            failed to parse CDI Spec "/var/run/cdi/nvidia.yaml": ... json: unknown field "additionalGids"

    Fix
        Upgrade podman to 5.1 or later, or generate the spec without the new field
        (`sudo nvidia-ctk cdi generate --feature-flag no-additional-gids-for-device-nodes
        --output=/etc/cdi/nvidia.yaml`, and the same flag in
        /etc/nvidia-container-toolkit/nvidia-cdi-refresh.env), or stay on toolkit 1.18.x.
    """
    refused = report_errors(facts, "cdi-spec-unknown-field")
    if refused:
        return Hit(
            f"the container engine refuses the CDI spec: it does not know its field {refused[0].get('field', '')!r} ({report_line(refused[0])}): "
            "the spec is of a newer CDI version (toolkit 1.19.1+ writes v0.7.0) than the engine's parser reads, so none of its devices resolves",
            evidence={"report.errors": refused + report_errors(facts, "cdi-device-unresolvable")}, fix=_CDI_FIX)
    for error in report_errors(facts, "cdi-device-unresolvable"):
        severity = _cdi_too_new(error)
        if severity is None:
            continue
        shown = f"podman {error['podman']}" + (f" with NVIDIA Container Toolkit {error['toolkit']}" if error.get("toolkit") else "")
        listed = f"; the report's `nvidia-ctk cdi list` lists it ({error['listed']})" if error.get("listed") else ""
        return Hit(
            f"{error.get('device', 'the GPU')} is unresolvable ({report_line(error)}) under {shown}{listed}: podman before 5.1 cannot read "
            "the CDI spec v0.7.0 that NVIDIA Container Toolkit 1.19.1 and later write"
            + ("" if severity is Severity.ERROR else " (the report does not show the toolkit's version: `nvidia-ctk --version`)"),
            evidence={"report.errors": [error]}, fix=_CDI_FIX, severity=None if severity is Severity.ERROR else severity)
    return None


@rule("container-gpu-devices-denied", needs=("report.errors",))
def container_gpu_devices_denied(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads NVML's "Failed to initialize NVML: Insufficient Permissions" in a report that names
        a container (docker, podman, compose, Kubernetes).

    Why is this bad?
        The runtime gave the container the NVIDIA device nodes, but the process may not open
        them. With SELinux enforcing (Fedora, RHEL, CentOS; Fedora's moby-engine and podman
        label containers) the container's type may not use devices until the
        container_use_devices boolean is on; rootless podman with a non-root container user
        also needs the nodes' group (NVIDIA/nvidia-container-toolkit#33, #210,
        NVIDIA/nvidia-docker#676). nvidia-smi and every CUDA program in the container fail.

    Example
            $ docker run --rm --gpus all nvidia/cuda:11.0.3-base-ubuntu20.04 nvidia-smi
            Failed to initialize NVML: Insufficient Permissions

    Fix
        On an SELinux host (`getenforce` says Enforcing): `sudo setsebool -P container_use_devices 1`,
        or run that container with `--security-opt label=disable`. Rootless podman with a non-root
        user in the container: `--group-add keep-groups`, or run the container's process as root.
    """
    said = [e for e in report_errors(facts, "nvml-insufficient-permissions") if e.get("container")]
    if not said:
        return None
    return Hit(
        f"NVML in a container ({said[0]['container']}) may not open the NVIDIA device nodes it was given: {report_line(said[0])}; "
        "SELinux denies containers devices unless container_use_devices is on (Fedora, RHEL), or a non-root container user lacks the nodes' group",
        evidence={"report.errors": said},
        fix=FixRef(commands=("getenforce   # Enforcing: SELinux is the cause",
                             "sudo setsebool -P container_use_devices 1",
                             "docker run --security-opt label=disable --gpus all IMAGE nvidia-smi   # the same test with SELinux labels off for this container"),
                   note="rootless podman with a non-root user in the container: add --group-add keep-groups, or run the process as root in the container"),
    )


@rule("nvidia-uvm-broken", needs=("report.errors",))
def nvidia_uvm_broken(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads torch's "CUDA unknown error - this may be due to an incorrectly set up
        environment" (cuInit's CUDA_ERROR_UNKNOWN) in a report that does not name WSL.

    Why is this bad?
        cuInit answers "unknown error" while the driver itself works (nvidia-smi lists the GPU)
        when the nvidia_uvm kernel module is not loaded (no /dev/nvidia-uvm, as on a host that
        booted without it) or broke in a suspend/resume of the machine: every CUDA program fails,
        on the host and in every container, until the module is reloaded (pytorch/pytorch#49081,
        pop-os/default-settings#64). torch's hint about CUDA_VISIBLE_DEVICES is generic; nothing
        in the environment or image is wrong.

    Example
            RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.

    Fix
        Stop the CUDA programs and reload the module: `sudo rmmod nvidia_uvm && sudo modprobe
        nvidia_uvm` (or `sudo nvidia-modprobe -u -c 0` where /dev/nvidia-uvm is missing), or reboot.
        Laptops: enable NVIDIA's suspend services (nvidia-suspend, nvidia-resume) so it keeps working.
    """
    said = [e for e in report_errors(facts, "torch-cuda-unknown-error") if not e.get("wsl")]
    if not said:
        return None
    return Hit(
        f"CUDA could not initialise ({report_line(said[0])}): where nvidia-smi still lists the GPU, cuInit's unknown error is the nvidia_uvm "
        "module not loaded or broken by a suspend/resume (torch's CUDA_VISIBLE_DEVICES hint is generic); the text alone does not show which",
        evidence={"report.errors": said},
        # A warning: other causes give cuInit the same error; `lsmod` and `ls -l /dev/nvidia-uvm` settle it.
        severity=Severity.WARNING,
        fix=FixRef(commands=("ls -l /dev/nvidia-uvm; lsmod | grep nvidia_uvm",
                             "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm   # after stopping the CUDA programs; or: sudo nvidia-modprobe -u -c 0"),
                   note="or reboot; in a container run this on the host, then restart the container; "
                        "on a laptop enable nvidia-suspend.service and nvidia-resume.service so suspend keeps CUDA working"),
    )



# For a program that opens the unversioned libcuda.so, which only /usr/lib/wsl/lib holds.
_WSL_UNVERSIONED_FIX = FixRef(
    commands=("export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH   # for programs that open libcuda.so",),
    note="or, in C:\\Windows\\System32\\lxss\\lib, replace libcuda.so and libcuda.so.1 by links to libcuda.so.1.1 (mklink, as administrator)")

@rule("wsl-libcuda-not-linked", needs=("report.errors",),
      optional=("platform.wsl", "report.wsl_named", "wsl.linux_driver", "platform.windows_build", "driver.nvml_error"))
def wsl_libcuda_not_linked(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads ldconfig's "/usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link" and an `ls -l`
        of /usr/lib/wsl/lib that shows libcuda.so.1 as a plain file (with its path, or under
        `ls -l /usr/lib/wsl/lib`), in a report from WSL2; the report's own "adding
        /usr/lib/wsl/lib to the LD_LIBRARY_PATH fixes it"; and a program's "libcuda.so: cannot open shared object file" (or cuda-python's
        "Failed to dlopen libcuda.so", cudarc's "Unable to find cuda lib under the names",
        bitsandbytes' "CUDA SETUP: WARNING! libcuda.so not found!", taichi's "libcuda.so lib not found")
        in a report that says it runs on WSL2; there also CUDA's "CUDA_ERROR_NO_DEVICE" / "no
        CUDA-capable device is detected" (or torch's "No CUDA GPUs are available") where the
        report shows no CUDA_VISIBLE_DEVICES, no failing nvidia-smi, no Linux driver inside WSL, no WSL 1 and no
        Windows build before WSL's GPU support: a libcuda other than /usr/lib/wsl/lib's answered
        cuInit (numba/numba#7106; NVIDIA/cuml#5624 and #6218, fixed by /usr/lib/wsl/lib first
        on LD_LIBRARY_PATH).

    Why is this bad?
        The Windows NVIDIA driver ships libcuda.so, libcuda.so.1 and libcuda.so.1.1 into WSL2's
        /usr/lib/wsl/lib as identical copies with one SONAME (libcuda.so.1), not as links
        (microsoft/WSL#11229). ldconfig warns on every package install, and its cache then
        holds only libcuda.so.1, so a program that opens plain `libcuda.so` (Triton,
        bitsandbytes, a ctypes loader) may not find it (microsoft/WSL#8587). CUDA itself works.

    Example
            ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link

    Fix
        In C:\\Windows\\System32\\lxss\\lib (an administrator's cmd.exe), replace libcuda.so and
        libcuda.so.1 by links to libcuda.so.1.1 (`mklink libcuda.so.1 libcuda.so.1.1`), or
        put /usr/lib/wsl/lib on LD_LIBRARY_PATH for programs that open libcuda.so.
    """
    said = report_errors(facts, "wsl-ldconfig-not-symlink", "wsl-libcuda-plain-file", "wsl-libcuda-plain-file-listed")
    # A program that could not open plain libcuda.so, in a report that says it runs on WSL2.
    unversioned = [e for e in report_errors(facts, "libcuda-unversioned-cannot-open", "cudarc-libcuda-not-found", "bnb-libcuda-not-found",
                                                 "taichi-libcuda-not-found") if e.get("wsl")]
    # The report's own fix: /usr/lib/wsl/lib put on LD_LIBRARY_PATH (issue 26, chelsea0x3b/cudarc#296).
    fixed_by_path = report_errors(facts, "wsl-lib-on-ld-library-path-fixes", "wsl-lib-exported-then-worked")
    no_device = _wsl_no_device(facts, kb)
    if no_device and not fixed_by_path and not unversioned and not said:
        error, wsl = no_device
        return Hit(
            f"on WSL2 ({wsl}) CUDA found no GPU: {report_line(error)}; nvidia-smi may still work, but the libcuda this program "
            f"loaded is not the Windows driver's /usr/lib/wsl/lib copy (a Linux driver's libcuda, the toolkit's stub, "
            f"or a loader that looks for the unversioned libcuda.so)",
            evidence={"report.errors": [error]},
            fix=FixRef(commands=("ldconfig -p | grep libcuda   # every libcuda the loader knows; only /usr/lib/wsl/lib's belong on WSL2",
                                 "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH"),
                       note="if a Linux NVIDIA driver's packages are installed inside WSL (dpkg -l | grep -E 'nvidia|libcuda'), remove them "
                            "and keep the toolkit (https://docs.nvidia.com/cuda/wsl-user-guide/)"),
        )
    if fixed_by_path and not unversioned and not said:
        return Hit(
            f"the report says /usr/lib/wsl/lib on LD_LIBRARY_PATH fixes it: the program did not find the driver's libraries "
            f"where WSL2 keeps them (the unversioned libcuda.so is only there, a copy the loader cache does not index): {report_line(fixed_by_path[0])}"
            + (f" ({fixed_by_path[0]['worked']})" if fixed_by_path[0].get("worked") else ""),
            evidence={"report.errors": fixed_by_path},
            fix=_WSL_UNVERSIONED_FIX,
        )
    if unversioned and not said:
        return Hit(
            f"on WSL2 ({unversioned[0]['wsl']}) a program could not open the unversioned libcuda.so, which only "
            f"/usr/lib/wsl/lib holds, as a copy the loader cache does not index: {report_line(unversioned[0])}",
            evidence={"report.errors": unversioned},
            fix=_WSL_UNVERSIONED_FIX,
        )
    if not said:
        return None
    return Hit(
        f"WSL2's /usr/lib/wsl/lib/libcuda.so.1 is a copy, not a link (the Windows driver ships it so): {report_line(said[0])}"
        + (f"; its listing's {said[0]['row']}" if said[0].get("row") else ""),
        evidence={"report.errors": said},
        fix=FixRef(commands=("export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH   # for programs that open libcuda.so",),
                   note="to silence ldconfig: in C:\\Windows\\System32\\lxss\\lib replace libcuda.so and libcuda.so.1 by links to libcuda.so.1.1 (mklink, as administrator)"),
    )


def _wsl_no_device(facts: Facts, kb: KB) -> tuple[dict[str, Any], str] | None:
    """CUDA's no-device error in a report from WSL 2 that shows no other reason WSL has no GPU
    (CUDA_VISIBLE_DEVICES, WSL 1, a Linux driver inside WSL, a Windows build before WSL's GPU
    support: their own rules say those): the error and where the report names WSL."""
    said = [e for e in report_errors(facts, "cuda-no-device", "torch-no-cuda-gpus") if not e.get("visible_devices")]
    wsl, named = facts.get("platform.wsl"), facts.get("report.wsl_named")
    # (TensorFlow's "kernel driver does not appear to be running" is no reason here: WSL 2 has
    # no /proc/driver/nvidia/version, so TensorFlow prints it after every failed cuInit there)
    if not said or not (wsl or named) or facts.get("wsl.linux_driver"):
        return None
    # nvidia-smi failing in the same report ("couldn't communicate with the NVIDIA driver", an NVML
    # error: it reads the Windows driver through NVML, not through the libcuda the program loaded):
    # WSL reaches no GPU at all, which no loader path fixes (Windows Insider builds 21337 and 21343
    # broke GPU access: microsoft/WSL#6702, #6772, "a known issue for this build").
    if facts.get("driver.nvml_error"):
        return None
    if isinstance(wsl, dict) and wsl.get("version") == 1:
        return None
    build, row = facts.get("platform.windows_build"), kb.cuda.wsl
    if isinstance(build, dict) and isinstance(build.get("build"), int) and row is not None and build["build"] < row.windows_build_min:
        return None
    where = f"{wsl.get('text')}, {facts.source('platform.wsl')}" if isinstance(wsl, dict) else str(named)
    return said[0], where


# The libraries torch itself ships: an undefined c10/at symbol in one of these is torch
# mixed with another torch's files, not an extension built for another torch.
_TORCH_OWN = ("libtorch", "libc10", "libcaffe2", "libshm", "_C.")
# torch's companion packages are compiled torch extensions too, whose files look like torch's
# own (torchvision/_C.so, torchaudio/lib/libtorchaudio.so): their folder or name tells them apart.
_COMPANIONS = ("torchvision", "torchaudio", "torchtext")


def _torch_own(library: str) -> bool:
    """Whether the loader's `library` is one of torch's own files (not a companion's)."""
    path = PurePosixPath(library.replace("\\", "/"))
    if any(part in _COMPANIONS for part in path.parts[:-1]) or path.name.startswith(tuple(f"lib{c}" for c in _COMPANIONS)):
        return False
    return path.name.startswith(_TORCH_OWN)


# The rows (doctor/kb/errors.yaml) where torchvision/torchaudio themselves say they were built for
# another torch or CUDA: torchvision's CUDA check, its missing ops, pip's pin conflict.
_COMPANION_KINDS = ("torchvision-cuda-differs", "torchvision-operator-missing", "torchvision-op-no-cuda-kernel", "torch-companion-needs-other-torch")


@rule("extension-built-for-other-torch", needs=("report.errors",), optional=("torch.version",))
def extension_built_for_other_torch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads the loader's "undefined symbol: _ZN3c10..." (or `_ZN2at`, `_ZN5torch`: a symbol of
        torch's C++ API) in a compiled extension a report shows (flash_attn_2_cuda...so,
        a mmcv or xformers library, torchvision/_C.so, libtorchaudio.so); xformers' own
        "built for PyTorch A (you have B)"; torchvision's own checks ("compiled with different
        CUDA major versions", "operator torchvision::nms does not exist", no CUDA kernel for
        torchvision::nms) and pip's "torchvision X requires torch==Y"; and, in pasted package
        listings, a torchvision/torchaudio for another torch release or CUDA (a +cpu one
        beside a CUDA torch).

    Why is this bad?
        A compiled torch extension links against the C++ symbols of the torch it was built
        with; they change between torch releases and with torch's C++ ABI flag
        (`_GLIBCXX_USE_CXX11_ABI`). A prebuilt wheel made for another torch imports with an
        undefined c10/at symbol, and the package cannot be used at all
        (Dao-AILab/flash-attention#931: "we have new wheels compiled for pytorch 2.3.0").

    Example
            ImportError: .../flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi

    Fix
        Install the extension's build for this torch version and C++ ABI (flash-attn names
        them `+cu12torch2.3cxx11abiFALSE`; `torch.__version__` and
        `torch.compiled_with_cxx11_abi()` say which), or build it against this torch:
        `pip install --no-build-isolation --no-binary :all: PACKAGE`. For torchvision and
        torchaudio, install the release paired with this torch from the same index
        (`pip install torch==X torchvision==Y torchaudio==X --index-url .../cuNNN`).
    """
    said = [e for e in report_errors(facts, "torch-extension-undefined-symbol") if not _torch_own(str(e.get("library") or ""))]
    companion = report_errors(facts, *_COMPANION_KINDS)
    if companion and not said:
        return _companion_hit(facts, kb, companion)
    # xformers' own check names both torches (errors.yaml; a "+cpu" torch is its other row's)
    xformers = report_errors(facts, "xformers-built-for-other-torch")
    if xformers and not said:
        error = xformers[0]
        return Hit(
            f"xformers was built for torch {error['built']} (CUDA {error['built_cuda']}) but torch {error['have']} is installed, "
            f"so its C++/CUDA extensions do not load: {report_line(error)}",
            evidence={"report.errors": xformers, "torch.version": facts.get("torch.version")},
            fix=FixRef(commands=(f"pip install -U xformers --index-url https://download.pytorch.org/whl/cuXY   # the cuXY of torch {error['have']}",),
                       note=f"install the xformers release built for torch {error['have']} (each xformers release pins one torch release), "
                            f"or the torch {error['built']} it was built for"),
        )
    if not said:
        return None
    error = said[0]
    path = PurePosixPath(str(error.get("library") or "the extension").replace("\\", "/"))
    # a companion's file is named with its package: "torchvision/_C.so", not a bare "_C.so"
    package = next((part for part in path.parts[:-1] if part in _COMPANIONS), None)
    library = f"{package}/{path.name}" if package and not path.name.startswith(f"lib{package}") else path.name
    version = facts.get("torch.version")
    torch = f"the installed torch {version}" if version else "the installed torch"
    return Hit(
        f"{library} was compiled against another torch than {torch} (another release or C++ ABI): {report_line(error)}",
        evidence={"report.errors": said, "torch.version": version},
        fix=FixRef(commands=("python -c \"import torch; print(torch.__version__)\"",
                             "python -c \"import torch; print(torch.compiled_with_cxx11_abi())\"   # the C++ ABI flag"),
                   note=f"install the build of the package that ships {library} made for this torch version and C++ ABI, or build it against this torch (pip install --no-build-isolation --no-binary :all: PACKAGE)"),
    )


def _companion_hit(facts: Facts, kb: KB, said: list[dict[str, Any]]) -> Hit:
    """torchvision/torchaudio saying they were built for another torch or CUDA than the installed
    torch; the fix names the companions of the installed torch when the KB knows its wheel."""
    error = next((e for e in said if e.get("torch_cuda")), said[0])
    kind = error["kind"]
    if kind == "torchvision-cuda-differs":
        what = (f"torchvision was built for CUDA {error['vision_cuda']} but torch for CUDA {error['torch_cuda']}"
                if error.get("torch_cuda") else "torchvision and torch were built for different CUDA versions")
    elif kind == "torchvision-op-no-cuda-kernel":
        what = f"torchvision has no CUDA kernel for torchvision::{error['op']}: a CPU build of torchvision (or one built without CUDA) beside a CUDA torch"
    elif kind == "torch-companion-needs-other-torch":
        what = f"{error['package']} {error['package_version']} is built for torch {error['needs']} but torch {error['have']} is installed"
    else:
        op = error.get("op") or error.get("old_op")
        ops = f"torchvision's C++ ops (torchvision::{op}) are not registered" if op else "torchvision's C++ ops did not load"
        what = (f"{ops}: its compiled library did not load, "
                "most often because this torchvision was built for another torch (or CUDA) than the installed one")
    version = facts.get("torch.version") or error.get("have")
    variant = kb.torch.variant_for(str(version)) if version else None
    if variant is not None and variant.torchvision:
        commands = ("pip install --force-reinstall " + " ".join(sh(arg) for arg in variant.pip_args()),)
        note = f"reinstall the companions of torch {variant.local_version} from the same index, in one command"
    else:
        commands = ("python -c \"import torch; print(torch.__version__, torch.version.cuda)\"",
                    "pip install --force-reinstall torch torchvision torchaudio --index-url https://download.pytorch.org/whl/cuXY   # cuXY: torch's CUDA, or cpu")
        note = ("install torch, torchvision and torchaudio in one command from one index: each torchvision/torchaudio "
                "release pins one torch release and is built per CUDA (https://pytorch.org/get-started/previous-versions/)")
    return Hit(f"{what}: {report_line(error)}", evidence={"report.errors": said, "torch.version": facts.get("torch.version")},
               fix=FixRef(commands=commands, note=note))


# Where a distribution keeps its own libstdc++ (the loader's default search folders).
_SYSTEM_LIB_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/lib32/")


def system_libstdcxx(path: str) -> bool:
    """Whether the loader's `path` is the distribution's own libstdc++ (/usr/lib/..., /lib64/...)."""
    posix = path.replace("\\", "/")
    return PurePosixPath(posix).name.startswith("libstdc++.so") and posix.startswith(_SYSTEM_LIB_DIRS)


@rule("system-libstdcxx-too-old", needs=("report.errors",))
def system_libstdcxx_too_old(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads the loader's "/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not
        found (required by ...)" where the libstdc++ it names is the distribution's own.

    Why is this bad?
        A library built with a newer GCC needs the GLIBCXX/CXXABI versions of that GCC's
        libstdc++; the distribution's is older, so the import fails. Inside a conda env it also
        means the env's own (newer) libstdc++ was not the one loaded: its libstdc++.so.6 link is
        missing or the env does not carry libstdcxx-ng (pytorch/pytorch#157709).

    Example
            ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by .../libtorch_python.so)

    Fix
        In a conda env: `conda install -c conda-forge libstdcxx-ng` and check that
        `$CONDA_PREFIX/lib/libstdc++.so.6` exists (a link to the newest libstdc++.so.6.0.N).
        Elsewhere: a newer GCC's runtime (`strings LIBRARY | grep GLIBCXX` lists what one has),
        or a build of the failing library made with the system's GCC.
    """
    said = [e for e in report_errors(facts, "libstdcxx-version-not-found") if system_libstdcxx(str(e.get("library") or ""))]
    if not said:
        return None
    error = said[0]
    return Hit(
        f"the system's libstdc++ ({error['library']}) is older than {error.get('required_by') or 'a library'} needs ({error['needed']}): {report_line(error)}",
        evidence={"report.errors": said},
        fix=FixRef(commands=("ls -l \"$CONDA_PREFIX\"/lib/libstdc++.so*   # in a conda env: is libstdc++.so.6 there?",
                             "conda install -c conda-forge libstdcxx-ng   # in that env"),
                   note="outside conda: a newer GCC's libstdc++, or build the failing library with the system's GCC"),
    )


@rule("conda-mkl-breaks-pytorch", needs=("report.errors",), optional=("conda.requests",))
def conda_mkl_breaks_pytorch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads the loader's "libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent" in a report;
        without it, an environment file in the report that takes pytorch from the pytorch
        channel and leaves mkl unpinned (a warning: what that file resolves to today).

    Why is this bad?
        conda's pytorch builds link Intel MKL dynamically and call iJIT_NotifyEvent, which mkl
        2024.1 and later no longer export: an env that resolves the newer mkl cannot import
        torch at all (pytorch/pytorch#123097). The pytorch channel's packages ask only
        `mkl >=2018` (pytorch/builder conda/pytorch-nightly/meta.yaml), so an environment
        file that does not pin mkl gets the newest one each time it is created.

    Example
            ImportError: .../site-packages/torch/lib/libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent

        or an environment.yml with `- pytorch::pytorch=2.0.1` and no `mkl` line.

    Fix
        Pin mkl below 2024.1 in that env (`conda install mkl=2024.0`, `- mkl=2024.0` in the
        environment file), or install torch from pip, whose wheels carry their own MKL.
    """
    said = report_errors(facts, "mkl-ijit-notify-event")
    if said:
        library = said[0].get("library") or "torch"
        return Hit(
            f"{library} calls iJIT_NotifyEvent, which mkl >= 2024.1 no longer exports (conda's pytorch with a newer mkl): {report_line(said[0])}",
            evidence={"report.errors": said},
            fix=FixRef(commands=("conda install 'mkl=2024.0'   # in that env",), note="or install torch from pip (its wheels carry their own MKL)"),
        )
    found = _pytorch_channel_without_mkl_pin(facts.get("conda.requests") or [])
    if found is None:
        return None
    request, torch = found
    return Hit(
        f"the environment file (report line {request['line']}) takes {torch['spec']} from the pytorch channel and leaves mkl unpinned: "
        "conda resolves the newest mkl, and mkl >= 2024.1 no longer exports the iJIT_NotifyEvent this pytorch calls "
        "(\"libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent\" on import)",
        evidence={"conda.requests": [request]},
        severity=Severity.WARNING,
        fix=FixRef(commands=("conda install 'mkl=2024.0'   # in that env; in the environment file: - mkl=2024.0",),
                   note="or install torch from pip (its wheels carry their own MKL)"),
    )


# conda channels that carry a pytorch package: the first of them in an environment file's
# `channels:` list is where conda takes an unprefixed pytorch from (channel priority)
_PYTORCH_CHANNELS = ("pytorch", "pytorch-nightly", "conda-forge", "defaults", "anaconda", "main")


def _pytorch_channel_without_mkl_pin(requests: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """An environment file's request and its pytorch spec, where that pytorch comes from the
    pytorch channel and the file neither pins mkl nor opts out of it (nomkl)."""
    for request in requests:
        if not isinstance(request, dict) or request.get("from") != "environment file":
            continue  # a command ran once, when the report was written; a file is solved again each time
        specs = [s for s in request.get("specs") or [] if isinstance(s, dict)]
        if any(s["name"] == "nomkl" or (s["name"] == "mkl" and any(c in s["spec"] for c in "=<>")) for s in specs):
            continue
        torch = next((s for s in specs if s["name"] == "pytorch"), None)
        if torch is None:
            continue
        channel = torch.get("channel") or next((c for c in request.get("channels") or [] if c in _PYTORCH_CHANNELS), None)
        if channel in ("pytorch", "pytorch-nightly"):
            return request, torch
    return None


def conda_satisfies(version: str, spec: str) -> bool | None:
    """Whether `version` meets a conda version spec (">=10.1,<10.2", "10.0.*", "10.1", "a|b");
    None where a part does not parse. conda's bare "10.0" and "10.0*" mean 10.0.*."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        have = Version(version)
    except InvalidVersion:
        return None
    answers = []
    for alternative in spec.split("|"):
        ok = True
        for part in (p.strip() for p in alternative.split(",") if p.strip()):
            bare = part.lstrip("=")
            if bare and bare[0].isdigit() and (not part.startswith("==") or part.endswith("*")):  # "10.0", "10.0.*": a prefix
                prefix = bare.rstrip("*").rstrip(".")
                ok = ok and (version == prefix or version.startswith(prefix + "."))
                continue
            try:
                ok = ok and have in SpecifierSet(part.replace(".*", "").rstrip("*") if part[0] in "<>!" else part, prereleases=True)
            except InvalidSpecifier:
                return None
        answers.append(ok)
    return any(answers)


@rule("conda-cuda-pin-conflict", needs=("conda.cuda_conflict",), optional=("conda.requests", "driver.cuda_version"))
def conda_cuda_pin_conflict(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads conda's UnsatisfiableError listing in a report: a package that needs a CUDA
        package in a range ("pytorch=1.3.1 -> cudatoolkit[version='>=10.1,<10.2']",
        "pytorch-cuda=12.1 -> __cuda[version='>=12']"), and the version the same report pins or
        the host gives ("cudatoolkit=10.0" in the listing, the environment file or the
        command; __cuda from conda info, or libsolv's own "package cudatoolkit-11.0.3-h15472ef_6
        has constraint __cuda >=11.0 conflicting with __cuda-10.2-0"), outside that range; and mamba's and the libmamba
        solver's own word that no __cuda satisfies a build ("nothing provides __cuda needed by
        tensorflow-2.7.0-cuda102py310hcf4adbc_0", "└─ __cuda, which is missing on the system"):
        the solve ran where no driver answered (a docker build, a login node).

    Why is this bad?
        conda's CUDA builds pin the CUDA they were built for: the pytorch channel's run
        requirement is a cudatoolkit range per build (pytorch/builder's conda meta.yaml,
        CONDA_CUDATOOLKIT_CONSTRAINT), conda-forge's a cuda-version, and both need the driver's
        __cuda. A cudatoolkit pinned beside a pytorch version that was never built for it
        leaves conda no solution (facebookresearch/demucs#10: cudatoolkit 10.0 beside
        pytorch 1.3.1, built for 10.1; chaoqichen/HTCN#3: 10.1 beside pytorch 1.0.1, built for
        10.0.130).

    Example
            Package cudatoolkit conflicts for:
            pytorch=1.3.1 -> cudatoolkit[version='>=10.1,<10.2']
            cudatoolkit=10.0

    Fix
        Pin the cudatoolkit the build needs, or ask for the pytorch version built for the
        cudatoolkit you pinned (`conda search -c pytorch 'pytorch=1.3.1'` lists each build's
        CUDA in its build string); for __cuda, upgrade the driver or ask for an older CUDA.
    """
    conflict = facts["conda.cuda_conflict"] or {}
    pins = [dict(p, where=f"report line {p['line']}") for p in conflict.get("pins") or [] if isinstance(p, dict)]
    for request in facts.get("conda.requests") or []:
        for spec in request.get("specs") or [] if isinstance(request, dict) else []:
            rest = str(spec.get("spec")).partition(str(spec.get("name")))[2]
            version = re.match(r"\s*=?=?\s*(\d{1,4}(?:\.\d{1,6}){0,3})", rest) if spec.get("name") in ("cudatoolkit", "cuda-version") else None
            if version:
                pins.append({"dep": spec["name"], "version": version.group(1), "where": f"report line {spec.get('line')}: {spec.get('spec')}"})
    if facts.get("driver.cuda_version"):
        pins.append({"dep": "__cuda", "version": str(facts.get("driver.cuda_version")), "where": facts.source("driver.cuda_version")})
    for need in conflict.get("requires") or []:
        if not isinstance(need, dict) or not need.get("range"):
            continue
        for pin in (p for p in pins if p["dep"] == need["dep"]):
            if conda_satisfies(pin["version"], str(need["range"])) is not False:
                continue
            who = f"{need['package']} {need['version']}" if need.get("version") else str(need["package"])
            if need["dep"] == "__cuda":
                commands: tuple[str, ...] = ("nvidia-smi   # the driver's CUDA, top right",)
                note = f"upgrade the NVIDIA driver to one for CUDA {need['range']}, or ask conda for a build of an older CUDA"
                has = f"the driver gives __cuda {pin['version']} ({pin['where']})"
            else:
                commands = (f"conda search -c pytorch -c conda-forge {sh(str(need['package']) + ('=' + need['version'] if need.get('version') else ''))}   # each build's CUDA",)
                note = f"pin the {need['dep']} that {who} was built for ({need['range']}), or ask for a {need['package']} built for {need['dep']} {pin['version']}"
                has = f"{need['dep']} {pin['version']} is pinned ({pin['where']})"
            return Hit(
                f"conda cannot solve: {who} needs {need['dep']} {need['range']} (report line {need['line']}), but {has}",
                evidence={"conda.cuda_conflict": conflict, "pin": pin},
                fix=FixRef(commands=commands, note=note),
            )
    # mamba's/libmamba's "nothing provides __cuda needed by ...": the solver itself says no
    # __cuda satisfies the build (none where it ran: a login node, a docker build, no driver).
    missing = next((n for n in conflict.get("requires") or [] if isinstance(n, dict) and n.get("missing")), None)
    if missing is not None:
        who = (f"{missing['package']} {missing['version']}" if missing.get("version") else str(missing["package"])) if missing.get("package") \
            else "a CUDA build"  # the solver's line quoted without the package it names
        needs = f"__cuda {missing['range']}" if missing.get("range") else "the __cuda virtual package (a driver's CUDA)"
        driver = facts.get("driver.cuda_version")
        seen = (f"; the report's conda info shows __cuda {driver} ({facts.source('driver.cuda_version')}), so the solve ran where no driver answered, "
                "or one older than that") if driver else ": no NVIDIA driver answered where it ran (a login node, a docker build, a CPU-only machine)"
        return Hit(
            f"conda cannot solve: {who} needs {needs} (report line {missing['line']}), which the solver did not find{seen}",
            evidence={"conda.cuda_conflict": conflict},
            fix=FixRef(commands=("conda info | grep __cuda   # what the solver sees; nvidia-smi shows the driver's CUDA",
                                 "CONDA_OVERRIDE_CUDA=12.4 conda install ...   # solve for the driver's CUDA where none is visible (docker build, login node)"),
                       note="solve on a machine whose driver conda sees, or set CONDA_OVERRIDE_CUDA to the CUDA of the driver the env will run on "
                            "(conda's docs, 'Managing virtual packages'); on a machine without an NVIDIA GPU, install the CPU build; "
                            "a mamba too old to know virtual packages sees none: update it"),
        )
    return None


@rule("cuda-lib-not-found", needs=("report.errors",), optional=("report.cuda_runtime",))
def cuda_lib_not_found(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads a program's own report that it could not open a CUDA or cuDNN library: the
        loader's "libcudart.so.11.0: cannot open shared object file" (an ImportError, an
        OSError, ctranslate2's "Could not load library libcudnn_ops_infer.so.8"), Paddle's
        "The third-party dynamic library (cudnn64_8.dll) that Paddle depends on is not
        configured correctly", TensorFlow's "Could not load dynamic library" (and before 1.x
        "Unable to load cuDNN DSO"), cuDNN 8's own on Windows ("Could not load library
        cudnn_cnn_infer64_8.dll. Error code 126", "Could not locate zlibwapi.dll"): cuDNN 8.3
        and later 8.x load zlibwapi.dll, which their Windows install guide has one install.

    Why is this bad?
        The program opens the CUDA runtime or cuDNN by its file name at run time and stops
        (or falls back to the CPU) when the loader does not find it: the release it was
        built for is not installed, or it is (a toolkit under /opt, an nvidia-* pip wheel in
        site-packages/nvidia/*/lib, cuDNN unpacked into its own folder on Windows) but its
        folder is not on the loader's search path: LD_LIBRARY_PATH or ld.so.conf on Linux,
        PATH (the DLL search path) on Windows.

    Example
        "ImportError: libcudart.so.11.0: cannot open shared object file" where the HPC SDK
        holds libcudart.so.11.0 under /opt/nvidia/hpc_sdk/.../cuda/11.4/lib64
        (tonyyxliu/CUHKSZ-CSC4005#69): invalid; with that lib64 on LD_LIBRARY_PATH: valid.

    Fix
        Find the library and put its folder on the search path, or install the CUDA/cuDNN
        release whose file name the program asks for:

            ldconfig -p | grep libcudart; find / -name 'libcudart.so*' 2>/dev/null
            export LD_LIBRARY_PATH=/path/to/that/lib64:$LD_LIBRARY_PATH
            set PATH=C:\\Program Files\\NVIDIA\\CUDNN\\v8.x\\bin;%PATH%   (Windows; then a new shell)
    """
    # TensorFlow's dso_loader line also carries the loader's "cannot open": that line is
    # fwdoctor.triage.rules' (dlopen-failed), whose fix names TensorFlow's tested builds.
    tf_lines = {e["line"] for e in report_errors(facts, "dlopen-failed")}
    said = [e for e in report_errors(facts, "cuda-library-cannot-open", "paddle-third-party-library", "tf-unable-to-load-dso", "tf-windows-cuda-dll-not-found",
                                "cudnn-windows-dll-load-failed", "cudnn-windows-dll-not-located",
                                # the report's own "zlibwapi.dll not found/missing/找不到" (cuDNN 8.3+ on Windows)
                                "zlibwapi-dll-not-found-said",
                                # CTranslate2 (faster-whisper): cuBLAS of the CUDA major its build was made for (errors.yaml)
                                "ctranslate2-library-not-found",
                                # Paddle's dynload: "Cannot load cudnn shared library", "Can not find library: libcudnn.so"
                                "paddle-cudnn-not-loaded", "paddle-cannot-find-library",
                                # the report's own "libcudart.so.11.0 not found" (a title, a sentence)
                                "cuda-soname-not-found-said")
            if e["line"] not in tf_lines]
    # a program's own wording first: the report's "libcudart.so.11.0 not found" may repeat it in prose
    said.sort(key=lambda e: e["kind"] == "cuda-soname-not-found-said")
    if not said:
        return None
    error = said[0]
    library = str(error.get("library") or "a CUDA library").replace(",so", ".so")
    if library[:3] == "Lib":  # a title's capital ("Libcudart.so.11.0 not found"): the file is lower case
        library = "lib" + library[3:]
    if error["kind"] in ("tf-unable-to-load-dso", "paddle-cudnn-not-loaded"):  # "Unable to load cuDNN DSO", "Cannot load cudnn shared library": the soname's stem
        library = "lib" + library.lower()
    # cuDNN 8.3+ on Windows loads zlibwapi.dll (its install guide's "Installing Zlib"): a cuDNN DLL
    # that fails with error code 126 although it is on PATH lacks it (Softcatala/whisper-ctranslate2#41).
    zlib = library.lower() == "zlibwapi.dll" or error["kind"] == "cudnn-windows-dll-load-failed"
    if zlib:
        failed = "is nowhere on PATH" if library.lower() == "zlibwapi.dll" else \
            "failed to load (Windows error code 126: it, or a DLL it needs, was not found)"
        return Hit(
            f"cuDNN 8's {library} {failed}: the cuDNN bin folder is not on PATH, or zlibwapi.dll, which cuDNN 8.3 and later "
            f"8.x need on Windows, is missing: {report_line(error)}",
            evidence={"report.errors": said, "library": library},
            fix=FixRef(commands=("where cudnn64_8.dll zlibwapi.dll   # in a new cmd.exe: both must be found on PATH",),
                       note="put zlibwapi.dll (cuDNN's install guide, 'Installing Zlib' for Windows) into a folder on PATH, "
                            "e.g. CUDA's bin folder, and the cuDNN bin folder on PATH; then open a new shell"),
        )
    if library.lower().endswith(".dll"):
        where = "PATH (Windows' DLL search path)"
        commands = ("where " + library.split(";")[0] + "   # in a new cmd.exe: is its folder on PATH?",)
    else:
        where = "the loader path (LD_LIBRARY_PATH, ld.so.conf)"
        stem = library.split(".so", 1)[0]
        commands = (f"ldconfig -p | grep {sh(stem)}   # which versions the loader sees",
                    f"find / -name {sh(stem + '.so*')} 2>/dev/null   # a toolkit under /opt, an nvidia-* wheel's site-packages/nvidia/*/lib")
    # A CUDA runtime of the same major that a framework reports loaded on a later line (Paddle's
    # "Runtime API Version: 11.2", fwdoctor.triage.cudnn_cuda): the failure was fixed in between
    # (PaddlePaddle/Paddle#50591: a build step's libcudart.so.11.0, then run_check runs CUDA 11.2).
    later = _runtime_loaded_after(facts, error, library)
    return Hit(
        f"the loader finds no {library}: the CUDA/cuDNN release it names is not installed, or its folder is not on {where}: {report_line(error)}"
        + (f"; report line {later['line']} shows a CUDA {later['cuda']} runtime loaded after it, so this may be fixed" if later else ""),
        severity=Severity.WARNING if later else None,
        evidence={"report.errors": said, "library": library},
        fix=FixRef(commands=commands, note=f"add the folder that holds {library} to {where}, or install the CUDA/cuDNN release the program was built for"
                   + ("; CTranslate2 4.x loads CUDA 12's cuBLAS, 3.x CUDA 11's (faster-whisper 0.10.1 pins ctranslate2 below 4): "
                      "install the one this machine's CUDA major matches" if error["kind"] == "ctranslate2-library-not-found" else "")),
    )


def _runtime_loaded_after(facts: Facts, error: dict[str, Any], library: str) -> dict[str, Any] | None:
    """The first framework-reported CUDA runtime (report.cuda_runtime) of `library`'s major
    (libcudart.so.11.0: 11) on a line after `error`'s, if the report shows one."""
    found = re.match(r"libcudart\.so\.(\d{1,2})", library)
    if not found:
        return None
    for row in facts.get("report.cuda_runtime") or []:
        if (isinstance(row, dict) and row.get("how") == "the framework's CUDA runtime" and isinstance(row.get("line"), int)
                and row["line"] > int(error.get("end") or error["line"]) and str(row.get("cuda", "")).split(".")[0] == found.group(1)):
            return row
    return None


@rule("driver-too-old-for-image", needs=("report.errors",), optional=("driver.version", "driver.cuda_version"))
def driver_too_old_for_image(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads nvidia-container-cli's "requirement error: unsatisfied condition: cuda>=11.0,
        please update your driver to a newer version, or use an earlier cuda container", and
        the CUDA runtime's "Error 804: forward compatibility was attempted on non supported HW"
        (the image's forward-compatibility libcuda, for data-center GPUs only, tried on another),
        and an NVIDIA image's own banner "This container was built for NVIDIA Driver Release
        535.86 or later, but version 510.85.02 was detected and compatibility mode is UNAVAILABLE".

    Why is this bad?
        A CUDA image declares the CUDA it needs (NVIDIA_REQUIRE_CUDA, set by the nvidia/cuda
        base images) and the NVIDIA container runtime refuses to start it on a host whose
        driver supports an older CUDA: the container's CUDA runtime could not run there. No
        container of that image starts (NVIDIA/nvidia-docker#1442: "You cannot launch a
        container based on CUDA 11 if you have an underlying host driver older than 450").

    Example
        An image that requires cuda>=12.8 on a host whose nvidia-smi says "CUDA Version:
        12.4": invalid; on a 570 driver (CUDA 12.8): valid.

    Fix
        Upgrade the host's NVIDIA driver to one for that CUDA (`nvidia-smi` shows the CUDA
        the driver supports, top right), or run an image built for the driver's CUDA (an
        older nvidia/cuda tag). NVIDIA_DISABLE_REQUIRE=1 only skips the check.
    """
    said = report_errors(facts, "nvidia-container-cli-cuda-requirement")
    if not said:
        return _ngc_driver_too_old(facts) or _forward_compat_refused(facts)
    error = said[0]
    cuda = str(error["cuda"])
    driver = kb.cuda.toolkit_driver(cuda)
    have = facts.get("driver.cuda_version")
    host = f" (the host's driver supports CUDA {have}, {facts.source('driver.cuda_version')})" if have else ""
    need = f"a driver >= {driver}" if driver else f"a driver for CUDA {cuda}"
    return Hit(
        f"the image requires CUDA >= {cuda} and the host's NVIDIA driver supports an older CUDA{host}: {report_line(error)}",
        evidence={"report.errors": said, "cuda": cuda, "driver_needed": driver, "driver.cuda_version": have},
        fix=FixRef(commands=("nvidia-smi   # on the host: the CUDA its driver supports, top right",),
                   note=f"install {need} on the host, or run an image built for the driver's CUDA (an older nvidia/cuda tag)"),
    )


def _ngc_driver_too_old(facts: Facts) -> Hit | None:
    """An NVIDIA image's entrypoint: "This container was built for NVIDIA Driver Release 535.86
    or later, but version 510.85.02 was detected and compatibility mode is UNAVAILABLE" (issue
    26; doctor/kb/errors.yaml, S-NGC-ENTRYPOINT-CHECKS): the image's CUDA needs that driver."""
    said = report_errors(facts, "ngc-driver-too-old")
    if not said:
        return None
    error = said[0]
    return Hit(
        f"the image was built for NVIDIA driver >= {error['needed']} and the host's driver is {error['driver']}: {report_line(error)}",
        evidence={"report.errors": said, "driver_needed": error["needed"], "driver.version": error["driver"]},
        fix=FixRef(commands=("nvidia-smi   # on the host: the driver and the CUDA it supports, top right",),
                   note=f"install a driver >= {error['needed']} on the host, or run an older image release built for the driver's CUDA "
                        "(NGC's support matrix lists each release's driver)"),
    )


def _forward_compat_refused(facts: Facts) -> Hit | None:
    """The CUDA runtime's 804, "forward compatibility was attempted on non supported HW": the
    forward-compatibility libcuda (cuda-compat, in NVIDIA's CUDA images under
    /usr/local/cuda/compat) was loaded because the program's CUDA is newer than the host
    driver's, and the GPU is not one it supports (data-center GPUs only; doctor/kb/errors.yaml,
    S-CUDA-FORWARD-COMPAT). The text names no version: the fix is the host driver."""
    said = report_errors(facts, "cuda-compat-unsupported-804")
    if not said:
        return None
    have = facts.get("driver.version")
    host = f" (the host's driver is {have}, {facts.source('driver.version')})" if have else ""
    return Hit(
        f"the CUDA in this image or environment is newer than the host's NVIDIA driver supports{host}, and its forward-compatibility "
        f"libcuda runs only on data-center GPUs: {report_line(said[0])}",
        evidence={"report.errors": said, "driver.version": have},
        fix=FixRef(commands=("nvidia-smi   # on the host: the CUDA its driver supports, top right",
                             "ldconfig -p | grep libcuda.so   # in the container: a /usr/local/cuda/compat copy listed first is the forward-compat one"),
                   note="upgrade the host's NVIDIA driver to one for the image's CUDA, or run an image built for the driver's CUDA; "
                        "keep /usr/local/cuda/compat off LD_LIBRARY_PATH on GeForce/RTX GPUs"),
    )


@rule("container-toolkit-known-bug", needs=("report.errors",))
def container_toolkit_known_bug(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads nvidia-container-cli's "failed to add device rules: ... bpf_prog_query(BPF_CGROUP_DEVICE)
        failed: operation not permitted", and its "container error: cgroup subsystem devices not
        found" (a libnvidia-container before 1.8.0 on a cgroup v2 host), and CUDA's "Error 500:
        named symbol not found" (CUDA_ERROR_NOT_FOUND at init) in a report that names a container
        and Windows/WSL2/Docker Desktop (a toolkit too old for the 555+ Windows drivers), and "file
        creation failed: .../run/nvidia-persistenced/socket: no such device or address" (a
        libnvidia-container before 1.12.0 with the host's /run mounted in). Triage only:
        no probe reads the installed toolkit's version (`nvidia-ctk --version`) yet, so `check`
        does not judge it.

    Why is this bad?
        The toolkit's hook adds the GPUs to the container's device cgroup, on cgroup v2 an eBPF
        filter that an unprivileged daemon (rootless Docker or Podman, enroot) may not query.
        Under rootless, libnvidia-container must be told not to touch cgroups (no-cgroups = true;
        NVIDIA/libnvidia-container#154); nvidia-container-toolkit 1.18.0 tries anyway even when
        configured for rootless, a regression from 1.17.8 (NVIDIA/nvidia-container-toolkit#1487:
        1.17.8 and 1.17.9 work). Releases before 1.8.0 know only cgroup v1 and look for its
        devices controller, which a cgroup v2 host (Debian 11, Fedora 31+, Arch, Ubuntu 21.10+)
        lacks (NVIDIA on pop-os/beta#289; NVIDIA/libnvidia-container#111). Under WSL2 the Windows
        driver 555 and later needs libnvdxgdmal.so.1 in the container, which toolkits before
        1.14.4/1.15.0 and Docker Desktop before 4.31 do not map: CUDA's init then fails with
        error 500 "named symbol not found" (NVIDIA/nvidia-container-toolkit#520). The releases with a
        known regression are rows of doctor/kb/docker.yaml (toolkit_regressions). No GPU
        container starts.

    Example
            nvidia-container-cli: mount error: failed to add device rules: unable to find any existing device filters attached to the cgroup: bpf_prog_query(BPF_CGROUP_DEVICE) failed: operation not permitted

    Fix
        `nvidia-ctk --version`: on a release the KB lists, install one it names as working (or a
        later fixed one); under rootless, set `no-cgroups = true` in
        /etc/nvidia-container-runtime/config.toml (`sudo nvidia-ctk config --set
        nvidia-container-cli.no-cgroups=true --in-place`; the nvidia-ctk README). Requesting the
        GPUs through CDI (`--device nvidia.com/gpu=all`) leaves the device cgroup to the
        low-level runtime, so the NVIDIA stack need not touch it (a maintainer,
        NVIDIA/nvidia-container-toolkit#56).
    """
    # issue 26 (containers): CUDA_ERROR_NOT_FOUND at init in a WSL2 container (Docker Desktop, or
    # Docker in WSL2): a toolkit too old for the Windows driver's libraries (doctor/kb/docker.yaml).
    wsl = [e for e in report_errors(facts, "cuda-init-not-found-in-wsl-container") if e.get("container") and e.get("windows")]
    if wsl:
        rows = [r for r in kb.docker.toolkit_regressions if "named symbol not found" in r.error]
        good = " / ".join(g for r in rows for g in r.good) or "a newer release"
        return Hit(
            f"CUDA cannot initialise in a container on Windows/WSL2 (CUDA_ERROR_NOT_FOUND, 500): {report_line(wsl[0])} "
            f"(the report names a container, {wsl[0]['container']}, and Windows, {wsl[0]['windows']}); the Windows NVIDIA driver "
            f"555 and later needs a library the NVIDIA Container Toolkit before {good} (Docker Desktop before 4.31) does not map into containers",
            evidence={"report.errors": wsl, "toolkit_regressions": [r.release for r in rows]},
            fix=FixRef(commands=("nvidia-ctk --version   # in WSL2, where Docker Engine runs there",
                                 "docker version   # Docker Desktop: Server: Docker Desktop 4.31.0 or later"),
                       note=f"update Docker Desktop (4.31 or later) or, for Docker Engine inside WSL2, nvidia-container-toolkit ({good} or later); "
                            "an older Windows driver (before 555) only works around it"),
        )
    # issue 26 (containers): libnvidia-container before 1.12.0 creating the persistenced socket
    # where the container already has one mounted (the host's /run bind-mounted).
    socket = report_errors(facts, "nvidia-container-cli-persistenced-socket-exists")
    rows = [r for r in kb.docker.toolkit_regressions if "nvidia-persistenced/socket" in r.error]
    fixed = min((v for r in rows for g in r.good if (v := parse_version(g))), default=None)
    shown = [parse_version(e.get("cli_version")) for e in socket]
    if socket and not (fixed and any(v is not None and v >= fixed for v in shown)):
        version = socket[0].get("cli_version")
        before = str(fixed) if fixed else "the release that skips files already mounted"  # a KB without the row
        return Hit(
            f"nvidia-container-cli could not create the container's /run/nvidia-persistenced/socket: {report_line(socket[0])}; the container "
            f"already has one mounted there (the host's /run or /var/run bind-mounted), and libnvidia-container before {before}"
            f"{' (the report shows ' + version + ')' if version else ''} does not skip a file already mounted",
            evidence={"report.errors": socket, "toolkit_regressions": [r.release for r in rows]},
            fix=FixRef(commands=("nvidia-container-cli -V   # libnvidia-container's release",
                                 "sudo apt-get install -y --only-upgrade nvidia-container-toolkit libnvidia-container1 libnvidia-container-tools   # dnf/zypper alike"),
                       note=f"install NVIDIA Container Toolkit {before} or later from NVIDIA's repository; or stop mounting the host's /run or /var/run "
                            "into the container (mount the one socket or folder it needs, e.g. /var/run/docker.sock)"),
        )
    no_v2 = report_errors(facts, "nvidia-container-cli-no-devices-cgroup")
    said = report_errors(facts, "nvidia-container-cli-device-cgroup-denied")
    if no_v2 and not said:
        # issue 26 (containers): libnvidia-container before cgroup v2 support on a cgroup v2 host.
        rows = [r for r in kb.docker.toolkit_regressions if "cgroup subsystem devices" in r.error]
        before = " or ".join(g for r in rows for g in r.good[:1]) or "cgroup v2 support"
        return Hit(
            f"nvidia-container-cli found no cgroup v1 devices controller: {report_line(no_v2[0])}; this host runs cgroup v2 and the "
            f"installed libnvidia-container predates {before}, the first release that supports it",
            evidence={"report.errors": no_v2, "toolkit_regressions": [r.release for r in rows]},
            fix=FixRef(commands=("nvidia-container-cli --version   # libnvidia-container's release",
                                 "stat -fc %T /sys/fs/cgroup   # cgroup2fs: the host runs cgroup v2",
                                 "sudo apt-get install -y --only-upgrade nvidia-container-toolkit libnvidia-container1 libnvidia-container-tools   # dnf/zypper alike"),
                       note=f"install NVIDIA Container Toolkit {before} or later from NVIDIA's repository (a distribution's own older package will not do); "
                            "booting with systemd.unified_cgroup_hierarchy=0 (cgroup v1) only works around it"),
        )
    if not said:
        return None
    known = [r for r in kb.docker.toolkit_regressions if "bpf_prog_query" in r.error]
    releases = "; ".join(f"{r.release} under {r.setting} ({', '.join(r.good)} work)" for r in known)
    message = (f"nvidia-container-cli may not change the container's device cgroup: {report_line(said[0])}; "
               "under rootless Docker/Podman it must not try (no-cgroups = true)")
    if releases:
        message += f", and nvidia-container-toolkit {releases} has this as a known regression"
    return Hit(
        message,
        evidence={"report.errors": said, "toolkit_regressions": [r.release for r in known]},
        fix=FixRef(commands=("nvidia-ctk --version",
                             "sudo nvidia-ctk config --set nvidia-container-cli.no-cgroups=true --in-place   # rootless only"),
                   note=("on " + ", ".join(r.release for r in known) + ", install " + " or ".join(g for r in known for g in r.good[-1:]) +
                         " (or a later fixed release); " if known else "") + "or request the GPUs through CDI (`--device nvidia.com/gpu=all`), which leaves the device cgroup to the low-level runtime (NVIDIA/nvidia-container-toolkit#56)"),
    )


REPORT_RULES: tuple[Rule, ...] = (container_toolkit_known_bug, container_gpu_access_lost, container_gpu_runtime_missing, wsl_libcuda_not_linked,
                                  extension_built_for_other_torch, system_libstdcxx_too_old, conda_mkl_breaks_pytorch, conda_cuda_pin_conflict, cuda_lib_not_found,
                                  driver_too_old_for_image,
                                  # issue 26 (containers): a CDI spec too new for the engine, SELinux and the device nodes, nvidia_uvm after suspend
                                  cdi_spec_too_new_for_engine, container_gpu_devices_denied, nvidia_uvm_broken)
