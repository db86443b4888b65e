"""cuDNN and NCCL knowledge (libs.yaml): CUDA majors per cuDNN release, pip wheel names,
the sources of the version-code formulas and NCCL's documented bugs, with the small
queries rules ask. What the libraries' files, packages and version codes look like is
fwdoctor.libraries; rows here that restate it (a wheel's -cuNN suffix, a formula) are
checked against it on load.

Every query answers from rows only; a question no row answers returns None (or raises
`NoData` where the caller must say "not checked"), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fwdoctor import libraries
from fwdoctor.kb import Ctx
from fwdoctor.libraries import VersionCode, canonical

LIBRARIES: tuple[str, ...] = libraries.NAMES


class NoData(LookupError):
    """The KB has no row for this question; the message names the input."""


@dataclass(frozen=True)
class CudnnCudaRow:
    versions: SpecifierSet
    cuda_majors: tuple[int, ...]
    source: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class CudnnArchRow:
    """The GPUs one cuDNN release line runs on, for the builds of some CUDA majors:
    compute capability >= min_cc and, where the matrix sets a ceiling, <= max_cc."""

    versions: SpecifierSet
    cuda_majors: tuple[int, ...]
    min_cc: Version
    max_cc: Version | None
    source: tuple[str, ...]
    note: str = ""

    def supports(self, cc: str) -> bool:
        have = Version(cc)
        return have >= self.min_cc and (self.max_cc is None or have <= self.max_cc)

    def releases(self) -> str:
        """">=9.11, <9.29": the row's specifier, lower bound first."""
        return ", ".join(str(item) for item in sorted(self.versions, key=lambda item: item.operator.startswith("<")))

    def span(self) -> str:
        """"7.5 and newer", "5.0 to 9.0"."""
        low = _cc_text(self.min_cc)
        return f"{low} and newer" if self.max_cc is None else f"{low} to {_cc_text(self.max_cc)}"


def _cc_text(cc: Version) -> str:
    return ".".join(str(part) for part in (cc.release + (0,))[:2])


@dataclass(frozen=True)
class PipPackage:
    package: str
    library: str
    cuda_major: int
    first: Version
    last: Version
    source: tuple[str, ...]


@dataclass(frozen=True)
class NcclBug:
    id: str
    summary: str
    affected: SpecifierSet
    fixed: str | None
    source: tuple[str, ...]
    note: str = ""
    # errors.yaml row ids of what users see (nccl-release-known-bug): only a row with a
    # symptom is one that finding names; the others stay evidence of other rules.
    symptoms: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "summary": self.summary, "affected": str(self.affected), "fixed": self.fixed}


@dataclass(frozen=True)
class NcclArchRow:
    """The first NCCL release that runs on GPUs of compute capability `cc`."""
    cc: Version
    name: str
    min_nccl: Version
    source: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class LibsKB:
    cudnn_cuda: tuple[CudnnCudaRow, ...]
    pip_packages: tuple[PipPackage, ...]
    version_codes: Mapping[str, VersionCode]  # the rows, equal to fwdoctor.libraries' formulas
    nccl_bugs: tuple[NcclBug, ...]
    cudnn_arch: tuple[CudnnArchRow, ...] = ()
    nccl_arch: tuple[NcclArchRow, ...] = ()

    # ------------------------------------------------------------------ cuDNN <-> CUDA
    def cudnn_cuda_majors(self, cudnn_version: str) -> tuple[int, ...]:
        """The CUDA majors cuDNN `cudnn_version` ("8.9.7", "9.24.0.43") is built for.
        Raises NoData for a version no row covers (older than 7, newer than the KB)."""
        version = _version(cudnn_version, "cuDNN version")
        for row in self.cudnn_cuda:
            if row.versions.contains(version, prereleases=True):
                return row.cuda_majors
        raise NoData(f"no data for cuDNN {cudnn_version} in libs.yaml cudnn_cuda")

    # ------------------------------------------------------------------ cuDNN <-> GPU
    def cudnn_arch_row(self, cudnn_version: str, cuda_major: int | None = None) -> CudnnArchRow:
        """The support-matrix row for cuDNN `cudnn_version` built for `cuda_major`. With the
        CUDA major unknown, the rows of every major that contain the version must agree on
        the span, else (as for a version no row covers) NoData naming the inputs."""
        version = _version(cudnn_version, "cuDNN version")
        rows = [r for r in self.cudnn_arch if r.versions.contains(version, prereleases=True)
                and (cuda_major is None or cuda_major in r.cuda_majors)]
        for_cuda = f" for CUDA {cuda_major}" if cuda_major is not None else ""
        if not rows:
            raise NoData(f"no data for cuDNN {cudnn_version}{for_cuda} in libs.yaml cudnn_arch")
        if len({(r.min_cc, r.max_cc) for r in rows}) > 1:
            spans = "; ".join(f"CUDA {'/'.join(map(str, r.cuda_majors))}: {r.span()}" for r in rows)
            raise NoData(f"cuDNN {cudnn_version} supports different GPUs per CUDA major ({spans}) and the install's CUDA major is unknown")
        return rows[0]

    def newest_cudnn_supporting(self, cc: str, cuda_major: int) -> CudnnArchRow | None:
        """The newest row of `cuda_major` whose span includes compute capability `cc`, or None."""
        fitting = [r for r in self.cudnn_arch if cuda_major in r.cuda_majors and r.supports(cc)]
        return max(fitting, key=_upper_bound, default=None)

    # ------------------------------------------------------------------ pip wheels
    def pip_package(self, name: str) -> PipPackage | None:
        wanted = canonical(name)
        for row in self.pip_packages:
            if row.package == wanted:
                return row
        return None

    def cuda_major_of_pip_package(self, name: str) -> int | None:
        """nvidia-cudnn-cu12 -> 12 (also nvidia_cudnn_cu12); None for a name the KB lacks."""
        row = self.pip_package(name)
        return row.cuda_major if row else None

    def pip_package_for(self, library: str, cuda_major: int) -> str | None:
        """The wheel that ships `library` ("cudnn"/"nccl") for a CUDA major, or None."""
        for row in self.pip_packages:
            if row.library == library and row.cuda_major == cuda_major:
                return row.package
        return None

    # ------------------------------------------------------------------ version codes
    def version_code(self, library: str, version: str) -> int:
        """NCCL_VERSION_CODE / CUDNN_VERSION for "2.30.7" (23007) or "8.9.3" (8903)."""
        formula = self._formula(library)
        _version(version, f"{library} version")  # NoData naming the input, as every query here
        return formula.encode(version)

    def version_from_code(self, library: str, code: int) -> str:
        """The inverse: 23007 -> "2.30.7", 90300 -> "9.3.0", 8903 -> "8.9.3"."""
        found = self._formula(library).decode(code)
        if found is None:
            raise NoData(f"{library} version code {code} fits no formula")
        return found

    def _formula(self, library: str) -> VersionCode:
        rule = self.version_codes.get(library)
        if rule is None:
            raise NoData(f"no version-code formula for {library!r}")
        return rule

    # ------------------------------------------------------------------ NCCL bugs
    def nccl_known_bugs(self, version: str) -> list[NcclBug]:
        """Documented bugs that affect NCCL `version`, oldest fix first. An unparseable
        version gives [] (the caller already reports the version itself)."""
        try:
            parsed = Version(version)
        except InvalidVersion:
            return []
        return [bug for bug in self.nccl_bugs if bug.affected.contains(parsed, prereleases=True)]

    def nccl_release_bugs(self, version: str) -> list[NcclBug]:
        """The bugs with a known symptom (nccl-release-known-bug) that affect NCCL `version`."""
        return [bug for bug in self.nccl_known_bugs(version) if bug.symptoms]

    def nccl_arch_row(self, cc: str) -> NcclArchRow | None:
        """The row of compute capability `cc` ("9.0"), or None: no data for that arch (the
        rule says "not checked", never a pass)."""
        try:
            wanted = Version(cc)
        except InvalidVersion:
            return None
        return next((row for row in self.nccl_arch if row.cc == wanted), None)


def _upper_bound(row: CudnnArchRow) -> Version:
    """The exclusive upper bound of a row's specifier ("<9.11" -> 9.11); rows are closed
    ranges (the loader checks every row has one)."""
    return min(Version(item.version) for item in row.versions if item.operator == "<")


def upper_bound(row: CudnnArchRow) -> str:
    """"9.11" for a row ">=9.0,<9.11": the first release the row does not cover."""
    return str(_upper_bound(row))


# ----------------------------------------------------------------------------- loading
def _version(text: str, what: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise NoData(f"{what} {text!r} is not a version") from None


def _specifier(ctx: Ctx, row: Mapping[str, Any], name: str) -> SpecifierSet:
    value = ctx.field(row, name, str)
    try:
        spec = SpecifierSet(value)
    except InvalidSpecifier:
        raise ctx.at(name).error(f"not a version specifier: {value!r}") from None
    if not str(spec):
        raise ctx.at(name).error("empty specifier")
    return spec


def release_bug_symptoms(ctx: Ctx, row: Mapping[str, Any], fixed: str | None) -> tuple[str, ...]:
    """A release-bug row's optional `symptoms`: errors.yaml row ids (lower-case-dashed; that
    each exists is checked by tests/test_known_release_bugs.py, errors.yaml loading last). A row
    with symptoms names its first fixed release, which the finding tells users to install."""
    value = ctx.field(row, "symptoms", list, optional=True) or []
    if not all(isinstance(v, str) and v and v == v.lower() and " " not in v for v in value):
        raise ctx.at("symptoms").error(f"expected a list of errors.yaml row ids, got {value!r}")
    if value and fixed is None:
        raise ctx.at("fixed").error("a row with symptoms names the first fixed release")
    return tuple(value)


def _int_list(ctx: Ctx, row: Mapping[str, Any], name: str) -> tuple[int, ...]:
    value = ctx.field(row, name, list)
    if not value or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value):
        raise ctx.at(name).error(f"expected a non-empty list of CUDA majors, got {value!r}")
    return tuple(value)


# Probe versions to test ranges for overlap: every bound named in any row, plus neighbours.
def _overlaps(specs: list[SpecifierSet]) -> tuple[int, int, str] | None:
    points: set[Version] = set()
    for spec in specs:
        for item in spec:
            base = Version(item.version)
            release = list(base.release) + [0, 0]
            points.add(base)
            points.add(Version(f"{release[0]}.{release[1]}.{release[2]}.999"))
            if release[1] > 0:
                points.add(Version(f"{release[0]}.{release[1] - 1}.999"))
    for point in sorted(points):
        hits = [i for i, spec in enumerate(specs) if spec.contains(point, prereleases=True)]
        if len(hits) > 1:
            return hits[0], hits[1], str(point)
    return None


def from_yaml(data: Any, ctx: Ctx) -> LibsKB:
    data = ctx.mapping(data)

    cudnn_rows = []
    rows_ctx = ctx.at("cudnn_cuda")
    for i, row in enumerate(rows_ctx.rows(data.get("cudnn_cuda"))):
        at = rows_ctx.at(i)
        cudnn_rows.append(CudnnCudaRow(_specifier(at, row, "versions"), _int_list(at, row, "cuda_majors"), at.source(row), str(row.get("note", ""))))
    clash = _overlaps([r.versions for r in cudnn_rows])
    if clash:
        raise rows_ctx.error(f"rows {clash[0]} and {clash[1]} overlap (both contain cuDNN {clash[2]})")

    arch_rows = []
    rows_ctx = ctx.at("cudnn_arch")
    for i, row in enumerate(rows_ctx.rows(data.get("cudnn_arch") or [])):
        at = rows_ctx.at(i)
        versions = _specifier(at, row, "versions")
        if not any(item.operator == "<" for item in versions):
            raise at.at("versions").error(f"needs an upper bound (<X): {versions}")
        low = Version(at.version(row, "min_cc") or "")
        high_text = at.version(row, "max_cc", optional=True)
        high = Version(high_text) if high_text is not None else None
        if high is not None and high < low:
            raise at.error(f"max_cc {high} is below min_cc {low}")
        arch_rows.append(CudnnArchRow(versions, _int_list(at, row, "cuda_majors"), low, high, at.source(row), str(row.get("note", ""))))
    for major in sorted({m for r in arch_rows for m in r.cuda_majors}):
        clash = _overlaps([r.versions for r in arch_rows if major in r.cuda_majors])
        if clash:
            raise rows_ctx.error(f"two rows for CUDA {major} overlap (both contain cuDNN {clash[2]})")

    packages = []
    seen: set[str] = set()
    rows_ctx = ctx.at("pip_packages")
    for i, row in enumerate(rows_ctx.rows(data.get("pip_packages"))):
        at = rows_ctx.at(i)
        name = canonical(at.field(row, "package", str))
        if name in seen:
            raise at.error(f"duplicate package {name!r}")
        seen.add(name)
        library = at.field(row, "library", str)
        if library not in LIBRARIES:
            raise at.at("library").error(f"expected one of {', '.join(LIBRARIES)}, got {library!r}")
        major = at.field(row, "cuda_major", int)
        if libraries.pip_cuda_major(name) != major:
            raise at.error(f"package {name!r} does not end in -cu{major}")
        if name != libraries.library(library).wheel_for(major):
            raise at.error(f"package {name!r} is not a {library} wheel")
        first, last = Version(at.version(row, "first") or ""), Version(at.version(row, "last") or "")
        if first > last:
            raise at.error(f"first {first} is after last {last}")
        packages.append(PipPackage(name, library, major, first, last, at.source(row)))

    codes: dict[str, VersionCode] = {}
    codes_ctx = ctx.at("version_codes")
    for library, row in codes_ctx.mapping(data.get("version_codes")).items():
        at = codes_ctx.at(str(library))
        row = at.mapping(row)
        if library not in LIBRARIES:
            raise at.error(f"unknown library {library!r}")
        ints = {k: at.field(row, k, int) for k in ("old_if_major_at_most", "old_if_minor_at_most", "old_major_factor", "major_factor", "minor_factor")}
        at.source(row)
        code = VersionCode(**ints)
        # The formula is part of what a library is (fwdoctor.libraries, used by probes that
        # have no KB); this row cites where it comes from and must say the same.
        if code != libraries.library(library).version_code:
            raise at.error(f"disagrees with fwdoctor.libraries ({libraries.library(library).version_code})")
        codes[library] = code

    bugs = []
    bug_ids: set[str] = set()
    rows_ctx = ctx.at("nccl_bugs")
    for i, row in enumerate(rows_ctx.rows(data.get("nccl_bugs"))):
        at = rows_ctx.at(i)
        bug_id = at.field(row, "id", str)
        if bug_id in bug_ids:
            raise at.error(f"duplicate bug id {bug_id!r}")
        bug_ids.add(bug_id)
        affected = _specifier(at, row, "affected")
        fixed = at.version(row, "fixed", optional=True)
        if fixed is not None and affected.contains(Version(fixed), prereleases=True):
            raise at.error(f"fixed version {fixed} is inside affected {affected}")
        symptoms = release_bug_symptoms(at, row, fixed)
        bugs.append(NcclBug(bug_id, at.field(row, "summary", str), affected, fixed, at.source(row), str(row.get("note", "")), symptoms))

    nccl_arch = []
    rows_ctx = ctx.at("nccl_arch")
    for i, row in enumerate(rows_ctx.rows(data.get("nccl_arch") or [])):
        at = rows_ctx.at(i)
        cc = Version(at.version(row, "cc") or "")
        if any(r.cc == cc for r in nccl_arch):
            raise at.error(f"a second row for compute capability {cc}")
        nccl_arch.append(NcclArchRow(cc, at.field(row, "name", str), Version(at.version(row, "min_nccl") or ""), at.source(row),
                                     str(row.get("note", ""))))

    return LibsKB(tuple(cudnn_rows), tuple(packages), codes, tuple(bugs), tuple(arch_rows), tuple(nccl_arch))
