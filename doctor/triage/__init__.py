"""Triage a bug report: find the environment fragments pasted into it, turn them into Facts.

    facts, fragments = triage(text)

Each parser (one module per fragment kind) reads the report's numbered lines and returns
`Fragment`s with the facts they establish, each fact's source naming its lines ("report
line 12-14: collect_env"). `triage` merges them: when two fragments state one key
differently, the more trusted kind wins (fwdoctor.triage.base.PRIORITY; then the earlier
line) and the disagreement is noted on the loser. Every key a rule reads that no fragment
establishes is UNKNOWN with why "the report does not show ...": triage never guesses, and
a rule that needs such a key says "not checked".

"CUDA version" means three things in reports, each kept apart: nvidia-smi's header is the
driver's (driver.cuda_version), nvcc's is a toolkit's (cuda.toolkits; cuda.active only
where the report shows CUDA_HOME's), collect_env's "CUDA used to build PyTorch" and
torch.version.cuda are torch's (torch.cuda). A bare "CUDA 12.1" in prose is none of them.
"""

from __future__ import annotations

from typing import Any, Callable

from fwdoctor.model import Fact, Facts
from fwdoctor.rules import RULES
from fwdoctor.triage import build_config, collect_env, conda_builds, conda_info, conda_specs, cpu, dpkg_rpm, driver_version, ds_report, envdump, errors, gcc, hf_env, issue_template, jax_env, lspci, nccl_debug, nvcc, nvidia_smi, p2p_prose, packages, paddle, repl, shm, tf_prose
from fwdoctor.triage import gpu_intent, gpu_prose, kernel_log, windows
from fwdoctor.triage import ulimit
from fwdoctor.triage import nccl_packages
from fwdoctor.triage import torch_device
from fwdoctor.triage import windows_cuda
from fwdoctor.triage import nvidia_topo
from fwdoctor.triage import ib_devices
from fwdoctor.triage import nccl_ib_fallback
from fwdoctor.triage import nccl_unreachable
from fwdoctor.triage import nccl_gdr
from fwdoctor.triage import paddle_packages
from fwdoctor.triage import torch_companions
from fwdoctor.triage import nccl_symbols
from fwdoctor.triage import cuda_libs_shadowed
from fwdoctor.triage import conda_env
from fwdoctor.triage import build_memory
from fwdoctor.triage import nccl_nodes
from fwdoctor.triage import framework_named
from fwdoctor.triage import nccl_cuda_prose
from fwdoctor.triage import cudnn_cuda
from fwdoctor.triage import windows_pip
from fwdoctor.triage import lib_missing_prose
from fwdoctor.triage import conda_no_cuda
from fwdoctor.triage import pip_over_conda
from fwdoctor.triage import cpu_host
from fwdoctor.triage import ext_wheels
from fwdoctor.triage.base import PRIORITY, Fragment
from fwdoctor.triage.text import Lines
from fwdoctor.versions import major_minor

__all__ = ["Fragment", "PARSERS", "UNSHOWN", "triage"]

PARSERS: tuple[Callable[[Lines], list[Fragment]], ...] = (
    collect_env.find, build_config.find, nvidia_smi.find, driver_version.find, nvcc.find, gcc.find, packages.find,
    dpkg_rpm.find, ds_report.find, hf_env.find, repl.find, errors.find,
    shm.find, lspci.find, issue_template.find, conda_builds.find, paddle.find, envdump.find, jax_env.find,  # issue 26
    nccl_debug.find, p2p_prose.find,
    nccl_packages.find,  # `apt list --installed` / `dpkg -l` rows of libnccl2: the CUDA each NCCL build is for
    tf_prose.find,
    cpu.find,  # lscpu / cpuinfo: the CPU's AVX
    conda_info.find,  # `conda info`: __cuda (the driver's CUDA), __glibc
    windows.find,  # Windows/WSL: `ver`, systeminfo, `uname -r`, `wsl -l -v`, a Linux driver inside WSL, pip's Windows torch wheel
    gpu_intent.find,  # "tensorflow-gpu", torch.cuda.is_available(): a GPU meant
    conda_specs.find,  # environment files and conda install commands; the CUDA libraries of a conda plan
    torch_device.find,  # print(torch.cuda.get_device_properties(0)): each GPU's name and compute capability, as torch saw it
    gpu_prose.find,  # the one NVIDIA GPU a report names in prose or a log line, where no tool lists it
    kernel_log.find,  # dmesg / journalctl -k / kern.log lines: NVIDIA Xid events, the legacy-branch notice
    ulimit.find,  # `ulimit -a` / `ulimit -l` / /proc/PID/limits: the locked-memory limit RDMA registration counts against
    windows_cuda.find,  # Windows toolkits: cmd's `set` / PowerShell's `ls env:` (CUDA_PATH, CUDA_PATH_VX_Y, Path), `where nvcc`
    nvidia_topo.find,  # `nvidia-smi topo -m`: which GPUs NVLink joins (NV#), judged beside a pasted NCCL_DEBUG=INFO log
    ib_devices.find,  # ibv_devinfo / ibstat / ibstatus: the RDMA ports and their states, beside NCCL's "Using network Socket"
    nccl_ib_fallback.find,  # NCCL_DEBUG=INFO: an IPoIB interface (ib0, ibp12s0) beside NCCL saying it could not use IB
    nccl_unreachable.find,  # NCCL_DEBUG=INFO "Bootstrap : Using eth0:172.17.0.2<0>": the address a rank advertised to the others
    nccl_gdr.find,  # NCCL_DEBUG=INFO "GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0'": GDR without a peer-memory module
    paddle_packages.find,  # paddlepaddle-gpu in pip list / install commands (its .post112 or cu126 index: the CUDA), Paddle's summary_env.py
    torch_companions.find,  # torchvision/torchaudio beside torch in pip list, freeze, `pip show`, pip's "Successfully installed"
    nccl_symbols.find,  # nvidia-nccl-cuNN wheels in pip list / freeze / collect_env: their CUDA majors, beside "undefined symbol: ncclXxx"
    cuda_libs_shadowed.find,  # LD_LIBRARY_PATH values, ldd lines, nvidia-nvjitlink/cusparse/cublas wheels, beside "undefined symbol: X, version libY.so.N"
    conda_env.find,  # `conda activate X`, conda info's "active env location", conda list's "packages in environment at": the envs in use
    build_memory.find,  # top / free / /proc/meminfo during an extension build, and the build's MAX_JOBS and commands (issue 26, build-ext)
    nccl_nodes.find,  # NCCL_DEBUG=INFO logs of several hosts: the "NCCL version 2.x.y" each host loaded
    framework_named.find,  # "pytorch", "tensorflow-gpu", TensorFlow's log paths: which frameworks the report names (not which release)
    nccl_cuda_prose.find,  # "found cu11 and cu12 packages", "my nccl depends on CUDA 11.0 ... my system (10.2)": NCCL's CUDA in words
    cudnn_cuda.find,  # cuDNN archives/packages named with their CUDA, cuDNN copied out of a CUDA folder; the CUDA a program runs
    windows_pip.find,  # pip asked for jax[cuda*] on native Windows (a C:\ prompt, win_amd64 wheels): JAX has no GPU build there
    lib_missing_prose.find,  # "it still says there is no cudnn": the report's own words, no loader message quoted
    conda_no_cuda.find,  # conda/micromamba info's virtual packages without __cuda, beside the solver refusing a CUDA package
    pip_over_conda.find,  # pip's log uninstalling the torch release a conda list row / conda spec of pytorch shows: pip replaced conda's torch
    cpu_host.find,  # "CPU cluster", "CPU-only nodes", "cpu集群": the report's host has no GPU (a driver-insufficient error there is no driver)
    ext_wheels.find,  # prebuilt extension wheels (flash-attn's +cu118torch2.2cxx11abiFALSE, PyG's +pt21cu121, find-links pages): the torch each was built for
)

# What would establish each key a rule reads: the "not checked" reason names the command.
UNSHOWN = {
    "driver.version": "the driver version (`nvidia-smi`, or `cat /proc/driver/nvidia/version`)",
    "driver.loaded": "whether the NVIDIA kernel module is loaded (`nvidia-smi`, `cat /proc/driver/nvidia/version`)",
    "driver.cuda_version": "the CUDA version the driver supports (the `nvidia-smi` header)",
    "driver.windows": "whether the driver is a Windows driver (Windows' `nvidia-smi`: its TCC/WDDM column)",
    "driver.userspace_libs": "the user-space driver libraries' version (`dpkg -l | grep libnvidia-compute`, or `ls -l /usr/lib/x86_64-linux-gnu/libcuda.so.*`)",
    "driver.nvml_error": "whether NVML initialises (`nvidia-smi`)",
    "driver.module_flavor": "the kernel module flavour (`cat /proc/driver/nvidia/version`)",
    "driver.nouveau_loaded": "whether nouveau is loaded (`lsmod | grep nouveau`)",
    "pci.nvidia_gpus": "the GPUs on the PCI bus (`lspci -nn | grep -i nvidia`)",
    "gpus.list": "which GPUs there are (`nvidia-smi`, or collect_env's GPU models)",
    "cuda.toolkits": "which CUDA toolkits are installed (`nvcc -V`, `ls -d /usr/local/cuda*`)",
    "cuda.active": "the toolkit torch builds extensions with (`echo $CUDA_HOME; $CUDA_HOME/bin/nvcc -V`; an nvcc on PATH alone does not say it)",
    "cuda.pointers": "where PATH, CUDA_HOME and /usr/local/cuda point",
    "compilers.gcc_default": "the default gcc (`gcc --version`)",
    "compilers.nvcc_host": "the host compiler nvcc runs (its -ccbin, NVCC_CCBIN, nvcc.profile; `gcc --version` alone does not say it)",
    "torch.installed": "whether torch is installed (`python -m torch.utils.collect_env`)",
    "torch.version": "torch's version (`python -m torch.utils.collect_env`)",
    "torch.cuda": "the CUDA torch was built for (collect_env's 'CUDA used to build PyTorch', or torch.version.cuda)",
    "torch.arch_list": "torch's GPU architectures (`python -c 'import torch; print(torch.cuda.get_arch_list())'`)",
    "python.version": "the Python version",
    "python.executable": "which Python ran (`which python`)",
    "cudnn.installs": "which cuDNN libraries are installed (`pip list | grep cudnn`, `ldconfig -p | grep cudnn`)",
    "nccl.installs": "which NCCL libraries are installed (`pip list | grep nccl`, `ldconfig -p | grep nccl`)",
    "nccl.packages": "which NCCL packages are installed and for which CUDA (`apt list --installed | grep nccl`, `dpkg -l | grep libnccl`)",
    "system.shm_bytes": "the size of /dev/shm (`df -h /dev/shm`)",
    "system.memlock": "the locked-memory limit of the job (`ulimit -l` where it runs, e.g. `srun bash -c 'ulimit -l'`)",
    "fabric.ib_devices": "the RDMA devices (`ibv_devinfo`, `ls /sys/class/infiniband`)",
    "nccl.env": "the NCCL_* variables of the run (`env | grep ^NCCL_`, or NCCL_DEBUG=INFO's \"set by environment to\" lines)",
    "net.interfaces": "the host's network interfaces (`ip -brief address`, `ls /sys/class/net`)",
    "topology.nvlink": "which GPUs NVLink joins (`nvidia-smi topo -m`)",
    "torch.companions": "torchvision and torchaudio beside torch (`pip list | grep torch`)",
    "nccl.wheels": "NVIDIA's NCCL wheels and their CUDA majors (`pip list | grep nvidia-nccl`)",
    "nccl.cuda_majors_said": "the CUDA majors of the NVIDIA wheels installed (`pip list | grep -E 'nvidia-.*-cu[0-9]+'`)",
    "nccl.cuda_said": "the CUDA the installed NCCL is built for (`apt list --installed | grep nccl`, `pip list | grep nccl`)",
    "nccl.node_versions": "the NCCL release each node loaded (NCCL_DEBUG=INFO's \"NCCL version\" line from every node)",
    "torch.requires": "the NCCL wheel torch pins (`pip show torch`'s Requires, or `pip list | grep nvidia-nccl`)",
    "pci.acs": "the ACS control bits of the PCIe bridges above the GPUs (`sudo lspci -vvv`, its ACSCtl lines)",
    "platform.cpu": "the CPU's flags (`lscpu`, or `grep -m1 -E '^(model name|flags)' /proc/cpuinfo`)",
    "platform.wheel_glibc": "the manylinux tags of the installed wheels (`grep ^Tag: $SITE/*.dist-info/WHEEL`)",
    "frameworks.installed": "which JAX/TensorFlow build is installed (`conda list`: its build strings say cpu or cuda)",
    "conda.torch_build": "which pytorch build conda installed (`conda list pytorch`: its build string says cpu or cuda)",
    "gpus.xid_events": "the kernel log's NVIDIA lines (`sudo dmesg -T | grep NVRM`)",
    "driver.legacy_notices": "the kernel log's NVIDIA lines (`sudo dmesg -T | grep NVRM`)",
    "report.tf_version": "the TensorFlow version (the issue form's \"TensorFlow version\", or `python -c 'import tensorflow as tf; print(tf.__version__)'`)",
    "report.cuda_stated": "the installed CUDA (the issue form's \"CUDA/cuDNN version\", or `nvcc -V`)",
    "report.tf_installed_from": "how TensorFlow was installed (the issue form's \"TensorFlow installed from\": pip's binary, source, conda)",
    "conda.envs": "which conda env ran (`conda info`'s active env location, or `echo $CONDA_PREFIX`)",
    "conda.no_cuda_virtual": "the virtual packages conda's solver saw (`conda info`, or `micromamba info`: is __cuda listed?)",
    "system.memory": "the memory during the build (`free -g` while it runs, or top's MiB Mem/MiB Swap lines)",
    "report.ext_build": "the build command and its MAX_JOBS",
    "report.ext_wheels": "the prebuilt extension wheels installed (`pip list | grep -iE 'flash|mamba|causal|scatter|sparse|detectron'`)",
    "report.torch_stated": "torch's version (`python -m torch.utils.collect_env`)",
    "torch.cxx11_abi": "torch's C++ ABI flag (`python -c \"import torch; print(torch._C._GLIBCXX_USE_CXX11_ABI)\"`)",
    "report.errors": "",
}


def triage(text: str) -> tuple[Facts, list[Fragment]]:
    """The facts a report's text establishes, and the fragments they came from. Never raises."""
    lines = Lines.of(text or "")
    fragments: list[Fragment] = []
    for parse in PARSERS:
        try:
            fragments.extend(parse(lines))
        except Exception as exc:  # a parser bug must not cost the rest of the report
            fragments.append(Fragment("parser-error", 1, 1, notes=[f"{parse.__module__}: {type(exc).__name__}: {exc}"]))
    fragments.sort(key=lambda f: (f.start, f.end))
    return _merge(fragments), fragments


def _merge(fragments: list[Fragment]) -> Facts:
    chosen: dict[str, tuple[int, int, Fact, Fragment]] = {}
    error_entries: list[dict[str, Any]] = []
    error_sources: list[str] = []
    toolkits: list[tuple[Fact, dict[str, Any]]] = []
    for frag in fragments:
        rank = PRIORITY.get(frag.kind, 50)
        for fact in frag.facts:
            if fact.key == "report.errors":
                error_entries.extend(fact.value)
                error_sources.append(fact.source.split(":")[0])
                continue
            if fact.key == "cuda.toolkits":  # every toolkit the report shows, once per version+root
                for tk in fact.value:
                    toolkits.append((fact, tk))
                continue
            held = chosen.get(fact.key)
            if held is None or _better(fact, rank, held[2], held[0]):
                if held is not None and held[2].value != fact.value:
                    held[3].notes.append(f"{fact.key} = {_brief(held[2].value)} here, but {fact.source} says {_brief(fact.value)} (used)")
                chosen[fact.key] = (rank, frag.start, fact, frag)
            elif held[2].value != fact.value:
                frag.notes.append(f"{fact.key} = {_brief(fact.value)} here, but {held[2].source} says {_brief(held[2].value)} (used)")
    facts = [held[2] for held in chosen.values()]
    if toolkits:
        seen: dict[tuple[str, str], dict[str, Any]] = {}
        sources: list[str] = []
        for fact, tk in toolkits:
            key = (str(tk.get("version")), str(tk.get("root")))
            if key not in seen:
                seen[key] = tk
                sources.append(fact.source)
        # An nvcc shown without its folder (`nvcc -V`, collect_env) is the Windows toolkit of its
        # release that the report places (windows_cuda: CUDA_PATH_V11_8, `where nvcc`), not another.
        def release(tk: dict[str, Any]) -> str | None:
            return major_minor(tk.get("version"))

        placed = {release(tk) for tk in seen.values() if str(tk.get("root"))[1:3] in (":\\", ":/")}
        for key, tk in list(seen.items()):
            if str(tk.get("root")).startswith("(") and release(tk) in placed:
                del seen[key]
        facts.append(Fact("cuda.toolkits", list(seen.values()), source="; ".join(dict.fromkeys(sources))))
    facts.append(Fact("report.errors", error_entries, source="; ".join(error_sources) or "the whole report"))
    known = {f.key for f in facts}
    # torch.installed follows from a torch version; driver.loaded from a driver version.
    for key, because in (("torch.installed", "torch.version"), ("driver.loaded", "driver.version")):
        if key not in known and because in known:
            facts.append(Fact(key, True, source=next(f.source for f in facts if f.key == because)))
            known.add(key)
    for key in _keys_rules_read():
        if key not in known:
            what = UNSHOWN.get(key) or key
            facts.append(Fact.unknown(key, f"the report does not show {what}"))
    return Facts(facts)


def _better(new: Fact, new_rank: int, old: Fact, old_rank: int) -> bool:
    """Whether `new` replaces `old` for one key: the more trusted kind, except that a pasted
    GPU table is often cut short, so the longer GPU list wins first."""
    if new.key == "gpus.list" and isinstance(new.value, list) and isinstance(old.value, list) and len(new.value) != len(old.value):
        return len(new.value) > len(old.value)
    return new_rank > old_rank


def _brief(value: Any) -> str:
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return repr([v.get("name") or v.get("version") for v in value])
    return repr(value)


def _keys_rules_read() -> list[str]:
    keys: dict[str, None] = {}
    for item in RULES:
        for key in (*item.needs, *item.optional):
            keys.setdefault(key, None)
    return list(keys)
