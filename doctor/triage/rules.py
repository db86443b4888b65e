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

import re
from typing import TYPE_CHECKING, Any, Iterable

from fwdoctor import arch
from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.quoting import QuotingError, cmd_word
from fwdoctor.rules import driver as driver_rules
from fwdoctor.rules import hardware
from fwdoctor.rules import platform
from fwdoctor.rules import windows as windows_rules
from fwdoctor.rules import visibility
from fwdoctor.rules.toolkit import path_list
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule, sh
from fwdoctor.triage.conda_env import conda_libstdcxx
from fwdoctor.triage import nccl_fabric
from fwdoctor.triage import rdma
from fwdoctor.triage import ray_shm
from fwdoctor.triage import container_shm
from fwdoctor.triage import nccl_unreachable
from fwdoctor.triage import nccl_gdr
from fwdoctor.triage import torch_companions
from fwdoctor.triage import nccl_symbols
from fwdoctor.triage import cuda_libs_shadowed
from fwdoctor.triage import arch_floors
from fwdoctor.triage import ext_build
from fwdoctor.triage import build_memory
from fwdoctor.triage import nccl_nodes
from fwdoctor.triage import nccl_cuda_prose
from fwdoctor.triage import conda_cpu_solved
from fwdoctor.triage import conda_no_cuda
from fwdoctor.triage import cudnn_cuda
from fwdoctor.triage import lib_missing_prose
from fwdoctor.triage import pip_conflicts
from fwdoctor.triage import ext_wheels
from fwdoctor.versions import major

if TYPE_CHECKING:
    from fwdoctor.kb import KB


@rule("driver-library-mismatch", needs=("report.errors",))
def nvml_mismatch(facts: Facts, kb: KB) -> Hit | None:
    """NVML's or the kernel's own mismatch message (see driver-library-mismatch)."""
    said = report_errors(facts, "nvml-mismatch") + report_errors(facts, "nvrm-api-mismatch")
    if not said:
        return None
    return Hit(
        f"the kernel module and the user-space driver libraries differ: {report_line(said[0])}",
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
    said = report_errors(facts, "driver-too-old")
    version = facts.get("torch.version")
    who = f"torch {version}" if version else "torch"
    if said:
        message = f"{who} reports the driver is too old for it: {report_line(said[0])} (the driver supports CUDA {said[0]['driver_cuda']})"
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
    for error in report_errors(facts, "sm-incompatible"):
        supports = " ".join(error.get("supports") or []) or "(not shown)"
        cc = error["cc"]
        version = facts.get("torch.version")
        torch = f"torch {version}" if version else "this torch"
        hits.append(Hit(
            f"GPU {error.get('gpu') or '?'} (compute capability {cc}, {arch.sm_name(cc)}) has no kernel in {torch}, built for {supports}: {report_line(error)}",
            evidence={"report.errors": [error]},
            fix=FixRef(recipe="torch-wheel", note=f"install a torch wheel whose arch list includes {arch.sm_name(cc)} (`fwdoctor select torch` on that host names one)"),
        ))
    return hits or None


@rule("gpu-arch-unsupported-by-torch", needs=("report.errors", "gpus.list"), optional=("torch.version",))
def torch_no_kernel_below_every_release(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """torch's own "RuntimeError: CUDA error: no kernel image is available for execution on
    the device" (THC's "cuda runtime error (48)" before 1.5) where the report shows neither
    torch's release nor its CUDA, on a GPU that no CUDA wheel of any torch release in the KB
    has a kernel for (compute capability 3.0 and Fermi: 3.0 left the wheels in 0.4.1,
    pytorch/pytorch#14681): whichever torch it was, it has no kernel for that GPU (see
    gpu-arch-unsupported-by-torch; a GPU some wheel supports is left unjudged, the error
    may then be an extension's)."""
    said = [e for e in report_errors(facts, "no-kernel-image") if e.get("torch")]
    if not said:
        return None
    wheels = [v for v in kb.torch.variants() if v.cuda is not None and v.arch_list]
    if not wheels:
        return None
    releases = kb.torch.versions()
    from fwdoctor.versions import parse_version

    shown, oldest = parse_version(facts.get("torch.version")), parse_version(releases[0])
    if shown is not None and oldest is not None and shown < oldest:
        return None  # a torch older than the KB's wheels (0.3.1 still had sm_30): the KB cannot say
    hits = []
    for gpu in facts["gpus.list"] or []:
        if not isinstance(gpu, dict) or not (cc := kb.gpus.cc_for_gpu(gpu)):
            continue
        try:
            if any(arch.runs_on(list(v.arch_list or ()), str(cc)) for v in wheels):
                continue
        except ValueError:
            continue
        name = gpu.get("name") or f"GPU {gpu.get('index', 0)}"
        hits.append(Hit(
            f"{name} (compute capability {cc}, {arch.sm_name(str(cc))}) has no kernel in any CUDA wheel of the torch releases the KB lists "
            f"({releases[0]} ... {releases[-1]}), which is what torch's error says: {report_line(said[0])}",
            evidence={"report.errors": said, "gpu": {**gpu, "cc": cc}, "torch_releases": [releases[0], releases[-1]]},
            fix=FixRef(recipe="torch-source", options={"arch_list": str(cc)},
                       note=f"no official torch wheel runs on compute capability {cc}: use a newer GPU, or build torch from source with "
                            f"TORCH_CUDA_ARCH_LIST={cc} and a CUDA toolkit that still compiles for {arch.sm_name(str(cc))}"),
        ))
        break
    return hits or None


# The host compiler's limit as each program words it (doctor/kb/errors.yaml): nvcc's
# host_config.h for gcc and for MSVC, torch.utils.cpp_extension's own bounds per CUDA release.
_HOST_COMPILER_KINDS = ("unsupported-gnu", "torch-compiler-version-bound", "unsupported-msvc")


def _gcc_limit(error: dict[str, Any], kb: KB) -> str | None:
    """The newest gcc the error accepts, as a gcc-N package suffix: host_config.h's "later
    than N" (or the release before its "N and up"), torch's "<=X.Y.Z" (X) or "<X.0" (X-1),
    else the KB's limit for the CUDA release torch names."""
    if error.get("gcc_max"):
        return str(error["gcc_max"])
    if error.get("gcc_from"):
        first, _, minor = str(error["gcc_from"]).partition(".")
        return f"{first}.{int(minor) - 1}" if minor and int(minor) > 0 else str(int(first) - 1)
    bound = error.get("bound") or error.get("stated")
    if bound:
        parts = [int(p) for p in str(bound).split(".")]
        inclusive = error.get("bound_op", "<=") == "<=" or not error.get("bound")
        return str(parts[0] if inclusive or any(parts[1:]) else parts[0] - 1)
    return kb.cuda.host_gcc_max(error["cuda"]) if error.get("cuda") else None


@rule("host-compiler-unsupported", needs=("report.errors",), optional=("compilers.gcc_default",))
def unsupported_gnu(facts: Facts, kb: KB) -> Hit | None:
    """nvcc's own "unsupported GNU version!" or "unsupported Microsoft Visual Studio version!"
    error, or torch.utils.cpp_extension's "The current installed version of g++ (12.2.1) is
    greater than the maximum required version by CUDA 11.7" (see host-compiler-unsupported)."""
    said = [e for kind in _HOST_COMPILER_KINDS for e in report_errors(facts, kind)]
    if not said:
        return None
    first = said[0]
    if first["kind"] == "unsupported-msvc":
        return Hit(
            f"the Visual Studio (MSVC) nvcc ran is not one this CUDA accepts (only {first['msvc_supported']}): {report_line(first)}",
            evidence={"report.errors": said},
            fix=FixRef(recipe="cuda-toolkit",
                       note="install the Visual Studio Build Tools release this CUDA names (it can sit beside the newer one) and build "
                            "from its x64 Native Tools prompt, or install a CUDA toolkit whose host_config.h accepts the installed one"),
        )
    gcc = facts.get("compilers.gcc_default")
    limit = _gcc_limit(first, kb)
    accepts = f"torch.utils.cpp_extension allows with CUDA {first['cuda']}" if first.get("cuda") else "this nvcc accepts"
    if first.get("compiler_version"):
        have = f"{first['compiler']} {first['compiler_version']}"
    else:
        have = f"gcc {gcc['version']}" if isinstance(gcc, dict) and gcc.get("version") else "the gcc nvcc ran"
    if first.get("side") == "less":
        return Hit(
            f"{have} is older than {accepts} (>= {first.get('min_version') or first.get('stated')}): {report_line(first)}",
            evidence={"report.errors": said, "compilers.gcc_default": gcc},
            fix=FixRef(recipe="env", note="install a newer gcc/g++ and export CC and CXX to it before building"),
        )
    if limit is None:
        return Hit(f"{have} is newer than {accepts}: {report_line(first)}", evidence={"report.errors": said, "compilers.gcc_default": gcc},
                   fix=FixRef(recipe="cuda-toolkit", note="build with an older gcc (export CC and CXX), or install a newer CUDA toolkit"))
    return Hit(
        f"{have} is newer than {accepts} (gcc <= {limit}): {report_line(first)}",
        evidence={"report.errors": said, "compilers.gcc_default": gcc, "host_gcc_max": limit},
        fix=FixRef(recipe="env", commands=(f"sudo apt-get install {sh(f'gcc-{limit}')} {sh(f'g++-{limit}')}",
                                            f"export CC={sh(f'/usr/bin/gcc-{limit}')} CXX={sh(f'/usr/bin/g++-{limit}')} CUDAHOSTCXX={sh(f'/usr/bin/g++-{limit}')}"),
                   note="or install a newer CUDA toolkit (recipe cuda-toolkit)"),
    )


def _arch_releases(target: str, kb: KB) -> str:
    """Which nvcc releases compile for `target` (compute_89, sm_30), from the KB; "" when it
    has no row for that compute capability."""
    digits = re.sub(r"\D", "", target.split("_", 1)[-1])
    if len(digits) < 2:
        return ""
    span = kb.cuda.arch_first_last(f"{digits[:-1]}.{digits[-1]}")
    if span is None:
        return ""
    first_cuda, last_cuda = span
    if last_cuda is None:
        return f"; CUDA {first_cuda} and later compile for it"
    return f"; CUDA {first_cuda} to {last_cuda} compile for it (later releases removed it)"


@rule("gpu-arch-unsupported-by-toolkit", needs=("report.errors",))
def unsupported_arch(facts: Facts, kb: KB) -> Hit | None:
    """nvcc's own "Unsupported gpu architecture 'compute_89'" or "Value 'sm_86' is not defined
    for option 'gpu-architecture'" (see gpu-arch-unsupported-by-toolkit)."""
    said = report_errors(facts, "unsupported-gpu-arch") + report_errors(facts, "nvcc-arch-value-not-defined")
    if not said:
        return None
    target = said[0]["arch"]
    return Hit(
        f"the nvcc that ran cannot compile for {target}{_arch_releases(target, kb)}: {report_line(said[0])}",
        evidence={"report.errors": said},
        fix=FixRef(recipe="cuda-toolkit", note=f"use a CUDA toolkit that supports {target} (set CUDA_HOME to it), or drop {target} from the build's arch list "
                        f"(TORCH_CUDA_ARCH_LIST, or the -gencode flags a project's setup.py or CMakeLists.txt fixes)"),
    )


@rule("cudnn-shadowed", needs=("report.errors",))
def cudnn_undefined_symbol(facts: Facts, kb: KB) -> Hit | None:
    """The loader's "libcudnn...: undefined symbol" (see cudnn-shadowed): one cuDNN
    library resolved against another cuDNN's, i.e. two cuDNN versions in one process."""
    said = report_errors(facts, "cudnn-undefined-symbol")
    if not said:
        return None
    return Hit(
        f"{said[0]['library']} was loaded with parts of another cuDNN: {report_line(said[0])}",
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
    from fwdoctor.rules.frameworks import cpu_only, cpu_only_why

    cpu = [i for i in facts["frameworks.installed"] or [] if isinstance(i, dict) and cpu_only(kb, i)]
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
            from fwdoctor.rules.frameworks import native_windows_fix

            fix = native_windows_fix(item["framework"])
        elif item["framework"] == "paddle":  # paddlepaddle and paddlepaddle-gpu both install the `paddle` module
            fix = FixRef(commands=("python -m pip uninstall -y paddlepaddle paddlepaddle-gpu",
                                   "python -m pip install paddlepaddle-gpu   # the build for your CUDA: https://www.paddlepaddle.org.cn/install/quick"),
                         note="keep only the GPU package: with both installed, whichever was installed last provides `paddle`")
        elif item["framework"] == "jax":
            fix = FixRef(commands=("python -m pip install -U 'jax[cuda12]'   # pip: plain jax/jaxlib have no GPU support; the extra brings jax-cuda12-plugin",
                                   "conda install -c conda-forge 'jaxlib=*=*cuda*' jax   # conda"),
                         note="pip's jax needs its CUDA plugin (the [cuda12] extra); conda picks the CPU jaxlib where its solver sees no GPU, so ask for the CUDA build explicitly")
        else:
            fix = FixRef(commands=("conda install -c conda-forge 'tensorflow=*=*cuda*'",), note="ask conda for the CUDA build explicitly")
        hits.append(Hit(
            f"{title} {version} is a CPU-only build ({cpu_only_why(kb, item)}), but the report expects a GPU: {expected}",
            evidence={"framework": item["framework"], "version": item.get("version"), "packages": item.get("packages"), "expected": expected},
            fix=fix,
        ))
    return hits


@rule("conda-cpu-pytorch-on-gpu-host", needs=("conda.torch_build",), optional=("report.gpu_expected", "gpus.list", "driver.loaded"))
def conda_cpu_pytorch_gpu_expected(facts: Facts, kb: KB) -> Hit | None:
    """conda's CPU pytorch the report shows (a `conda list` row "pytorch 1.11.0 py3.8_cpu_0",
    or the spec "pytorch=1.9.0=py3.8_cpu_0") where the report also shows a GPU is meant: a GPU
    or a driver, or conda asked for a CUDA package beside it ("cudatoolkit=11.3") (see
    conda-cpu-pytorch-on-gpu-host; that rule needs the driver's state, which a report seldom
    shows)."""
    build = facts["conda.torch_build"]
    if not isinstance(build, dict) or build.get("kind") != "cpu":
        return None
    gpus = facts.get("gpus.list")
    if gpus:
        expected = f"GPU {gpus[0].get('name') or '?'} ({facts.source('gpus.list')})"
    elif facts.get("driver.loaded"):
        expected = f"an NVIDIA driver ({facts.source('driver.loaded')})"
    elif facts.get("report.gpu_expected"):
        expected = f"{facts.get('report.gpu_expected')} ({facts.source('report.gpu_expected')})"
    else:
        return None
    spec = f"pytorch={build.get('version')}=cuda*" if build.get("version") else "pytorch=*=cuda*"
    what = f"the CPU build {build.get('build')}" if build.get("build") else "a CPU build"
    who = f"conda's pytorch {build.get('version')}" if build.get("version") else "conda's pytorch"
    return Hit(
        f"{who} is {what} ({facts.source('conda.torch_build')}), "
        f"but the report expects a GPU: {expected}",
        evidence={"conda.torch_build": build, "expected": expected},
        fix=FixRef(commands=(f"conda install -c conda-forge {sh(spec)}",
                             f"conda search -c pytorch {sh('pytorch=' + str(build.get('version')))}   # which CUDA builds of this release exist"),
                   note="ask conda for a CUDA build explicitly; a cudatoolkit no build of that pytorch was made for, or a package that pins cpuonly, makes conda pick the CPU build"),
    )


# "pytorch==1.9.1", "pytorch=1.9.1", "pytorch::pytorch=1.9.1" (an exact release, no build
# string); "cudatoolkit=11.3", "cudatoolkit==11.3.1", "pytorch-cuda=12.1"
_EXACT_SPEC = re.compile(r"^(?:[\w.-]{1,80}::)?(?P<name>pytorch|cudatoolkit|pytorch-cuda)={1,2}(?P<version>\d{1,4}(?:\.\d{1,6}){1,3})$")


@rule("conda-cpu-pytorch-on-gpu-host", needs=("conda.requests",), optional=("conda.torch_build", "torch.cuda"))
def conda_request_without_cuda_build(facts: Facts, kb: KB) -> Hit | None:
    """A conda command that asks the pytorch channel for a pytorch release beside a CUDA
    package it never built that release for ("conda install pytorch==1.9.1 ... cudatoolkit=11.3
    -c pytorch -c conda-forge", the command PyTorch's Previous Versions page printed for 1.8.1,
    1.9.0 and 1.9.1): conda does not fail, it installs the release's CPU build, which satisfies
    the spec beside any cudatoolkit (pytorch/pytorch#69202: "pytorch=1.9.0=py3.8_cpu_0"). Read
    from the KB's pairs confirmed missing (conda.yaml pytorch_channel_no_cuda_build); not where
    the report shows conda's pytorch or torch to be a CUDA build (see conda-cpu-pytorch-on-gpu-host)."""
    from fwdoctor.versions import major_minor

    build = facts.get("conda.torch_build")
    if isinstance(build, dict) and build.get("kind") == "cuda":
        return None
    if facts.known("torch.cuda") and facts.get("torch.cuda"):
        return None  # the torch the report shows has CUDA: the command is not what was installed
    for request in facts.get("conda.requests") or []:
        if not isinstance(request, dict):
            continue
        asked: dict[str, tuple[str, dict[str, Any]]] = {}
        for spec in request.get("specs") or []:
            exact = _EXACT_SPEC.match(str(spec.get("spec"))) if isinstance(spec, dict) else None
            if exact:
                asked.setdefault(exact.group("name"), (exact.group("version"), spec))
        channels = [str(c) for c in request.get("channels") or []] + [str(s.get("channel")) for _, s in asked.values()]
        if "pytorch" not in asked or "pytorch" not in channels:
            continue
        torch = asked["pytorch"][0]
        for package in ("cudatoolkit", "pytorch-cuda"):
            if package not in asked:
                continue
            cuda = major_minor(asked[package][0])
            row = kb.conda.pytorch_channel_missing(torch, package, cuda) if cuda else None
            if row is None:
                continue
            line = asked[package][1].get("line")
            spec = f"{package}={row.instead}"
            return Hit(
                f"conda was asked for pytorch {torch} with {package} {cuda} from the pytorch channel (report line {line}), "
                f"which has no CUDA {cuda} build of pytorch {torch}: conda installs its CPU build instead, and torch.cuda.is_available() is False",
                evidence={"conda.requests": request, "missing": {"torch": torch, package: cuda, "instead": row.instead, "source": list(row.source)}},
                fix=FixRef(commands=(f"conda install -c pytorch -c conda-forge {sh('pytorch==' + torch)} {sh(spec)}   # the CUDA build of this release",
                                     f"conda search -c pytorch {sh('pytorch=' + torch)}   # the builds the channel has: py3.x_cudaX.Y_... or py3.x_cpu_0"),
                           note=f"ask for {package} {row.instead}, the CUDA the pytorch channel built pytorch {torch} for; or take a pytorch release built for CUDA {cuda}"),
            )
    return None


def _torch_cuda_asked(facts: Facts) -> tuple[str, str] | None:
    """(CUDA version, where) of conda's pytorch: a CUDA build in `conda list`, else the
    pytorch-cuda=X.Y a conda command or environment file asks for."""
    build = facts.get("conda.torch_build")
    if isinstance(build, dict) and build.get("kind") == "cuda" and build.get("cuda"):
        return str(build["cuda"]), facts.source("conda.torch_build")
    for request in facts.get("conda.requests") or []:
        for spec in request.get("specs") or [] if isinstance(request, dict) else []:
            if spec.get("name") == "pytorch-cuda":
                version = re.search(r"\d{1,2}\.\d{1,2}", str(spec.get("spec")).partition("pytorch-cuda")[2])
                if version:
                    return version.group(0), f"report line {spec.get('line')}: {spec.get('spec')}"
    return None


@rule("conda-cuda-libs-mismatch", needs=("conda.cuda_packages",), optional=("conda.requests", "conda.torch_build"))
def conda_cuda_libs_of_other_major(facts: Facts, kb: KB) -> Hit | None:
    """A CUDA library in conda's plan or `conda list` (the nvidia channel's libcusparse,
    libcublas, cuda-* packages) of another CUDA major than conda's pytorch is built for (its
    build string, or the pytorch-cuda=X.Y asked of conda): the nvidia channel's packages once
    pinned each other loosely, so `pytorch-cuda=11.7` could pull libcusparse 12.0.0.76
    (pytorch/pytorch#90673), whose libcusparse.so.12 pytorch's libcusparse.so.11 symbols are not
    in (see conda-cuda-libs-mismatch, which reads the env's conda-meta records)."""
    asked = _torch_cuda_asked(facts)
    if asked is None:
        return None
    torch_cuda, where = asked
    torch_major = major(torch_cuda)
    other = [p for p in facts["conda.cuda_packages"] or [] if isinstance(p, dict) and p.get("cuda_major") not in (None, torch_major)]
    if not other:
        return None
    first = other[0]
    names = ", ".join(f"{p['name']} {p['version']}" for p in other)
    spec = f"pytorch-cuda={torch_cuda}"
    # cuBLAS, cuSPARSE <= 12.5 and the cuda-* packages carry their CUDA major as their own
    pin = f"{first['name']}>={torch_major}.0,<{(torch_major or 0) + 1}.0"
    return Hit(
        f"conda's {names} ({facts.source('conda.cuda_packages')}, channel {first.get('channel') or '?'}) {'belong' if len(other) > 1 else 'belongs'} to CUDA {first['cuda_major']}, "
        f"but conda's pytorch is built for CUDA {torch_cuda} ({where}): pytorch loads them and misses the symbols of its own CUDA release",
        evidence={"conda.cuda_packages": other, "torch_cuda": torch_cuda},
        fix=FixRef(commands=(f"conda install -c pytorch -c nvidia pytorch {sh(spec)} {sh(pin)}   # or pin each library of CUDA {torch_cuda} by version",
                             "conda list | grep -E 'cuda|cublas|cusparse'   # what the env holds"),
                   note=f"keep every CUDA library of the env on CUDA {torch_major}: pin the one that came from another major, or install pytorch from conda-forge, which solves them together with cuda-version"),
    )


# conda's jaxlib asked for as a CUDA build: "jaxlib=*=*cuda*", "jaxlib=0.4.34=cuda120*"
_CUDA_JAXLIB_SPEC = re.compile(r"^jaxlib\b[^\s]{0,60}cuda", re.IGNORECASE)


@rule("conda-cuda-build-without-cuda", needs=("report.errors",), optional=("conda.packages", "conda.requests"))
def conda_cuda_label_contradicted(facts: Facts, kb: KB) -> Hit | None:
    """The framework's own word that it has no CUDA, where the report shows conda's build of it
    labelled CUDA (see conda-cuda-build-without-cuda, which judges the build against the KB's
    builds published without CUDA): `tf.test.is_built_with_cuda()` answering False beside
    conda's tensorflow `cuda120py311h..._1` (conda-forge/tensorflow-feedstock#365), JAX's "a
    CUDA-enabled jaxlib is not installed. Falling back to cpu" beside conda's jaxlib
    `cuda120py312h..._200` or a `jaxlib=*=*cuda*` asked of conda (conda-forge/jax-feedstock#162)."""
    from fwdoctor.versions import conda_cuda_label as cuda_label

    packages = facts.get("conda.packages") if isinstance(facts.get("conda.packages"), dict) else {}
    cases = (("tf-not-built-with-cuda", ("tensorflow-base", "tensorflow"), "tensorflow"), ("jax-no-cuda-jaxlib", ("jaxlib",), "jax"))
    for kind, names, framework in cases:
        said = report_errors(facts, kind)
        if not said:
            continue
        shown = next(((n, packages[n]) for n in names if isinstance(packages.get(n), dict) and cuda_label(str(packages[n].get("build")))), None)
        if shown is not None:
            name, rec = shown
            label = f"conda's {name} {rec.get('version')} {rec.get('build')} ({facts.source('conda.packages')})"
            row = kb.conda.broken_cuda_build(name, str(rec.get("version")), str(rec.get("build")), rec.get("channel"))
        else:
            asked = None
            if framework == "jax":
                asked = next((spec for request in facts.get("conda.requests") or [] if isinstance(request, dict)
                              for spec in request.get("specs") or [] if isinstance(spec, dict) and _CUDA_JAXLIB_SPEC.match(str(spec.get("spec")))), None)
            if asked is None:
                continue
            label = f"conda's jaxlib asked for as a CUDA build (report line {asked.get('line')}: {asked.get('spec')})"
            name, rec, row = "jaxlib", {}, None
        from fwdoctor.rules.conda import broken_cuda_build_fix

        known = f"; {row.package} {row.version} build {'/'.join(str(n) for n in row.build_numbers)} was published so ({row.content})" if row else ""
        if row is not None:
            fix = broken_cuda_build_fix(row, None)
        elif framework == "tensorflow":
            fix = FixRef(commands=(f"conda search -c conda-forge {sh(name + '=' + str(rec.get('version')) + '=cuda*')}   # the other builds of this release",
                                   "python -c 'import tensorflow as tf; assert tf.test.is_built_with_cuda()'"),
                         note="install another build (a higher build number) or release of the CUDA variant and check it; report the build to its feedstock")
        else:
            fix = FixRef(commands=("conda list jaxlib   # the build installed: a cuda* build string is the CUDA variant",
                                   "conda update -c conda-forge jaxlib jax   # a later build of the CUDA variant",
                                   "python -c 'import jax; print(jax.devices())'   # a CudaDevice, not CpuDevice"),
                         note="update conda-forge's jaxlib to a later build or release of its CUDA variant (jaxlib 0.4.34 build 200 was published broken, build 201 fixed it), "
                              "or install pip's jax[cuda12] in a fresh env")
        return Hit(
            f"{label} is labelled CUDA, but {'TensorFlow says it is not built with CUDA' if framework == 'tensorflow' else 'JAX finds no CUDA backend in it'}: {report_line(said[0])}{known}",
            evidence={"report.errors": said, "package": {"name": name, **rec}},
            fix=fix,
        )
    return None


@rule("gpu-arch-unsupported-by-framework", needs=("frameworks.installed", "gpus.list", "report.errors"))
def framework_no_kernel_for_cc(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """The CUDA runtime's "no kernel image is available for execution on the device" where
    the report shows a framework's GPU build for a CUDA whose nvcc cannot compile for the
    GPU's compute capability (Paddle's banner: "GPU Compute Capability: 8.6 ... Runtime API
    Version: 10.2"; sm_86 needs CUDA 11.1): that build has no kernel for the GPU (see
    gpu-arch-unsupported-by-framework, which needs the build's target list)."""
    said = report_errors(facts, "no-kernel-image")
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
                f"CUDA {item['cuda']} cannot compile for {arch.sm_name(cc)} ({facts.source('frameworks.installed')}); {report_line(said[0])}",
                evidence={"framework": item["framework"], "cuda": item["cuda"], "gpu": gpu, "report.errors": said},
                fix=FixRef(note=f"install the {title} build for a CUDA that supports compute capability {cc} (its install page lists one per CUDA)"),
            ))
            break
    return hits or None


@rule("gpu-arch-unsupported-by-framework", needs=("report.errors",), optional=("frameworks.installed",))
def tf_kernels_for_cc_missing(facts: Facts, kb: KB) -> Hit | None:
    """TensorFlow's "not built with CUDA kernel binaries compatible with compute capability X.Y.
    CUDA kernels will be jit-compiled from PTX" is a warning (TensorFlow 2.15 on an H100 starts
    slowly and runs): it is this finding where the JIT then fails ("'cuModuleLoadData(&module,
    data)' failed with 'CUDA_ERROR_INVALID_PTX'", "no kernel image is available": RTX 50 GPUs
    under TensorFlow 2.16-2.20), or where the report shows a release whose published targets
    (build_info.py, the KB) hold nothing a GPU of capability X.Y runs (see
    gpu-arch-unsupported-by-framework). A driver too old for the PTX says so itself
    (cuda-ptx-unsupported-toolchain) and is left to driver-too-old-for-framework."""
    from fwdoctor.rules.frameworks import _build, installed, label

    warned = report_errors(facts, "tf-no-kernels-for-cc")
    if not warned or report_errors(facts, "cuda-ptx-unsupported-toolchain"):
        return None
    cc = str(warned[0]["cc"])
    fix = FixRef(commands=("nvidia-smi --query-gpu=name,compute_cap --format=csv",
                           "python -c 'import tensorflow as tf; print(tf.sysconfig.get_build_info())'   # cuda_compute_capabilities"),
                 note=f"install a TensorFlow release built for compute capability {cc} (or NVIDIA's NGC TensorFlow container), "
                      f"or build TensorFlow from source with TF_CUDA_COMPUTE_CAPABILITIES={cc}")
    # CUDA_ERROR_INVALID_HANDLE after the warning: the function of the module whose JIT failed
    # (cuModuleGetFunction, then cuLaunchKernel; tensorflow/tensorflow#99592, doctor/kb/errors.yaml)
    failed = [e for kind in ("ptx-jit-invalid", "no-kernel-image", "cuda-invalid-handle") for e in report_errors(facts, kind) if e["line"] >= warned[0]["line"]]
    if failed:
        return Hit(f"TensorFlow has no kernels for compute capability {cc} and the JIT from its PTX failed: {report_line(warned[0])}; then {report_line(failed[0])}",
                   evidence={"report.errors": [warned[0], *failed]}, fix=fix)
    for item in installed(facts) if facts.known("frameworks.installed") else []:
        if item["framework"] != "tensorflow":
            continue
        build = _build(kb, item)
        targets = item.get("arch_list") or (build.arch_list if build is not None else None)
        if not targets:
            continue
        try:
            verdict = arch.runs_on(list(targets), cc)
        except ValueError:
            continue
        if not verdict:
            return Hit(f"{label(item)} has nothing a GPU of compute capability {cc} runs ({verdict.how}): {report_line(warned[0])}",
                       evidence={"report.errors": warned, "framework": dict(item)}, fix=fix)
    return None


_ELIDED = frozenset({"...", "\u2026"})  # "…/libstdc++.so.6": the reporter cut the path


def _libstdcxx_path_cut(path: str) -> bool:
    """Whether the reporter cut the folder off the loader's path ("…/libstdc++.so.6",
    ".../libstdc++.so.6", "<path>/libstdc++.so.6", a bare "libstdc++.so.6"): the loader itself
    always prints the full path of the libstdc++ it loaded."""
    parts = [p for p in path.replace("\\", "/").split("/") if p and p not in (".", "..")]
    return bool(parts) and parts[-1].startswith("libstdc++.so") and all(p in _ELIDED for p in parts[:-1])


@rule("conda-libstdcxx-too-old", needs=("report.errors",), optional=("conda.envs",))
def conda_libstdcxx_not_found(facts: Facts, kb: KB) -> Hit | None:
    """The loader's "libstdc++.so.6: version `GLIBCXX_3.4.30' not found" where the libstdc++
    it names is a conda env's (".../envs/NAME/lib/libstdc++.so.6", ".../miniconda3/lib/..."):
    conda's libstdc++ is older than an extension built with a newer GCC needs (see
    conda-libstdcxx-too-old; Open3D's maintainers on isl-org/Open3D#5531: "the libstdc++.so
    that comes with Conda may be older than the system's libstdc++"). A system libstdc++
    (/lib64/...) that is too old for a conda package is the other way round: not this.
    One whose folder the reporter cut ("…/libstdc++.so.6") in a report that runs in a conda
    env (`conda activate NAME`, conda info's "active env location") is
    the env's python's, which loads its env's lib/ first: a newer libstdcxx in that env fixes
    it either way (Wiki-GRx-Gym#6: "The dynamic loader picks up the environment's libstdc++.so.6")."""
    envs = [e for e in facts.get("conda.envs") or [] if isinstance(e, dict)]
    said = [e for e in report_errors(facts, "libstdcxx-version-not-found") if conda_libstdcxx(str(e.get("library") or ""))]
    cut = [e for e in report_errors(facts, "libstdcxx-version-not-found") if _libstdcxx_path_cut(str(e.get("library") or ""))] if envs else []
    if not said and not cut:
        return None
    error = (said or cut)[0]
    env = envs[0].get("prefix") or envs[0].get("name") if envs else None
    which = f"conda's libstdc++ ({error['library']})" if said else f"the libstdc++ of the report's conda env {env} (report line {envs[0]['line']})"
    return Hit(
        f"{which} is older than {error.get('required_by') or 'a library'} needs ({error['needed']}): {report_line(error)}",
        evidence={"report.errors": said or cut, **({"conda.envs": envs} if not said else {})},
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
    # A CUDA_HOME written as a path list is cuda-home-invalid's (fwdoctor.rules.toolkit.path_list).
    named = {label: str(pointers[key]) for key, label in _POINTERS.items()
             if pointers.get(key) and not (key in ("cuda_home", "cuda_path") and path_list(str(pointers[key])))
             and re.fullmatch(r"cuda-\d{1,2}\.\d{1,2}", str(pointers[key]).rstrip("/").rsplit("/", 1)[-1])}
    if len(set(named.values())) < 2:
        return None
    detail = ", ".join(f"{label} -> {root}" for label, root in named.items())
    return Hit(
        f"CUDA pointers in the report disagree: {detail} ({facts.source('cuda.pointers')})",
        evidence={"cuda.pointers": dict(pointers)},
        fix=FixRef(recipe="env", note="point PATH, CUDA_HOME and LD_LIBRARY_PATH at one installed toolkit (`ls -d /usr/local/cuda*` lists them)"),
    )


# The frameworks whose builds load their own CUDA runtime (their "driver insufficient" is theirs).
_CUDA_FRAMEWORKS = ("tensorflow", "jax", "paddle")


def _only_framework_named(facts: Facts) -> str | None:
    """The one framework of _CUDA_FRAMEWORKS a report names (fwdoctor.triage.framework_named),
    when it names no other GPU framework (torch included): then the CUDA runtime that met the
    driver is that framework's ("Using TensorFlow backend.", "conda install tensorflow-gpu")."""
    named = facts.get("report.frameworks_named")
    if not isinstance(named, list) or len(named) != 1:
        return None
    return str(named[0]) if named[0] in _CUDA_FRAMEWORKS else None


@rule("driver-too-old-for-framework", needs=("report.errors",), optional=("report.framework", "report.frameworks_named", "report.cpu_only_host", "driver.version"))
def framework_driver_insufficient(facts: Facts, kb: KB) -> Hit | None:
    """The CUDA runtime's "CUDA driver version is insufficient for CUDA runtime version" in a
    report filed with TensorFlow's or JAX's issue form, or printed among Paddle's frames
    ("(at /paddle/paddle/fluid/platform/gpu_info.cc:78)"), or in Paddle's own words ("Cuda
    error(35), ..."), or the driver's "the provided PTX was compiled with an unsupported
    toolchain" (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) among JAX's, TensorFlow's or Paddle's frames
    (jaxlib/cuda_prng_kernels.cc), or in a report that names that framework and no other
    ("Using TensorFlow backend.", "conda install tensorflow-gpu"): the driver is older than the
    CUDA that framework's build loads (see driver-too-old-for-framework, which needs the
    driver's version and the build's CUDA; the text names neither).
    Not where the report says its host is CPU-only ("CPU cluster", "cpu集群") and shows no
    driver: the CUDA runtime says the same (error 35) when there is no driver at all
    (fwdoctor.triage.cpu_host), and no id states "a GPU build on a host without a GPU"."""
    said = report_errors(facts, "driver-insufficient")
    # Paddle's own "Cuda error(35)" names Paddle whatever the words after it (doctor/kb/errors.yaml)
    paddle_lines = {e["line"] for e in report_errors(facts, "paddle-cuda-error-35")}
    framed = any(e.get("framework") for e in said)
    said = [dict(e, framework="paddle") if e["line"] in paddle_lines else e for e in said]
    said += [dict(e, framework="paddle") for e in report_errors(facts, "paddle-cuda-error-35") if e["line"] not in {s["line"] for s in said}]
    # The driver refusing PTX a newer CUDA wrote (cudaErrorUnsupportedPtxVersion): jaxlib's kernels,
    # XLA's or TensorFlow's (issue 26; the row's hook names the framework whose frames surround it).
    ptx = report_errors(facts, "cuda-ptx-unsupported-toolchain")
    framed = framed or any(e.get("framework") for e in ptx)
    said += ptx
    # whose form it is, else whose frames surround the error (Paddle's: fwdoctor.triage.errors)
    framework = (facts.get("report.framework") or next((e["framework"] for e in said if e.get("framework")), None)
                 or (_only_framework_named(facts) if said else None))
    if not said or framework not in _CUDA_FRAMEWORKS:
        return None
    if facts.get("report.cpu_only_host") and not facts.get("driver.version"):
        return None  # no driver at all reads the same (error 35); the text shows none
    from fwdoctor.kb.frameworks import TITLES

    title = TITLES.get(framework, framework)
    where = (f"{title}'s issue form, {facts.source('report.framework')}" if facts.get("report.framework")
             else f"{title}'s frames around it" if framed
             else f"{title}'s own wording, \"Cuda error(35)\"" if paddle_lines
             else f"the report names {title} and no other framework, {facts.source('report.frameworks_named')}")
    what = "the CUDA that wrote the PTX this" if said[0]["kind"] == "cuda-ptx-unsupported-toolchain" else "the CUDA runtime this"
    return Hit(
        f"the NVIDIA driver is older than {what} {title} build loads: {report_line(said[0])} ({where})",
        evidence={"report.errors": said, "report.framework": framework},
        fix=FixRef(commands=("nvidia-smi   # the driver's CUDA, top right",),
                   note=f"upgrade the NVIDIA driver to one that runs the CUDA of this {title} build (its tested-build table), or install a {title} built for the driver's CUDA"),
    )


# cuDNN's own numbers: 1000*major + 100*minor + patch before cuDNN 9 ("7005" = 7.0.5),
# 10000*major + 100*minor + patch from 9 ("90100" = 9.1.0); CUDA's: 1000*major + 10*minor
# ("12010" = 12.1), as cudnnGetVersion and cudaRuntimeGetVersion return them.
def _dotted(library: str, value: str) -> str:
    if not value.isdigit():
        return value
    n = int(value)
    if library == "cuDNN":
        return f"{n // 10000}.{n % 10000 // 100}.{n % 100}" if n >= 10000 else f"{n // 1000}.{n % 1000 // 100}.{n % 100}"
    if library == "CUDA":
        return f"{n // 1000}.{n % 1000 // 10}"
    return value


_LOADED_LIB_ROWS = {"cudnn-runtime-older": "TensorFlow/XLA", "paddle-cudnn-older": "PaddlePaddle", "jax-lib-older-than-built": "JAX"}


@rule("framework-loaded-lib-mismatch", needs=("report.errors",), optional=("report.framework",))
def framework_loaded_lib_mismatch(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        Reads a framework's own complaint that the cuDNN or CUDA library it loaded is not the
        one it was built with: TensorFlow's and XLA's "Loaded runtime CuDNN library: 9.1.0 but
        source was compiled with: 9.3.0", Paddle's "The installed Paddle is compiled with CUDNN
        7.6, but CUDNN version in your machine is 7.4", JAX's "Found CUDA version 12010, but JAX
        was built against version 12020, which is newer". Each is printed only when the loaded
        library cannot serve the build (older, or another cuDNN compatibility version).

    Why is this bad?
        TensorFlow and JAX stop there ("DNN library initialization failed", "CUDA backend
        failed to initialize": everything runs on the CPU); Paddle goes on and fails later
        (CUDNN_STATUS_BAD_PARAM in batch_norm, PaddlePaddle/Paddle#23922). The older library is
        usually another copy the loader finds first: the system's cuDNN, a conda env's, or an
        LD_LIBRARY_PATH folder in front of the framework's own nvidia-* wheels.

    Example
        "Loaded runtime CuDNN library: 8.5.0 but source was compiled with: 8.6.0" under JAX
        (jax-ml/jax#15268): invalid; with cuDNN 8.6 or a newer 8.x loaded: valid.

    Fix
        Make the loaded copy the one the build needs (the same major, a minor at least the
        build's): find the copies the loader sees, remove the older one from the loader path,
        or install the matching version (JAX and TensorFlow >= 2.14 on Linux bring theirs with
        `pip install -U "jax[cuda12]"` / `pip install "tensorflow[and-cuda]"`):

            ldconfig -p | grep -E 'libcudnn|libcudart'
            echo $LD_LIBRARY_PATH
    """
    from packaging.version import InvalidVersion, Version

    said = [e for kind in _LOADED_LIB_ROWS for e in report_errors(facts, kind)]
    if not said:
        return None
    hits = []
    seen: set[tuple[str, str, str]] = set()
    for error in said:
        library = str(error.get("library") or "cuDNN")
        loaded, compiled = _dotted(library, str(error["loaded"])), _dotted(library, str(error["compiled"]))
        if (library, loaded, compiled) in seen:
            continue  # XLA repeats the line once per stream
        seen.add((library, loaded, compiled))
        who = _LOADED_LIB_ROWS[error["kind"]]
        if error["kind"] == "cudnn-runtime-older" and facts.get("report.framework") == "jax":
            who = "JAX (XLA)"
        try:
            older = Version(loaded) < Version(compiled)
        except InvalidVersion:
            older = False
        how = "older than" if older else "not compatible with"
        hits.append(Hit(
            f"{who} loaded {library} {loaded}, {how} the {library} {compiled} it was built with: {report_line(error)}",
            evidence={"report.errors": [error], "library": library, "loaded": loaded, "compiled": compiled},
            fix=FixRef(commands=("ldconfig -p | grep -E 'libcudnn|libcudart'   # the copies the loader can find",
                                 "echo $LD_LIBRARY_PATH   # a folder here is searched first"),
                       note=f"load {library} {compiled} or a newer release of the same major: remove the older copy from the loader path, "
                            "or install the matching one (JAX and TensorFlow >= 2.14 bring theirs: pip install -U 'jax[cuda12]' / 'tensorflow[and-cuda]')"),
        ))
    return hits


@rule("ptxas-newer-than-driver", needs=("report.errors",))
def ptxas_newer_than_driver(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads XLA's warning "The NVIDIA driver's CUDA version is 12.2 which is older than the
        ptxas CUDA version (12.3.107)": the ptxas XLA compiles with (the nvidia-cuda-nvcc wheel
        JAX installs, or the first ptxas on PATH) is from a newer CUDA than the driver runs.

    Why is this bad?
        XLA then disables parallel compilation ("which may slow down compilation"), and code
        that ptxas compiles for a newer CUDA than the driver's may fail to load.

    Example
        Driver 535.154.05 (CUDA 12.2) with nvidia-cuda-nvcc-cu12 12.3.107 (google/brax#488
        shows 12.4 against 12.5.40): invalid. The same driver with ptxas 12.2: valid.

    Fix
        Upgrade the NVIDIA driver to one for the ptxas's CUDA, or pin the ptxas to the
        driver's CUDA minor:

            python -m pip install "nvidia-cuda-nvcc-cu12==12.2.*"
    """
    said = report_errors(facts, "xla-ptxas-newer-than-driver")
    if not said:
        return None
    error = said[0]
    driver_cuda, ptxas = str(error["driver_cuda"]), str(error["ptxas"])
    wheel = f"nvidia-cuda-nvcc-cu{driver_cuda.split('.')[0]}=={driver_cuda}.*"
    return Hit(
        f"the ptxas XLA runs (CUDA {ptxas}) is newer than the driver's CUDA {driver_cuda}: XLA compiles serially and may emit code the driver cannot load: {report_line(error)}",
        evidence={"report.errors": said, "driver.cuda_version": driver_cuda, "ptxas": ptxas},
        fix=FixRef(commands=(f"python -m pip install {sh(wheel)}   # a ptxas no newer than the driver",),
                   note=f"or upgrade the NVIDIA driver to one that supports CUDA {'.'.join(ptxas.split('.')[:2])}"),
    )


@rule("cuda-lib-not-found", needs=("report.errors",), optional=("gpus.list", "driver.loaded", "report.gpu_expected"))
def cuda_lib_not_found(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads TensorFlow's "Could not load dynamic library 'libcusolver.so.10'; dlerror: ...":
        a CUDA or cuDNN library TensorFlow opens at run time is not found by the loader
        (TensorRT's optional libnvinfer is left out, and so is the driver's own libcuda.so.1,
        which TensorFlow names on every machine without a loaded NVIDIA driver).

    Why is this bad?
        TensorFlow then skips the GPU ("Cannot dlopen some GPU libraries ... Skipping
        registering GPU devices") and runs on the CPU. Each release opens the sonames of the
        CUDA and cuDNN it was built with (TensorFlow 2.4: CUDA 11.0's libcusolver.so.10, which
        CUDA 11.2 does not ship), so another CUDA release does not serve it, nor does the right
        one outside the loader path.

    Example
        TensorFlow 2.4 on a host with only CUDA 11.2: "Could not load dynamic library
        'libcusolver.so.10'": invalid. With CUDA 11.0's lib64 on LD_LIBRARY_PATH: valid.

    Fix
        Install the CUDA and cuDNN of the release's tested build configuration
        (tensorflow.org/install/source#gpu) and put their lib64 on the loader path, or on
        Linux with TensorFlow >= 2.14 let pip bring them:

            python -m pip install "tensorflow[and-cuda]"
            ldconfig -p | grep libcusolver
    """
    # libcuda.so.1 (nvcuda.dll) is the NVIDIA driver's own library, not a CUDA or cuDNN release:
    # TensorFlow names it on every machine without a loaded driver (a CPU-only host, a container
    # started without the GPUs, WSL's /usr/lib/wsl/lib off the loader path); the errors.yaml row
    # libcuda-so-1-not-found and the container rules speak for it.
    said = [e for e in report_errors(facts, "dlopen-failed") if not _DRIVER_LIBRARY.match(str(e.get("library", "")))]
    if not said:
        return None
    error = said[0]
    library = str(error["library"])
    # On a host that shows no GPU (TensorFlow: "Ignore above cudart dlerror if you do not have
    # a GPU set up"), a missing CUDA library is expected; with a GPU in sight it is the fault.
    gpu = bool(facts.get("gpus.list")) or bool(facts.get("driver.loaded")) or bool(facts.get("report.gpu_expected")) \
        or bool(report_errors(facts, "tf-cannot-dlopen-gpu-libraries"))
    stem = library.split(".so", 1)[0]
    fix = FixRef(commands=(f"ldconfig -p | grep {sh(stem)}   # which versions the loader sees", "echo $LD_LIBRARY_PATH"),
                 note="install the CUDA and cuDNN that this TensorFlow release was built with (tensorflow.org/install/source#gpu) "
                      "and put their lib64 on LD_LIBRARY_PATH; on Linux, TensorFlow >= 2.14 brings them: pip install 'tensorflow[and-cuda]'")
    if library.lower().endswith(".dll"):  # native Windows (cudart64_110.dll): PATH is the loader path
        try:  # the report's name, written for cmd only when cmd reads it as text
            where = (f"where {cmd_word(library, 'library name')}   # in cmd: which folder on PATH holds it",)
        except QuotingError:
            where = ()
        fix = FixRef(commands=(*where, "echo %CUDA_PATH%"),
                     note="install the CUDA and cuDNN that this TensorFlow release was built with (tensorflow.org/install/source_windows#gpu) "
                          "and put their bin folders on PATH, then open a new shell; TensorFlow 2.10 was the last release with GPU support on native Windows (use WSL2 after it)")
    return Hit(
        f"the loader finds no {library} (its CUDA/cuDNN release is not installed, or not on the loader path): {report_line(error)}",
        evidence={"report.errors": said, "library": library},
        fix=fix,
        severity=None if gpu else Severity.WARNING,
    )


_DRIVER_LIBRARY = re.compile(r"(?:.{0,200}[/\\])?(?:libcuda\.so|nvcuda\.dll)", re.IGNORECASE)


# The nvidia-* wheel of jax[cuda12]/[cuda13] that holds each library JAX's CUDA plugin checks.
_JAX_LIB_WHEEL = {"CUDA": "nvidia-cuda-runtime", "cuDNN": "nvidia-cudnn", "cuBLAS": "nvidia-cublas", "cuFFT": "nvidia-cufft",
                  "cuSOLVER": "nvidia-cusolver", "cuSPARSE": "nvidia-cusparse", "cuPTI": "nvidia-cuda-cupti", "NCCL": "nvidia-nccl"}


@rule("cuda-lib-not-found", needs=("report.errors",))
def jax_cuda_lib_unloadable(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads JAX's "Unable to load cuSPARSE. Is it installed?" (jax_plugins/xla_cuda12's
        check of each CUDA library at start-up; jaxlib 0.4.x prefixes "CUDA backend failed to
        initialize: "): a CUDA library the plugin opens did not load.

    Why is this bad?
        JAX then registers no CUDA backend and runs on the CPU ("Falling back to cpu").
        The plugin loads the nvidia-* wheels of `jax[cuda12]` first; the load fails where the
        wheel is missing, or where an LD_LIBRARY_PATH puts another CUDA's libraries in front of
        them (a system libnvJitLink older than the one the wheel's cuSPARSE links against:
        jax-ml/jax#29843, fixed by `unset LD_LIBRARY_PATH`).

    Example
        jax[cuda12] 0.6.2 with LD_LIBRARY_PATH=/usr/local/cuda-12.6/lib64: "Unable to load
        cuSPARSE. Is it installed?" (jax-ml/jax#30050): invalid. The same env with
        LD_LIBRARY_PATH unset: valid.

    Fix
        Run JAX without LD_LIBRARY_PATH, and reinstall jax with its CUDA extra so every
        nvidia-* wheel it needs is there:

            env -u LD_LIBRARY_PATH python -c 'import jax; print(jax.devices())'
            python -m pip install -U "jax[cuda12]"
    """
    said = report_errors(facts, "jax-cuda-lib-unloadable")
    if not said:
        return None
    error = said[0]
    library = str(error.get("library") or "a CUDA library")
    wheel = _JAX_LIB_WHEEL.get(library, "nvidia-*")
    return Hit(
        f"JAX's CUDA plugin could not load {library} (the {wheel}-cu12/-cu13 wheel is missing, or an LD_LIBRARY_PATH folder shadows it "
        f"with another CUDA's libraries), so JAX runs on the CPU: {report_line(error)}",
        evidence={"report.errors": said, "library": library},
        fix=FixRef(commands=("env -u LD_LIBRARY_PATH python -c 'import jax; print(jax.devices())'   # a CudaDevice here: LD_LIBRARY_PATH is the cause",
                             f"python -m pip list 2>/dev/null | grep -i -E 'jax|{wheel}'   # the plugin and the wheel it loads",
                             "python -m pip install -U 'jax[cuda12]'   # reinstalls the plugin with the nvidia-* wheels it needs"),
                   note="JAX's pip install brings its own CUDA libraries: unset LD_LIBRARY_PATH (or drop the system CUDA lib64 from it) for the JAX process"),
    )


def _major_minor(version: str) -> tuple[int, int] | None:
    parts = re.match(r"(\d{1,2})\.(\d{1,2})", str(version))
    return (int(parts.group(1)), int(parts.group(2))) if parts else None


# Builds whose CUDA is not the tested configuration's: a source build, conda's packages (their
# own cudatoolkit in the env), NVIDIA's nvidia-tensorflow wheels and NGC/docker images.
_NOT_PYPI_BUILD = re.compile(r"source|conda|nvidia|docker|ngc|container", re.IGNORECASE)


@rule("cuda-lib-not-found", needs=("report.tf_version", "report.cuda_stated"),
      optional=("cuda.toolkits", "driver.cuda_version", "report.tf_installed_from", "frameworks.installed"))
def tf_built_for_other_cuda(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the TensorFlow release a report names (the issue form's "TensorFlow version")
        with the CUDA it says is installed (nvcc -V, else the form's "CUDA/cuDNN version"), for
        releases before 2.14, which load the system's CUDA: each opens the sonames of the CUDA it
        was built with (frameworks.yaml `tested_builds`, TensorFlow's "Tested build
        configurations").

    Why is this bad?
        Before CUDA 11 the runtime's soname carries the minor (libcudart.so.10.1), so TensorFlow
        2.2 (CUDA 10.1) finds nothing to load on a host with only CUDA 10.2, and no release of
        another CUDA major serves it: "Could not load dynamic library", then the GPU is skipped.

    Example
        tensorflow-gpu 2.2.0rc4 with Arch's CUDA 10.2.89 (tensorflow/tensorflow#39132): invalid.
        TensorFlow 2.1 with CUDA 10.1: valid.

    Fix
        Install the CUDA (and cuDNN) the release was built with beside the other one and put its
        lib64 on the loader path, or install the TensorFlow release built for the installed CUDA.
    """
    tf = str(facts["report.tf_version"])
    if _NOT_PYPI_BUILD.search(str(facts.get("report.tf_installed_from") or "")):
        return None
    from fwdoctor.rules.frameworks import cpu_only

    if any(isinstance(i, dict) and i.get("framework") == "tensorflow" and cpu_only(kb, i) for i in facts.get("frameworks.installed") or []):
        return None  # a CPU build (TensorFlow >= 2.11 on native Windows) loads no CUDA: framework-cpu-build-on-gpu-host says so
    build = kb.frameworks.tested_build("tensorflow", tf)
    if build is None:
        return None
    toolkits = [t for t in facts.get("cuda.toolkits") or [] if isinstance(t, dict) and t.get("version")]
    if len({str(t["version"]) for t in toolkits}) == 1:
        have, where = str(toolkits[0]["version"]), facts.source("cuda.toolkits")
    elif not toolkits:
        have, where = str(facts["report.cuda_stated"]), facts.source("report.cuda_stated")
        # The form's answer is often nvidia-smi's header, the driver's CUDA, not a toolkit's.
        if facts.get("driver.cuda_version") and _major_minor(str(facts.get("driver.cuda_version"))) == _major_minor(have):
            return None
    else:
        return None  # several toolkits: which one the loader finds is not shown
    if kb.cuda.toolkit_driver_row(have) is None:  # not a CUDA release (a cuDNN version: "8.1")
        return None
    built, shown = _major_minor(build.cuda), _major_minor(have)
    if built is None or shown is None or built == shown:
        return None
    if built[0] == shown[0] and built[0] >= 11:
        return None  # CUDA 11 and later keep one soname per major (libcudart.so.11.0)
    runtime = f"libcudart.so.{build.cuda}" if built[0] < 11 else f"libcudart.so.{built[0]}.0"
    return Hit(
        f"TensorFlow {tf} is built for CUDA {build.cuda} (it opens {runtime}); the report shows CUDA {have} ({where}), "
        f"whose libraries it does not load",
        evidence={"report.tf_version": tf, "built_for": build.cuda, "cudnn": build.cudnn, "cuda": have},
        fix=FixRef(commands=(f"ldconfig -p | grep {sh('libcudart.so')}   # which CUDA runtimes the loader finds",),
                   note=f"install CUDA {build.cuda} (and cuDNN {build.cudnn or '?'}) beside CUDA {have} and put its lib64 on LD_LIBRARY_PATH, "
                        f"or install a TensorFlow release built for CUDA {have} (tensorflow.org/install/source#gpu)"),
    )


# What says the report asks TensorFlow itself for a GPU (fwdoctor.triage.gpu_intent's values): a
# program that only imports TensorFlow beside torch (transformers, sglang) prints the cudart line too.
_TF_GPU_ASKED = ("the report asks for tensorflow-gpu", "the report asks TensorFlow for its GPUs")


@rule("cuda-lib-not-found", needs=("report.errors",), optional=("report.framework", "report.gpu_expected", "gpus.list", "driver.loaded"))
def tf_cudart_not_found(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads TensorFlow's "Could not find cuda drivers on your machine, GPU will not be used"
        (TensorFlow >= 2.13, tsl/cuda/cudart_stub.cc) in a report that asks TensorFlow for a GPU
        (its issue form with a GPU shown or named, tf.config.list_physical_devices('GPU'),
        tensorflow-gpu): the loader found no libcudart of the CUDA this TensorFlow was built with.

    Why is this bad?
        TensorFlow then registers no GPU and runs on the CPU. Despite its words the driver is
        rarely the cause: pip's plain `tensorflow` brings no CUDA libraries (the [and-cuda] extra
        does, on Linux), a system CUDA of another major does not serve it (TensorFlow 2.13 needs
        CUDA 11.8's libcudart.so.11.0), and libraries outside the loader path are not found.

    Example
        TensorFlow 2.13.0 with only CUDA 12.0 installed (tensorflow/tensorflow#61689): invalid.
        The same line on a CPU-only host, or from a torch program that imports TensorFlow: not
        judged.

    Fix
        On Linux with TensorFlow >= 2.14: `pip install "tensorflow[and-cuda]"`; before it, the
        CUDA and cuDNN of the release's tested build on the loader path.
    """
    said = report_errors(facts, "tf-cudart-stub-not-found")
    if not said or any(not _DRIVER_LIBRARY.match(str(e.get("library", ""))) for e in report_errors(facts, "dlopen-failed")):
        return None  # cuda_lib_not_found names the library itself
    expected = str(facts.get("report.gpu_expected") or "")
    gpu = bool(facts.get("gpus.list")) or bool(facts.get("driver.loaded")) or bool(expected)
    asked = expected in _TF_GPU_ASKED or (facts.get("report.framework") == "tensorflow" and gpu) \
        or bool(report_errors(facts, "tf-cannot-dlopen-gpu-libraries"))
    if not asked:
        return None
    return Hit(
        f"TensorFlow finds no CUDA runtime (libcudart) of the CUDA it was built with, so it registers no GPU: {report_line(said[0])}",
        evidence={"report.errors": said, "report.gpu_expected": expected or None},
        fix=FixRef(commands=("python -m pip install 'tensorflow[and-cuda]'   # Linux, TensorFlow >= 2.14: the CUDA and cuDNN wheels it loads",
                             "ldconfig -p | grep libcudart   # the CUDA runtimes the loader finds"),
                   note="before TensorFlow 2.14, install the CUDA and cuDNN of the release's tested build (tensorflow.org/install/source#gpu) "
                        "and put their lib64 on LD_LIBRARY_PATH; on native Windows, TensorFlow 2.10 was the last release with GPU support"),
    )


def _ib_completion_timeout(facts: Facts) -> Hit | None:
    """NCCL's "NET/IB : Got completion from peer ... with error 12" (status=12,
    IBV_WC_RETRY_EXC_ERR): the queue pair came up over sockets, then no RDMA packet reached
    the peer (S-ERR-NCCL-902); on RoCE most often the GID index (S-ERR-PYTORCH-81628)."""
    said = report_errors(facts, "nccl-ib-completion-timeout")
    if not said:
        return None
    gid = str((facts.get("nccl.env") or {}).get("NCCL_IB_GID_INDEX") or "") if isinstance(facts.get("nccl.env"), dict) else ""
    if gid:
        why = (f"NCCL_IB_GID_INDEX={gid} (the report sets it) may name, on some node, a GID that is not the RoCE v2 entry of an address "
               "routed between the nodes (GID tables differ per host and per pod)")
    else:
        why = ("on RoCE most often the GID index NCCL picked names an address that is not routed between the nodes (machines under "
               "different switches, a link-local IPv6 GID): set NCCL_IB_GID_INDEX to the RoCE v2 entry of the routable IPv4 address")
    return Hit(
        f"NCCL's InfiniBand/RoCE transfers to a peer timed out (work completion status 12, transport retry counter exceeded): "
        f"the NICs cannot reach each other over RDMA; {why}; else a link or switch that drops RDMA traffic: {report_line(said[0])}",
        evidence={"report.errors": said, "NCCL_IB_GID_INDEX": gid or None},
        fix=FixRef(commands=("show_gids   # on every node: the RoCE v2 GID (VER v2) of the address the nodes reach each other on",
                             "export NCCL_IB_GID_INDEX=3   # that entry's INDEX (3 is common, not universal); or per host in /etc/nccl.conf",
                             "ib_write_bw -d mlx5_0 -x 3 <peer>   # perftest over the same GID: RDMA between the two nodes, without NCCL"),
                   note="NCCL_IB_GID_INDEX: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-ib-gid-index; "
                        "a fabric that is only slow or lossy may need NCCL_IB_TIMEOUT raised instead (NVIDIA/nccl#902)"),
    )


@rule("nccl-ib-connect-failed", needs=("report.errors",), optional=("nccl.env",))
def nccl_ib_connect_failed(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads NCCL's "Call to ibv_modify_qp failed with 110 Connection timed out" (older NCCL:
        "failed with error Network is unreachable"): NCCL could not bring an InfiniBand/RoCE
        queue pair to a peer's NIC up. And NCCL's "NET/IB : Got completion from peer ... with
        error 12" (later "status=12"): the queue pair came up over sockets, then no RDMA
        packet reached the peer (IBV_WC_RETRY_EXC_ERR, the transport retry counter exceeded).

    Why is this bad?
        The collective that needed the connection fails (ncclSystemError) or hangs. A timeout
        often means the two NICs cannot reach each other at all: on a rail-optimized fabric
        (a switch per NIC number) only NICs of the same rail talk, and NCCL paired NICs of
        different rails (NVIDIA/nccl#2013, fixed by NCCL_CROSS_NIC=0). "Network is
        unreachable" and completion error 12 point at a RoCE GID index that is not routable
        between the nodes (pytorch/pytorch#81628: "The gpu machines are under different
        switches, the default gid can't create link to each other", fixed by
        NCCL_IB_GID_INDEX=3), or at a link that drops RDMA traffic (NVIDIA/nccl#902).

    Example
        "ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on
        dev mlx5_0:1, curr state INIT, next state RTR": invalid.

    Fix
        On a rail-optimized fabric keep each ring on one NIC number; otherwise check the
        ports and the RoCE GID on both nodes:

            export NCCL_CROSS_NIC=0
            ibv_devinfo -v
            show_gids   # RoCE: set NCCL_IB_GID_INDEX to the RoCE v2 GID of the routable address
            export NCCL_IB_GID_INDEX=3   # that GID's INDEX, on every node
    """
    said = report_errors(facts, "nccl-ibv-modify-qp-failed")
    if not said:
        return _ib_completion_timeout(facts)
    error = said[0]
    reason = str(error.get("error") or "").strip()
    if error.get("errno") == "110" or "timed out" in reason.lower():
        why = ("the NICs cannot reach each other: on a rail-optimized fabric NCCL paired NICs of different rails (NCCL_CROSS_NIC=0 keeps "
               "each ring on one rail); on RoCE the GID index NCCL uses (NCCL_IB_GID_INDEX) may name an address that is not routed between the nodes")
        commands = ("export NCCL_CROSS_NIC=0   # rail-optimized fabric: only NICs of the same rail reach each other",
                    "show_gids   # RoCE: NCCL_IB_GID_INDEX should name the RoCE v2 GID of the routable address",
                    "ibv_devinfo -v   # on both nodes: port state and link layer")
    else:
        why = "on RoCE often a GID index that is not routable between the nodes, or a port that is down"
        commands = ("ibv_devinfo -v   # on both nodes: port state and link layer",
                    "show_gids   # RoCE: NCCL_IB_GID_INDEX should name the RoCE v2 GID of the routable address")
    return Hit(
        f"NCCL could not connect an InfiniBand/RoCE queue pair ({reason}): {why}: {report_line(error)}",
        evidence={"report.errors": said},
        fix=FixRef(commands=commands, note="NCCL troubleshooting: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"),
    )


@rule("nccl-gpu-unsupported", optional=("report.errors", "nccl.loaded", "gpus.list"))
def nccl_gpu_unsupported(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads NCCL's own "ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856": the
        NCCL that was loaded asks more shared memory per block than the GPU gives, i.e. it
        predates the GPU's architecture (NCCL 2.25.1 on a GeForce RTX 5090, sm_120). Where
        that line is absent, the NCCL version the report shows loaded ("NCCL version
        2.14.3") against the first release for each GPU's arch (libs.yaml nccl_arch,
        fwdoctor.triage.nccl_fabric.nccl_older_than_gpu).

    Why is this bad?
        Every collective on that GPU fails or hangs ("Without it, there's no chance to get
        things to work with 2.25.1", NVIDIA on NVIDIA/nccl#1637); NCCL_P2P_DISABLE and the
        like do not help. NCCL 2.26 fixed it (NVIDIA/nccl-tests#287).

    Example
        NCCL 2.25.1 (the NGC 25.02 stack, torch 2.6's nvidia-nccl-cu12) on two RTX 5090:
        invalid. NCCL 2.26 or newer: valid.

    Fix
        Load a newer NCCL: the one torch or the container image ships, or the wheel:

            python -m pip install -U "nvidia-nccl-cu12>=2.26"
    """
    said = report_errors(facts, "nccl-maxsharedmem-exceeds")
    if not said:
        # NCCL's banner older than the GPU's first release (libs.yaml nccl_arch)
        return nccl_fabric.nccl_older_than_gpu(facts, kb)
    error = said[0]
    return Hit(
        f"the NCCL loaded asks {error['needed']} bytes of shared memory per block, more than this GPU gives ({error['limit']}): "
        f"it predates the GPU's architecture: {report_line(error)}",
        evidence={"report.errors": said},
        fix=FixRef(commands=("python -m pip install -U 'nvidia-nccl-cu12>=2.26'   # or a torch / container image that ships NCCL >= 2.26",),
                   note="NCCL 2.26 fixed this for Blackwell GeForce (RTX 50xx); NCCL_DEBUG=INFO prints the NCCL version loaded"),
    )


# The signature kinds the rules above read; every other row of doctor/kb/errors.yaml that
# names findings is raised by a generic rule per finding id (_from_rows), so a new row needs
# no code here.

@rule("container-image-ships-driver-libs", needs=("report.errors",))
def image_driver_libs_said(facts: Facts, kb: KB) -> Hit | None:
    """nvidia-container-cli's "mount error: file creation failed: .../libnvidia-ml.so.1: file
    exists" in a report: the image already holds a driver library the runtime mounts from the
    host (see container-image-ships-driver-libs, which `check --image` judges from the image)."""
    said = report_errors(facts, "nvidia-container-cli-lib-exists")
    if not said:
        return None
    lib = said[0].get("lib") or "a driver library"
    return Hit(
        f"the image ships {lib}, a driver library the NVIDIA container runtime mounts from the host (on WSL2 from /usr/lib/wsl/lib): {report_line(said[0])}",
        evidence={"report.errors": said},
        fix=FixRef(commands=("RUN rm -f /usr/lib/x86_64-linux-gnu/libcuda.so.* /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.*   # in the Dockerfile",
                             "fwdoctor check --image IMAGE   # lists every driver library the image ships"),
                   note="or remove the package that brought them (often libnvidia-compute-NNN), or build from a clean nvidia/cuda image "
                        "rather than a copy from a GPU or WSL2 machine (NVIDIA/nvidia-docker#1551)"),
    )


_HANDLED = frozenset({"nvml-mismatch", "nvrm-api-mismatch", "driver-too-old", "cuda-version-mismatch", "sm-incompatible", "unsupported-gnu",
                      "unsupported-gpu-arch", "cudnn-undefined-symbol",
                      # issue 26, build-ext: the same two rules read the other wordings (unsupported_gnu, unsupported_arch)
                      "torch-compiler-version-bound", "unsupported-msvc", "nvcc-arch-value-not-defined",
                      # issue 26, part B: the rules above with their own explanation
                      "cudnn-runtime-older", "paddle-cudnn-older", "jax-lib-older-than-built", "xla-ptxas-newer-than-driver",
                      "jax-cuda-lib-unloadable",  # jax_cuda_lib_unloadable reads it (cuda-lib-not-found with JAX's fix)
                      "cuda-ptx-unsupported-toolchain",  # framework_driver_insufficient reads it (only among JAX's, TensorFlow's or Paddle's frames)
                      "dlopen-failed", "nccl-ibv-modify-qp-failed", "nccl-ib-completion-timeout", "paddle-cuda-error-35",
                      # its facts (a CPU-only Paddle, a GPU asked for) feed framework_cpu_build_gpu_expected
                      "paddle-cpu-build-asked-for-gpu", "nccl-maxsharedmem-exceeds",
                      "jax-cpu-jaxlib-on-gpu-host",  # a JAX with no CUDA plugin (issue 26): its facts feed the same rule
                      "tf-not-built-with-cuda",  # conda_cuda_label_contradicted reads it beside conda's CUDA-labelled build
                      # fwdoctor.rules.visibility's report-side rules read these (CUDA_VISIBLE_DEVICES, a container without GPUs)
                      *visibility.REPORT_KINDS,
                      # fwdoctor.rules.platform's report-side rules read these (issue 26: no AVX, old glibc, Rosetta)
                      "jaxlib-cpu-lacks-avx", "illegal-instruction", "glibc-version-not-found", "x86-python-on-apple-silicon",
                      "execstack-refused",
                      # fwdoctor.rules.windows' report-side rule reads these (windows-msvc-runtime-missing: which DLL)
                      "windows-dll-dependency-missing", "windows-dll-module-not-found", "torch-vc-redist-not-installed", "tf-msvc-dlls-not-found",
                      "tf-preload-check-msvcp-failed",
                      # ... and these (windows-pagefile-too-small: error 1455 in its three wordings)
                      *windows_rules.PAGEFILE_KINDS,
                      # image_driver_libs_said reads it (container-image-ships-driver-libs)
                      "nvidia-container-cli-lib-exists",
                      # fwdoctor.rules.hardware's report-side rule reads it (gpu-persistence-off, an error: no GPU container starts)
                      "nvidia-container-cli-driver-timeout",
                      # fwdoctor.triage.rdma reads these (rdma-memlock-too-low: a named limit is an error, a bare ENOMEM a warning)
                      *rdma.KINDS,
                      # fwdoctor.triage.ray_shm reads it (shm-too-small: only below the KB's /dev/shm floor)
                      *ray_shm.KINDS,
                      # fwdoctor.triage.container_shm reads it (shm-too-small as a warning: a worker's SIGBUS, size not shown)
                      *container_shm.KINDS,
                      # fwdoctor.triage.nccl_unreachable reads these (nccl-socket-connect-failed: the address tried, the bootstrap interface)
                      *nccl_unreachable.KINDS,
                      # fwdoctor.triage.nccl_gdr reads it (nccl-gdr-module-missing: silent beside "GPU Direct RDMA (DMABUF) enabled")
                      *nccl_gdr.KINDS,
                      # fwdoctor.triage.nccl_symbols reads it (nccl-shadowed, or nccl-cuda-mismatch beside NCCL wheels of two CUDA majors)
                      *nccl_symbols.KINDS,
                      # fwdoctor.triage.cuda_libs_shadowed reads it (framework-libs-shadowed: an error only beside the folder that won)
                      *cuda_libs_shadowed.KINDS,
                      # fwdoctor.triage.ext_build reads it (a setup.py's CUDA floor: ext-cuda-unsupported-by-project, torch-toolkit-mismatch)
                      *ext_build.KINDS,
                      # fwdoctor.triage.pip_conflicts reads it (framework-requirement-conflict: the version re-checked)
                      *pip_conflicts.KINDS})


def _from_rows() -> tuple[Rule, ...]:
    from fwdoctor.triage.errors import signatures
    from fwdoctor.triage.nccl_fabric import KINDS as NCCL_FABRIC_KINDS  # its own rules read these

    from fwdoctor.rules.report_text import REPORT_RULES

    # fwdoctor.rules.report_text reads its rows itself (a libstdc++ row names two findings by path)
    own = {r.id for r in REPORT_RULES}
    kinds: dict[str, list[str]] = {}
    for sig in signatures().signatures:
        if sig.id in _HANDLED or sig.id in NCCL_FABRIC_KINDS:
            continue
        for finding_id in (f for f in sig.findings if f not in own):
            kinds.setdefault(finding_id, []).append(sig.id)
    return tuple(_generic(finding_id, tuple(ids)) for finding_id, ids in kinds.items())


def _generic(finding_id: str, kinds: tuple[str, ...]) -> Rule:
    def said_by_the_report(facts: Facts, kb: KB) -> Hit | None:
        said = [e for kind in kinds for e in report_errors(facts, kind)]
        if not said:
            return None
        from fwdoctor.triage.errors import signatures

        sig = signatures().by_id(said[0]["kind"])
        program = sig.program if sig else "a program"
        return Hit(f"{program} says so in the report: {report_line(said[0])}", evidence={"report.errors": said})

    said_by_the_report.__doc__ = f"The report's own error text ({', '.join(kinds)}; doctor/kb/errors.yaml) (see {finding_id})."
    return rule(finding_id, needs=("report.errors",))(said_by_the_report)


RULES: tuple[Rule, ...] = (nvml_mismatch, image_driver_libs_said, driver_cuda_too_old, sm_incompatible, torch_no_kernel_below_every_release, unsupported_gnu, unsupported_arch, cudnn_undefined_symbol,
                           framework_cpu_build_gpu_expected, conda_cpu_pytorch_gpu_expected, conda_request_without_cuda_build, conda_cuda_libs_of_other_major, conda_cuda_label_contradicted, framework_no_kernel_for_cc, tf_kernels_for_cc_missing, *arch_floors.RULES,
                           conda_libstdcxx_not_found, cuda_pointers_disagree, framework_driver_insufficient,
                           framework_loaded_lib_mismatch, ptxas_newer_than_driver, cuda_lib_not_found, jax_cuda_lib_unloadable, tf_built_for_other_cuda, tf_cudart_not_found, nccl_ib_connect_failed, nccl_gpu_unsupported,
                           *driver_rules.REPORT_RULES, *hardware.REPORT_RULES, *platform.REPORT_RULES, *visibility.REPORT_RULES, *windows_rules.REPORT_RULES, *nccl_fabric.RULES,
                           *rdma.RULES, *ray_shm.RULES, *nccl_unreachable.RULES, *nccl_gdr.RULES,
                           *nccl_symbols.RULES,  # "undefined symbol: ncclXxx": an older NCCL in the process
                           *cuda_libs_shadowed.RULES,  # "undefined symbol: X, version libnvJitLink.so.12": a system CUDA's library before the wheel's
                           *nccl_nodes.RULES,  # NCCL logs of several hosts with different NCCL releases
                           *nccl_cuda_prose.RULES,  # the report says in words which CUDA its NCCL is built for
                           *conda_no_cuda.RULES,  # conda info without __cuda beside the solver refusing a CUDA package
                           *conda_cpu_solved.RULES,  # conda asked for a CUDA pytorch; the torch shown is a CPU build
                           *torch_companions.RULES,  # torchvision/torchaudio listed beside a torch they were not built for
                           *ext_wheels.RULES,  # a prebuilt extension wheel (flash-attn, PyG, detectron2) for another torch, CUDA or C++ ABI
                           *ext_build.RULES,  # a setup.py refusing CUDA_HOME's nvcc below its floor (issue 26, build-ext)
                           *build_memory.RULES,  # memory exhausted (top, free) while an extension compiled (issue 26, build-ext)
                           *cudnn_cuda.RULES,  # a cuDNN archive/package/copy for another CUDA major than the program runs
                           *lib_missing_prose.RULES,  # the report's own words: the program finds no cuDNN (a warning)
                           *pip_conflicts.RULES)  # pip: a framework's own requirement broken by a later install

# Finding ids whose regular rule sees only part of what the error text speaks of, so that
# fwdoctor.triage.judge runs the rows' rule even where the regular one was checked on the
# report's facts and passed: JAX's print_environment_info lists jax and jaxlib but no CUDA
# plugin (issue 26: jax 0.4.35 = jaxlib 0.4.35 shown, while the plugin's own traceback shows it
# is of another release). Elsewhere a fact shown beats the text (a big /dev/shm shown wins over
# NCCL's shared-memory error, tests/test_triage_readers_env.py).
# The extension-build pre-flight's ids (`fwdoctor build ext`) have rules triage never runs (no
# pasted text holds ext.source or build.toolkit): a project's own refusal in the text judges them.
_TEXT_OVER_FACTS = frozenset({"framework-packages-mismatched", "ext-arch-unsupported-by-project"})
_ROW_RULES = _from_rows()
# conda_cuda_label_contradicted reads the framework's own answer, which the regular rule (the
# KB's known-broken builds on the same conda.packages) does not: it runs where that one passed.
# tf_kernels_for_cc_missing likewise: TensorFlow's failed JIT beats the regular rule's "compute_90
# PTX runs on a 12.0 GPU" (RTX 50 GPUs under TensorFlow 2.16-2.20 fail with CUDA_ERROR_INVALID_PTX).
TEXT_RULES: tuple[Rule, ...] = (*(r for r in _ROW_RULES if r.id in _TEXT_OVER_FACTS), conda_cuda_label_contradicted, tf_kernels_for_cc_missing)
# container_shm's warnings come last: a row that shows the size or names the failed call
# (nccl-shm-segment, dataloader-bus-error-shm) raises shm-too-small first (judge keeps one per id).
RULES = (*RULES, *_ROW_RULES, *container_shm.RULES)
