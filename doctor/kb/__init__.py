"""The compatibility knowledge base: YAML files in this folder, one fact per row.

Every row carries `source:` naming one or more keys of sources.yaml, where each key expands
to the public document it came from. Files are validated on load; a malformed KB raises
`KBError` naming the file and the row, and the CLI exits 2 with that line.

Each area (cuda, gpus, torch, libs, docker, build) has its own module here with a
`from_yaml(data, ctx)` constructor and the small query functions rules use; `KB` loads
them lazily so `fwdoctor explain` never pays for parsing the torch matrix.
"""

from __future__ import annotations

import os
import re
import threading
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from fwdoctor.kb import cache

if TYPE_CHECKING:  # each area module loads on first use of its property (see KB)
    from fwdoctor.kb.build import BuildKB
    from fwdoctor.kb.conda import CondaKB
    from fwdoctor.kb.cuda import CudaKB
    from fwdoctor.kb.errors import ErrorsKB
    from fwdoctor.kb.docker import DockerKB
    from fwdoctor.kb.extensions import ExtensionsKB
    from fwdoctor.kb.frameworks import FrameworksKB
    from fwdoctor.kb.gpus import GpuKB
    from fwdoctor.kb.libs import LibsKB
    from fwdoctor.kb.nodetypes import NodeTypesKB
    from fwdoctor.kb.torch import TorchKB

KB_DIR = Path(__file__).resolve().parent
# A folder to use instead of KB_DIR when no directory is given (tests point it at their
# frozen tests/kb, so a command without --kb and the probes' own KB() read it too).
KB_ENV = "FWDOCTOR_KB"


def default_kb_dir() -> Path:
    """$FWDOCTOR_KB when set and non-empty, else the bundled KB_DIR."""
    override = os.environ.get(KB_ENV)
    return Path(override) if override else KB_DIR


_REFRESHED = re.compile(r"""^refreshed:\s*["']?(\d{4}-\d{2}-\d{2})["']?\s*(?:#.*)?$""", re.MULTILINE)


def kb_refreshed(directory: str | os.PathLike[str] | None = None) -> str | None:
    """The `refreshed:` date (YYYY-MM-DD) of a KB folder's sources.yaml, read without
    parsing the YAML (`fwdoctor --version` and report headers ask it); None when absent or
    unreadable. KB.refreshed validates the same field on load."""
    path = Path(directory or default_kb_dir()) / "sources.yaml"
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            head = handle.read(64 * 1024)
    except OSError:
        return None
    match = _REFRESHED.search(head)
    return match.group(1) if match else None


class KBError(ValueError):
    """The knowledge base is malformed. The message names the file and row."""


class Ctx:
    """Where a value sits in the KB, for error messages: `torch.yaml: releases[3].variants`."""

    def __init__(self, file: str, path: str = "", sources: Mapping[str, str] | None = None) -> None:
        self.file = file
        self.path = path
        self.sources = sources or {}

    def at(self, part: str | int) -> "Ctx":
        sep = "" if isinstance(part, int) or not self.path else "."
        piece = f"[{part}]" if isinstance(part, int) else part
        return Ctx(self.file, f"{self.path}{sep}{piece}", self.sources)

    def error(self, message: str) -> KBError:
        where = f"{self.file}: {self.path}" if self.path else self.file
        return KBError(f"{where}: {message}")

    # -------------------------------------------------------------- row helpers
    def mapping(self, value: Any) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(f"expected a mapping, got {type(value).__name__}")
        return value

    def rows(self, value: Any) -> list[Mapping[str, Any]]:
        if not isinstance(value, list):
            raise self.error(f"expected a list of rows, got {type(value).__name__}")
        for i, row in enumerate(value):
            self.at(i).mapping(row)
        return value

    def field(self, row: Mapping[str, Any], name: str, kind: type | tuple[type, ...] = object, optional: bool = False) -> Any:
        if name not in row or row[name] is None:
            if optional:
                return None
            raise self.error(f"missing field {name!r}")
        value = row[name]
        if kind is not object and not isinstance(value, kind):
            want = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            raise self.at(name).error(f"expected {want}, got {type(value).__name__} {value!r}")
        return value

    def version(self, row: Mapping[str, Any], name: str, optional: bool = False) -> str | None:
        """A version string that `packaging.version.Version` accepts (YAML may give a float)."""
        from packaging.version import InvalidVersion, Version

        value = self.field(row, name, (str, int, float), optional)
        if value is None:
            return None
        text = str(value)
        try:
            Version(text)
        except InvalidVersion:
            raise self.at(name).error(f"not a version: {text!r}") from None
        return text

    def source(self, row: Mapping[str, Any]) -> tuple[str, ...]:
        """The row's source keys; every key must exist in sources.yaml."""
        value = row.get("source")
        if value is None:
            raise self.error("missing field 'source' (every KB fact needs one)")
        keys = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, list) else None
        if not keys or not all(isinstance(k, str) and k for k in keys):
            raise self.at("source").error(f"expected a source key or a list of them, got {value!r}")
        for key in keys:
            if self.sources and key not in self.sources:
                raise self.at("source").error(f"unknown source key {key!r} (add it to sources.yaml)")
        return keys


MAX_KB_FILE_BYTES = 16 * 1024 * 1024  # the shipped files are ~100 KB each


def load_yaml(path: Path) -> Any:
    """The file's YAML as plain data: from the parsed-KB cache when this exact content was
    parsed before (fwdoctor.kb.cache says why), else parsed now and cached."""
    from fwdoctor.host import read_regular_file

    try:
        # A FIFO or device in a --kb folder is refused unopened; a huge file is refused.
        raw = read_regular_file(str(path), MAX_KB_FILE_BYTES, "knowledge-base file")
    except ValueError as exc:
        raise KBError(str(exc)) from None
    entry = cache.entry(raw, path.name)
    data = cache.read(entry)
    if data is None:
        data = parse_yaml(raw, path.name)
        cache.write(entry, data)
    return data


def parse_yaml(raw: bytes, name: str) -> Any:
    # Imported here: a cache hit (every check but the first) needs no YAML parser at all.
    import yaml

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KBError(f"{name}: not UTF-8: {exc}") from None
    try:
        # Safe, libyaml when present, and a repeated key is an error (fwdoctor.yamlload).
        from fwdoctor.yamlload import load

        return load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise KBError(f"{name}:{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


_AREA_LOCK = threading.Lock()
_AREA_LOCKS: dict[tuple[Any, ...], threading.Lock] = {}
_AREA_CACHE: dict[tuple[Any, ...], Any] = {}


class KB:
    """The whole knowledge base. Area views load on first use and are validated then;
    `KB.load(validate_all=True)` (the CLI's default for `check`) loads them all up front.
    Without `directory` it reads the folder $FWDOCTOR_KB names, else the bundled one."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory else default_kb_dir()

    @classmethod
    def load(cls, directory: str | os.PathLike[str] | None = None, validate_all: bool = True, areas: Sequence[str] | None = None) -> "KB":
        """A KB with `areas` (default: all of AREAS) loaded and validated now; the others
        still load on first use. `validate_all=False` loads nothing up front."""
        kb = cls(directory)
        if validate_all:
            for name in AREAS if areas is None else ("sources", *areas):
                getattr(kb, name)
        return kb

    def _area(self, filename: str, build: Callable[[Any, Ctx], Any]) -> Any:
        path = self.directory / filename
        try:
            stat = path.stat()
        except OSError:
            raise KBError(f"{filename}: missing from {self.directory}") from None
        # Parsed areas are shared by every KB of the same folder in this process: the CLI
        # loads the KB while the torch probe asks it for a wheel's arch list, and the YAML
        # construction (~10-25 ms an area) should happen once. The key changes with the file.
        sources = self.directory / "sources.yaml"
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, build, _stamp(sources))
        with _AREA_LOCK:
            lock = _AREA_LOCKS.setdefault(key, threading.Lock())
        with lock:
            if key not in _AREA_CACHE:
                # Built objects from the compiled cache while the YAML files and the code
                # are the ones they were built from (fwdoctor.kb.cache.compiled).
                _AREA_CACHE[key] = cache.compiled(filename, (path, sources), lambda: self._parse_area(path, filename, build))
            return _AREA_CACHE[key]

    def _parse_area(self, path: Path, filename: str, build: Callable[[Any, Ctx], Any]) -> Any:
        data = Ctx(filename).mapping(load_yaml(path))
        # An area file may cite sources of its own in a top-level `sources:` mapping;
        # they extend (never override) sources.yaml for that file's rows.
        local = data.get("sources") or {}
        if not isinstance(local, Mapping) or not all(isinstance(v, str) and v.strip() for v in local.values()):
            raise KBError(f"{filename}: sources: expected a mapping of key -> citation string")
        clash = sorted(k for k in local if k in self.sources and local[k] != self.sources[k])
        if clash:
            raise KBError(f"{filename}: sources: {', '.join(clash)} already defined differently in sources.yaml")
        ctx = Ctx(filename, "", {**self.sources, **local})
        return build(data, ctx)

    @cached_property
    def sources(self) -> Mapping[str, str]:
        path = self.directory / "sources.yaml"
        return cache.compiled("sources.yaml", (path,), lambda: self._load_sources(path))

    @staticmethod
    def _load_sources(path: Path) -> Mapping[str, str]:
        data = load_yaml(path)
        if not isinstance(data, Mapping) or not isinstance(data.get("sources"), Mapping):
            raise KBError("sources.yaml: expected a top-level 'sources' mapping of key -> citation")
        for key, value in data["sources"].items():
            if not isinstance(value, str) or not value.strip():
                raise KBError(f"sources.yaml: sources.{key}: expected a citation string")
        return dict(data["sources"])

    @cached_property
    def refreshed(self) -> str | None:
        """The day this KB was last brought up to date (sources.yaml `refreshed:`), None when
        it does not say (the frozen tests/kb, an old --kb folder)."""
        path = self.directory / "sources.yaml"
        # Compiled like an area: the lifecycle rules ask it on every check and triage.
        return cache.compiled("sources-refreshed.yaml", (path,), lambda: self._load_refreshed(path))

    @staticmethod
    def _load_refreshed(path: Path) -> str | None:
        import datetime

        data = load_yaml(path)
        value = data.get("refreshed") if isinstance(data, Mapping) else None
        if value is None:
            return None
        text = value.isoformat() if isinstance(value, datetime.date) else str(value)
        try:
            datetime.date.fromisoformat(text)
        except ValueError:
            raise KBError(f"sources.yaml: refreshed: expected a date like 2026-12-03, got {value!r}") from None
        return text

    @cached_property
    def cuda(self) -> CudaKB:
        from fwdoctor.kb import cuda

        return self._area("cuda.yaml", cuda.from_yaml)

    @cached_property
    def gpus(self) -> GpuKB:
        from fwdoctor.kb import gpus

        return self._area("gpus.yaml", gpus.from_yaml)

    @cached_property
    def torch(self) -> TorchKB:
        from fwdoctor.kb import torch

        return self._area("torch.yaml", torch.from_yaml)

    @cached_property
    def frameworks(self) -> FrameworksKB:  # JAX, TensorFlow, PaddlePaddle wheels
        from fwdoctor.kb import frameworks

        return self._area("frameworks.yaml", frameworks.from_yaml)

    @cached_property
    def libs(self) -> LibsKB:  # cuDNN and NCCL
        from fwdoctor.kb import libs

        return self._area("libs.yaml", libs.from_yaml)


    @cached_property
    def docker(self) -> DockerKB:  # nvidia/cuda base tags
        from fwdoctor.kb import docker

        return self._area("docker.yaml", docker.from_yaml)

    @cached_property
    def build(self) -> BuildKB:  # PyTorch source-build variables
        from fwdoctor.kb import build

        return self._area("build.yaml", build.from_yaml)

    @cached_property
    def conda(self) -> CondaKB:  # conda-forge's own pytorch builds
        from fwdoctor.kb import conda

        # Optional: a --kb folder made before conda stacks has no conda.yaml, and then
        # knows no conda-forge build (every query answers None, "not confirmed").
        if not (self.directory / "conda.yaml").exists():
            return conda.CondaKB()
        return self._area("conda.yaml", conda.from_yaml)

    @cached_property
    def extensions(self) -> ExtensionsKB:  # CUDA extensions built against torch (`build ext`)
        from fwdoctor.kb import extensions

        # Optional like conda.yaml: a --kb folder without it knows no extension project.
        if not (self.directory / "extensions.yaml").exists():
            return extensions.ExtensionsKB()
        return self._area("extensions.yaml", extensions.from_yaml)

    @cached_property
    def nodetypes(self) -> NodeTypesKB:  # each GPU model's PCIe link and NVLinks (`gate`)
        from fwdoctor.kb import nodetypes

        # Optional like conda.yaml: a --kb folder without it knows no node type's normal.
        if not (self.directory / "nodetypes.yaml").exists():
            return nodetypes.NodeTypesKB()
        return self._area("nodetypes.yaml", nodetypes.from_yaml)

    @cached_property
    def errors(self) -> ErrorsKB:  # error-text signatures (`triage`, `build ext`'s summary)
        from fwdoctor.kb import errors

        # Optional like conda.yaml. triage itself reads the bundled file (fwdoctor.triage.errors).
        if not (self.directory / "errors.yaml").exists():
            return errors.ErrorsKB()
        return self._area("errors.yaml", errors.from_yaml)


# The areas `KB.load` validates up front.
AREAS: tuple[str, ...] = ("sources", "cuda", "gpus", "torch", "libs", "docker", "build", "frameworks", "conda", "extensions", "nodetypes", "errors")
