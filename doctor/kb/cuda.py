"""CUDA toolkit knowledge (cuda.yaml): driver floors, the driver each toolkit release ships
for, which compute capabilities each nvcc compiles for, the newest gcc each nvcc accepts.

Queries take version strings as facts hold them ("12.4", "12.4.131", "11.8.20220929",
"580.95.05"), answer None when the KB has no data, and raise ValueError naming the input
when it is not a version at all. Every comparison goes through `packaging.version`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fwdoctor.kb import Ctx
from fwdoctor.versions import cuda_parts

CONFIDENCE = ("C", "S", "I")  # confirmed / secondary / inferred (see the header of doctor/kb/cuda.yaml)
_CC = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


# --------------------------------------------------------------------------- parsing
def major_minor(cuda: str) -> str:
    """'12.4.131' -> '12.4'. ValueError when the minor is missing or the text is no version."""
    major, minor, _ = cuda_parts(cuda)
    if minor is None:
        raise ValueError(f"not a CUDA major.minor version: {cuda!r} (expected e.g. 12.4)")
    return f"{major}.{minor}"


def driver_version(driver: str) -> Version:
    try:
        return Version(str(driver).strip())
    except InvalidVersion:
        raise ValueError(f"not a driver version: {driver!r} (expected e.g. 580.95.05)") from None


def cc_version(cc: str) -> Version:
    m = _CC.match(str(cc))
    if not m:
        raise ValueError(f"not a compute capability: {cc!r} (expected MAJOR.MINOR, e.g. 8.6)")
    return Version(f"{int(m.group(1))}.{int(m.group(2))}")


# --------------------------------------------------------------------------- rows
@dataclass(frozen=True)
class MinorCompat:
    cuda_major: int
    min_driver: str
    latest_minor: str
    confidence: str
    source: tuple[str, ...]


@dataclass(frozen=True)
class ToolkitDriver:
    cuda: str  # release version: "12.4.1" (Update 1); before 11.0 per minor ("10.2") or build ("9.2.148")
    release: str  # "GA", "Update N", "RC", "GA2" (8.0.61)
    driver: str  # Table 3's Linux x86_64 column
    confidence: str
    source: tuple[str, ...]
    # Table 3's Windows x86_64 column; None where no source for it was found (11.6 Update 1
    # on). Windows drivers are numbered apart from Linux ones (10.2: 441.22 vs 440.33), so a
    # Windows host's driver is compared with this column, never with `driver`.
    windows_driver: str | None = None


@dataclass(frozen=True)
class Architecture:
    cc: str
    name: str
    first_cuda: str
    first_at_or_before: bool  # the true first release is first_cuda or earlier
    last_cuda: str | None  # None: still supported at the horizon
    confidence: str
    source: tuple[str, ...]


@dataclass(frozen=True)
class Runfile:
    cuda: str  # the release, "12.8.0"
    url: str
    sha256: str  # lowercase hex
    confidence: str
    source: tuple[str, ...]

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[-1]


BRANCH_KINDS = ("lts", "production", "new-feature")
BRANCH_KIND_NAMES = {"lts": "Long Term Support Branch", "production": "Production Branch", "new-feature": "New Feature Branch"}
_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
_RUNFILE_MIDDLE = re.compile(r"[\w.]*")


def _is_runfile_url(url: str, cuda: str) -> bool:
    """`url` is https://developer.download.nvidia.com/compute/cuda/CUDA/local_installers/
    cuda_CUDA_<[\\w.]*>linux.run: the fullmatch of that regex with CUDA escaped, checked as
    prefix, suffix and middle so the KB's ~20 rows do not compile ~20 patterns on every
    load (~10 ms of a check, issue 30)."""
    head = f"https://developer.download.nvidia.com/compute/cuda/{cuda}/local_installers/cuda_{cuda}_"
    tail = "linux.run"
    return (len(url) >= len(head) + len(tail) and url.startswith(head) and url.endswith(tail)
            and _RUNFILE_MIDDLE.fullmatch(url, len(head), len(url) - len(tail)) is not None)
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")


def month_name(month: str) -> str:
    """'2026-06' -> 'June 2026' (as NVIDIA's tables write it)."""
    year, mon = month.split("-")
    return f"{_MONTH_NAMES[int(mon) - 1]} {year}"


@dataclass(frozen=True)
class DriverBranch:
    """A data-center driver branch as NVIDIA's lifecycle tables state it: its kind (None
    where the page names none), the month its support ends ("2026-06", supported through
    that month), or `eol_listed` where a page lists it as end of life without a date."""

    branch: int
    kind: str | None
    eol: str | None
    eol_listed: bool
    confidence: str
    source: tuple[str, ...]

    def past_eol(self, as_of: str) -> bool:
        """Whether support has ended by the month `as_of` ("2026-12" or a full date)."""
        if self.eol is None:
            return self.eol_listed
        return as_of[:7] > self.eol

    @property
    def eol_text(self) -> str:
        return month_name(self.eol) if self.eol else "date not stated"


@dataclass(frozen=True)
class DriverBug:
    """A driver release range with a known bug, fixed in a later release (driver-release-known-bug):
    `affected` a PEP 440 specifier over the driver version, `symptoms` errors.yaml row ids."""

    id: str
    summary: str
    affected: SpecifierSet
    fixed: str
    symptoms: tuple[str, ...]
    source: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class WslFloor:
    """GPU compute in WSL: WSL 2 only, on a Windows build at or past `windows_build_min`
    (Windows 10 21H2 = 19044)."""

    windows_build_min: int
    confidence: str
    source: tuple[str, ...]
    # The Windows driver models whose GPUs WSL 2 reaches (GPU paravirtualization shares only a
    # GPU the Windows driver runs in WDDM mode; one in TCC mode is not exposed). Empty: no data.
    driver_models: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostGcc:
    cuda: str  # major.minor
    gcc_max: int
    confidence: str
    source: tuple[str, ...]


# --------------------------------------------------------------------------- the view
@dataclass(frozen=True)
class CudaKB:
    horizon: str
    minor_compat: tuple[MinorCompat, ...]
    toolkit_drivers: tuple[ToolkitDriver, ...]
    architectures: tuple[Architecture, ...]
    host_gcc: tuple[HostGcc, ...]
    runfiles: tuple[Runfile, ...] = ()
    driver_branches: tuple[DriverBranch, ...] = ()
    wsl: WslFloor | None = None  # None: the KB has no WSL row (wsl-gpu-unsupported says "not checked")
    driver_bugs: tuple[DriverBug, ...] = ()

    def driver_release_bugs(self, driver: str) -> list[DriverBug]:
        """The rows whose affected range holds driver `driver` ("535.54.03"); [] for a version
        that does not parse (the caller reports the version itself)."""
        try:
            have = Version(str(driver).strip())
        except InvalidVersion:
            return []
        return [bug for bug in self.driver_bugs if bug.affected.contains(have, prereleases=True)]

    # ---------------------------------------------------------------- driver lifecycle
    def driver_branch_row(self, branch: int) -> DriverBranch | None:
        """NVIDIA's lifecycle row for a data-center driver branch (535 -> R535 LTS, June
        2026); None for a branch no table lists (short-lived new-feature branches)."""
        return next((r for r in self.driver_branches if r.branch == branch), None)

    def supported_branches(self, as_of: str) -> tuple[DriverBranch, ...]:
        """The production and long-term branches still supported in the month `as_of`,
        newest first."""
        rows = [r for r in self.driver_branches if r.kind in ("lts", "production") and r.eol and not r.past_eol(as_of)]
        return tuple(sorted(rows, key=lambda r: -r.branch))

    # ---------------------------------------------------------------- drivers
    def minor_compat_row(self, cuda: str) -> MinorCompat | None:
        major, _, _ = cuda_parts(cuda)
        return next((r for r in self.minor_compat if r.cuda_major == major), None)

    def driver_floor(self, cuda: str) -> str | None:
        """The lowest Linux driver that runs programs of `cuda`'s major by minor-version
        compatibility (11.x 450.80.02, 12.x 525.60.13, 13.x 580.65.06); None for a major
        without it (10.x and older) or one the KB does not know."""
        row = self.minor_compat_row(cuda)
        return row.min_driver if row else None

    def toolkit_driver_row(self, cuda: str) -> ToolkitDriver | None:
        major, minor, patch = cuda_parts(cuda)
        if minor is None:
            return None
        # A small third part is an update number ("12.4.1" = 12.4 Update 1); a large one is
        # a component build ("12.4.131" from nvcc) or a date ("11.8.20220929"), which says
        # only the minor: answer with that minor's GA row, the lowest driver of the minor.
        # The two releases before 11.0 that Table 3 names by build ("8.0.61" GA2, "9.2.148"
        # Update 1, what old torch wheels report as torch.version.cuda) are rows of their own.
        if patch is not None:
            exact = Version(f"{major}.{minor}.{patch}")
            for row in self.toolkit_drivers:
                if Version(row.cuda) == exact:
                    return row
        for row in self.toolkit_drivers:
            rmajor, rminor, _ = cuda_parts(row.cuda)
            if (rmajor, rminor) == (major, minor) and row.release == "GA":
                return row
        return None

    def toolkit_driver(self, cuda: str, windows: bool = False) -> str | None:
        """Table 3: the driver for full compatibility with that toolkit release (Linux; with
        `windows`, the Windows column); None when the KB has no row (13.4 ships no driver;
        13.5 has no published row) or no Windows number for it."""
        row = self.toolkit_driver_row(cuda)
        if row is None:
            return None
        return row.windows_driver if windows else row.driver

    def run_floor(self, cuda: str, windows: bool = False) -> str | None:
        """The lowest driver that runs programs built with `cuda` (a torch wheel's
        torch.version.cuda, a framework's CUDA): for 11.x and later the major's
        minor-version-compatibility floor (driver_floor, unchanged); for a major older than
        every minor_compat row (10.x and before) that minor's GA toolkit driver, because
        before CUDA 11 there was no minor-version compatibility: "If you are using a new
        CUDA 10.x minor release, then the minimum required driver version is the same as the
        driver that's packaged as part of that toolkit release" (S-COMPAT, "Minor Version
        Compatibility"; the drivers from release notes Table 3, S-RN132). "10.2" -> 440.33,
        "9.2.1" (Update 1) -> 396.37. `windows`: Table 3's Windows column for those old
        majors; None for 11+ (the KB holds no Windows minor-version floors). None when the KB
        has no row."""
        major, _, _ = cuda_parts(cuda)
        if self.minor_compat_row(cuda) is not None:
            return None if windows else self.driver_floor(cuda)
        if not self.minor_compat or major >= min(r.cuda_major for r in self.minor_compat):
            return None  # a major past the KB (14.x) or a gap: no GA-driver guess for it
        return self.toolkit_driver(cuda, windows=windows)

    def has_minor_compat(self, cuda: str) -> bool:
        """Whether `cuda`'s major runs on older drivers of the same major (11.x and later)."""
        return self.minor_compat_row(cuda) is not None

    def newest_cuda_for_driver(self, driver: str) -> str | None:
        """The highest CUDA major.minor whose programs `driver` runs: by Table 3, or by
        minor-version compatibility within a major. None when older than every row.
        Memoized by driver string in the instance's __dict__ (fields, equality and hash
        untouched): a fleet report asks it for every node (issue 30)."""
        memo = self.__dict__.setdefault("_memo_newest_cuda_for_driver", {})
        try:
            return memo[driver]
        except KeyError:
            found = memo[driver] = self._newest_cuda_for_driver(driver)
            return found
        except TypeError:
            return self._newest_cuda_for_driver(driver)

    def _newest_cuda_for_driver(self, driver: str) -> str | None:
        have = driver_version(driver)
        best: Version | None = None
        for row in self.toolkit_drivers:
            if Version(row.driver) <= have and row.release != "RC":
                v = Version(major_minor(row.cuda))
                best = v if best is None or v > best else best
        for row in self.minor_compat:
            if Version(row.min_driver) <= have:
                v = Version(row.latest_minor)
                best = v if best is None or v > best else best
        return None if best is None else f"{best.major}.{best.minor}"

    # ---------------------------------------------------------------- architectures
    def architecture(self, cc: str) -> Architecture | None:
        want = cc_version(cc)
        return next((a for a in self.architectures if Version(a.cc) == want), None)

    def arch_first_last(self, cc: str) -> tuple[str, str | None] | None:
        """(first CUDA that compiles for `cc`, last one or None if still supported); None
        for a compute capability the KB does not list."""
        row = self.architecture(cc)
        return None if row is None else (row.first_cuda, row.last_cuda)

    def nvcc_supports(self, cuda: str, cc: str) -> bool | None:
        """Whether nvcc of `cuda` compiles for `cc` (sm_86 needs 11.1; sm_35/37 removed in
        12.0; sm_50..72 removed in 13.0). None when the KB cannot say: unknown `cc`, a CUDA
        past the horizon for a still-supported arch, or before a 'first at or before' bound."""
        row = self.architecture(cc)
        if row is None:
            return None
        have = Version(major_minor(cuda))
        if have < Version(row.first_cuda):
            return None if row.first_at_or_before else False
        if row.last_cuda is not None:
            return have <= Version(row.last_cuda)
        if have > Version(self.horizon):
            return None
        return True

    # ---------------------------------------------------------------- installers
    def runfile(self, cuda: str) -> Runfile | None:
        """NVIDIA's runfile for a release ("12.8.0"), or for a minor ("12.8": the one release
        of that minor listed); None without a row."""
        major, minor, patch = cuda_parts(cuda)
        if minor is None:
            return None
        for row in self.runfiles:
            rmajor, rminor, rpatch = cuda_parts(row.cuda)
            if (rmajor, rminor) == (major, minor) and (patch is None or patch == rpatch):
                return row
        return None

    # ---------------------------------------------------------------- host compiler
    def host_gcc_max(self, cuda: str) -> str | None:
        """The newest gcc major nvcc of `cuda` accepts (crt/host_config.h `__GNUC__ > N`);
        None without a row."""
        want = Version(major_minor(cuda))
        row = next((r for r in self.host_gcc if Version(r.cuda) == want), None)
        return None if row is None else str(row.gcc_max)


# --------------------------------------------------------------------------- loading
def _confidence(ctx: Ctx, row: Mapping[str, Any]) -> str:
    value = ctx.field(row, "confidence", str)
    if value not in CONFIDENCE:
        raise ctx.at("confidence").error(f"expected one of {', '.join(CONFIDENCE)}, got {value!r}")
    return value


def _cuda_field(ctx: Ctx, row: Mapping[str, Any], name: str, optional: bool = False) -> str | None:
    text = ctx.version(row, name, optional)
    if text is None:
        return None
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", text):
        raise ctx.at(name).error(f"expected a CUDA version like 12.4 or 12.4.1, got {text!r} (quote it in YAML)")
    return text


def _unique(ctx: Ctx, seen: dict[Any, int], key: Any, index: int, what: str) -> None:
    if key in seen:
        raise ctx.error(f"duplicate {what} {key} (also at row {seen[key]})")
    seen[key] = index


def from_yaml(data: Any, ctx: Ctx) -> CudaKB:
    data = ctx.mapping(data)
    known = {"sources", "horizon", "minor_compat", "toolkit_drivers", "architectures", "host_gcc", "runfiles", "driver_branches", "wsl", "driver_bugs"}
    extra = sorted(set(data) - known)
    if extra:
        raise ctx.error(f"unknown section(s) {', '.join(map(str, extra))} (expected {', '.join(sorted(known))})")

    hctx = ctx.at("horizon")
    horizon_row = hctx.mapping(data.get("horizon"))
    hctx.source(horizon_row)
    _confidence(hctx, horizon_row)
    horizon = _cuda_field(hctx, horizon_row, "cuda")

    compat: list[MinorCompat] = []
    seen: dict[Any, int] = {}
    sctx = ctx.at("minor_compat")
    for i, row in enumerate(sctx.rows(data.get("minor_compat"))):
        rc = sctx.at(i)
        major = rc.field(row, "cuda_major", int)
        _unique(rc, seen, major, i, "cuda_major")
        min_driver = rc.version(row, "min_driver")
        latest = _cuda_field(rc, row, "latest_minor")
        if cuda_parts(latest)[0] != major:
            raise rc.at("latest_minor").error(f"{latest} is not a CUDA {major}.x version")
        compat.append(MinorCompat(major, min_driver, latest, _confidence(rc, row), rc.source(row)))
    # Floors rise with the major: a newer major never runs on an older driver.
    for a, b in zip(sorted(compat, key=lambda r: r.cuda_major), sorted(compat, key=lambda r: r.cuda_major)[1:]):
        if Version(b.min_driver) <= Version(a.min_driver):
            raise sctx.error(f"CUDA {b.cuda_major}.x floor {b.min_driver} is not above CUDA {a.cuda_major}.x floor {a.min_driver}")

    drivers: list[ToolkitDriver] = []
    seen = {}
    ga_seen: dict[str, int] = {}
    tctx = ctx.at("toolkit_drivers")
    for i, row in enumerate(tctx.rows(data.get("toolkit_drivers"))):
        rc = tctx.at(i)
        cuda = _cuda_field(rc, row, "cuda")
        _unique(rc, seen, Version(cuda), i, "toolkit release")
        release = rc.field(row, "release", str)
        if not re.fullmatch(r"GA2?|RC|Update \d+", release):
            raise rc.at("release").error(f"expected GA, GA2, RC or 'Update N', got {release!r}")
        if release == "GA":
            _unique(rc, ga_seen, major_minor(cuda), i, "GA row for CUDA")
        windows = rc.version(row, "windows_driver", optional=True)
        drivers.append(ToolkitDriver(cuda, release, rc.version(row, "driver"), _confidence(rc, row), rc.source(row), windows))
    # Table 3 never asks less of the driver for a newer release: a decrease is a typo. The
    # Windows column is checked the same way across the rows that have it.
    ordered = sorted(drivers, key=lambda r: Version(r.cuda))
    for a, b in zip(ordered, ordered[1:]):
        if Version(b.driver) < Version(a.driver):
            raise tctx.error(f"CUDA {b.cuda} needs driver {b.driver}, lower than {a.driver} for the older CUDA {a.cuda}")
    with_windows = [r for r in ordered if r.windows_driver is not None]
    for a, b in zip(with_windows, with_windows[1:]):
        if Version(b.windows_driver) < Version(a.windows_driver):
            raise tctx.error(f"CUDA {b.cuda} needs Windows driver {b.windows_driver}, lower than {a.windows_driver} for the older CUDA {a.cuda}")

    archs: list[Architecture] = []
    seen = {}
    actx = ctx.at("architectures")
    for i, row in enumerate(actx.rows(data.get("architectures"))):
        rc = actx.at(i)
        cc_text = rc.field(row, "cc", str)
        try:
            cc = cc_version(cc_text)
        except ValueError as exc:
            raise rc.at("cc").error(str(exc)) from None
        _unique(rc, seen, cc, i, "compute capability")
        first = _cuda_field(rc, row, "first_cuda")
        last = _cuda_field(rc, row, "last_cuda", optional=True)
        if last is not None and Version(last) < Version(first):
            raise rc.error(f"last_cuda {last} is before first_cuda {first}")
        archs.append(
            Architecture(
                cc_text,
                str(rc.field(row, "name", str)),
                first,
                bool(rc.field(row, "first_at_or_before", bool, optional=True) or False),
                last,
                _confidence(rc, row),
                rc.source(row),
            )
        )

    gccs: list[HostGcc] = []
    seen = {}
    gctx = ctx.at("host_gcc")
    for i, row in enumerate(gctx.rows(data.get("host_gcc"))):
        rc = gctx.at(i)
        cuda = _cuda_field(rc, row, "cuda")
        if cuda.count(".") != 1:
            raise rc.at("cuda").error(f"expected major.minor, got {cuda!r}")
        _unique(rc, seen, Version(cuda), i, "CUDA")
        gcc_max = rc.field(row, "gcc_max", int)
        if isinstance(gcc_max, bool) or not 1 <= gcc_max <= 99:
            raise rc.at("gcc_max").error(f"expected a gcc major version, got {gcc_max!r}")
        gccs.append(HostGcc(cuda, gcc_max, _confidence(rc, row), rc.source(row)))
    # nvcc never drops support for a newer gcc in a later release.
    ordered_g = sorted(gccs, key=lambda r: Version(r.cuda))
    for a, b in zip(ordered_g, ordered_g[1:]):
        if b.gcc_max < a.gcc_max:
            raise gctx.error(f"CUDA {b.cuda} gcc_max {b.gcc_max} is below CUDA {a.cuda}'s {a.gcc_max}")

    runfiles: list[Runfile] = []
    seen = {}
    minors: dict[str, int] = {}
    rctx = ctx.at("runfiles")
    for i, row in enumerate(rctx.rows(data.get("runfiles") or [])):
        rc = rctx.at(i)
        cuda = _cuda_field(rc, row, "cuda")
        if cuda.count(".") != 2:
            raise rc.at("cuda").error(f"expected a release X.Y.Z, got {cuda!r}")
        _unique(rc, seen, Version(cuda), i, "runfile release")
        _unique(rc, minors, major_minor(cuda), i, "runfile for CUDA")  # runfile("12.8") must be unambiguous
        url = rc.field(row, "url", str)
        if not _is_runfile_url(url, cuda):
            raise rc.at("url").error(f"not NVIDIA's runfile URL for {cuda}: {url!r}")
        sha = rc.field(row, "sha256", str)
        if not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise rc.at("sha256").error(f"expected 64 lowercase hex digits, got {sha!r}")
        runfiles.append(Runfile(cuda, url, sha, _confidence(rc, row), rc.source(row)))

    branches: list[DriverBranch] = []
    seen = {}
    bctx = ctx.at("driver_branches")
    for i, row in enumerate(bctx.rows(data.get("driver_branches") or [])):
        rc = bctx.at(i)
        branch = rc.field(row, "branch", int)
        if isinstance(branch, bool) or not 100 <= branch <= 999:
            raise rc.at("branch").error(f"expected a driver branch number like 580, got {branch!r}")
        _unique(rc, seen, branch, i, "driver branch")
        kind = rc.field(row, "kind", str, optional=True)
        if kind is not None and kind not in BRANCH_KINDS:
            raise rc.at("kind").error(f"expected one of {', '.join(BRANCH_KINDS)} or null, got {kind!r}")
        eol = rc.field(row, "eol", str, optional=True)
        if eol is not None and not _MONTH.match(eol):
            raise rc.at("eol").error(f"expected a month YYYY-MM (quote it in YAML), got {eol!r}")
        listed = rc.field(row, "eol_listed", bool, optional=True)
        if eol is None and not listed:
            raise rc.error("a branch row needs an eol month or eol_listed: true (a page listing it as end of life)")
        if eol is not None and listed is not None:
            raise rc.at("eol_listed").error("give either an eol month or eol_listed, not both")
        branches.append(DriverBranch(branch, kind, eol, bool(listed), _confidence(rc, row), rc.source(row)))

    wsl: WslFloor | None = None
    if data.get("wsl") is not None:
        wctx = ctx.at("wsl")
        wrow = wctx.mapping(data["wsl"])
        floor = wctx.field(wrow, "windows_build_min", int)
        if isinstance(floor, bool) or not 10000 <= floor <= 99999:
            raise wctx.at("windows_build_min").error(f"expected a Windows build number like 19044, got {floor!r}")
        models = wrow.get("driver_models") or []
        if not isinstance(models, list) or not all(m in ("WDDM", "TCC", "MCDM") for m in models):
            raise wctx.at("driver_models").error(f"expected a list of Windows driver models (WDDM, TCC, MCDM), got {models!r}")
        wsl = WslFloor(floor, _confidence(wctx, wrow), wctx.source(wrow), tuple(models))

    from fwdoctor.kb.libs import release_bug_symptoms

    bugs: list[DriverBug] = []
    dctx = ctx.at("driver_bugs")
    for i, row in enumerate(dctx.rows(data.get("driver_bugs") or [])):
        rc = dctx.at(i)
        bug_id = rc.field(row, "id", str)
        if any(b.id == bug_id for b in bugs):
            raise rc.at("id").error(f"duplicate bug id {bug_id!r}")
        text = rc.field(row, "affected", str)
        try:
            affected = SpecifierSet(text)
        except InvalidSpecifier:
            raise rc.at("affected").error(f"not a version specifier: {text!r}") from None
        fixed = rc.version(row, "fixed")
        assert fixed is not None
        if affected.contains(Version(fixed), prereleases=True):
            raise rc.at("fixed").error(f"fixed version {fixed} is inside affected {affected}")
        symptoms = release_bug_symptoms(rc, row, fixed)
        if not symptoms:
            raise rc.at("symptoms").error("a driver bug row names what users see (errors.yaml row ids)")
        bugs.append(DriverBug(bug_id, rc.field(row, "summary", str), affected, fixed, symptoms, rc.source(row), str(row.get("note", ""))))

    return CudaKB(horizon, tuple(compat), tuple(drivers), tuple(archs), tuple(gccs), tuple(runfiles), tuple(branches), wsl, tuple(bugs))
