"""PyTorch source builds (build.yaml): which variables a torch version reads, its build and
configure commands, the CMake floor, the resource numbers and the pip wheels of NCCL/cuDNN.

Every query takes the torch version being built and answers from the rows whose `torch:`
specifier contains it; a version no row covers raises `NoBuildData` naming it, so a caller
reports "not checked" instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from fwdoctor.kb import Ctx
from fwdoctor.libraries import NAMES

# The values recipes/buildenv.py knows how to assign (a row with another role is a KB bug).
ROLES: tuple[str, ...] = (
    "use_cuda", "cuda_root", "nvcc", "host_cxx", "arch_list", "use_cudnn", "cudnn_include",
    "cudnn_lib_dir", "use_nccl", "use_system_nccl", "nccl_root", "nccl_include", "nccl_lib_dir",
    "python", "max_jobs", "launcher", "debug", "build_version", "build_number",
)
# The `lib` of a pip_wheels row: a library fwdoctor.libraries describes.
LIBS: tuple[str, ...] = NAMES


class NoBuildData(LookupError):
    """The KB has no row for this torch version."""


@dataclass(frozen=True)
class BuildVar:
    name: str
    role: str
    torch: SpecifierSet
    always: bool
    read_by: str
    source: tuple[str, ...]


@dataclass(frozen=True)
class Command:
    torch: SpecifierSet
    argv: tuple[str, ...]
    source: tuple[str, ...]


@dataclass(frozen=True)
class PipWheel:
    package: str
    lib: str
    cuda_major: int
    first: str
    last: str | None
    source: tuple[str, ...]


@dataclass(frozen=True)
class BuildKB:
    min_torch: str
    variables: tuple[BuildVar, ...]
    build_commands: tuple[Command, ...]
    cmake_only_commands: tuple[Command, ...]
    requirements: tuple[tuple[SpecifierSet, str], ...]
    cmake_min_rows: tuple[tuple[SpecifierSet, str], ...]
    gib_per_job: float
    min_free_disk_gib: float
    pip_wheels: tuple[PipWheel, ...]

    def supported(self, torch: str) -> bool:
        return Version(torch) >= Version(self.min_torch)

    def variables_for(self, torch: str) -> list[BuildVar]:
        """The rows to export for `torch`: matching ones plus the `always` ones, KB order."""
        v = Version(torch)
        return [row for row in self.variables if row.always or row.torch.contains(v, prereleases=True)]

    def reads(self, torch: str, name: str) -> bool:
        """Whether `torch` itself reads variable `name` (not merely exported by us)."""
        v = Version(torch)
        return any(row.name == name and row.torch.contains(v, prereleases=True) for row in self.variables)

    def build_command(self, torch: str) -> Command:
        return _pick(self.build_commands, torch, "build command")

    def cmake_only_command(self, torch: str) -> Command:
        return _pick(self.cmake_only_commands, torch, "--cmake-only command")

    def requirements_file(self, torch: str) -> str:
        v = Version(torch)
        for spec, name in self.requirements:
            if spec.contains(v, prereleases=True):
                return name
        raise NoBuildData(f"no build requirements row for torch {torch}")

    def cmake_min(self, torch: str) -> str:
        v = Version(torch)
        for spec, version in self.cmake_min_rows:
            if spec.contains(v, prereleases=True):
                return version
        raise NoBuildData(f"no minimum CMake known for torch {torch}")

    def pip_wheel(self, lib: str, cuda_major: int) -> PipWheel | None:
        return next((w for w in self.pip_wheels if w.lib == lib and w.cuda_major == cuda_major), None)


def _pick(rows: tuple[Command, ...], torch: str, what: str) -> Command:
    v = Version(torch)
    for row in rows:
        if row.torch.contains(v, prereleases=True):
            return row
    raise NoBuildData(f"no {what} known for torch {torch}")


# --------------------------------------------------------------------------- loading
def _spec(ctx: Ctx, row: Mapping[str, Any]) -> SpecifierSet:
    text = ctx.field(row, "torch", str)
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ctx.at("torch").error(f"not a version specifier: {text!r}") from None


def _argv(ctx: Ctx, row: Mapping[str, Any]) -> tuple[str, ...]:
    argv = ctx.field(row, "argv", list)
    if not argv or not all(isinstance(a, str) and a for a in argv):
        raise ctx.at("argv").error("expected a non-empty list of strings")
    for a in argv:
        if "{" in a and a not in ("{python}", "{dist}"):
            raise ctx.at("argv").error(f"unknown placeholder in {a!r} (only {{python}} and {{dist}})")
    return tuple(argv)


def _commands(data: Mapping[str, Any], ctx: Ctx, key: str) -> tuple[Command, ...]:
    rows = ctx.at(key).rows(data.get(key))
    out = []
    for i, row in enumerate(rows):
        c = ctx.at(key).at(i)
        out.append(Command(_spec(c, row), _argv(c, row), c.source(row)))
    _no_overlap(ctx.at(key), [(r.torch, i) for i, r in enumerate(out)])
    return tuple(out)


def _no_overlap(ctx: Ctx, specs: list[tuple[SpecifierSet, int]]) -> None:
    """Two rows of one table must not both match a release (checked on x.y.0 probes)."""
    probes = [Version(f"{major}.{minor}") for major in range(0, 4) for minor in range(0, 30)]
    for probe in probes:
        hits = [i for spec, i in specs if spec.contains(probe, prereleases=True)]
        if len(hits) > 1:
            raise ctx.error(f"rows {hits} overlap at torch {probe}")


def _number(ctx: Ctx, data: Mapping[str, Any], key: str) -> float:
    row = ctx.at(key).mapping(data.get(key))
    ctx.at(key).source(row)
    value = ctx.at(key).field(row, "value", (int, float))
    if value <= 0:
        raise ctx.at(key).at("value").error(f"expected a positive number, got {value!r}")
    return float(value)


def from_yaml(data: Any, ctx: Ctx) -> BuildKB:
    data = ctx.mapping(data)
    mt = ctx.at("min_torch").mapping(data.get("min_torch"))
    ctx.at("min_torch").source(mt)
    min_torch = ctx.at("min_torch").version(mt, "version")

    variables = []
    seen: dict[tuple[str, str], int] = {}
    for i, row in enumerate(ctx.at("variables").rows(data.get("variables"))):
        c = ctx.at("variables").at(i)
        name = c.field(row, "name", str)
        role = c.field(row, "role", str)
        if role not in ROLES:
            raise c.at("role").error(f"unknown role {role!r} (one of {', '.join(ROLES)})")
        spec = _spec(c, row)
        key = (name, str(spec))
        if key in seen:
            raise c.error(f"duplicate row for {name} {spec} (also variables[{seen[key]}])")
        seen[key] = i
        always = c.field(row, "always", bool, optional=True) or False
        variables.append(BuildVar(name, role, spec, always, c.field(row, "read_by", str), c.source(row)))

    requirements = []
    for i, row in enumerate(ctx.at("requirements").rows(data.get("requirements"))):
        c = ctx.at("requirements").at(i)
        c.source(row)
        requirements.append((_spec(c, row), c.field(row, "file", str)))

    cmake_min = []
    for i, row in enumerate(ctx.at("cmake_min").rows(data.get("cmake_min"))):
        c = ctx.at("cmake_min").at(i)
        c.source(row)
        cmake_min.append((_spec(c, row), c.version(row, "version")))
    _no_overlap(ctx.at("cmake_min"), [(s, i) for i, (s, _) in enumerate(cmake_min)])

    resources = ctx.at("resources").mapping(data.get("resources"))
    wheels = []
    for i, row in enumerate(ctx.at("pip_wheels").rows(data.get("pip_wheels"))):
        c = ctx.at("pip_wheels").at(i)
        lib = c.field(row, "lib", str)
        if lib not in LIBS:
            raise c.at("lib").error(f"expected one of {', '.join(LIBS)}, got {lib!r}")
        wheels.append(PipWheel(c.field(row, "package", str), lib, c.field(row, "cuda_major", int),
                               c.version(row, "first"), c.version(row, "last", optional=True), c.source(row)))

    return BuildKB(
        min_torch=min_torch,
        variables=tuple(variables),
        build_commands=_commands(data, ctx, "build_commands"),
        cmake_only_commands=_commands(data, ctx, "cmake_only_commands"),
        requirements=tuple(requirements),
        cmake_min_rows=tuple(cmake_min),
        gib_per_job=_number(ctx.at("resources"), resources, "gib_per_job"),
        min_free_disk_gib=_number(ctx.at("resources"), resources, "min_free_disk_gib"),
        pip_wheels=tuple(wheels),
    )
