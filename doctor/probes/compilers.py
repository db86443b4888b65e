"""Host C compilers nvcc may use: the default gcc (the one on PATH, which nvcc runs unless
told otherwise with -ccbin) and every other gcc-N installed.

Shell equivalents:
    command -v gcc; gcc -dumpfullversion; ls /usr/bin/gcc-*; ls /usr/lib/gcc/*/

With --root nothing runs: a gcc's version comes from its name along its symlink chain
(/usr/bin/gcc -> gcc-12 -> x86_64-linux-gnu-gcc-12 gives "12"), else from the single
folder under /usr/lib/gcc/<triplet>/ (its name is the version gcc was built as).

`compilers.nvcc_host` is the host compiler the active nvcc really runs, resolved the way
nvcc resolves it (NVIDIA, "NVCC Environment Variables" and "File and Path Specifications",
docs.nvidia.com/cuda/cuda-compiler-driver-nvcc), each step checked with `nvcc --dryrun` of
CUDA 11.8 (Debian's package) and 13.0 (tests/test_toolkit_layouts.py, test_debian_cuda.py):
a -ccbin/--compiler-bindir in NVCC_APPEND_FLAGS, else in NVCC_PREPEND_FLAGS (with both set
the APPEND one wins), else NVCC_CCBIN (13.0 reads it, 11.8 ignores it; for 12.x the fact is
UNKNOWN, not measured), else `gcc` (nvcc runs gcc with -x c++, not g++) on PATH as nvcc sees
it, which nvcc.profile beside the real nvcc may extend (`PATH += DIR:` prepends). Debian's
and Ubuntu's nvidia-cuda-toolkit prepend /usr/lib/nvidia-cuda-toolkit/bin, whose gcc/g++
are scripts that run the first supported gcc-N whose g++-N is installed; that choice is
followed here, so a newer default gcc is not what nvcc uses there.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any, Iterable

from packaging.version import Version

from fwdoctor.host import Host, UnreadableError
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, probe
from fwdoctor.versions import parse_version

NAME = "compilers"
LIBGCC_DIRS = ("/usr/lib/gcc", "/usr/lib64/gcc")

_NAME_VERSION = re.compile(r"^(?:[\w.-]+-)?gcc-(\d+(?:\.\d+)*)$")
_DUMP = re.compile(r"^\s*(\d+(?:\.\d+)*)\s*$")
# nvcc.profile: "PATH += /usr/lib/nvidia-cuda-toolkit/bin:" (+= prepends, =+ appends)
_PROFILE_PATH = re.compile(r"^\s*PATH\s*(\+=|=\+|\?=|=)\s*(.*?)\s*$", re.MULTILINE)
# Debian's wrapper: `if g++-11 --version >/dev/null 2>&1; then` / `prog=gcc-11`
# Blanks within a line are [ \t], not \s: "^\s*" crossed newlines, so a file of blank lines
# started a scan to its end at every line (n^2).
_WRAPPER_TEST = re.compile(r"^[ \t]*(?:el)?if[ \t]+(\S+)[ \t]+--version\b.*$\n\s*prog=(\S+)[ \t]*$", re.MULTILINE)
WRAPPER_LIMIT = 16 * 1024


# ----------------------------------------------------------------------------- parsers
def version_from_name(name: str) -> str | None:
    """"gcc-12" / "x86_64-linux-gnu-gcc-12" -> "12"; "gcc" / "gcc-ar-12" -> None."""
    match = _NAME_VERSION.match(posixpath.basename(name))
    return match.group(1) if match else None


def parse_dumpversion(text: str) -> str | None:
    """`gcc -dumpfullversion` -> "12.2.0" (the only line, a bare version)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        return None
    match = _DUMP.match(lines[0])
    return match.group(1) if match else None


def ccbin_from_flags(text: str) -> str | None:
    """The -ccbin / --compiler-bindir value in an NVCC_PREPEND_FLAGS-style string
    ("-ccbin /usr/bin/g++-12", "-ccbin=g++-12", "--compiler-bindir g++"); None if absent.
    The last one counts, as for an option given twice on a command line."""
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    found = None
    for i, word in enumerate(words):
        for flag in ("-ccbin", "--compiler-bindir"):
            if word == flag and i + 1 < len(words):
                found = words[i + 1]
            elif word.startswith(flag + "="):
                found = word[len(flag) + 1:]
    return found or None


def profile_path(text: str) -> tuple[list[str], list[str]]:
    """(folders nvcc.profile prepends to PATH, folders it appends); `$(...)` entries are
    skipped (they name nvcc's own folders, never a compiler's)."""
    prepend: list[str] = []
    append: list[str] = []
    for op, value in _PROFILE_PATH.findall(text):
        folders = [f for f in value.split(":") if f and "$(" not in f]
        (append if op == "=+" else prepend).extend(folders)
    return prepend, append


def wrapper_choices(text: str) -> list[tuple[str, str]] | None:
    """Debian's nvcc gcc/g++ wrapper -> [(the g++ it tests, the compiler it then runs)] in
    order ([("g++-11", "gcc-11"), ("g++-10", "gcc-10"), ...]); None for any other file."""
    if not text.startswith("#!") or "exec $prog" not in text:
        return None
    pairs = _WRAPPER_TEST.findall(text)
    return [(tested, prog) for tested, prog in pairs if prog != "false"] or None


# ----------------------------------------------------------------------------- reading
def link_chain(host: Host, path: str, hops: int = 10) -> list[str]:
    """`path` and each symlink target after it (host-view), up to the real file."""
    chain = [path]
    current = path
    for _ in range(hops):
        target = host.readlink(current)
        if target is None:
            break
        current = posixpath.normpath(target if target.startswith("/") else posixpath.join(posixpath.dirname(current), target))
        chain.append(current)
    return chain


_CONDA_GCC = re.compile(r"^(?:gcc|gxx)_impl_linux-[\w]+-(\d+(?:\.\d+)*)-[^-]+\.json$")


def conda_compiler_version(host: Host, path: str) -> tuple[str, str] | None:
    """A conda toolchain compiler (PREFIX/bin/x86_64-conda-linux-gnu-c++, whose name has
    no version): the version of its gcc_impl/gxx_impl package in PREFIX/conda-meta."""
    prefix = posixpath.dirname(posixpath.dirname(path))
    meta = posixpath.join(prefix, "conda-meta")
    for name in sorted(host.listdir(meta)):
        match = _CONDA_GCC.match(name)
        if match:
            return match.group(1), posixpath.join(meta, name)
    return None


def libgcc_versions(host: Host) -> list[str]:
    """Version folders under /usr/lib/gcc/<triplet>/ ("12", "4.8.5")."""
    found = []
    for base in LIBGCC_DIRS:
        for triplet in host.listdir(base):
            for name in host.listdir(posixpath.join(base, triplet)):
                if re.fullmatch(r"\d+(?:\.\d+)*", name) and host.is_dir(posixpath.join(base, triplet, name)):
                    found.append(name)
    return sorted(set(found), key=Version)


def gcc_version(host: Host, path: str, failures: list[ProbeFailure], default: bool = False) -> tuple[str | None, str]:
    """(version, where it came from) for the gcc at `path`; (None, why) if unknown."""
    if host.live:
        for flag in ("-dumpfullversion", "-dumpversion"):  # -dumpfullversion: gcc >= 7
            result = host.run_version([path, flag])
            if result is None:
                break
            if result.ok:
                version = parse_dumpversion(result.stdout)
                if version:
                    return version, f"{path} {flag}"
            elif result.timed_out or result.error:
                failures.append(ProbeFailure(NAME, result.describe_failure()))
                break
        return None, f"{path} -dumpfullversion gave no version"
    for hop in link_chain(host, path):
        version = version_from_name(hop)
        if version:
            return version, f"{path} -> {hop}" if hop != path else path
    found = conda_compiler_version(host, path)
    if found:
        return found
    if default:
        versions = libgcc_versions(host)
        if len(versions) == 1:
            return versions[0], f"the only folder under /usr/lib/gcc/*/ ({versions[0]})"
        if versions:
            return None, f"{path} names no version and /usr/lib/gcc/*/ holds several ({', '.join(versions)})"
    return None, f"{path} names no version and nothing runs inside --root"


# ----------------------------------------------------------------------------- nvcc's host compiler
def _read_small(host: Host, path: str) -> str | None:
    try:
        st = host.stat(path)
        if st is None or st.st_size > WRAPPER_LIMIT:
            return None
        return host.read_text(path, limit=WRAPPER_LIMIT)
    except UnreadableError:
        return None


def _which_in(host: Host, name: str, folders: list[str]) -> str | None:
    if name.startswith("/"):
        return name if host.is_executable(name) else None
    for folder in folders:
        candidate = posixpath.join(folder, name)
        if host.is_executable(candidate):
            return candidate
    return None


class NotEstablished(Exception):
    """The compiler nvcc runs cannot be told from what is known (the fact is UNKNOWN)."""


def nvcc_reads_ccbin_env(version: str | None) -> bool | None:
    """Whether this toolkit's nvcc honours NVCC_CCBIN: CUDA 13.0's does, 11.8's ignores
    it (both measured with `nvcc --dryrun`); None for the releases between (not measured)."""
    parsed = parse_version(version)
    if parsed is None:
        return None
    if parsed >= Version("13.0"):
        return True
    if parsed < Version("12.0"):
        return False
    return None


def nvcc_host_compiler(host: Host, nvcc: str, failures: list[ProbeFailure], version: str | None = None) -> dict[str, Any] | None:
    """{"path", "version", "via", "wrapper"} for the host compiler `nvcc` runs; "path" None
    when -ccbin or a gcc wrapper leads nowhere (then "via" says why); None when there is no
    gcc at all."""
    path_dirs = host.path_list("PATH")
    ccbin, via = None, ""
    # Both set: the APPEND one wins (measured with CUDA 11.8 and 13.0 `nvcc --dryrun`).
    for var in ("NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS"):
        value = ccbin_from_flags(host.env.get(var, ""))
        if value:
            ccbin, via = value, f"-ccbin in {var}"
            break
    if ccbin is None and host.env.get("NVCC_CCBIN"):
        honoured = nvcc_reads_ccbin_env(version)
        if honoured is None:
            raise NotEstablished(f"NVCC_CCBIN is set, and whether CUDA {version or '(unknown version)'}'s nvcc reads it is not known here (13.0 does, 11.8 does not)")
        if honoured:
            ccbin, via = host.env["NVCC_CCBIN"], "NVCC_CCBIN"
    if ccbin is not None:
        # -ccbin names the compiler, or the folder nvcc looks for gcc in.
        compiler = _which_in(host, "gcc", [ccbin]) if host.is_dir(ccbin) else _which_in(host, ccbin, path_dirs)
        if compiler is None:
            return {"path": None, "version": None, "via": f"{via} names {ccbin}, which is not an executable here", "wrapper": None}
    else:
        real = host.resolve(nvcc)
        profile = posixpath.join(posixpath.dirname(real), "nvcc.profile")
        text = _read_small(host, profile) if host.is_file(profile) else None
        prepend, append = profile_path(text) if text else ([], [])
        compiler = _which_in(host, "gcc", prepend + path_dirs + append)
        via = "gcc on PATH" if compiler is None or compiler in (posixpath.join(d, "gcc") for d in path_dirs) else f"gcc on PATH as {profile} extends it"
        if compiler is None:
            return None  # no compiler at all: nothing to judge (a build says so itself)
    wrapper = None
    # Only a file named gcc can be such a wrapper (Debian's is .../bin/gcc); a compiler is
    # never read otherwise (an image keeps only declared reads: probes/cuda.py READS).
    real_compiler = host.resolve(compiler)
    text = _read_small(host, real_compiler) if posixpath.basename(real_compiler) == "gcc" else None
    choices = wrapper_choices(text) if text else None
    if choices:
        wrapper = compiler
        chosen = next(((tested, prog) for tested, prog in choices if _which_in(host, tested, path_dirs)), None)
        tried = ", ".join(dict.fromkeys(tested for tested, _ in choices))
        if chosen is None:
            return {"path": None, "version": None, "via": f"{wrapper} finds none of {tried} on PATH", "wrapper": wrapper, "tries": tried}
        compiler = _which_in(host, chosen[1], path_dirs)
        if compiler is None:
            return {"path": None, "version": None, "via": f"{wrapper} runs {chosen[1]}, which is not on PATH", "wrapper": wrapper, "tries": tried}
        via = f"{via}: {wrapper} runs {chosen[1]} ({chosen[0]} is installed)"
    version, _ = gcc_version(host, compiler, failures, default=compiler.endswith("/gcc") and wrapper is None)
    return {"path": compiler, "version": version, "via": via, "wrapper": wrapper}


# ----------------------------------------------------------------------------- the probe
@probe(NAME, provides=("compilers.gcc_default", "compilers.gcc_installed", "compilers.nvcc_host"))
def compilers_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    failures: list[ProbeFailure] = []
    default_path = host.which("gcc")
    default_version: str | None = None
    if default_path is None:
        default_fact = Fact("compilers.gcc_default", None, source="no gcc on PATH")
        default_real = None
    else:
        version, where = gcc_version(host, default_path, failures, default=True)
        default_real, default_version = host.resolve(default_path), version
        if version is None:
            default_fact = Fact.unknown("compilers.gcc_default", f"found {default_path}, but: {where}")
        else:
            default_fact = Fact("compilers.gcc_default", {"path": default_path, "version": version}, source=where)

    installed: list[dict] = []
    seen: set[str] = set()
    for directory in host.path_list("PATH"):
        for path in host.glob(directory, "gcc-[0-9]*"):
            if version_from_name(path) is None or not host.is_executable(path):
                continue
            real = host.resolve(path)
            if real in seen:
                continue
            seen.add(real)
            if host.live and real == default_real:
                # /usr/bin/gcc-12 is the file /usr/bin/gcc runs: its -dumpfullversion was
                # asked already (a failure, too, is already reported).
                version = default_version
            else:
                version, _ = gcc_version(host, path, failures)
            installed.append({"path": path, "version": version or version_from_name(path)})
    if default_fact.is_known and default_fact.value and default_real not in seen:
        installed.insert(0, dict(default_fact.value))
    yield default_fact
    yield Fact("compilers.gcc_installed", installed, source="gcc-N on PATH" + (" and the default gcc" if default_path else ""))
    yield from _nvcc_host_fact(host, facts, failures)
    yield from failures


def _nvcc_host_fact(host: Host, facts: Facts, failures: list[ProbeFailure]) -> Iterable[Fact]:
    if not facts.known("cuda.active") or not facts.known("cuda.toolkits"):
        yield Fact.unknown("compilers.nvcc_host", "the active CUDA toolkit is unknown")
        return
    active = facts["cuda.active"]
    entry = next((t for t in facts["cuda.toolkits"] or [] if active and t.get("root") == active.get("root")), None)
    if not entry or not entry.get("nvcc"):
        yield Fact("compilers.nvcc_host", None, source="no active toolkit with nvcc")
        return
    try:
        found = nvcc_host_compiler(host, str(entry["nvcc"]), failures, entry.get("version"))
    except UnreadableError as exc:
        yield Fact.unknown("compilers.nvcc_host", f"cannot follow {exc.path}: {exc.reason}")
        return
    except NotEstablished as exc:
        yield Fact.unknown("compilers.nvcc_host", str(exc))
        return
    if found is None:
        yield Fact("compilers.nvcc_host", None, source="no gcc on PATH or in nvcc.profile's PATH")
        return
    if found["path"] is not None and found["version"] is None:
        yield Fact.unknown("compilers.nvcc_host", f"nvcc uses {found['path']} ({found['via']}), whose version is unknown")
        return
    yield Fact("compilers.nvcc_host", found, source=f"{entry['nvcc']}: {found['via']}")


PROBES: tuple[Probe, ...] = (compilers_probe,)
