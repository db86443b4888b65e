"""Hardware health a scheduler acts on: PCIe links, IOMMU, ACS, ECC, NVLink, clocks,
persistence (facts from probes/hardware.py and the NVML child).

`RULES` are judged by `check`. `GATE_RULES` compare the node with what its type should
have (`node.expected`, set by `fwdoctor gate` from its policy or a `--baseline`), so
`check`, which knows no node type, does not list them as "not checked".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule, sh

if TYPE_CHECKING:
    from fwdoctor.kb import KB

# Clock event reasons that mean the hardware is protecting itself, not that it is idle or
# capped by a setting: nvml.h documents HW slowdown ("thermal slowdown or power brake"),
# the HW/SW thermal slowdowns and the external power brake as such; GpuIdle,
# ApplicationsClocksSetting, SwPowerCap (the board's power limit under load), SyncBoost
# and DisplayClockSetting are normal operation.
SLOWDOWNS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


def _link(value: Any, unit: str) -> str:
    return "?" if value is None else f"{value:g}{unit}" if isinstance(value, float) else f"{value}{unit}"


@rule("pcie-link-degraded", needs=("gpus.pcie_links",))
def pcie_link_degraded(facts: Facts, kb: KB) -> list[Hit]:
    """What it does
        Compares each NVIDIA GPU's PCIe link as trained (sysfs current_link_width,
        current_link_speed) with what the GPU and slot can do (max_link_width,
        max_link_speed).

    Why is this bad?
        A GPU in an x16 slot that trained at x8 (a badly seated card, a riser, a dirty
        edge connector) or at Gen1 moves host-to-device copies, data loading and
        GPUDirect traffic at half speed or less, for every job on the node, with no error
        anywhere. A lower width is a warning; a lower speed alone is information: GPUs
        lower the link speed when idle to save power (nvidia-smi(1), "GPU Link Info":
        current generation and width "may be reduced when the GPU is not in use"), so
        check it again under load.

    Example
            $ cat /sys/bus/pci/devices/0000:1b:00.0/current_link_width
            8
            $ cat /sys/bus/pci/devices/0000:1b:00.0/max_link_width
            16

    Fix
        Look at the link under load, then reseat the card or replace the riser:

            sudo lspci -vv -s <slot> | grep -E 'LnkCap|LnkSta'
            nvidia-smi --query-gpu=index,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max --format=csv
    """
    hits = []
    for link in facts["gpus.pcie_links"]:
        width, top_width = link.get("width"), link.get("max_width")
        speed, top_speed = link.get("speed_gts"), link.get("max_speed_gts")
        narrow = width is not None and top_width is not None and width < top_width
        slow = speed is not None and top_speed is not None and speed < top_speed
        if not narrow and not slow:
            continue
        now = f"x{_link(width, '')} {_link(speed, ' GT/s')} (Gen{_link(link.get('gen'), '')})"
        can = f"x{_link(top_width, '')} {_link(top_speed, ' GT/s')} (Gen{_link(link.get('max_gen'), '')})"
        note = "" if narrow else " (the speed drops when the GPU is idle: check under load)"
        slot = link.get("slot")
        hits.append(Hit(f"GPU {slot}: PCIe link at {now}, capable of {can}{note}",
                        evidence={"link": link}, severity=None if narrow else Severity.INFO,
                        fix=FixRef(commands=(f"sudo lspci -vv -s {sh(slot)} | grep -E 'LnkCap|LnkSta'",))))
    return hits


@rule("iommu-translation", needs=("system.iommu",))
def iommu_translation(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads the IOMMU mode for the GPUs: the type of each GPU's IOMMU group
        (/sys/kernel/iommu_groups/N/type: "DMA" or "DMA-FQ" translate, "identity" passes
        through), else the kernel command line (iommu=pt, intel_iommu=on, amd_iommu=on).

    Why is this bad?
        With the IOMMU translating, every peer-to-peer and GPUDirect RDMA transfer is
        remapped through it: NCCL's troubleshooting guide (section "IOMMU") warns that
        this can make P2P and RDMA slow or hang, and recommends passthrough (iommu=pt)
        on bare metal. On Intel hosts it also switches ACS on (see pcie-acs-redirect).

    Example
            $ cat /proc/cmdline
            BOOT_IMAGE=/vmlinuz ro intel_iommu=on
            $ cat /sys/kernel/iommu_groups/17/type
            DMA-FQ

    Fix
        Boot with the IOMMU in passthrough mode (a reboot):

            sudo sed -i 's/^GRUB_CMDLINE_LINUX="/&iommu=pt /' /etc/default/grub && sudo update-grub
    """
    iommu = facts["system.iommu"]
    if iommu.get("mode") != "translation":
        return None
    types = sorted({g["type"] for g in iommu.get("gpu_groups", []) if g.get("type")})
    args = " ".join(f"{k}={v}" if v else k for k, v in sorted(iommu.get("cmdline", {}).items())) or "no IOMMU argument"
    seen = f"GPU IOMMU groups of type {', '.join(types)}" if types else f"kernel command line: {args}"
    return Hit(f"the IOMMU translates the GPUs' DMA ({seen}); NCCL peer-to-peer and GPUDirect RDMA want iommu=pt",
               evidence={"system.iommu": iommu},
               fix=FixRef(commands=("sudo sed -i 's/^GRUB_CMDLINE_LINUX=\"/&iommu=pt /' /etc/default/grub && sudo update-grub   # then reboot",)))


@rule("pcie-acs-redirect", needs=("pci.acs",))
def pcie_acs_redirect(facts: Facts, kb: KB) -> list[Hit]:
    """What it does
        For every PCIe bridge with two or more GPUs below it (a PCIe switch), reads the
        ACS control register from its configuration space (readable by root) and looks
        at the P2P Request Redirect and P2P Completion Redirect bits.

    Why is this bad?
        With ACS redirect on, peer-to-peer traffic between GPUs under one switch goes up
        to the root complex instead of across the switch: NCCL's troubleshooting guide
        (section "PCI Access Control Services (ACS)") says this makes P2P slow or hang
        and to disable ACS on bare metal. IOMMU translation on Intel turns it on.

    Example
            $ sudo setpci -s 0000:17:00.0 ECAP_ACS+0x6.w
            001d

    Fix
        Clear the ACS control register on the bridge (until the next reboot; make it
        permanent with iommu=pt or a boot script):

            sudo setpci -s <bridge> ECAP_ACS+0x6.w=0000
    """
    hits = []
    for bridge in facts["pci.acs"]:
        if bridge.get("redirect") is not True:
            continue
        name = bridge.get("bridge")
        gpus = bridge.get("gpus") or []
        # A pasted `lspci -vvv` (fwdoctor triage) names the bridge but not the GPUs below it,
        # and a grepped ACSCtl line not even the bridge.
        below = f"above GPU{'s' if len(gpus) > 1 else ''} {', '.join(gpus)}" if gpus else "(the GPUs below it are not shown)"
        command = f"sudo setpci -s {sh(name)} ECAP_ACS+0x6.w=0000" if name else "sudo setpci -s <bridge> ECAP_ACS+0x6.w=0000   # each bridge above the GPUs: lspci -tv"
        hits.append(Hit(f"PCIe bridge {name or '(not named)'} {below} has ACS redirect on "
                        f"(control 0x{int(bridge.get('acs_ctrl') or 0):04x}): peer-to-peer traffic below it detours through the root complex",
                        evidence={"bridge": bridge},
                        fix=FixRef(commands=(command,))))
    return hits


@rule("gpu-ecc-uncorrected", needs=("gpus.health",))
def gpu_ecc_uncorrected(facts: Facts, kb: KB) -> list[Hit]:
    """What it does
        Reads each GPU's uncorrectable ECC error counts from NVML: since the driver
        loaded (volatile) and over the GPU's life (aggregate), and the rows remapped
        for uncorrectable errors.

    Why is this bad?
        An uncorrectable ECC error kills the process that touched the memory (Xid 48,
        or 63/64 with row remapping) and may have corrupted results before it was
        noticed. Errors since the driver loaded mean the GPU is failing now; a growing
        lifetime count is the pattern NVIDIA's GPU memory error management guide says
        to watch before replacing a board.

    Example
            $ nvidia-smi -q -d ECC
                Volatile
                    DRAM Uncorrectable : 2

    Fix
        Drain the node, reset the GPU and run the memory diagnostic; a GPU that keeps
        counting goes back to the vendor:

            sudo nvidia-smi -r -i <index>
            dcgmi diag -r 3
    """
    hits = []
    for gpu in facts["gpus.health"]:
        volatile = gpu.get("ecc_uncorrected_volatile") or 0
        if volatile <= 0:
            continue
        lifetime = gpu.get("ecc_uncorrected_aggregate")
        hits.append(Hit(f"GPU {gpu.get('index')} ({gpu.get('bus_id')}): {volatile} uncorrectable ECC errors since the driver loaded"
                        + (f" ({lifetime} over its life)" if lifetime is not None else ""),
                        evidence={"gpu": gpu},
                        fix=FixRef(commands=(f"sudo nvidia-smi -r -i {sh(gpu.get('index'))}   # after draining it",))))
    return hits


@rule("nvlink-down", needs=("topology.nvlink",))
def nvlink_down(facts: Facts, kb: KB) -> list[Hit]:
    """What it does
        Counts, per GPU, the NVLink links NVML reports and how many are up.

    Why is this bad?
        A GPU with a link down talks to its peers at a fraction of the bandwidth, or
        through PCIe; NCCL still runs, so training is just slower on every node that
        waits for this one. Links that never came up after a reset also stop the fabric
        manager from admitting the GPU on NVSwitch systems.

    Example
            $ nvidia-smi nvlink -s -i 3
            GPU 3: ...
                 Link 0: <inactive>

    Fix
        Reset the GPU (or reboot the node); links that stay down are a hardware case:

            nvidia-smi nvlink -s
            sudo nvidia-smi -r -i <index>
    """
    hits = []
    for gpu in facts["topology.nvlink"]:
        links, active = gpu.get("links") or 0, gpu.get("active") or 0
        if links and active < links:
            hits.append(Hit(f"GPU {gpu.get('index')}: {links - active} of {links} NVLink links down",
                            evidence={"gpu": gpu},
                            fix=FixRef(commands=(f"nvidia-smi nvlink -s -i {sh(gpu.get('index'))}",))))
    return hits


@rule("gpu-clocks-throttled", needs=("gpus.clocks_event_reasons",))
def gpu_clocks_throttled(facts: Facts, kb: KB) -> list[Hit]:
    """What it does
        Reads NVML's current clock event reasons for each GPU and reports the ones that
        mean the hardware protects itself: HW slowdown, HW or SW thermal slowdown, HW
        power brake. Idle, the applications-clocks setting, the power cap and sync boost
        are normal operation and left alone.

    Why is this bad?
        A GPU held down by a thermal or power slowdown runs at a fraction of its clocks;
        in data-parallel training every other GPU waits for it, so one hot GPU slows the
        whole job. HW slowdown often points at cooling, a failed fan or PSU, or the
        chassis' power brake signal.

    Example
            $ nvidia-smi -q -d PERFORMANCE
                Clocks Event Reasons
                    HW Thermal Slowdown  : Active

    Fix
        Check temperatures, fans and power supplies:

            nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i <index>
    """
    hits = []
    for gpu in facts["gpus.clocks_event_reasons"]:
        active = [r for r in gpu.get("reasons") or [] if r in SLOWDOWNS]
        if active:
            hits.append(Hit(f"GPU {gpu.get('index')} ({gpu.get('bus_id')}): clocks held down by {', '.join(r.replace('_', ' ') for r in active)}",
                            evidence={"gpu": gpu},
                            fix=FixRef(commands=(f"nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i {sh(gpu.get('index'))}",))))
    return hits


@rule("gpu-persistence-off", needs=("gpus.list",))
def gpu_persistence_off(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads each GPU's persistence mode (NVML or nvidia-smi).

    Why is this bad?
        Without persistence (or the nvidia-persistenced daemon) the driver tears the GPU
        state down whenever no process holds it, so each job's first CUDA call waits
        for re-initialisation (seconds on an 8-GPU node) and health checks that start
        between jobs pay it too. NVIDIA's driver persistence documentation recommends
        the daemon on compute nodes.

    Example
            $ nvidia-smi --query-gpu=index,persistence_mode --format=csv
            0, Disabled

    Fix
        Run the persistence daemon (preferred) or set the legacy mode:

            sudo systemctl enable --now nvidia-persistenced
    """
    off = [g.get("index") for g in facts["gpus.list"] if g.get("persistence") is False]
    if not off:
        return None
    return Hit(f"persistence mode is off on GPU {', '.join(str(i) for i in off)}: each job start re-initialises the GPU",
               evidence={"gpus": off}, fix=FixRef(commands=("sudo systemctl enable --now nvidia-persistenced",)))


# ----------------------------------------------------------------------------- gate only
def _working(gpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GPUs that answered: NVML names them (a lost GPU is listed with no name)."""
    return [g for g in gpus if g.get("name")]


@rule("gpu-count-low", needs=("gpus.list", "node.expected"))
def gpu_count_low(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the number of GPUs that answer (NVML, nvidia-smi or the driver's files
        name them) with the number the node type has: the gate policy's `expect.gpus`,
        or the median of the node's type in a `fleet baseline`. Judged by `fwdoctor
        gate` only.

    Why is this bad?
        A GPU that fell off the bus (Xid 79), was lost to NVML or never bound to the
        driver leaves the node with fewer GPUs than the scheduler allocates: jobs asking
        for all of them fail at start, or a torchrun world size no longer matches.

    Example
            $ nvidia-smi -L | wc -l
            7

    Fix
        Drain the node; a reboot brings a lost GPU back, a missing one is a hardware
        case:

            nvidia-smi -L; sudo dmesg | grep -i xid
    """
    expected = (facts["node.expected"] or {}).get("gpus")
    if not isinstance(expected, int):
        return None
    working = _working(facts["gpus.list"])
    if len(working) >= expected:
        return None
    where = facts["node.expected"].get("gpus_from") or facts["node.expected"].get("from", "the node type")
    return Hit(f"{len(working)} of {expected} GPUs answer (expected {expected} from {where})",
               evidence={"working": len(working), "expected": expected, "gpus.list": facts["gpus.list"]},
               fix=FixRef(commands=("nvidia-smi -L", "sudo dmesg | grep -i xid")))


@rule("node-differs-from-type", needs=("node.expected",), optional=("gpus.list", "gpus.pcie_links", "topology.nvlink", "smoke.gemm_tflops"))
def node_differs_from_type(facts: Facts, kb: KB) -> list[Hit]:
    """What it does
        Compares the node with its type's normal (a `fleet baseline` median, or the KB's
        row for the GPU model in nodetypes.yaml): the GPU model, each GPU's PCIe link
        width and generation, its NVLink link count and, with `--smoke kernel`, the
        node's GEMM TFLOP/s, naming the expected value. Judged by `fwdoctor gate` only.

    Why is this bad?
        A node that differs from its peers in a way no fixed threshold catches (x8 where
        the type trains at x16, 12 NVLinks where its peers have 18) slows every job that
        spans it; thresholds hand-tuned per SKU miss it on a variant of that SKU.

    Example
            $ fwdoctor gate --baseline baseline.yaml
            node-differs-from-type: GPU 0000:1b:00.0 PCIe width x8, the type's normal is x16

    Fix
        Compare the node with a healthy peer, then reseat or service the part named.
    """
    expected = facts["node.expected"] or {}
    hits: list[Hit] = []
    where = expected.get("from", "the node type")
    model = expected.get("gpu_model")
    gpus = facts.get("gpus.list") or []
    names = sorted({g.get("name") for g in _working(gpus)})
    if model and names and names != [model]:
        hits.append(Hit(f"GPU model {', '.join(names)}, the type's normal is {model} ({where})", evidence={"names": names, "expected": model}))
    for link in facts.get("gpus.pcie_links") or []:
        # The trained width, but the generation the link can reach: the current speed drops
        # when the GPU is idle (see pcie-link-degraded).
        for key, want_key, label, prefix in (("width", "pcie_width", "PCIe width", "x"), ("max_gen", "pcie_gen", "PCIe generation", "Gen")):
            want = expected.get(want_key)
            have = link.get(key)
            if isinstance(want, int) and isinstance(have, int) and have < want:
                hits.append(Hit(f"GPU {link.get('slot')} {label} {prefix}{have}, the type's normal is {prefix}{want} ({where})",
                                evidence={"link": link, "expected": want}))
    want_links = expected.get("nvlinks")
    for gpu in facts.get("topology.nvlink") or []:
        active = gpu.get("active")
        # A GPU that reports no NVLink at all left the question unanswered (NVML's "not
        # supported"), which nvlink-down does not judge either.
        if isinstance(want_links, int) and isinstance(active, int) and gpu.get("links") and active < want_links:
            hits.append(Hit(f"GPU {gpu.get('index')} has {active} NVLink links up, the type's normal is {want_links} ({where})",
                            evidence={"gpu": gpu, "expected": want_links}))
    gemm, floor = facts.get("smoke.gemm_tflops"), expected.get("gemm_floor")
    if isinstance(gemm, (int, float)) and isinstance(floor, (int, float)) and gemm < floor:
        hits.append(Hit(f"GEMM {gemm:g} TFLOP/s, below {floor:g} (the type's median {expected.get('gemm_tflops')} less the policy's margin; {where})",
                        evidence={"gemm_tflops": gemm, "expected": expected.get("gemm_tflops"), "floor": floor}))
    return hits


RULES: tuple[Rule, ...] = (
    pcie_link_degraded, iommu_translation, pcie_acs_redirect, gpu_ecc_uncorrected, nvlink_down,
    gpu_clocks_throttled, gpu_persistence_off,
)
GATE_RULES: tuple[Rule, ...] = (gpu_count_low, node_differs_from_type)


# The report-side twin (fwdoctor triage runs it; a live check has gpus.list and the rule above).
@rule("gpu-persistence-off", needs=("report.errors",))
def gpu_persistence_off_said(facts: Facts, kb: KB) -> Hit | None:
    """nvidia-container-cli's "initialization error: driver rpc error: timed out" (older releases:
    "driver error: timed out") as a GPU container starts: the hook's call into the driver did not
    answer within its 10 s RPC timeout. With no process holding the GPUs and neither
    nvidia-persistenced running nor persistence mode on, the driver initialises every GPU afresh
    for each client, which on a node with many GPUs (or a slow VM) outlasts that timeout
    (NVIDIA's maintainers on NVIDIA/nvidia-docker#628 and #1648 and nvidia-container-toolkit#202,
    whose reporter confirms `nvidia-smi -pm 1` fixes it). An error here: no GPU container starts."""
    said = report_errors(facts, "nvidia-container-cli-driver-timeout")
    if not said:
        return None
    return Hit(
        f"nvidia-container-cli timed out waiting for the NVIDIA driver as the container started: {report_line(said[0])}; the GPUs are "
        "not kept initialised (nvidia-persistenced not running, persistence mode off), so the driver's start-up of every GPU "
        "for each new client outlasts the hook's 10 s RPC timeout",
        evidence={"report.errors": said},
        fix=FixRef(commands=("nvidia-smi -q | grep -i 'persistence mode'   # on the host: Disabled is this",
                             "sudo systemctl enable --now nvidia-persistenced   # the daemon NVIDIA recommends",
                             "sudo nvidia-smi -pm 1   # or the legacy persistence mode, until the next reboot"),
                   note="keep the driver initialised on GPU container hosts (nvidia-persistenced); a driver that stays slow with it "
                        "points at a GPU or driver fault (dmesg: NVRM Xid)"),
        severity=Severity.ERROR,
    )


REPORT_RULES: tuple[Rule, ...] = (gpu_persistence_off_said,)
