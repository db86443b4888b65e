"""The build of `fwdoctor build torch` as data: what was chosen (toolkit, NCCL, cuDNN,
Python, arch list, jobs), where it goes (the layout under --workdir), and the exact
environment variables the build gets.

Nothing here reads the machine or judges it: the choices come from the build's Facts
(doctor/probes/build.py) and the decisions of its pre-flight Findings
(doctor/rules/build.py), through `request_from`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from packaging.version import Version

from fwdoctor.host import DEFAULT_PATH
from fwdoctor.libraries import library
from fwdoctor.kb.build import BuildKB
from fwdoctor.model import Facts, Finding

GIB = 1024**3
DEFAULT_GIT_URL = "https://github.com/pytorch/pytorch.git"


# --------------------------------------------------------------------------- choices
@dataclass(frozen=True)
class Toolkit:
    """The chosen CUDA toolkit. `release` is nvcc's "release X.Y"."""

    root: str
    nvcc: str
    release: str

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

    @property
    def pinned(self) -> bool:
        return self.kind in ("pip", "path")


@dataclass(frozen=True)
class BuildRequest:
    """Everything one build needs, resolved to paths and versions."""

    torch: str
    toolkit: Toolkit
    nccl: LibChoice
    cudnn: LibChoice
    python: str  # the interpreter that runs every build command and receives the wheel
    arch_list: str  # TORCH_CUDA_ARCH_LIST form, "8.0;9.0+PTX"
    arch_from: str  # "--arch" or "host GPUs (...)" for messages
    workdir: str
    cores: int
    mem_available_bytes: int | None
    source: str | None = None  # an existing tree (--source); None: clone
    git_url: str = DEFAULT_GIT_URL
    jobs: int | None = None  # --jobs N; None: from RAM and cores
    launcher: str | None = None  # ccache, with --ccache
    debug: bool = False
    host_cxx: str | None = None  # CUDAHOSTCXX: the user's, or the g++-N the pre-flight chose
    pip_tools: tuple[str, ...] = ()  # installed into the environment ("cmake>=3.27", "ninja")
    path: str = DEFAULT_PATH  # the host's PATH, after the folders the build puts first


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


def pip_paths(layout: Layout, lib: str, version: str) -> tuple[str, str]:
    """(include dir, versioned library) an nvidia-<lib>-cuXX wheel installs under --target:
    nvidia/nccl/lib/libnccl.so.2 (the wheel ships no libnccl.so), nvidia/cudnn/lib/libcudnn.so.9."""
    spec = library(lib)
    root = f"{layout.pip_root(lib)}/{spec.pip_dir}"
    return f"{root}/include", f"{root}/lib/{spec.soname_file(version)}"


# --------------------------------------------------------------------------- from facts
def default_workdir(torch: str, release: str, suffix: str = "") -> str:
    """./fwdoctor-build/torch-2.9.1-cu128 (relative: the caller makes it absolute)."""
    return f"fwdoctor-build/torch-{torch}-cu{release.replace('.', '')}{suffix}"


def lib_choice(value: Mapping[str, Any], layout: Layout) -> LibChoice:
    """A build.nccl / build.cudnn fact as a LibChoice; a pip wheel's paths are the layout's."""
    lib, kind = str(value["lib"]), str(value["kind"])
    if kind == "pip":
        include, library = pip_paths(layout, lib, str(value["version"]))
        return LibChoice(lib, kind, str(value["version"]), value.get("package"), include, library)
    return LibChoice(lib, kind, value.get("version"), None, value.get("include_dir"), value.get("library_file"))


def host_cxx(facts: Facts, findings: Sequence[Finding]) -> str | None:
    """CUDAHOSTCXX: the user's own, else the g++-N the pre-flight switched to."""
    cxx = facts.get("build.host_cxx") or {}
    if cxx.get("from") == "CUDAHOSTCXX":
        return str(cxx["path"])
    return next((str(f.evidence["using"]) for f in findings if f.id == "host-compiler-unsupported" and f.evidence.get("using")), None)


def pip_tools(findings: Sequence[Finding]) -> tuple[str, ...]:
    """What the pre-flight said the plan installs into the environment, cmake before ninja."""
    wanted = {str(f.evidence.get("tool")): str(f.evidence["install"]) for f in findings if f.id == "build-tool-installed" and f.evidence.get("install")}
    return tuple(wanted[tool] for tool in ("cmake", "ninja") if tool in wanted)


def request_from(facts: Facts, findings: Sequence[Finding], workdir: str) -> BuildRequest:
    """The build the facts describe, with the pre-flight's decisions. Every input fact must
    be known (recipes/torch_source.py checks that first)."""
    tk = facts["build.toolkit"]
    layout = Layout(workdir)
    source = facts["build.source"]
    return BuildRequest(
        torch=str(facts["build.torch"]),
        toolkit=Toolkit(str(tk["root"]), str(tk["nvcc"]), str(tk["release"])),
        nccl=lib_choice(facts["build.nccl"], layout),
        cudnn=lib_choice(facts["build.cudnn"], layout),
        python=str(facts["build.python"]["executable"]),
        arch_list=str(facts["build.arch"]["list"]),
        arch_from=str(facts["build.arch"]["from"]),
        workdir=workdir,
        cores=int(facts.get("build.cores") or 1),
        mem_available_bytes=facts.get("build.mem_available_bytes"),
        source=str(source["path"]) if source else None,
        git_url=facts.get("request.build.git") or DEFAULT_GIT_URL,
        jobs=facts.get("request.build.jobs"),
        launcher=facts.get("build.ccache") if facts.get("request.build.ccache") else None,
        debug=bool(facts.get("request.build.debug")),
        host_cxx=host_cxx(facts, findings),
        pip_tools=pip_tools(findings),
        path=facts.get("build.path") or DEFAULT_PATH,
    )


# --------------------------------------------------------------------------- jobs
def max_jobs(cores: int, mem_available_bytes: int | None, gib_per_job: float) -> int:
    """Parallel compile jobs: one per core, but no more than RAM allows at `gib_per_job`
    each (nvcc on the flash-attention kernels peaks at several GB). At least 1."""
    jobs = max(1, cores)
    if mem_available_bytes is not None:
        jobs = min(jobs, int(mem_available_bytes // (gib_per_job * GIB)))
    return max(1, jobs)


def resolved_jobs(req: BuildRequest, gib_per_job: float) -> int:
    return req.jobs if req.jobs else max_jobs(req.cores, req.mem_available_bytes, gib_per_job)


# --------------------------------------------------------------------------- environment
def wheel_version(req: BuildRequest) -> str:
    """PYTORCH_BUILD_VERSION: "2.9.1+cu128", the official wheels' scheme. The local label
    also keeps `pip install torch==2.9.1+cu128` from picking PyPI's wheel over ours."""
    v = Version(req.toolkit.release)
    return f"{req.torch}+cu{v.major}{v.minor}"


def role_values(req: BuildRequest, kb_build: BuildKB, layout: Layout) -> dict[str, str | None]:
    """The value of each KB role (doctor/kb/build.py ROLES) for this build; None leaves the
    variable out."""
    nccl_pfx = layout.lib_prefix("nccl")
    cudnn_pfx = layout.lib_prefix("cudnn")
    return {
        "use_cuda": "1",
        "cuda_root": req.toolkit.root,
        "nvcc": req.toolkit.nvcc,
        "host_cxx": req.host_cxx,
        "arch_list": req.arch_list,
        "use_cudnn": "0" if req.cudnn.kind == "none" else "1",
        "cudnn_include": f"{cudnn_pfx}/include" if req.cudnn.pinned else None,
        "cudnn_lib_dir": f"{cudnn_pfx}/lib" if req.cudnn.pinned else None,
        "use_nccl": "1",
        "use_system_nccl": "1" if req.nccl.pinned else "0",
        "nccl_root": nccl_pfx if req.nccl.pinned else None,
        "nccl_include": f"{nccl_pfx}/include" if req.nccl.pinned else None,
        "nccl_lib_dir": f"{nccl_pfx}/lib" if req.nccl.pinned else None,
        "python": req.python,
        "max_jobs": str(resolved_jobs(req, kb_build.gib_per_job)),
        "launcher": req.launcher,
        "debug": "1" if req.debug else None,
        "build_version": wheel_version(req),
        "build_number": "0",
    }


def build_env(req: BuildRequest, kb_build: BuildKB, layout: Layout, extra_path: Iterable[str] = ()) -> dict[str, str]:
    """The environment of the configure/build commands, in KB order, then PATH.

    PATH puts the chosen interpreter's bin/ (where pip puts cmake/ninja when the host's are
    too old) and the toolkit's bin/ first, so nothing finds another nvcc or cmake by name."""
    values = role_values(req, kb_build, layout)
    env: dict[str, str] = {}
    for row in kb_build.variables_for(req.torch):
        value = values.get(row.role)
        if value is not None:
            env[row.name] = value
    path = [*extra_path, f"{req.toolkit.root}/bin"]
    env["PATH"] = ":".join([*dict.fromkeys(path), req.path])
    return env


# --------------------------------------------------------------------------- progress
_NINJA = re.compile(r"^\s*\[(\d+)/(\d+)\]\s")


def parse_ninja_progress(line: str) -> tuple[int, int] | None:
    """A ninja status line ("[123/6789] Building CUDA object ...", pip -v indents it) ->
    (123, 6789); None for any other line."""
    m = _NINJA.match(line)
    if not m:
        return None
    done, total = int(m.group(1)), int(m.group(2))
    return (done, total) if 0 <= done <= total and total > 0 else None
