"""Recipe `torch-source`: build a PyTorch wheel from source against a chosen CUDA toolkit,
NCCL, cuDNN and Python.

The same flow as every other check, then a plan:
- `gather(options)`: the command line becomes seed facts (`request.build.*`), and the build
  probes (doctor/probes/build.py) read the host through fwdoctor.host.Host into Facts.
- `make_plan(facts, kb)`: the build rules (doctor/rules/build.py) judge the facts through
  fwdoctor.engine.judge; errors refuse the build, otherwise a `BuildPlan` is made from the
  facts and the findings' decisions (CUDAHOSTCXX, tools to install). Pure:
  `to_plan().to_shell()` is --dry-run. An option that names nothing usable (no such
  toolkit, a bad arch list) is an unknown input fact, raised as `InputError`.
- `execute(build_plan)` runs it: preparation and verification through recipes/apply.py,
  the long build step through a streaming runner that keeps the whole log and reports
  ninja's [N/M] as progress.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from fwdoctor import runner
from fwdoctor.engine import Report, collect, judge
from fwdoctor.host import Host
from fwdoctor.kb import KB
from fwdoctor.kb.build import BuildKB
from fwdoctor.libraries import library
from fwdoctor.model import Fact, Facts
from fwdoctor.probes.build import BUILD_PROBES, HOST_SIDE_PROBES
from fwdoctor.probes.build_toolkit import VERSION_LIKE
from fwdoctor.quoting import comment, shell_line, shell_word
from fwdoctor.recipes import buildenv as be
from fwdoctor.recipes.apply import apply_plan
from fwdoctor.recipes.plan import FileWrite, Plan, Step
from fwdoctor.recipes.scripts import read as read_script
from fwdoctor.rules import build as build_rules

RECIPE = "torch-source"
BUILD_TIMEOUT_S = 48 * 3600.0  # a full CUDA build with many arches on few cores takes hours
CMAKE_ONLY_TIMEOUT_S = 3600.0
PIP_TIMEOUT_S = 3600.0
PROBE_TIMEOUT_S = 30.0  # nvcc --list-gpu-arch on a cold disk, a g++ on NFS
# The proof that runs after installing the wheel: exit 0 only when every requested version
# matches; prints one JSON object either way. Its cuDNN formula is fwdoctor.libraries' CUDNN
# written again (it runs in the built torch's interpreter, without fwdoctor);
# tests/test_libraries.py proves the two agree.
VERIFY_SCRIPT = read_script("verify_torch.py")

# The facts a plan cannot be made without; unknown, they are an unusable option (exit 2)
# whose reason the probe wrote ("--cuda 12.99: no such toolkit installed ...").
INPUTS: tuple[str, ...] = ("build.torch", "build.source", "build.toolkit", "build.arch", "build.nccl", "build.cudnn", "build.python")


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


# =========================================================================== facts
def _path_or_word(spec: str, words: Sequence[str]) -> str:
    """A version or keyword as given; anything else is a path, made absolute here (the
    probes read it as a host-view path)."""
    text = spec.strip()
    return text if VERSION_LIKE.match(text) or text.lower() in words else os.path.abspath(spec)


def _jobs(text: str) -> int | None:
    if text == "auto":
        return None
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"--jobs {text}: expected a positive number or 'auto'")
    return int(text)


def argv_value(option: str, value: str) -> str:
    """`value` if a program can only read it as a value: a leading '-' would make git or
    docker read it as an option (`--git --upload-pack=CMD` runs CMD), and a control
    character would break the printed plan's line. Raises InputError otherwise."""
    if value.startswith("-"):
        raise InputError(f"{option} {value}: starts with '-', so the program it is passed to would read it as an option")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise InputError(f"{option} {value!r}: a control character (newline, tab, NUL) in the value")
    return value


def seed(opts: Options) -> list[Fact]:
    """The build request as seed facts (doctor/FACTS.md, `request.build.*`). Raises
    InputError for an option that is wrong whatever the host."""
    return [
        Fact("request.build.torch", opts.version or None, source="--version"),
        Fact("request.build.cuda", os.path.abspath(opts.cuda) if "/" in opts.cuda else opts.cuda, source="--cuda"),
        Fact("request.build.nccl", _path_or_word(opts.nccl, ("bundled", "none")), source="--nccl"),
        Fact("request.build.cudnn", _path_or_word(opts.cudnn, ("bundled", "none")), source="--cudnn"),
        Fact("request.build.arch", opts.arch, source="--arch"),
        Fact("request.build.python", os.path.abspath(opts.python) if "/" in opts.python else opts.python, source="--python"),
        Fact("request.build.workdir", os.path.abspath(opts.workdir) if opts.workdir else None, source="--workdir"),
        Fact("request.build.source", os.path.abspath(opts.source) if opts.source else None, source="--source"),
        Fact("request.build.git", argv_value("--git", opts.git) if opts.git else None, source="--git"),
        Fact("request.build.jobs", _jobs(opts.jobs), source="--jobs"),
        Fact("request.build.ccache", bool(opts.ccache), source="--ccache"),
        Fact("request.build.debug", bool(opts.debug), source="--debug"),
        Fact("request.build.cmake_only", bool(opts.cmake_only), source="--cmake-only"),
    ]


def gather(opts: Options, env: Mapping[str, str] | None = None, host: Host | None = None) -> Facts:
    """The build's facts about this host (or `host`). Raises InputError for a bad option."""
    facts = seed(opts)
    return collect(host or Host.live_host(env, command_timeout=PROBE_TIMEOUT_S), BUILD_PROBES, seed=facts)


def check_inputs(facts: Facts) -> None:
    """InputError with the probe's reason for the first input fact that is unknown."""
    for key in INPUTS:
        if not facts.known(key):
            raise InputError(facts.why(key))


# =========================================================================== plan
def preflight(facts: Facts, kb: KB) -> Report:
    """Every check that matters before hours of compiling: the build rules, judged."""
    return judge(facts, kb, build_rules.RULES)


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


def make_plan(facts: Facts, kb: KB) -> tuple[Report, BuildPlan | None]:
    """The pre-flight, and the plan when it found no error (None when it did). Raises
    InputError when an input fact is unknown."""
    check_inputs(facts)
    report = preflight(facts, kb)
    if report.has_errors:
        return report, None
    release = str(facts["build.toolkit"]["release"])
    workdir = facts["request.build.workdir"] or os.path.abspath(be.default_workdir(str(facts["build.torch"]), release))
    req = be.request_from(facts, report.findings, workdir)
    return report, build_plan(req, kb.build, cmake_only=bool(facts["request.build.cmake_only"]))


def build_plan(req: be.BuildRequest, kb_build: BuildKB, cmake_only: bool = False) -> BuildPlan:
    layout = be.Layout(req.workdir)
    py = req.python
    src = req.source or layout.src
    py_bin = posixpath.dirname(py)
    env = be.build_env(req, kb_build, layout, extra_path=[py_bin])
    prepare: list[Step] = []

    if req.source is None:
        tag = f"v{req.torch}"
        prepare.append(Step(("git", "clone", "--branch", tag, "--depth", "1", "--recurse-submodules", "--shallow-submodules", "--", req.git_url, src),
                            why=f"PyTorch {tag} with its submodules", timeout_s=PIP_TIMEOUT_S, skip_if=("test", "-e", f"{src}/.git"),
                            undo=f"rm -rf {shell_word(src)}"))
        prepare.append(Step(("git", "-C", src, "submodule", "update", "--init", "--recursive", "--depth", "1"),
                            why="finish any submodule a previous clone left out", timeout_s=PIP_TIMEOUT_S))

    requirements = kb_build.requirements_file(req.torch)
    pip_tools = req.pip_tools
    prepare.append(Step((py, "-m", "pip", "install", "-r", f"{src}/{requirements}", *pip_tools),
                        why=f"torch {req.torch}'s build requirements into {py}" + (f" (plus {', '.join(pip_tools)}: the host's are missing or too old)" if pip_tools else ""),
                        timeout_s=PIP_TIMEOUT_S))

    for lib in (req.nccl, req.cudnn):
        if lib.kind == "pip":
            prepare.append(Step((py, "-m", "pip", "install", "--no-deps", "--target", layout.pip_root(lib.lib), f"{lib.package}=={lib.version}"),
                                why=f"{lib.package} {lib.version} into the build prefix (headers + library; not into the environment)",
                                timeout_s=PIP_TIMEOUT_S, skip_if=("test", "-f", lib.library_file or ""),
                                undo=f"rm -rf {shell_word(layout.pip_root(lib.lib))}"))
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
    so = library(lib.lib).lib_prefix  # libnccl.so: the name CMake links against
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
    py = req.python
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


def _notes(req: be.BuildRequest, kb_build: BuildKB, env: Mapping[str, str], cmake_only: bool, src: str) -> tuple[str, ...]:
    reads = [name for name in ("PYTHON_EXECUTABLE", "Python_EXECUTABLE") if kb_build.reads(req.torch, name)]
    notes = [
        f"torch {req.torch}, CUDA {req.toolkit.release} ({req.toolkit.nvcc}), arch {req.arch_list} from {req.arch_from}",
        f"NCCL: {_lib_note(req.nccl)}; cuDNN: {_lib_note(req.cudnn)}",
        f"Python: every build command runs {req.python}; setup.py passes it to CMake as -D{'/-D'.join(reads) or 'Python_EXECUTABLE'}",
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


def container_facts(cuda: str, image: str) -> list[Fact]:
    """What the build inside an nvidia/cuda devel image works with. The image is not run,
    so these are what such an image holds (and what the plan puts there), not observations:
    the arch check falls back to the KB, the host compiler is not checked."""
    where = f"{image} (assumed, not probed)"
    return [
        Fact("build.toolkit", {"root": "/usr/local/cuda", "nvcc": "/usr/local/cuda/bin/nvcc", "release": cuda, "gpu_archs": None,
                               "host_gcc_min": None, "host_gcc_max": None, "host_config": None}, source=where),
        Fact("build.python", {"executable": f"{CONTAINER_WORKDIR}/venv/bin/python", "version": None, "prefix": f"{CONTAINER_WORKDIR}/venv",
                              "base_prefix": "/usr", "isolated": True, "has_pip": True, "error": ""}, source="the venv the plan makes in the container"),
        Fact("build.host_cxx", {"path": "/usr/bin/g++", "version": None, "from": "the image"}, source=where),
        Fact("build.gxx_installed", [], source=where),
        Fact("build.cmake", None, source=where),
        Fact("build.ninja", None, source=where),
        Fact("build.ccache", None, source=where),
        Fact("build.git", "/usr/bin/git", source=f"apt-get install {' '.join(CONTAINER_PACKAGES)} in the container"),
        Fact("build.path", CONTAINER_PATH, source=where),
    ]


def docker_facts(opts: Options, image: str, host: Host | None = None) -> Facts:
    """The facts of the same build inside `image`: the container's assumed ones, and this
    host's for what the container gets from it (GPUs for --arch auto, memory, cores, the
    disk of --workdir). Raises InputError."""
    if not VERSION_LIKE.match(opts.cuda):
        raise InputError(f"--cuda {opts.cuda}: with --docker give the image's CUDA version (e.g. 12.8), not a host path")
    for lib, spec in (("nccl", opts.nccl), ("cudnn", opts.cudnn)):
        if "/" in spec:
            raise InputError(f"--{lib} {spec}: a host path is not visible inside the container; give a version, bundled or none")
    # ccache is not in the image: --ccache does not apply inside it.
    request = [f for f in seed(opts) if f.key != "request.build.ccache"] + [Fact("request.build.ccache", False, source="--docker")]
    return collect(host or Host.live_host(command_timeout=PROBE_TIMEOUT_S), HOST_SIDE_PROBES, seed=[*request, *container_facts(opts.cuda, image)])


def docker_plan(opts: Options, image: str, kb: KB, host: Host | None = None) -> tuple[Report, BuildPlan | None]:
    """The same build inside a CUDA devel image (e.g. nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04):
    an in-container script made by the same plan code, and one `docker run` that executes it
    with --workdir mounted at /fwd. Printed only: fwdoctor does not drive Docker here."""
    argv_value("--docker", image)
    facts = docker_facts(opts, image, host)
    check_inputs(facts)
    suffix = "-docker"
    workdir = os.path.abspath(opts.workdir or be.default_workdir(str(facts["build.torch"]), opts.cuda, suffix))
    return docker_plan_for(facts, kb, image, workdir, opts.source)


def docker_plan_for(facts: Facts, kb: KB, image: str, host_workdir: str, host_source: str | None) -> tuple[Report, BuildPlan | None]:
    check_inputs(facts)
    report = preflight(facts, kb)
    if report.has_errors:
        return report, None
    req = be.request_from(facts, report.findings, CONTAINER_WORKDIR)
    req = dataclasses.replace(req, source=f"{CONTAINER_WORKDIR}/src" if host_source else None)
    cmake_only = bool(facts["request.build.cmake_only"])
    inner = build_plan(req, kb.build, cmake_only=cmake_only)
    setup = (Step(("apt-get", "update")), Step(("apt-get", "install", "-y", "--no-install-recommends", *CONTAINER_PACKAGES)),
             Step(("python3", "-m", "venv", f"{CONTAINER_WORKDIR}/venv"), skip_if=("test", "-x", req.python)))
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
    return report, outer


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
    prep = Plan(recipe=RECIPE, title="prepare", steps=bp.prepare, files=bp.files, env=dict(bp.env))
    result = apply_plan(prep, confirm=None, log_path=log_path, progress=say, env=base)
    if not result.ok:
        return BuildResult(False, "prepare", result.summary(), log_path)
    env = {**base, **bp.env, **bp.build.env}
    say(f"build: {shell_line(bp.build.argv)} (in {comment(str(bp.build.cwd))}; log {comment(str(log_path))})")
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
        log.write(f"\n$ {shell_line(argv)}  # cwd={comment(str(cwd))}\n")
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
