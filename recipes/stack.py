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
    conda: []                  # conda packages (locked by conda-lock, when available)
    apt: [tini]                # Debian/Ubuntu packages installed in the runtime image
    copy:                      # project files into the image: src relative to the build
      - {src: app/, dest: /app/}   # context (no '..'), dest absolute in the image
    entrypoint: ["/usr/bin/tini", "--"]   # exec form lists
    command: ["python", "/app/main.py"]   # default: fwdoctor check --deep
    healthcheck: false         # true: HEALTHCHECK runs `fwdoctor smoke kernel` (GPU images)

`load(path)` validates the file (StackError names the file and the field); `resolve(stack,
kb)` fills what was left out from the KB and refuses impossible stacks (StackImpossible
says why). Both are pure: nothing here touches the network or the machine.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from fwdoctor import arch, yamlload
from fwdoctor.host import read_regular_file
from fwdoctor.kb.docker import FLAVORS

if TYPE_CHECKING:
    from fwdoctor.kb import KB
    from fwdoctor.kb.docker import DockerKB

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


class StackError(ValueError):
    """The stack file is malformed: the message names the file and the field."""


class StackImpossible(ValueError):
    """The stack is well-formed but cannot be built; the message says why."""


@dataclass(frozen=True)
class CopyItem:
    """A project file or folder copied into the image (COPY src dest)."""

    src: str  # relative to the build context, POSIX separators
    dest: str  # absolute path in the image


@dataclass(frozen=True)
class Stack:
    """A stack file as written (after validation); None = leave it to the KB."""

    path: str
    name: str
    python: str
    torch: str
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
    index_url: str  # where torch comes from
    extra_index_urls: tuple[str, ...]  # where everything else comes from
    requirements: tuple[str, ...]  # top-level pip requirements, torch first
    arch_list: tuple[str, ...] | None
    gpus: Mapping[str, str] = field(default_factory=dict)  # cc -> how it runs
    driver_floor: str | None = None
    min_driver: str | None = None
    conda: tuple[str, ...] = ()
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
        inputs = {k: self.to_data()[k] for k in ("name", "python", "torch", "variant", "glibc", "index_url", "extra_index_urls", "requirements", "conda")}
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
    torch = text("torch", required=True)
    assert torch is not None
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
    conda = strings("conda")
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
                 apt, copy, entrypoint, command, healthcheck)


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
    docker = kb.docker
    os_name = stack.os
    if os_name is None:
        os_name = _default_os(docker, stack.python, cpu=chosen.cuda is None)
        if os_name is None:
            offered = ", ".join(f"{o.os} (python {o.python})" for o in docker.systems if chosen.cuda is None or o.family == "ubuntu")
            raise StackImpossible(f"{where}: no base OS ships Python {stack.python} for a {'CPU' if chosen.cuda is None else 'CUDA'} image: {offered}; set 'os' or change 'python'")
        filled.append("os")
    try:
        base = docker.os_base(os_name)
    except LookupError as exc:
        raise StackImpossible(f"{where}: {exc}") from None
    sources.extend(base.source)
    if not base.python_from_base and base.python != stack.python:
        raise StackImpossible(f"{where}: {os_name} ships Python {base.python} as python3, not {stack.python}; choose another 'os' or 'python'")
    if chosen.cuda is None:
        image = docker.cpu_reference(os_name, stack.python)
    else:
        try:
            image = docker.cuda_reference(chosen.cuda, os_name, stack.flavor)
        except LookupError as exc:
            raise StackImpossible(f"{where}: {exc}") from None
        sources.append("S-IMG")
    if base.python_from_base and chosen.cuda is not None:
        raise StackImpossible(f"{where}: {os_name} is only offered for CPU images")

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
        apt=stack.apt,
        copy=stack.copy,
        entrypoint=stack.entrypoint,
        command=stack.command,
        healthcheck=stack.healthcheck,
        notes=tuple(notes),
        sources=tuple(dict.fromkeys(sources)),
    )


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


def load_and_resolve(path: str | Path, kb: KB) -> ResolvedStack:
    return resolve(load(path), kb)
