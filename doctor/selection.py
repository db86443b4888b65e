"""Which official torch wheel fits a machine: one answer for `select torch`, `install
torch` and the wheels `check`'s findings (and so `fix`) recommend.

The answer is the newest release (within an optional SpecifierSet) that has a wheel
- for the target Python (X.Y in the row's `pythons`),
- whose CUDA the driver runs (driver >= kb.cuda.run_floor(cuda): CUDA minor-version
  compatibility, S-COMPAT; before CUDA 11 the toolkit's own driver, Table 3), and
- with kernels for every GPU (fwdoctor.arch.runs_on over the row's arch list: the same rule
  `check` applies for gpu-arch-unsupported-by-torch).
Within that release the PyPI default wheel wins when it fits (a plain `pip install torch`),
else the highest CUDA that fits; on a host with no GPU and no driver (and no --cuda), the
CPU wheel wins: a CUDA wheel there is gigabytes that never run. Every newer candidate that
lost says why.

Before any wheel is judged, the driver itself must run every GPU (kb.gpus.driver_problem:
the family's first and last driver branch, gpus.yaml `families`). A Tesla K80 under R535 or
an RTX 5090 under R550 is refused outright, with the branch that would run it and the torch
that branch would get (selection re-run with one published release of it).

Pure: `select_torch(kb, Target)` reads only the KB. `target_from_facts` turns host facts
plus command-line overrides into a Target; `recommend(kb, facts)` is both together, as the
rules call it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fwdoctor import arch
from fwdoctor.kb.gpus import normalize_slot
from fwdoctor.versions import major_minor

if TYPE_CHECKING:
    from fwdoctor.kb import KB
    from fwdoctor.kb.gpus import DriverProblem
    from fwdoctor.kb.torch import TorchVariant


class SelectError(ValueError):
    """A bad input (an unknown GPU name, a malformed version); the message names it."""


@dataclass(frozen=True)
class Gpu:
    name: str  # "NVIDIA H100 80GB HBM3", or the CC itself when given as --gpu 9.0
    cc: str  # "9.0"


@dataclass(frozen=True)
class Target:
    """The machine to pick for: host facts with overrides applied."""

    python: str  # "3.11"
    driver: str | None = None  # "535.104.05"; None = no driver (or unknown)
    gpus: tuple[Gpu, ...] = ()
    torch_spec: str = ""  # a packaging SpecifierSet, "" = any
    cuda: str | None = None  # "12.6" to insist on that CUDA; "cpu" for the CPU wheel
    notes: tuple[str, ...] = ()  # how the target was established ("driver from --driver")

    def to_json(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "driver": self.driver,
            "gpus": [{"name": g.name, "cc": g.cc} for g in self.gpus],
            "torch_spec": self.torch_spec,
            "cuda": self.cuda,
        }


@dataclass(frozen=True)
class Rejection:
    candidate: str  # "2.9.0+cu130"
    reasons: tuple[str, ...]

    def line(self) -> str:
        return f"{self.candidate}: {'; '.join(self.reasons)}"


@dataclass(frozen=True)
class Selection:
    target: Target
    choice: TorchVariant | None
    rejected: tuple[Rejection, ...] = ()  # newer (or same-release) candidates that lost, newest first
    reason: str = ""  # why nothing fits (choice is None)
    closest: tuple[Rejection, ...] = field(default_factory=tuple)  # nearest misses when nothing fits
    notes: tuple[str, ...] = ()
    # The driver cannot run a GPU (select refuses): one line each, and what a driver of the
    # branch that runs it would get ("on R470 (e.g. 470.239.06) the newest torch is ...").
    driver_problems: tuple[str, ...] = ()
    driver_hints: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.choice is not None

    def to_json(self) -> dict[str, Any]:
        c = self.choice
        return {
            "target": self.target.to_json(),
            "choice": None
            if c is None
            else {
                "torch": c.torch,
                "variant": c.variant,
                "version": c.local_version,
                "cuda": c.cuda,
                "index_url": c.index_url,
                "pypi_default": c.pypi_default,
                "torchvision": c.torchvision,
                "torchaudio": c.torchaudio,
                "cudnn": c.cudnn,
                "nccl": c.nccl,
            },
            "rejected": [{"candidate": r.candidate, "reasons": list(r.reasons)} for r in self.rejected],
            "reason": self.reason,
            "closest": [{"candidate": r.candidate, "reasons": list(r.reasons)} for r in self.closest],
            "notes": list(self.notes),
            "driver_problems": list(self.driver_problems),
            "driver_hints": list(self.driver_hints),
        }


# ----------------------------------------------------------------------------- judging one wheel
def reasons_against(kb: KB, variant: TorchVariant, target: Target) -> list[str]:
    """Why `variant` does not fit `target` ([] = it fits)."""
    why: list[str] = []
    if target.cuda is not None:
        want = "cpu" if target.cuda == "cpu" else target.cuda
        have = variant.cuda or "cpu"
        if have != want and not (want != "cpu" and have != "cpu" and Version(have) == Version(want)):
            why.append(f"CUDA {have}, not the requested {want}")
    if not variant.pythons:
        why.append("Python support not recorded in the KB")
    elif target.python not in variant.pythons:
        why.append(f"no wheel for Python {target.python} (has {', '.join(variant.pythons)})")
    if variant.cuda is None:
        if target.gpus and target.cuda != "cpu":
            why.append("CPU-only build on a GPU host")
        return why
    if target.driver is None and target.gpus:
        why.append("no NVIDIA driver: CUDA wheels cannot run")
    elif target.driver is not None:
        floor = kb.cuda.run_floor(variant.cuda)  # 10.x and older: the toolkit's own driver
        if floor is None:
            why.append(f"no driver data for CUDA {variant.cuda} in the KB")
        elif Version(target.driver) < Version(floor):
            why.append(f"driver {target.driver} < {floor} needed for CUDA {variant.cuda}")
    if target.gpus:
        if variant.arch_list is None:
            why.append("arch list not recorded in the KB (kernels unconfirmed)")
        else:
            for gpu in target.gpus:
                verdict = arch.runs_on(list(variant.arch_list), gpu.cc)
                if not verdict.runs:
                    why.append(f"no kernels for {arch.sm_name(gpu.cc)}")
                elif verdict.how.startswith("ptx") and target.driver is not None:
                    # PTX JIT is not available under minor-version compatibility (S-COMPAT):
                    # a GPU served only by PTX needs the toolkit's own driver (Table 3).
                    native = kb.cuda.toolkit_driver(variant.cuda)
                    if native is not None and Version(target.driver) < Version(native):
                        why.append(
                            f"{arch.sm_name(gpu.cc)} only runs via PTX JIT, which needs driver >= {native} (CUDA {variant.cuda} without minor-version compatibility)"
                        )
    return sorted(set(why), key=why.index)


def _spec(text: str) -> SpecifierSet:
    try:
        return SpecifierSet(text or "")
    except InvalidSpecifier:
        raise SelectError(f"--torch {text!r}: not a version specifier (e.g. '>=2.4,<2.9' or '==2.8.*')") from None


def driver_refusal(kb: KB, target: Target, hints: bool = True) -> Selection | None:
    """A refusal when the target's driver cannot run one of its GPUs; None when it can (or
    the KB records no branch range for them). `hints`: also say what the branch that runs
    each GPU would get (one level deep: a hint never asks for hints of its own)."""
    if target.driver is None:
        return None
    problems = [p for g in target.gpus if (p := kb.gpus.driver_problem(g.cc, g.name, target.driver)) is not None]
    if not problems:
        return None
    lines: list[str] = []
    for p in problems if hints else ():
        if p.release is None:
            lines.append(f"a driver of branch R{p.branch} runs it (the KB records no release of that branch to plan for)")
            continue
        there = replace(target, driver=p.release)
        blocked = driver_refusal(kb, there, hints=False)
        other = blocked if blocked is not None else select_torch(kb, there, check_driver=False)
        if other.choice is not None:
            lines.append(f"on R{p.branch} (e.g. {p.release}) the newest torch is {other.choice.local_version}")
        elif other.driver_problems:
            lines.append(f"R{p.branch} (e.g. {p.release}) does not run every GPU here either: {'; '.join(other.driver_problems)}")
        else:
            lines.append(f"on R{p.branch} (e.g. {p.release}) no official torch wheel fits either: {other.reason}")
    return Selection(
        target,
        None,
        reason="the driver cannot run " + ("this GPU" if len(problems) == 1 else "these GPUs") + ": " + "; ".join(p.message for p in problems),
        notes=target.notes,
        driver_problems=tuple(p.message for p in problems),
        driver_hints=tuple(dict.fromkeys(lines)),
    )


def select_torch(kb: KB, target: Target, check_driver: bool = True, cuda_only: bool = False) -> Selection:
    """Pick the wheel for `target` (see the module docstring). `check_driver=False` skips
    the driver-runs-the-GPU refusal (to see what the wheels alone would allow);
    `cuda_only` leaves CPU wheels out (a fix for a CUDA problem is never a CPU build)."""
    if check_driver:
        refusal = driver_refusal(kb, target)
        if refusal is not None:
            return refusal
    spec = _spec(target.torch_spec)
    # Wheels without recorded Python tags (torch 1.0-1.12) can never be chosen (reasons_against);
    # they are listed as rejected only when --torch asks for a release, not in every answer.
    rows = [v for v in kb.torch.variants() if spec.contains(Version(v.torch), prereleases=True) and (v.pythons or target.torch_spec)]
    if not rows:
        return Selection(target, None, reason=f"no torch release in the KB matches --torch {target.torch_spec!r}")
    by_release: dict[str, list[Any]] = {}
    for row in rows:
        by_release.setdefault(row.torch, []).append(row)
    releases = sorted(by_release, key=Version, reverse=True)
    rejected: list[Rejection] = []
    for release in releases:
        # PyPI default first, then highest CUDA, CPU last: the order we would prefer them in;
        # CPU first on a host with nothing for CUDA to run on.
        ordered = sorted(by_release[release], key=lambda v: Version(v.cuda or "0"), reverse=True)
        ordered.sort(key=lambda v: (not v.pypi_default, v.cuda is None))  # stable: CUDA stays newest first
        if cpu_host(target):
            ordered.sort(key=lambda v: v.cuda is not None)
        fitting = []
        for v in ordered:
            why = reasons_against(kb, v, target)
            if v.cuda is None and (cuda_only or (target.gpus and target.cuda != "cpu")):
                continue  # a CPU wheel on a GPU host is nobody's candidate; listing it is noise
            if why:
                rejected.append(Rejection(v.local_version, tuple(why)))
            else:
                fitting.append(v)
        if fitting:
            choice = fitting[0]
            # Report only what was preferred over the choice: newer releases, and this
            # release's variants that sort before it.
            later = {v.local_version for v in ordered[ordered.index(choice) + 1:]}
            keep = [r for r in rejected if r.candidate not in later]
            return Selection(target, choice, tuple(keep), notes=target.notes)
    newest_first = sorted(rejected, key=lambda r: Version(r.candidate.split("+")[0]), reverse=True)
    closest = sorted(newest_first, key=lambda r: len(r.reasons))[:3]
    return Selection(
        target,
        None,
        tuple(rejected),
        reason=_nothing_fits(target),
        closest=tuple(closest),
        notes=target.notes,
    )


def cpu_host(target: Target) -> bool:
    """No GPU, no driver, and no CUDA asked for: the CPU wheel is the one to install."""
    return not target.gpus and target.driver is None and target.cuda is None


def recommend(kb: KB, facts: Any, prefer_release: str | None = None, cuda_only: bool = False) -> Selection | None:
    """The wheel for this host as `select torch` picks it, for a finding's fix. With
    `prefer_release` ("2.9.1"), that release when one of its wheels fits: the fix that
    changes the least. None when the host cannot be described."""
    try:
        targets = [target_from_facts(facts, kb)]
    except SelectError:
        # The Python version is unknown (a facts file without it): answer for each Python
        # the KB has wheels for, newest first; the release and CUDA are what a fix names,
        # pip picks the wheel's tag.
        pythons = sorted({p for v in kb.torch.variants() for p in v.pythons}, key=Version, reverse=True)
        try:
            targets = [target_from_facts(facts, kb, python=p) for p in pythons]
        except SelectError:
            return None
    if not targets:
        return None
    if prefer_release:
        for target in targets:
            same = select_torch(kb, replace(target, torch_spec=f"=={prefer_release}"), cuda_only=cuda_only)
            if same.choice is not None:
                return same
    answers = [select_torch(kb, target, cuda_only=cuda_only) for target in targets]
    return next((a for a in answers if a.choice is not None), answers[0])


def _nothing_fits(target: Target) -> str:
    parts = [f"Python {target.python}"]
    if target.driver:
        parts.append(f"driver {target.driver}")
    if target.gpus:
        parts.append("GPUs " + ", ".join(f"{g.name} (sm_{g.cc.replace('.', '')})" for g in target.gpus))
    if target.torch_spec:
        parts.append(f"torch {target.torch_spec}")
    if target.cuda:
        parts.append(f"CUDA {target.cuda}")
    return "no official torch wheel in the KB fits " + ", ".join(parts)


# ----------------------------------------------------------------------------- building a Target
def resolve_gpu(kb: KB, text: str) -> Gpu:
    """`--gpu 8.6` or `--gpu "RTX 3090"`: a CC as is, a name through kb.gpus.cc_for_name."""
    value = text.strip()
    try:
        arch.parse_cc(value)
        return Gpu(value, value)
    except ValueError:
        pass
    cc = kb.gpus.cc_for_name(value)
    if cc is None:
        raise SelectError(f"--gpu {text!r}: not a compute capability and not a GPU name the KB knows (pass the CC, e.g. --gpu 8.6)")
    return Gpu(value, cc)


def python_minor(version: str) -> str:
    minor = major_minor(version)
    if minor is None:
        raise SelectError(f"--python {version!r}: not a Python version (expected e.g. 3.11)")
    return minor


def target_from_facts(
    facts: Any,
    kb: KB,
    driver: str | None = None,
    gpus: Sequence[str] = (),
    python: str | None = None,
    torch_spec: str = "",
    cuda: str | None = None,
) -> Target:
    """Host facts, each overridden by its flag when given (answers for another machine)."""
    notes: list[str] = []
    if driver is not None:
        try:
            Version(driver)
        except InvalidVersion:
            raise SelectError(f"--driver {driver!r}: not a driver version (expected e.g. 535.104.05)") from None
        drv: str | None = driver
        notes.append(f"driver {driver} from --driver")
    else:
        drv = facts.get("driver.version") if facts is not None else None
        if drv:
            notes.append(f"driver {drv} from this host")
        elif facts is not None and not facts.known("driver.version"):
            notes.append(f"driver unknown ({facts.why('driver.version')}): CUDA compatibility not checked")
            drv = None
    if gpus:
        chosen = tuple(resolve_gpu(kb, g) for g in gpus)
        notes.append("GPUs from --gpu")
    else:
        chosen = tuple(_host_gpus(facts, kb, notes))
    if python is not None:
        py = python_minor(python)
    else:
        found = facts.get("python.version") if facts is not None else None
        if not found:
            why = f" ({facts.why('python.version')})" if facts is not None and not facts.known("python.version") else ""
            raise SelectError(f"the target Python's version is unknown{why}: pass --python X.Y or a working interpreter")
        py = python_minor(found)
        notes.append(f"Python {py} from {facts.get('python.executable') or 'this host'}")
    if cuda is not None and cuda != "cpu":
        try:
            Version(cuda)
        except InvalidVersion:
            raise SelectError(f"--cuda {cuda!r}: not a CUDA version (expected e.g. 12.6, or cpu)") from None
    _spec(torch_spec)
    if drv is None and not chosen and cuda is None:
        notes.append("no GPU and no driver: the CPU wheel (pass --gpu/--driver to plan for a GPU host, or --cuda X.Y)")
    return Target(py, drv, chosen, torch_spec, cuda, tuple(notes))


def _host_gpus(facts: Any, kb: KB, notes: list[str]) -> Iterable[Gpu]:
    listed = facts.get("gpus.list") if facts is not None else None
    pci = (facts.get("pci.nvidia_gpus") if facts is not None else None) or []
    for gpu in listed or []:
        name = str(gpu.get("name") or f"GPU {gpu.get('index')}")
        # CC as reported, else from the name, else from the PCI id at its slot: a GPU the
        # driver ignores (a K80 under R535) is listed from the bus as "NVIDIA device 0x102d".
        cc = kb.gpus.cc_for_gpu(gpu, pci)
        if gpu.get("source") == "pci" and gpu.get("bus_id"):
            slot = normalize_slot(str(gpu["bus_id"]))
            dev = next((d for d in pci if normalize_slot(str(d.get("slot", ""))) == slot), None)
            model = kb.gpus.model_for_pci_id(str(dev.get("device_id", ""))) if dev else None
            name = model.name if model is not None else name
        if cc is None:
            notes.append(f"{name}: compute capability unknown, arch not checked")
            continue
        yield Gpu(name, str(cc))


# ----------------------------------------------------------------------------- text
def render_text(sel: Selection, max_rejected: int = 12) -> str:
    lines: list[str] = []
    for note in sel.notes:
        lines.append(f"# {note}")
    c = sel.choice
    if c is not None:
        how = "PyPI default" if c.pypi_default else "from the PyTorch index"
        lines.append(f"torch {c.local_version}  (CUDA {c.cuda or 'none: CPU build'}, {how})")
        lines.append(f"  index:       {c.index_url}")
        if c.torchvision:
            lines.append(f"  torchvision: {c.torchvision}")
        if c.torchaudio:
            lines.append(f"  torchaudio:  {c.torchaudio}")
        if c.cudnn or c.nccl:
            lines.append(f"  ships:       cuDNN {c.cudnn or '?'}, NCCL {c.nccl or '?'}")
        lines.append("  install:     " + " ".join(_pip_line(c)))
    elif sel.driver_problems:
        lines.append("refused: the driver cannot run the GPU")
        lines += [f"  {line}" for line in sel.driver_problems]
        lines += [f"  {line}" for line in sel.driver_hints]
    else:
        lines.append(f"nothing fits: {sel.reason}")
        if sel.closest:
            lines.append("closest options:")
            lines += [f"  {r.line()}" for r in sel.closest]
    shown = sel.rejected if c is not None else ()
    if shown:
        lines.append("newer candidates rejected:")
        lines += [f"  {r.line()}" for r in shown[:max_rejected]]
        if len(shown) > max_rejected:
            lines.append(f"  ... and {len(shown) - max_rejected} older (all of them: --json)")
    return "\n".join(lines) + "\n"


def _pip_line(c: TorchVariant) -> list[str]:
    import shlex

    return ["pip", "install", *(shlex.quote(a) for a in c.pip_args())]


# ----------------------------------------------------------------------------- the decision grid
# `fwdoctor select grid`: every (driver, GPU) pair's answer at once, for a reviewer. The
# drivers are one published release of each branch a host is likely to run (tags of
# NVIDIA/open-gpu-kernel-modules, and 470.239.06, the Kepler legacy release); the GPUs one
# part per architecture family.
GRID_DRIVERS: tuple[str, ...] = (
    "470.239.06", "525.147.05", "535.230.02", "550.163.01", "570.211.01", "580.126.18", "590.48.01",
)
GRID_GPUS: tuple[str, ...] = (
    "Tesla K80", "GeForce GTX 1080 Ti", "Tesla V100", "Tesla T4", "A100", "GeForce RTX 3090",
    "GeForce RTX 4090", "H100", "B200", "GeForce RTX 5090",
)


@dataclass(frozen=True)
class GridCell:
    driver: str
    gpu: Gpu
    selection: Selection
    problem: DriverProblem | None = None  # why the driver cannot run the GPU, if so

    @property
    def text(self) -> str:
        """"2.14.1+cu126", "no: R470 max", "no: R570+", "no: open modules", "no wheel"."""
        if self.selection.choice is not None:
            return self.selection.choice.local_version
        if self.problem is not None and self.problem.kind == "too-new":
            return f"no: R{self.problem.branch} max"
        if self.problem is not None and self.problem.kind == "too-old":
            return f"no: R{self.problem.branch}+"
        if self.selection.driver_problems:
            return "no: driver"
        return "no wheel"


def decision_grid(kb: KB, drivers: Sequence[str], gpus: Sequence[str], python: str, torch_spec: str = "") -> list[list[GridCell]]:
    """One row per driver, one cell per GPU: select_torch's answer for that host."""
    resolved = [resolve_gpu(kb, g) for g in gpus]
    py = python_minor(python)
    _spec(torch_spec)
    rows: list[list[GridCell]] = []
    for driver in drivers:
        try:
            Version(driver)
        except InvalidVersion:
            raise SelectError(f"--driver {driver!r}: not a driver version (expected e.g. 535.104.05)") from None
        rows.append([
            GridCell(driver, gpu, select_torch(kb, Target(py, driver, (gpu,), torch_spec)), kb.gpus.driver_problem(gpu.cc, gpu.name, driver))
            for gpu in resolved
        ])
    return rows


def render_grid(rows: list[list[GridCell]], fmt: str = "text", width: int = 80) -> str:
    """The grid as an aligned text table or a Markdown table: drivers down, GPUs across.

    The text table fits `width` columns (issue 29): GPU columns that do not fit beside the
    others go to a further block below, which repeats the driver column, the way wide
    tables are folded on a terminal. Markdown is one table (a renderer scrolls it)."""
    if not rows:
        return ""
    heads = ["driver"] + [f"{c.gpu.name} (sm_{c.gpu.cc.replace('.', '')})" for c in rows[0]]
    body = [[row[0].driver] + [c.text for c in row] for row in rows]
    if fmt == "markdown":
        lines = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines) + "\n"
    widths = [max(len(r[i]) for r in [heads, *body]) for i in range(len(heads))]
    blocks: list[list[int]] = [[]]
    used = widths[0]
    for column in range(1, len(heads)):
        if blocks[-1] and used + 2 + widths[column] > width:
            blocks.append([])
            used = widths[0]
        blocks[-1].append(column)
        used += 2 + widths[column]
    out: list[str] = []
    for block in blocks:
        if out:
            out.append("")
        shown = [0, *block]
        out += ["  ".join(r[i].ljust(widths[i]) for i in shown).rstrip() for r in [heads, *body]]
    return "\n".join(out) + "\n"
