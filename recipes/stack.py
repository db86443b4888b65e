"""Stacks: a small YAML spec of what an image should hold, and its resolution against the KB.

    name: cu130-py312          # lockfiles/<name>/, dockerfiles/<name>/, the image name
    python: "3.12"
    torch: "2.14.1"
    cuda: "13.0"               # or "cpu"; omitted: the variant pypi.org serves for that torch
    os: ubuntu24.04            # ubuntu22.04 | ubuntu24.04 | debian12; omitted: the OS whose python3 is `python`
    companions: [torchvision]  # versions come from the KB (torch.yaml patches)
    requirements: ["numpy==2.3.4"]
    gpus: ["7.5", "9.0"]       # target compute capabilities: each needs kernels in the wheel
    min_driver: "580.65.06"    # the fleet's oldest driver: must run the wheel's CUDA
    flavor: base               # nvidia/cuda flavor (base|runtime|devel|cudnn-runtime|cudnn-devel)
    conda:                     # conda packages: a conda base, pip on top (or `conda: [spec, ...]`)
      channels: [conda-forge]  # names, http(s):// or file:// URLs (default [conda-forge])
      platforms: [linux-64]    # conda subdirs (default [linux-64])
      packages: ["python=3.11", "pytorch=2.5.1=cuda126*", "cuda-version=12.6", "cudnn", "nccl"]
    apt: [tini]                # Debian/Ubuntu packages installed in the runtime image
    copy:                      # project files into the image: src relative to the stack
      - {src: app/, dest: /app/}   # file (no '..'), inside the build context; dest absolute
    entrypoint: ["/usr/bin/tini", "--"]   # exec form lists
    command: ["python", "/app/main.py"]   # default: fwdoctor check --deep
    healthcheck: false         # true: HEALTHCHECK runs `fwdoctor smoke kernel` (GPU images)

`load(path)` validates the file (StackError names the file and the field); `resolve(stack,
kb)` fills what was left out from the KB and refuses impossible stacks (StackImpossible
says why). Both are pure: nothing here touches the network or the machine.

Conda stacks: the Python is conda's (`python=<python>` is added first when the packages do
not name it). When the packages include `pytorch=X.Y.Z=<build>`, `torch` may be left out:
torch is conda's, its variant comes from the build string (cuda126* -> cu126, cpu* -> cpu),
the pip part (`requirements`, fwdoctor's own tools) must not reinstall it, and the checks use
conda-forge's own arch lists (kb.conda), not the pip wheels'. recipes/conda_spec.py parses
the specs and build strings.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from fwdoctor import arch, yamlload
from fwdoctor.host import read_regular_file
from fwdoctor.kb.docker import FLAVORS
from fwdoctor.recipes import conda_spec
from fwdoctor.recipes.conda_spec import CondaSpec, CondaSpecError

if TYPE_CHECKING:
    from fwdoctor.kb import KB
    from fwdoctor.kb.docker import DockerKB, OsBase

PYPI_SIMPLE = "https://pypi.org/simple"
# fwdoctor's own runtime dependencies, locked into every image so that `fwdoctor check` and
# `fwdoctor smoke` run inside it (same names as pyproject.toml [project].dependencies;
# tests/test_stack_spec.py keeps the two in step).
TOOL_REQUIREMENTS = ("click>=8.1", "packaging>=23", "pyyaml>=6", "nvidia-ml-py>=12")
COMPANIONS = ("torchvision", "torchaudio")
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}\Z")  # \Z: "$" would let a trailing newline through
_KNOWN_FIELDS = ("name", "python", "torch", "cuda", "os", "companions", "requirements", "gpus", "min_driver", "flavor", "conda",
                 "apt", "copy", "entrypoint", "command", "healthcheck")
# Debian policy 5.6.1: package names are lowercase letters, digits, + - . and start alphanumeric.
_APT_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+\Z")
# Conda packages that bring conda's pytorch with them: with one of these, the stack must
# name that pytorch (pytorch=X.Y.Z=<build>) so that its variant is known and pip leaves it.
_CONDA_TORCH_DEPENDENTS = ("pytorch-cpu", "pytorch-gpu", "torchvision", "torchaudio")
# Conda packages whose version is a CUDA version (conda-forge's cuda-version pin, the older
# cudatoolkit): their spec says which CUDA majors the environment may hold.
_CUDA_VERSION_PACKAGES = ("cuda-version", "cudatoolkit")


class StackError(ValueError):
    """The stack file is malformed: the message names the file and the field."""


class StackImpossible(ValueError):
    """The stack is well-formed but cannot be built; the message says why."""


@dataclass(frozen=True)
class CopyItem:
    """A project file or folder copied into the image (COPY src dest)."""

    src: str  # relative to the stack file's folder, POSIX separators (see copy_in_context)
    dest: str  # absolute path in the image


@dataclass(frozen=True)
class Stack:
    """A stack file as written (after validation); None = leave it to the KB."""

    path: str
    name: str
    python: str
    torch: str | None  # None: conda's pytorch (conda packages name it)
    cuda: str | None = None
    os: str | None = None
    companions: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    min_driver: str | None = None
    flavor: str = "base"
    conda: tuple[str, ...] = ()
    apt: tuple[str, ...] = ()
    copy: tuple[CopyItem, ...] = ()
    entrypoint: tuple[str, ...] | None = None
    command: tuple[str, ...] | None = None
    healthcheck: bool = False
    conda_channels: tuple[str, ...] = ()  # empty when `conda` is
    conda_platforms: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResolvedStack:
    """Everything a lock and a Dockerfile need, each value either from the file or the KB."""

    name: str
    python: str
    torch: str  # "2.14.1"
    variant: str  # "cu130" | "cpu"
    cuda: str | None  # "13.0"; None for CPU
    os: str
    base_image: str  # FROM of both stages
    python_from_base: bool  # the base image brings Python (python:X.Y-slim); else apt python3
    os_family: str  # "ubuntu" | "debian"
    glibc: str  # the base OS's glibc: highest manylinux tag a wheel may carry
    index_url: str  # where torch comes from (pypi.org when conda provides torch)
    extra_index_urls: tuple[str, ...]  # where everything else comes from
    requirements: tuple[str, ...]  # top-level pip requirements (the pip part only), torch first unless conda provides it
    arch_list: tuple[str, ...] | None
    gpus: Mapping[str, str] = field(default_factory=dict)  # cc -> how it runs
    driver_floor: str | None = None
    min_driver: str | None = None
    conda: tuple[str, ...] = ()  # conda match specs ("pytorch=2.5.1=cuda126*"), python first
    conda_channels: tuple[str, ...] = ()  # names ("conda-forge") or URLs (file:///srv/channel)
    conda_platforms: tuple[str, ...] = ()  # conda subdirs ("linux-64")
    filled: tuple[str, ...] = ()  # fields the KB filled in
    notes: tuple[str, ...] = ()  # things the KB could not confirm
    sources: tuple[str, ...] = ()
    # What the image adds around the venv (not part of the lock or its digest).
    apt: tuple[str, ...] = ()
    copy: tuple[CopyItem, ...] = ()
    entrypoint: tuple[str, ...] | None = None
    command: tuple[str, ...] | None = None
    healthcheck: bool = False

    @property
    def torch_local(self) -> str:
        return f"{self.torch}+{self.variant}"

    @property
    def torch_from_conda(self) -> bool:
        """conda's pytorch provides torch: `requirements` (the pip part) holds no torch, and a
        pip lock that pins one would reinstall torch over conda's."""
        return any(conda_spec.parse_spec(spec).name == "pytorch" for spec in self.conda)

    def to_data(self) -> dict[str, Any]:
        """Plain data in a fixed order (the resolved stack file written beside the lock)."""
        return {
            "name": self.name,
            "python": self.python,
            "torch": self.torch,
            "variant": self.variant,
            "cuda": self.cuda,
            "os": self.os,
            "os_family": self.os_family,
            "glibc": self.glibc,
            "base_image": self.base_image,
            "python_from_base": self.python_from_base,
            "index_url": self.index_url,
            "extra_index_urls": list(self.extra_index_urls),
            "requirements": list(self.requirements),
            "conda": list(self.conda),
            # Only for conda stacks: the resolved files of pip-only stacks stay as they were.
            **({"conda_channels": list(self.conda_channels), "conda_platforms": list(self.conda_platforms)} if self.conda else {}),
            "arch_list": list(self.arch_list) if self.arch_list is not None else None,
            "gpus": dict(self.gpus),
            "driver_floor": self.driver_floor,
            "min_driver": self.min_driver,
            "apt": list(self.apt),
            "copy": [{"src": c.src, "dest": c.dest} for c in self.copy],
            "entrypoint": list(self.entrypoint) if self.entrypoint is not None else None,
            "command": list(self.command) if self.command is not None else None,
            "healthcheck": self.healthcheck,
            "filled_from_kb": list(self.filled),
            "notes": list(self.notes),
            "sources": list(self.sources),
        }

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_data(), sort_keys=False, default_flow_style=False, width=1000)

    @property
    def digest(self) -> str:
        """sha256 of what the lock depends on (not notes or sources, which do not change
        what pip installs): `lock --check` compares it with the one in the lock."""
        data = self.to_data()
        keys = ["name", "python", "torch", "variant", "glibc", "index_url", "extra_index_urls", "requirements", "conda"]
        if self.conda:  # a pip-only stack's digest (and so its committed lock) is unchanged
            keys += ["conda_channels", "conda_platforms"]
        inputs = {k: data[k] for k in keys}
        return hashlib.sha256(yaml.safe_dump(inputs, sort_keys=True).encode()).hexdigest()


# --------------------------------------------------------------------------- loading
MAX_STACK_FILE_BYTES = 1024 * 1024


def load(path: str | Path) -> Stack:
    """Read and validate a stack file. Raises StackError naming the file and field."""
    where = str(path)
    try:
        # Only a regular file, and only so much: a FIFO or /dev/zero named as the stack
        # must not hang or fill memory.
        text = read_regular_file(where, MAX_STACK_FILE_BYTES, "stack file").decode("utf-8")
    except ValueError as exc:
        if isinstance(exc, UnicodeDecodeError):
            raise StackError(f"{where}: not UTF-8 text") from None
        raise StackError(str(exc)) from None
    try:
        data = yamlload.load(text)  # safe, and a repeated key is an error
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise StackError(f"{where}:{line}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    return parse(data, where)


def parse(data: Any, where: str = "<stack>") -> Stack:
    if not isinstance(data, Mapping):
        raise StackError(f"{where}: expected a mapping of fields (name, python, torch, ...), got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in _KNOWN_FIELDS)
    if unknown:
        raise StackError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(_KNOWN_FIELDS)})")

    def err(name: str, message: str) -> StackError:
        return StackError(f"{where}: field {name!r}: {message}")

    def text(name: str, required: bool = False) -> str | None:
        value = data.get(name)
        if value is None:
            if required:
                raise err(name, "missing (required)")
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise err(name, f"expected a string, got {type(value).__name__}")
        return str(value).strip()

    def strings(name: str) -> tuple[str, ...]:
        value = data.get(name)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
            raise err(name, "expected a list of strings")
        return tuple(str(v).strip() for v in value)

    name = text("name", required=True)
    assert name is not None
    if not _NAME.match(name):
        raise err("name", f"{name!r} must be lowercase letters, digits, '.', '_' or '-' (it names folders and the image)")
    if isinstance(data.get("python"), float):
        raise err("python", f"YAML read {data['python']!r} as a number (3.10 becomes 3.1): quote it, e.g. python: \"3.10\"")
    python = text("python", required=True)
    assert python is not None
    if not re.fullmatch(r"3\.\d+", python):
        raise err("python", f"expected a CPython minor like '3.12', got {python!r} (YAML reads 3.10 as 3.1: quote it)")
    conda, conda_channels, conda_platforms = _conda_field(data.get("conda"), err)
    conda_torch = _conda_torch(conda, err)
    torch = text("torch")
    if torch is None and conda_torch is None:
        raise err("torch", "missing (required unless the conda packages include pytorch=X.Y.Z=<build>)")
    if torch is not None:
        try:
            tv = Version(torch)
        except InvalidVersion:
            raise err("torch", f"not a version: {torch!r}") from None
        if tv.local is not None or len(tv.release) != 3:
            raise err("torch", f"expected a release X.Y.Z such as '2.14.1' (put the variant in 'cuda'), got {torch!r}")
    cuda = text("cuda")
    if cuda is not None and cuda != "cpu":
        if not re.fullmatch(r"\d+\.\d+", cuda):
            raise err("cuda", f"expected 'cpu' or a CUDA major.minor like '12.8', got {cuda!r}")
    os_name = text("os")
    companions = strings("companions")
    for c in companions:
        if c not in COMPANIONS:
            raise err("companions", f"unknown companion {c!r} (one of: {', '.join(COMPANIONS)}; pin anything else in 'requirements')")
    requirements = strings("requirements")
    for r in requirements:
        try:
            req = Requirement(r)
        except InvalidRequirement as exc:
            raise err("requirements", f"{r!r} is not a PEP 508 requirement: {exc}") from None
        if canonicalize_name(req.name) in ("torch", *COMPANIONS):
            if conda_torch is not None:
                raise err("requirements", f"{r!r}: conda's {conda_torch.text!r} provides torch; pip must not reinstall it over conda's "
                                          "(put torchvision/torchaudio in the conda packages)")
            raise err("requirements", f"{r!r}: set torch with 'torch' and its companions with 'companions'")
        if req.url:
            raise err("requirements", f"{r!r}: direct URLs cannot be locked with hashes from an index")
    gpus = strings("gpus")
    for cc in gpus:
        try:
            arch.parse_cc(cc)
        except ValueError as exc:
            raise err("gpus", str(exc)) from None
    min_driver = text("min_driver")
    if min_driver is not None:
        try:
            Version(min_driver)
        except InvalidVersion:
            raise err("min_driver", f"not a driver version: {min_driver!r} (e.g. '535.104.05')") from None
    flavor = text("flavor") or "base"
    if flavor not in FLAVORS:
        raise err("flavor", f"{flavor!r} is not one of {', '.join(FLAVORS)}")
    apt = strings("apt")
    for package in apt:
        if not _APT_NAME.match(package):
            raise err("apt", f"{package!r} is not a Debian package name (lowercase letters, digits, '+', '-', '.'; versions are not pinned: the base tag fixes the release)")
    copy = _copy_items(data.get("copy"), err)
    entrypoint = _exec_form(data, "entrypoint", err)
    command = _exec_form(data, "command", err)
    healthcheck = data.get("healthcheck", False)
    if not isinstance(healthcheck, bool):
        raise err("healthcheck", f"expected true or false, got {healthcheck!r}")
    return Stack(where, name, python, torch, cuda, os_name, companions, requirements, gpus, min_driver, flavor, conda,
                 apt, copy, entrypoint, command, healthcheck, conda_channels, conda_platforms)


def _conda_field(value: Any, err) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(package specs, channels, platforms) of the `conda` field: a mapping {channels,
    platforms, packages} or the older plain list of specs (channels [conda-forge],
    platforms [linux-64]). Every spec, channel and platform is validated here."""
    if value is None or value == []:
        return (), (), ()
    if isinstance(value, list):
        packages, channels, platforms, field_name = value, None, None, "conda"
    elif isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in ("channels", "platforms", "packages"))
        if unknown:
            raise err("conda", f"unknown key {unknown[0]!r} (known: channels, platforms, packages)")
        packages, channels, platforms, field_name = value.get("packages"), value.get("channels"), value.get("platforms"), "conda.packages"
        if packages is None:
            raise err("conda.packages", "missing: a list of conda match specs such as [\"python=3.11\", \"pytorch=2.5.1=cuda126*\"]")
    else:
        raise err("conda", "expected a list of conda match specs, or {channels: [...], platforms: [...], packages: [...]}")

    def string_list(items: Any, name: str) -> list[str]:
        if not isinstance(items, list) or not items or not all(isinstance(v, str) for v in items):
            raise err(name, f"expected a non-empty list of strings, got {items!r}")
        return items

    specs: list[str] = []
    seen: dict[str, str] = {}
    for item in string_list(packages, field_name):
        try:
            spec = conda_spec.parse_spec(item)
        except CondaSpecError as exc:
            raise err(field_name, f"{item!r}: {exc}") from None
        if spec.name in seen:
            raise err(field_name, f"{item!r}: {spec.name} is already given as {seen[spec.name]!r} (one spec per package)")
        seen[spec.name] = spec.text
        specs.append(spec.text)
    def checked(field_name: str, given: Any, default: tuple[str, ...], check: Callable[[str], str]) -> tuple[str, ...]:
        out: list[str] = []
        for item in string_list(given, field_name) if given is not None else default:
            try:
                value = check(item)
            except CondaSpecError as exc:
                raise err(field_name, str(exc)) from None
            if value in out:
                raise err(field_name, f"{value!r} listed twice")
            out.append(value)
        return tuple(out)

    return (tuple(specs), checked("conda.channels", channels, conda_spec.DEFAULT_CHANNELS, conda_spec.check_channel),
            checked("conda.platforms", platforms, conda_spec.DEFAULT_PLATFORMS, conda_spec.check_platform))


def _conda_torch(specs: tuple[str, ...], err) -> CondaSpec | None:
    """The conda pytorch spec, checked for what the resolution needs from it: its exact
    release and a build string that names CPU or CUDA. None when conda brings no torch."""
    parsed = {s.name: s for s in map(conda_spec.parse_spec, specs)}
    field_name = "conda"
    pytorch = parsed.get("pytorch")
    if pytorch is None:
        for name in _CONDA_TORCH_DEPENDENTS:
            if name in parsed:
                raise err(field_name, f"{parsed[name].text!r} brings conda's pytorch: name it too, as pytorch=X.Y.Z=<build> "
                                      "(cuda126* or cpu*), so that its variant is checked and pip leaves it alone")
        return None
    if conda_spec.pinned_version(pytorch.version, 3) is None:
        raise err(field_name, f"{pytorch.text!r}: pin the exact release, e.g. pytorch=2.5.1=cuda126* (the checks and the pip part need torch's version)")
    if conda_spec.torch_build(pytorch.build) is None:
        # conda-forge's CUDA builds require the __cuda virtual package and carry a higher
        # build number (conda-forge/pytorch-cpu-feedstock recipe/meta.yaml): without a build
        # string, a GPU-less locking machine gets the CPU build and a GPU one the CUDA build.
        raise err(field_name, f"{pytorch.text!r}: name the build, e.g. pytorch=2.5.1=cuda126* or pytorch=2.5.1=cpu* "
                              "(without one the solver picks CPU or CUDA from the locking machine's __cuda virtual package)")
    return pytorch


def _exec_form(data: Mapping[str, Any], name: str, err) -> tuple[str, ...] | None:
    """An exec-form list (["python", "app.py"]): no shell, so no string form to misquote."""
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise err(name, f"expected a non-empty list of strings (exec form, e.g. [\"python\", \"train.py\"]), got {value!r}")
    return tuple(value)


def _copy_items(value: Any, err) -> tuple[CopyItem, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise err("copy", "expected a list of {src: PATH, dest: /ABSOLUTE/PATH}")
    items: list[CopyItem] = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping) or set(item) != {"src", "dest"} or not all(isinstance(item[k], str) and item[k] for k in ("src", "dest")):
            raise err("copy", f"item {i}: expected {{src: PATH, dest: /ABSOLUTE/PATH}}, got {item!r}")
        src, dest = item["src"].strip(), item["dest"].strip()
        for label, path in (("src", src), ("dest", dest)):
            if any(ch.isspace() or ch in "\\*?[\"$" for ch in path):
                raise err("copy", f"item {i}: {label} {path!r} has whitespace, a backslash, a quote, '$' or a glob character")
        parts = src.split("/")
        if src.startswith("/") or ".." in parts:
            raise err("copy", f"item {i}: src {src!r} must be relative to the build context, without '..' (the context is all Docker can see)")
        if not dest.startswith("/") or ".." in dest.split("/"):
            raise err("copy", f"item {i}: dest {dest!r} must be an absolute path in the image, without '..'")
        items.append(CopyItem(src, dest))
    return tuple(items)


# --------------------------------------------------------------------------- resolving
def resolve(stack: Stack, kb: KB) -> ResolvedStack:
    """Fill the stack from the KB and check it can be built. Raises StackImpossible."""
    if stack.conda:
        return _resolve_conda(stack, kb)
    return _resolve_pip(stack, kb)


def _resolve_pip(stack: Stack, kb: KB, conda_python: bool = False) -> ResolvedStack:
    """torch from pip. `conda_python`: the Python is conda's, not the base OS's python3."""
    assert stack.torch is not None
    filled: list[str] = []
    notes: list[str] = []
    sources: list[str] = []
    where = f"stack {stack.name}"

    # 1. The torch wheel: which variant, and is there one for this Python?
    variants = kb.torch.variants_of(stack.torch)
    if not variants:
        known = ", ".join(kb.torch.versions()[-6:])
        raise StackImpossible(f"{where}: torch {stack.torch} is not in the KB (newest known: {known})")
    if stack.cuda is None:
        chosen = kb.torch.pypi_default(stack.torch)
        if chosen is None:
            raise StackImpossible(f"{where}: torch {stack.torch} has no known PyPI default variant; set 'cuda' to one of {', '.join(v.variant for v in variants)}")
        filled.append("cuda")
    else:
        name = "cpu" if stack.cuda == "cpu" else "cu" + stack.cuda.replace(".", "")
        chosen = next((v for v in variants if v.variant == name), None)
        if chosen is None:
            have = ", ".join(v.variant for v in variants)
            raise StackImpossible(f"{where}: torch {stack.torch} has no {name} wheel (variants: {have})")
    sources.extend(chosen.source)
    if chosen.pythons and stack.python not in chosen.pythons:
        raise StackImpossible(
            f"{where}: torch {chosen.local_version} has no wheel for Python {stack.python} (wheels for {', '.join(chosen.pythons)})"
        )
    if not chosen.pythons:
        notes.append(f"Python wheels of torch {chosen.local_version} are unconfirmed in the KB; the lock will tell")

    # 2. Target GPUs need kernels in the wheel.
    gpus: dict[str, str] = {}
    if stack.gpus and chosen.cuda is None:
        raise StackImpossible(f"{where}: targets GPUs {', '.join(stack.gpus)} but torch {chosen.local_version} is a CPU build")
    for cc in stack.gpus:
        if chosen.arch_list is None:
            gpus[cc] = "not checked: arch list of this wheel unconfirmed in the KB"
            continue
        verdict = arch.runs_on(list(chosen.arch_list), cc)
        if not verdict:
            raise StackImpossible(f"{where}: no kernels for GPU {cc} ({arch.sm_name(cc)}) in torch {chosen.local_version}: {verdict.how}")
        gpus[cc] = verdict.how
    unchecked = [cc for cc, how in gpus.items() if how.startswith("not checked")]
    if unchecked:
        notes.append(f"GPUs {', '.join(unchecked)} not checked: the KB has no confirmed arch list for torch {chosen.local_version}")

    # 3. The fleet's oldest driver must run the wheel's CUDA (minor-version compatibility).
    floor = None
    if chosen.cuda is not None:
        floor = kb.cuda.driver_floor(chosen.cuda)
        if floor is None:
            notes.append(f"no driver floor for CUDA {chosen.cuda} in the KB")
        elif stack.min_driver is not None and Version(stack.min_driver) < Version(floor):
            raise StackImpossible(
                f"{where}: torch {chosen.local_version} needs CUDA {chosen.cuda}, which needs driver >= {floor}; the fleet's oldest driver is {stack.min_driver}"
            )

    # 4. The base OS and image.
    os_name, base, image = _base_image(stack, kb, chosen.cuda, conda_python, filled, sources)

    # 5. What pip installs, and from where.
    requirements = [f"torch=={stack.torch}" if chosen.pypi_default else f"torch=={chosen.local_version}"]
    for c in stack.companions:
        version = getattr(chosen, c, None)
        if version is None:
            raise StackImpossible(f"{where}: the KB has no {c} release paired with torch {stack.torch}; pin it in 'requirements' instead")
        requirements.append(f"{c}=={version}" if chosen.pypi_default else f"{c}=={version}+{chosen.variant}")
    requirements.extend(stack.requirements)
    have = {canonicalize_name(Requirement(r).name) for r in requirements}
    requirements.extend(r for r in TOOL_REQUIREMENTS if canonicalize_name(Requirement(r).name) not in have)
    if chosen.pypi_default:
        index, extra = PYPI_SIMPLE, ()
    else:
        index, extra = chosen.index_url, (PYPI_SIMPLE,)
    return ResolvedStack(
        name=stack.name,
        python=stack.python,
        torch=stack.torch,
        variant=chosen.variant,
        cuda=chosen.cuda,
        os=os_name,
        base_image=image,
        python_from_base=base.python_from_base,
        os_family=base.family,
        glibc=base.glibc,
        index_url=index,
        extra_index_urls=extra,
        requirements=tuple(requirements),
        arch_list=chosen.arch_list,
        gpus=gpus,
        driver_floor=floor,
        min_driver=stack.min_driver,
        conda=stack.conda,
        filled=tuple(filled),
        **_image_fields(stack),
        notes=tuple(notes),
        sources=tuple(dict.fromkeys(sources)),
    )


def _image_fields(stack: Stack) -> dict[str, Any]:
    """What the image adds around the environment, as the stack file says (pip and conda
    stacks alike; not part of the lock)."""
    return {"apt": stack.apt, "copy": stack.copy, "entrypoint": stack.entrypoint, "command": stack.command,
            "healthcheck": stack.healthcheck}


def _resolve_conda(stack: Stack, kb: KB) -> ResolvedStack:
    """A conda base with pip on top, resolved once: one Python (conda's), one torch (conda's
    pytorch when the packages name it, else pip's), CUDA majors that agree."""
    where = f"stack {stack.name}"
    specs = [conda_spec.parse_spec(text) for text in stack.conda]
    by_name = {s.name: s for s in specs}
    notes: list[str] = []
    if not conda_spec.USE_RATTLER:
        notes.append(f"conda specs checked with {conda_spec.validator()}")

    # One Python: conda's, and the pip part is locked for the stack's `python`.
    python = by_name.get("python")
    if python is not None:
        _check_conda_python(where, python, stack.python, notes)
    ordered = (python.text if python else f"python={stack.python}", *(s.text for s in specs if s.name != "python"))
    conda_fields = dict(conda=ordered, conda_channels=stack.conda_channels, conda_platforms=stack.conda_platforms)

    pytorch = by_name.get("pytorch")
    if pytorch is None:  # pip's torch on conda's Python
        _check_cuda_majors(where, specs, None)
        resolved = _resolve_pip(stack, kb, conda_python=True)
        return replace(resolved, **conda_fields, notes=(*resolved.notes, *notes))

    # torch is conda's: release and variant from the pytorch spec.
    version = conda_spec.pinned_version(pytorch.version, 3)
    build = conda_spec.torch_build(pytorch.build)
    assert version is not None and build is not None  # checked by parse
    cuda = build.cuda
    if build.variant != "cpu" and cuda is None:
        cuda = _cuda_version_pin(specs)
        if cuda is None:
            raise StackImpossible(f"{where}: conda {pytorch.text!r} names no CUDA major.minor: write the build as cuda126* or pin cuda-version=12.6")
        if build.major is not None and Version(cuda).major != build.major:
            raise StackImpossible(f"{where}: conda {pytorch.text!r} is a CUDA {build.major} build, but the cuda-version pin says CUDA {cuda}")
    variant = "cpu" if cuda is None else "cu" + cuda.replace(".", "")
    label = f"conda pytorch {version} ({variant}, {pytorch.text!r})"
    if stack.torch is not None and stack.torch != version:
        raise StackImpossible(f"{where}: 'torch' says {stack.torch} but the conda packages give {label}; drop 'torch' or make them agree")
    if stack.cuda is not None and stack.cuda != ("cpu" if cuda is None else cuda):
        raise StackImpossible(f"{where}: 'cuda' says {stack.cuda} but the conda packages give {label}; drop 'cuda' or make them agree")
    if "pytorch-cpu" in by_name and cuda is not None:
        raise StackImpossible(f"{where}: {by_name['pytorch-cpu'].text!r} asks for the CPU build, {label} is a CUDA one")
    if "pytorch-gpu" in by_name and cuda is None:
        raise StackImpossible(f"{where}: {by_name['pytorch-gpu'].text!r} asks for a CUDA build, {label} is the CPU one")
    _check_cuda_majors(where, specs, Version(cuda).major if cuda else None)

    # A mixed stack: pip must not put its own torch over conda's.
    if stack.companions:
        raise StackImpossible(f"{where}: companions {', '.join(stack.companions)} come from pip and pin pip's torch, which would be installed over "
                              f"{label}; add {', '.join(stack.companions)} to the conda packages instead")

    # Target GPUs need kernels in conda-forge's build (its own arch list, not the wheels').
    gpus: dict[str, str] = {}
    if stack.gpus and cuda is None:
        raise StackImpossible(f"{where}: targets GPUs {', '.join(stack.gpus)} but {label} is a CPU build")
    sources: list[str] = []
    arch_list: tuple[str, ...] | None = None
    if cuda is not None:
        channel = pytorch.channel or stack.conda_channels[0]
        row = kb.conda.pytorch_build(version, cuda) if _is_conda_forge(channel) and "linux-64" in stack.conda_platforms else None
        if row is not None:
            arch_list = row.arch_list
            sources.extend(row.source)
        elif not _is_conda_forge(channel):
            why = f"pytorch comes from channel {channel}; the KB knows conda-forge's builds only"
        elif "linux-64" not in stack.conda_platforms:
            why = "the KB's conda-forge arch lists are for linux-64"
        else:
            why = f"no arch list of conda-forge's pytorch {version} cuda{cuda.replace('.', '')} build in the KB (not confirmed for conda-forge builds; the pip wheels' lists do not apply)"
        for cc in stack.gpus:
            if arch_list is None:
                gpus[cc] = f"not checked: {why}"
                continue
            verdict = arch.runs_on(list(arch_list), cc)
            if not verdict:
                raise StackImpossible(f"{where}: no kernels for GPU {cc} ({arch.sm_name(cc)}) in {label}, conda-forge's build: {verdict.how}")
            gpus[cc] = verdict.how
        if arch_list is None and stack.gpus:
            notes.append(f"GPUs {', '.join(stack.gpus)} not checked: {why}")

    # The fleet's oldest driver must run its CUDA: the same KB rows as for the wheels.
    floor = None
    if cuda is not None:
        floor = kb.cuda.driver_floor(cuda)
        if floor is None:
            notes.append(f"no driver floor for CUDA {cuda} in the KB")
        elif stack.min_driver is not None and Version(stack.min_driver) < Version(floor):
            raise StackImpossible(f"{where}: {label} needs CUDA {cuda}, which needs driver >= {floor}; the fleet's oldest driver is {stack.min_driver}")
    notes.append(f"Python {stack.python} builds of {label} are not checked against the KB; the conda solver checks them when locking")

    filled: list[str] = []
    os_name, base, image = _base_image(stack, kb, cuda, True, filled, sources)
    # The pip part: the stack's requirements and fwdoctor's own tools, no torch.
    requirements = list(stack.requirements)
    have = {canonicalize_name(Requirement(r).name) for r in requirements}
    requirements.extend(r for r in TOOL_REQUIREMENTS if canonicalize_name(Requirement(r).name) not in have)
    return ResolvedStack(
        name=stack.name,
        python=stack.python,
        torch=version,
        variant=variant,
        cuda=cuda,
        os=os_name,
        base_image=image,
        python_from_base=base.python_from_base,
        os_family=base.family,
        glibc=base.glibc,
        index_url=PYPI_SIMPLE,
        extra_index_urls=(),
        requirements=tuple(requirements),
        arch_list=arch_list,
        gpus=gpus,
        driver_floor=floor,
        min_driver=stack.min_driver,
        **conda_fields,
        filled=tuple(filled),
        **_image_fields(stack),
        notes=tuple(notes),
        sources=tuple(dict.fromkeys(sources)),
    )


def _is_conda_forge(channel: str) -> bool:
    """The channel "conda-forge", or a URL of it (https://conda.anaconda.org/conda-forge)."""
    return channel == "conda-forge" or ("://" in channel and channel.rstrip("/").endswith("/conda-forge") and not channel.startswith("file:"))


def _check_conda_python(where: str, spec: CondaSpec, python: str, notes: list[str]) -> None:
    """The conda python spec must admit the stack's python minor and no other: the pip part
    is resolved for that one CPython."""
    want = Version(python)
    try:
        minors = conda_spec.admitted_minors(spec.version, want.major)
    except ValueError as exc:
        notes.append(f"conda {spec.text!r} not compared with python {python}: {exc}")
        return
    if want.minor not in minors:
        raise StackImpossible(f"{where}: conda {spec.text!r} does not admit Python {python} (the stack's 'python'); there is one Python, conda's")
    others = sorted(minors - {want.minor})
    if others:
        shown = ", ".join(f"{want.major}.{m}" for m in others[:3]) + (", ..." if len(others) > 3 else "")
        raise StackImpossible(f"{where}: conda {spec.text!r} also admits Python {shown}; the pip part is locked for {python} alone: pin python={python}")


def _cuda_version_pin(specs: list[CondaSpec]) -> str | None:
    """The CUDA major.minor a cuda-version (or cudatoolkit) spec pins exactly, if one does."""
    for spec in specs:
        if spec.name in _CUDA_VERSION_PACKAGES:
            pin = conda_spec.pinned_version(spec.version, 2)
            if pin is not None:
                return pin
    return None


def _check_cuda_majors(where: str, specs: list[CondaSpec], torch_major: int | None) -> None:
    """Every spec that says a CUDA major (pytorch's build, a cuda-version/cudatoolkit pin, a
    build string such as cudnn's *cuda11*) must say the same one: CUDA 11 and CUDA 12
    libraries in one environment cannot both serve one torch."""
    claims: list[tuple[str, set[int]]] = []
    for spec in specs:
        if spec.name == "pytorch":
            if torch_major is not None:
                claims.insert(0, (f"conda {spec.text!r} (CUDA {torch_major})", {torch_major}))
            continue
        if spec.name in _CUDA_VERSION_PACKAGES:
            try:
                majors = conda_spec.admitted_majors(spec.version, range(9, 30))
            except ValueError:
                continue  # not comparable here: the solver judges it
            claims.append((f"{spec.text!r} (admits CUDA {', '.join(map(str, sorted(majors))) or 'none'})", majors))
            continue
        major = conda_spec.build_cuda_major(spec.build)
        if major is not None:
            claims.append((f"{spec.text!r} (a CUDA {major} build)", {major}))
    for i, (first, first_majors) in enumerate(claims):
        for second, second_majors in claims[i + 1:]:
            if not first_majors & second_majors:
                raise StackImpossible(f"{where}: CUDA majors disagree: {first} and {second}")


def _base_image(stack: Stack, kb: KB, cuda: str | None, conda_python: bool, filled: list[str], sources: list[str]) -> tuple[str, OsBase, str]:
    """(OS name, its KB row, the FROM image) for a stack whose torch runs `cuda` (None: CPU).
    `conda_python`: conda brings the Python, so the OS's own python3 need not match."""
    where = f"stack {stack.name}"
    docker = kb.docker
    os_name = stack.os
    if os_name is None:
        if conda_python:
            os_name = _default_conda_os(docker, cuda, stack.flavor, stack.python)
            if os_name is None:
                raise StackImpossible(f"{where}: no Ubuntu base image in the KB for {'a CPU image' if cuda is None else f'CUDA {cuda} ({stack.flavor})'}; set 'os'")
        else:
            os_name = _default_os(docker, stack.python, cpu=cuda is None)
        if os_name is None:
            offered = ", ".join(f"{o.os} (python {o.python})" for o in docker.systems if cuda is None or o.family == "ubuntu")
            raise StackImpossible(f"{where}: no base OS ships Python {stack.python} for a {'CPU' if cuda is None else 'CUDA'} image: {offered}; set 'os' or change 'python'")
        filled.append("os")
    try:
        base = docker.os_base(os_name)
    except LookupError as exc:
        raise StackImpossible(f"{where}: {exc}") from None
    sources.extend(base.source)
    if not conda_python and not base.python_from_base and base.python != stack.python:
        raise StackImpossible(f"{where}: {os_name} ships Python {base.python} as python3, not {stack.python}; choose another 'os' or 'python'")
    if cuda is None:
        image = docker.cpu_reference(os_name, stack.python)
    else:
        try:
            image = docker.cuda_reference(cuda, os_name, stack.flavor)
        except LookupError as exc:
            raise StackImpossible(f"{where}: {exc}") from None
        sources.append("S-IMG")
    if base.python_from_base and cuda is not None:
        raise StackImpossible(f"{where}: {os_name} is only offered for CPU images")
    return os_name, base, image


def _default_conda_os(docker: DockerKB, cuda: str | None, flavor: str, python: str) -> str | None:
    """For a conda stack (conda brings Python): the newest Ubuntu with an image for `cuda`
    (any Ubuntu for CPU stacks); the OS's own python3 does not matter."""
    for row in reversed(docker.systems):
        if row.family != "ubuntu":
            continue
        try:
            docker.cpu_reference(row.os, python) if cuda is None else docker.cuda_reference(cuda, row.os, flavor)
        except LookupError:
            continue
        return row.os
    return None


def _default_os(docker: DockerKB, python: str, cpu: bool) -> str | None:
    """The first OS whose own python3 is `python` (Ubuntu first: CUDA images are Ubuntu);
    for CPU stacks, else an OS whose image brings any Python (python:X.Y-slim)."""
    for row in docker.systems:
        if row.family == "ubuntu" and row.python == python:
            return row.os
    if cpu:
        for row in docker.systems:
            if row.python_from_base:
                return row.os
    return None


def copy_in_context(items: tuple[CopyItem, ...], stack_file: str, context: str) -> tuple[CopyItem, ...]:
    """The copy items with each src as the build context sees it. A src is written relative
    to the stack file's folder, as compose resolves a build context and pip-compile a `-r`
    path against the file that names them, so a stack means the same files from any working
    folder. StackError when one lies outside the context (all Docker can see)."""
    base = os.path.dirname(os.path.abspath(stack_file))
    top = os.path.abspath(context)
    placed: list[CopyItem] = []
    for item in items:
        full = os.path.normpath(os.path.join(base, item.src))
        rel = os.path.relpath(full, top)
        if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
            raise StackError(f"{stack_file}: copy src {item.src!r} is {full}, outside the build context {top}; pass --context with a folder that holds it")
        rel = rel.replace(os.sep, "/")
        if item.src.endswith("/"):  # a folder stays one: "app/" copies app's contents
            rel = "./" if rel == "." else rel + "/"
        placed.append(replace(item, src=rel))
    return tuple(placed)


def load_and_resolve(path: str | Path, kb: KB) -> ResolvedStack:
    return resolve(load(path), kb)
