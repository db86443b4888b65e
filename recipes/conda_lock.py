"""The conda part of `fwdoctor lock`: conda-lock.yml in conda-lock's unified format.

lockfiles/<stack>/
    environment.yml        the stack's conda channels, platforms and match specs (conda-lock's input)
    virtual-packages.yml   the target's virtual packages (__glibc, __cuda, __linux, __unix,
                           __archspec) in conda-lock's --virtual-package-spec format
    conda-lock.yml         every conda package per platform with its URL, md5 and sha256
                           (conda-lock's lockfile version 1: metadata.content_hash per platform,
                           channels, platforms, sources; package entries with name, version,
                           manager, platform, dependencies, url, hash, category, optional)

Which solver makes it
    * a conda solver executable exists (micromamba, mamba or conda: $CONDA_LOCK_CONDA_EXE,
      $MAMBA_EXE, $CONDA_EXE, then PATH): conda-lock, imported as a library from fwdoctor's own
      environment (conda_lock.conda_lock.make_lock_files), solves with it, as
      `conda-lock lock -f environment.yml --virtual-package-spec virtual-packages.yml` would.
    * none exists (conda-lock's ensureconda would download one; offline it cannot): py-rattler
      solves (rattler.solve with the same channels, specs, platforms and virtual packages), and
      the records become conda-lock's own models (conda_lock.lockfile.v2prelim LockedDependency,
      dependencies merged with conda-lock's MatchSpec as its conda solver path does), written by
      conda-lock's writer (write_conda_lock_file), content_hash by conda-lock's
      compute_content_hashes. The file is the same format either way.
    Both say which solver made it: a header comment and metadata.custom_metadata.fwdoctor_solver.

`lock --check` re-reads every record: the header's body digest and stack digest, the
channels/platforms, environment.yml and virtual-packages.yml, conda-lock's content_hash, each
URL's file name against name-version-build; then it re-solves (whatever solver is here now)
and compares record by record; `--verify` also hashes every package file against the lock's
md5 and sha256, reading only what FetchPolicy allows (https; http from a loopback channel the
lock names; file: inside the lock's folder; a byte cap per file and one deadline) and never a
record already found inconsistent. Without --verify no package file is fetched, local or not.
A channel it cannot reach leaves those steps "not verified", never "fresh".
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import os
import stat
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.error import HTTPError
from urllib.parse import unquote, urlparse

import yaml

from fwdoctor.recipes import netcheck
from fwdoctor.recipes.stack import ResolvedStack

CONDA_LOCK_NAME = "conda-lock.yml"
ENV_NAME = "environment.yml"
VIRTUAL_NAME = "virtual-packages.yml"
DEFAULT_CHANNELS = ("conda-forge",)
DEFAULT_PLATFORMS = ("linux-64",)
SOLVE_TIMEOUT_S = 900.0
FETCH_TIMEOUT_S = 60.0
# `lock --verify` hashes every package file of the lock within this, all together (a CUDA
# pytorch environment is ~5 GB; a server dripping a byte at a time ends here, issue 24).
VERIFY_DEADLINE_S = 1800.0
LINUX_KERNEL = "5.10"  # conda-lock's default-virtual-packages.yaml value for __linux
BODY_DIGEST_PREFIX = "# body-sha256: "
STACK_DIGEST_PREFIX = "# stack-digest: sha256:"
SOLVER_PREFIX = "# solver: "
# Environment variables naming a conda solver, in the order they are asked (CONDA_EXE is what
# `conda activate` sets, MAMBA_EXE what micromamba's shell hook sets).
SOLVER_ENV = ("CONDA_LOCK_CONDA_EXE", "MAMBA_EXE", "CONDA_EXE")
SOLVER_NAMES = ("micromamba", "mamba", "conda")
_ARCHSPEC = {"linux-64": "x86_64", "linux-aarch64": "aarch64", "linux-ppc64le": "ppc64le"}

Progress = Callable[[str], None]


class CondaLockError(RuntimeError):
    """The conda part could not be locked; the message says why."""


@dataclass(frozen=True)
class Solver:
    kind: str  # "conda-lock" | "py-rattler"
    version: str  # conda-lock's or py-rattler's version
    exe: str = ""  # the conda/mamba/micromamba conda-lock drives

    def describe(self) -> str:
        if self.kind == "conda-lock":
            return f"conda-lock {self.version} with {self.exe}"
        return f"py-rattler {self.version} (no conda, mamba or micromamba executable found)"


@dataclass(frozen=True)
class CondaRecord:
    """One package of a conda-lock.yml (what `docker generate` installs)."""

    name: str
    version: str
    build: str
    platform: str
    url: str
    sha256: str
    md5: str
    depends: tuple[str, ...]  # "name spec" as conda-lock records them ("python >=3.11,<3.12.0a0")
    category: str = "main"
    optional: bool = False

    @property
    def filename(self) -> str:
        return unquote(urlparse(self.url).path.rsplit("/", 1)[-1])


# --------------------------------------------------------------------------- inputs
def spec_name(spec: str) -> str:
    """The package name of a conda match spec ("pytorch=2.5.1=cuda126*" -> "pytorch")."""
    name = spec.strip().split("::")[-1]
    for stop in " =<>!~[":
        name = name.split(stop, 1)[0]
    return name.strip().lower()


def channels(stack: ResolvedStack) -> tuple[str, ...]:
    return tuple(stack.conda_channels) or DEFAULT_CHANNELS


def platforms(stack: ResolvedStack) -> tuple[str, ...]:
    return tuple(stack.conda_platforms) or DEFAULT_PLATFORMS


def specs(stack: ResolvedStack) -> tuple[str, ...]:
    """The stack's conda specs, python first (added from the stack's python when absent)."""
    given = tuple(stack.conda)
    if not any(spec_name(s) == "python" for s in given):
        given = (f"python={stack.python}", *given)
    return tuple(sorted(given, key=lambda s: spec_name(s) != "python"))


def provides(stack: ResolvedStack, name: str) -> bool:
    """Whether the stack's conda packages include `name` (pip "torch" is conda "pytorch")."""
    wanted = {"torch": "pytorch"}.get(name.lower(), name.lower())
    return any(spec_name(s) == wanted for s in stack.conda)


def environment_yml(stack: ResolvedStack) -> str:
    data = {"name": stack.name, "channels": list(channels(stack)), "dependencies": list(specs(stack)), "platforms": list(platforms(stack))}
    return yaml.safe_dump(data, sort_keys=False)


def virtual_packages(stack: ResolvedStack, platform: str) -> dict[str, str]:
    """The target's virtual packages (name -> "version[ build]"), as conda-lock's
    default-virtual-packages.yaml lists them, with the stack's glibc and CUDA."""
    found: dict[str, str] = {"__unix": "0"}
    if platform.startswith("linux-"):
        found["__linux"] = LINUX_KERNEL
        found["__glibc"] = stack.glibc
        if platform in _ARCHSPEC:
            found["__archspec"] = f"1 {_ARCHSPEC[platform]}"
        if stack.cuda:
            found["__cuda"] = stack.cuda
    return found


def virtual_packages_yml(stack: ResolvedStack) -> str:
    data = {"subdirs": {p: {"packages": virtual_packages(stack, p)} for p in platforms(stack)}}
    return yaml.safe_dump(data, sort_keys=False)


# --------------------------------------------------------------------------- solvers
def find_solver_executable(environ: Mapping[str, str] | None = None) -> str | None:
    """A conda solver executable conda-lock can drive: $CONDA_LOCK_CONDA_EXE, $MAMBA_EXE,
    $CONDA_EXE, then micromamba, mamba, conda on PATH; None when there is none."""
    env = os.environ if environ is None else environ
    for var in SOLVER_ENV:
        value = env.get(var, "")
        if value and os.path.isfile(value) and os.access(value, os.X_OK):
            return value
    for name in SOLVER_NAMES:
        found = shutil.which(name, path=env.get("PATH"))
        if found:
            return found
    return None


def choose_solver(environ: Mapping[str, str] | None = None) -> Solver:
    exe = find_solver_executable(environ)
    if exe is not None:
        import conda_lock

        return Solver("conda-lock", conda_lock.__version__, exe)
    return Solver("py-rattler", _rattler_version())


def _rattler_version() -> str:
    from importlib.metadata import version

    return version("py-rattler")


def _lock_spec(env_file: Path, stack: ResolvedStack):
    from conda_lock.lookup import DEFAULT_MAPPING_URL
    from conda_lock.src_parser import make_lock_spec

    return make_lock_spec(src_files=[env_file], platform_overrides=list(platforms(stack)), mapping_url=DEFAULT_MAPPING_URL)


def _dependencies(depends: Iterable[str]) -> dict[str, str]:
    """conda-lock's `dependencies` map from a record's depends, merged as its conda solver path
    does (conda_lock.conda_solver.solve_conda: one entry per name, the version spec only)."""
    from conda_lock.interfaces.vendored_conda import MatchSpec

    by_name: dict[str, list[Any]] = {}
    for dep in depends:
        spec = MatchSpec(dep)
        by_name.setdefault(spec.name, []).append(spec)
    out: dict[str, str] = {}
    for name, group in by_name.items():
        merged = group[0] if len(group) == 1 else MatchSpec.merge(group)[0]
        out[name] = merged.version.spec_str if merged.version is not None else ""
    return out


def _rattler_virtuals(stack: ResolvedStack, platform: str) -> list:
    import rattler

    out = []
    for name, value in virtual_packages(stack, platform).items():
        version, _, build = value.partition(" ")
        out.append(rattler.GenericVirtualPackage(rattler.PackageName(name), rattler.Version(version), rattler.BuildString(build or "0")))
    return out


def solve_rattler(stack: ResolvedStack, progress: Progress | None = None, timeout: float = SOLVE_TIMEOUT_S) -> list:
    """conda-lock LockedDependency models (v2prelim) for every platform, solved by py-rattler."""
    import datetime

    import rattler
    from conda_lock.lockfile.v2prelim.models import HashModel, LockedDependency

    say = progress or (lambda _line: None)
    locked = []
    wanted = [rattler.MatchSpec(s, strict=False) for s in specs(stack)]
    for platform in platforms(stack):
        say(f"solving {len(wanted)} conda specs for {platform} with py-rattler from {', '.join(channels(stack))}")
        with tempfile.TemporaryDirectory(prefix="fwdoctor-rattler-") as cache:
            # A fresh cache: a re-solve sees the channel as it is now, not a cached index.
            gateway = rattler.Gateway(cache_dir=cache)
            try:
                records = asyncio.run(asyncio.wait_for(
                    rattler.solve(list(channels(stack)), wanted, gateway=gateway, platforms=[platform, "noarch"],
                                  virtual_packages=_rattler_virtuals(stack, platform), timeout=datetime.timedelta(seconds=timeout)),
                    timeout + 30))
            except Exception as exc:  # rattler raises its own exception classes per failure kind
                raise CondaLockError(f"py-rattler could not solve {platform} from {', '.join(channels(stack))}: {_first_line(exc)}") from None
        for record in records:
            if record.md5 is None:
                raise CondaLockError(f"{record.name.normalized}: the channel gives no md5 for {record.url}")
            locked.append(LockedDependency(
                name=record.name.normalized, version=str(record.version), manager="conda", platform=platform,
                dependencies=_dependencies(record.depends), url=str(record.url), build=str(record.build),
                hash=HashModel(md5=record.md5.hex(), sha256=record.sha256.hex() if record.sha256 is not None else None),
                categories={"main"}))
    return locked


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return " / ".join(lines[:3])


def lockfile_model(stack: ResolvedStack, workdir: Path, solver: Solver, progress: Progress | None = None):
    """conda-lock's Lockfile (v2prelim) for the stack. `workdir` holds environment.yml and
    virtual-packages.yml (the lock folder: metadata.sources names environment.yml relative to it)."""
    from conda_lock.content_hash import compute_content_hashes
    from conda_lock.lockfile.v2prelim.models import Lockfile, LockMeta
    from conda_lock.virtual_package import virtual_package_repo_from_specification

    env_file, vps_file = workdir / ENV_NAME, workdir / VIRTUAL_NAME
    lock_spec = _lock_spec(env_file, stack)
    if solver.kind == "conda-lock":
        return _solve_conda_lock(stack, workdir, solver, progress)
    packages = solve_rattler(stack, progress)
    repo = virtual_package_repo_from_specification(vps_file)
    with repo:
        hashes = compute_content_hashes(lock_spec, repo)
    return Lockfile(package=packages, metadata=LockMeta(
        content_hash=hashes, channels=list(lock_spec.channels), platforms=list(lock_spec.platforms), sources=[ENV_NAME],
        custom_metadata={"fwdoctor_solver": solver.describe(), "fwdoctor_stack_digest": stack.digest}))


def _solve_conda_lock(stack: ResolvedStack, workdir: Path, solver: Solver, progress: Progress | None):
    """conda-lock's own make_lock_files driving the solver executable (into a scratch lockfile)."""
    from conda_lock.conda_lock import make_lock_files
    from conda_lock.lockfile import parse_conda_lock_file
    from conda_lock.lookup import DEFAULT_MAPPING_URL

    say = progress or (lambda _line: None)
    say(f"solving {len(specs(stack))} conda specs for {', '.join(platforms(stack))} with {solver.describe()}")
    with tempfile.TemporaryDirectory(prefix="fwdoctor-conda-lock-") as tmp:
        scratch = Path(tmp) / CONDA_LOCK_NAME
        for name in (ENV_NAME, VIRTUAL_NAME):
            shutil.copy(workdir / name, Path(tmp) / name)
        try:
            # conda-lock prints its install hint on stdout, which carries `--json` output.
            with contextlib.redirect_stdout(sys.stderr):
                    make_lock_files(conda=solver.exe, src_files=[Path(tmp) / ENV_NAME], kinds=["lock"], lockfile_path=scratch,
                                platform_overrides=list(platforms(stack)), virtual_package_spec=Path(tmp) / VIRTUAL_NAME,
                                mapping_url=DEFAULT_MAPPING_URL)
        except (Exception, SystemExit) as exc:  # conda-lock raises plain RuntimeError/CalledProcessError/exit
            raise CondaLockError(f"conda-lock with {solver.exe} could not solve: {_first_line(exc)}") from None
        model = parse_conda_lock_file(scratch)
    model.metadata.custom_metadata = {**(model.metadata.custom_metadata or {}), "fwdoctor_solver": solver.describe(),
                                      "fwdoctor_stack_digest": stack.digest}
    model.metadata.sources = [ENV_NAME]
    return model


# --------------------------------------------------------------------------- rendering
def render(model, stack: ResolvedStack, stack_file: str, solver: Solver) -> str:
    """conda-lock.yml's text: our header (solver, stack digest, body digest), then what
    conda-lock's writer writes for `model`."""
    from conda_lock.lockfile import write_conda_lock_file
    from fwdoctor.quoting import lock_line

    with tempfile.TemporaryDirectory(prefix="fwdoctor-conda-lock-") as tmp:
        path = Path(tmp) / CONDA_LOCK_NAME
        write_conda_lock_file(model, path, metadata_choices=set(), include_help_text=True)
        body = path.read_text(encoding="utf-8")
    stack_file = lock_line(stack_file, "the stack file path")
    header = [
        f"# fwdoctor lock (conda part) for stack {stack.name} ({stack_file}); regenerate with `fwdoctor lock {stack_file}`.",
        f"{SOLVER_PREFIX}{solver.describe()}; written with conda-lock {_conda_lock_version()}'s lockfile models and writer",
        f"{STACK_DIGEST_PREFIX}{stack.digest}",
    ]
    text = "\n".join(header) + "\n" + body
    return "\n".join(header) + f"\n{BODY_DIGEST_PREFIX}{_digest(text)}\n" + body


def _conda_lock_version() -> str:
    import conda_lock

    return conda_lock.__version__


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def body_digest(text: str) -> tuple[str | None, str]:
    """(the digest the file states, the digest of the file without that line)."""
    lines = text.splitlines(keepends=True)
    stated = [l for l in lines if l.startswith(BODY_DIGEST_PREFIX)]
    rest = "".join(l for l in lines if not l.startswith(BODY_DIGEST_PREFIX))
    return (stated[0][len(BODY_DIGEST_PREFIX):].strip() if len(stated) == 1 else None), _digest(rest)


def _write(path: Path, text: str) -> str:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return str(path)


def unreachable_channels(names: Iterable[str], timeout: float = netcheck.PROBE_TIMEOUT_S) -> list[tuple[str, str]]:
    """(channel, why) for each http(s) channel whose noarch/repodata.json does not answer now
    (DNS, refused, TLS, HTTP status: fwdoctor.recipes.netcheck); local channels are the
    solver's to read."""
    failed: list[tuple[str, str]] = []
    for name in names:
        base = name if "://" in name else f"https://conda.anaconda.org/{name}"
        if not base.startswith(("http://", "https://")):
            continue
        why = netcheck.probe_url(f"{base.rstrip('/')}/noarch/repodata.json", timeout, missing_ok=False)
        if why:
            failed.append((name, why))
    return failed


def lock(stack: ResolvedStack, stack_file: str, out_dir: str | Path, progress: Progress | None = None,
         solver: Solver | None = None) -> tuple[list[str], Solver]:
    """Write environment.yml, virtual-packages.yml and conda-lock.yml into out_dir; (written, solver).
    Each channel is asked first, within seconds: one that does not answer is named with the
    reason before any solver starts."""
    if progress is not None:
        progress(f"conda channels: {', '.join(channels(stack))} (each asked within {netcheck.PROBE_TIMEOUT_S:g} s)")
    down = unreachable_channels(channels(stack))
    if down:
        raise CondaLockError("; ".join(f"channel {name} did not answer: {why}" for name, why in down) + " (nothing was solved)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    solver = solver or choose_solver()
    written = [_write(out / ENV_NAME, environment_yml(stack)), _write(out / VIRTUAL_NAME, virtual_packages_yml(stack))]
    model = lockfile_model(stack, out, solver, progress)
    written.append(_write(out / CONDA_LOCK_NAME, render(model, stack, stack_file, solver)))
    return written, solver


# --------------------------------------------------------------------------- reading
def _records_of(data: Mapping[str, Any]) -> list[CondaRecord]:
    out = []
    for item in data.get("package") or []:
        if not isinstance(item, Mapping) or item.get("manager") != "conda":
            continue
        digest = item.get("hash") or {}
        url = str(item.get("url", ""))
        build = str(item.get("build") or "")
        if not build:
            # conda-lock versions before `build` was recorded: the file name carries it.
            stem = url.rsplit("/", 1)[-1].removesuffix(".conda").removesuffix(".tar.bz2")
            build = stem.rsplit("-", 1)[-1] if stem.count("-") >= 2 else ""
        deps = item.get("dependencies") or {}
        out.append(CondaRecord(str(item.get("name", "")), str(item.get("version", "")), build, str(item.get("platform", "")), url,
                               str(digest.get("sha256") or ""), str(digest.get("md5") or ""),
                               tuple(f"{k} {v}".strip() for k, v in sorted(deps.items())),
                               str(item.get("category", "main")), bool(item.get("optional", False))))
    return out


def read_conda_lock(path: str | Path) -> list[CondaRecord]:
    """The conda packages of a conda-lock.yml (version 1), in file order. ValueError when the
    file is not one (conda-lock's own model validates it)."""
    from conda_lock.lockfile.v1.models import Lockfile as LockfileV1

    text = Path(path).read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    if not isinstance(data, Mapping) or data.get("version") != 1:
        raise ValueError(f"{path}: not a conda-lock lockfile version 1")
    try:
        LockfileV1.model_validate({k: v for k, v in data.items() if k != "version"})
    except Exception as exc:  # pydantic.ValidationError
        raise ValueError(f"{path}: not a valid conda-lock lockfile: {_first_line(exc)}") from None
    return _records_of(data)


def stated_solver(text: str) -> str | None:
    line = next((l for l in text.splitlines() if l.startswith(SOLVER_PREFIX)), None)
    return line[len(SOLVER_PREFIX):].split(";", 1)[0].strip() if line else None


# --------------------------------------------------------------------------- checking
def _key(record: CondaRecord) -> tuple[str, str]:
    return (record.platform, record.name)


def _fields(record: CondaRecord) -> dict[str, Any]:
    return {"version": record.version, "build": record.build, "url": record.url, "md5": record.md5,
            "sha256": record.sha256, "dependencies": record.depends}


def compare_records(locked: Sequence[CondaRecord], solved: Sequence[CondaRecord]) -> list[str]:
    """Differences between the lock's records and a fresh solve, first by platform and name."""
    have = {_key(r): r for r in locked}
    want = {_key(r): r for r in solved}
    problems = []
    for key in sorted(set(have) | set(want)):
        platform, name = key
        if key not in have:
            problems.append(f"{platform}/{name}: the solve has {name} {want[key].version} {want[key].build}, the lock does not")
        elif key not in want:
            problems.append(f"{platform}/{name}: the lock has {name} {have[key].version} {have[key].build}, the solve does not")
        else:
            old, new = _fields(have[key]), _fields(want[key])
            for field_name in old:
                if old[field_name] != new[field_name]:
                    problems.append(f"{platform}/{name}: {field_name} is {old[field_name]!r} in the lock, {new[field_name]!r} in the solve")
                    break
    return problems


def is_local_url(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme == "file" or (parsed.scheme in ("http", "https") and is_loopback_host(parsed.hostname))


def is_loopback_host(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _origin(url: str) -> tuple[str, str, int | None] | None:
    parsed = urlparse(url)
    try:
        return (parsed.scheme, (parsed.hostname or "").lower(), parsed.port)
    except ValueError:  # a port that is not a number
        return None


@dataclass(frozen=True)
class FetchPolicy:
    """What `lock --verify` may read for a lock (issue 24): https anywhere; http only from a
    loopback channel the lock itself names in metadata.channels (a lock made against a local
    test channel says so); file: only inside the lock's folder, regular files only (never a
    device: file:///dev/zero never ends); each file at most `max_bytes`, all of them within
    `deadline_s`."""

    base: Path | None = None  # the lock's folder
    loopback: frozenset[tuple[str, str, int | None]] = frozenset()  # http origins the lock names
    deadline_s: float = 1800.0
    max_bytes: int = 8 << 30  # conda's largest packages (pytorch's CUDA builds) are ~2 GB
    timeout: float = 60.0  # one socket operation

    @classmethod
    def for_lock(cls, lock_dir: Path, channel_urls: Iterable[str], **kwargs: Any) -> "FetchPolicy":
        loopback = frozenset(o for o in (_origin(u) for u in channel_urls if "://" in u)
                             if o is not None and o[0] == "http" and is_loopback_host(o[1]))
        return cls(base=lock_dir, loopback=loopback, **kwargs)

    def refusal(self, url: str) -> str | None:
        """Why `url` is not read under this policy; None when it may be."""
        parsed = urlparse(url)
        if parsed.scheme == "https":
            return None
        if parsed.scheme == "http":
            if is_loopback_host(parsed.hostname) and _origin(url) in self.loopback:
                return None
            return "plain http is read only from a loopback channel the lock names (https otherwise)"
        if parsed.scheme == "file":
            if self.base is None or parsed.netloc not in ("", "localhost"):
                return "a file: URL is read only inside the lock's folder"
            root = os.path.realpath(self.base)
            if not os.path.realpath(unquote(parsed.path)).startswith(root + os.sep):
                return f"a file: URL outside the lock's folder {self.base} is never read"
            return None
        return f"a {parsed.scheme or 'scheme-less'} URL is never fetched"


DEFAULT_POLICY = FetchPolicy()


class FetchDeadline(OSError):
    """The overall deadline passed while a file was being read."""


def file_hashes(url: str, timeout: float = FETCH_TIMEOUT_S, policy: FetchPolicy | None = None,
                deadline: float | None = None) -> tuple[str, str]:
    """(md5, sha256) of the file at url, read as `policy` allows (a file: URL a regular file
    inside its base, http(s) through urlopen), at most policy.max_bytes, before `deadline`
    (time.monotonic()). OSError/ValueError when unreadable or refused; FetchDeadline when
    the deadline passes."""
    from urllib.request import urlopen

    policy = policy or FetchPolicy(timeout=timeout)
    why = policy.refusal(url)
    if why is not None:
        raise ValueError(why)
    deadline = deadline if deadline is not None else time.monotonic() + policy.deadline_s
    parsed = urlparse(url)
    md5, sha = hashlib.md5(), hashlib.sha256()
    if parsed.scheme == "file":
        # O_NONBLOCK: a FIFO put in its place would block the open itself.
        fd = os.open(os.path.realpath(unquote(parsed.path)), os.O_RDONLY | os.O_NONBLOCK)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ValueError("not a regular file (a device or FIFO is never read)")
        handle: Any = os.fdopen(fd, "rb")
        read = handle.read
    else:
        left = deadline - time.monotonic()
        if left <= 0:
            raise FetchDeadline("the deadline passed before it was asked for")
        # Each socket operation waits at most what is left; read1 returns what has arrived,
        # so a server dripping a byte at a time still meets the deadline below.
        handle = urlopen(url, timeout=max(0.5, min(policy.timeout, left)))  # noqa: S310 (scheme checked)
        read = getattr(handle, "read1", handle.read)
    total = 0
    with handle:
        while True:
            if time.monotonic() > deadline:
                raise FetchDeadline(f"not read within the {policy.deadline_s:g} s deadline ({total:,} bytes came)")
            block = read(1 << 20)
            if not block:
                break
            total += len(block)
            if total > policy.max_bytes:
                raise ValueError(f"larger than {policy.max_bytes >> 20} MiB (the limit for one package file)")
            md5.update(block)
            sha.update(block)
    return md5.hexdigest(), sha.hexdigest()


def verify_files(records: Sequence[CondaRecord], everything: bool = False,
                 policy: FetchPolicy | None = None) -> tuple[list[str], list[str]]:
    """(problems, not verified): each package file's md5/sha256 against the lock, read as
    `policy` allows, all within its deadline. Only local channels' files unless `everything`
    (those of conda-forge are gigabytes)."""
    policy = policy or DEFAULT_POLICY
    deadline = time.monotonic() + policy.deadline_s
    problems, unverified = [], []
    for index, record in enumerate(records):
        if not everything and not is_local_url(record.url):
            continue
        why = policy.refusal(record.url)
        if why is not None:
            problems.append(f"{record.platform}/{record.name}: {record.url} not fetched: {why}")
            continue
        try:
            md5, sha = file_hashes(record.url, policy=policy, deadline=deadline)
        except FetchDeadline as exc:
            left = len(records) - index - 1
            unverified.append(f"{record.platform}/{record.name}: {record.url}: {exc}"
                              + (f"; {left} more record(s) not hashed" if left else ""))
            break
        except (FileNotFoundError, HTTPError) as exc:
            # The channel answers, and has no such file: the lock names a file that is not there.
            problems.append(f"{record.platform}/{record.name}: {record.url} is not on the channel ({getattr(exc, 'code', None) or exc.strerror or exc})")
            continue
        except (OSError, ValueError) as exc:
            unverified.append(f"{record.platform}/{record.name}: {record.url}: {getattr(exc, 'reason', None) or getattr(exc, 'strerror', None) or exc}")
            continue
        if record.sha256 and sha != record.sha256:
            problems.append(f"{record.platform}/{record.name}: {record.filename} has sha256 {sha}, the lock states {record.sha256}")
        elif md5 != record.md5:
            problems.append(f"{record.platform}/{record.name}: {record.filename} has md5 {md5}, the lock states {record.md5}")
    return problems, unverified


def _unreachable(channel_urls: Iterable[str]) -> str | None:
    """Why a channel cannot be read now (None when every one answers): its repodata fetched."""
    from urllib.request import urlopen

    for channel in channel_urls:
        base = channel if "://" in channel else f"https://conda.anaconda.org/{channel}"
        url = f"{base.rstrip('/')}/noarch/repodata.json"
        try:
            if url.startswith("file://"):
                if not os.path.isfile(unquote(urlparse(url).path)):
                    return f"{channel}: no {unquote(urlparse(url).path)}"
            else:
                with urlopen(url, timeout=FETCH_TIMEOUT_S) as answer:  # noqa: S310 (our own URL forms)
                    answer.read(1)
        except (OSError, ValueError) as exc:
            return f"{channel}: {netcheck.reason(exc) if isinstance(exc, OSError) else exc}"
    return None


def check(stack: ResolvedStack, lock_dir: str | Path, resolve: bool = True, verify_all: bool = False,
          solver: Solver | None = None, progress: Progress | None = None) -> tuple[list[str], list[str]]:
    """(problems, not verified) for lockfiles/<stack>/conda-lock.yml; ([], []) when fresh."""
    lock_dir = Path(lock_dir)
    path = lock_dir / CONDA_LOCK_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return [f"{path}: {exc.strerror or exc} (run `fwdoctor lock`)"], []
    problems: list[str] = []
    stated, actual = body_digest(text)
    if stated is None:
        problems.append(f"{path}: no single {BODY_DIGEST_PREFIX.strip('# :')} line (not written by fwdoctor lock, or edited)")
    elif stated != actual:
        problems.append(f"{path}: edited after fwdoctor lock wrote it (its body sha256 is {actual}, the lock states {stated})")
    digest_line = next((l for l in text.splitlines() if l.startswith(STACK_DIGEST_PREFIX)), None)
    if digest_line is None or digest_line[len(STACK_DIGEST_PREFIX):].strip() != stack.digest:
        problems.append(f"{path}: made from another version of stack {stack.name} (its stack digest differs)")
    if stated_solver(text) is None:
        problems.append(f"{path}: no '{SOLVER_PREFIX.strip()}' line saying which solver made it")
    for name, expected in ((ENV_NAME, environment_yml(stack)), (VIRTUAL_NAME, virtual_packages_yml(stack))):
        try:
            if (lock_dir / name).read_text(encoding="utf-8") != expected:
                problems.append(f"{lock_dir / name}: differs from what fwdoctor lock writes for stack {stack.name}")
        except OSError as exc:
            problems.append(f"{lock_dir / name}: {exc.strerror or exc}")
    try:
        records = read_conda_lock(path)
        data = yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        return problems + [str(exc)], []
    meta = data.get("metadata") or {}
    lock_channels = [str(c.get("url") if isinstance(c, Mapping) else c) for c in meta.get("channels") or []]
    if lock_channels != list(channels(stack)):
        problems.append(f"{path}: metadata.channels is {lock_channels}, the stack's conda channels are {list(channels(stack))}")
    if list(meta.get("platforms") or []) != list(platforms(stack)):
        problems.append(f"{path}: metadata.platforms is {meta.get('platforms')}, the stack's are {list(platforms(stack))}")
    if not problems:
        problems += _content_hash_problems(stack, lock_dir, path, meta)
    inconsistent: set[tuple[str, str]] = set()  # records never hashed (issue 24): already wrong
    for record in records:
        stem = f"{record.name}-{record.version}-{record.build}"
        before = len(problems)
        if record.filename not in (f"{stem}.conda", f"{stem}.tar.bz2"):
            problems.append(f"{path}: {record.platform}/{record.name}: url {record.url} is not the file of {stem}")
        elif record.platform not in platforms(stack):
            problems.append(f"{path}: {record.platform}/{record.name}: platform {record.platform} is not one of the stack's")
        elif not record.md5 or not record.sha256:
            problems.append(f"{path}: {record.platform}/{record.name}: no {'md5' if not record.md5 else 'sha256'} hash")
        if len(problems) > before:
            inconsistent.add(_key(record))
    unverified: list[str] = []
    if resolve:
        why = _unreachable(channels(stack))
        if why is not None:
            unverified.append(f"{path}: not re-solved and no package file hashed: a channel cannot be read ({why})")
            return problems, unverified
        else:
            solver = solver or choose_solver()
            try:
                with tempfile.TemporaryDirectory(prefix="fwdoctor-conda-check-") as tmp:
                    (Path(tmp) / ENV_NAME).write_text(environment_yml(stack), encoding="utf-8")
                    (Path(tmp) / VIRTUAL_NAME).write_text(virtual_packages_yml(stack), encoding="utf-8")
                    model = lockfile_model(stack, Path(tmp), solver, progress)
                solved = _records_of(model.to_v1().dict_for_output())
            except CondaLockError as exc:
                problems.append(f"{path}: re-solving failed: {exc}")
            else:
                problems += [f"{path}: {p} (re-solved with {solver.describe()})" for p in compare_records(records, solved)[:1]]
                inconsistent |= _differing(records, solved)
        if verify_all:
            # Only with --verify, and only records nothing is wrong with yet: a URL the lock
            # was edited to (file:///dev/zero, any local file, a stalling server) is a
            # problem above and never read. The channels the lock names say which loopback
            # http origins it was made against.
            policy = FetchPolicy.for_lock(lock_dir, lock_channels, deadline_s=VERIFY_DEADLINE_S)
            bad, missing = verify_files([r for r in records if _key(r) not in inconsistent], everything=True, policy=policy)
            problems += [f"{path}: {p}" for p in bad[:1]]
            unverified += [f"{path}: {m}" for m in missing]
    return problems, unverified


def _differing(locked: Sequence[CondaRecord], solved: Sequence[CondaRecord]) -> set[tuple[str, str]]:
    """The keys of records a fresh solve does not give exactly as locked."""
    want = {_key(r): _fields(r) for r in solved}
    return {_key(r) for r in locked if want.get(_key(r)) != _fields(r)}


def _content_hash_problems(stack: ResolvedStack, lock_dir: Path, path: Path, meta: Mapping[str, Any]) -> list[str]:
    """conda-lock's own freshness test: metadata.content_hash per platform against the hash
    of environment.yml + virtual-packages.yml now."""
    from conda_lock.content_hash import compute_content_hashes
    from conda_lock.virtual_package import virtual_package_repo_from_specification

    repo = virtual_package_repo_from_specification(lock_dir / VIRTUAL_NAME)
    with repo:
        expected = compute_content_hashes(_lock_spec(lock_dir / ENV_NAME, stack), repo)
    stated = meta.get("content_hash") or {}
    for platform in platforms(stack):
        if stated.get(platform) != expected.get(platform):
            return [f"{path}: metadata.content_hash[{platform}] is {stated.get(platform)!r}; conda-lock computes {expected.get(platform)!r} for the stack"]
    return []
