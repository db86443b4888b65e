"""JAX, TensorFlow and PaddlePaddle wheels (frameworks.yaml): what CUDA/cuDNN each release
was built for, which GPU targets it ships where the wheel says, and the nvidia-* wheels it
requires (the Requires-Dist of its CUDA extra, verbatim from the wheel's METADATA).

    kb.frameworks.release("jax", "0.10.2")          -> FrameworkRelease(...)
    kb.frameworks.release("tensorflow", "2.21.0")   -> FrameworkRelease(cuda="12.5", ...)
    kb.frameworks.releases("jax")                    -> every jax release, oldest first

A release the KB does not list is None: rules say "not checked", never guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from fwdoctor import arch
from fwdoctor.kb import Ctx

FRAMEWORKS: tuple[str, ...] = ("jax", "tensorflow", "paddle")
# How each is named to a person.
TITLES = {"jax": "JAX", "tensorflow": "TensorFlow", "paddle": "PaddlePaddle"}


@dataclass(frozen=True)
class Build:
    """One installable GPU (or CPU) build of a release: a JAX CUDA plugin, the TensorFlow
    wheel with its `and-cuda` extra, a paddlepaddle(-gpu) wheel."""

    package: str  # "jax-cuda13-plugin", "tensorflow", "paddlepaddle-gpu"
    cuda: str | None  # the CUDA it needs at least ("13.0"), None for a CPU build
    cudnn: str | None
    extra: str | None  # pip extra that pulls the nvidia-* wheels: "cuda13", "and-cuda"
    pythons: tuple[str, ...]
    requires: Mapping[str, str]  # {"nvidia-cudnn-cu13": "<10.0,>=9.12.0.46"}
    arch_list: tuple[str, ...] | None  # nvcc targets the wheel says it ships, None = unpublished
    pjrt: str | None
    source: tuple[str, ...]

    @property
    def ptxas_min(self) -> str | None:
        """The lowest ptxas the build's own nvidia-cuda-nvcc requirement allows, "12.6"."""
        for name, spec in self.requires.items():
            if name.startswith("nvidia-cuda-nvcc"):
                match = re.search(r"(?:>=|==)\s*(\d+\.\d+)", spec)
                if match:
                    return match.group(1)
        return None


@dataclass(frozen=True)
class FrameworkRelease:
    framework: str  # "jax" | "tensorflow" | "paddle"
    version: str
    builds: tuple[Build, ...]
    pythons: tuple[str, ...]  # minors with a wheel of the base package
    companion: Mapping[str, str]  # {"jaxlib": "<=0.10.2,>=0.10.1"}
    source: tuple[str, ...]

    def build(self, cuda_major: str | None) -> Build | None:
        """The build for CUDA major "12"/"13" (None: the CPU build, where the KB lists one)."""
        for b in self.builds:
            if cuda_major is None and b.cuda is None:
                return b
            if cuda_major is not None and b.cuda is not None and Version(b.cuda).major == int(cuda_major):
                return b
        return None

    def gpu_builds(self) -> list[Build]:
        return [b for b in self.builds if b.cuda is not None]


@dataclass(frozen=True)
class PlatformLimit:
    """A platform where a framework's GPU builds stopped: `gpu_last` is the last release
    (major.minor) with GPU support there; later releases are CPU-only on it. None: no release
    ever had GPU support there (JAX on native Windows)."""

    framework: str
    platform: str  # "windows": native Windows, not WSL2
    gpu_last: str | None
    source: tuple[str, ...]


@dataclass(frozen=True)
class TestedBuild:
    """The CUDA and cuDNN (major.minor) a release's (major.minor) prebuilt GPU wheels were
    built with, where the release needs them installed on the system (TensorFlow before 2.14:
    `tested_builds`)."""

    framework: str
    version: str  # "2.2"
    cuda: str  # "10.1"
    cudnn: str | None
    source: tuple[str, ...]


# x86 CPU features a `cpu_features` row may name: the SIMD flags probes/platform.py keeps.
CPU_FEATURES: tuple[str, ...] = ("avx", "avx2", "fma", "avx512f")


@dataclass(frozen=True)
class CpuFeature:
    """An x86 CPU feature the framework's prebuilt wheels need, from release `since` on
    (None: every release the KB knows)."""

    framework: str
    feature: str  # "avx"
    since: str | None
    source: tuple[str, ...]


class FrameworksKB:
    def __init__(self, releases: Iterable[FrameworkRelease], platforms: Iterable[PlatformLimit] = (), cpu_features: Iterable[CpuFeature] = (),
                 tested: Iterable[TestedBuild] = (), gpu_floors: Mapping[str, tuple[str, tuple[str, ...]]] | None = None) -> None:
        self._releases = sorted(releases, key=lambda r: (r.framework, Version(r.version)))
        self._tested = {(t.framework, t.version): t for t in tested}
        self._platforms = {(p.framework, p.platform): p for p in platforms}
        self._cpu = {(c.framework, c.feature): c for c in cpu_features}
        self._gpu_floors: dict[str, tuple[str, tuple[str, ...]]] = dict(gpu_floors or {})

    def gpu_floor(self, framework: str) -> tuple[str, tuple[str, ...]] | None:
        """(compute capability, source keys): the lowest capability any GPU release of
        `framework` has kernels for (frameworks.yaml `gpu_floor`); None: no row."""
        return self._gpu_floors.get(framework)

    def cpu_feature(self, framework: str, feature: str) -> CpuFeature | None:
        """The row saying `framework`'s prebuilt wheels need `feature` ("avx"); None: no
        known need (torch has no row: ATen picks its CPU kernels at run time)."""
        return self._cpu.get((framework, feature))

    def needs_cpu_feature(self, framework: str, version: str | None, feature: str) -> bool:
        """Whether `version` of `framework`'s prebuilt wheels needs `feature`: False without a
        row; True from the row's `since` on, and where the row has no `since` or the version is
        unknown or does not parse (the row says the wheels need it; an unknown never clears it)."""
        row = self.cpu_feature(framework, feature)
        if row is None:
            return False
        if row.since is None or not version:
            return True
        try:
            return Version(str(version)) >= Version(row.since)
        except ValueError:
            return True

    def tested_build(self, framework: str, version: str | None) -> TestedBuild | None:
        """The `tested_builds` row of `version`'s major.minor (2.2.0rc4 -> 2.2); None: no row
        (a release that brings its own CUDA, or one the KB does not know) or no version."""
        if not version:
            return None
        try:
            release = Version(str(version)).release
        except ValueError:
            return None
        return self._tested.get((framework, ".".join(str(n) for n in release[:2])))

    def gpu_last(self, framework: str, platform: str) -> PlatformLimit | None:
        """The last release of `framework` with GPU support on `platform`, where the KB has a
        row (TensorFlow on native Windows: 2.10); None: no known limit."""
        return self._platforms.get((framework, platform))

    def cpu_only_on(self, framework: str, platform: str, version: str | None) -> bool | None:
        """Whether `version` of `framework` is CPU-only on `platform`: True past the row's last
        GPU release (compared on major.minor, so 2.10.1 is still 2.10), False up to it, None
        when the KB has no row or the version does not parse."""
        limit = self.gpu_last(framework, platform)
        if limit is not None and limit.gpu_last is None:
            return True  # no release ever had GPU support there
        if limit is None or not version:
            return None
        try:
            release = Version(str(version)).release
        except ValueError:
            return None
        return Version(".".join(str(n) for n in release[:2])) > Version(limit.gpu_last)

    def releases(self, framework: str) -> list[FrameworkRelease]:
        """Every release of `framework` the KB lists, oldest first."""
        return [r for r in self._releases if r.framework == framework]

    def release(self, framework: str, version: str | None) -> FrameworkRelease | None:
        if not version:
            return None
        try:
            wanted = Version(str(version)).public
        except ValueError:
            return None
        return next((r for r in self.releases(framework) if Version(r.version).public == wanted), None)


# --------------------------------------------------------------------------- loading
def from_yaml(data: Any, ctx: Ctx) -> FrameworksKB:
    data = ctx.mapping(data)
    out: list[FrameworkRelease] = []
    limits: list[PlatformLimit] = []
    features: list[CpuFeature] = []
    tested: list[TestedBuild] = []
    floors: dict[str, tuple[str, tuple[str, ...]]] = {}
    for framework in FRAMEWORKS:
        fctx = ctx.at(framework)
        section = fctx.mapping(data.get(framework))
        pctx = fctx.at("platforms")
        for i, row in enumerate(pctx.rows(section.get("platforms") or [])):
            c = pctx.at(i)
            platform = c.field(row, "platform", str)
            if platform != "windows":
                raise c.at("platform").error(f"expected windows (native Windows), got {platform!r}")
            # "none": no release of the framework ever had GPU support on the platform
            last = None if row.get("gpu_last") == "none" else c.version(row, "gpu_last")
            if last is None and row.get("gpu_last") != "none":
                raise c.at("gpu_last").error("expected a release or none")
            limits.append(PlatformLimit(framework, platform, last, c.source(row)))
        if section.get("gpu_floor") is not None:
            gctx = fctx.at("gpu_floor")
            row = gctx.mapping(section["gpu_floor"])
            floor = gctx.field(row, "cc", str)
            if not re.fullmatch(r"\d{1,2}\.\d", floor):
                raise gctx.at("cc").error(f"expected a compute capability like 3.0, got {floor!r}")
            floors[framework] = (floor, gctx.source(row))
        cctx = fctx.at("cpu_features")
        named: set[str] = set()
        for i, row in enumerate(cctx.rows(section.get("cpu_features") or [])):
            c = cctx.at(i)
            feature = c.field(row, "feature", str)
            if feature not in CPU_FEATURES:
                raise c.at("feature").error(f"expected one of {', '.join(CPU_FEATURES)}, got {feature!r}")
            if feature in named:
                raise c.error(f"{feature} listed twice")
            named.add(feature)
            features.append(CpuFeature(framework, feature, c.version(row, "since", optional=True), c.source(row)))
        tctx = fctx.at("tested_builds")
        for i, row in enumerate(tctx.rows(section.get("tested_builds") or [])):
            c = tctx.at(i)
            version, cuda = c.version(row, "version"), c.version(row, "cuda")
            assert version is not None and cuda is not None
            if (framework, version) in {(t.framework, t.version) for t in tested}:
                raise c.error(f"{version} listed twice")
            tested.append(TestedBuild(framework, version, cuda, c.version(row, "cudnn", optional=True), c.source(row)))
        rctx = fctx.at("releases")
        seen: set[tuple[str, str]] = set()
        for i, row in enumerate(rctx.rows(section.get("releases"))):
            c = rctx.at(i)
            version = c.version(row, "version")
            assert version is not None
            keys = c.source(row)
            pythons = _pythons(c, row)
            if framework == "jax":
                builds = tuple(_plugin(c.at("plugins").at(j), p) for j, p in enumerate(c.at("plugins").rows(row.get("plugins"))))
                companion = {"jaxlib": _spec(c, row, "jaxlib")}
                package = "jax"
            elif framework == "tensorflow":
                builds = (_build(c, row, package="tensorflow", extra="and-cuda", cuda_required=True),)
                companion = {}
                package = "tensorflow"
            else:
                package = c.field(row, "package", str)
                if package not in ("paddlepaddle", "paddlepaddle-gpu"):
                    raise c.at("package").error(f"expected paddlepaddle or paddlepaddle-gpu, got {package!r}")
                builds = (_build(c, row, package=package, extra=None, cuda_required=package.endswith("-gpu")),)
                companion = {}
            if (package, version) in seen:
                raise c.error(f"{package} {version} listed twice")
            seen.add((package, version))
            out.append(FrameworkRelease(framework, version, builds, pythons, companion, keys))
    return FrameworksKB(out, limits, features, tested, floors)


def _pythons(ctx: Ctx, row: Mapping[str, Any]) -> tuple[str, ...]:
    value = ctx.field(row, "pythons", list)
    for k, item in enumerate(value):
        if not isinstance(item, str) or not re.fullmatch(r"3\.\d+", item):
            raise ctx.at("pythons").at(k).error(f"expected a CPython minor like '3.11', got {item!r}")
    return tuple(value)


def _spec(ctx: Ctx, row: Mapping[str, Any], name: str) -> str:
    value = ctx.field(row, name, str)
    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        raise ctx.at(name).error(f"not a version specifier: {value!r}") from None
    return value


def _requires(ctx: Ctx, row: Mapping[str, Any]) -> dict[str, str]:
    value = ctx.field(row, "requires", Mapping, optional=True) or {}
    out = {}
    for name, spec in value.items():
        if not re.fullmatch(r"nvidia-[a-z0-9-]+", str(name)):
            raise ctx.at("requires").error(f"{name!r} is not an nvidia-* distribution name")
        try:
            SpecifierSet(str(spec or ""))
        except InvalidSpecifier:
            raise ctx.at("requires").at(str(name)).error(f"not a version specifier: {spec!r}") from None
        out[str(name)] = str(spec or "")
    return out


def _arch(ctx: Ctx, row: Mapping[str, Any]) -> tuple[str, ...] | None:
    value = row.get("arch_list")
    if value is None:
        return None
    if not isinstance(value, list):
        raise ctx.at("arch_list").error(f"expected a list like ['sm_80', 'compute_90'], got {value!r}")
    try:
        arch.parse_targets([str(v) for v in value])
    except ValueError as exc:
        raise ctx.at("arch_list").error(str(exc)) from None
    return tuple(str(v) for v in value)


def _plugin(ctx: Ctx, row: Mapping[str, Any]) -> Build:
    cuda = ctx.version(row, "cuda")
    return Build(
        package=ctx.field(row, "package", str),
        cuda=cuda,
        cudnn=None,
        extra=ctx.field(row, "extra", str),
        pythons=_pythons(ctx, row),
        requires=_requires(ctx, row),
        arch_list=_arch(ctx, row),
        pjrt=ctx.field(row, "pjrt", str, optional=True),
        source=ctx.source(row),
    )


def _build(ctx: Ctx, row: Mapping[str, Any], package: str, extra: str | None, cuda_required: bool) -> Build:
    cuda = ctx.version(row, "cuda", optional=not cuda_required)
    if cuda_required and cuda is None:
        raise ctx.error("missing field 'cuda'")
    if not cuda_required and cuda is not None:
        raise ctx.at("cuda").error(f"{package} is a CPU build: no CUDA version")
    return Build(
        package=package,
        cuda=cuda,
        cudnn=ctx.version(row, "cudnn", optional=True),
        extra=extra,
        pythons=_pythons(ctx, row),
        requires=_requires(ctx, row),
        arch_list=_arch(ctx, row),
        pjrt=None,
        source=ctx.source(row),
    )
