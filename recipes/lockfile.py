"""`fwdoctor lock`: a fully pinned, hash-checked pip lock for a resolved stack.

lockfiles/<stack>/
    requirements.lock    the indexes it was resolved against (--index-url / --extra-index-url /
                         --find-links lines), then name==version + --hash=sha256 for every
                         distribution: `pip install --require-hashes -r requirements.lock`
                         needs no other flag
    pylock.toml          the same resolution as a PEP 751 lock (each wheel's name, URL, sha256)
    stack.resolved.yaml  the resolved stack the lock was made from (its digest is in the lock)
    environment.yml      for stacks with conda packages: conda-lock's input (channels, specs)
    virtual-packages.yml the target's __glibc/__cuda/... (conda-lock's --virtual-package-spec)
    conda-lock.yml       the conda packages in conda-lock's unified format, every one with
                         its URL, md5 and sha256 per platform (fwdoctor.recipes.conda_lock:
                         conda-lock as a library with conda/mamba/micromamba where one exists,
                         py-rattler's solver where none does; the header says which)
A stack whose conda packages include pytorch gets torch from conda: the pip part locks only
the other requirements (none: a requirements.lock without pins).

Resolution runs pip (`install --dry-run --report`) for the stack's interpreter and platform,
not this machine's: --python-version/--platform/--abi select wheels, and a wrapper makes pip
evaluate environment markers (python_version < "3.11") for the target Python too, which pip
alone does not. pip runs `--isolated`, so no user pip.conf, PIP_* variable or find-links of
this machine leaks into the lock. The output is sorted and carries no date: the same stack
and index give the same bytes.

pip must be >= 23.3: older pip refuses --platform/--python-version without --target even
for a dry run ("Can not use any platform or abi specific options unless installing via
'--target'"; pip 23.2.1's cmdoptions.check_dist_restriction has no dry-run exemption), so
`check_pip` asks first and says how to upgrade.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import time
import http.client
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import unquote, urlparse, urlunparse

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from fwdoctor import runner
from fwdoctor.quoting import QuotingError, lock_line
from fwdoctor.recipes import conda_lock, netcheck
from fwdoctor.recipes.stack import ResolvedStack
from fwdoctor.recipes.scripts import read as read_script

LOCK_NAME = "requirements.lock"
PYLOCK_NAME = "pylock.toml"
RESOLVED_NAME = "stack.resolved.yaml"
ENV_NAME = conda_lock.ENV_NAME
CONDA_LOCK_NAME = conda_lock.CONDA_LOCK_NAME
PIP_TIMEOUT_S = 900.0
OLDEST_MANYLINUX = 5  # manylinux_2_5 == manylinux1
PIP_MIN = "23.3"  # dry-run resolution for another platform (see the module docstring)
PIP_VERSION_TIMEOUT_S = 60.0

Progress = Callable[[str], None]

# Run pip with the target interpreter's marker environment (see the module docstring).
_PIP_WRAPPER = read_script("pip_with_markers.py")


class LockError(RuntimeError):
    """Locking failed; the message says why (pip's last error line included)."""


@dataclass(frozen=True)
class Pin:
    name: str  # canonical name
    version: str
    sha256: str
    filename: str
    url: str = ""  # where pip found the file (no fragment); file:// for local files


@dataclass(frozen=True)
class Sources:
    """Where a lock's files come from: the option lines at the top of requirements.lock."""

    index_url: str
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()

    @classmethod
    def of(cls, index_url: str, extra_index_urls: Iterable[str] = (), find_links: Iterable[str] = ()) -> "Sources":
        # A repeated URL is one source (tests pass the local index as both).
        extras = tuple(u for u in dict.fromkeys(extra_index_urls) if u != index_url)
        return cls(index_url, extras, tuple(dict.fromkeys(find_links)))

    def lines(self) -> list[str]:
        return ([f"--index-url {lock_line(self.index_url, '--index-url')}"] + [f"--extra-index-url {lock_line(u, '--extra-index-url')}" for u in self.extra_index_urls]
                + [f"--find-links {lock_line(link, '--find-links')}" for link in self.find_links])

    @classmethod
    def read(cls, text: str) -> "Sources | None":
        """The option lines of a requirements.lock; None when it names no index."""
        index, extras, links = None, [], []
        for line in text.splitlines():
            key, _, value = line.strip().partition(" ")
            if key == "--index-url":
                index = value.strip()
            elif key == "--extra-index-url":
                extras.append(value.strip())
            elif key == "--find-links":
                links.append(value.strip())
        return None if index is None else cls(index, tuple(extras), tuple(links))


@dataclass(frozen=True)
class LockResult:
    directory: Path
    pins: tuple[Pin, ...]
    lock_sha256: str
    conda_error: str = ""  # non-empty: the conda part could not be locked, and why
    written: tuple[str, ...] = field(default_factory=tuple)
    sources: Sources | None = None  # what the lock names
    pip: str = ""  # the pip version that resolved it
    conda_solver: str = ""  # what solved the conda part ("py-rattler 0.28.0 ...", "conda-lock 4.0.3 with ...")


def pip_requirements(stack: ResolvedStack) -> tuple[str, ...]:
    """The requirements pip locks: the stack's, less torch when its conda packages bring pytorch."""
    return tuple(r for r in stack.requirements
                 if not (canonicalize_name(Requirement(r).name) == "torch" and conda_lock.provides(stack, "torch")))


# --------------------------------------------------------------------------- pip version
def pip_version(python: str = sys.executable) -> str | None:
    """`python -m pip --version`'s version, or None when that interpreter has no pip."""
    result = runner.run([python, "-m", "pip", "--version"], timeout=PIP_VERSION_TIMEOUT_S,
                        env={k: v for k, v in os.environ.items() if not k.startswith("PIP_")})
    found = re.match(r"pip (\S+) from ", result.stdout or "") if result.ok else None
    return found.group(1) if found else None


def check_pip(python: str = sys.executable, version: str | None = None) -> str:
    """The pip version `lock` will use; LockError naming the interpreter and the fix when it
    is missing or older than PIP_MIN. `version` skips asking (tests, a known pip)."""
    have = version if version is not None else pip_version(python)
    upgrade = f"`{python} -m pip install --upgrade 'pip>={PIP_MIN}'` (installed with pipx: `pipx runpip fwdoctor install --upgrade 'pip>={PIP_MIN}'`)"
    if have is None:
        raise LockError(f"fwdoctor lock resolves with pip, and {python} has no pip module: run `{python} -m ensurepip --upgrade`, then {upgrade}")
    try:
        too_old = Version(have) < Version(PIP_MIN)
    except InvalidVersion:
        raise LockError(f"{python} has pip {have!r}, not a version fwdoctor can compare; it needs pip >= {PIP_MIN}: {upgrade}") from None
    if too_old:
        raise LockError(
            f"fwdoctor lock needs pip >= {PIP_MIN} (a dry run for another platform, --platform/--python-version "
            f"without --target); {python} has pip {have}: run {upgrade}"
        )
    return have


# --------------------------------------------------------------------------- pip invocation
def platform_tags(glibc: str, machine: str = "x86_64") -> list[str]:
    """Every manylinux tag a system with this glibc loads, newest first (PEP 600 + aliases)."""
    top = Version(glibc).release[1]
    tags = [f"manylinux_2_{minor}_{machine}" for minor in range(top, OLDEST_MANYLINUX - 1, -1)]
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    tags += [f"{alias}_{machine}" for minor, alias in legacy.items() if minor <= top]
    return tags


def target_markers(python: str, machine: str = "x86_64") -> dict[str, str]:
    """PEP 508 marker values of the image's interpreter (CPython on Linux)."""
    return {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "implementation_version": f"{python}.0",
        "os_name": "posix",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": machine,
    }


def resolution_sources(
    stack: ResolvedStack,
    index_url: str | None = None,
    extra_index_urls: Sequence[str] | None = None,
    find_links: Sequence[str] = (),
) -> Sources:
    """What pip resolves against: the stack's indexes unless replaced."""
    return Sources.of(index_url or stack.index_url, stack.extra_index_urls if extra_index_urls is None else extra_index_urls, find_links)


def pip_argv(
    stack: ResolvedStack,
    requirements_file: str,
    report_file: str,
    index_url: str | None = None,
    extra_index_urls: Sequence[str] | None = None,
    find_links: Sequence[str] = (),
    cert: str | None = None,
    python: str = sys.executable,
) -> list[str]:
    abi = "cp" + stack.python.replace(".", "")
    sources = resolution_sources(stack, index_url, extra_index_urls, find_links)
    # Not --quiet: pip's "Collecting NAME" lines are the progress shown while resolving.
    argv = [python, "-c", _PIP_WRAPPER, "--isolated", "install", "--dry-run", "--ignore-installed", "--progress-bar", "off",
            "--report", report_file, "--only-binary=:all:", "--python-version", stack.python,
            "--implementation", "cp", "--abi", abi, "--abi", "abi3", "--abi", "none",
            # Read each wheel's METADATA by HTTP range requests instead of downloading
            # gigabytes of CUDA libraries (pypi.org serves no PEP 658 metadata for them).
            "--use-feature=fast-deps",
            # Explicit, so no silent retries past the deadline the progress line states.
            "--timeout", str(netcheck.PIP_SOCKET_TIMEOUT_S), "--retries", str(netcheck.PIP_RETRIES)]
    for tag in platform_tags(stack.glibc):
        argv += ["--platform", tag]
    argv += ["--index-url", sources.index_url]
    for url in sources.extra_index_urls:
        argv += ["--extra-index-url", url]
    for link in sources.find_links:
        argv += ["--find-links", link]
    if cert:
        argv += ["--cert", cert]
    argv += ["-r", requirements_file]
    return argv


def resolve_pins(
    stack: ResolvedStack,
    index_url: str | None = None,
    extra_index_urls: Sequence[str] | None = None,
    find_links: Sequence[str] = (),
    cert: str | None = None,
    timeout: float = PIP_TIMEOUT_S,
    progress: Progress | None = None,
) -> list[Pin]:
    """Ask pip what it would install for the stack, with the sha256 of every file.
    `progress` gets a line per requirement pip collects (the CLI prints them on stderr)."""
    say = progress or (lambda _line: None)
    sources = resolution_sources(stack, index_url, extra_index_urls, find_links)
    ignored = netcheck.pip_config_in_effect()
    if ignored:
        say(f"ignored (a lock names everything it is resolved from): {', '.join(ignored)}; "
            "pass indexes with --index-url/--extra-index-url/--find-links and a CA bundle with --cert")
    names = [Requirement(r).name for r in pip_requirements(stack)]
    project = canonicalize_name(names[0]) if names else "pip"
    places = [sources.index_url, *sources.extra_index_urls, *sources.find_links]
    say(f"probing {len(places)} source{'s' if len(places) > 1 else ''} before pip runs (each within {netcheck.PROBE_TIMEOUT_S:g} s)")
    unreachable = netcheck.probe_sources([sources.index_url, *sources.extra_index_urls], sources.find_links, project, cert=cert)
    if unreachable:
        raise LockError("; ".join(f"{where} did not answer: {why}" for where, why in unreachable)
                        + " (pip was not run; a lock resolved without it would differ)")
    say(f"pip: --timeout {netcheck.PIP_SOCKET_TIMEOUT_S} s a request, --retries {netcheck.PIP_RETRIES}, stopped after {timeout:g} s in all")
    with tempfile.TemporaryDirectory(prefix="fwdoctor-lock-") as tmp:
        req = os.path.join(tmp, "requirements.in")
        report = os.path.join(tmp, "report.json")
        Path(req).write_text("".join(f"{r}\n" for r in pip_requirements(stack)), encoding="utf-8")
        argv = pip_argv(stack, req, report, index_url, extra_index_urls, find_links, cert)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env["FWDOCTOR_TARGET_MARKERS"] = json.dumps(target_markers(stack.python))
        env["PIP_CONFIG_FILE"] = os.devnull

        def on_line(line: str) -> None:
            if line.startswith("Collecting "):
                say(f"resolving: {line[len('Collecting '):].split(' (from ')[0].strip()}")

        started = time.monotonic()
        result = runner.stream(argv, timeout=timeout, env=env, cwd=tmp, on_stderr_line=on_line, merge_stderr=True)
        if not result.ok:
            raise LockError(f"pip could not resolve stack {stack.name}: {_pip_reason(result, timeout)}")
        try:
            with open(report, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, json.JSONDecodeError) as exc:
            raise LockError(f"pip wrote no readable report: {exc}") from None
        say(f"pip resolved {len(data.get('install') or [])} distributions in {time.monotonic() - started:.0f}s")
    return pins_from_report(data, progress)


def _pip_reason(result: runner.StreamResult, timeout: float = PIP_TIMEOUT_S) -> str:
    if result.error or result.timed_out:
        if result.timed_out:
            return f"pip did not finish within {timeout:g} s (killed)"
        return result.error.replace(_PIP_WRAPPER, "<pip>")
    lines = [l.strip() for l in result.stderr_tail.splitlines() if l.strip() and not l.startswith("WARNING: pip is using lazily")]
    errors = [l for l in lines if l.startswith("ERROR")]
    return " / ".join(errors[-2:] or lines[-2:] or [f"exit status {result.returncode}"])


def pins_from_report(report: Mapping[str, Any], progress: Progress | None = None) -> list[Pin]:
    """The pins in a `pip install --report` (format version 1), sorted by name.

    A file without a sha256 from the index is hashed here only when it is a local file;
    anything else is an error: a lock without a hash is no lock."""
    if not isinstance(report, Mapping) or str(report.get("version")) != "1" or not isinstance(report.get("install"), list):
        raise LockError("unexpected pip report (expected format version 1 with an 'install' list)")
    pins: list[Pin] = []
    for item in report["install"]:
        meta = item.get("metadata") or {}
        info = item.get("download_info") or {}
        name, version, url = meta.get("name"), meta.get("version"), info.get("url", "")
        if not name or not version or not url:
            raise LockError(f"pip report entry without name/version/url: {str(item)[:200]}")
        hashes = (info.get("archive_info") or {}).get("hashes") or {}
        digest = hashes.get("sha256")
        parsed = urlparse(url)
        if not digest and parsed.scheme == "file":
            if progress is not None:
                progress(f"hashing {unquote(parsed.path)}")
            digest = _sha256_file(unquote(parsed.path))
        if not digest:
            raise LockError(f"{name} {version}: the index gave no sha256 for {url} (use an index that publishes hashes, such as pypi.org)")
        if info.get("dir_info") is not None or info.get("vcs_info") is not None:
            raise LockError(f"{name}: a directory or VCS requirement cannot be locked by hash")
        plain = urlunparse(parsed._replace(fragment=""))
        pins.append(Pin(canonicalize_name(name), version, digest, unquote(parsed.path.rsplit("/", 1)[-1]), plain))
    return sorted(pins, key=lambda p: p.name)


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------- rendering
def stack_sources(stack: ResolvedStack) -> Sources:
    return Sources.of(stack.index_url, stack.extra_index_urls)


def render_lock(stack: ResolvedStack, pins: Iterable[Pin], stack_file: str, sources: Sources | None = None) -> str:
    """requirements.lock. `sources` (default: the stack's indexes) become its option lines,
    so that pip needs nothing but the file: pip reads --index-url, --extra-index-url,
    --find-links, --only-binary and --require-hashes from a requirements file."""
    sources = sources or stack_sources(stack)
    stack_file = lock_line(stack_file, "the stack file path")
    lines = [
        f"# fwdoctor lock for stack {stack.name} ({stack_file}); regenerate with `fwdoctor lock {stack_file}`.",
        f"# torch {stack.torch_local}{' from conda (' + CONDA_LOCK_NAME + ')' if conda_lock.provides(stack, 'torch') else ''}, "
        f"CPython {stack.python}, Linux x86_64 (manylinux, glibc <= {stack.glibc}).",
        "# Install (the lines below name the indexes it was resolved against; no other flag needed):",
        "#   pip install --require-hashes -r requirements.lock",
        f"# stack-digest: sha256:{stack.digest}",
        *sources.lines(),
        "--only-binary=:all:",
        "--require-hashes",
    ]
    for pin in sorted(pins, key=lambda p: (p.name, p.version)):
        lines.append(f"{lock_line(pin.name, 'a pinned name')}=={lock_line(pin.version, 'a pinned version')} \\")
        lines.append(f"    --hash=sha256:{lock_line(pin.sha256, 'a sha256')}")
    body = "\n".join(lines) + "\n"
    # The lock's digest of its own body (every line but this one): a hand edit (a changed
    # hash, a removed pin, an added index) is caught by `lock --check` without re-resolving.
    at = lines.index(f"# stack-digest: sha256:{stack.digest}") + 1
    lines.insert(at, f"{BODY_DIGEST_PREFIX}{lock_digest(body)}")
    return "\n".join(lines) + "\n"


BODY_DIGEST_PREFIX = "# body-sha256: "


def body_digest(text: str) -> tuple[str | None, str]:
    """(the digest the lock states, the digest of its body without that line)."""
    lines = text.splitlines(keepends=True)
    stated = [l for l in lines if l.startswith(BODY_DIGEST_PREFIX)]
    rest = "".join(l for l in lines if not l.startswith(BODY_DIGEST_PREFIX))
    return (stated[0][len(BODY_DIGEST_PREFIX):].strip() if len(stated) == 1 else None), lock_digest(rest)


def read_hashed_pins(text: str) -> list[Pin]:
    """The name==version + --hash pairs of a requirements.lock, in file order."""
    pins: list[Pin] = []
    name = version = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("--hash=sha256:") and name is not None:
            pins.append(Pin(name, version or "", line.split(":", 1)[1].strip(), ""))
            name = None
        elif line and not line.startswith(("#", "--")) and "==" in line:
            name, _, version = line.rstrip("\\").strip().partition("==")
            version = version.strip()
    return pins


def lock_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _toml(value: Any) -> str:
    """A TOML value: JSON's string escapes are valid TOML basic-string escapes."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {value!r}")


def wheel_location(pin: Pin) -> dict[str, str]:
    """PEP 751 wants `url` or `path` for each file: a local file is a path."""
    parsed = urlparse(pin.url)
    if parsed.scheme == "file":
        return {"path": unquote(parsed.path)}
    if not pin.url:
        raise LockError(f"{pin.name} {pin.version}: no URL recorded for {pin.filename}")
    return {"url": pin.url}


def render_pylock(stack: ResolvedStack, pins: Iterable[Pin], stack_file: str, sources: Sources | None = None) -> str:
    """pylock.toml (PEP 751, lock-version 1.0) from the same pins as requirements.lock:
    one single-wheel entry per distribution, for this stack's one target environment."""
    sources = sources or stack_sources(stack)
    marker = f"sys_platform == 'linux' and platform_machine == 'x86_64' and implementation_name == 'cpython' and python_version == '{stack.python}'"
    out = [
        f"# fwdoctor lock for stack {stack.name} ({stack_file}): the resolution of requirements.lock as PEP 751 data.",
        'lock-version = "1.0"',
        f"environments = {_toml([marker])}",
        f"requires-python = {_toml('==' + stack.python + '.*')}",
        'created-by = "fwdoctor"',
    ]
    for pin in sorted(pins, key=lambda p: (p.name, p.version)):
        wheel = {"name": pin.filename, **wheel_location(pin), "hashes": {"sha256": pin.sha256}}
        out += ["", "[[packages]]", f"name = {_toml(pin.name)}", f"version = {_toml(pin.version)}", f"wheels = [{_toml(wheel)}]"]
    out += [
        "",
        "[tool.fwdoctor]",
        f"stack = {_toml(stack.name)}",
        f"stack-digest = {_toml('sha256:' + stack.digest)}",
        f"index-url = {_toml(sources.index_url)}",
        f"extra-index-urls = {_toml(list(sources.extra_index_urls))}",
        f"find-links = {_toml(list(sources.find_links))}",
    ]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- the command
def lock(
    stack: ResolvedStack,
    stack_file: str,
    out_dir: str | Path,
    index_url: str | None = None,
    extra_index_urls: Sequence[str] | None = None,
    find_links: Sequence[str] = (),
    cert: str | None = None,
    record_stack_indexes: bool = False,
    progress: Progress | None = None,
    pip: str | None = None,
) -> LockResult:
    """Resolve, check and write the lock folder. The lock names the sources pip resolved
    against; with `record_stack_indexes` the given ones are taken as mirrors of the stack's
    own indexes (the same files: hashes pin them) and the lock names the stack's instead.
    `pip` is the pip version when already known (else it is asked for, and must be new enough)."""
    say = progress or (lambda _line: None)
    wanted = pip_requirements(stack)
    if wanted or not stack.conda:
        pip = check_pip(version=pip)
    out = Path(out_dir)
    used = resolution_sources(stack, index_url, extra_index_urls, find_links)
    recorded = stack_sources(stack) if record_stack_indexes else Sources.of(
        used.index_url, used.extra_index_urls, [_relative_link(link, out) for link in used.find_links])
    pins: list[Pin] = []
    if wanted or not stack.conda:
        say(f"resolving {len(wanted)} requirements of stack {stack.name} for CPython {stack.python}, "
            f"manylinux glibc <= {stack.glibc}, with pip {pip} from {', '.join([used.index_url, *used.extra_index_urls, *used.find_links])}")
        pins = resolve_pins(stack, index_url, extra_index_urls, find_links, cert, progress=progress)
        _check_pins(stack, pins)
    out.mkdir(parents=True, exist_ok=True)
    text = render_lock(stack, pins, stack_file, recorded)
    written = [_write(out / LOCK_NAME, text), _write(out / PYLOCK_NAME, render_pylock(stack, pins, stack_file, recorded)),
               _write(out / RESOLVED_NAME, stack.to_yaml())]
    conda_error = solver = ""
    if stack.conda:
        try:
            conda_written, used_solver = conda_lock.lock(stack, stack_file, out, progress)
        except conda_lock.CondaLockError as exc:
            conda_error = str(exc)
        else:
            written += conda_written
            solver = used_solver.describe()
    return LockResult(out, tuple(pins), lock_digest(text), conda_error, tuple(written), recorded, pip or "", solver)


def _relative_link(link: str, out: Path) -> str:
    """A local --find-links folder, relative to the lock folder (pip reads a relative path in
    a requirements file from the file's folder), so the lock still works when the project moves."""
    if "://" in link:
        return link
    return os.path.relpath(os.path.abspath(link), os.path.abspath(out)).replace(os.sep, "/")


def _check_pins(stack: ResolvedStack, pins: Sequence[Pin]) -> None:
    """The lock must hold the torch the stack asked for, and for a CUDA stack locked from
    pypi.org, CUDA libraries of the stack's CUDA major (pypi.org's default variant may move)."""
    torch = next((p for p in pins if p.name == "torch"), None)
    if conda_lock.provides(stack, "torch"):
        if torch is not None:  # a pip requirement pulled it in: two torches in one env
            raise LockError(f"the pip part resolves torch {torch.version} (a dependency of a pip requirement) "
                            "over the conda part's pytorch: pin that requirement to a release that does not "
                            "require torch, or install it with conda")
        return  # torch is the conda part's pytorch
    if torch is None:
        raise LockError("pip resolved no torch")
    got = Version(torch.version)
    if got.public != Version(stack.torch).public or (got.local and got.local != stack.variant):
        raise LockError(f"pip resolved torch {torch.version}, not {stack.torch_local}")
    if stack.cuda is not None and not got.local:
        major = Version(stack.cuda).major
        runtime = [p for p in pins if p.name in ("nvidia-cuda-runtime", f"nvidia-cuda-runtime-cu{major}")]
        if not runtime:
            raise LockError(f"torch {torch.version} from {stack.index_url} pulls no nvidia-cuda-runtime: not the {stack.variant} build")
        have = Version(runtime[0].version)
        if have.release[:2] != Version(stack.cuda).release[:2]:
            raise LockError(f"torch {torch.version} from {stack.index_url} pulls CUDA runtime {runtime[0].version}, not CUDA {stack.cuda}")


def _write(path: Path, text: str) -> str:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return str(path)


# --------------------------------------------------------------------------- lock --check
def read_pins(text: str) -> dict[str, str]:
    """name -> version from a requirements.lock."""
    pins: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "--")):
            continue
        spec = line.rstrip("\\").strip()
        name, sep, version = spec.partition("==")
        if sep:
            pins[canonicalize_name(name)] = version.strip()
    return pins


def check(stack: ResolvedStack, lock_dir: str | Path, conda_solve: bool = False, conda_verify_all: bool = False,
          unverified: list[str] | None = None, progress: Progress | None = None) -> list[str]:
    """Why the lock in `lock_dir` no longer matches the stack; [] when it does.

    Whole-file checks first: the lock's own body digest (any hand edit), then the file
    `lock` would write from what the lock states (its stack file, indexes, pins and hashes)
    compared line by line, naming the first line that differs. A stack with conda packages
    has its conda-lock.yml checked too (conda_lock.check): offline always; with `conda_solve`
    re-solved record by record; with `conda_verify_all` (--verify) every package file hashed
    as conda_lock.FetchPolicy allows (none without it); what could not be checked is
    appended to `unverified`."""
    problems = _check_pip(stack, lock_dir)
    if stack.conda:
        conda_problems, not_checked = conda_lock.check(stack, lock_dir, resolve=conda_solve, verify_all=conda_verify_all, progress=progress)
        problems += conda_problems
        if unverified is not None:
            unverified += not_checked
    return problems


def _check_pip(stack: ResolvedStack, lock_dir: str | Path) -> list[str]:
    lock_path = Path(lock_dir) / LOCK_NAME
    try:
        text = lock_path.read_text(encoding="utf-8")
    except OSError as exc:
        return [f"{lock_path}: {exc.strerror or exc} (run `fwdoctor lock`)"]
    problems: list[str] = []
    stated, actual = body_digest(text)
    if stated is None:
        problems.append(f"{lock_path}: no single {BODY_DIGEST_PREFIX.strip('# :')} line (written by an older fwdoctor lock, or edited): run `fwdoctor lock`")
    elif stated != actual:
        problems.append(f"{lock_path}: edited after fwdoctor lock wrote it (its body sha256 is {actual}, the lock states {stated})")
    first = text.splitlines()[0] if text else ""
    found = re.match(r"# fwdoctor lock for stack \S+ \((.*)\); regenerate with", first)
    sources = Sources.read(text)
    if found and sources is not None and f"# stack-digest: sha256:{stack.digest}" in text.splitlines():  # else stale anyway
        try:
            expected = render_lock(stack, read_hashed_pins(text), found.group(1), sources)
        except (QuotingError, ValueError) as exc:
            problems.append(f"{lock_path}: cannot be rewritten as fwdoctor lock writes it: {exc}")
        else:
            want, have = ([l for l in t.splitlines() if not l.startswith(BODY_DIGEST_PREFIX)] for t in (expected, text))
            for w, h in zip(want + [""] * len(have), have + [""] * len(want)):
                if w != h:
                    problems.append(f"{lock_path}: line {h!r} differs from what fwdoctor lock writes there ({w!r})")
                    break
    digest_line = next((l for l in text.splitlines() if l.startswith("# stack-digest: sha256:")), None)
    if digest_line is None:
        problems.append(f"{lock_path}: no stack-digest line (not written by fwdoctor lock)")
    elif digest_line.split("sha256:", 1)[1].strip() != stack.digest:
        problems.append(f"{lock_path}: made from another version of stack {stack.name} (python, torch, variant, OS, index or requirements changed)")
    if Sources.read(text) is None:
        problems.append(f"{lock_path}: names no --index-url (written by an older fwdoctor lock: `pip install -r` would use whatever index pip is configured with)")
    pylock = Path(lock_dir) / PYLOCK_NAME
    try:
        pylock_text = pylock.read_text(encoding="utf-8")
    except OSError as exc:
        problems.append(f"{pylock}: {exc.strerror or exc}")
    else:
        if f'stack-digest = "sha256:{stack.digest}"' not in pylock_text:
            problems.append(f"{pylock}: made from another version of stack {stack.name}")
    pins = read_pins(text)
    for req_text in pip_requirements(stack):
        req = Requirement(req_text)
        version = pins.get(canonicalize_name(req.name))
        if version is None:
            problems.append(f"{req.name} is required by the stack but not in the lock")
        elif req.specifier and not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req.name}=={version} in the lock does not satisfy {req_text}")
    return problems


# --------------------------------------------------------------------------- lock --verify
VERIFY_TIMEOUT_S = 30.0  # one socket operation
VERIFY_DEADLINE_S = 900.0  # every page and find-links file of one lock together (issue 24)
_PAGE_LIMIT = 64 << 20  # pypi.org's largest project pages are a few MiB
_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


def _http_refusal(url: str) -> str | None:
    """Why `lock --verify` does not ask `url` (issue 24): https anywhere, plain http only on a
    loopback address (a lock made against a local index names it on its own lines)."""
    parsed = urlparse(url)
    if parsed.scheme == "https" or (parsed.scheme == "http" and conda_lock.is_loopback_host(parsed.hostname)):
        return None
    if parsed.scheme == "http":
        return f"{url} is plain http to another machine (https only, or a loopback address)"
    return f"{url} is not an http(s) index"


def _read_page(url: str, headers: Mapping[str, str], timeout: float, deadline: float | None) -> tuple[bytes, str]:
    """(body, content type) of one index page: at most _PAGE_LIMIT bytes, read as it arrives
    and given up at `deadline` (time.monotonic()); OSError/ValueError otherwise."""
    from urllib.request import Request, urlopen

    why = _http_refusal(url)
    if why is not None:
        raise ValueError(why)
    left = (deadline - time.monotonic()) if deadline is not None else timeout
    if left <= 0:
        raise OSError(f"{url}: the --verify deadline passed before it was asked")
    parts: list[bytes] = []
    size = 0
    with urlopen(Request(url, headers=dict(headers)), timeout=max(0.5, min(timeout, left))) as response:  # noqa: S310 (scheme checked above)
        read = getattr(response, "read1", response.read)
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise OSError(f"{url}: not read within the --verify deadline ({size:,} bytes came)")
            block = read(1 << 20)
            if not block:
                break
            size += len(block)
            if size > _PAGE_LIMIT:
                raise ValueError(f"{url}: page larger than {_PAGE_LIMIT >> 20} MiB")
            parts.append(block)
        kind = response.headers.get_content_type()
    return b"".join(parts), kind


def published_hashes(index_url: str, name: str, timeout: float = VERIFY_TIMEOUT_S, deadline: float | None = None) -> set[str]:
    """Every sha256 the index publishes for project `name`: a PEP 691 JSON page's `hashes`,
    or the `#sha256=` fragments of a PEP 503 HTML page. OSError/ValueError when unreadable."""
    url = f"{index_url.rstrip('/')}/{canonicalize_name(name)}/"
    body, kind = _read_page(url, {"Accept": f"{_SIMPLE_JSON}, text/html;q=0.1"}, timeout, deadline)
    if kind == _SIMPLE_JSON:
        page = json.loads(body)
        files = page.get("files") if isinstance(page, dict) else None
        return {str((f.get("hashes") or {}).get("sha256", "")).lower() for f in files or [] if isinstance(f, dict) and isinstance(f.get("hashes") or {}, dict)} - {""}
    return {h.lower() for h in re.findall(r"#sha256=([0-9a-fA-F]{64})", body.decode("utf-8", "replace"))}


def find_links_hashes(link: str, name: str, version: str, base: Path | None, timeout: float = VERIFY_TIMEOUT_S,
                      deadline: float | None = None) -> set[str]:
    """The sha256 of every file a --find-links entry offers for `name` `version`: a folder's
    regular files (relative links are read from `base`, the lock's folder, as pip does),
    hashed; an http(s) page's `#sha256=` fragments (https, or http on a loopback address).
    OSError/ValueError when unreadable or refused."""
    if "://" in link:
        body, _ = _read_page(link, {}, timeout, deadline)
        return {h.lower() for h in re.findall(r"#sha256=([0-9a-fA-F]{64})", body.decode("utf-8", "replace"))}
    folder = Path(link) if os.path.isabs(link) or base is None else base / link
    want = (canonicalize_name(name), Version(version))
    found: set[str] = set()
    for entry in sorted(os.listdir(folder)):
        path = folder / entry
        # is_file: a regular file (a link to /dev/zero or a FIFO is neither read nor hashed).
        if _file_project(entry) == want and path.is_file():
            if deadline is not None and time.monotonic() > deadline:
                raise OSError(f"{link}: not hashed within the --verify deadline")
            found.add(_sha256_file(str(path)))
    return found


def _file_project(filename: str) -> tuple[str, Version] | None:
    """(canonical name, version) of a wheel or sdist file name; None for anything else."""
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    try:
        if filename.endswith(".whl"):
            project, version, _, _ = parse_wheel_filename(filename)
        elif filename.endswith((".tar.gz", ".zip")):
            project, version = parse_sdist_filename(filename)
        else:
            return None
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return canonicalize_name(project), version


def verify(text: str, timeout: float = VERIFY_TIMEOUT_S, base: Path | None = None) -> tuple[list[str], list[str]]:
    """(problems, not verified): each pin's sha256 against the hashes its lock's indexes
    publish for that project and the files its --find-links entries offer (folders relative
    to `base`, the lock's folder). A hash an index that answered publishes is verified; one
    no source offers while every source answered is a problem; a pin no source could be
    asked about, or found only in a find-links file or nowhere while an index did not
    answer, is listed as not verified ("index unreachable"), never passed."""
    sources = Sources.read(text)
    if sources is None:
        return ["the lock names no --index-url: nothing to verify against"], []
    indexes = [sources.index_url, *sources.extra_index_urls]
    problems: list[str] = []
    unverified: list[str] = []
    deadline = time.monotonic() + VERIFY_DEADLINE_S
    down: dict[str, str] = {}  # index -> why it did not answer: asked once, not once per pin
    for pin in read_hashed_pins(text):
        published: set[str] = set()
        asked: list[str] = []
        errors: list[str] = []
        for index in indexes:
            if index in down:
                errors.append(f"{index}: {down[index]}")
                continue
            try:
                published |= published_hashes(index, pin.name, timeout, deadline)
                asked.append(index)
            except urllib.error.HTTPError as exc:
                if exc.code == 404:  # the index answered: it has no such project
                    asked.append(index)
                    continue
                down[index] = netcheck.reason(exc, timeout)
                errors.append(f"{index}: {down[index]}")
            except (OSError, ValueError, http.client.HTTPException) as exc:
                down[index] = netcheck.reason(exc, timeout) if isinstance(exc, (OSError, http.client.HTTPException)) else str(exc)
                errors.append(f"{index}: {down[index]}")
        from_indexes = set(published)
        for link in sources.find_links:
            try:
                published |= find_links_hashes(link, pin.name, pin.version, base, timeout, deadline)
                asked.append(f"--find-links {link}")
            except (OSError, ValueError, InvalidVersion) as exc:
                errors.append(f"--find-links {link}: {getattr(exc, 'reason', None) or getattr(exc, 'strerror', None) or exc}")
        if not asked:
            unverified.append(f"{pin.name}=={pin.version}: index unreachable: no index answered ({'; '.join(errors)})")
        elif pin.sha256.lower() in from_indexes:
            continue  # an index that answered publishes it
        elif errors:
            # A hash only a find-links file offers is no proof while an index stays silent.
            unverified.append(f"{pin.name}=={pin.version}: index unreachable ({'; '.join(errors)}); "
                              f"{'found only in ' + ', '.join(asked) if pin.sha256.lower() in published else 'not found in ' + ', '.join(asked)}")
        elif pin.sha256.lower() not in published:
            problems.append(f"{pin.name}=={pin.version}: sha256 {pin.sha256} is not published by {', '.join(asked)}")
    return problems, unverified
