"""Rules of the extension-build pre-flight: would `fwdoctor build ext SPEC` compile an
extension that loads into the installed torch, for the arches asked, without being killed?

They read the facts of doctor/probes/build_ext.py (`ext.*`, and the `build.*` ones shared with
`build torch`: toolkit, arch, compilers, Python, ninja, cores, memory, disk) and the project's
row in doctor/kb/extensions.yaml. Two rules of `build torch` judge the same things here by the
same ids (host-compiler-unsupported, gpu-arch-unsupported-by-toolkit): RULES lists them too.

Two findings carry decisions the plan follows: host-compiler-unsupported as info names the
g++ to use as CUDAHOSTCXX (evidence "using"), and ext-prebuilt-wheel names the wheel that
would fit (evidence "wheel") or why none does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from packaging.version import InvalidVersion, Version

from fwdoctor.arch import parse_targets
from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules import build as build_rules
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule
from fwdoctor.versions import parse_version

if TYPE_CHECKING:
    from fwdoctor.kb import KB
    from fwdoctor.kb.extensions import Project

GIB = 1024**3
# A project without a KB row: one nvcc job of a few template-heavy .cu files (unverified;
# the measured causal-conv1d row is ~1-2 GiB, flash-attn's 5).
DEFAULT_GIB_PER_JOB = 4.0
DEFAULT_DISK_GIB = 4.0
# torch/utils/cpp_extension.py _check_cuda_version: a major mismatch raises this.
TORCH_CUDA_ERROR = "The detected CUDA version ({nvcc}) mismatches the version that was used to compile PyTorch ({torch}). Please make sure to use the same CUDA versions."


def project_row(facts: Facts, kb: KB) -> Project | None:
    source = facts["ext.source"]
    version = source.get("version")
    try:
        return kb.extensions.project(str(source.get("name")), str(version) if version else None)
    except InvalidVersion:
        return None


def requested_ccs(facts: Facts) -> list[str]:
    arch = facts["build.arch"]
    try:
        return sorted({t.cc for t in parse_targets(str(arch.get("list")))}, key=Version)
    except (ValueError, InvalidVersion) as exc:
        raise NotCheckable(f"cannot read the arch list {arch.get('list')!r}: {exc}") from None


def _arch_from(facts: Facts) -> str:
    """Where the arch list came from: --gpu NAME reaches the arch probe as an --arch list."""
    where = str(facts["build.arch"].get("from"))
    return str(facts.get("request.ext.arch_from") or where) if where == "--arch" else where


def gib_per_job(facts: Facts, kb: KB) -> tuple[float, str]:
    row = project_row(facts, kb)
    if row is None:
        return DEFAULT_GIB_PER_JOB, "no KB row for this project: fwdoctor's default"
    return row.gib_per_job, f"doctor/kb/extensions.yaml, {row.name} {row.versions}"


def jobs_for(facts: Facts, kb: KB) -> tuple[int, str]:
    """MAX_JOBS: --jobs, else the cores, capped so that every job gets its memory."""
    asked = facts.get("request.ext.jobs")
    if asked:
        return int(asked), "--jobs"
    per_job, _ = gib_per_job(facts, kb)
    cores = facts.get("build.cores") or 1
    mem = facts.get("build.mem_available_bytes")
    by_mem = int(mem // (per_job * GIB)) if mem else cores
    return max(1, min(cores, by_mem)), f"cores ({cores}), capped at {per_job:g} GiB of available memory per job"


# ----------------------------------------------------------------------------- rules
@rule("ext-torch-unusable", needs=("ext.torch",))
def torch_unusable(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Checks that the target interpreter imports a torch built with CUDA, the torch the
        extension is compiled against and loads into.

    Why is this bad?
        Without torch the build stops at `import torch` in setup.py ("ModuleNotFoundError:
        No module named 'torch'"); with a CPU torch, torch's cpp_extension finds no CUDA
        ("CUDA_HOME environment variable is not set" or a build of no kernels).

    Example
        `fwdoctor build ext flash-attn==2.8.3 --python /usr/bin/python3` where torch lives in a venv.

    Fix
        Name the interpreter that has the CUDA torch (--python, or activate its venv), or
        install one first:
            fwdoctor install torch
    """
    torch = facts["ext.torch"]
    if torch.get("error"):
        return Hit(f"{torch['error']}: the extension needs the torch it will load into", evidence={"ext.torch": torch},
                   fix=FixRef(note="pass --python for the environment that has torch, or install a CUDA torch there first"))
    if not torch.get("cuda"):
        kind = f"ROCm/HIP ({torch['hip']})" if torch.get("hip") else "CPU-only"
        return Hit(f"torch {torch.get('version')} is {kind}: there is no CUDA torch to compile a CUDA extension against",
                   evidence={"ext.torch": torch})
    return None


@rule("ext-cuda-mismatch", needs=("ext.torch", "build.toolkit"))
def cuda_mismatch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the release of the nvcc that would compile (CUDA_HOME, else the nvcc on
        PATH: the one torch's cpp_extension picks) with the CUDA torch was built with.

    Why is this bad?
        torch's cpp_extension refuses a different major before compiling anything: "The
        detected CUDA version (11.8) mismatches the version that was used to compile
        PyTorch (12.1). Please make sure to use the same CUDA versions." A different minor
        only warns, and the extension then needs the newer runtime at load time.

    Example
        torch 2.14.1+cu130 with CUDA_HOME=/usr/local/cuda-12.8.

    Fix
        Point CUDA_HOME at a toolkit of torch's CUDA major (install one if missing):
            CUDA_HOME=/usr/local/cuda-13.0 fwdoctor build ext ...
    """
    torch, toolkit = facts["ext.torch"], facts["build.toolkit"]
    tv, nv = parse_version(torch.get("cuda")), parse_version(toolkit.get("release"))
    if tv is None or nv is None:
        raise NotCheckable(f"cannot compare CUDA releases {torch.get('cuda')!r} and {toolkit.get('release')!r}")
    if tv.major != nv.major:
        error = TORCH_CUDA_ERROR.format(nvcc=toolkit.get("release"), torch=torch.get("cuda"))
        return Hit(f"nvcc {toolkit.get('release')} ({toolkit.get('nvcc')}, from {toolkit.get('from', 'CUDA_HOME')}) is not torch {torch.get('version')}'s CUDA {torch.get('cuda')}: "
                   f"torch's cpp_extension stops with \"{error}\"",
                   evidence={"nvcc": toolkit.get("release"), "torch_cuda": torch.get("cuda")},
                   fix=FixRef(note=f"set CUDA_HOME to a CUDA {tv.major}.x toolkit (CUDA {tv.major}.{tv.minor} matches torch)"))
    if (tv.major, tv.minor) != (nv.major, nv.minor):
        return Hit(f"nvcc {toolkit.get('release')} and torch's CUDA {torch.get('cuda')} differ in the minor: torch warns and builds; "
                   f"the extension then needs a driver and runtime of the newer of the two",
                   evidence={"nvcc": toolkit.get("release"), "torch_cuda": torch.get("cuda")}, severity=Severity.WARNING)
    return None


@rule("ext-project-unknown", needs=("ext.source",))
def project_unknown(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Says when doctor/kb/extensions.yaml has no row for the project and release being
        built: its supported arches, CUDA floor and memory per job are then not checked.

    Why is this bad?
        An unknown is not a pass: the build may run for an hour and produce kernels the
        project never meant for that GPU, or be killed for memory.

    Example
        `fwdoctor build ext xformers==0.0.30 --arch 9.0`.

    Fix
        Check the project's setup.py for its -gencode list and force-build variable, or add
        a sourced row to doctor/kb/extensions.yaml.
    """
    if project_row(facts, kb) is not None:
        return None
    source = facts["ext.source"]
    known = ", ".join(kb.extensions.names()) or "none"
    return Hit(f"no data for {source.get('name')} {source.get('version') or '(any version)'} in the KB (projects with rows: {known}): "
               f"its supported arches, CUDA floor and memory per job are not checked",
               evidence={"project": source.get("name"), "version": source.get("version")})


@rule("ext-arch-unsupported-by-project", needs=("ext.source", "build.arch", "build.toolkit"), optional=("request.ext.arch_from",))
def arch_unsupported_by_project(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Checks every requested arch against the arches the project's setup.py compiles for
        with this nvcc (doctor/kb/extensions.yaml `archs`).

    Why is this bad?
        The kernels are written for those arches: flash-attn 2 needs sm_80 or newer and on a
        V100 (7.0) fails at the first call ("FlashAttention only supports Ampere GPUs or
        newer."); an arch outside the list gets no kernel, and the import works until the
        first call ("no kernel image is available for execution on the device").

    Example
        `fwdoctor build ext flash-attn==2.8.3` on a host with V100s (7.0).

    Fix
        Build for an arch the project supports, or use another implementation on that GPU
        (for attention, torch's own scaled_dot_product_attention).
    """
    row = project_row(facts, kb)
    if row is None:
        raise NotCheckable(f"no data for {facts['ext.source'].get('name')} in doctor/kb/extensions.yaml")
    release = str(facts["build.toolkit"].get("release"))
    supported = row.archs_for(release)
    if supported is None:
        raise NotCheckable(f"{row.name}'s KB row lists no arch set its setup.py fixes"
                           + (f" ({row.notes[0]})" if row.notes else ""))
    bad = [cc for cc in requested_ccs(facts) if cc not in supported]
    if not bad:
        return None
    return Hit(f"{row.name} {facts['ext.source'].get('version') or ''} builds for {', '.join(supported)} with nvcc {release}, "
               f"not for {', '.join(bad)} (from {_arch_from(facts)})".replace("  ", " "),
               evidence={"project": row.name, "asked": bad, "supported": supported},
               fix=FixRef(note=f"build for one of {', '.join(supported)}, or use another implementation on {', '.join(bad)}"))


@rule("ext-cuda-unsupported-by-project", needs=("ext.source", "build.toolkit"))
def cuda_unsupported_by_project(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Checks the nvcc release against the oldest the project's setup.py accepts.

    Why is this bad?
        setup.py stops before compiling: "FlashAttention is only supported on CUDA 11.6 and
        above.  Note: make sure nvcc has a supported version by running nvcc -V."

    Example
        flash-attn 2 with CUDA_HOME=/usr/local/cuda-11.3.

    Fix
        Point CUDA_HOME at a newer toolkit of torch's CUDA major.
    """
    row = project_row(facts, kb)
    if row is None:
        raise NotCheckable(f"no data for {facts['ext.source'].get('name')} in doctor/kb/extensions.yaml")
    release = parse_version(facts["build.toolkit"].get("release"))
    if release is None:
        raise NotCheckable(f"cannot read the toolkit release {facts['build.toolkit'].get('release')!r}")
    if row.min_cuda is None:
        raise NotCheckable(f"{row.name}'s KB row has no oldest nvcc read from its setup.py")
    if release >= Version(row.min_cuda):
        return None
    return Hit(f"{row.name} needs nvcc {row.min_cuda} or newer; the toolkit is {release}",
               evidence={"project": row.name, "min_cuda": row.min_cuda, "nvcc": str(release)})


@rule("ext-jobs-exceed-memory", needs=("build.mem_available_bytes", "ext.source"), optional=("request.ext.jobs", "build.cores"))
def jobs_exceed_memory(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the memory the compile jobs need (MAX_JOBS times the project's peak per
        nvcc job, doctor/kb/extensions.yaml) with the memory available now.

    Why is this bad?
        Every job is an nvcc whose cicc and ptxas take GBs; too many at once and the OOM
        killer ends the build ("Killed", "c++: fatal error: Killed signal terminated program
        cc1plus"), often taking the session with it.

    Example
        `--jobs 16` for flash-attn (5 GiB per job) on a host with 32 GiB available.

    Fix
        Drop --jobs (fwdoctor then caps MAX_JOBS by memory), or give a smaller number.
    """
    per_job, where = gib_per_job(facts, kb)
    mem = int(facts["build.mem_available_bytes"])
    asked = facts.get("request.ext.jobs")
    jobs = int(asked) if asked else 1
    need = jobs * per_job * GIB
    if need <= mem:
        return None
    fits = max(0, int(mem // (per_job * GIB)))
    say = f"--jobs {jobs}" if asked else "one compile job"
    return Hit(f"{say} needs ~{need / GIB:.0f} GiB ({per_job:g} GiB per job, {where}); {mem / GIB:.1f} GiB is available"
               + (f": at most --jobs {fits}" if fits else ""),
               evidence={"jobs": jobs, "gib_per_job": per_job, "available_bytes": mem, "fits": fits},
               fix=FixRef(note=f"use --jobs {fits}" if fits else "free memory or build on a larger host"))


@rule("ext-python-headers-missing", needs=("ext.torch",))
def python_headers_missing(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Checks that the target interpreter's include folder holds Python.h.

    Why is this bad?
        The first C++ file stops with "fatal error: Python.h: No such file or directory".

    Example
        A Debian/Ubuntu system Python without python3-dev.

    Fix
        Install the headers for that Python:
            sudo apt-get install python3-dev
    """
    torch = facts["ext.torch"]
    if torch.get("python_h") is None:
        raise NotCheckable("the interpreter did not say where its headers are")
    if torch["python_h"]:
        return None
    return Hit(f"no Python.h in {torch.get('include')}: \"fatal error: Python.h: No such file or directory\"",
               evidence={"include": torch.get("include")}, fix=FixRef(commands=("sudo apt-get install python3-dev",)))


@rule("ext-ninja-missing", needs=("build.ninja", "build.python"))
def ninja_missing(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Looks for ninja beside the target interpreter and on PATH.

    Why is this bad?
        Without it torch's cpp_extension warns "Attempted to use ninja as the BuildExtension
        backend but we could not find ninja.. Falling back to using the slow distutils
        backend." and compiles one file at a time, ignoring MAX_JOBS.

    Example
        A fresh venv with torch but not ninja.

    Fix
        Install ninja into the target environment:
            PY -m pip install ninja
    """
    if facts["build.ninja"]:
        return None
    py = (facts["build.python"] or {}).get("executable") or "python"
    return Hit("no ninja beside the interpreter or on PATH: torch falls back to compiling one file at a time",
               fix=FixRef(commands=(f"{py} -m pip install ninja",)))


@rule("ext-disk-low", needs=("build.disk_free", "ext.source"))
def disk_low(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the free disk where the build writes with what the project's build needs.

    Why is this bad?
        The build stops late with "No space left on device", leaving partial objects.

    Example
        A 2 GiB /tmp for a flash-attn build.

    Fix
        Free space or pass --workdir on a larger disk.
    """
    row = project_row(facts, kb)
    need = (row.disk_gib if row else DEFAULT_DISK_GIB) * GIB
    free = facts["build.disk_free"]
    if free["bytes"] >= need:
        return None
    return Hit(f"{free['bytes'] / GIB:.1f} GiB free at {free['checked_at']}; the build needs ~{need / GIB:.0f} GiB",
               evidence={"free": free["bytes"], "need": need}, fix=FixRef(note="free space, or pass --workdir on a larger disk"))


@rule("ext-prebuilt-wheel", needs=("ext.source", "ext.torch"), optional=("build.arch",))
def prebuilt_wheel(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Names the prebuilt wheel the project publishes for this torch (major.minor), its
        CUDA, C++ ABI flag and Python, as its setup.py would fetch it, or says why none fits.

    Why is this bad?
        A wheel that fits saves the whole build; one that does not (another torch minor, the
        other ABI) fails at import with "undefined symbol: _ZN3c10...".

    Example
        causal-conv1d 1.7.0 for torch 2.14.1+cu130, cp311, C++11 ABI:
        causal_conv1d-1.7.0+cu13torch2.14cxx11abiTRUE-cp311-cp311-linux_x86_64.whl.

    Fix
        Try the named wheel first (`pip install URL`); build when it does not exist.
    """
    row = project_row(facts, kb)
    if row is None:
        raise NotCheckable(f"no data for {facts['ext.source'].get('name')} in doctor/kb/extensions.yaml")
    if row.wheels is None:
        if row.wheels_unknown:
            return Hit(f"{row.name}: its prebuilt wheels' naming is not in the KB ({row.wheels_unknown}): none is named", evidence={"wheel": None})
        return Hit(f"{row.name} publishes no prebuilt wheels: it is built from source", evidence={"wheel": None})
    source, torch = facts["ext.source"], facts["ext.torch"]
    if not source.get("version"):
        return Hit(f"{row.name}: no version given, so no prebuilt wheel can be named (give NAME==VERSION)", evidence={"wheel": None})
    if not torch.get("cuda") or not torch.get("version") or torch.get("cxx11_abi") is None:
        raise NotCheckable("torch's version, CUDA or C++ ABI flag is unknown")
    url = row.wheel_name(str(source["version"]), str(torch["version"]).split("+")[0], str(torch["cuda"]), bool(torch["cxx11_abi"]), str(torch.get("python")))
    if url is None:
        majors = ", ".join(f"CUDA {m}" for m in sorted(row.wheels.cuda))
        return Hit(f"none fits: {row.name}'s prebuilt wheels are named for {majors}, and torch {torch['version']} is CUDA {torch['cuda']}"
                   + (f" ({row.notes[0]})" if row.notes else ""), evidence={"wheel": None})
    published = f"; {row.wheels.published}" if row.wheels.published else ""
    archs = f"; its kernels are {row.name}'s full list, not only the arch asked" if row.arch_choice == "gencode-in-setup" else ""
    return Hit(f"the prebuilt wheel that would fit torch {torch['version']} (C++11 ABI {torch['cxx11_abi']}, {torch.get('python')}): {url}{published}{archs}",
               evidence={"wheel": url}, fix=FixRef(commands=(f"{(facts.get('build.python') or {}).get('executable') or 'python'} -m pip install {url}",)))


@rule("ext-not-checked", needs=("request.ext.spec",))
def not_checked(facts: Facts, kb: KB) -> Iterable[Hit]:
    """What it does
        Lists each extension pre-flight check that could not be made, with why.

    Why is this bad?
        An unknown is not a pass: the build may fail where the check would have caught it.

    Example
        `fwdoctor build ext ./my-ext` with a torch that does not import: the CUDA and ABI
        checks are not checked.

    Fix
        Check the named item by hand before the build (the message says what is unknown).
    """
    return build_rules.not_checked_hits(facts, kb, RULES, skip=(not_checked, project_unknown))


# Every rule of the extension pre-flight, as `fwdoctor build ext` judges them.
RULES: tuple[Rule, ...] = (
    torch_unusable,
    cuda_mismatch,
    build_rules.host_compiler,
    build_rules.arch_unsupported,
    project_unknown,
    arch_unsupported_by_project,
    cuda_unsupported_by_project,
    jobs_exceed_memory,
    python_headers_missing,
    ninja_missing,
    disk_low,
    prebuilt_wheel,
    not_checked,
)
