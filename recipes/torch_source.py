"""Recipe `torch-source`: build a PyTorch wheel from source against a chosen CUDA toolkit,
NCCL, cuDNN and Python.

Three layers, each testable alone:
- `gather(options, kb)` reads the host (toolkits, nvcc, g++, cmake, RAM, disk, the Python)
  into a `BuildRequest` + `BuildHost` (recipes/buildenv.py). Bad input raises `InputError`.
- `make_plan(request, host, kb)` is pure: the pre-flight findings and a `BuildPlan` whose
  steps are argv lists with one explicit environment (`to_plan().to_shell()` is --dry-run).
- `execute(build_plan)` runs it: preparation and verification through recipes/apply.py,
  the long build step through a streaming runner that keeps the whole log and reports
  ninja's [N/M] as progress.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import posixpath
import re
import shlex
import shutil
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from packaging.version import InvalidVersion, Version

from fwdoctor import runner
from fwdoctor.host import Host
from fwdoctor.probes import libscan
from fwdoctor.probes.compilers import parse_dumpversion
from fwdoctor.recipes import buildenv as be
from fwdoctor.recipes.plan import FileWrite, Plan, Step

RECIPE = "torch-source"
BUILD_TIMEOUT_S = 48 * 3600.0  # a full CUDA build with many arches on few cores takes hours
CMAKE_ONLY_TIMEOUT_S = 3600.0
PIP_TIMEOUT_S = 3600.0
PROBE_TIMEOUT_S = 30.0
VERSION_LIKE = re.compile(r"^\d+(\.\d+)+$")


class InputError(ValueError):
    """An option that cannot be used as given (a missing path, no GPU for --arch auto)."""


@dataclass(frozen=True)
class Options:
    """The command line of `fwdoctor build torch`, unvalidated."""

    version: str | None
    cuda: str
    nccl: str
    cudnn: str
    arch: str
    python: str
    source: str | None = None
    git: str | None = None
    workdir: str | None = None
    jobs: str = "auto"
    ccache: bool = False
    debug: bool = False
    cmake_only: bool = False


# =========================================================================== gather
Run = Callable[..., runner.CommandResult]


def gather(opts: Options, kb, env: Mapping[str, str] | None = None, run: Run = runner.run,
           toolkits_fact: Sequence[Mapping] | None = None) -> tuple[be.BuildRequest, be.BuildHost]:
    """Resolve the options against this host. Raises InputError with a one-line reason."""
    env = dict(os.environ if env is None else env)
    torch = _torch_version(opts)
    toolkit = find_toolkit(opts.cuda, env, run, toolkits_fact)
    python = probe_python(opts.python, run)
    arch_list, arch_from = resolve_arch(opts.arch, run)
    workdir = os.path.abspath(opts.workdir or f"fwdoctor-build/torch-{torch}-cu{toolkit.release.replace('.', '')}")
    layout = be.Layout(workdir)
    nccl = resolve_lib("nccl", opts.nccl, toolkit, layout)
    cudnn = resolve_lib("cudnn", opts.cudnn, toolkit, layout)
    host = probe_host(env, run, python, workdir)
    jobs = None
    if opts.jobs != "auto":
        if not opts.jobs.isdigit() or int(opts.jobs) < 1:
            raise InputError(f"--jobs {opts.jobs}: expected a positive number or 'auto'")
        jobs = int(opts.jobs)
    source = None
    if opts.source:
        source = os.path.abspath(opts.source)
        if not os.path.isfile(os.path.join(source, "setup.py")):
            raise InputError(f"--source {opts.source}: no setup.py there (expected a PyTorch checkout)")
    req = be.BuildRequest(
        torch=torch, toolkit=toolkit, nccl=nccl, cudnn=cudnn, python=python, arch_list=arch_list,
        arch_from=arch_from, workdir=workdir, source=source,
        git_url=opts.git or "https://github.com/pytorch/pytorch.git", jobs=jobs, ccache=opts.ccache,
        debug=opts.debug, host_cxx_override=env.get("CUDAHOSTCXX") or None,
    )
    return req, host


def _torch_version(opts: Options) -> str:
    text = opts.version
    if not text and opts.source:
        try:
            with open(os.path.join(opts.source, "version.txt"), encoding="utf-8") as handle:
                text = handle.read().strip()
        except OSError:
            text = None
    if not text:
        raise InputError("--version is required (or --source DIR with a version.txt)")
    try:
        v = Version(text)
    except InvalidVersion:
        raise InputError(f"--version {text}: not a version (expected e.g. 2.9.1)") from None
    return v.base_version


def find_toolkit(spec: str, env: Mapping[str, str], run: Run = runner.run,
                 toolkits_fact: Sequence[Mapping] | None = None) -> be.Toolkit:
    """--cuda VERSION (one of the installed toolkits) or --cuda PATH (a root or its nvcc)."""
    if "/" in spec:
        path = os.path.abspath(spec)
        root = os.path.dirname(os.path.dirname(path)) if os.path.isfile(path) else path
        nvcc = os.path.join(root, "bin", "nvcc")
        if not os.access(nvcc, os.X_OK):
            raise InputError(f"--cuda {spec}: no executable {nvcc}")
        if not _has_cuda_headers(root):
            # e.g. /usr/local/bin/nvcc, a wrapper script: its "root" /usr/local is no toolkit
            raise InputError(f"--cuda {spec}: {root} has no include/cuda_runtime.h; give the toolkit's root (e.g. /usr/local/cuda-12.8)")
        return _toolkit_at(root, nvcc, run)
    if not VERSION_LIKE.match(spec):
        raise InputError(f"--cuda {spec}: expected a version like 12.8 or the path of a toolkit")
    seen: list[str] = []
    for root in _toolkit_roots(env, toolkits_fact):
        nvcc = os.path.join(root, "bin", "nvcc")
        if not os.access(nvcc, os.X_OK):
            continue
        tk = _toolkit_at(root, nvcc, run)
        seen.append(f"{tk.release} at {root}")
        if be.same_release(tk.release, spec):
            return tk
    found = "; ".join(seen) or "none"
    raise InputError(f"--cuda {spec}: no such toolkit installed (found: {found}); install it or pass --cuda /path/to/cuda-{spec}")


def _has_cuda_headers(root: str) -> bool:
    return os.path.isfile(os.path.join(root, "include", "cuda_runtime.h")) or bool(glob.glob(os.path.join(root, "targets", "*", "include", "cuda_runtime.h")))


def _toolkit_roots(env: Mapping[str, str], toolkits_fact: Sequence[Mapping] | None) -> list[str]:
    roots: list[str] = []
    for item in toolkits_fact or ():
        if isinstance(item, Mapping) and isinstance(item.get("root"), str):
            roots.append(item["root"])
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            roots.append(env[var])
    roots += sorted(glob.glob("/usr/local/cuda-*"), key=_release_key, reverse=True) + ["/usr/local/cuda"] + sorted(glob.glob("/opt/cuda*"))
    unique: dict[str, str] = {}
    for root in roots:
        unique.setdefault(os.path.realpath(root), root)
    return list(unique.values())


def _release_key(root: str) -> tuple[int, Version, str]:
    """Newest first by the version in the name (cuda-12.10 after cuda-12.9, unlike a string
    sort); names without one (cuda-old) sort last."""
    try:
        return (1, Version(root.rsplit("cuda-", 1)[-1]), root)
    except InvalidVersion:
        return (0, Version("0"), root)


def _toolkit_at(root: str, nvcc: str, run: Run) -> be.Toolkit:
    res = run([nvcc, "--version"], timeout=PROBE_TIMEOUT_S)
    release = be.parse_nvcc_release(res.stdout) if res.ok else None
    if release is None:
        raise InputError(f"{nvcc} --version: {res.describe_failure() if not res.ok else 'no release line'}")
    archs = run([nvcc, "--list-gpu-arch"], timeout=PROBE_TIMEOUT_S)
    gpu_archs = be.parse_gpu_arch_list(archs.stdout) if archs.ok else None
    host_gcc = None
    for candidate in [os.path.join(root, "include", "crt", "host_config.h"), *glob.glob(os.path.join(root, "targets", "*", "include", "crt", "host_config.h"))]:
        text = _read_text(candidate)
        if text is not None:
            host_gcc = be.parse_host_config(text)
            break
    return be.Toolkit(root=root, nvcc=nvcc, release=release, gpu_archs=gpu_archs, host_gcc=host_gcc)


def resolve_arch(spec: str, run: Run = runner.run) -> tuple[str, str]:
    """--arch "8.0;9.0+PTX" or auto (the compute capabilities of this host's GPUs)."""
    if spec.strip().lower() != "auto":
        try:
            arch_list, _ = be.normalize_arch_list(spec)
        except ValueError as exc:
            raise InputError(f"--arch {spec}: {exc}") from None
        return arch_list, "--arch"
    res = run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], timeout=PROBE_TIMEOUT_S)
    ccs = [line.strip() for line in res.stdout.splitlines() if re.fullmatch(r"\d+\.\d+", line.strip())] if res.ok else []
    if not ccs:
        why = res.describe_failure() if not res.ok else "it listed no GPU"
        raise InputError(f"--arch auto: no GPU found on this host (nvidia-smi: {why}); name the targets, e.g. --arch '8.0;9.0+PTX'")
    return be.arch_list_from_ccs(ccs), f"host GPUs ({', '.join(ccs)})"


def resolve_lib(lib: str, spec: str, toolkit: be.Toolkit, layout: be.Layout) -> be.LibChoice:
    """--nccl/--cudnn VERSION | PATH | bundled (| none for cuDNN)."""
    word = spec.strip().lower()
    if word == "bundled":
        return be.LibChoice(lib, "bundled")
    if word == "none":
        if lib == "nccl":
            raise InputError("--nccl none: not supported (USE_NCCL=0 drops torch.distributed's NCCL backend); use bundled, a version or a path")
        return be.LibChoice(lib, "none")
    if VERSION_LIKE.match(spec.strip()):
        version = spec.strip()
        include, library = be.pip_paths(layout, lib, version)
        return be.LibChoice(lib, "pip", version=version, package=f"nvidia-{lib}-cu{toolkit.major}", include_dir=include,
                            library_file=library, cuda_major=toolkit.major, cuda_major_source=f"nvidia-{lib}-cu{toolkit.major}")
    return lib_at_path(lib, spec)


_HEADER = {"nccl": ("nccl.h",), "cudnn": ("cudnn_version.h", "cudnn.h")}


def lib_at_path(lib: str, spec: str) -> be.LibChoice:
    """An existing install: a prefix with include/ and lib/ (or lib64/), a pip layout
    (site-packages/nvidia/<lib>) or a site-packages folder holding one."""
    base = os.path.abspath(spec)
    if not os.path.isdir(base):
        raise InputError(f"--{lib} {spec}: not a directory (expected a version, a path or 'bundled')")
    candidates = [base, os.path.join(base, "nvidia", lib)]
    for root in candidates:
        include = next((d for d in (os.path.join(root, "include"), root) if any(os.path.isfile(os.path.join(d, h)) for h in _HEADER[lib])), None)
        libfile = _find_library(root, be.SONAME[lib])
        if include and libfile:
            header = next(os.path.join(include, h) for h in _HEADER[lib] if os.path.isfile(os.path.join(include, h)))
            text = _read_text(header) or ""
            version = libscan.parse_nccl_header(text) if lib == "nccl" else libscan.parse_cudnn_header(text)
            cuda_major, how = _lib_cuda_major(lib, root, libfile)
            return be.LibChoice(lib, "path", version=version, include_dir=include, library_file=libfile,
                                cuda_major=cuda_major, cuda_major_source=how)
    return be.LibChoice(lib, "path")  # the pre-flight reports what is missing


def _find_library(root: str, soname: str) -> str | None:
    found: list[str] = []
    for sub in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu", ""):
        folder = os.path.join(root, sub) if sub else root
        found += sorted(glob.glob(os.path.join(folder, soname + "*")))
        if found:
            break
    real = [f for f in found if not f.endswith(".a")]
    # Prefer the SONAME file (libnccl.so.2), else the longest versioned name, else the dev link.
    versioned = [f for f in real if re.search(r"\.so\.\d+$", f)] or [f for f in real if re.search(r"\.so\.\d", f)]
    if versioned:
        return min(versioned, key=len)
    return real[0] if real else None


def _lib_cuda_major(lib: str, root: str, libfile: str) -> tuple[int | None, str]:
    """The CUDA major a library was built for: NCCL says so inside libnccl ("NCCL version
    2.30.7+cuda13.3"); a pip cuDNN says so in its dist-info name (nvidia_cudnn_cu12-...)."""
    if lib == "nccl":
        found = scan_nccl_library(libfile)
        if found is not None:
            return found[1], f"\"NCCL version {found[0]}+cuda{found[1]}\" in {os.path.basename(libfile)}"
    site = os.path.dirname(os.path.dirname(root)) if os.path.basename(os.path.dirname(root)) == "nvidia" else None
    if site:
        for info in glob.glob(os.path.join(site, f"nvidia_{lib}_cu*.dist-info")):
            m = re.search(rf"nvidia_{lib}_cu(\d+)-", os.path.basename(info))
            if m:
                return int(m.group(1)), os.path.basename(info)
    m = re.search(r"cuda[-_]?(\d{2})(?:\.\d)?(?:/|$|\b)", libfile)
    if m:
        return int(m.group(1)), f"the path {libfile}"
    return None, ""


def scan_nccl_library(path: str) -> tuple[str, int] | None:
    """("2.30.7", 13) from the "NCCL version 2.30.7+cuda13.3" string inside a (large) libnccl,
    read a chunk at a time by the nccl probe's scanner, through the whole file."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    found = libscan.scan_embedded(Host.live_host(env={}), os.path.abspath(path), limit=max(size, 1))
    major = libscan.version_major(found[1]) if found else None
    return (found[0], major) if found and major is not None else None


_PY_PROBE = (
    "import json, sys, importlib.util; "
    "print(json.dumps({'executable': sys.executable, 'version': '.'.join(map(str, sys.version_info[:3])), "
    "'prefix': sys.prefix, 'base_prefix': sys.base_prefix, 'has_pip': importlib.util.find_spec('pip') is not None}))"
)


def probe_python(path: str, run: Run = runner.run) -> be.PythonEnv:
    """Run the chosen interpreter once. The path is kept as given (a venv's bin/python is a
    symlink; resolving it would escape the venv)."""
    exe = os.path.abspath(path) if "/" in path else (shutil.which(path) or path)
    res = run([exe, "-c", _PY_PROBE], timeout=PROBE_TIMEOUT_S)
    if not res.ok:
        return be.PythonEnv(exe, error=f"cannot run it: {res.describe_failure()}")
    try:
        data = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return be.PythonEnv(exe, error="it did not answer a version probe (not a Python interpreter?)")
    prefix, base = data.get("prefix"), data.get("base_prefix")
    if prefix == base and prefix and os.path.isdir(os.path.join(prefix, "conda-meta")) and not os.path.isfile(os.path.join(prefix, "bin", "conda")):
        base = None  # a conda env (not the base install) is an isolated environment too
    return be.PythonEnv(exe, version=data.get("version"), prefix=prefix, base_prefix=base, has_pip=bool(data.get("has_pip")))


def probe_host(env: Mapping[str, str], run: Run, python: be.PythonEnv, workdir: str) -> be.BuildHost:
    path = env.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    py_bin = os.path.dirname(python.executable)
    gxx_path = env.get("CUDAHOSTCXX") or shutil.which("g++", path=path)
    others = []
    seen = {os.path.realpath(gxx_path)} if gxx_path else set()
    for folder in path.split(":"):
        for candidate in sorted(glob.glob(os.path.join(folder, "g++-[0-9]*"))):
            real = os.path.realpath(candidate)
            if re.fullmatch(r"g\+\+-\d+", os.path.basename(candidate)) and real not in seen and os.access(candidate, os.X_OK):
                seen.add(real)
                others.append(be.Tool(candidate, _gcc_version(candidate, run)))
    tool_path = f"{py_bin}:{path}"
    return be.BuildHost(
        cores=_cores(),
        mem_available_bytes=_mem_available(),
        disk_free_bytes=_disk_free(workdir),
        host_cxx=be.Tool(gxx_path, _gcc_version(gxx_path, run) if gxx_path else None),
        other_gxx=tuple(others),
        cmake=_tool("cmake", tool_path, run),
        ninja=_tool("ninja", tool_path, run),
        ccache=shutil.which("ccache", path=path),
        git=shutil.which("git", path=path),
        path=path,
    )


def _gcc_version(path: str, run: Run) -> str | None:
    res = run([path, "-dumpfullversion", "-dumpversion"], timeout=PROBE_TIMEOUT_S)
    return parse_dumpversion(res.stdout) if res.ok else None


def _tool(name: str, path: str, run: Run) -> be.Tool:
    found = shutil.which(name, path=path)
    if not found:
        return be.Tool(None, None)
    res = run([found, "--version"], timeout=PROBE_TIMEOUT_S)
    return be.Tool(found, be.parse_tool_version(res.stdout) if res.ok else None)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _mem_available() -> int | None:
    text = _read_text("/proc/meminfo") or ""
    m = re.search(r"^MemAvailable:\s+(\d+)\s+kB", text, re.M)
    return int(m.group(1)) * 1024 if m else None


def _disk_free(path: str) -> int | None:
    probe = path
    while probe and not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return None


def _read_text(path: str, limit: int = 4 * 1024 * 1024) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return None


# =========================================================================== plan
@dataclass(frozen=True)
class BuildPlan:
    """The build as data, in three parts so the driver can stream the long middle one."""

    request: be.BuildRequest
    layout: be.Layout
    env: Mapping[str, str]
    prepare: tuple[Step, ...]
    build: Step
    verify: tuple[Step, ...]
    files: tuple[FileWrite, ...]
    notes: tuple[str, ...]
    cmake_only: bool = False

    def to_plan(self) -> Plan:
        title = f"build torch {self.request.torch} with CUDA {self.request.toolkit.release}" + (" (cmake only)" if self.cmake_only else "")
        return Plan(recipe=RECIPE, title=title, steps=(*self.prepare, self.build), files=self.files,
                    env=dict(self.env), verify=self.verify, notes=self.notes)


def make_plan(req: be.BuildRequest, host: be.BuildHost, kb, cmake_only: bool = False) -> tuple[be.Preflight, BuildPlan | None]:
    """The pre-flight, and the plan when it passed (None when it found errors)."""
    kb_cuda = _kb_area(kb, "cuda")
    pf = be.preflight(req, host, kb.build, kb_cuda, cmake_only=cmake_only)
    if not pf.ok:
        return pf, None
    if pf.host_cxx and pf.host_cxx != req.host_cxx_override:
        req = dataclasses.replace(req, host_cxx_override=pf.host_cxx)
    return pf, build_plan(req, host, kb.build, pf.pip_tools, cmake_only)


def _kb_area(kb, name: str):
    try:
        return getattr(kb, name)
    except Exception:  # another area's KB being broken must not stop a build plan
        return None


def build_plan(req: be.BuildRequest, host: be.BuildHost, kb_build, pip_tools: Sequence[str] = (), cmake_only: bool = False) -> BuildPlan:
    layout = be.Layout(req.workdir)
    py = req.python.executable
    src = req.source or layout.src
    py_bin = posixpath.dirname(py)
    env = be.build_env(req, host, kb_build, layout, extra_path=[py_bin])
    prepare: list[Step] = []

    if req.source is None:
        tag = f"v{req.torch}"
        prepare.append(Step(("git", "clone", "--branch", tag, "--depth", "1", "--recurse-submodules", "--shallow-submodules", req.git_url, src),
                            why=f"PyTorch {tag} with its submodules", timeout_s=PIP_TIMEOUT_S, skip_if=("test", "-e", f"{src}/.git"),
                            undo=f"rm -rf {shlex.quote(src)}"))
        prepare.append(Step(("git", "-C", src, "submodule", "update", "--init", "--recursive", "--depth", "1"),
                            why="finish any submodule a previous clone left out", timeout_s=PIP_TIMEOUT_S))

    requirements = kb_build.requirements_file(req.torch)
    prepare.append(Step((py, "-m", "pip", "install", "-r", f"{src}/{requirements}", *pip_tools),
                        why=f"torch {req.torch}'s build requirements into {py}" + (f" (plus {', '.join(pip_tools)}: the host's are missing or too old)" if pip_tools else ""),
                        timeout_s=PIP_TIMEOUT_S))

    for lib in (req.nccl, req.cudnn):
        if lib.kind == "pip":
            prepare.append(Step((py, "-m", "pip", "install", "--no-deps", "--target", layout.pip_root(lib.lib), f"{lib.package}=={lib.version}"),
                                why=f"{lib.package} {lib.version} into the build prefix (headers + library; not into the environment)",
                                timeout_s=PIP_TIMEOUT_S, skip_if=("test", "-f", lib.library_file or ""),
                                undo=f"rm -rf {shlex.quote(layout.pip_root(lib.lib))}"))
        if lib.pinned:
            prepare += _shim_steps(layout, lib)

    files: list[FileWrite] = []
    verify: list[Step] = []
    if cmake_only:
        cmd = kb_build.cmake_only_command(req.torch)
        build = Step(_fill(cmd.argv, py, layout.dist), why="configure only (CMake), then stop: inspect build/CMakeCache.txt",
                     cwd=src, timeout_s=CMAKE_ONLY_TIMEOUT_S)
    else:
        cmd = kb_build.build_command(req.torch)
        build = Step(_fill(cmd.argv, py, layout.dist), why=f"build the wheel into {layout.dist} (log: {layout.log})",
                     cwd=src, timeout_s=BUILD_TIMEOUT_S)
        files.append(FileWrite(layout.verify_script, VERIFY_SCRIPT, mode=0o755, why="proves the built torch uses the chosen CUDA, NCCL and cuDNN"))
        verify = _verify_steps(req, layout)
    notes = _notes(req, kb_build, env, cmake_only, src)
    return BuildPlan(req, layout, env, tuple(prepare), build, tuple(verify), tuple(files), notes, cmake_only)


def _fill(argv: Iterable[str], python: str, dist: str) -> tuple[str, ...]:
    return tuple(python if a == "{python}" else dist if a == "{dist}" else a for a in argv)


def _shim_steps(layout: be.Layout, lib: be.LibChoice) -> list[Step]:
    """prefix/<lib>/{include -> the headers, lib/lib<lib>.so(.N) -> the chosen library}: a
    folder holding exactly one copy, so CMake's find_library cannot drift to another."""
    pfx = layout.lib_prefix(lib.lib)
    so = be.SONAME[lib.lib]
    real = lib.library_file or ""
    base = posixpath.basename(real)
    steps = [
        Step(("mkdir", "-p", f"{pfx}/lib"), why=f"{lib.lib}: a prefix holding only the chosen {lib.lib}"),
        Step(("ln", "-sfn", lib.include_dir or "", f"{pfx}/include")),
        Step(("ln", "-sf", real, f"{pfx}/lib/{base}")),
    ]
    if base != so:
        steps.append(Step(("ln", "-sf", base, f"{pfx}/lib/{so}"), why=f"the link-time name {so} that CMake's find_library looks for"))
    return steps


def _verify_steps(req: be.BuildRequest, layout: be.Layout) -> list[Step]:
    py = req.python.executable
    wheel_version = be.wheel_version(req)
    pins = [f"{lib.package}=={lib.version}" for lib in (req.nccl, req.cudnn) if lib.kind == "pip"]
    steps = [Step((py, "-m", "pip", "install", "--force-reinstall", "--no-index", "--find-links", layout.dist, "--no-deps", f"torch=={wheel_version}"),
                  why="install the wheel just built (from the dist folder only)", timeout_s=PIP_TIMEOUT_S),
             Step((py, "-m", "pip", "install", "--find-links", layout.dist, f"torch=={wheel_version}", *pins),
                  why="its Python dependencies" + (" and the same NCCL/cuDNN wheels it was built against" if pins else ""), timeout_s=PIP_TIMEOUT_S)]
    args = [py, layout.verify_script, "--cuda", req.toolkit.release, "--arch", req.arch_list]
    if req.nccl.pinned and req.nccl.version:
        args += ["--nccl", req.nccl.version]
    if req.cudnn.pinned and req.cudnn.version:
        args += ["--cudnn", req.cudnn.version]
    ld = [posixpath.dirname(lib.library_file) for lib in (req.nccl, req.cudnn) if lib.kind == "path" and lib.library_file]
    step_env = {"LD_LIBRARY_PATH": ":".join(dict.fromkeys(ld))} if ld else {}
    # Run from the workdir, never the source tree: `import torch` there finds the
    # unbuilt torch/ folder instead of the installed wheel.
    steps.append(Step(tuple(args), why="torch.version.cuda, NCCL, cuDNN and the arch list match the request; GPU smoke tests where a GPU exists",
                      env=step_env, cwd=layout.workdir, timeout_s=600.0))
    return steps


def _notes(req: be.BuildRequest, kb_build, env: Mapping[str, str], cmake_only: bool, src: str) -> tuple[str, ...]:
    reads = [name for name in ("PYTHON_EXECUTABLE", "Python_EXECUTABLE") if kb_build.reads(req.torch, name)]
    notes = [
        f"torch {req.torch}, CUDA {req.toolkit.release} ({req.toolkit.nvcc}), arch {req.arch_list} from {req.arch_from}",
        f"NCCL: {_lib_note(req.nccl)}; cuDNN: {_lib_note(req.cudnn)}",
        f"Python: every build command runs {req.python.executable}; setup.py passes it to CMake as -D{'/-D'.join(reads) or 'Python_EXECUTABLE'}",
        f"MAX_JOBS={env.get('MAX_JOBS')} " + ("(--jobs)" if req.jobs else f"(cores, capped at ~{kb_build.gib_per_job:g} GiB of available memory per nvcc job)"),
    ]
    ld = [posixpath.dirname(lib.library_file) for lib in (req.nccl, req.cudnn) if lib.kind == "path" and lib.library_file]
    if ld and not cmake_only:
        notes.append(f"the wheel does not carry NCCL/cuDNN from a path: wherever it is used, put {':'.join(dict.fromkeys(ld))} on LD_LIBRARY_PATH")
    if cmake_only:
        notes.append(f"--cmake-only: afterwards see {src}/build/CMakeCache.txt; run the same command without --cmake-only to build")
    return tuple(notes)


def _lib_note(lib: be.LibChoice) -> str:
    if lib.kind == "pip":
        return f"{lib.package}=={lib.version} (pip wheel, fetched into the build prefix)"
    if lib.kind == "path":
        return f"{lib.version or 'unknown version'} at {lib.library_file}"
    if lib.kind == "none":
        return "off (USE_CUDNN=0)"
    return "bundled (third_party/nccl)" if lib.lib == "nccl" else "whatever CMake finds (not pinned)"


# =========================================================================== --docker
CONTAINER_WORKDIR = "/fwd"
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# nvidia/cuda devel images carry the toolkit and g++ but no Python or git.
CONTAINER_PACKAGES = ("git", "python3", "python3-venv", "python3-dev", "python3-pip")


def docker_plan(opts: Options, image: str, kb, env: Mapping[str, str] | None = None, run: Run = runner.run) -> tuple[be.Preflight, BuildPlan | None]:
    """The same build inside a CUDA devel image (e.g. nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04):
    an in-container script made by the same plan code, and one `docker run` that executes it
    with --workdir mounted at /fwd. Printed only: fwdoctor does not drive Docker here."""
    env = dict(os.environ if env is None else env)
    torch = _torch_version(opts)
    if not VERSION_LIKE.match(opts.cuda):
        raise InputError(f"--cuda {opts.cuda}: with --docker give the image's CUDA version (e.g. 12.8), not a host path")
    workdir = os.path.abspath(opts.workdir or f"fwdoctor-build/torch-{torch}-cu{opts.cuda.replace('.', '')}-docker")
    inside = be.Layout(CONTAINER_WORKDIR)
    toolkit = be.Toolkit("/usr/local/cuda", "/usr/local/cuda/bin/nvcc", opts.cuda)  # archs and gcc bound: from the KB / not checked
    libs = []
    for lib, spec in (("nccl", opts.nccl), ("cudnn", opts.cudnn)):
        if "/" in spec:
            raise InputError(f"--{lib} {spec}: a host path is not visible inside the container; give a version, bundled or none")
        libs.append(resolve_lib(lib, spec, toolkit, inside))
    arch_list, arch_from = resolve_arch(opts.arch, run)
    python = be.PythonEnv(f"{CONTAINER_WORKDIR}/venv/bin/python", None, f"{CONTAINER_WORKDIR}/venv", "/usr", True)
    jobs = int(opts.jobs) if opts.jobs.isdigit() and int(opts.jobs) > 0 else None
    req = be.BuildRequest(torch=torch, toolkit=toolkit, nccl=libs[0], cudnn=libs[1], python=python, arch_list=arch_list,
                          arch_from=arch_from, workdir=CONTAINER_WORKDIR, source=f"{CONTAINER_WORKDIR}/src" if opts.source else None,
                          git_url=opts.git or "https://github.com/pytorch/pytorch.git", jobs=jobs, ccache=False, debug=opts.debug)
    host = be.BuildHost(cores=_cores(), mem_available_bytes=_mem_available(), disk_free_bytes=_disk_free(workdir),
                        host_cxx=be.Tool("/usr/bin/g++", None), git="/usr/bin/git", path=CONTAINER_PATH)
    return docker_plan_for(req, host, kb, image, workdir, opts.source, opts.cmake_only)


def docker_plan_for(req: be.BuildRequest, host: be.BuildHost, kb, image: str, host_workdir: str, host_source: str | None,
                    cmake_only: bool = False) -> tuple[be.Preflight, BuildPlan | None]:
    pf, inner = make_plan(req, host, kb, cmake_only=cmake_only)
    if inner is None:
        return pf, None
    setup = (Step(("apt-get", "update")), Step(("apt-get", "install", "-y", "--no-install-recommends", *CONTAINER_PACKAGES)),
             Step(("python3", "-m", "venv", f"{CONTAINER_WORKDIR}/venv"), skip_if=("test", "-x", req.python.executable)))
    script = dataclasses.replace(inner, prepare=(*setup, *inner.prepare)).to_plan().to_shell()
    script_path = f"{host_workdir}/in-container.sh"
    mounts = ["-v", f"{host_workdir}:{CONTAINER_WORKDIR}"]
    if host_source:
        mounts += ["-v", f"{os.path.abspath(host_source)}:{CONTAINER_WORKDIR}/src"]
    step = Step(("docker", "run", "--rm", "--gpus", "all", *mounts, image, "sh", f"{CONTAINER_WORKDIR}/in-container.sh"),
                why=f"the build inside {image} (script: {script_path})", timeout_s=BUILD_TIMEOUT_S)
    notes = (*inner.notes, f"--docker {image}: the CUDA, g++ and cmake are the image's; {host_workdir} is mounted at {CONTAINER_WORKDIR}",
             "not run by fwdoctor: needs Docker and the NVIDIA container toolkit (--gpus all); the host compiler is not pre-checked")
    outer = BuildPlan(req, be.Layout(host_workdir), {}, (), step, (),
                      (FileWrite(script_path, script, mode=0o755, why="the in-container build (same plan as without --docker)"),), notes, cmake_only)
    return pf, outer


# The proof that runs after installing the wheel. Exit 0 only when every requested
# version matches; prints one JSON object either way.
VERIFY_SCRIPT = '''#!/usr/bin/env python3
"""Written by fwdoctor build torch: check the installed torch against the build request."""
import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", required=True)
parser.add_argument("--nccl")
parser.add_argument("--cudnn")
parser.add_argument("--arch", required=True)
args = parser.parse_args()

import torch

problems = []
seen = {"torch": torch.__version__, "file": torch.__file__, "cuda": torch.version.cuda}
if torch.version.cuda is None or torch.version.cuda.split(".")[:2] != args.cuda.split(".")[:2]:
    problems.append(f"torch.version.cuda is {torch.version.cuda}, wanted {args.cuda}")
if args.nccl:
    have = ".".join(map(str, torch.cuda.nccl.version()))
    seen["nccl"] = have
    if have.split(".")[:3] != args.nccl.split(".")[:3]:
        problems.append(f"torch.cuda.nccl.version() is {have}, wanted {args.nccl}")
if args.cudnn:
    code = torch.backends.cudnn.version()
    seen["cudnn"] = code
    parts = [int(p) for p in args.cudnn.split(".")[:3]] + [0, 0]
    want = parts[0] * 10000 + parts[1] * 100 + parts[2] if parts[0] >= 9 else parts[0] * 1000 + parts[1] * 100 + parts[2]
    if code != want:
        problems.append(f"torch.backends.cudnn.version() is {code}, wanted {want} ({args.cudnn})")
flags = torch._C._cuda_getArchFlags().split()
seen["arch_flags"] = flags
for entry in filter(None, args.arch.replace(",", ";").split(";")):
    cc = entry.replace("+PTX", "")
    name = "sm_" + cc.replace(".", "")
    if name not in flags:
        problems.append(f"{name} missing from the built arch list {flags}")
    if entry.endswith("+PTX") and "compute_" + cc.replace(".", "") not in flags:
        problems.append(f"compute_{cc.replace('.', '')} (PTX) missing from the built arch list {flags}")
if torch.cuda.is_available():
    x = torch.randn(256, 256, device="cuda")
    seen["matmul"] = float((x @ x).sum().item())
    if args.cudnn:
        conv = torch.nn.Conv2d(3, 8, 3).cuda()
        seen["conv"] = list(conv(torch.randn(1, 3, 16, 16, device="cuda")).shape)
else:
    seen["smoke"] = "skipped: no GPU visible"
seen["problems"] = problems
print(json.dumps(seen, indent=2))
sys.exit(1 if problems else 0)
'''


# =========================================================================== execute
@dataclass
class BuildResult:
    ok: bool
    stage: str  # "prepare", "build", "verify", "done"
    message: str
    log_path: str
    progress: tuple[int, int] | None = None


ProgressFn = Callable[[str], None]


def execute(bp: BuildPlan, progress: ProgressFn | None = None, base_env: Mapping[str, str] | None = None) -> BuildResult:
    """Run the plan: prepare (apply layer), build (streamed, logged, [N/M] progress), verify."""
    say = progress or (lambda line: None)
    os.makedirs(bp.layout.workdir, exist_ok=True)
    base = dict(os.environ if base_env is None else base_env)
    log_path = bp.layout.log
    apply_plan = _apply_plan()
    prep = Plan(recipe=RECIPE, title="prepare", steps=bp.prepare, files=bp.files, env=dict(bp.env))
    result = apply_plan(prep, confirm=None, log_path=log_path, progress=say, env=base)
    if not result.ok:
        return BuildResult(False, "prepare", result.summary(), log_path)
    env = {**base, **bp.env, **bp.build.env}
    say(f"build: {' '.join(shlex.quote(a) for a in bp.build.argv)} (in {bp.build.cwd}; log {log_path})")
    status = stream(bp.build.argv, env=env, cwd=bp.build.cwd, timeout=bp.build.timeout_s, log_path=log_path, on_progress=_progress_printer(say))
    if not status.ok:
        return BuildResult(False, "build", f"build failed: {status.reason}; last lines:\n{status.tail}\nwhole log: {log_path}", log_path, status.last_progress)
    if bp.cmake_only:
        return BuildResult(True, "done", f"configured: {bp.build.cwd}/build/CMakeCache.txt", log_path, status.last_progress)
    check = Plan(recipe=RECIPE, title="verify", steps=bp.verify, env=dict(bp.env))
    result = apply_plan(check, confirm=None, log_path=log_path, progress=say, env=base)
    if not result.ok:
        return BuildResult(False, "verify", result.summary(), log_path, status.last_progress)
    return BuildResult(True, "done", f"built and verified: wheel in {bp.layout.dist}", log_path, status.last_progress)


def _apply_plan():
    from fwdoctor.recipes.apply import apply_plan

    return apply_plan


def _progress_printer(say: ProgressFn, every_s: float = 5.0) -> Callable[[int, int], None]:
    last: list[float | None] = [None]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or last[0] is None or now - last[0] >= every_s:
            last[0] = now
            say(f"build: {done}/{total} ({100.0 * done / total:.1f}%)")

    return show


@dataclass
class StreamStatus:
    returncode: int | None
    timed_out: bool = False
    reason: str = ""
    tail: str = ""
    last_progress: tuple[int, int] | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def stream(argv: Sequence[str], env: Mapping[str, str], cwd: str | None, timeout: float, log_path: str,
           on_progress: Callable[[int, int], None] | None = None, on_line: Callable[[str], None] | None = None) -> StreamStatus:
    """Run a long command through fwdoctor.runner.stream, appending every output line to
    `log_path` as it comes and reporting ninja's [N/M]."""
    last: list[tuple[int, int] | None] = [None]
    os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
    with open(log_path, "a", encoding="utf-8", errors="replace") as log:
        log.write(f"\n$ {' '.join(shlex.quote(a) for a in argv)}  # cwd={cwd}\n")
        log.flush()

        def line_seen(line: str) -> None:
            log.write(line + "\n")
            if on_line:
                on_line(line)
            step = be.parse_ninja_progress(line)
            if step:
                last[0] = step
                if on_progress:
                    on_progress(*step)

        try:
            result = runner.stream(argv, timeout=timeout, env=env, cwd=cwd, on_stderr_line=line_seen, merge_stderr=True)
        except KeyboardInterrupt:  # runner.stream has already killed the whole tree
            log.write("# interrupted\n")
            return StreamStatus(None, reason="interrupted", last_progress=last[0])
        tail = "\n".join(result.stderr_tail.splitlines()[-20:])
        if result.error:
            log.write(f"# could not start: {result.error}\n")
            return StreamStatus(None, reason=f"could not start {argv[0]}: {result.error}")
        log.write(f"# exit status {result.returncode}\n")
    if result.timed_out:
        return StreamStatus(None, True, f"no end within {timeout:.0f} s (killed)", tail, last[0])
    reason = "" if result.returncode == 0 else f"exit status {result.returncode}"
    return StreamStatus(result.returncode, False, reason, tail, last[0])
