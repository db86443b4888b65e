"""CUDA extensions built against an installed torch (extensions.yaml): per project, the
architectures and CUDA releases its setup.py compiles for, how a build is forced and how
its arch list is chosen, the memory one compile job takes, and how its published prebuilt
wheels are named.

`project(name, version)` answers from the row whose name matches and whose `versions:`
specifier contains the version (None when no row does: the caller says "no data for
<project>", never a guess). A KB folder without extensions.yaml knows no project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from fwdoctor.kb import Ctx

# How a project's build picks its target architectures.
#   gencode-in-setup: setup.py appends a fixed `-gencode arch=compute_XY,code=sm_XY` list
#     (TORCH_CUDA_ARCH_LIST is then ignored: torch's cpp_extension adds no arch flags of its
#     own when the extension already passes -gencode); the plan rewrites that list.
#   torch-arch-list: torch's cpp_extension reads TORCH_CUDA_ARCH_LIST.
#   arch-env: setup.py reads its own variable (`arch_env:`, e.g. tiny-cuda-nn's
#     TCNN_CUDA_ARCHITECTURES, integers like 86) and not TORCH_CUDA_ARCH_LIST; the plan sets it.
ARCH_CHOICE: tuple[str, ...] = ("gencode-in-setup", "torch-arch-list", "arch-env")
_CC = re.compile(r"^\d+\.\d+$")


@dataclass(frozen=True)
class ArchRow:
    cc: str
    min_cuda: str | None  # the nvcc release from which setup.py adds it


@dataclass(frozen=True)
class Wheels:
    """The names of the prebuilt wheels setup.py looks for (its get_wheel_url)."""

    url: str  # with {version} {cuda} {torch} {abi} {python} {platform}
    cuda: dict[int, str]  # torch's CUDA major -> the CUDA part of the name
    published: str | None  # what the KB knows of which wheels a release carries, or None
    source: tuple[str, ...]


@dataclass(frozen=True)
class Project:
    name: str
    versions: SpecifierSet
    import_name: str
    modules: tuple[str, ...]
    archs: tuple[ArchRow, ...] | None  # None: setup.py fixes no list the KB could read
    arch_choice: str
    min_cuda: str | None  # None: no floor read from setup.py
    force_build: dict[str, str]
    no_build_isolation: bool
    nvcc_threads: int | None
    gib_per_job: float
    disk_gib: float
    wheels: Wheels | None
    source: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    smoke: str | None = None  # Python that calls one kernel on cuda:0 (run only where a GPU exists)
    wheels_unknown: str | None = None  # no `wheels:` because their naming was not read (what was searched)
    arch_env: str | None = None  # arch-env: the variable setup.py reads its arch list from

    def arch_env_value(self, ccs: list[str] | tuple[str, ...]) -> str:
        """The arch list as arch-env projects read it: "8.6" -> "86", comma separated."""
        return ",".join(cc.replace(".", "") for cc in ccs)

    def archs_for(self, cuda: str) -> list[str] | None:
        """The arches setup.py compiles for with nvcc `cuda`; None when the row lists none."""
        if self.archs is None:
            return None
        release = Version(cuda)
        return [a.cc for a in self.archs if a.min_cuda is None or release >= Version(a.min_cuda)]

    def wheel_name(self, version: str, torch: str, torch_cuda: str, abi: bool, python: str, platform: str = "linux_x86_64") -> str | None:
        """The prebuilt wheel setup.py would fetch for this torch/CUDA/ABI/Python; None when
        its naming has no entry for torch's CUDA major (setup.py raises there)."""
        if self.wheels is None:
            return None
        cuda = self.wheels.cuda.get(Version(torch_cuda).major)
        if cuda is None:
            return None
        tv = Version(torch)
        return self.wheels.url.format(version=version, cuda=cuda, torch=f"{tv.major}.{tv.minor}", abi=str(bool(abi)).upper(),
                                      python=python, platform=platform)


@dataclass(frozen=True)
class WheelAbiRow:
    """The C++ ABI flag (`_GLIBCXX_USE_CXX11_ABI`) of PyTorch's own Linux x86_64 wheels (PyPI,
    download.pytorch.org) of the releases in `torch`, for torch.version.cuda `cuda` (None: any)."""

    torch: SpecifierSet
    cuda: str | None
    cxx11_abi: bool
    source: tuple[str, ...]


@dataclass(frozen=True)
class ExtensionsKB:
    projects: tuple[Project, ...] = ()
    wheel_abi: tuple[WheelAbiRow, ...] = ()

    def pytorch_wheel_abi(self, torch: str, cuda: str | None) -> WheelAbiRow | None:
        """The first row whose releases hold `torch` (its release only: "2.2.0+cu118" is 2.2.0)
        and whose CUDA, if it names one, is torch's `cuda` ("12.6"); None when no row does,
        or `torch` is no version. Rows naming a CUDA come before the release's other row."""
        try:
            release = Version(Version(torch).base_version)
        except InvalidVersion:
            return None
        for row in self.wheel_abi:
            if row.cuda is not None and row.cuda != cuda:
                continue
            if row.torch.contains(release, prereleases=True):
                return row
        return None

    def project(self, name: str, version: str | None) -> Project | None:
        want = canonicalize_name(name)
        for row in self.projects:
            if canonicalize_name(row.name) != want:
                continue
            if version is None or row.versions.contains(Version(version), prereleases=True):
                return row
        return None

    def names(self) -> list[str]:
        return sorted({p.name for p in self.projects})


def _spec(c: Ctx, row: Any, name: str) -> SpecifierSet:
    text = c.field(row, name, str)
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise c.at(name).error(f"not a version specifier: {text!r}") from None


def from_yaml(data: Any, ctx: Ctx) -> ExtensionsKB:
    data = ctx.mapping(data)
    projects: list[Project] = []
    for i, row in enumerate(ctx.at("projects").rows(data.get("projects"))):
        c = ctx.at("projects").at(i)
        source = c.source(row)
        archs: list[ArchRow] | None = None if row.get("archs") is None else []
        for j, a in enumerate(c.at("archs").rows(row.get("archs")) if archs is not None else ()):
            ca = c.at("archs").at(j)
            cc = str(ca.field(a, "cc", (str, float)))
            if not _CC.match(cc):
                raise ca.at("cc").error(f"expected a compute capability like 9.0, got {cc!r}")
            archs.append(ArchRow(cc, ca.version(a, "min_cuda", optional=True)))
        choice = c.field(row, "arch_choice", str)
        if choice not in ARCH_CHOICE:
            raise c.at("arch_choice").error(f"unknown {choice!r} (one of {', '.join(ARCH_CHOICE)})")
        arch_env = c.field(row, "arch_env", str, optional=True)
        if (choice == "arch-env") != (arch_env is not None):
            raise c.at("arch_env").error("arch_env names the variable of an arch-env row, and only of one")
        if choice == "gencode-in-setup" and not archs:
            raise c.at("archs").error("a gencode-in-setup row lists the -gencode entries of its setup.py")
        wheels = None
        if row.get("wheels") is not None:
            w = c.at("wheels").mapping(row["wheels"])
            cw = c.at("wheels")
            cuda_map = cw.mapping(cw.field(w, "cuda", dict))
            wheels = Wheels(cw.field(w, "url", str), {int(k): str(v) for k, v in cuda_map.items()},
                            cw.field(w, "published", str, optional=True), cw.source(w))
        projects.append(Project(
            name=c.field(row, "name", str), versions=_spec(c, row, "versions"), import_name=c.field(row, "import", str),
            modules=tuple(c.field(row, "modules", list)), archs=None if archs is None else tuple(archs),
            arch_choice=choice, arch_env=arch_env,
            min_cuda=None if row.get("min_cuda") is None else str(c.version(row, "min_cuda")),
            force_build={str(k): str(v) for k, v in c.mapping(c.field(row, "force_build", dict)).items()},
            no_build_isolation=bool(c.field(row, "no_build_isolation", bool)),
            nvcc_threads=c.field(row, "nvcc_threads", int, optional=True),
            gib_per_job=float(c.field(row, "gib_per_job", (int, float))), disk_gib=float(c.field(row, "disk_gib", (int, float))),
            wheels=wheels, source=source, notes=tuple(c.field(row, "notes", list, optional=True) or ()),
            smoke=c.field(row, "smoke", str, optional=True),
            wheels_unknown=c.field(row, "wheels_unknown", str, optional=True),
        ))
    seen: set[tuple[str, str]] = set()
    for p in projects:
        key = (canonicalize_name(p.name), str(p.versions))
        if key in seen:
            raise ctx.at("projects").error(f"duplicate row for {p.name} {p.versions}")
        seen.add(key)
    wheel_abi = []
    for i, row in enumerate(ctx.at("pytorch_wheel_abi").rows(data.get("pytorch_wheel_abi") or [])):
        c = ctx.at("pytorch_wheel_abi").at(i)
        cuda = c.field(row, "cuda", str, optional=True)
        if cuda is not None and not _CC.match(cuda):
            raise c.at("cuda").error(f"expected torch.version.cuda like 12.6, got {cuda!r}")
        wheel_abi.append(WheelAbiRow(_spec(c, row, "torch"), cuda, bool(c.field(row, "cxx11_abi", bool)), c.source(row)))
    return ExtensionsKB(tuple(projects), tuple(wheel_abi))
