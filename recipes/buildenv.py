"""The build environment for a PyTorch source build, as data: what was chosen (toolkit,
NCCL, cuDNN, Python, arch list, jobs), the pre-flight checks on those choices, and the
exact environment variables the build gets.

Nothing here touches the machine: recipes/torch_source.py probes the host and fills these
types; this module turns them into findings and an environment. The parsers read real
tool output (nvcc --version, nvcc --list-gpu-arch, crt/host_config.h, cmake/ninja
--version, ninja's [N/M]) and never raise on garbage: they return None, and the caller
reports "not checked". Where a probe already reads the same thing (doctor/probes/cuda.py,
compilers.py, libscan.py), the probe's parser is used and only adapted here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from packaging.version import InvalidVersion, Version

from fwdoctor.arch import Target, parse_targets
from fwdoctor.probes import cuda as cuda_probe
from fwdoctor.model import Finding, FixRef, Severity

GIB = 1024**3

# Finding ids used by the pre-flight. The first four are from shared/FINDINGS.md; the
# build-* ones are new (see the report to the lead) and only appear in `build` output.
HOST_COMPILER = "host-compiler-unsupported"
ARCH_TOOLKIT = "gpu-arch-unsupported-by-toolkit"
NCCL_CUDA = "nccl-cuda-mismatch"
CUDNN_CUDA = "cudnn-cuda-mismatch"
INPUT_MISSING = "build-input-missing"
PYTHON_UNUSABLE = "build-python-unusable"
TOOL_INSTALLED = "build-tool-installed"
DISK_LOW = "build-disk-low"
RAM_LOW = "build-ram-low"
NO_WHEEL = "build-no-wheel"
TORCH_UNSUPPORTED = "build-torch-unsupported"
NOT_CHECKED = "build-not-checked"


# --------------------------------------------------------------------------- choices
@dataclass(frozen=True)
class Toolkit:
    """The chosen CUDA toolkit. `release` is nvcc's "release X.Y"."""

    root: str
    nvcc: str
    release: str
    gpu_archs: tuple[str, ...] | None = None  # "7.5", "8.0", ... from nvcc --list-gpu-arch
    host_gcc: tuple[int | None, int | None] | None = None  # (min, max) from crt/host_config.h

    @property
    def major(self) -> int:
        return Version(self.release).major


@dataclass(frozen=True)
class LibChoice:
    """How NCCL or cuDNN is chosen.

    kind: "pip" (fetch nvidia-<lib>-cu<major>==version into the build prefix), "path" (an
    existing install), "bundled" (NCCL: build third_party/nccl; cuDNN: whatever CMake finds
    on its own), or "none" (cuDNN only: build without it).
    For "pip" the paths are where the wheel will put things; for "path" where they are.
    """

    lib: str
    kind: str
    version: str | None = None
    package: str | None = None
    include_dir: str | None = None
    library_file: str | None = None  # the real versioned .so (libnccl.so.2, libcudnn.so.9)
    cuda_major: int | None = None
    cuda_major_source: str = ""  # how cuda_major was learned, for messages

    @property
    def pinned(self) -> bool:
        return self.kind in ("pip", "path")


@dataclass(frozen=True)
class PythonEnv:
    executable: str
    version: str | None = None
    prefix: str | None = None
    base_prefix: str | None = None
    has_pip: bool | None = None
    error: str = ""  # why it could not be run

    @property
    def is_isolated(self) -> bool:
        """A venv (prefix differs from base_prefix) or a conda env (conda-meta in prefix is
        checked by the prober and reported as prefix != base_prefix too)."""
        return bool(self.prefix and self.base_prefix and self.prefix != self.base_prefix)


@dataclass(frozen=True)
class Tool:
    path: str | None
    version: str | None


@dataclass(frozen=True)
class BuildHost:
    """What the plan needs to know about the machine (filled by torch_source.probe_host)."""

    cores: int
    mem_available_bytes: int | None
    disk_free_bytes: int | None
    host_cxx: Tool  # the C++ compiler nvcc would use (g++ on PATH, or CUDAHOSTCXX)
    other_gxx: tuple[Tool, ...] = ()  # g++-N on PATH, candidates for CUDAHOSTCXX
    cmake: Tool = Tool(None, None)
    ninja: Tool = Tool(None, None)
    ccache: str | None = None
    git: str | None = None
    path: str = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class BuildRequest:
    """Everything chosen for one build, resolved to paths and versions."""

    torch: str
    toolkit: Toolkit
    nccl: LibChoice
    cudnn: LibChoice
    python: PythonEnv
    arch_list: str  # TORCH_CUDA_ARCH_LIST form, "8.0;9.0+PTX"
    arch_from: str  # "--arch" or "host GPUs: ..." for messages
    workdir: str
    source: str | None = None  # an existing tree (--source); None: clone
    git_url: str = "https://github.com/pytorch/pytorch.git"
    jobs: int | None = None  # --jobs N; None: from RAM and cores
    ccache: bool = False
    debug: bool = False
    host_cxx_override: str | None = None  # CUDAHOSTCXX chosen by the pre-flight or the user


# --------------------------------------------------------------------------- parsers
# g++ -dumpfullversion, nccl.h, cudnn_version.h and the "NCCL version" string inside
# libnccl: torch_source.py calls doctor/probes/compilers.py and libscan.py directly.
def parse_nvcc_release(text: str) -> str | None:
    """`nvcc --version` -> "13.0" ("Cuda compilation tools, release 13.0, V13.0.88")."""
    found = cuda_probe.parse_nvcc_version(text or "")
    return found[0] if found else None


def parse_gpu_arch_list(text: str) -> tuple[str, ...] | None:
    """`nvcc --list-gpu-arch` (compute_75 ... one per line) -> ("7.5", ...); None if none."""
    found = []
    for m in re.finditer(r"\bcompute_(\d+)(\d)[af]?\b", text or ""):
        cc = f"{int(m.group(1))}.{m.group(2)}"
        if cc not in found:
            found.append(cc)
    return tuple(sorted(found, key=Version)) or None


_GNUC_LT = re.compile(r"^\s*#\s*if\s+__GNUC__\s*<\s*(\d+)", re.M)


def parse_host_config(text: str) -> tuple[int | None, int | None] | None:
    """crt/host_config.h -> (oldest, newest) gcc major nvcc accepts.

    The newest is the probe's reading (`#if __GNUC__ > 15` / "gcc versions later than 15 are
    not supported"); older headers also say `#if __GNUC__ < 6`, the oldest. None when the
    header has no GNU bound at all (not a host_config.h we understand)."""
    text = text or ""
    newest = cuda_probe.parse_host_config(text)
    oldest = [int(x) for x in _GNUC_LT.findall(text)]
    if newest is None and not oldest:
        return None
    return (max(oldest) if oldest else None, int(newest) if newest is not None else None)


def parse_tool_version(text: str) -> str | None:
    """`cmake --version` ("cmake version 3.25.1") or `ninja --version` ("1.11.1")."""
    m = re.search(r"(\d+\.\d+(?:\.\d+)?)", text or "")
    return m.group(1) if m else None


_NINJA = re.compile(r"^\s*\[(\d+)/(\d+)\]\s")


def parse_ninja_progress(line: str) -> tuple[int, int] | None:
    """A ninja status line ("[123/6789] Building CUDA object ...", pip -v indents it) ->
    (123, 6789); None for any other line."""
    m = _NINJA.match(line)
    if not m:
        return None
    done, total = int(m.group(1)), int(m.group(2))
    return (done, total) if 0 <= done <= total and total > 0 else None


def same_release(a: str, b: str) -> bool:
    """"12.8" names the toolkit "12.8.93"? Compares major.minor with packaging."""
    try:
        va, vb = Version(a), Version(b)
    except InvalidVersion:
        return False
    return (va.major, va.minor) == (vb.major, vb.minor)


# --------------------------------------------------------------------------- arch list
def normalize_arch_list(text: str) -> tuple[str, list[Target]]:
    """"8.0;9.0+PTX" or "sm_80,compute_90" -> ("8.0;9.0+PTX", targets). Raises ValueError
    naming the bad entry."""
    targets = parse_targets(text)
    if not targets:
        raise ValueError("empty architecture list (expected e.g. '8.0;9.0+PTX')")
    order: list[tuple[int, int, str]] = []
    ptx: set[tuple[int, int, str]] = set()
    for t in targets:
        key = (t.major, t.minor, t.suffix)
        if key not in order:
            order.append(key)
        if t.kind == "ptx":
            ptx.add(key)
    order.sort()
    entries = [f"{ma}.{mi}{sfx}" + ("+PTX" if (ma, mi, sfx) in ptx else "") for ma, mi, sfx in order]
    return ";".join(entries), targets


def arch_list_from_ccs(ccs: Iterable[str]) -> str:
    """Host GPUs' compute capabilities ("9.0", "8.6", "9.0") -> "8.6;9.0"."""
    unique = sorted({Version(c) for c in ccs})
    return ";".join(f"{v.major}.{v.minor}" for v in unique)


# --------------------------------------------------------------------------- jobs
def max_jobs(cores: int, mem_available_bytes: int | None, gib_per_job: float) -> int:
    """Parallel compile jobs: one per core, but no more than RAM allows at `gib_per_job`
    each (nvcc on the flash-attention kernels peaks at several GB). At least 1."""
    jobs = max(1, cores)
    if mem_available_bytes is not None:
        jobs = min(jobs, int(mem_available_bytes // (gib_per_job * GIB)))
    return max(1, jobs)


# --------------------------------------------------------------------------- layout
@dataclass(frozen=True)
class Layout:
    """Where a build keeps its things (all under --workdir)."""

    workdir: str

    @property
    def src(self) -> str:
        return f"{self.workdir}/src"

    @property
    def deps(self) -> str:
        return f"{self.workdir}/deps"

    @property
    def prefix(self) -> str:
        return f"{self.workdir}/prefix"

    @property
    def dist(self) -> str:
        return f"{self.workdir}/dist"

    @property
    def log(self) -> str:
        return f"{self.workdir}/build.log"

    @property
    def verify_script(self) -> str:
        return f"{self.workdir}/verify_build.py"

    def lib_prefix(self, lib: str) -> str:
        """The shim prefix CMake is pointed at: include/ and lib/lib<lib>.so, nothing else,
        so FindNCCL/FindCUDNN cannot pick up another copy from the same folder."""
        return f"{self.prefix}/{lib}"

    def pip_root(self, lib: str) -> str:
        """Where `pip install --target` puts nvidia-<lib>-cuXX (one folder per library:
        pip --target skips a top-level `nvidia/` that already exists)."""
        return f"{self.deps}/{lib}"


SONAME = {"nccl": "libnccl.so", "cudnn": "libcudnn.so"}


def pip_paths(layout: Layout, lib: str, version: str) -> tuple[str, str]:
    """(include dir, versioned library) an nvidia-<lib>-cuXX wheel installs under --target:
    nvidia/nccl/lib/libnccl.so.2 (the wheel ships no libnccl.so), nvidia/cudnn/lib/libcudnn.so.9."""
    root = f"{layout.pip_root(lib)}/nvidia/{lib}"
    major = "2" if lib == "nccl" else str(Version(version).major)
    return f"{root}/include", f"{root}/lib/{SONAME[lib]}.{major}"


# --------------------------------------------------------------------------- environment
def wheel_version(req: BuildRequest) -> str:
    """PYTORCH_BUILD_VERSION: "2.9.1+cu128", the official wheels' scheme. The local label
    also keeps `pip install torch==2.9.1+cu128` from picking PyPI's wheel over ours."""
    v = Version(req.toolkit.release)
    return f"{req.torch}+cu{v.major}{v.minor}"


def resolved_jobs(req: BuildRequest, host: BuildHost, gib_per_job: float) -> int:
    return req.jobs if req.jobs else max_jobs(host.cores, host.mem_available_bytes, gib_per_job)


def role_values(req: BuildRequest, host: BuildHost, kb_build, layout: Layout) -> dict[str, str | None]:
    """The value of each KB role for this build; None leaves the variable out."""
    nccl_pfx = layout.lib_prefix("nccl")
    cudnn_pfx = layout.lib_prefix("cudnn")
    launcher = host.ccache if req.ccache else None
    return {
        "use_cuda": "1",
        "cuda_root": req.toolkit.root,
        "nvcc": req.toolkit.nvcc,
        "host_cxx": req.host_cxx_override,
        "arch_list": req.arch_list,
        "use_cudnn": "0" if req.cudnn.kind == "none" else "1",
        "cudnn_include": f"{cudnn_pfx}/include" if req.cudnn.pinned else None,
        "cudnn_lib_dir": f"{cudnn_pfx}/lib" if req.cudnn.pinned else None,
        "use_nccl": "1",
        "use_system_nccl": "1" if req.nccl.pinned else "0",
        "nccl_root": nccl_pfx if req.nccl.pinned else None,
        "nccl_include": f"{nccl_pfx}/include" if req.nccl.pinned else None,
        "nccl_lib_dir": f"{nccl_pfx}/lib" if req.nccl.pinned else None,
        "python": req.python.executable,
        "max_jobs": str(resolved_jobs(req, host, kb_build.gib_per_job)),
        "launcher": launcher,
        "debug": "1" if req.debug else None,
        "build_version": wheel_version(req),
        "build_number": "0",
    }


def build_env(req: BuildRequest, host: BuildHost, kb_build, layout: Layout, extra_path: Iterable[str] = ()) -> dict[str, str]:
    """The environment of the configure/build commands, in KB order, then PATH.

    PATH puts the chosen interpreter's bin/ (where pip puts cmake/ninja when the host's are
    too old) and the toolkit's bin/ first, so nothing finds another nvcc or cmake by name."""
    values = role_values(req, host, kb_build, layout)
    env: dict[str, str] = {}
    for row in kb_build.variables_for(req.torch):
        value = values.get(row.role)
        if value is not None:
            env[row.name] = value
    path = [*extra_path, f"{req.toolkit.root}/bin"]
    env["PATH"] = ":".join([*dict.fromkeys(path), host.path])
    return env


# --------------------------------------------------------------------------- pre-flight
@dataclass
class Preflight:
    findings: list[Finding] = field(default_factory=list)
    # Decisions the checks made that change the plan:
    host_cxx: str | None = None  # use this CUDAHOSTCXX (default g++ unsupported, g++-N fits)
    pip_tools: tuple[str, ...] = ()  # install these into the env ("cmake>=3.27", "ninja")

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors

    def add(self, id: str, severity: Severity, message: str, fix: FixRef | None = None, **evidence) -> None:
        self.findings.append(Finding(id=id, severity=severity, message=message, area="build", evidence=evidence, fix=fix))


def preflight(req: BuildRequest, host: BuildHost, kb_build, kb_cuda=None, cmake_only: bool = False) -> Preflight:
    """Every check that matters before hours of compiling. Pure: facts in, findings out."""
    pf = Preflight()
    if not kb_build.supported(req.torch):
        pf.add(TORCH_UNSUPPORTED, Severity.ERROR,
               f"torch {req.torch} is older than {kb_build.min_torch}, the oldest version this recipe knows how to configure",
               torch=req.torch)
    _check_host_compiler(pf, req, host)
    _check_arch(pf, req, kb_cuda)
    for lib in (req.nccl, req.cudnn):
        _check_lib(pf, lib, req.toolkit, kb_build)
    _check_python(pf, req.python)
    if not cmake_only:
        _check_resources(pf, host, kb_build, req)
    _check_tools(pf, req, host, kb_build)
    return pf


def _check_host_compiler(pf: Preflight, req: BuildRequest, host: BuildHost) -> None:
    tk = req.toolkit
    if tk.host_gcc is None:
        pf.add(NOT_CHECKED, Severity.WARNING, f"host compiler not checked: no GNU version bound found in {tk.root}/include/crt/host_config.h")
        return
    lo, hi = tk.host_gcc
    chosen = Tool(req.host_cxx_override, None) if req.host_cxx_override else host.host_cxx
    if req.host_cxx_override:
        match = next((t for t in (host.host_cxx, *host.other_gxx) if t.path == req.host_cxx_override), None)
        chosen = match or chosen
    if chosen.path is None:
        pf.add(INPUT_MISSING, Severity.ERROR, "no C++ compiler (g++) on PATH; nvcc needs a host compiler",
               fix=FixRef(commands=("sudo apt-get install g++",)))
        return
    if chosen.version is None:
        pf.add(NOT_CHECKED, Severity.WARNING, f"host compiler {chosen.path}: version unknown, not checked against nvcc {tk.release}")
        return
    if _gcc_fits(chosen.version, lo, hi):
        pf.host_cxx = req.host_cxx_override
        return
    bound = _bound_text(lo, hi)
    fits = [t for t in host.other_gxx if t.version and _gcc_fits(t.version, lo, hi)]
    if fits and not req.host_cxx_override:
        best = max(fits, key=lambda t: Version(t.version))  # type: ignore[arg-type]
        pf.host_cxx = best.path
        pf.add(HOST_COMPILER, Severity.INFO,
               f"{chosen.path} is gcc {chosen.version}, but nvcc {tk.release} accepts {bound} ({tk.root}/include/crt/host_config.h); "
               f"using CUDAHOSTCXX={best.path} (gcc {best.version})",
               host_cxx=chosen.path, version=chosen.version, using=best.path)
        return
    pf.add(HOST_COMPILER, Severity.ERROR,
           f"{chosen.path} is gcc {chosen.version}, but nvcc {tk.release} accepts {bound} ({tk.root}/include/crt/host_config.h): "
           f"\"unsupported GNU version!\"",
           fix=FixRef(note="install a supported g++ (e.g. g++-N) and it is picked up as CUDAHOSTCXX, or choose another --cuda"),
           host_cxx=chosen.path, version=chosen.version, gcc_min=lo, gcc_max=hi)


def _gcc_fits(version: str, lo: int | None, hi: int | None) -> bool:
    major = Version(version).major
    return (lo is None or major >= lo) and (hi is None or major <= hi)


def _bound_text(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"gcc {lo} to {hi}"
    return f"gcc <= {hi}" if hi is not None else f"gcc >= {lo}"


def _check_arch(pf: Preflight, req: BuildRequest, kb_cuda) -> None:
    tk = req.toolkit
    _, targets = normalize_arch_list(req.arch_list)
    ccs = sorted({t.cc for t in targets}, key=Version)
    bad: list[str] = []
    unknown: list[str] = []
    for cc in ccs:
        if tk.gpu_archs is not None:
            if cc not in tk.gpu_archs:
                bad.append(cc)
            continue
        verdict = None
        if kb_cuda is not None:
            try:
                verdict = kb_cuda.nvcc_supports(tk.release, cc)
            except Exception:  # a KB without the row or the query: not checked, never a crash
                verdict = None
        if verdict is False:
            bad.append(cc)
        elif verdict is None:
            unknown.append(cc)
    if bad:
        have = ", ".join(tk.gpu_archs) if tk.gpu_archs else "see nvcc --list-gpu-arch"
        pf.add(ARCH_TOOLKIT, Severity.ERROR,
               f"nvcc {tk.release} ({tk.nvcc}) cannot compile for {', '.join(bad)} from {req.arch_from} "
               f"(\"nvcc fatal : Unsupported gpu architecture 'compute_{bad[0].replace('.', '')}'\"); it supports {have}",
               fix=FixRef(note="drop those targets from --arch, or choose a --cuda that still supports them"),
               arch_list=req.arch_list, unsupported=bad)
    if unknown:
        pf.add(NOT_CHECKED, Severity.WARNING,
               f"not checked whether nvcc {tk.release} compiles for {', '.join(unknown)}: no nvcc --list-gpu-arch and no KB row")


def _check_lib(pf: Preflight, lib: LibChoice, tk: Toolkit, kb_build) -> None:
    name = "NCCL" if lib.lib == "nccl" else "cuDNN"
    mismatch = NCCL_CUDA if lib.lib == "nccl" else CUDNN_CUDA
    if lib.kind == "pip":
        wheel = kb_build.pip_wheel(lib.lib, tk.major)
        if wheel is None:
            pf.add(NO_WHEEL, Severity.ERROR, f"no pip wheel of {name} for CUDA {tk.major} is known (nvidia-{lib.lib}-cu{tk.major})",
                   fix=FixRef(note=f"pass --{lib.lib} PATH to an install built for CUDA {tk.major}"))
        elif Version(lib.version or "0") < Version(wheel.first) or (wheel.last and Version(lib.version or "0") > Version(wheel.last)):
            span = f"{wheel.first} to {wheel.last}" if wheel.last else f"{wheel.first} and later"
            pf.add(NO_WHEEL, Severity.ERROR,
                   f"{wheel.package}=={lib.version} does not exist: PyPI has {wheel.package} {span}",
                   fix=FixRef(note=f"choose a {name} version in that range, or pass --{lib.lib} PATH"),
                   package=wheel.package, version=lib.version)
        return
    if lib.kind != "path":
        return
    if not lib.include_dir or not lib.library_file:
        pf.add(INPUT_MISSING, Severity.ERROR, f"--{lib.lib}: no {name} headers and library found there (looked for include/ and lib/)")
        return
    if lib.cuda_major is None:
        pf.add(NOT_CHECKED, Severity.WARNING,
               f"{name} at {lib.library_file}: the CUDA major it was built for is unknown; not checked against CUDA {tk.release}")
    elif lib.cuda_major != tk.major:
        pf.add(mismatch, Severity.ERROR,
               f"{name} {lib.version or ''} at {lib.library_file} is built for CUDA {lib.cuda_major} ({lib.cuda_major_source}), "
               f"the toolkit is CUDA {tk.release}",
               fix=FixRef(note=f"use a {name} built for CUDA {tk.major} (e.g. --{lib.lib} VERSION fetches nvidia-{lib.lib}-cu{tk.major})"),
               library=lib.library_file, cuda_major=lib.cuda_major, toolkit=tk.release)


def _check_python(pf: Preflight, py: PythonEnv) -> None:
    if py.error:
        pf.add(PYTHON_UNUSABLE, Severity.ERROR, f"--python {py.executable}: {py.error}")
        return
    if py.has_pip is False:
        pf.add(PYTHON_UNUSABLE, Severity.ERROR, f"--python {py.executable} has no pip; the build requirements and the wheel go in with pip",
               fix=FixRef(commands=(f"{py.executable} -m ensurepip --upgrade",)))
    if not py.is_isolated:
        pf.add(PYTHON_UNUSABLE, Severity.WARNING,
               f"--python {py.executable} is not a virtual or conda environment (prefix {py.prefix}); the build requirements "
               f"and the new torch would be installed into that interpreter itself",
               fix=FixRef(commands=("python3 -m venv ~/venvs/torch-build && ~/venvs/torch-build/bin/python -m pip install -U pip",)))


def _check_resources(pf: Preflight, host: BuildHost, kb_build, req: BuildRequest) -> None:
    need_disk = kb_build.min_free_disk_gib
    if host.disk_free_bytes is None:
        pf.add(NOT_CHECKED, Severity.WARNING, f"free disk space at {req.workdir} unknown; not checked")
    elif host.disk_free_bytes < need_disk * GIB:
        pf.add(DISK_LOW, Severity.ERROR,
               f"{host.disk_free_bytes / GIB:.1f} GiB free at {req.workdir}; a CUDA build of torch needs about {need_disk:g} GiB",
               fix=FixRef(note="free space or pass --workdir on a larger disk"), free_bytes=host.disk_free_bytes)
    per_job = kb_build.gib_per_job
    if host.mem_available_bytes is None:
        pf.add(NOT_CHECKED, Severity.WARNING, "available memory unknown (/proc/meminfo); MAX_JOBS follows the core count")
    elif host.mem_available_bytes < per_job * GIB:
        pf.add(RAM_LOW, Severity.ERROR,
               f"{host.mem_available_bytes / GIB:.1f} GiB of memory available; one nvcc job on the largest kernels needs about {per_job:g} GiB "
               f"(the build gets killed: \"Killed\" / \"nvcc error : 'cicc' died due to signal 9\")",
               fix=FixRef(note="free memory, add swap, or build on a larger machine"), mem_available_bytes=host.mem_available_bytes)


def _check_tools(pf: Preflight, req: BuildRequest, host: BuildHost, kb_build) -> None:
    pins: list[str] = []
    try:
        floor = kb_build.cmake_min(req.torch)
    except LookupError:
        floor = None
    if floor is not None:
        if host.cmake.version is None or Version(host.cmake.version) < Version(floor):
            seen = f"cmake {host.cmake.version} at {host.cmake.path}" if host.cmake.path else "no cmake on PATH"
            pins.append(f"cmake>={floor}")
            pf.add(TOOL_INSTALLED, Severity.INFO, f"{seen}; torch {req.torch} needs cmake >= {floor}: the plan installs cmake>={floor} into {req.python.executable}'s environment")
    if host.ninja.path is None:
        pins.append("ninja")
        pf.add(TOOL_INSTALLED, Severity.INFO, f"no ninja on PATH: the plan installs ninja into {req.python.executable}'s environment (without it the build uses make, slower and with no progress display)")
    if req.ccache and not host.ccache:
        pf.add(INPUT_MISSING, Severity.ERROR, "--ccache: no ccache on PATH", fix=FixRef(commands=("sudo apt-get install ccache",)))
    if req.source is None and not host.git:
        pf.add(INPUT_MISSING, Severity.ERROR, "no git on PATH to clone PyTorch (or pass --source DIR)", fix=FixRef(commands=("sudo apt-get install git",)))
    pf.pip_tools = tuple(pins)
