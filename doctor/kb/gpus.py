"""GPU products and PCI device ids -> compute capability (gpus.yaml), which driver branches
run each GPU family, and the /dev/shm floor.

    kb.gpus.cc_for_name("NVIDIA A100-SXM4-80GB")   -> "8.0"
    kb.gpus.cc_for_pci_id("0x2330")                 -> "9.0"
    kb.gpus.cc_for_gpu(gpu, facts.get("pci.nvidia_gpus") or [])   # one entry of gpus.list
    kb.gpus.support_for("3.7", "Tesla K80")         -> DriverSupport (Kepler: up to R470)
    kb.gpus.driver_problem("3.7", "Tesla K80", "535.230.02", "proprietary") -> DriverProblem
    kb.gpus.driver_problem("10.3", "NVIDIA B300 SXM6 AC", "575.64.05")  -> first listed by 580.82.07

Name matching is pure and forgiving in the ways real names differ: case, a leading
"NVIDIA " (newer drivers add it: "NVIDIA Tesla T4") or "Tesla ", memory-size tokens, and
trailing words ("-SXM4-80GB", " PCIe", " Laptop GPU"). The longest listed name that is a
whole-token prefix of the reported one wins, so "GeForce RTX 4090 D" finds the 4090 row
while "RTX 6000 Ada Generation" never matches "Quadro RTX 6000".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from fwdoctor.arch import parse_cc
from fwdoctor.kb import Ctx

_SPLIT = re.compile(r"[\s\-_/,()]+")
_MEMORY = re.compile(r"^\d+(?:gb|g|gib|mb)$")
# Leading words people and tools drop or add: "NVIDIA GeForce RTX 4090" is "RTX 4090".
_BRANDS = ("nvidia", "tesla", "geforce")
_PCI_ID = re.compile(r"^(?:0x)?([0-9a-f]{4})$")


def name_key(name: str) -> tuple[str, ...]:
    """The tokens a product name is matched on: lower case, split on spaces and dashes,
    without leading brand words or memory sizes. Pure; never raises."""
    tokens = [t for t in _SPLIT.split(str(name).lower()) if t and not _MEMORY.match(t)]
    while tokens and tokens[0] in _BRANDS:
        tokens.pop(0)
    return tuple(tokens)


def normalize_pci_id(device_id: str) -> str | None:
    """"0x2330", "2330", "0X2330 " -> "0x2330"; None for anything else."""
    match = _PCI_ID.match(str(device_id).strip().lower())
    return f"0x{match.group(1)}" if match else None


# What the NVIDIA kernel module flavours do with a family: the open modules need the GSP
# that Turing introduced; Blackwell (and Grace Hopper) run only on them.
OPEN_MODULES = ("unsupported", "supported", "required")


@dataclass(frozen=True)
class GpuModel:
    name: str
    cc: str
    aliases: tuple[str, ...]
    pci_ids: tuple[str, ...]
    source: tuple[str, ...]
    open_modules: str | None = None  # a product's own rule where its family's differs (GH200)


@dataclass(frozen=True)
class GpuFamily:
    """One architecture family and the driver branches that run it (gpus.yaml `families`).

    `first_branch`/`last_branch` are driver branch numbers (the version's major: 535 for
    535.230.02); None = not recorded (no bound is checked). `*_release` is one published
    release of that branch, the driver `select torch` plans for when it suggests the branch.
    `integrated`: a Jetson/Tegra GPU, driven by the L4T/JetPack driver, not these branches.
    """

    family: str
    ccs: tuple[str, ...]
    first_branch: int | None
    first_release: str | None
    last_branch: int | None
    last_release: str | None
    legacy: bool  # the last branch is a legacy branch (Kepler: R470)
    open_modules: str
    integrated: bool
    source: tuple[str, ...]
    # The highest version major a release of the last branch carries, where NVIDIA numbered
    # later releases of that branch past it (Windows: the R340 legacy drivers 341.xx-342.01,
    # the Tesla parts dropped only with 343.22); None = the branch's own number.
    last_numbered: int | None = None

    def past_last_branch(self, branch: int) -> bool:
        """Whether a driver of version major `branch` is newer than every release that runs
        the family. Pure."""
        if self.last_branch is None:
            return False
        return branch > max(self.last_branch, self.last_numbered or 0)


@dataclass(frozen=True)
class DriverSupport:
    """A GPU's family with its product override applied."""

    family: GpuFamily
    open_modules: str

    @property
    def branches(self) -> str:
        """"R470 and older", "R570 or newer", "R450 to R580", "any branch"."""
        first, last = self.family.first_branch, self.family.last_branch
        if first and last:
            return f"R{first} to R{last}"
        if last:
            return f"R{last} and older"
        if first:
            return f"R{first} or newer"
        return "any branch"


@dataclass(frozen=True)
class DriverProblem:
    """Why a loaded driver does not run a GPU. `kind`: too-new (the family's last branch is
    older), too-old, open-unsupported (open modules, pre-Turing GPU), open-required
    (proprietary modules, Blackwell/Grace Hopper). `branch` and `release`: a branch that
    runs it and one published release of it (None when the KB records none)."""

    kind: str
    message: str
    branch: int | None
    release: str | None
    support: DriverSupport
    floor: "DriverFloor | None" = None  # the product's own first listings, when they decided


@dataclass(frozen=True)
class DriverFloor:
    """The first release of each driver branch whose NVIDIA "Compatible GPUs" table lists a
    product (gpus.yaml `driver_floors`). `first` runs oldest branch first. `open_only`: the
    floor binds the open kernel modules alone (the tables are their list)."""

    gpu: str
    first: tuple[str, ...]
    listed: str
    open_only: bool
    source: tuple[str, ...]

    def upgrade_for(self, driver: str) -> str | None:
        """The nearest release that lists the product when `driver` does not; None when it
        does, or when its branch is newer than every table read (not judged here). Pure."""
        from packaging.version import InvalidVersion, Version

        branch = driver_branch(driver)
        branches = [driver_branch(r) or 0 for r in self.first]
        if branch is None or branch > branches[-1]:
            return None
        if branch in branches:
            release = self.first[branches.index(branch)]
            try:
                return None if Version(driver) >= Version(release) else release
            except InvalidVersion:
                return None
        return next(r for b, r in zip(branches, self.first) if b > branch)


def driver_branch(version: str) -> int | None:
    """"535.230.02" -> 535; None for anything that does not start with a number."""
    try:
        return _BRANCHES[version]
    except KeyError:
        pass
    except TypeError:  # unhashable: not memoized
        return _driver_branch(version)
    found = _driver_branch(version)
    if len(_BRANCHES) < 4096:  # a fleet has a handful of driver versions; bounded anyway
        _BRANCHES[version] = found
    return found


_BRANCHES: dict[Any, int | None] = {}


def _driver_branch(version: str) -> int | None:
    head = str(version).strip().split(".")[0]
    return int(head) if head.isdigit() else None


@dataclass(frozen=True)
class GpuKB:
    models: tuple[GpuModel, ...]
    by_name: Mapping[tuple[str, ...], GpuModel]
    by_pci: Mapping[str, GpuModel]
    shm_min_bytes: int
    families: tuple[GpuFamily, ...] = ()
    floors: Mapping[str, DriverFloor] = field(default_factory=dict)  # by GpuModel.name
    predate_floors: frozenset[str] = frozenset()  # products in the first open-module table
    # The locked-memory limit below which RDMA memory registration is judged too tight
    # (runtime.rdma_memlock_min_mib; rdma-memlock-too-low); None where the KB has no row.
    rdma_memlock_min_bytes: int | None = None

    def floor_for(self, cc: str, name: str | None) -> DriverFloor | None:
        """The product's own driver floor, found by its name (a PCI-derived name is the
        row's); None when the KB has none or the name's row has another CC."""
        model = self.model_for_name(name) if name else None
        if model is None or parse_cc(model.cc) != parse_cc(cc):
            return None
        return self.floors.get(model.name)

    def model_for_pci_id(self, device_id: str) -> GpuModel | None:
        key = normalize_pci_id(device_id)
        return self.by_pci.get(key) if key else None

    def family_for_cc(self, cc: str) -> GpuFamily | None:
        # Memoized by CC in the instance's __dict__ (the frozen fields, equality and hash
        # are untouched): a fleet report asks it for every GPU of every node (issue 30).
        memo = self.__dict__.setdefault("_memo_family_for_cc", {})
        try:
            return memo[cc]
        except KeyError:
            found = memo[cc] = self._family_for_cc(cc)
            return found
        except TypeError:  # an unhashable value from a malformed facts file
            return self._family_for_cc(cc)

    def _family_for_cc(self, cc: str) -> GpuFamily | None:
        try:
            wanted = parse_cc(cc)
        except ValueError:
            return None
        for family in self.families:
            if any(parse_cc(c) == wanted for c in family.ccs):
                return family
        return None

    def support_for(self, cc: str, name: str | None = None) -> DriverSupport | None:
        """The driver branches and module flavour that run a GPU of this CC (and product
        name, whose row may override the family's module rule); None when the KB has no
        family for the CC (e.g. the frozen test KB, which predates `families`)."""
        family = self.family_for_cc(cc)
        if family is None:
            return None
        model = self.model_for_name(name) if name else None
        override = model.open_modules if model is not None and model.cc == cc else None
        return DriverSupport(family, override or family.open_modules)

    def newest_driver_major(self, cc: str, name: str | None = None) -> int | None:
        """The highest driver version major that still runs this GPU (its family's last
        branch, or a later number that branch's releases carry: 342 for the Tesla parts);
        None when the KB records no last branch (current families). Pure."""
        support = self.support_for(cc, name)
        if support is None or support.family.integrated or support.family.last_branch is None:
            return None
        return max(support.family.last_branch, support.family.last_numbered or 0)

    def driver_problem(self, cc: str, name: str | None, driver: str, flavor: str | None = None) -> DriverProblem | None:
        """Why driver `driver` (module flavour "open"/"proprietary", or None = unknown)
        cannot run this GPU; None when it can or the KB cannot say. Pure."""
        support = self.support_for(cc, name)
        branch = driver_branch(driver)
        if support is None or branch is None or support.family.integrated:
            return None
        fam = support.family
        label = f"{name} ({fam.family}, sm_{cc.replace('.', '')})" if name and name != cc else f"sm_{cc.replace('.', '')} ({fam.family})"
        if fam.past_last_branch(branch):
            legacy = " (legacy)" if fam.legacy else ""
            return DriverProblem(
                "too-new",
                f"{label} runs only on driver branches up to R{fam.last_branch}{legacy}; driver {driver} (R{branch}) does not support it",
                fam.last_branch, fam.last_release, support,
            )
        floor = self.floor_for(cc, name)
        if floor is not None and not (floor.open_only and flavor != "open"):
            upgrade = floor.upgrade_for(driver)
            if upgrade is not None:
                nearer = f" (on R{driver_branch(upgrade)}: {upgrade})" if upgrade != floor.first[0] else ""
                modules = " for the open kernel modules" if floor.open_only else ""
                return DriverProblem(
                    "too-old",
                    f"{label} is first listed{modules} by driver {floor.first[0]} (R{driver_branch(floor.first[0])}){nearer} in NVIDIA's compatible-GPU tables; driver {driver} (R{branch}) predates it",
                    driver_branch(upgrade), upgrade, support, floor,
                )
        if fam.first_branch is not None and branch < fam.first_branch:
            return DriverProblem(
                "too-old",
                f"{label} needs driver branch R{fam.first_branch} or newer; driver {driver} (R{branch}) predates it",
                fam.first_branch, fam.first_release, support,
            )
        if flavor == "open" and support.open_modules == "unsupported":
            return DriverProblem(
                "open-unsupported",
                f"{label} is not supported by the open NVIDIA kernel modules (they need the GSP of Turing and later); driver {driver} is loaded with the open modules",
                branch, driver, support,
            )
        if flavor == "proprietary" and support.open_modules == "required":
            return DriverProblem(
                "open-required",
                f"{label} runs only with the open NVIDIA kernel modules; driver {driver} is loaded with the proprietary modules",
                branch, driver, support,
            )
        return None

    def model_for_name(self, name: str) -> GpuModel | None:
        tokens = name_key(name)
        for end in range(len(tokens), 0, -1):
            model = self.by_name.get(tokens[:end])
            if model is not None:
                return model
        return None

    def cc_for_name(self, name: str) -> str | None:
        model = self.model_for_name(name)
        return model.cc if model else None

    def cc_for_pci_id(self, device_id: str) -> str | None:
        key = normalize_pci_id(device_id)
        model = self.by_pci.get(key) if key else None
        return model.cc if model else None

    def cc_for_gpu(self, gpu: Mapping[str, Any], pci: Iterable[Mapping[str, Any]] = ()) -> str | None:
        """A gpus.list entry's compute capability: as reported, else from its name, else
        from the PCI device id at its bus address (pci.nvidia_gpus)."""
        if gpu.get("cc"):
            return str(gpu["cc"])
        if gpu.get("name"):
            cc = self.cc_for_name(str(gpu["name"]))
            if cc:
                return cc
        bus = gpu.get("bus_id")
        if bus:
            wanted = normalize_slot(str(bus))
            for dev in pci:
                if normalize_slot(str(dev.get("slot", ""))) == wanted:
                    return self.cc_for_pci_id(str(dev.get("device_id", "")))
        return None


def normalize_slot(slot: str) -> str:
    """NVML's "00000000:62:00.0" and sysfs's "0000:62:00.0" -> "0000:62:00.0"."""
    domain, _, rest = slot.strip().lower().partition(":")
    return f"{domain[-4:].rjust(4, '0')}:{rest}"


def from_yaml(data: Any, ctx: Ctx) -> GpuKB:
    rows = ctx.at("gpus").rows(ctx.field(data, "gpus"))
    models: list[GpuModel] = []
    by_name: dict[tuple[str, ...], GpuModel] = {}
    by_pci: dict[str, GpuModel] = {}
    for i, row in enumerate(rows):
        at = ctx.at("gpus").at(i)
        name = at.field(row, "name", str)
        cc = str(at.field(row, "cc", (str, int, float)))
        try:
            parse_cc(cc)
        except ValueError as exc:
            raise at.at("cc").error(str(exc)) from None
        aliases = tuple(at.field(row, "aliases", list, optional=True) or ())
        pci_ids = at.field(row, "pci_ids", list, optional=True) or []
        source = at.source(row)
        normalized: list[str] = []
        for j, raw in enumerate(pci_ids):
            key = normalize_pci_id(raw) if isinstance(raw, str) else None
            if key is None or key != raw:
                raise at.at("pci_ids").at(j).error(f"expected a lower-case PCI device id like '0x2330', got {raw!r}")
            normalized.append(key)
        open_modules = at.field(row, "open_modules", str, optional=True)
        if open_modules is not None and open_modules not in OPEN_MODULES:
            raise at.at("open_modules").error(f"expected one of {', '.join(OPEN_MODULES)}, got {open_modules!r}")
        model = GpuModel(name, cc, tuple(str(a) for a in aliases), tuple(normalized), source, open_modules)
        for spelling in (name, *model.aliases):
            key = name_key(spelling)
            if not key:
                raise at.error(f"name {spelling!r} has no tokens left after normalisation")
            if key in by_name:
                raise at.error(f"name {spelling!r} matches the same key as {by_name[key].name!r}")
            by_name[key] = model
        for key in normalized:
            if key in by_pci:
                raise at.error(f"PCI id {key} is already listed for {by_pci[key].name!r}")
            by_pci[key] = model
        models.append(model)
    runtime = ctx.at("runtime").mapping(ctx.field(data, "runtime"))
    shm_mib = ctx.at("runtime").field(runtime, "shm_min_mib", int)
    ctx.at("runtime").source(runtime)
    if shm_mib <= 0:
        raise ctx.at("runtime.shm_min_mib").error(f"expected a positive number of MiB, got {shm_mib}")
    memlock_mib = ctx.at("runtime").field(runtime, "rdma_memlock_min_mib", int, optional=True)
    if memlock_mib is not None and memlock_mib <= 0:
        raise ctx.at("runtime.rdma_memlock_min_mib").error(f"expected a positive number of MiB, got {memlock_mib}")
    families = _families(data, ctx)
    names = {m.name for m in models}
    return GpuKB(tuple(models), by_name, by_pci, shm_mib * 1024 * 1024, families, _floors(data, ctx, names), _predate(data, ctx, names),
                 rdma_memlock_min_bytes=memlock_mib * 1024 * 1024 if memlock_mib is not None else None)


def _predate(data: Any, ctx: Ctx, names: set[str]) -> frozenset[str]:
    """The optional `driver_floors_predate` row: products the first table already lists."""
    raw = data.get("driver_floors_predate") if isinstance(data, Mapping) else None
    if raw is None:
        return frozenset()
    at = ctx.at("driver_floors_predate")
    row = at.mapping(raw)
    gpus = at.field(row, "gpus", list)
    at.source(row)
    for j, gpu in enumerate(gpus):
        if gpu not in names:
            raise at.at("gpus").at(j).error(f"{gpu!r} is not the name of a gpus row")
    return frozenset(gpus)


def _floors(data: Any, ctx: Ctx, names: set[str]) -> dict[str, DriverFloor]:
    """The optional `driver_floors` rows: one per product row, releases oldest branch first."""
    raw = data.get("driver_floors") if isinstance(data, Mapping) else None
    if raw is None:
        return {}
    out: dict[str, DriverFloor] = {}
    for i, row in enumerate(ctx.at("driver_floors").rows(raw)):
        at = ctx.at("driver_floors").at(i)
        gpu = at.field(row, "gpu", str)
        if gpu not in names:
            raise at.at("gpu").error(f"{gpu!r} is not the name of a gpus row")
        if gpu in out:
            raise at.at("gpu").error(f"{gpu!r} has two driver_floors rows")
        first = at.field(row, "first", list)
        branches: list[int] = []
        for j, release in enumerate(first):
            at.at("first").version({"v": release}, "v") if isinstance(release, str) else None
            if not isinstance(release, str) or driver_branch(release) is None:
                raise at.at("first").at(j).error(f"expected a driver release like '580.82.07', got {release!r}")
            branch = driver_branch(release)
            if branches and branch <= branches[-1]:
                raise at.at("first").at(j).error(f"{release}: branches must rise (one release per branch, oldest first)")
            branches.append(branch)
        if not first:
            raise at.at("first").error("expected at least one release")
        modules = at.field(row, "modules", str, optional=True)
        if modules not in (None, "open"):
            raise at.at("modules").error(f"expected 'open' or nothing, got {modules!r}")
        out[gpu] = DriverFloor(gpu, tuple(first), at.field(row, "listed", str), modules == "open", at.source(row))
    return out


def _families(data: Any, ctx: Ctx) -> tuple[GpuFamily, ...]:
    """The optional `families` rows (a KB without them checks no driver ranges)."""
    raw = data.get("families") if isinstance(data, Mapping) else None
    if raw is None:
        return ()
    out: list[GpuFamily] = []
    seen: dict[tuple[int, int], str] = {}
    for i, row in enumerate(ctx.at("families").rows(raw)):
        at = ctx.at("families").at(i)
        name = at.field(row, "family", str)
        ccs = at.field(row, "cc", list)
        for j, cc in enumerate(ccs):
            try:
                key = parse_cc(str(cc))
            except ValueError as exc:
                raise at.at("cc").at(j).error(str(exc)) from None
            if key in seen:
                raise at.at("cc").at(j).error(f"CC {cc} is already in family {seen[key]!r}")
            seen[key] = name
        bounds: dict[str, tuple[int | None, str | None]] = {}
        for end in ("first", "last"):
            branch = at.field(row, f"{end}_branch", int, optional=True)
            release = at.version(row, f"{end}_release", optional=True)
            if release is not None and (branch is None or driver_branch(release) != branch):
                raise at.at(f"{end}_release").error(f"{release} is not a release of branch {branch}")
            bounds[end] = (branch, release)
        first, last = bounds["first"][0], bounds["last"][0]
        if first is not None and last is not None and first > last:
            raise at.error(f"first_branch {first} is after last_branch {last}")
        numbered = at.field(row, "last_numbered", int, optional=True)
        if numbered is not None and (last is None or numbered < last):
            raise at.at("last_numbered").error(f"{numbered} is below last_branch {last}")
        open_modules = at.field(row, "open_modules", str)
        if open_modules not in OPEN_MODULES:
            raise at.at("open_modules").error(f"expected one of {', '.join(OPEN_MODULES)}, got {open_modules!r}")
        out.append(GpuFamily(
            name, tuple(str(c) for c in ccs), first, bounds["first"][1], last, bounds["last"][1],
            bool(at.field(row, "legacy", bool, optional=True)), open_modules,
            bool(at.field(row, "integrated", bool, optional=True)), at.source(row), numbered,
        ))
    return tuple(out)
