"""The finding vocabulary (listed in docs/findings.md): stable ids, short codes, default severities.

An id never changes meaning and is never reused; users script against them. The order
here is the order of `fwdoctor list` and of areas in the text report.
"""

from __future__ import annotations

from dataclasses import dataclass

from fwdoctor.model import Severity

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO


@dataclass(frozen=True)
class FindingKind:
    id: str
    code: str
    severity: Severity
    area: str
    title: str


AREAS: tuple[str, ...] = ("driver", "toolkit", "cudnn", "nccl", "python", "torch", "frameworks", "runtime")

AREA_TITLES = {
    "driver": "Driver and GPUs",
    "toolkit": "CUDA toolkit and compilers",
    "cudnn": "cuDNN",
    "nccl": "NCCL",
    "python": "Python environment",
    "torch": "PyTorch",
    "frameworks": "JAX, TensorFlow and PaddlePaddle",
    "runtime": "Runtime and the doctor itself",
    "build": "Source-build pre-flight (`fwdoctor build torch`)",
    "extension": "Extension-build pre-flight (`fwdoctor build ext`)",
    "fleet": "Across the nodes of a fleet (`fwdoctor fleet report`)",
}

FINDING_KINDS: tuple[FindingKind, ...] = (
    FindingKind("driver-missing", "FWD101", E, "driver", "NVIDIA GPU present but no NVIDIA driver loaded"),
    FindingKind("nouveau-loaded", "FWD102", E, "driver", "the nouveau driver holds the GPU"),
    FindingKind("driver-library-mismatch", "FWD103", E, "driver", "kernel module and user-space driver libraries differ"),
    FindingKind("driver-too-old-for-torch", "FWD104", E, "driver", "driver cannot run the CUDA torch was built for"),
    FindingKind("driver-too-old-for-toolkit", "FWD105", E, "driver", "driver cannot run the active toolkit's programs"),
    FindingKind("gpu-arch-unsupported-by-torch", "FWD106", E, "driver", "torch has no kernels for a GPU"),
    FindingKind("gpu-arch-unsupported-by-toolkit", "FWD107", E, "driver", "nvcc cannot compile for a GPU"),
    FindingKind("no-gpu", "FWD108", I, "driver", "no NVIDIA GPU on this host"),
    FindingKind("driver-gpu-unsupported", "FWD109", E, "driver", "the loaded driver does not support a GPU on the bus"),
    FindingKind("nvswitch-fabricmanager-not-running", "FWD110", E, "driver", "NVSwitches present but no fabric manager running"),
    FindingKind("fabricmanager-driver-mismatch", "FWD111", E, "driver", "fabric manager and driver are different releases"),
    FindingKind("gpu-memory-repair-pending", "FWD112", W, "driver", "a GPU waits for a reset to retire pages / remap rows"),
    FindingKind("gpu-xid-errors", "FWD113", W, "driver", "the kernel log has NVIDIA Xid errors"),
    FindingKind("gpu-mig-enabled", "FWD114", I, "driver", "MIG mode is on for a GPU"),
    # Hardware health (rules/hardware.py): what ends in slow or hung training, read without a workload.
    FindingKind("pcie-link-degraded", "FWD115", W, "driver", "a GPU's PCIe link trained below its capability"),
    FindingKind("iommu-translation", "FWD116", W, "driver", "the IOMMU translates the GPUs' DMA (not passthrough)"),
    FindingKind("pcie-acs-redirect", "FWD117", W, "driver", "ACS redirects peer-to-peer traffic on a bridge between GPUs"),
    FindingKind("gpu-ecc-uncorrected", "FWD118", W, "driver", "a GPU counted uncorrectable ECC errors"),
    FindingKind("nvlink-down", "FWD119", E, "driver", "NVLink links of a GPU are down"),
    FindingKind("gpu-clocks-throttled", "FWD120", W, "driver", "a GPU's clocks are held down by a thermal or power slowdown"),
    FindingKind("gpu-persistence-off", "FWD121", I, "driver", "persistence mode is off for a GPU"),
    # Judged by `fwdoctor gate` only: against the node's expected shape (its policy or --baseline).
    FindingKind("gpu-count-low", "FWD122", E, "driver", "fewer working GPUs than the node type has"),
    FindingKind("node-differs-from-type", "FWD123", W, "driver", "a node's GPUs or links differ from its node type's normal"),
    # NVIDIA's data-center driver lifecycle (cuda.yaml driver_branches): rules/lifecycle.py.
    FindingKind("driver-branch-eol", "FWD124", W, "driver", "the driver's branch is past NVIDIA's end of life"),
    # A driver release with a known bug fixed in a later release (cuda.yaml driver_bugs; rules/releases.py):
    # an error where the report shows the bug's symptom, a warning on the release alone.
    FindingKind("driver-release-known-bug", "FWD125", E, "driver", "the NVIDIA driver release in use has a known bug, fixed in a later release"),
    # Containers and WSL, judged from a report's text (rules/report_text.py; no probe reads them yet).
    FindingKind("container-gpu-access-lost", "FWD141", E, "driver", "a running container lost access to its GPUs (NVML: Unknown Error)"),
    FindingKind("container-gpu-runtime-missing", "FWD142", E, "driver", "Docker cannot hand GPUs to containers (no working NVIDIA container runtime)"),
    FindingKind("wsl-libcuda-not-linked", "FWD143", W, "driver", "WSL2's libcuda files are copies, not links"),
    FindingKind("driver-too-old-for-image", "FWD144", E, "driver", "the host driver is older than a container image's CUDA requires"),
    # What hides the host's GPUs from one process (rules/visibility.py): a container started without them, CUDA_VISIBLE_DEVICES.
    FindingKind("container-started-without-gpus", "FWD145", E, "driver", "this container was started without the host's GPUs (no /dev/nvidia* device nodes)"),
    FindingKind("cuda-visible-devices-hides-gpus", "FWD146", E, "driver", "CUDA_VISIBLE_DEVICES leaves no GPU visible to CUDA"),
    # What an image or the NVIDIA container toolkit itself gets wrong (rules/driver.py, rules/report_text.py).
    FindingKind("container-image-ships-driver-libs", "FWD147", E, "driver", "a container image ships the NVIDIA driver's own libraries (libcuda, libnvidia-ml), which the runtime mounts from the host"),
    FindingKind("container-toolkit-known-bug", "FWD148", E, "driver", "the NVIDIA container toolkit in use cannot set this host's containers up (a release with a known bug or without support the host needs: cgroup v2, WSL2 drivers 555+; or rootless without no-cgroups)"),
    # A container given its GPUs without the compute driver capability (rules/visibility.py).
    FindingKind("container-driver-capabilities-lack-compute", "FWD149", E, "driver", "a container's NVIDIA driver capabilities leave out compute: nvidia-smi works, but no libcuda is mounted and CUDA finds no GPU"),
    # WSL and the Windows under it, judged from a report's text (rules/windows.py).
    FindingKind("wsl-gpu-unsupported", "FWD150", E, "driver", "this WSL has no GPU access (WSL 1, or a Windows build before Windows 10 21H2)"),
    FindingKind("wsl-linux-driver-installed", "FWD151", E, "driver", "a Linux NVIDIA driver is installed inside WSL, over the Windows driver's libraries"),
    # issue 26 (containers): what a report's text shows about the engine, SELinux and the host's UVM module (rules/report_text.py).
    FindingKind("cdi-spec-too-new-for-engine", "FWD152", E, "driver", "the container engine cannot read the CDI spec the NVIDIA Container Toolkit wrote (a newer CDI spec version than its parser knows)"),
    FindingKind("container-gpu-devices-denied", "FWD153", E, "driver", "a container may not open the NVIDIA device nodes it was given (NVML: Insufficient Permissions): SELinux, or a non-root user without their group"),
    FindingKind("nvidia-uvm-broken", "FWD154", E, "driver", "CUDA cannot initialise (CUDA unknown error) while the driver answers: nvidia_uvm is not loaded or broke in a suspend/resume"),
    FindingKind("toolkit-missing", "FWD201", I, "toolkit", "CUDA torch installed but no nvcc anywhere"),
    FindingKind("multiple-toolkits", "FWD202", I, "toolkit", "several CUDA toolkits installed"),
    FindingKind("cuda-path-inconsistent", "FWD203", W, "toolkit", "PATH, CUDA_HOME, the link and LD_LIBRARY_PATH disagree"),
    FindingKind("torch-toolkit-mismatch", "FWD204", E, "toolkit", "active toolkit's CUDA differs from torch's"),
    FindingKind("host-compiler-unsupported", "FWD205", E, "toolkit", "default gcc outside the range nvcc accepts"),
    FindingKind("toolkit-version-conflict", "FWD206", W, "toolkit", "a toolkit's version sources name different releases"),
    FindingKind("cuda-lib-not-found", "FWD207", E, "toolkit", "a CUDA/cuDNN library a program opens at run time is not found"),
    FindingKind("cuda-home-invalid", "FWD208", W, "toolkit", "CUDA_HOME/CUDA_PATH is a path list or a folder with no bin/nvcc"),
    FindingKind("cudnn-cuda-mismatch", "FWD301", E, "cudnn", "cuDNN built for another CUDA major"),
    FindingKind("cudnn-shadowed", "FWD302", E, "cudnn", "another libcudnn shadows torch's"),
    FindingKind("cudnn-header-library-mismatch", "FWD303", W, "cudnn", "cudnn_version.h and libcudnn disagree"),
    FindingKind("multiple-cudnn", "FWD304", I, "cudnn", "several cuDNN versions installed"),
    FindingKind("cudnn-gpu-unsupported", "FWD305", E, "cudnn", "cuDNN has no kernels for a GPU"),
    FindingKind("nccl-cuda-mismatch", "FWD401", E, "nccl", "NCCL built for another CUDA major"),
    FindingKind("nccl-shadowed", "FWD402", E, "nccl", "another libnccl shadows torch's"),
    FindingKind("nccl-header-library-mismatch", "FWD403", W, "nccl", "nccl.h and libnccl disagree"),
    FindingKind("multiple-nccl", "FWD404", I, "nccl", "several NCCL versions installed"),
    # An NCCL release with a known bug fixed in a later release (libs.yaml nccl_bugs with symptoms; rules/releases.py).
    FindingKind("nccl-release-known-bug", "FWD405", E, "nccl", "the NCCL release in use has a known bug, fixed in a later release"),
    FindingKind("python-env-mismatch", "FWD501", W, "python", "first python on PATH is not the active environment's"),
    FindingKind("user-site-shadowing", "FWD502", W, "python", "user site shadows the environment's packages"),
    FindingKind("conda-cpu-pytorch-on-gpu-host", "FWD520", E, "torch", "conda's pytorch is a CPU build on a GPU host"),
    FindingKind("conda-pip-torch-over-conda", "FWD521", E, "python", "pip installed a package over conda's copy in one env"),
    FindingKind("conda-libstdcxx-too-old", "FWD522", E, "python", "conda's libstdc++ is older than a pip wheel needs"),
    FindingKind("system-libstdcxx-too-old", "FWD541", E, "python", "the system libstdc++ a program loads is older than a library needs"),
    FindingKind("conda-user-site-leak", "FWD523", W, "python", "user-site packages leak into a conda env"),
    FindingKind("conda-cuda-libs-mismatch", "FWD524", E, "torch", "conda's cuDNN/NCCL/CUDA libraries do not match conda pytorch's CUDA"),
    FindingKind("conda-mkl-breaks-pytorch", "FWD542", E, "torch", "mkl >= 2024.1 under conda's pytorch (undefined iJIT_NotifyEvent)"),
    FindingKind("conda-cuda-pin-conflict", "FWD525", E, "python", "conda cannot solve: a build needs another CUDA (cudatoolkit, __cuda) than the env pins or the driver gives"),
    FindingKind("conda-cuda-build-without-cuda", "FWD526", E, "python", "a conda build labelled CUDA (cuda120py..., cuda12py...) has no working CUDA in it"),
    # What prebuilt binaries ask of the machine (rules/platform.py): the CPU's AVX, the glibc, the Python's architecture.
    FindingKind("cpu-lacks-avx", "FWD543", E, "python", "the CPU lacks AVX, which prebuilt TensorFlow/jaxlib/Paddle binaries use"),
    FindingKind("glibc-too-old", "FWD544", E, "python", "the system glibc is older than an installed wheel or binary needs"),
    FindingKind("python-arch-mismatch", "FWD545", W, "python", "an x86_64 Python runs under Rosetta on Apple silicon"),
    FindingKind("glibc-execstack-refused", "FWD546", E, "python", "glibc >= 2.41 refuses to load a library that asks for an executable stack"),
    FindingKind("windows-msvc-runtime-missing", "FWD547", E, "python", "a Microsoft Visual C++ runtime DLL that torch's or TensorFlow's DLLs need is missing on Windows"),
    FindingKind("windows-pagefile-too-small", "FWD548", E, "python", "Windows ran out of commit memory (the paging file is too small) loading torch's, TensorFlow's or CUDA's DLLs or mapping a model"),
    FindingKind("torch-cpu-build-on-gpu-host", "FWD601", W, "torch", "CPU-only torch on a GPU host"),
    FindingKind("torch-not-installed", "FWD602", I, "torch", "no torch in the inspected environment"),
    FindingKind("extension-built-for-other-torch", "FWD641", E, "torch", "a compiled extension was built against another torch"),
    FindingKind("driver-too-old-for-framework", "FWD901", E, "frameworks", "driver cannot run the CUDA a JAX/TensorFlow/Paddle build needs"),
    FindingKind("gpu-arch-unsupported-by-framework", "FWD902", E, "frameworks", "a framework's wheel has no kernels for a GPU"),
    FindingKind("framework-cpu-build-on-gpu-host", "FWD903", W, "frameworks", "CPU-only JAX/TensorFlow/Paddle on a GPU host"),
    FindingKind("framework-nvidia-wheel-mismatch", "FWD904", E, "frameworks", "an nvidia-* wheel a framework requires is missing or the wrong version"),
    FindingKind("frameworks-nvidia-conflict", "FWD905", E, "frameworks", "two frameworks need nvidia-* versions that cannot both hold"),
    FindingKind("ptxas-too-old-for-xla", "FWD906", E, "frameworks", "the ptxas XLA would use is missing or too old"),
    FindingKind("framework-packages-mismatched", "FWD907", E, "frameworks", "jax, jaxlib and the CUDA plugin are from different releases"),
    FindingKind("framework-gpu-unused", "FWD908", E, "frameworks", "a GPU build sees no GPU or fails its first GPU op (--deep)"),
    FindingKind("framework-libs-shadowed", "FWD909", E, "frameworks", "LD_LIBRARY_PATH loads a CUDA library (cuDNN, NCCL, nvJitLink ...) a framework's wheels do not accept"),
    FindingKind("framework-loaded-lib-mismatch", "FWD910", E, "frameworks", "a framework loaded an older or incompatible cuDNN/CUDA than it was built with"),
    FindingKind("ptxas-newer-than-driver", "FWD911", W, "frameworks", "the ptxas XLA runs is newer than the driver's CUDA"),
    FindingKind("xla-libdevice-missing", "FWD912", E, "frameworks", "XLA finds no libdevice (nvvm/libdevice/libdevice.10.bc) for a JAX/TensorFlow GPU build"),
    FindingKind("framework-requirement-conflict", "FWD913", W, "frameworks", "pip says a package is outside a JAX/TensorFlow/Paddle release's own requirement"),
    FindingKind("shm-too-small", "FWD701", W, "runtime", "/dev/shm too small for NCCL"),
    FindingKind("probe-failed", "FWD702", W, "runtime", "a probe could not finish"),
    # NCCL at run time (its transports), not its installed files: rules/fabric.py.
    FindingKind("nccl-transport-disabled", "FWD703", W, "runtime", "NCCL_IB/P2P/SHM_DISABLE set in the environment"),
    FindingKind("nccl-p2p-disabled-nvlink", "FWD704", W, "runtime", "NCCL peer-to-peer off between GPUs with NVLink"),
    FindingKind("nccl-socket-with-ib", "FWD705", W, "runtime", "NCCL used TCP sockets while InfiniBand/RoCE is up"),
    FindingKind("nccl-runtime-not-torch", "FWD706", W, "runtime", "the NCCL loaded at run time is not the one torch pins"),
    FindingKind("nccl-ib-connect-failed", "FWD708", E, "runtime", "NCCL could not connect InfiniBand/RoCE queue pairs between NICs"),
    FindingKind("nccl-gpu-unsupported", "FWD709", E, "runtime", "the NCCL loaded is too old for a GPU's architecture"),
    FindingKind("nccl-socket-interface-missing", "FWD710", E, "runtime", "NCCL finds no socket interface for its bootstrap (NCCL_SOCKET_IFNAME matches none)"),
    FindingKind("nccl-net-plugin-failed", "FWD711", E, "runtime", "NCCL could start no network plugin (the one NCCL_NET asks for, IB or Socket)"),
    FindingKind("nccl-nvls-failed", "FWD712", E, "runtime", "NCCL's NVLS (NVLink SHARP multicast) setup failed with a CUDA error"),
    FindingKind("nccl-socket-virtual-interfaces", "FWD713", W, "runtime", "NCCL's socket transport uses container bridge or veth interfaces beside the real one"),
    FindingKind("nccl-kernels-missing", "FWD714", E, "runtime", "the NCCL loaded was built without kernels for a GPU's architecture"),
    FindingKind("shm-not-writable", "FWD715", E, "runtime", "/dev/shm does not let every user create files (NCCL's SHM segments)"),
    FindingKind("rdma-memlock-too-low", "FWD716", E, "runtime", "the locked-memory limit (ulimit -l) is too low for RDMA (InfiniBand/RoCE/EFA) memory registration"),
    FindingKind("nccl-socket-connect-failed", "FWD717", E, "runtime", "NCCL could not open a TCP connection to another rank (firewall, unreachable interface, or the rank died)"),
    FindingKind("nccl-gdr-module-missing", "FWD718", W, "runtime", "GPUDirect RDMA is off: no NVIDIA peer-memory module (nvidia-peermem) is loaded beside InfiniBand/RoCE HCAs"),
    # How old the knowledge is (rules/knowledge.py): what the KB has no row for is not judged.
    FindingKind("newer-than-kb", "FWD707", I, "runtime", "a torch, CUDA minor or driver newer than the knowledge base"),
    # Source-build pre-flight only (`fwdoctor build torch`); never reported by `check`.
    FindingKind("build-input-missing", "FWD801", E, "build", "a tool or input the build needs is absent"),
    FindingKind("build-python-unusable", "FWD802", E, "build", "the target interpreter cannot host the build"),
    FindingKind("build-tool-installed", "FWD803", I, "build", "the plan installs a build tool into the target env"),
    FindingKind("build-disk-low", "FWD804", E, "build", "too little free disk for a PyTorch build"),
    FindingKind("build-ram-low", "FWD805", E, "build", "too little memory for even one compile job"),
    FindingKind("build-no-wheel", "FWD806", E, "build", "no pip wheel of the requested NCCL/cuDNN for this CUDA"),
    FindingKind("build-torch-unsupported", "FWD807", E, "build", "the KB has no build data for this torch version"),
    FindingKind("build-not-checked", "FWD808", W, "build", "a pre-flight check could not be made"),
    # Extension builds against the installed torch (`fwdoctor build ext`), never reported by `check`: rules/build_ext.py.
    FindingKind("ext-torch-unusable", "FWD821", E, "extension", "the target interpreter has no CUDA torch to compile against"),
    FindingKind("ext-cuda-mismatch", "FWD822", E, "extension", "the nvcc that would compile differs from torch's CUDA"),
    FindingKind("ext-arch-unsupported-by-project", "FWD823", E, "extension", "a requested arch is one the project does not build for"),
    FindingKind("ext-cuda-unsupported-by-project", "FWD824", E, "extension", "the project does not build with this nvcc release"),
    FindingKind("ext-project-unknown", "FWD825", W, "extension", "the KB has no row for this extension project"),
    FindingKind("ext-jobs-exceed-memory", "FWD826", E, "extension", "the asked compile jobs need more memory than is available"),
    FindingKind("ext-python-headers-missing", "FWD827", E, "extension", "no Python.h for the target interpreter"),
    FindingKind("ext-ninja-missing", "FWD828", W, "extension", "no ninja: torch compiles the extension one file at a time"),
    FindingKind("ext-disk-low", "FWD829", E, "extension", "too little free disk for the extension build"),
    FindingKind("ext-prebuilt-wheel", "FWD830", I, "extension", "the prebuilt wheel that would fit, or why none does"),
    FindingKind("ext-not-checked", "FWD831", W, "extension", "an extension pre-flight check could not be made"),
    # Across nodes (`fwdoctor fleet report`), never reported by `check`: doctor/fleet/rules.py.
    FindingKind("fleet-nccl-differs", "FWD960", E, "fleet", "nodes that train together run different NCCL versions"),
    FindingKind("fleet-torch-differs", "FWD961", E, "fleet", "nodes that train together run different torch versions"),
    FindingKind("fleet-driver-branch-differs", "FWD962", W, "fleet", "nodes run different NVIDIA driver branches"),
    FindingKind("fleet-cuda-differs", "FWD963", W, "fleet", "nodes differ in their driver's CUDA or their CUDA toolkit"),
    FindingKind("fleet-gpu-model-differs", "FWD964", W, "fleet", "nodes carry different GPU models"),
    FindingKind("fleet-gpu-count-differs", "FWD965", W, "fleet", "nodes see different numbers of GPUs"),
    FindingKind("fleet-smoke-slow", "FWD966", W, "fleet", "a node's smoke figures fall far below its peers'"),
)

BY_ID: dict[str, FindingKind] = {kind.id: kind for kind in FINDING_KINDS}


def kind(finding_id: str) -> FindingKind:
    try:
        return BY_ID[finding_id]
    except KeyError:
        raise KeyError(f"unknown finding id {finding_id!r}; see `fwdoctor list`") from None


def did_you_mean(finding_id: str) -> str:
    """"" or "; did you mean 'driver-too-old-for-torch'?": the known ids (and codes) closest
    to an unknown one, for the message that refuses it."""
    import difflib

    wanted = finding_id.strip()
    names = [*BY_ID, *(k.code for k in FINDING_KINDS)]
    close = difflib.get_close_matches(wanted, names, n=2, cutoff=0.75) or difflib.get_close_matches(wanted.upper(), names, n=2, cutoff=0.75)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
