"""`fwdoctor lock`: a fully pinned, hash-checked pip lock for a resolved stack.

lockfiles/<stack>/
    requirements.lock    name==version + --hash=sha256 for every distribution, for
                         `pip install --require-hashes --no-deps -r requirements.lock`
    stack.resolved.yaml  the resolved stack the lock was made from (its digest is in the lock)
    environment.yml      only for stacks with conda packages (input of conda-lock)
    conda-lock.yml       only when conda-lock ran

Resolution runs pip (`install --dry-run --report`) for the stack's interpreter and platform,
not this machine's: --python-version/--platform/--abi select wheels, and a wrapper makes pip
evaluate environment markers (python_version < "3.11") for the target Python too, which pip
alone does not. pip runs `--isolated`, so no user pip.conf, PIP_* variable or find-links of
this machine leaks into the lock. The output is sorted and carries no date: the same stack
and index give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import unquote, urlparse

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from fwdoctor import runner
from fwdoctor.recipes.stack import ResolvedStack
from fwdoctor.recipes.scripts import read as read_script

LOCK_NAME = "requirements.lock"
RESOLVED_NAME = "stack.resolved.yaml"
ENV_NAME = "environment.yml"
CONDA_LOCK_NAME = "conda-lock.yml"
PIP_TIMEOUT_S = 900.0
OLDEST_MANYLINUX = 5  # manylinux_2_5 == manylinux1

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


@dataclass(frozen=True)
class LockResult:
    directory: Path
    pins: tuple[Pin, ...]
    lock_sha256: str
    conda_error: str = ""  # non-empty: the conda part could not be locked, and why
    written: tuple[str, ...] = field(default_factory=tuple)


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
    argv = [python, "-c", _PIP_WRAPPER, "--isolated", "install", "--dry-run", "--ignore-installed", "--quiet",
            "--report", report_file, "--only-binary=:all:", "--python-version", stack.python,
            "--implementation", "cp", "--abi", abi, "--abi", "abi3", "--abi", "none",
            # Read each wheel's METADATA by HTTP range requests instead of downloading
            # gigabytes of CUDA libraries (pypi.org serves no PEP 658 metadata for them).
            "--use-feature=fast-deps"]
    for tag in platform_tags(stack.glibc):
        argv += ["--platform", tag]
    argv += ["--index-url", index_url or stack.index_url]
    for url in stack.extra_index_urls if extra_index_urls is None else extra_index_urls:
        argv += ["--extra-index-url", url]
    for link in find_links:
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
) -> list[Pin]:
    """Ask pip what it would install for the stack, with the sha256 of every file."""
    with tempfile.TemporaryDirectory(prefix="fwdoctor-lock-") as tmp:
        req = os.path.join(tmp, "requirements.in")
        report = os.path.join(tmp, "report.json")
        Path(req).write_text("".join(f"{r}\n" for r in stack.requirements), encoding="utf-8")
        argv = pip_argv(stack, req, report, index_url, extra_index_urls, find_links, cert)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env["FWDOCTOR_TARGET_MARKERS"] = json.dumps(target_markers(stack.python))
        env["PIP_CONFIG_FILE"] = os.devnull
        result = runner.run(argv, timeout=timeout, env=env, cwd=tmp)
        if not result.ok:
            raise LockError(f"pip could not resolve stack {stack.name}: {_pip_reason(result)}")
        try:
            with open(report, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, json.JSONDecodeError) as exc:
            raise LockError(f"pip wrote no readable report: {exc}") from None
    return pins_from_report(data)


def _pip_reason(result: runner.CommandResult) -> str:
    if result.error or result.timed_out:
        return result.describe_failure().replace(_PIP_WRAPPER, "<pip>")
    lines = [l.strip() for l in (result.stderr or result.stdout).splitlines() if l.strip() and not l.startswith("WARNING: pip is using lazily")]
    errors = [l for l in lines if l.startswith("ERROR")]
    return " / ".join(errors[-2:] or lines[-2:] or [f"exit status {result.returncode}"])


def pins_from_report(report: Mapping[str, Any]) -> list[Pin]:
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
            digest = _sha256_file(unquote(parsed.path))
        if not digest:
            raise LockError(f"{name} {version}: the index gave no sha256 for {url} (use an index that publishes hashes, such as pypi.org)")
        if info.get("dir_info") is not None or info.get("vcs_info") is not None:
            raise LockError(f"{name}: a directory or VCS requirement cannot be locked by hash")
        pins.append(Pin(canonicalize_name(name), version, digest, unquote(parsed.path.rsplit("/", 1)[-1])))
    return sorted(pins, key=lambda p: p.name)


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------- rendering
def render_lock(stack: ResolvedStack, pins: Iterable[Pin], stack_file: str) -> str:
    lines = [
        f"# fwdoctor lock for stack {stack.name} ({stack_file}); regenerate with `fwdoctor lock {stack_file}`.",
        f"# torch {stack.torch_local}, CPython {stack.python}, Linux x86_64 (manylinux, glibc <= {stack.glibc}).",
        f"# Index: {stack.index_url}" + "".join(f" + {u}" for u in stack.extra_index_urls),
        "# Install: pip install --require-hashes --no-deps --only-binary=:all: -r requirements.lock",
        f"# stack-digest: sha256:{stack.digest}",
    ]
    for pin in sorted(pins, key=lambda p: (p.name, p.version)):
        lines.append(f"{pin.name}=={pin.version} \\")
        lines.append(f"    --hash=sha256:{pin.sha256}")
    return "\n".join(lines) + "\n"


def lock_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def conda_environment(stack: ResolvedStack) -> str:
    data = {"name": stack.name, "channels": ["conda-forge"], "dependencies": [f"python={stack.python}", *stack.conda], "platforms": ["linux-64"]}
    return yaml.safe_dump(data, sort_keys=False)


# --------------------------------------------------------------------------- the command
def lock(
    stack: ResolvedStack,
    stack_file: str,
    out_dir: str | Path,
    index_url: str | None = None,
    extra_index_urls: Sequence[str] | None = None,
    find_links: Sequence[str] = (),
    cert: str | None = None,
) -> LockResult:
    pins = resolve_pins(stack, index_url, extra_index_urls, find_links, cert)
    _check_pins(stack, pins)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text = render_lock(stack, pins, stack_file)
    written = [_write(out / LOCK_NAME, text), _write(out / RESOLVED_NAME, stack.to_yaml())]
    conda_error = ""
    if stack.conda:
        written.append(_write(out / ENV_NAME, conda_environment(stack)))
        conda_error = _conda_lock(out)
    return LockResult(out, tuple(pins), lock_digest(text), conda_error, tuple(written))


def _check_pins(stack: ResolvedStack, pins: Sequence[Pin]) -> None:
    """The lock must hold the torch the stack asked for, and for a CUDA stack locked from
    pypi.org, CUDA libraries of the stack's CUDA major (pypi.org's default variant may move)."""
    torch = next((p for p in pins if p.name == "torch"), None)
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


def _conda_lock(out: Path) -> str:
    exe = shutil.which("conda-lock")
    if exe is None:
        return ("conda-lock is not installed here, so the conda packages are not locked: "
                f"run `conda-lock lock -f {out / ENV_NAME} -p linux-64 --lockfile {out / CONDA_LOCK_NAME}` "
                "where conda-lock and a conda solver (micromamba/conda) are available")
    result = runner.run([exe, "lock", "-f", str(out / ENV_NAME), "-p", "linux-64", "--lockfile", str(out / CONDA_LOCK_NAME)], timeout=PIP_TIMEOUT_S)
    if not result.ok:
        return f"conda-lock failed: {result.describe_failure()}"
    return ""


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


def check(stack: ResolvedStack, lock_dir: str | Path) -> list[str]:
    """Why the lock in `lock_dir` no longer matches the stack; [] when it does."""
    lock_path = Path(lock_dir) / LOCK_NAME
    try:
        text = lock_path.read_text(encoding="utf-8")
    except OSError as exc:
        return [f"{lock_path}: {exc.strerror or exc} (run `fwdoctor lock`)"]
    problems: list[str] = []
    digest_line = next((l for l in text.splitlines() if l.startswith("# stack-digest: sha256:")), None)
    if digest_line is None:
        problems.append(f"{lock_path}: no stack-digest line (not written by fwdoctor lock)")
    elif digest_line.split("sha256:", 1)[1].strip() != stack.digest:
        problems.append(f"{lock_path}: made from another version of stack {stack.name} (python, torch, variant, OS, index or requirements changed)")
    pins = read_pins(text)
    for req_text in stack.requirements:
        req = Requirement(req_text)
        version = pins.get(canonicalize_name(req.name))
        if version is None:
            problems.append(f"{req.name} is required by the stack but not in the lock")
        elif req.specifier and not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req.name}=={version} in the lock does not satisfy {req_text}")
    return problems
