"""conda-forge's own PyTorch builds (conda.yaml): the GPU architectures each CUDA build of
a release was compiled for, which are not the pip wheels' (torch.yaml).

    kb.conda.pytorch_build("2.10.0", "12.9") -> CondaTorchBuild(arch_list=("5.0", ..., "12.0+PTX"), ...)
    kb.conda.pytorch_build("2.10.0", "12.8") -> None (no such row: "not confirmed")
    kb.conda.broken_cuda_build("tensorflow-base", "2.15.0", "cuda120py311h43b5e44_1", "conda-forge")
        -> BrokenCudaBuild(...)  (a published build labelled CUDA with no working CUDA in it)

A KB folder without conda.yaml (one a user made before conda stacks) has
no rows: every question answers None, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from fwdoctor.kb import Ctx
from fwdoctor.versions import build_number, conda_cuda_label as cuda_label
from fwdoctor.kb.torch import _arch_list


@dataclass(frozen=True)
class CondaTorchBuild:
    """conda-forge's pytorch `torch` built with CUDA `cuda` (build string cuda<NNN>_...), linux-64."""

    torch: str  # "2.10.0"
    cuda: str  # "12.9"
    arch_list: tuple[str, ...]  # TORCH_CUDA_ARCH_LIST entries ("12.0+PTX")
    source: tuple[str, ...]


@dataclass(frozen=True)
class BrokenCudaBuild:
    """Builds of conda `package` `version` whose build string says CUDA (cuda120py311h..._1)
    and whose build number is in `build_numbers`, from `channel`: published without working
    CUDA (conda.yaml cuda_label_broken). `fixed_build_number` is the first build that works."""

    package: str  # "tensorflow-base"
    version: str  # "2.15.0"
    build_numbers: tuple[int, ...]
    channel: str  # "conda-forge"
    framework: str  # "tensorflow", "jax": the rows of one framework are one problem
    content: str  # what the build does instead ("built with TF_NEED_CUDA=0: ...")
    fixed_build_number: int
    source: tuple[str, ...]


@dataclass(frozen=True)
class MissingChannelBuild:
    """The pytorch channel published no CUDA `cuda` build of pytorch `torch` for the CUDA
    package `package` (cudatoolkit, pytorch-cuda): conda gives its CPU build for the request
    (conda.yaml pytorch_channel_no_cuda_build). `instead` is the CUDA it has for that release."""

    torch: str  # "1.9.1"
    package: str  # "cudatoolkit"
    cuda: str  # "11.3"
    instead: str  # "11.1"
    source: tuple[str, ...]


class CondaKB:
    def __init__(self, builds: Iterable[CondaTorchBuild] = (), broken: Iterable[BrokenCudaBuild] = (),
                 missing: Iterable[MissingChannelBuild] = ()) -> None:
        self._builds = {(b.torch, b.cuda): b for b in builds}
        self._broken = tuple(broken)
        self._missing = {(m.torch, m.package, m.cuda): m for m in missing}

    def pytorch_channel_missing(self, torch: str, package: str, cuda: str) -> MissingChannelBuild | None:
        """The pytorch_channel_no_cuda_build row for pytorch `torch` asked with `package`=`cuda`,
        or None (no row: "not known to be missing", never "published")."""
        return self._missing.get((torch, package, cuda))

    def broken_cuda_build(self, package: str, version: str, build: str, channel: str | None) -> BrokenCudaBuild | None:
        """The cuda_label_broken row this record is, or None. A channel that is not the row's
        (a mirror's name, a local channel) is not matched; an unknown one (None) is."""
        if cuda_label(build) is None:
            return None
        number = build_number(build)
        for row in self._broken:
            if row.package == package and row.version == version and number in row.build_numbers and channel in (None, row.channel):
                return row
        return None

    def broken_cuda_builds(self) -> list[BrokenCudaBuild]:
        return list(self._broken)

    def pytorch_build(self, torch: str, cuda: str) -> CondaTorchBuild | None:
        return self._builds.get((torch, cuda))

    def pytorch_builds(self) -> list[CondaTorchBuild]:
        return list(self._builds.values())


def from_yaml(data: Any, ctx: Ctx) -> CondaKB:
    """Validate conda.yaml and build the view. Raises KBError naming the row."""
    data = ctx.mapping(data)
    rows_ctx = ctx.at("conda_forge_pytorch")
    builds: list[CondaTorchBuild] = []
    seen: set[tuple[str, str]] = set()
    for i, row in enumerate(rows_ctx.rows(data.get("conda_forge_pytorch"))):
        rctx = rows_ctx.at(i)
        torch = rctx.version(row, "torch")
        cuda = rctx.version(row, "cuda")
        assert torch is not None and cuda is not None
        if (torch, cuda) in seen:
            raise rctx.error(f"pytorch {torch} CUDA {cuda} listed twice")
        seen.add((torch, cuda))
        arch_list = _arch_list(rctx, row)
        if arch_list is None:
            raise rctx.error("missing field 'arch_list' (a row without one says nothing)")
        builds.append(CondaTorchBuild(torch, cuda, arch_list, rctx.source(row)))
    return CondaKB(builds, _broken(data, ctx), _missing(data, ctx))


def _missing(data: Any, ctx: Ctx) -> list[MissingChannelBuild]:
    """pytorch_channel_no_cuda_build: optional (a --kb folder made before it has no rows)."""
    if data.get("pytorch_channel_no_cuda_build") is None:
        return []
    rows_ctx = ctx.at("pytorch_channel_no_cuda_build")
    out: list[MissingChannelBuild] = []
    seen: set[tuple[str, str, str]] = set()
    for i, row in enumerate(rows_ctx.rows(data.get("pytorch_channel_no_cuda_build"))):
        rctx = rows_ctx.at(i)
        torch = rctx.version(row, "torch")
        cuda = rctx.version(row, "cuda")
        instead = rctx.version(row, "instead")
        package = rctx.field(row, "package", str)
        if package not in ("cudatoolkit", "pytorch-cuda"):
            raise rctx.at("package").error(f"expected cudatoolkit or pytorch-cuda, got {package!r}")
        assert torch is not None and cuda is not None and instead is not None
        if (torch, package, cuda) in seen:
            raise rctx.error(f"pytorch {torch} with {package} {cuda} listed twice")
        if instead == cuda:
            raise rctx.at("instead").error(f"{instead} is the missing build itself")
        seen.add((torch, package, cuda))
        out.append(MissingChannelBuild(torch, package, cuda, instead, rctx.source(row)))
    return out


def _broken(data: Any, ctx: Ctx) -> list[BrokenCudaBuild]:
    """cuda_label_broken: optional (a --kb folder made before it has no rows)."""
    if data.get("cuda_label_broken") is None:
        return []
    rows_ctx = ctx.at("cuda_label_broken")
    out: list[BrokenCudaBuild] = []
    seen: set[tuple[str, str, str]] = set()
    for i, row in enumerate(rows_ctx.rows(data.get("cuda_label_broken"))):
        rctx = rows_ctx.at(i)
        package = rctx.field(row, "package", str)
        version = rctx.version(row, "version")
        channel = rctx.field(row, "channel", str)
        numbers = rctx.field(row, "build_numbers", list)
        if not numbers or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
            raise rctx.at("build_numbers").error(f"expected a list of build numbers, got {numbers!r}")
        fixed = rctx.field(row, "fixed_build_number", int)
        if fixed <= max(numbers):
            raise rctx.at("fixed_build_number").error(f"{fixed} is not after the broken builds {numbers}")
        assert version is not None
        if (package, version, channel) in seen:
            raise rctx.error(f"{package} {version} from {channel} listed twice")
        seen.add((package, version, channel))
        out.append(BrokenCudaBuild(package, version, tuple(numbers), channel, rctx.field(row, "framework", str),
                                   rctx.field(row, "content", str), fixed, rctx.source(row)))
    return out
