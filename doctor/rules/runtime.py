"""Runtime rules: shm-too-small, shm-not-writable. (probe-failed is added by the engine itself.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule


if TYPE_CHECKING:
    from fwdoctor.kb import KB


def _gpu_count(facts: Facts) -> int | None:
    gpus = facts.get("gpus.list")
    if gpus is not None:
        return len(gpus)
    pci = facts.get("pci.nvidia_gpus")
    return len(pci) if pci is not None else None


@rule("shm-too-small", needs=("system.shm_bytes",), optional=("gpus.list", "pci.nvidia_gpus", "system.container"))
def shm_too_small(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Measures /dev/shm (statvfs on a live host; the size= of its tmpfs in /proc/mounts
        with --root) on a host with two or more GPUs, or inside a container, and compares
        it with the floor in the KB (gpus.yaml runtime.shm_min_mib, 512 MiB).

    Why is this bad?
        NCCL moves data between GPUs of one node through shared memory, and PyTorch's
        DataLoader workers pass batches through it. A small /dev/shm (Docker's default is
        64 MiB) fails at run time: "NCCL WARN Error while creating shared memory segment
        /dev/shm/nccl-... (size ...)", or the DataLoader dies with "Bus error" / "unable to
        write to file </torch_...>: No space left on device".

    Example
            $ grep /dev/shm /proc/mounts       # inside `docker run` without --shm-size
            shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0

    Fix
        Give the container more shared memory, or share the host's IPC namespace:

            docker run --shm-size=16g ...      # or: docker run --ipc=host ...
            # Kubernetes: mount an emptyDir with medium: Memory at /dev/shm
            # bare metal: sudo mount -o remount,size=16G /dev/shm
    """
    size = facts["system.shm_bytes"]
    floor = kb.gpus.shm_min_bytes
    if size >= floor:
        return None
    count = _gpu_count(facts)
    container = facts.get("system.container") is True
    if not container and (count is None or count < 2):
        # Small is a problem in a container or beside several GPUs: with either unknown (a
        # report's `df -h /dev/shm` alone), "fine" would be a guess.
        if count is None:
            raise NotCheckable(f"/dev/shm is {size // (1024 * 1024)} MiB, below {floor // (1024 * 1024)} MiB, and how many GPUs "
                               f"this host has is unknown ({facts.why('gpus.list')}; `nvidia-smi -L`)")
        if not facts.known("system.container"):
            raise NotCheckable(f"/dev/shm is {size // (1024 * 1024)} MiB, below {floor // (1024 * 1024)} MiB, and whether this "
                               f"runs in a container is unknown ({facts.why('system.container')}; `ls /.dockerenv`)")
        return None
    where = "in a container" if container else f"on a host with {count} GPUs"
    if container and count:
        where = f"in a container with {count} GPU{'s' if count != 1 else ''}"
    return Hit(
        f"/dev/shm is {size // (1024 * 1024)} MiB {where}; NCCL and DataLoader workers need at least {floor // (1024 * 1024)} MiB",
        evidence={"system.shm_bytes": size, "gpu_count": count, "system.container": facts.get("system.container"), "floor_bytes": floor},
        fix=FixRef(
            commands=(
                "docker run --shm-size=16g ...   # or: docker run --ipc=host ...",
                "sudo mount -o remount,size=16G /dev/shm   # bare metal",
            ),
            note="Kubernetes: mount an emptyDir with medium: Memory at /dev/shm.",
        ),
    )


@rule("shm-not-writable", needs=("system.shm_access",))
def shm_not_writable(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Checks that /dev/shm lets every user create files: live, this user's write access
        and its mode; with --root, the tmpfs's mount options (mode=, ro) in /proc/mounts.
        Reading a report, it takes NCCL's "Call to shm_open failed : Permission denied".

    Why is this bad?
        NCCL's shared-memory transport, which GPUs of one node use where peer-to-peer is not
        available, and torch's DataLoader create their segments there. Without write access
        NCCL fails ("shm_open failed : Permission denied", then "unhandled system error"),
        whatever the size: the fix is the mode, not --shm-size (pytorch/pytorch#37004: "I
        give the permission by sudo chmod 777 /dev/shm and the problem is gone").

    Example
            $ ls -ld /dev/shm
            drwxr-xr-x 2 root root 40 ... /dev/shm     # invalid: only root may create segments
            drwxrwxrwt 2 root root 40 ... /dev/shm     # valid: 1777

    Fix
        Give /dev/shm the mode every tmpfs at /dev/shm has by default (or remount it so):

            sudo chmod 1777 /dev/shm
            export NCCL_SHM_DISABLE=1   # meanwhile, for one job: NCCL without its SHM transport
    """
    access = facts["system.shm_access"] or {}
    if access.get("writable") is not False:
        return None
    why = "it is mounted read-only" if access.get("read_only") else f"its mode is {access.get('mode')}, not 1777 (drwxrwxrwt)"
    return Hit(f"/dev/shm is not writable ({why}): NCCL's shared-memory segments and torch's DataLoader workers cannot be created "
               "(shm_open: Permission denied)",
               evidence={"system.shm_access": access},
               fix=FixRef(commands=("sudo chmod 1777 /dev/shm   # or remount: sudo mount -o remount,mode=1777 /dev/shm",
                                    "export NCCL_SHM_DISABLE=1   # meanwhile, for one job"),
                          note="ls -ld /dev/shm should show drwxrwxrwt"))


RULES: tuple[Rule, ...] = (shm_too_small, shm_not_writable)
