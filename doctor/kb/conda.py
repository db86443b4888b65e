"""conda-forge's own PyTorch builds (conda.yaml): the GPU architectures each CUDA build of
a release was compiled for, which are not the pip wheels' (torch.yaml).

    kb.conda.pytorch_build("2.10.0", "12.9") -> CondaTorchBuild(arch_list=("5.0", ..., "12.0+PTX"), ...)
    kb.conda.pytorch_build("2.10.0", "12.8") -> None (no such row: "not confirmed")

A KB folder without conda.yaml (one a user made before conda stacks) has
no rows: every question answers None, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from fwdoctor.kb import Ctx
from fwdoctor.kb.torch import _arch_list


@dataclass(frozen=True)
class CondaTorchBuild:
    """conda-forge's pytorch `torch` built with CUDA `cuda` (build string cuda<NNN>_...), linux-64."""

    torch: str  # "2.10.0"
    cuda: str  # "12.9"
    arch_list: tuple[str, ...]  # TORCH_CUDA_ARCH_LIST entries ("12.0+PTX")
    source: tuple[str, ...]


class CondaKB:
    def __init__(self, builds: Iterable[CondaTorchBuild] = ()) -> None:
        self._builds = {(b.torch, b.cuda): b for b in builds}

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
    return CondaKB(builds)
