"""Findings a report's own error text establishes when the facts the regular rule needs
are not in it.

A pasted "Failed to initialize NVML: Driver/library version mismatch" *is* NVML saying
the kernel module and its libraries differ, even when the report shows neither version;
torch's "found version 11040" is torch saying the driver is too old for it. Each rule
here has the id of the regular rule with the same meaning and runs only where that rule
could not (it said "not checked"), so a report never gets one finding twice. They read
`report.errors` (fwdoctor.triage.errors) and quote the line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from fwdoctor import arch
from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, Rule, rule, sh
from fwdoctor.versions import major

if TYPE_CHECKING:
    from fwdoctor.kb import KB


def _errors(facts: Facts, kind: str) -> list[dict[str, Any]]:
    return [e for e in facts.get("report.errors") or [] if e.get("kind") == kind]


def _line(error: dict[str, Any]) -> str:
    return f"report line {error['line']}: \"{error['text']}\""


@rule("driver-library-mismatch", needs=("report.errors",))
def nvml_mismatch(facts: Facts, kb: KB) -> Hit | None:
    """NVML's or the kernel's own mismatch message (see driver-library-mismatch)."""
    said = _errors(facts, "nvml-mismatch") + _errors(facts, "nvrm-api-mismatch")
    if not said:
        return None
    return Hit(
        f"the kernel module and the user-space driver libraries differ: {_line(said[0])}",
        evidence={"report.errors": said},
        fix=FixRef(
            commands=("sudo reboot", "sudo systemctl stop nvidia-persistenced; sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; sudo modprobe nvidia"),
            note="Usually a driver upgrade without a reboot: rebooting loads the module that matches the libraries.",
        ),
    )


@rule("driver-too-old-for-torch", needs=("report.errors",), optional=("driver.cuda_version", "torch.cuda", "torch.version"))
def driver_cuda_too_old(facts: Facts, kb: KB) -> Hit | None:
    """torch's "driver on your system is too old (found version N)", or a driver whose
    CUDA (nvidia-smi's header) is of an older major than torch's CUDA: minor-version
    compatibility never crosses a major (see driver-too-old-for-torch)."""
    torch_cuda = facts.get("torch.cuda")
    driver_cuda = facts.get("driver.cuda_version")
    said = _errors(facts, "driver-too-old")
    version = facts.get("torch.version")
    who = f"torch {version}" if version else "torch"
    if said:
        message = f"{who} reports the driver is too old for it: {_line(said[0])} (the driver supports CUDA {said[0]['driver_cuda']})"
    elif torch_cuda and driver_cuda and (major(driver_cuda) or 0) < (major(torch_cuda) or 0):
        message = f"{who} is built for CUDA {torch_cuda}; the driver supports only up to CUDA {driver_cuda} ({facts.source('driver.cuda_version')}), an older major"
    else:
        return None
    newest = driver_cuda or (said[0]["driver_cuda"] if said else None)
    note = f"upgrade the NVIDIA driver, or install a torch wheel built for CUDA <= {newest} (download.pytorch.org/whl/cuXY)"
    return Hit(message, evidence={"driver.cuda_version": driver_cuda, "torch.cuda": torch_cuda, "report.errors": said}, fix=FixRef(recipe="torch-wheel", note=note))


@rule("gpu-arch-unsupported-by-torch", needs=("report.errors",), optional=("torch.version",))
def sm_incompatible(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """torch's "... with CUDA capability sm_120 is not compatible with the current PyTorch
    installation" warning (see gpu-arch-unsupported-by-torch)."""
    hits = []
    for error in _errors(facts, "sm-incompatible"):
        supports = " ".join(error.get("supports") or []) or "(not shown)"
        cc = error["cc"]
        version = facts.get("torch.version")
        torch = f"torch {version}" if version else "this torch"
        hits.append(Hit(
            f"GPU {error.get('gpu') or '?'} (compute capability {cc}, {arch.sm_name(cc)}) has no kernel in {torch}, built for {supports}: {_line(error)}",
            evidence={"report.errors": [error]},
            fix=FixRef(recipe="torch-wheel", note=f"install a torch wheel whose arch list includes {arch.sm_name(cc)} (`fwdoctor select torch` on that host names one)"),
        ))
    return hits or None


@rule("host-compiler-unsupported", needs=("report.errors",), optional=("compilers.gcc_default",))
def unsupported_gnu(facts: Facts, kb: KB) -> Hit | None:
    """nvcc's own "unsupported GNU version!" error (see host-compiler-unsupported)."""
    said = _errors(facts, "unsupported-gnu")
    if not said:
        return None
    limit = said[0]["gcc_max"]
    gcc = facts.get("compilers.gcc_default")
    have = f"gcc {gcc['version']}" if isinstance(gcc, dict) and gcc.get("version") else "the gcc nvcc ran"
    return Hit(
        f"{have} is newer than this nvcc accepts (gcc <= {limit}): {_line(said[0])}",
        evidence={"report.errors": said, "compilers.gcc_default": gcc, "host_gcc_max": limit},
        fix=FixRef(recipe="env", commands=(f"sudo apt-get install {sh(f'gcc-{limit}')} {sh(f'g++-{limit}')}",
                                            f"export CC={sh(f'/usr/bin/gcc-{limit}')} CXX={sh(f'/usr/bin/g++-{limit}')} CUDAHOSTCXX={sh(f'/usr/bin/g++-{limit}')}"),
                   note="or install a newer CUDA toolkit (recipe cuda-toolkit)"),
    )


@rule("gpu-arch-unsupported-by-toolkit", needs=("report.errors",))
def unsupported_arch(facts: Facts, kb: KB) -> Hit | None:
    """nvcc's own "Unsupported gpu architecture 'compute_89'" (see gpu-arch-unsupported-by-toolkit)."""
    said = _errors(facts, "unsupported-gpu-arch")
    if not said:
        return None
    target = said[0]["arch"]
    return Hit(
        f"the nvcc that ran cannot compile for {target}: {_line(said[0])}",
        evidence={"report.errors": said},
        fix=FixRef(recipe="cuda-toolkit", note=f"use a CUDA toolkit that supports {target} (set CUDA_HOME to it), or drop {target} from TORCH_CUDA_ARCH_LIST"),
    )


@rule("cudnn-shadowed", needs=("report.errors",))
def cudnn_undefined_symbol(facts: Facts, kb: KB) -> Hit | None:
    """The loader's "libcudnn...: undefined symbol" (see cudnn-shadowed): one cuDNN
    library resolved against another cuDNN's, i.e. two cuDNN versions in one process."""
    said = _errors(facts, "cudnn-undefined-symbol")
    if not said:
        return None
    return Hit(
        f"{said[0]['library']} was loaded with parts of another cuDNN: {_line(said[0])}",
        evidence={"report.errors": said},
        fix=FixRef(commands=("echo $LD_LIBRARY_PATH   # remove the folder that holds another libcudnn*",),
                   note="Let torch load its own cuDNN (the nvidia-cudnn wheel it pins): take system cuDNN folders out of LD_LIBRARY_PATH/LD_PRELOAD"),
    )


@rule("framework-cpu-build-on-gpu-host", needs=("frameworks.installed",), optional=("report.gpu_expected", "gpus.list", "driver.loaded"))
def framework_cpu_build_gpu_expected(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """A CPU-only JAX/TensorFlow the report shows (a conda "cpu_" build, TensorFlow >= 2.11 on
    native Windows) where the report also shows that a GPU is meant to be used: a GPU or a
    driver, a CUDA version or GPU model in the issue template, "GPU" as the accelerator
    (see framework-cpu-build-on-gpu-host; that rule needs the driver's state, which a report
    seldom shows)."""
    cpu = [i for i in facts["frameworks.installed"] or [] if isinstance(i, dict) and i.get("gpu_build") is False]
    expected = facts.get("report.gpu_expected")
    gpus = facts.get("gpus.list")
    if gpus:
        expected = f"GPU {gpus[0].get('name') or '?'} ({facts.source('gpus.list')})"
    elif facts.get("driver.loaded"):
        expected = f"an NVIDIA driver ({facts.source('driver.loaded')})"
    elif expected:
        expected = f"{expected} ({facts.source('report.gpu_expected')})"
    if not cpu or not expected:
        return None
    from fwdoctor.kb.frameworks import TITLES

    hits = []
    for item in cpu:
        title = TITLES.get(item["framework"], item["framework"])
        version = item.get("version") or "?"
        if item.get("native_windows"):
            from fwdoctor.rules.frameworks import windows_tensorflow_fix

            fix = windows_tensorflow_fix()
        elif item["framework"] == "jax":
            fix = FixRef(commands=("conda install -c conda-forge 'jaxlib=*=*cuda*' jax",),
                         note="conda picks the CPU jaxlib where its solver sees no GPU; ask for the CUDA build explicitly")
        else:
            fix = FixRef(commands=("conda install -c conda-forge 'tensorflow=*=*cuda*'",), note="ask conda for the CUDA build explicitly")
        hits.append(Hit(
            f"{title} {version} is a CPU-only build ({item.get('why') or 'no GPU support'}), but the report expects a GPU: {expected}",
            evidence={"framework": item["framework"], "version": item.get("version"), "packages": item.get("packages"), "expected": expected},
            fix=fix,
        ))
    return hits


@rule("gpu-arch-unsupported-by-framework", needs=("frameworks.installed", "gpus.list", "report.errors"))
def framework_no_kernel_for_cc(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """The CUDA runtime's "no kernel image is available for execution on the device" where
    the report shows a framework's GPU build for a CUDA whose nvcc cannot compile for the
    GPU's compute capability (Paddle's banner: "GPU Compute Capability: 8.6 ... Runtime API
    Version: 10.2"; sm_86 needs CUDA 11.1): that build has no kernel for the GPU (see
    gpu-arch-unsupported-by-framework, which needs the build's target list)."""
    said = _errors(facts, "no-kernel-image")
    builds = [i for i in facts["frameworks.installed"] or [] if isinstance(i, dict) and i.get("gpu_build") and i.get("cuda") and not i.get("arch_list")]
    if not said or not builds:
        return None
    from fwdoctor.kb.frameworks import TITLES

    hits = []
    for item in builds:
        for gpu in facts["gpus.list"] or []:
            cc = kb.gpus.cc_for_gpu(gpu)
            if not cc or kb.cuda.nvcc_supports(str(item["cuda"]), cc) is not False:
                continue
            title = TITLES.get(item["framework"], item["framework"])
            name = gpu.get("name") or f"GPU {gpu.get('index', 0)}"
            hits.append(Hit(
                f"{name} (compute capability {cc}, {arch.sm_name(cc)}) has no kernel in this {title} build for CUDA {item['cuda']}: "
                f"CUDA {item['cuda']} cannot compile for {arch.sm_name(cc)} ({facts.source('frameworks.installed')}); {_line(said[0])}",
                evidence={"framework": item["framework"], "cuda": item["cuda"], "gpu": gpu, "report.errors": said},
                fix=FixRef(note=f"install the {title} build for a CUDA that supports compute capability {cc} (its install page lists one per CUDA)"),
            ))
            break
    return hits or None


# Folders a conda installation lives in; a libstdc++ under one of them (or under an env's
# envs/NAME/lib) is conda's own, the one conda's python loads first (its RPATH $ORIGIN/../lib).
_CONDA_DIRS = frozenset({"anaconda", "anaconda3", "miniconda", "miniconda3", "miniforge", "miniforge3", "mambaforge",
                         "micromamba", ".conda", "conda", "envs"})


def conda_libstdcxx(path: str) -> bool:
    """Whether the loader's `path` is a libstdc++ inside a conda installation or env."""
    parts = [p for p in path.replace("\\", "/").split("/") if p and p not in (".", "..")]
    return bool(parts) and parts[-1].startswith("libstdc++.so") and any(p.lower() in _CONDA_DIRS for p in parts[:-1])


@rule("conda-libstdcxx-too-old", needs=("report.errors",))
def conda_libstdcxx_not_found(facts: Facts, kb: KB) -> Hit | None:
    """The loader's "libstdc++.so.6: version `GLIBCXX_3.4.30' not found" where the libstdc++
    it names is a conda env's (".../envs/NAME/lib/libstdc++.so.6", ".../miniconda3/lib/..."):
    conda's libstdc++ is older than an extension built with a newer GCC needs (see
    conda-libstdcxx-too-old; Open3D's maintainers on isl-org/Open3D#5531: "the libstdc++.so
    that comes with Conda may be older than the system's libstdc++"). A system libstdc++
    (/lib64/...) that is too old for a conda package is the other way round: not this."""
    said = [e for e in _errors(facts, "libstdcxx-version-not-found") if conda_libstdcxx(str(e.get("library") or ""))]
    if not said:
        return None
    error = said[0]
    return Hit(
        f"conda's libstdc++ ({error['library']}) is older than {error.get('required_by') or 'a library'} needs ({error['needed']}): {_line(error)}",
        evidence={"report.errors": said},
        fix=FixRef(commands=("conda install -c conda-forge 'libstdcxx-ng>=12' 'libgcc-ng>=12'   # in that env; conda-forge's newer env names them libstdcxx, libgcc",),
                   note="or rebuild the extension with conda's own compilers (conda install gxx); copying the system's libstdc++ into the env is a workaround"),
    )


_POINTERS = {"path_nvcc": "PATH's first CUDA bin", "cuda_home": "CUDA_HOME", "cuda_path": "CUDA_PATH", "ld_cudart": "LD_LIBRARY_PATH's first CUDA lib"}


@rule("cuda-path-inconsistent", needs=("cuda.pointers",))
def cuda_pointers_disagree(facts: Facts, kb: KB) -> Hit | None:
    """Environment variables pasted into the report (`env`, `export` lines) that point at
    different versioned toolkit roots ("/usr/local/cuda-10.1" on PATH, "/usr/lcoal/cuda-10.1"
    on LD_LIBRARY_PATH) (see cuda-path-inconsistent, which also needs the installed toolkits).
    An unversioned /usr/local/cuda is left out: it is a link whose target the text does not show."""
    import re

    pointers = facts["cuda.pointers"] or {}
    named = {label: str(pointers[key]) for key, label in _POINTERS.items()
             if pointers.get(key) and re.fullmatch(r"cuda-\d{1,2}\.\d{1,2}", str(pointers[key]).rstrip("/").rsplit("/", 1)[-1])}
    if len(set(named.values())) < 2:
        return None
    detail = ", ".join(f"{label} -> {root}" for label, root in named.items())
    return Hit(
        f"CUDA pointers in the report disagree: {detail} ({facts.source('cuda.pointers')})",
        evidence={"cuda.pointers": dict(pointers)},
        fix=FixRef(recipe="env", note="point PATH, CUDA_HOME and LD_LIBRARY_PATH at one installed toolkit (`ls -d /usr/local/cuda*` lists them)"),
    )


@rule("driver-too-old-for-framework", needs=("report.errors", "report.framework"))
def framework_driver_insufficient(facts: Facts, kb: KB) -> Hit | None:
    """The CUDA runtime's "CUDA driver version is insufficient for CUDA runtime version" in a
    report filed with TensorFlow's or JAX's issue form: the driver is older than the CUDA
    that framework's build loads (see driver-too-old-for-framework, which needs the
    driver's version and the build's CUDA; the text names neither)."""
    said = _errors(facts, "driver-insufficient")
    framework = facts.get("report.framework")
    if not said or framework not in ("tensorflow", "jax", "paddle"):
        return None
    from fwdoctor.kb.frameworks import TITLES

    title = TITLES.get(framework, framework)
    return Hit(
        f"the NVIDIA driver is older than the CUDA runtime this {title} build loads: {_line(said[0])} ({title}'s issue form, {facts.source('report.framework')})",
        evidence={"report.errors": said, "report.framework": framework},
        fix=FixRef(commands=("nvidia-smi   # the driver's CUDA, top right",),
                   note=f"upgrade the NVIDIA driver to one that runs the CUDA of this {title} build (its tested-build table), or install a {title} built for the driver's CUDA"),
    )


# The signature kinds the rules above read; every other row of doctor/kb/errors.yaml that
# names findings is raised by a generic rule per finding id (_from_rows), so a new row needs
# no code here.
_HANDLED = frozenset({"nvml-mismatch", "nvrm-api-mismatch", "driver-too-old", "cuda-version-mismatch", "sm-incompatible", "unsupported-gnu",
                      "unsupported-gpu-arch", "cudnn-undefined-symbol"})


def _from_rows() -> tuple[Rule, ...]:
    from fwdoctor.triage.errors import signatures

    from fwdoctor.rules.report_text import REPORT_RULES

    # fwdoctor.rules.report_text reads its rows itself (a libstdc++ row names two findings by path)
    own = {r.id for r in REPORT_RULES}
    kinds: dict[str, list[str]] = {}
    for sig in signatures().signatures:
        if sig.id in _HANDLED:
            continue
        for finding_id in (f for f in sig.findings if f not in own):
            kinds.setdefault(finding_id, []).append(sig.id)
    return tuple(_generic(finding_id, tuple(ids)) for finding_id, ids in kinds.items())


def _generic(finding_id: str, kinds: tuple[str, ...]) -> Rule:
    def said_by_the_report(facts: Facts, kb: KB) -> Hit | None:
        said = [e for kind in kinds for e in _errors(facts, kind)]
        if not said:
            return None
        from fwdoctor.triage.errors import signatures

        sig = signatures().by_id(said[0]["kind"])
        program = sig.program if sig else "a program"
        return Hit(f"{program} says so in the report: {_line(said[0])}", evidence={"report.errors": said})

    said_by_the_report.__doc__ = f"The report's own error text ({', '.join(kinds)}; doctor/kb/errors.yaml) (see {finding_id})."
    return rule(finding_id, needs=("report.errors",))(said_by_the_report)


RULES: tuple[Rule, ...] = (nvml_mismatch, driver_cuda_too_old, sm_incompatible, unsupported_gnu, unsupported_arch, cudnn_undefined_symbol,
                           framework_cpu_build_gpu_expected, framework_no_kernel_for_cc,
                           conda_libstdcxx_not_found, cuda_pointers_disagree, framework_driver_insufficient, *_from_rows())
