"""Rules of the source-build pre-flight: would `fwdoctor build torch` with these choices
(toolkit, arch list, NCCL, cuDNN, Python, tools, disk, memory) fail hours in?

They read the build's facts (`build.*`, doctor/probes/build.py) and what was asked
(`request.build.*`); on a plain `fwdoctor check` no build was asked, so they are "not
checked". The build reuses four ids of `check` for the same failure on the build's own
choices (host-compiler-unsupported, gpu-arch-unsupported-by-toolkit, nccl-cuda-mismatch,
cudnn-cuda-mismatch); those four rules are in RULES here only, not in `check`'s list,
where they would be "not checked" beside the rules that checked the host.

Two findings carry decisions the plan follows: host-compiler-unsupported as info names
the g++ to use as CUDAHOSTCXX (evidence "using"), and build-tool-installed names what the
plan pip-installs (evidence "install").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from packaging.version import InvalidVersion, Version

from fwdoctor.arch import parse_targets
from fwdoctor.libraries import library
from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, NotCheckable, Rule, raise_rule_errors, rule, sh
from fwdoctor.versions import parse_version

if TYPE_CHECKING:
    from fwdoctor.kb import KB

GIB = 1024**3


# ----------------------------------------------------------------------------- helpers
def _release(toolkit: dict[str, Any]) -> str:
    return str(toolkit.get("release"))


def _cuda_major(toolkit: dict[str, Any]) -> int:
    version = parse_version(toolkit.get("release"))
    if version is None:
        raise NotCheckable(f"cannot read the toolkit's release {toolkit.get('release')!r}")
    return version.major


def _gcc_major(version: Any) -> int | None:
    parsed = parse_version(version)
    return None if parsed is None else parsed.major


def _fits(version: Any, lo: int | None, hi: int | None) -> bool:
    major = _gcc_major(version)
    return major is not None and (lo is None or major >= lo) and (hi is None or major <= hi)


def _bound_text(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"gcc {lo} to {hi}"
    return f"gcc <= {hi}" if hi is not None else f"gcc >= {lo}"


def _header(toolkit: dict[str, Any]) -> str:
    return str(toolkit.get("host_config") or f"{toolkit.get('root')}/include/crt/host_config.h")


# ----------------------------------------------------------------------------- rules
@rule("build-torch-unsupported", needs=("build.torch",))
def torch_unsupported(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Checks that the knowledge base knows how the requested torch version reads its
        build variables (doctor/kb/build.yaml `min_torch`).

    Why is this bad?
        Setting the wrong variables silently builds with the bundled NCCL, without cuDNN,
        or against the wrong Python: the build succeeds and the wheel is not what was asked.

    Example
        `fwdoctor build torch --version 1.13.1 ...` (build.yaml starts at 2.0).

    Fix
        Build a version listed in doctor/kb/build.yaml, or add a row for it with its source.
    """
    torch = facts["build.torch"]
    if kb.build.supported(torch):
        return None
    return Hit(
        f"torch {torch} is older than {kb.build.min_torch}, the oldest version this recipe knows how to configure",
        evidence={"build.torch": torch, "min_torch": kb.build.min_torch},
    )


@rule("build-input-missing", needs=("build.host_cxx", "build.nccl", "build.cudnn", "build.ccache", "build.git", "build.source", "request.build.ccache"))
def input_missing(facts: Facts, kb: KB) -> Iterable[Hit]:
    """What it does
        Reports a tool or input the build cannot start without: a C++ compiler for nvcc,
        git to clone PyTorch (unless --source), ccache with --ccache, and the headers and
        library of an --nccl/--cudnn given as a path.

    Why is this bad?
        The build would stop minutes or hours in, far from the cause: "CMake Error: ...
        No CMAKE_CXX_COMPILER could be found", "Could NOT find NCCL (missing:
        NCCL_INCLUDE_DIR NCCL_LIBRARY)".

    Example
        A fresh image with gcc but no g++; `--nccl /opt/nccl` pointing at a folder that only
        holds the license file.

    Fix
        Install the named tool (the finding gives the command), or point the option at a
        real install:
            sudo apt-get install g++ git
    """
    hits: list[Hit] = []
    if facts["build.host_cxx"] is None:
        hits.append(Hit("no C++ compiler (g++) on PATH; nvcc needs a host compiler", fix=FixRef(commands=("sudo apt-get install g++",))))
    for lib in ("nccl", "cudnn"):
        choice = facts[f"build.{lib}"] or {}
        if choice.get("kind") == "path" and not (choice.get("include_dir") and choice.get("library_file")):
            hits.append(Hit(f"--{lib} {choice.get('path')}: no {library(lib).title} headers and library found there (looked for include/ and lib/)",
                            evidence={f"build.{lib}": choice}))
    if facts["request.build.ccache"] and not facts["build.ccache"]:
        hits.append(Hit("--ccache: no ccache on PATH", fix=FixRef(commands=("sudo apt-get install ccache",))))
    if facts["build.source"] is None and not facts["build.git"]:
        hits.append(Hit("no git on PATH to clone PyTorch (or pass --source DIR)", fix=FixRef(commands=("sudo apt-get install git",))))
    return hits


@rule("host-compiler-unsupported", needs=("build.toolkit", "build.host_cxx"), optional=("build.gxx_installed",))
def host_compiler(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the C++ compiler the build's nvcc will use ($CUDAHOSTCXX, else the g++ on
        PATH) with the range the chosen toolkit's crt/host_config.h accepts. When another
        installed g++-N fits, the build uses it as CUDAHOSTCXX (info); otherwise the build
        is refused.

    Why is this bad?
        nvcc stops at the first CUDA file: "#error -- unsupported GNU version! gcc versions
        later than 14 are not supported!", typically an hour into a PyTorch build.

    Example
        `--cuda 12.6` (accepts gcc <= 13) on Ubuntu 24.10, whose g++ is 14; with g++-13
        installed the build sets CUDAHOSTCXX=/usr/bin/g++-13.

    Fix
        Install a supported g++ (it is picked up as CUDAHOSTCXX), or choose another --cuda:
            sudo apt-get install g++-13
    """
    toolkit, cxx = facts["build.toolkit"], facts["build.host_cxx"]
    lo, hi = toolkit.get("host_gcc_min"), toolkit.get("host_gcc_max")
    header = _header(toolkit)
    if lo is None and hi is None:
        raise NotCheckable(f"no GNU version bound found in {header}")
    if cxx is None:
        return None  # no compiler at all: build-input-missing
    version = cxx.get("version")
    if _gcc_major(version) is None:
        raise NotCheckable(f"the version of host compiler {cxx.get('path')} is unknown, so it is not compared with nvcc {_release(toolkit)}")
    if _fits(version, lo, hi):
        return None
    bound = _bound_text(lo, hi)
    fits = [g for g in facts.get("build.gxx_installed") or [] if _fits(g.get("version"), lo, hi)]
    if fits and cxx.get("from") != "CUDAHOSTCXX":  # a compiler the user chose is not swapped
        best = max(fits, key=lambda g: parse_version(g["version"]) or Version("0"))
        return Hit(
            f"{cxx['path']} is gcc {version}, but nvcc {_release(toolkit)} accepts {bound} ({header}); "
            f"using CUDAHOSTCXX={best['path']} (gcc {best['version']})",
            evidence={"host_cxx": cxx["path"], "version": version, "using": best["path"]},
            severity=Severity.INFO,
        )
    return Hit(
        f"{cxx['path']} is gcc {version}, but nvcc {_release(toolkit)} accepts {bound} ({header}): \"unsupported GNU version!\"",
        evidence={"host_cxx": cxx["path"], "version": version, "gcc_min": lo, "gcc_max": hi},
        fix=FixRef(note="install a supported g++ (e.g. g++-N) and it is picked up as CUDAHOSTCXX, or choose another --cuda"),
    )


@rule("gpu-arch-unsupported-by-toolkit", needs=("build.toolkit", "build.arch"))
def arch_unsupported(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Checks every target of the build's arch list (--arch, or this host's GPUs with
        --arch auto) against what the chosen nvcc compiles for: its `nvcc --list-gpu-arch`,
        else the knowledge base (sm_86 needs CUDA 11.1; Maxwell to Volta, sm_50-72, were
        removed in 13.0).

    Why is this bad?
        The build stops at the first CUDA file: "nvcc fatal : Unsupported gpu architecture
        'compute_70'".

    Example
        `--cuda 13.0 --arch "7.0;8.0"` for a cluster that still has V100s.

    Fix
        Drop those targets from --arch, or choose a --cuda that still supports them:
            fwdoctor build torch --cuda 12.8 --arch "7.0;8.0" ...
    """
    toolkit, arch = facts["build.toolkit"], facts["build.arch"]
    release = _release(toolkit)
    try:
        ccs = sorted({t.cc for t in parse_targets(str(arch.get("list")))}, key=Version)
    except (ValueError, InvalidVersion) as exc:
        raise NotCheckable(f"cannot read the arch list {arch.get('list')!r}: {exc}") from None
    listed = toolkit.get("gpu_archs")
    bad: list[str] = []
    unknown: list[str] = []
    for cc in ccs:
        if listed is not None:
            if cc not in listed:
                bad.append(cc)
            continue
        try:
            verdict = kb.cuda.nvcc_supports(release, cc)
        except (ValueError, LookupError):  # a broken cuda.yaml costs this check only
            verdict = None
        if verdict is False:
            bad.append(cc)
        elif verdict is None:
            unknown.append(cc)
    missing = f"nvcc {release} gave no --list-gpu-arch and the knowledge base has no row for {', '.join(unknown)}"
    if not bad:
        if unknown:
            raise NotCheckable(missing)
        return None
    have = ", ".join(listed) if listed else "see nvcc --list-gpu-arch"
    also = f"; not checked for {', '.join(unknown)} ({missing})" if unknown else ""
    return Hit(
        f"nvcc {release} ({toolkit.get('nvcc')}) cannot compile for {', '.join(bad)} from {arch.get('from')} "
        f"(\"nvcc fatal : Unsupported gpu architecture 'compute_{bad[0].replace('.', '')}'\"); it supports {have}{also}",
        evidence={"arch_list": arch.get("list"), "unsupported": bad, **({"not_checked": unknown} if unknown else {})},
        fix=FixRef(note="drop those targets from --arch, or choose a --cuda that still supports them"),
    )


def _lib_mismatch(facts: Facts, lib: str) -> Hit | None:
    choice, toolkit = facts[f"build.{lib}"], facts["build.toolkit"]
    if choice.get("kind") != "path" or not (choice.get("include_dir") and choice.get("library_file")):
        return None  # a pip wheel is fetched for the toolkit's major; a bad path is build-input-missing
    spec, path = library(lib), choice["library_file"]
    name = spec.title
    major = _cuda_major(toolkit)
    if choice.get("cuda_major") is None:
        raise NotCheckable(f"the CUDA major {name} at {path} was built for is unknown, so it is not compared with CUDA {_release(toolkit)}")
    if int(choice["cuda_major"]) == major:
        return None
    version = f" {choice['version']}" if choice.get("version") else ""
    return Hit(
        f"{name}{version} at {path} is built for CUDA {choice['cuda_major']} ({choice.get('cuda_major_source')}), "
        f"the toolkit is CUDA {_release(toolkit)}",
        evidence={"library": path, "cuda_major": choice["cuda_major"], "toolkit": _release(toolkit)},
        fix=FixRef(note=f"use a {name} built for CUDA {major} (e.g. --{lib} VERSION fetches {spec.wheel_for(major)})"),
    )


@rule("nccl-cuda-mismatch", needs=("build.nccl", "build.toolkit"))
def nccl_mismatch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the CUDA major the NCCL given by --nccl PATH was built for (the "NCCL
        version 2.27.5+cuda12.9" string inside libnccl, a pip dist-info name, or a
        toolkit-like folder name) with the chosen toolkit's.

    Why is this bad?
        torch links against it and loads it at run time: an NCCL of another CUDA major
        fails with "undefined symbol" errors or "NCCL error: unhandled cuda error" at the
        first collective, after hours of building.

    Example
        `--cuda 12.8 --nccl ~/venv/lib/python3.12/site-packages` holding nvidia-nccl-cu13.

    Fix
        Use an NCCL built for the toolkit's CUDA major; a version fetches the right wheel:
            fwdoctor build torch --cuda 12.8 --nccl 2.27.5 ...
    """
    return _lib_mismatch(facts, "nccl")


@rule("cudnn-cuda-mismatch", needs=("build.cudnn", "build.toolkit"))
def cudnn_mismatch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the CUDA major the cuDNN given by --cudnn PATH was built for (a pip
        dist-info name such as nvidia_cudnn_cu12, or a toolkit-like folder name) with the
        chosen toolkit's.

    Why is this bad?
        cuDNN of another CUDA major links, then fails at run time: "undefined symbol" or
        CUDNN_STATUS_NOT_SUPPORTED from the first convolution.

    Example
        `--cuda 13.0 --cudnn /usr/local/cuda-12.4` (a cuDNN tarball copied into an old toolkit).

    Fix
        Use a cuDNN built for the toolkit's CUDA major; a version fetches the right wheel:
            fwdoctor build torch --cuda 13.0 --cudnn 9.14.0.64 ...
    """
    return _lib_mismatch(facts, "cudnn")


@rule("build-no-wheel", needs=("build.toolkit", "build.nccl", "build.cudnn"))
def no_wheel(facts: Facts, kb: KB) -> Iterable[Hit]:
    """What it does
        Checks that an NCCL or cuDNN given by version exists as the nvidia-<lib>-cu<major>
        pip wheel for the chosen toolkit's CUDA major (doctor/kb/build.yaml `pip_wheels`).

    Why is this bad?
        The plan fetches it with pip: "ERROR: No matching distribution found for
        nvidia-nccl-cu13==2.27.5". Fetching another CUDA major's wheel instead would give
        undefined symbols at run time.

    Example
        `--cuda 13.0 --nccl 2.27.5` (the first nvidia-nccl-cu13 is 2.27.7).

    Fix
        Pick a version that exists for that CUDA major, or pass the path of an install:
            pip index versions nvidia-nccl-cu13
    """
    major = _cuda_major(facts["build.toolkit"])
    hits: list[Hit] = []
    for lib in ("nccl", "cudnn"):
        choice = facts[f"build.{lib}"] or {}
        if choice.get("kind") != "pip":
            continue
        spec, version = library(lib), parse_version(choice.get("version"))
        name = spec.title
        wheel = kb.build.pip_wheel(lib, major)
        if wheel is None:
            hits.append(Hit(f"no pip wheel of {name} for CUDA {major} is known ({spec.wheel_for(major)})",
                            fix=FixRef(note=f"pass --{lib} PATH to an install built for CUDA {major}")))
        elif version is None or version < Version(wheel.first) or (wheel.last and version > Version(wheel.last)):
            span = f"{wheel.first} to {wheel.last}" if wheel.last else f"{wheel.first} and later"
            hits.append(Hit(f"{wheel.package}=={choice.get('version')} does not exist: PyPI has {wheel.package} {span}",
                            evidence={"package": wheel.package, "version": choice.get("version")},
                            fix=FixRef(note=f"choose a {name} version in that range, or pass --{lib} PATH")))
    return hits


@rule("build-python-unusable", needs=("build.python",))
def python_unusable(facts: Facts, kb: KB) -> Iterable[Hit]:
    """What it does
        Checks that --python runs, has pip, and is a virtual or conda environment.

    Why is this bad?
        CMake and setup.py build against the interpreter that runs them; a broken one stops
        the build, one without pip cannot take the build requirements or the wheel, and a
        system interpreter gets both installed into itself (the classic: CMake picking
        /usr/bin/python3 instead of the venv builds a wheel for the wrong Python).

    Example
        `--python /usr/bin/python3` on Debian, where pip is not installed and the
        interpreter is the operating system's.

    Fix
        Pass the interpreter of a working environment with pip:
            python3 -m venv ~/venvs/torch-build && ~/venvs/torch-build/bin/python -m pip install -U pip
    """
    py = facts["build.python"]
    exe = py.get("executable")
    if py.get("error"):
        return [Hit(f"--python {exe}: {py['error']}", evidence={"build.python": py})]
    hits: list[Hit] = []
    if py.get("has_pip") is False:
        hits.append(Hit(f"--python {exe} has no pip; the build requirements and the wheel go in with pip",
                        fix=FixRef(commands=(f"{sh(exe)} -m ensurepip --upgrade",))))
    if not py.get("isolated"):
        hits.append(Hit(
            f"--python {exe} is not a virtual or conda environment (prefix {py.get('prefix')}); the build requirements "
            f"and the new torch would be installed into that interpreter itself",
            fix=FixRef(commands=("python3 -m venv ~/venvs/torch-build && ~/venvs/torch-build/bin/python -m pip install -U pip",)),
            severity=Severity.WARNING,
        ))
    if py.get("has_pip") is None and not hits:
        raise NotCheckable(f"whether --python {exe} has pip is unknown (no site-packages folder found)")
    return hits


@rule("build-disk-low", needs=("request.build.cmake_only",), optional=("build.disk_free", "request.build.workdir"))
def disk_low(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the free disk where the build writes (--workdir) with what a CUDA build of
        PyTorch needs: the checkout with submodules, object files for every target arch,
        the wheel (doctor/kb/build.yaml `min_free_disk_gib`). Not checked for --cmake-only.

    Why is this bad?
        The build fails late: "No space left on device", often in the final link.

    Example
        `--workdir /home/ml/build` on a 30 GB root disk with 12 GB left.

    Fix
        Free space, or build on a larger disk:
            fwdoctor build torch --workdir /scratch/fwd ...
    """
    if facts["request.build.cmake_only"]:
        return None
    if not facts.known("build.disk_free"):
        raise NotCheckable(f"free disk space at {facts.get('request.build.workdir')} is unknown ({facts.why('build.disk_free')})")
    free = facts["build.disk_free"]
    need = kb.build.min_free_disk_gib
    if free["bytes"] >= need * GIB:
        return None
    return Hit(
        f"{free['bytes'] / GIB:.1f} GiB free at {free['path']}; a CUDA build of torch needs about {need:g} GiB",
        evidence={"free_bytes": free["bytes"], "checked_at": free.get("checked_at")},
        fix=FixRef(note="free space or pass --workdir on a larger disk"),
    )


@rule("build-ram-low", needs=("request.build.cmake_only",), optional=("build.mem_available_bytes",))
def ram_low(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the available memory with what one nvcc job on PyTorch's largest kernels
        needs (doctor/kb/build.yaml `gib_per_job`); MAX_JOBS is derived from the same
        number. Not checked for --cmake-only.

    Why is this bad?
        Compiler processes are killed by the OOM killer: "c++: fatal error: Killed signal
        terminated program cc1plus", "nvcc error : 'cicc' died due to signal 9".

    Example
        A 4 GiB cloud VM building torch with CUDA.

    Fix
        Free memory, add swap, or build on a larger machine.
    """
    if facts["request.build.cmake_only"]:
        return None
    if not facts.known("build.mem_available_bytes"):
        raise NotCheckable(f"available memory is unknown ({facts.why('build.mem_available_bytes')}); MAX_JOBS follows the core count")
    mem, per_job = facts["build.mem_available_bytes"], kb.build.gib_per_job
    if mem >= per_job * GIB:
        return None
    return Hit(
        f"{mem / GIB:.1f} GiB of memory available; one nvcc job on the largest kernels needs about {per_job:g} GiB "
        f"(the build gets killed: \"Killed\" / \"nvcc error : 'cicc' died due to signal 9\")",
        evidence={"mem_available_bytes": mem},
        fix=FixRef(note="free memory, add swap, or build on a larger machine"),
    )


@rule("build-tool-installed", needs=("build.torch", "build.python", "build.cmake", "build.ninja"))
def tool_installed(facts: Facts, kb: KB) -> Iterable[Hit]:
    """What it does
        Notes that cmake (absent, or older than this torch needs) or ninja (absent) will be
        pip-installed into the target environment, whose bin/ the build puts first on PATH.

    Why is this bad?
        Nothing is wrong; the plan says so because it changes that environment. Without
        it: "CMake 3.27 or higher is required. You are running version 3.25.1", or a build
        through make, slower and with no progress display.

    Example
        torch 2.9 (cmake >= 3.27) on Debian 12 (cmake 3.25.1).

    Fix
        Nothing to do; install them yourself beforehand to avoid it:
            python -m pip install "cmake>=3.27" ninja
    """
    torch, exe = facts["build.torch"], facts["build.python"].get("executable")
    cmake, ninja = facts["build.cmake"], facts["build.ninja"]
    hits: list[Hit] = []
    try:
        floor: str | None = kb.build.cmake_min(torch)
    except LookupError:
        floor = None  # build-torch-unsupported says why
    have = parse_version(cmake.get("version")) if cmake else None
    if floor is not None and (have is None or have < Version(floor)):
        seen = f"cmake {cmake.get('version')} at {cmake.get('path')}" if cmake else "no cmake on PATH"
        hits.append(Hit(f"{seen}; torch {torch} needs cmake >= {floor}: the plan installs cmake>={floor} into {exe}'s environment",
                        evidence={"tool": "cmake", "install": f"cmake>={floor}", "build.cmake": cmake}))
    if ninja is None:
        hits.append(Hit(f"no ninja on PATH: the plan installs ninja into {exe}'s environment (without it the build uses make, "
                        f"slower and with no progress display)", evidence={"tool": "ninja", "install": "ninja"}))
    return hits


@rule("build-not-checked", needs=("request.build.cuda",))
def not_checked(facts: Facts, kb: KB) -> Iterable[Hit]:
    """What it does
        Reports each pre-flight check of a requested build that could not be made, and
        why: an unknown version, an unreadable header, a toolkit whose arch list neither
        nvcc nor the knowledge base gives.

    Why is this bad?
        An unknown is not a pass: the build may fail hours in where the check would have
        caught it.

    Example
        `--cudnn /opt/cudnn` whose folder name and files do not say which CUDA it was built
        for: cudnn-cuda-mismatch is not checked.

    Fix
        Check the named item by hand before a long build (the message says what is unknown).
    """
    return not_checked_hits(facts, kb, RULES, skip=(not_checked,))


def not_checked_hits(facts: Facts, kb: KB, rules: Iterable[Rule], skip: Iterable[Rule]) -> list[Hit]:
    """One hit per pre-flight rule (but `skip`) that could not be evaluated, with why: what
    `build torch` and `build ext` list as "not checked". `skip` holds the rules themselves,
    not their ids, so renaming a finding cannot quietly stop a rule being skipped."""
    hits: list[Hit] = []
    skipped = tuple(skip)
    for item in rules:
        if any(item is other for other in skipped):
            continue
        try:
            _, unevaluated = item.evaluate(facts, kb)
        except Exception as exc:  # that rule's bug; the build still hears of it
            if raise_rule_errors():  # the test suite's switch: a crash fails the test
                raise
            reason = f"internal error in rule: {type(exc).__name__}: {exc}"
        else:
            if unevaluated is None:
                continue
            reason = unevaluated.reason
        hits.append(Hit(f"{item.id} not checked: {reason}", evidence={"rule": item.id, "reason": reason}))
    return hits


# Every rule of the pre-flight, as `fwdoctor build torch` judges them.
RULES: tuple[Rule, ...] = (
    torch_unsupported,
    input_missing,
    host_compiler,
    arch_unsupported,
    nccl_mismatch,
    cudnn_mismatch,
    no_wheel,
    python_unusable,
    disk_low,
    ram_low,
    tool_installed,
    not_checked,
)

# The ones `fwdoctor check` lists too (their ids are the build's own; see the docstring):
# all but the four whose ids `check` already judges for the host itself.
_SAME_IDS_AS_CHECK: tuple[Rule, ...] = (host_compiler, arch_unsupported, nccl_mismatch, cudnn_mismatch)
CHECK_RULES: tuple[Rule, ...] = tuple(r for r in RULES if r not in _SAME_IDS_AS_CHECK)
