"""Container base images: nvidia/cuda tags per CUDA release and OS, and each base OS's Python.

Queried by recipes/stack.py (is there a base image for this stack?) and
recipes/dockerfile.py (the exact FROM line). Every answer comes from a docker.yaml row;
a question the rows cannot answer raises `LookupError` naming the inputs and what is known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from packaging.version import Version

from fwdoctor.kb import Ctx

FLAVORS = ("base", "runtime", "devel", "cudnn-runtime", "cudnn-devel")


@dataclass(frozen=True)
class CudaImage:
    """One nvidia/cuda release: `cuda` is X.Y.Z, `os` the Ubuntu tags it is published for."""

    cuda: str
    os: tuple[str, ...]
    cudnn_token: str | None
    no_cudnn_on: tuple[str, ...]
    source: tuple[str, ...]
    # The flavours the source shows for this release; None: all of FLAVORS (NVIDIA's own
    # tag list shows every flavour). A row from a list of cuDNN-devel tags alone claims
    # only that flavour, and an older release of the minor serves the others.
    flavors: tuple[str, ...] | None = None

    def has(self, flavor: str | None) -> bool:
        return flavor is None or self.flavors is None or flavor in self.flavors

    @property
    def minor(self) -> str:
        v = Version(self.cuda)
        return f"{v.major}.{v.minor}"


@dataclass(frozen=True)
class OsBase:
    os: str
    family: str
    python: str
    glibc: str
    cpu_base: str
    python_from_base: bool
    source: tuple[str, ...]


@dataclass(frozen=True)
class ToolkitRegression:
    """An nvidia-container-toolkit release with a known regression (docker.yaml toolkit_regressions)."""
    release: str
    setting: str  # where it shows: "rootless Docker"
    error: str  # the text users see
    good: tuple[str, ...]  # releases the maintainers or the thread name as working
    source: tuple[str, ...]


@dataclass(frozen=True)
class DockerKB:
    repository: str
    images: tuple[CudaImage, ...]
    systems: tuple[OsBase, ...]
    toolkit_regressions: tuple[ToolkitRegression, ...] = ()

    # ------------------------------------------------------------------ queries
    def os_base(self, name: str) -> OsBase:
        for row in self.systems:
            if row.os == name:
                return row
        known = ", ".join(r.os for r in self.systems)
        raise LookupError(f"unknown base OS {name!r} (known: {known})")

    def cuda_image(self, cuda: str, os: str, flavor: str | None = None) -> CudaImage:
        """The newest nvidia/cuda release for CUDA major.minor `cuda` published on `os`
        (with `flavor`, when given: base, runtime, devel, cudnn-runtime, cudnn-devel)."""
        want = Version(cuda)
        same = [i for i in self.images if Version(i.cuda).release[:2] == want.release[:2]]
        on_os = [i for i in same if os in i.os]
        with_flavor = [i for i in on_os if i.has(flavor)]
        if with_flavor:
            return max(with_flavor, key=lambda i: Version(i.cuda))
        if on_os:
            shown = sorted({f for i in on_os for f in (i.flavors or FLAVORS)})
            raise LookupError(f"no {self.repository} {flavor} tag known for CUDA {cuda} on {os} "
                              f"(known flavours of CUDA {cuda} there: {', '.join(shown)})")
        if same:
            where = ", ".join(sorted({o for i in same for o in i.os}))
            raise LookupError(f"no {self.repository} tag for CUDA {cuda} on {os} (CUDA {cuda} images exist for: {where})")
        have = ", ".join(i.minor for i in self.images if os in i.os) or "none"
        raise LookupError(f"no {self.repository} tag for CUDA {cuda} on {os} (known CUDA releases on {os}: {have})")

    def cuda_tag(self, cuda: str, os: str, flavor: str = "base") -> str:
        """`13.0.2-cudnn-runtime-ubuntu24.04`: the tag, with the cuDNN token of its era."""
        if flavor not in FLAVORS:
            raise LookupError(f"unknown image flavor {flavor!r} (one of: {', '.join(FLAVORS)})")
        image = self.cuda_image(cuda, os, flavor)
        if flavor.startswith("cudnn-"):
            if image.cudnn_token is None or os in image.no_cudnn_on:
                raise LookupError(f"{self.repository}:{image.cuda} has no cuDNN variant on {os}; use flavor base/runtime/devel (torch wheels bring cuDNN from pip)")
            flavor = f"{image.cudnn_token}-{flavor[len('cudnn-'):]}"
        return f"{image.cuda}-{flavor}-{os}"

    def cuda_reference(self, cuda: str, os: str, flavor: str = "base") -> str:
        return f"{self.repository}:{self.cuda_tag(cuda, os, flavor)}"

    def cpu_reference(self, os: str, python: str) -> str:
        return self.os_base(os).cpu_base.replace("{python}", python)


def from_yaml(data: Any, ctx: Ctx) -> DockerKB:
    repo_row = ctx.at("cuda_repository").mapping(data.get("cuda_repository"))
    rctx = ctx.at("cuda_repository")
    rctx.source(repo_row)
    repository = rctx.field(repo_row, "name", str)

    images: list[CudaImage] = []
    seen: set[str] = set()
    ictx = ctx.at("cuda_images")
    for i, row in enumerate(ictx.rows(data.get("cuda_images"))):
        c = ictx.at(i)
        source = c.source(row)
        cuda = c.version(row, "cuda")
        assert cuda is not None
        if len(Version(cuda).release) != 3:
            raise c.at("cuda").error(f"expected X.Y.Z (the image's full CUDA version), got {cuda!r}")
        if cuda in seen:
            raise c.at("cuda").error(f"duplicate row for CUDA {cuda}")
        seen.add(cuda)
        systems = c.field(row, "os", list)
        if not systems or not all(isinstance(o, str) and o for o in systems):
            raise c.at("os").error("expected a non-empty list of OS tags")
        token = c.field(row, "cudnn_token", str, optional=True)
        no_cudnn = c.field(row, "no_cudnn_on", list, optional=True) or []
        if not set(no_cudnn) <= set(systems):
            raise c.at("no_cudnn_on").error("names an OS the row does not list")
        flavors = c.field(row, "flavors", list, optional=True)
        if flavors is not None and (not flavors or not set(flavors) <= set(FLAVORS)):
            raise c.at("flavors").error(f"expected a non-empty list of {', '.join(FLAVORS)}")
        images.append(CudaImage(cuda, tuple(systems), token, tuple(no_cudnn), source, tuple(flavors) if flavors is not None else None))

    systems_out: list[OsBase] = []
    octx = ctx.at("operating_systems")
    names: set[str] = set()
    for i, row in enumerate(octx.rows(data.get("operating_systems"))):
        c = octx.at(i)
        source = c.source(row)
        name = c.field(row, "os", str)
        if name in names:
            raise c.at("os").error(f"duplicate row for {name}")
        names.add(name)
        python = c.version(row, "python")
        assert python is not None
        systems_out.append(
            OsBase(
                os=name,
                family=c.field(row, "family", str),
                python=python,
                glibc=c.version(row, "glibc") or "",
                cpu_base=c.field(row, "cpu_base", str),
                python_from_base=bool(c.field(row, "python_from_base", bool)),
                source=source,
            )
        )
    unknown_os = sorted({o for img in images for o in img.os} - names)
    if unknown_os:
        raise ctx.at("cuda_images").error(f"OS {', '.join(unknown_os)} missing from operating_systems")
    regressions: list[ToolkitRegression] = []
    tctx = ctx.at("toolkit_regressions")
    for i, row in enumerate(tctx.rows(data.get("toolkit_regressions") or [])):
        c = tctx.at(i)
        source = c.source(row)
        release = c.version(row, "release")
        assert release is not None
        good = c.field(row, "good", list)
        for g in good:
            if not isinstance(g, str) or not g:
                raise c.at("good").error("expected a list of release strings")
            Version(g)
        regressions.append(ToolkitRegression(release, c.field(row, "setting", str), c.field(row, "error", str), tuple(good), source))
    return DockerKB(repository, tuple(sorted(images, key=lambda i: Version(i.cuda))), tuple(systems_out), tuple(regressions))
