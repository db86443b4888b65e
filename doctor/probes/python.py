"""The Python interpreter being inspected and its environment, read from files.

Which interpreter: fwdoctor.interpreter's policy (`--python`, as fact `request.python`,
else $VIRTUAL_ENV/bin/python, else $CONDA_PREFIX/bin/python, else the first python3 on
PATH). Everything is read statically (pyvenv.cfg, conda-meta/python-*.json,
include/pythonX.Y/patchlevel.h, the lib/pythonX.Y layout, pip's shebang), so it works the
same under --root. Only on a live host, and only
when the files leave the version or the site dirs open (a distro python), the interpreter
itself is asked, once, with a timeout.

Shell equivalent:
    python3 -c 'import sys, site; print(sys.version, site.getsitepackages())'
    head -1 "$(command -v pip)"; cat "$VIRTUAL_ENV/pyvenv.cfg"
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from dataclasses import dataclass, field
from typing import Iterable

from fwdoctor.host import Host, UnreadableError
from fwdoctor.interpreter import choose
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Read, probe

# Distributions whose shadowing by the user site breaks GPU setups (FINDINGS.md: torch, nvidia-*).
SHADOW_WATCH = re.compile(r"^(torch|torchvision|torchaudio|triton|nvidia-.*|cuda-.*)$")

_PYVER = re.compile(r"^python(\d+)\.(\d+)$")
_PATCHLEVEL = re.compile(r'#define\s+PY_VERSION\s+"(\d+\.\d+\.\d+)[^"]*"')
_CONDA_PY = re.compile(r"^python-(\d+\.\d+\.\d+)-[^/]*\.json$")
# What this probe reads (fwdoctor.image.keep keeps only declared reads), with its own limits:
# pyenv's global `version` file, pyvenv.cfg, patchlevel.h and a pip script's shebang.
READS = (
    Read("**/version", limit=4096), Read("**/pyvenv.cfg", limit=64 * 1024),
    Read("**/include/python*/patchlevel.h", limit=64 * 1024), Read("**/bin/pip*", limit=4096),
)

# Asked of a live interpreter when the files do not say enough. -I: no user site, no
# PYTHON* variables, no script dir on sys.path; -S would hide the site dirs we want.
_ASK = (
    "import json, site, sys; "
    "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], "
    "'prefix': sys.prefix, 'base_prefix': sys.base_prefix, "
    "'site': [p for p in site.getsitepackages()]}))"
)


@dataclass
class Interpreter:
    """What the files say about one interpreter."""

    path: str  # host-view path as found
    resolved: str  # symlinks resolved
    prefix: str | None  # environment root (venv / conda env / installation prefix)
    kind: str  # "venv", "conda", "system"
    version: str | None = None  # "3.11.7", or "3.11" when only the minor is known
    version_source: str = ""
    site_packages: list[str] = field(default_factory=list)
    user_site_enabled: bool = True
    notes: list[str] = field(default_factory=list)


@probe(
    "python",
    provides=(
        "python.executable",
        "python.version",
        "python.site_packages",
        "python.virtual_env",
        "python.conda_prefix",
        "python.path_commands",
        "python.user_site",
        "python.user_site_shadows",
        "python.externally_managed",
    ),
)
def python_env(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    virtual_env = host.env.get("VIRTUAL_ENV") or None
    conda_prefix = host.env.get("CONDA_PREFIX") or None
    yield Fact("python.virtual_env", virtual_env, source="$VIRTUAL_ENV")
    yield Fact("python.conda_prefix", conda_prefix, source="$CONDA_PREFIX")
    yield Fact("python.path_commands", path_commands(host), source="PATH")

    chosen, why = choose_interpreter(host, facts.get("request.python"))
    if chosen is None:
        for key in ("python.executable", "python.version", "python.site_packages", "python.user_site", "python.user_site_shadows", "python.externally_managed"):
            yield Fact.unknown(key, why)
        return
    interp = describe(host, chosen)
    failure = None
    if host.live and (interp.version is None or len(interp.version.split(".")) < 3 or not interp.site_packages):
        failure = ask_interpreter(host, interp)
    yield Fact("python.executable", interp.path, source=why)
    if interp.version:
        yield Fact("python.version", interp.version, source=interp.version_source)
    else:
        yield Fact.unknown("python.version", f"nothing under {interp.prefix or interp.path} says which Python this is")
    yield Fact("python.site_packages", interp.site_packages, source=f"{interp.kind} layout under {interp.prefix}")
    if failure:
        yield failure
    yield Fact("python.externally_managed", externally_managed(host, interp), source="<stdlib>/EXTERNALLY-MANAGED (PEP 668)")
    user_site = user_site_dir(host, interp)
    yield Fact("python.user_site", user_site, source="$HOME/.local (PEP 370)")
    yield Fact("python.user_site_shadows", shadows(host, user_site, interp.site_packages), source=user_site or "")


# --------------------------------------------------------------------------- choosing
def choose_interpreter(host: Host, requested: str | None) -> tuple[str | None, str]:
    """(host-view path, why this one) or (None, why none): fwdoctor.interpreter's policy."""
    choice = choose(host, requested)
    return choice.path, choice.why


def externally_managed(host: Host, interp: Interpreter) -> str | None:
    """The EXTERNALLY-MANAGED marker (PEP 668) that makes pip refuse to install into this
    interpreter, or None. The marker sits in the base interpreter's stdlib folder
    (/usr/lib/python3.11/EXTERNALLY-MANAGED on Debian 12 and Ubuntu 23.04+); pip ignores it
    inside a virtual environment, so a venv never has one."""
    if interp.kind == "venv" or interp.prefix is None or not interp.version:
        return None
    minor = ".".join(interp.version.split(".")[:2])
    for lib in ("lib", "lib64"):
        marker = posixpath.join(interp.prefix, lib, f"python{minor}", "EXTERNALLY-MANAGED")
        if host.is_file(marker):
            return marker
    return None


def environment_root(host: Host, path: str) -> tuple[str | None, str]:
    """(prefix, kind) of the environment an interpreter path belongs to. The unresolved
    location decides first: /venv/bin/python is the venv's even when it links to /usr/bin."""
    for candidate in (path, host.resolve(path)):
        bindir = posixpath.dirname(candidate)
        if posixpath.basename(bindir) != "bin":
            continue
        prefix = posixpath.dirname(bindir) or "/"
        if host.is_file(posixpath.join(prefix, "pyvenv.cfg")):
            return prefix, "venv"
        if host.is_dir(posixpath.join(prefix, "conda-meta")):
            return prefix, "conda"
    resolved = host.resolve(path)
    bindir = posixpath.dirname(resolved)
    if posixpath.basename(bindir) == "bin":
        return posixpath.dirname(bindir) or "/", "system"
    return None, "system"


def pyenv_target(host: Host, path: str) -> str | None:
    """The interpreter a pyenv shim (<root>/shims/python3) would exec, read the way pyenv
    decides: $PYENV_VERSION, else (live host only) a .python-version in the working
    directory or above, else <root>/version. None when it is no shim or the choice is
    "system"."""
    shims = posixpath.dirname(path)
    if posixpath.basename(shims) != "shims":
        return None
    root = posixpath.dirname(shims)
    if not host.is_dir(posixpath.join(root, "versions")):
        return None
    chosen = host.env.get("PYENV_VERSION") or (_local_python_version(host) if host.live else None)
    if not chosen:
        try:
            text = host.read_text(posixpath.join(root, "version"), limit=4096) or ""
        except UnreadableError:
            text = ""
        chosen = next((line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")), None)
    chosen = (chosen or "").split(":")[0]
    if not chosen or chosen == "system" or "/" in chosen:
        return None
    target = posixpath.join(root, "versions", chosen, "bin", posixpath.basename(path))
    return target if host.is_file(target) else None


def _local_python_version(host: Host) -> str | None:
    """pyenv's `local` choice: .python-version in the working directory or above."""
    directory = os.getcwd()
    while True:
        try:
            text = host.read_text(posixpath.join(directory, ".python-version"), limit=4096)
        except UnreadableError:
            text = None
        if text:
            return next((line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")), None)
        parent = posixpath.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def describe(host: Host, path: str) -> Interpreter:
    shim_target = pyenv_target(host, path)
    if shim_target is not None:
        interp = describe(host, shim_target)
        interp.path = path
        interp.notes.append(f"pyenv shim for {shim_target}")
        return interp
    resolved = host.resolve(path)
    prefix, kind = environment_root(host, path)
    interp = Interpreter(path=path, resolved=resolved, prefix=prefix, kind=kind)
    if prefix is None:
        return interp
    cfg: dict[str, str] = {}
    if kind == "venv":
        cfg = read_pyvenv_cfg(host, posixpath.join(prefix, "pyvenv.cfg"))
        # venv writes `version`, virtualenv `version_info` (3.11.7.final.0), uv `version_info` too.
        raw = cfg.get("version") or cfg.get("version_info") or ""
        m = re.match(r"(\d+\.\d+(?:\.\d+)?)", raw)
        if m:
            interp.version, interp.version_source = m.group(1), posixpath.join(prefix, "pyvenv.cfg")
        interp.user_site_enabled = cfg.get("include-system-site-packages", "false").lower() == "true"
    elif kind == "conda":
        for name in host.listdir(posixpath.join(prefix, "conda-meta")):
            m = _CONDA_PY.match(name)
            if m:
                interp.version, interp.version_source = m.group(1), posixpath.join(prefix, "conda-meta", name)
                break
    if interp.version is None:
        interp.version, interp.version_source = version_from_layout(host, prefix, resolved)
    minor = ".".join(interp.version.split(".")[:2]) if interp.version else None
    interp.site_packages = site_dirs(host, prefix, minor, kind)
    if kind == "venv" and cfg.get("include-system-site-packages", "false").lower() == "true":
        home = cfg.get("home")
        if home:
            base = posixpath.dirname(home.rstrip("/")) if posixpath.basename(home.rstrip("/")) == "bin" else home
            interp.site_packages += [d for d in site_dirs(host, base, minor, "system") if d not in interp.site_packages]
    return interp


def read_pyvenv_cfg(host: Host, path: str) -> dict[str, str]:
    """`key = value` lines of a pyvenv.cfg; unreadable or odd lines are skipped."""
    try:
        text = host.read_text(path, limit=64 * 1024) or ""
    except UnreadableError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


def version_from_layout(host: Host, prefix: str, resolved: str) -> tuple[str | None, str]:
    """The full version from include/pythonX.Y/patchlevel.h, else X.Y from lib/pythonX.Y
    or the binary's own name (python3.11)."""
    minors = sorted(
        (tuple(int(x) for x in m.groups()) for m in (_PYVER.match(n) for n in host.listdir(posixpath.join(prefix, "lib"))) if m),
        reverse=True,
    )
    m = _PYVER.match(posixpath.basename(resolved))
    if m:
        minors.insert(0, (int(m.group(1)), int(m.group(2))))
    for major, minor in minors[:1]:
        header = posixpath.join(prefix, "include", f"python{major}.{minor}", "patchlevel.h")
        try:
            text = host.read_text(header, limit=64 * 1024)
        except UnreadableError:
            text = None
        found = _PATCHLEVEL.search(text or "")
        if found and found.group(1).startswith(f"{major}.{minor}."):
            return found.group(1), header
        return f"{major}.{minor}", posixpath.join(prefix, "lib", f"python{major}.{minor}")
    return None, ""


def site_dirs(host: Host, prefix: str, minor: str | None, kind: str) -> list[str]:
    """Existing site dirs for an installation prefix, in sys.path order."""
    if minor is None:
        return []
    candidates = [
        posixpath.join(prefix, "lib", f"python{minor}", "site-packages"),
        posixpath.join(prefix, "lib64", f"python{minor}", "site-packages"),
    ]
    if kind == "system":
        # Debian/Ubuntu's python3: /usr/local/lib/python3.X/dist-packages, then /usr/lib/python3/dist-packages.
        candidates += [
            posixpath.join("/usr/local/lib", f"python{minor}", "dist-packages") if prefix == "/usr" else "",
            posixpath.join(prefix, "lib", "python3", "dist-packages"),
            posixpath.join(prefix, "lib", f"python{minor}", "dist-packages"),
        ]
    out: list[str] = []
    seen_real: set[str] = set()
    for cand in candidates:
        if not cand or not host.is_dir(cand):
            continue
        real = host.resolve(cand)
        if real in seen_real:  # lib64 -> lib
            continue
        seen_real.add(real)
        out.append(cand)
    return out


def ask_interpreter(host: Host, interp: Interpreter) -> ProbeFailure | None:
    """Fill the version/site dirs from the live interpreter itself (one short child)."""
    result = host.run([interp.path, "-I", "-c", _ASK])
    if result is None:
        return None
    if not result.ok:
        return ProbeFailure("python", f"could not ask the interpreter: {result.describe_failure()}")
    try:
        data = json.loads(result.stdout.strip().splitlines()[-1])
        version = str(data["version"])
        site = [str(p) for p in data["site"]]
    except (ValueError, KeyError, IndexError, TypeError):
        return ProbeFailure("python", f"{interp.path} -I -c ...: unexpected output {result.stdout[:120]!r}")
    interp.version, interp.version_source = version, f"{interp.path} -I -c 'import sys'"
    if not interp.site_packages:
        interp.site_packages = [p for p in site if host.is_dir(p)]
    return None


# --------------------------------------------------------------------------- PATH
def path_commands(host: Host) -> dict[str, dict[str, str | None] | None]:
    """The first python/python3/pip on PATH: where, what it resolves to, which environment."""
    out: dict[str, dict[str, str | None] | None] = {}
    for name in ("python", "python3", "pip"):
        found = host.which(name)
        if found is None:
            out[name] = None
            continue
        entry: dict[str, str | None] = {"path": found, "resolved": host.resolve(found), "prefix": None}
        target = found
        if name == "pip":
            interpreter = pip_interpreter(host, pyenv_target(host, found) or found)
            if interpreter is not None and "/" not in interpreter:
                interpreter = host.which(interpreter)  # `#!/usr/bin/env python3`
            entry["interpreter"] = interpreter
            if interpreter is None:
                out[name] = entry
                continue
            target = interpreter
        entry["prefix"] = environment_root(host, pyenv_target(host, target) or target)[0]
        out[name] = entry
    return out


def pip_interpreter(host: Host, pip_path: str) -> str | None:
    """The interpreter a pip script runs under, from its shebang (or the `exec` trick
    pip uses for paths longer than the kernel's shebang limit)."""
    try:
        head = host.read_bytes(pip_path, limit=4096) or b""
    except UnreadableError:
        return None
    return parse_shebang(head.decode("utf-8", errors="replace"))


def parse_shebang(text: str) -> str | None:
    """'#!/venv/bin/python3' -> '/venv/bin/python3'; '#!/usr/bin/env python3' -> 'python3';
    '#!/bin/sh' + "'''exec' /long/path/python ..." -> '/long/path/python'; else None."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("#!"):
        return None
    parts = lines[0][2:].split()
    if not parts:
        return None
    if posixpath.basename(parts[0]) == "env" and len(parts) > 1:
        program = next((p for p in parts[1:] if not p.startswith("-") and "=" not in p), None)
        return program if program and _looks_like_python(program) else None
    if posixpath.basename(parts[0]) == "sh":
        for line in lines[1:4]:
            m = re.match(r"""^'''exec'\s+("?)(\S+)\1\s""", line)
            if m and _looks_like_python(m.group(2)):
                return m.group(2)
        return None
    return parts[0] if _looks_like_python(parts[0]) else None


def _looks_like_python(program: str) -> bool:
    # A pyenv shim's `#!/usr/bin/env bash` names bash, not the interpreter pip runs under.
    return re.fullmatch(r"(python|pypy)(\d+(\.\d+)?)?[a-z]?", posixpath.basename(program)) is not None


# --------------------------------------------------------------------------- user site
def user_site_dir(host: Host, interp: Interpreter) -> str | None:
    """~/.local/lib/pythonX.Y/site-packages when this interpreter would use it (PEP 370):
    not inside a venv without system site packages, not with PYTHONNOUSERSITE set."""
    if not interp.user_site_enabled or host.env.get("PYTHONNOUSERSITE"):
        return None
    if not interp.version:
        return None
    minor = ".".join(interp.version.split(".")[:2])
    base = host.env.get("PYTHONUSERBASE") or (posixpath.join(host.env["HOME"], ".local") if host.env.get("HOME") else None)
    if not base:
        return None
    path = posixpath.join(base, "lib", f"python{minor}", "site-packages")
    return path if host.is_dir(path) else None


def distributions(host: Host, directory: str) -> dict[str, tuple[str, str]]:
    """{normalized name: (dist-info path, version)} for the *.dist-info/*.egg-info in a dir."""
    out: dict[str, tuple[str, str]] = {}
    for name in host.listdir(directory):
        for suffix in (".dist-info", ".egg-info"):
            if name.endswith(suffix):
                stem = name[: -len(suffix)]
                dist, _, version = stem.partition("-")
                key = re.sub(r"[-_.]+", "-", dist).lower()
                out.setdefault(key, (posixpath.join(directory, name), version.split("-")[0]))
    return out


def shadows(host: Host, user_site: str | None, env_sites: list[str]) -> list[dict[str, str]]:
    """Watched distributions installed both in the user site and in the environment; the
    user site comes first on sys.path, so its copy wins."""
    if not user_site:
        return []
    user = {k: v for k, v in distributions(host, user_site).items() if SHADOW_WATCH.match(k)}
    if not user:
        return []
    found: list[dict[str, str]] = []
    for site in env_sites:
        if host.resolve(site) == host.resolve(user_site):
            continue
        env = distributions(host, site)
        for key in sorted(user):
            if key in env and not any(f["package"] == key for f in found):
                found.append(
                    {
                        "package": key,
                        "user": user[key][0],
                        "user_version": user[key][1],
                        "env": env[key][0],
                        "env_version": env[key][1],
                    }
                )
    return found


PROBES = (python_env,)
