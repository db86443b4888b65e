"""NCCL's own words for three faults of its fabric, read from a report (issue 26, the
nccl-fabric group): no socket interface for its bootstrap, no network plugin that starts,
NVLS (NVLink SHARP multicast) setup failing with a CUDA error.

Each rule reads `report.errors` entries of doctor/kb/errors.yaml rows (their kinds are
`KINDS`, so fwdoctor.triage.rules does not raise them a second time through its generic
rule) and the NCCL_* variables the report shows (`nccl.env`: an `env` dump, or NCCL's own
"NCCL_SOCKET_IFNAME set by environment to ..." lines, fwdoctor.triage.nccl_debug).
nccl-socket-interface-missing has a regular rule (fwdoctor.rules.fabric, NCCL_SOCKET_IFNAME
against /sys/class/net), which documents it; this one runs where that one could not.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules import fabric
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule, sh
from fwdoctor.versions import major as major_of

if TYPE_CHECKING:
    from fwdoctor.kb import KB

KINDS = frozenset({"nccl-socket-family-unsupported", "nccl-no-socket-interface", "nccl-socket-address-unset", "nccl-no-net-plugin", "nccl-nvls-cuda-failure",
                   "cuda-system-not-ready", "fabricmanager-not-running-said", "nccl-named-symbol-not-found",
                   "nccl-shm-open-denied", "nccl-comm-id-no-subnet-interface"})

# GPUs of NVSwitch boards (HGX/DGX A100, H100, H200, H800, B200) as nvidia-smi names them:
# "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200"; their PCIe cards
# ("NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA A100-PCIE-40GB") sit on no NVSwitch.
_NVSWITCH_BOARD = re.compile(r"SXM|\bH100 80GB HBM3\b|\b(?:H200|H800|H20|B200|B100|B300)\b")
_PCIE_CARD = re.compile(r"PCIe|\bNVL\b", re.IGNORECASE)


def _env(facts: Facts) -> dict[str, str]:
    return {str(k): str(v) for k, v in (facts.get("nccl.env") or {}).items()}


@rule("nccl-socket-interface-missing", needs=("report.errors",), optional=("nccl.env",))
def socket_interface_missing(facts: Facts, kb: KB) -> Hit | None:
    """NCCL's "Bootstrap : no socket interface found" (before 2.4.8 "NET/Socket : no
    interface found") or "Socket creation failed : Address family not supported by
    protocol" (see nccl-socket-interface-missing); NCCL 2.27's "connecting to address  with
    family 59936 is neither AF_INET(2) nor AF_INET6(10)" (an address never set) only where
    the report also shows NCCL_SOCKET_IFNAME set: that pair is NVIDIA/nccl#1837's, while
    the words alone have other causes. With NCCL_COMM_ID set, "No interface found in the same
    subnet as remote address ..." / "NET/Socket : No usable listening interface found": no
    local interface in that address's subnet (NVIDIA/nccl#331, #929: containers on Docker's
    bridge network given the hosts' address)."""
    subnet = report_errors(facts, "nccl-comm-id-no-subnet-interface")
    if subnet:
        return _comm_id_subnet_hit(facts, subnet)
    ifname = _env(facts).get("NCCL_SOCKET_IFNAME")
    said = report_errors(facts, "nccl-no-socket-interface", "nccl-socket-family-unsupported")
    if ifname:
        said += report_errors(facts, "nccl-socket-address-unset")
    if not said:
        return None
    error = said[0]
    if ifname:
        why = f"NCCL_SOCKET_IFNAME={ifname} (the report sets it) matches no interface with an IP address on this node"
    elif error["kind"] == "nccl-socket-family-unsupported":
        why = "this node (or container) has no usable IP interface of the address family NCCL picked, which its bootstrap needs even on one node"
    else:
        why = "NCCL found no interface with an IP address to bootstrap over (NCCL_SOCKET_IFNAME, where it is set, matches none)"
    return Hit(
        f"NCCL has no socket interface for its bootstrap: {why}: {report_line(error)}",
        evidence={"report.errors": said, "NCCL_SOCKET_IFNAME": ifname},
        fix=FixRef(commands=("ip -brief address   # the interfaces and their addresses, on every node",
                             "export NCCL_SOCKET_IFNAME=<an interface listed there>   # or unset it and let NCCL pick"),
                   note="NCCL_SOCKET_IFNAME is a list of name prefixes (^ excludes, = exact); it may also come from a job script, "
                        "the image's ENV or /etc/nccl.conf; where IPv6 is off, NCCL_SOCKET_FAMILY=AF_INET"),
    )


def _comm_id_subnet_hit(facts: Facts, said: list[dict[str, Any]]) -> Hit:
    """nccl-socket-interface-missing where NCCL_COMM_ID names the bootstrap's address: NCCL
    listens only on a local interface in that address's subnet (src/bootstrap.cc)."""
    comm_id = _env(facts).get("NCCL_COMM_ID")
    address = next((e.get("address") for e in said if e.get("address")), None)
    named = f"NCCL_COMM_ID={comm_id}" if comm_id else (f"NCCL_COMM_ID (its address {address})" if address else "NCCL_COMM_ID")
    return Hit(
        f"NCCL has no socket interface for its bootstrap: {named} names an address in a subnet no interface of this node "
        f"(or container) is in, and with NCCL_COMM_ID set NCCL listens only on such an interface: {report_line(said[0])}",
        evidence={"report.errors": said, "NCCL_COMM_ID": comm_id},
        fix=FixRef(commands=("ip -brief address   # this node's (or container's) addresses: one must share a subnet with NCCL_COMM_ID's",
                             "unset NCCL_COMM_ID   # let torch / the launcher hand out NCCL's unique id (MASTER_ADDR) instead",
                             "docker run --network=host ...   # a container on Docker's bridge network has only its 172.17.x.x address"),
                   note="NCCL_COMM_ID=<rank 0's address on a subnet every node shares>:<port>, the same on every rank "
                        "(src/bootstrap.cc reads it; NVIDIA/nccl#474: every rank then looks for an interface in that address's subnet)"),
    )


@rule("nccl-net-plugin-failed", needs=("report.errors",), optional=("nccl.env",))
def net_plugin_failed(facts: Facts, kb: KB) -> Hit | None:
    """NCCL's "Failed to initialize any NET plugin" (see nccl-net-plugin-failed)."""
    said = report_errors(facts, "nccl-no-net-plugin")
    if not said:
        return None
    net = _env(facts).get("NCCL_NET")
    asked = f"NCCL_NET={net} (the report sets it) did not start" if net else "no plugin started (the one NCCL_NET names, if set; an external plugin; IB; Socket)"
    commands = ["ls /dev/infiniband   # uverbs* and rdma_cm must be there, inside the container too (docker run --device /dev/infiniband)",
                "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET <the job>   # the INFO lines above the warning say which plugin failed and why"]
    if net:
        commands.append(f"unset NCCL_NET   # was {sh(net)}: NCCL may then fall back on Socket")
    return Hit(
        f"NCCL could start no network plugin: {asked}; most often an RDMA network asked for where no RDMA device is usable "
        f"(a container without /dev/infiniband, no libibverbs): {report_line(said[0])}",
        evidence={"report.errors": said, "NCCL_NET": net},
        fix=FixRef(commands=tuple(commands), note="https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-net"),
    )


@rule("nccl-nvls-failed", needs=("report.errors",))
def nvls_failed(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads NCCL's "transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'":
        a CUDA call of NCCL's NVLS transport (NVLink SHARP, multicast memory through the
        NVSwitches of an HGX/DGX H100, H200 or B200) failed while the communicator was set
        up.

    Why is this bad?
        ncclCommInitRank fails ("unhandled cuda error") for every communicator of three or
        more GPUs on the node, although each GPU works. NVIDIA's answers name the fabric
        manager: restarted while processes held GPU resources, or without resetting the
        GPUs in between (NVIDIA/nccl#976, #1338, #1488; the Fabric Manager user guide's
        start-up order). Other system reasons exist (NVIDIA/nccl#1672).

    Example
            $ sudo systemctl restart nvidia-fabricmanager   # GPUs not reset
            $ all_reduce_perf -g 8
            transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'   # invalid

    Fix
        Reset the GPUs (or reboot) after a fabric manager restart; to run meanwhile,
        without NVLS:

            sudo systemctl stop nvidia-fabricmanager; sudo nvidia-smi -r; sudo systemctl start nvidia-fabricmanager
            export NCCL_NVLS_ENABLE=0
    """
    said = report_errors(facts, "nccl-nvls-cuda-failure")
    if not said:
        return None
    error = said[0]
    return Hit(
        f"NCCL's NVLS (NVLink SHARP multicast) setup failed with CUDA error '{error['error']}': usually the fabric manager was "
        f"restarted without resetting the GPUs (a reboot clears it): {report_line(error)}",
        evidence={"report.errors": said},
        fix=FixRef(commands=("nvidia-smi -q | grep -A2 -i fabric   # each GPU's fabric state: Completed, Success",
                             "sudo systemctl stop nvidia-fabricmanager; sudo nvidia-smi -r; sudo systemctl start nvidia-fabricmanager   # or reboot",
                             "export NCCL_NVLS_ENABLE=0   # meanwhile: NCCL without NVLS"),
                   note="NVIDIA Fabric Manager user guide: reset the GPUs whenever the fabric manager is stopped and started again"),
    )


def _nvswitch_gpu(facts: Facts) -> str | None:
    for gpu in facts.get("gpus.list") or []:
        name = str(gpu.get("name") or "")
        if _NVSWITCH_BOARD.search(name) and not _PCIE_CARD.search(name):
            return name
    return None


@rule("nvswitch-fabricmanager-not-running", needs=("report.errors",), optional=("gpus.list",))
def fabricmanager_not_running(facts: Facts, kb: KB) -> Hit | None:
    """CUDA's "system not yet initialized" (error 802, cudaErrorSystemNotReady) or the
    report saying the fabric manager is not installed or not running: an error beside a
    second sign (a GPU of an NVSwitch board, or both texts), else a warning, since 802 has
    causes off NVSwitch boards too (see nvswitch-fabricmanager-not-running)."""
    not_ready = report_errors(facts, "cuda-system-not-ready")
    said = report_errors(facts, "fabricmanager-not-running-said")
    if not not_ready and not said:
        return None
    gpu = _nvswitch_gpu(facts)
    # nv-fabricmanager's own "driver interface version X don't match with driver version Y"
    # names why it does not run: fabricmanager-driver-mismatch (the generic row rule) is the
    # error then, and this one only says what follows from it.
    mismatch = bool(report_errors(facts, "fabricmanager-driver-version-mismatch"))
    signs = [s for s in (bool(not_ready), bool(said), bool(gpu)) if s]
    first = (not_ready or said)[0]
    what = "CUDA reports the system not yet initialized (error 802)" if not_ready else "the report says the fabric manager does not run"
    where = f" on an NVSwitch board ({gpu})" if gpu else ""
    return Hit(
        f"{what}{where}: the NVSwitches are unconfigured until nvidia-fabricmanager of the driver's exact version runs: {report_line(first)}",
        evidence={"report.errors": not_ready + said, "gpu": gpu},
        fix=FixRef(commands=("systemctl status nvidia-fabricmanager   # installed? running? its log names a version mismatch",
                             "sudo apt-get install nvidia-fabricmanager-<driver branch>   # the driver's exact version",
                             "sudo systemctl enable --now nvidia-fabricmanager",
                             "nvidia-smi -q | grep -A2 -i fabric   # each GPU's fabric state: Completed, Success")),
        severity=None if len(signs) >= 2 and not mismatch else Severity.WARNING,
    )


@rule("nccl-socket-virtual-interfaces", needs=("nccl.socket_ifaces",))
def socket_virtual_interfaces(facts: Facts, kb: KB) -> Hit | None:
    """A pasted "NET/Socket : Using [0]bond0:... [1]br-05ab815fa14e:..." list with container
    bridges or veth interfaces beside a real one (see nccl-socket-virtual-interfaces)."""
    listed = facts.get("nccl.socket_ifaces") or []
    names = [str(s.get("iface")) for s in listed]
    virtual = fabric.virtual_interfaces(names)
    if not virtual:
        return None
    return fabric.socket_virtual_hit(names, virtual, evidence={"nccl.socket_ifaces": listed}, where=f" ({facts.source('nccl.socket_ifaces')})")


@rule("pcie-acs-redirect", needs=("report.p2p_disable_cures_hang",))
def p2p_disable_cures_hang(facts: Facts, kb: KB) -> Hit | None:
    """A report whose NCCL job hangs and runs with NCCL_P2P_DISABLE=1 (fwdoctor.triage.p2p_prose):
    NCCL's answer is ACS (or the IOMMU) redirecting peer-to-peer traffic, which the report
    does not show; a warning naming the command that settles it (see pcie-acs-redirect)."""
    said = facts.get("report.p2p_disable_cures_hang")
    if not said:
        return None
    return Hit(
        f"NCCL hangs and runs with NCCL_P2P_DISABLE=1 ({said}): GPU peer-to-peer does not work here, which NVIDIA ties "
        "to PCIe ACS redirecting P2P traffic through the root complex, or to the IOMMU; the report does not show the bridges' ACS bits",
        evidence={"report.p2p_disable_cures_hang": said},
        fix=FixRef(commands=("sudo lspci -vvv | grep -i acsctl   # 'SrcValid+ ... ReqRedir+ CmpltRedir+' on a bridge above the GPUs: ACS is on",
                             "cat /proc/cmdline   # intel_iommu=on / amd_iommu without iommu=pt",
                             "nvidia-smi topo -p2p r   # which GPU pairs CUDA lets read each other"),
                   note="https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs: "
                        "disable ACS on the PCIe switches (or VT-d/IOMMU, or boot with iommu=pt) rather than P2P"),
        severity=Severity.WARNING,
    )


@rule("iommu-translation", needs=("report.iommu_change_cures_hang",))
def iommu_change_cures_hang(facts: Facts, kb: KB) -> Hit | None:
    """A report whose NCCL job hangs and runs once the IOMMU stops translating (iommu=soft or
    pt, intel_iommu=off, VT-d off; fwdoctor.triage.p2p_prose): NCCL's troubleshooting guide
    ties that to the IOMMU remapping peer-to-peer traffic; a warning naming the passthrough
    boot flag rather than the IOMMU off (see iommu-translation)."""
    said = facts.get("report.iommu_change_cures_hang")
    if not said:
        return None
    return Hit(
        f"NCCL hangs and runs once the IOMMU stops translating ({said}): the IOMMU remaps GPU peer-to-peer traffic, "
        "which NCCL's troubleshooting guide says can hang or slow P2P and GPUDirect RDMA",
        evidence={"report.iommu_change_cures_hang": said},
        fix=FixRef(commands=("cat /proc/cmdline   # intel_iommu=on / amd_iommu=on without iommu=pt",
                             "sudo sed -i 's/^GRUB_CMDLINE_LINUX=\"/&iommu=pt /' /etc/default/grub && sudo update-grub   # then reboot"),
                   note="https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#iommu: "
                        "passthrough (iommu=pt) keeps the IOMMU for VMs and lets P2P through on bare metal"),
        severity=Severity.WARNING,
    )


def _loaded(facts: Facts) -> list[dict[str, Any]]:
    value = facts.get("nccl.loaded")
    return [v for v in value.get("versions") or [] if isinstance(v, dict)] if isinstance(value, dict) else []


def nccl_older_than_gpu(facts: Facts, kb: KB) -> Hit | None:
    """The NCCL a report shows loaded (its "NCCL version 2.x.y" banner, nccl.loaded) is older
    than the first release for a GPU's architecture (libs.yaml nccl_arch, from NVIDIA/nccl's
    release notes): NCCL 2.14.3 on an H100 (2.15.1 added sm90), 2.25.1 on an RTX 5090 (2.26.2
    fixed sm_120's shared memory). Read by fwdoctor.triage.rules' nccl-gpu-unsupported where
    NCCL's own "ncclMaxSharedMem ... exceeds" is not in the report. An arch without a row is
    not judged."""
    for entry in _loaded(facts):
        try:
            loaded = Version(entry["version"])
        except (InvalidVersion, KeyError, TypeError):
            continue
        for gpu in facts.get("gpus.list") or []:
            cc = kb.gpus.cc_for_gpu(gpu)
            row = kb.libs.nccl_arch_row(cc) if cc else None
            if row is None or loaded >= row.min_nccl:
                continue
            torch_behind = _torch_lacks_arch(facts, kb, cc)
            return Hit(
                f"NCCL {entry['version']} (report line {entry['line']}) is older than NCCL {row.min_nccl}, the first release for "
                f"{row.name} GPUs (compute capability {cc}); GPU {gpu.get('index')} is {gpu.get('name')}: collectives on it fail or hang",
                evidence={"nccl.loaded": entry, "gpu": gpu, "cc": cc, "min_nccl": str(row.min_nccl), "kb_source": list(row.source)},
                fix=FixRef(commands=(f"python -m pip install -U 'nvidia-nccl-cu12>={row.min_nccl}'   # or the torch / container image that ships it",
                                     "NCCL_DEBUG=INFO <the job> 2>&1 | grep 'NCCL version'   # the NCCL the run loads, after the change"),
                           note="NCCL release notes: https://docs.nvidia.com/deeplearning/nccl/release-notes/"),
                # torch itself has no kernels for this arch (its build's CUDA or arch list): its
                # own NCCL is old for the same reason, and the torch finding's fix (a newer
                # torch) brings a newer NCCL; this one only adds to it
                severity=Severity.WARNING if torch_behind else None,
            )
    return None


def _torch_lacks_arch(facts: Facts, kb: KB, cc: str) -> bool:
    """torch (as the report shows it) cannot run on compute capability `cc`: torch says so
    ("sm_120 is not compatible with the current PyTorch installation", "no kernel image"), or
    its CUDA cannot build for it."""
    if report_errors(facts, "sm-incompatible", "no-kernel-image", "torch-gpu-too-old"):
        return True
    torch_cuda = facts.get("torch.cuda")
    return isinstance(torch_cuda, str) and kb.cuda.nvcc_supports(torch_cuda, cc) is False


@rule("nccl-cuda-mismatch", optional=("nccl.loaded", "nccl.packages", "torch.cuda", "torch.version", "cuda.toolkits"))
def loaded_nccl_cuda_mismatch(facts: Facts, kb: KB) -> Hit | None:
    """The NCCL a report shows loaded says the CUDA it was built for ("NCCL version
    2.9.9+cuda11.3"); that major is not the CUDA of what loads it: torch's (torch.cuda), or,
    where the report shows no torch, its one CUDA toolkit (nccl-tests and programs built
    with nvcc). NCCL is built per CUDA major; the wrong one fails with "unhandled cuda error"
    (see nccl-cuda-mismatch; the regular rule compares installs, which a report rarely lists).
    Where no banner names its CUDA, the NCCL packages the report lists installed (`apt list
    --installed`, `dpkg -l`: "libnccl2 2.8.4-1+cuda11.2", nccl.packages) are compared with
    that one toolkit only: a torch wheel brings its own NCCL and does not load them."""
    built = next((e for e in _loaded(facts) if e.get("cuda")), None)
    if built is None:
        return _installed_nccl_cuda_mismatch(facts)
    nccl_major = major_of(str(built["cuda"]))
    torch_cuda = facts.get("torch.cuda")
    if isinstance(torch_cuda, str) and major_of(torch_cuda) is not None:
        ref, who = major_of(torch_cuda), f"torch, built for CUDA {torch_cuda}"
    elif facts.known("torch.version") or facts.known("torch.cuda"):
        return None  # torch is there (a CPU build, or its CUDA unknown): no toolkit speaks for it
    else:
        ref = _one_toolkit_major(facts)
        if ref is None:
            return None
        who = f"the CUDA {ref} toolkit the report shows (nvcc), which builds the program that loads it"
    if nccl_major is None or nccl_major == ref:
        return None
    return Hit(
        f"NCCL {built['version']} was built for CUDA {built['cuda']} (report line {built['line']}), but it is loaded by {who}: "
        "NCCL is built per CUDA major, and the wrong one fails at init or at the first collective (\"unhandled cuda error\")",
        evidence={"nccl.loaded": built, "cuda_major_expected": ref},
        fix=FixRef(commands=(f"apt list --installed 2>/dev/null | grep -i nccl; pip list 2>/dev/null | grep -i nccl   # which NCCL builds are installed",
                             f"sudo apt-get install libnccl2=<version>+cuda{ref}.<minor> libnccl-dev=<version>+cuda{ref}.<minor>   # an NCCL for CUDA {ref}"),
                   note="NCCL's packages and wheels are per CUDA major (libnccl2 X+cudaA.B, nvidia-nccl-cuNN)"),
    )


def _one_toolkit_major(facts: Facts) -> int | None:
    majors = {major_of(str(t.get("version"))) for t in facts.get("cuda.toolkits") or [] if isinstance(t, dict)}
    majors.discard(None)
    return majors.pop() if len(majors) == 1 else None


def _installed_nccl_cuda_mismatch(facts: Facts) -> Hit | None:
    """An installed NCCL package built for another CUDA major than the report's one toolkit
    (nccl.packages against cuda.toolkits), where the report shows no torch and no banner of
    another NCCL: the system NCCL is what nccl-tests, Caffe or Horovod built with that
    toolkit load."""
    packages = [p for p in facts.get("nccl.packages") or [] if isinstance(p, dict) and p.get("cuda")]
    if not packages or facts.known("torch.version") or facts.known("torch.cuda"):
        return None
    loaded = {e.get("version") for e in _loaded(facts)}
    if loaded:  # the run's banner names its NCCL: only a package of that release is the one it loaded
        packages = [p for p in packages if p.get("version") in loaded]
    ref = _one_toolkit_major(facts)
    wrong = [p for p in packages if ref is not None and major_of(str(p["cuda"])) not in (None, ref)]
    if not wrong:
        return None
    first = min(wrong, key=lambda p: p.get("package") != "libnccl2")  # the runtime before the headers
    return Hit(
        f"{first['package']} {first.get('deb_version') or first['version']} is installed (report line {first['line']}, {first['via']}): an NCCL built "
        f"for CUDA {first['cuda']}, but the report's CUDA toolkit is {ref}.x, which builds the programs that load the system NCCL: "
        "NCCL is built per CUDA major, and the wrong one fails at init or at the first collective (\"unhandled cuda error\")",
        evidence={"nccl.packages": wrong, "cuda_major_expected": ref},
        fix=FixRef(commands=("apt list --installed 2>/dev/null | grep -i nccl   # the NCCL builds installed",
                             f"apt-cache madison libnccl2 | grep +cuda{ref}.   # the builds for CUDA {ref}",
                             f"sudo apt-get install libnccl2=<version>+cuda{ref}.<minor> libnccl-dev=<version>+cuda{ref}.<minor>   # an NCCL for CUDA {ref}"),
                   note="NCCL's packages are per CUDA major (libnccl2 X+cudaA.B); keep libnccl2 and libnccl-dev of one build"),
    )


@rule("nccl-kernels-missing", needs=("report.errors",))
def kernels_missing(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads NCCL's "enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'" (also
        without file:line from NCCL before 2.19, and torch's "Last error: Cuda failure ..."):
        CUDA finds none of NCCL's own kernels for the GPU, i.e. the libnccl that was loaded
        was compiled without the GPU's architecture. Where torch's own build lacks the arch,
        gpu-arch-unsupported-by-torch says so instead.

    Why is this bad?
        Every collective fails ("unhandled cuda error") on that GPU. NCCL is built for all
        supported architectures by default, but a site build narrowed with NVCC_GENCODE
        (NVIDIA/nccl#1372: compute_80 only, run on H100) or a build that predates the
        architecture (NVIDIA/nccl#112: compute capability 3.0 not compiled) has no code for it.

    Example
        An NCCL built for A100 only, loaded on H100: invalid. Built with both: valid.

            make -j src.build NVCC_GENCODE="-gencode=arch=compute_80,code=sm_80"
            G80="-gencode=arch=compute_80,code=sm_80"; G90="-gencode=arch=compute_90,code=sm_90"
            make -j src.build NVCC_GENCODE="$G80 $G90"

    Fix
        Load an NCCL built for the GPU: rebuild with its arch in NVCC_GENCODE (or the default,
        all), or use the NCCL torch or the container image ships:

            nvidia-smi --query-gpu=name,compute_cap --format=csv
            cuobjdump --list-elf $(ldconfig -p | awk '/libnccl.so.2 /{print $NF; exit}') | grep -o 'sm_[0-9]*' | sort -u
    """
    said = report_errors(facts, "nccl-named-symbol-not-found")
    if not said or report_errors(facts, "sm-incompatible"):
        return None  # torch's own build lacks the arch (gpu-arch-unsupported-by-torch): its NCCL with it
    return Hit(
        f"the NCCL loaded has no kernels for this GPU's architecture (CUDA finds none of NCCL's own kernels): "
        f"a build whose NVCC_GENCODE leaves the arch out, or one older than the GPU: {report_line(said[0])}",
        evidence={"report.errors": said},
        fix=FixRef(commands=("nvidia-smi --query-gpu=name,compute_cap --format=csv   # the arch needed",
                             "cuobjdump --list-elf <the libnccl.so.2 loaded> | grep -o 'sm_[0-9]*' | sort -u   # the archs it carries",
                             'make -j src.build NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90 ..."   # rebuild with every arch of the nodes'),
                   note="NCCL builds for all supported architectures unless NVCC_GENCODE narrows it (NCCL README)"),
    )


@rule("shm-not-writable", needs=("report.errors",))
def shm_open_denied(facts: Facts, kb: KB) -> Hit | None:
    """NCCL's "Call to shm_open failed : Permission denied" (see shm-not-writable)."""
    said = report_errors(facts, "nccl-shm-open-denied")
    if not said:
        return None
    return Hit(
        f"/dev/shm is not writable by the user NCCL runs as (shm_open: Permission denied), which is not a size problem: {report_line(said[0])}",
        evidence={"report.errors": said},
        fix=FixRef(commands=("ls -ld /dev/shm   # should be drwxrwxrwt (1777)", "sudo chmod 1777 /dev/shm",
                             "export NCCL_SHM_DISABLE=1   # meanwhile, for one job")),
    )


@rule("nccl-socket-with-ib", needs=("report.nccl_ib_fallback",))
def socket_over_ipoib(facts: Facts, kb: KB) -> Hit | None:
    """NCCL's log names an IPoIB interface (ib0, ibp12s0: an InfiniBand HCA is up on the node)
    and says it could not use IB ("Failed to open libibverbs.so[.1]", "NET/IB : No device
    found", "Using network Socket"; fwdoctor.triage.nccl_ib_fallback), where the report shows
    no ibv_devinfo for the regular rule: traffic between nodes goes over TCP (see
    nccl-socket-with-ib). sgl-project/sglang#1427: the image lacked libibverbs; installing
    it restored IB."""
    said = facts.get("report.nccl_ib_fallback")
    if not said:
        return None
    libs = "libibverbs" in str(said.get("said"))
    why = ("NCCL cannot load libibverbs (rdma-core is not installed where it runs)" if libs
           else "NCCL opens no IB device there (no /dev/infiniband in the container, or no rdma-core provider for the HCA)")
    commands = (("apt-get install -y libibverbs1 ibverbs-providers   # in the image: rdma-core's libibverbs and its mlx5 provider",) if libs else ()) + (
        "ls /dev/infiniband   # uverbs* must be there inside the container: docker run --device=/dev/infiniband (or the RDMA device plugin)",
        "ibv_devinfo   # the HCA and its port state, where NCCL runs")
    return Hit(
        f"NCCL fell back to TCP sockets on an InfiniBand node: the log names the IPoIB interface {said.get('iface')} "
        f"(report line {said.get('iface_line')}) and \"{said.get('said')}\" (line {said.get('said_line')}): {why}",
        evidence={"report.nccl_ib_fallback": said},
        fix=FixRef(commands=commands, note="Rerun with NCCL_DEBUG=INFO and expect \"NET/IB : Using [0]mlx5_...\" and \"via NET/IB/.../GDRDMA\"."),
        severity=Severity.WARNING,
    )


RULES: tuple[Rule, ...] = (socket_interface_missing, net_plugin_failed, nvls_failed, fabricmanager_not_running, socket_virtual_interfaces,
                           p2p_disable_cures_hang, iommu_change_cures_hang, loaded_nccl_cuda_mismatch, kernels_missing, shm_open_denied,
                           socket_over_ipoib)
