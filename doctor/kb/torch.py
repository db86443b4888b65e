"""The PyTorch wheel matrix (torch.yaml): which official Linux x86_64 wheels exist, what
CUDA and GPU architectures each was built for, and what cuDNN/NCCL/companions go with it.

    kb.torch.variant_for("2.14.1+cu130")      -> TorchVariant(torch="2.14.1", variant="cu130", ...)
    kb.torch.variant_for("2.14.1")            -> the PyPI-default variant of 2.14.1
    kb.torch.newest_for_cuda("12.9")          -> newest wheel whose CUDA runs under a 12.9 ceiling

Every query returns None (never guesses) for a version the KB does not know; rules turn
that into "not checked: no data for torch X".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from packaging.version import InvalidVersion, Version

from fwdoctor import arch
from fwdoctor.kb import Ctx
from fwdoctor.versions import parse_version

# cu80-cu92 (torch 1.0-1.7) have two digits, cu100 on three.
_VARIANT = re.compile(r"^(cpu|cu\d{2,3})$")


@dataclass(frozen=True)
class TorchVariant:
    """One official wheel: torch `torch` built as `variant`."""

    torch: str  # "2.9.1"
    variant: str  # "cu128" | "cpu"
    cuda: str | None  # "12.8", None for cpu
    pythons: tuple[str, ...]  # ("3.10", ...); empty when unconfirmed
    arch_list: tuple[str, ...] | None  # TORCH_CUDA_ARCH_LIST entries ("8.0", "12.0+PTX"); None = unconfirmed
    index_url: str  # "https://download.pytorch.org/whl/cu128"
    pypi_default: bool  # the wheel a plain `pip install torch==X` gets from pypi.org
    cudnn: str | None
    nccl: str | None
    torchvision: str | None
    torchaudio: str | None
    source: tuple[str, ...]
    # Where arch_list was read: "wheel" (the wheel's own kernels or its get_arch_list()) or
    # "script" (the build script alone: a `+PTX` there is a claim no wheel confirmed).
    arch_from: str | None = None

    @property
    def local_version(self) -> str:
        """The version torch reports at runtime: "2.9.1+cu128"."""
        return f"{self.torch}+{self.variant}"

    @property
    def is_cuda(self) -> bool:
        return self.cuda is not None

    def pip_args(self) -> list[str]:
        """Arguments after `pip install` that select exactly this wheel (and its companions)."""
        pkgs = [f"torch=={self.torch}"]
        if self.torchvision:
            pkgs.append(f"torchvision=={self.torchvision}")
        if self.torchaudio:
            pkgs.append(f"torchaudio=={self.torchaudio}")
        return [*pkgs, "--index-url", self.index_url]


class TorchKB:
    """Queries over the wheel matrix. Built by `from_yaml`, never mutated."""

    def __init__(self, variants: Iterable[TorchVariant]) -> None:
        self._variants = sorted(variants, key=lambda v: (Version(v.torch), v.variant))
        self._by_key = {(v.torch, v.variant): v for v in self._variants}

    def variants(self) -> list[TorchVariant]:
        """Every wheel, oldest torch first."""
        return list(self._variants)

    def versions(self) -> list[str]:
        """Every torch release the KB knows ("1.13.0" ... ), oldest first."""
        seen: dict[str, None] = {}
        for v in self._variants:
            seen.setdefault(v.torch, None)
        return list(seen)

    def variants_of(self, torch_version: str) -> list[TorchVariant]:
        parsed = parse_version(torch_version)
        return [v for v in self._variants if parsed is not None and v.torch == parsed.base_version]

    def variant_for(self, version: str) -> TorchVariant | None:
        """The wheel a runtime version string names.

        "2.14.1+cu130" -> that row; "2.14.1" (no local tag) -> the PyPI default of 2.14.1;
        "2.13.0+cpu" -> the CPU row. Source builds ("2.5.0a0+git1234"), ROCm builds and
        unknown releases -> None.
        """
        try:
            parsed = Version(str(version).strip())
        except InvalidVersion:
            return None
        if parsed.is_prerelease or parsed.is_devrelease:
            return None
        public = parsed.base_version
        local = parsed.local
        if local is None:
            return next((v for v in self.variants_of(public) if v.pypi_default), None)
        if not _VARIANT.match(local):
            return None
        return self._by_key.get((public, local))

    def pypi_default(self, torch_version: str) -> TorchVariant | None:
        return next((v for v in self.variants_of(torch_version) if v.pypi_default), None)

    def newest_for_cuda(self, max_cuda: str, python: str | None = None) -> TorchVariant | None:
        """The newest CUDA wheel whose CUDA major.minor is at or below `max_cuda` (e.g. the
        highest CUDA a driver supports), optionally with a wheel for `python` ("3.11").

        Among variants of the newest release, the highest CUDA wins. Used by fixes for
        `driver-too-old-for-torch`: "install torch X for cuYYY instead"."""
        ceiling = Version(max_cuda)
        best: TorchVariant | None = None
        for v in self._recommendable():
            if v.cuda is None or Version(v.cuda) > ceiling:
                continue
            if python is not None and python not in v.pythons:
                continue
            if best is None or (Version(v.torch), Version(v.cuda)) > (Version(best.torch), Version(best.cuda or "0")):
                best = v
        return best

    def newest_matching(self, accept: Callable[[TorchVariant], bool], python: str | None = None) -> TorchVariant | None:
        """The newest wheel `accept` likes (ties: highest CUDA), optionally for `python`."""
        found = [v for v in self._recommendable() if accept(v) and (python is None or python in v.pythons)]
        if not found:
            return None
        return max(found, key=lambda v: (Version(v.torch), Version(v.cuda or "0")))

    def newest(self, variant: str = "cpu", python: str | None = None) -> TorchVariant | None:
        """The newest release that has `variant` (default: the CPU wheel)."""
        found = [v for v in self._recommendable() if v.variant == variant and (python is None or python in v.pythons)]
        return found[-1] if found else None

    def _recommendable(self) -> list[TorchVariant]:
        # A wheel whose Python tags no source gave (the 1.0-1.12 rows) is known to have
        # existed, which is enough to judge a host that runs it, but not to tell anyone to
        # install it: the newest_* answers skip it, as select_torch does.
        return [v for v in self._variants if v.pythons]


# --------------------------------------------------------------------------- loading
def from_yaml(data: Any, ctx: Ctx) -> TorchKB:
    """Validate torch.yaml and build the view. Raises KBError naming the row."""
    data = ctx.mapping(data)
    index_base = ctx.field(data, "index_base", str).rstrip("/")
    # The index URL pattern is a fact too: it carries its own source.
    ctx.at("index_base").source({"source": data.get("index_source")})
    releases_ctx = ctx.at("releases")
    variants: list[TorchVariant] = []
    seen_minors: set[str] = set()
    for i, release in enumerate(releases_ctx.rows(data.get("releases"))):
        rctx = releases_ctx.at(i)
        minor = rctx.version(release, "torch")
        assert minor is not None
        if minor in seen_minors:
            raise rctx.error(f"torch {minor} listed twice")
        seen_minors.add(minor)
        rctx.source(release)
        pythons = _pythons(rctx, release)
        default = rctx.field(release, "pypi_default", str, optional=True)
        patches = _patches(rctx, release, minor)
        rows = rctx.at("variants").rows(release.get("variants"))
        names: set[str] = set()
        for j, row in enumerate(rows):
            vctx = rctx.at("variants").at(j)
            name = vctx.field(row, "variant", str)
            if not _VARIANT.match(name):
                raise vctx.at("variant").error(f"expected cpu or cuNNN, got {name!r}")
            if name in names:
                raise vctx.error(f"variant {name} listed twice for torch {minor}")
            names.add(name)
            cuda = vctx.version(row, "cuda", optional=True)
            _check_cuda(vctx, name, cuda)
            arch_list = _arch_list(vctx, row)
            if name == "cpu" and arch_list is not None:
                raise vctx.at("arch_list").error("a CPU wheel has no arch list")
            arch_from = vctx.field(row, "arch_from", str, optional=True)
            if arch_from not in (None, "wheel", "script"):
                raise vctx.at("arch_from").error(f"expected wheel or script, got {arch_from!r}")
            if arch_from is not None and arch_list is None:
                raise vctx.at("arch_from").error("says where an arch list was read, but arch_list is null")
            cudnn = vctx.version(row, "cudnn", optional=True)
            nccl = vctx.version(row, "nccl", optional=True)
            keys = vctx.source(row)
            only = vctx.field(row, "only", list, optional=True)
            if only is not None and not set(map(str, only)) <= set(patches):
                raise vctx.at("only").error(f"names patches not listed for torch {minor}: {sorted(set(map(str, only)) - set(patches))}")
            for patch, (tv, ta, pkeys) in patches.items():
                if only is not None and patch not in map(str, only):
                    continue
                variants.append(
                    TorchVariant(
                        torch=patch,
                        variant=name,
                        cuda=cuda,
                        pythons=pythons,
                        arch_list=arch_list,
                        index_url=f"{index_base}/{name}",
                        pypi_default=(name == default),
                        cudnn=cudnn,
                        nccl=nccl,
                        torchvision=tv,
                        torchaudio=ta,
                        source=tuple(dict.fromkeys((*keys, *pkeys))),
                        arch_from=arch_from,
                    )
                )
        if default is not None and default not in names:
            raise rctx.at("pypi_default").error(f"{default!r} is not one of the variants ({', '.join(sorted(names))})")
    return TorchKB(variants)


def _pythons(ctx: Ctx, row: Mapping[str, Any]) -> tuple[str, ...]:
    value = ctx.field(row, "pythons", list)
    out = []
    for k, item in enumerate(value):
        if not isinstance(item, str) or not re.fullmatch(r"3\.\d+", item):
            raise ctx.at("pythons").at(k).error(f"expected a CPython minor like '3.11', got {item!r}")
        out.append(item)
    return tuple(out)


def _patches(ctx: Ctx, release: Mapping[str, Any], minor: str) -> dict[str, tuple[str | None, str | None, tuple[str, ...]]]:
    pctx = ctx.at("patches")
    out: dict[str, tuple[str | None, str | None, tuple[str, ...]]] = {}
    for k, row in enumerate(pctx.rows(release.get("patches"))):
        rc = pctx.at(k)
        version = rc.version(row, "version")
        assert version is not None
        parsed = Version(version)
        if parsed.local or parsed.is_prerelease or f"{parsed.major}.{parsed.minor}" != minor:
            raise rc.at("version").error(f"{version!r} is not a {minor}.N release")
        if version in out:
            raise rc.error(f"patch {version} listed twice")
        out[version] = (rc.version(row, "torchvision", optional=True), rc.version(row, "torchaudio", optional=True), rc.source(row))
    if not out:
        raise pctx.error(f"torch {minor} lists no patch releases")
    return out


def _check_cuda(ctx: Ctx, name: str, cuda: str | None) -> None:
    if name == "cpu":
        if cuda is not None:
            raise ctx.at("cuda").error("a CPU wheel has no CUDA version")
        return
    if cuda is None:
        raise ctx.error(f"missing field 'cuda' for {name}")
    v = Version(cuda)
    if f"cu{v.major}{v.minor}" != name:
        raise ctx.at("cuda").error(f"{cuda} does not match variant {name}")


def _arch_list(ctx: Ctx, row: Mapping[str, Any]) -> tuple[str, ...] | None:
    value = row.get("arch_list")
    if value is None:
        return None
    if not isinstance(value, str):
        raise ctx.at("arch_list").error(f"expected a TORCH_CUDA_ARCH_LIST string like '8.0;9.0+PTX', got {value!r}")
    entries = tuple(e for e in re.split(r"[;\s]+", value) if e)
    try:
        arch.parse_targets(list(entries))
    except ValueError as exc:
        raise ctx.at("arch_list").error(str(exc)) from None
    return entries
