"""Rules about CUDA toolkits and the host compiler: which nvcc builds, for which GPUs, with
which gcc, and whether the driver runs what it builds.

The "active" toolkit (cuda.active) is the one torch.utils.cpp_extension builds with:
CUDA_HOME, else CUDA_PATH, else the nvcc first on PATH, else /usr/local/cuda.
"""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING, Any, Iterable

from packaging.version import InvalidVersion, Version

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.quoting import QuotingError, cmd_text
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule, sh
from fwdoctor.versions import best_match, major_minor, parse_version


if TYPE_CHECKING:
    from fwdoctor.kb import KB


# ----------------------------------------------------------------------------- helpers
def _xy(version: str) -> str:
    """'12.4.131' -> '12.4'; NotCheckable for anything that is not a version."""
    xy = major_minor(version)
    if xy is None:
        raise NotCheckable(f"cannot read CUDA version {version!r}")
    return xy


def _major(version: str) -> int:
    return Version(_xy(version)).major


def _env_commands(root: str) -> tuple[str, ...]:
    return (
        f"export CUDA_HOME={sh(root)}",
        f'export PATH={sh(posixpath.join(root, "bin"))}:"$PATH"',
        f'export LD_LIBRARY_PATH={sh(posixpath.join(root, "lib64"))}:"$LD_LIBRARY_PATH"',
    )


def _windows_root(root: Any) -> bool:
    """A Windows toolkit folder (C:\\...\\CUDA\\v12.4): its fix is cmd's `set`, never export/apt."""
    return bool(re.match(r"^[A-Za-z]:[\\/]", str(root or "")))


def _env_fix(root: str) -> FixRef:
    """Point everything at one toolkit: recipe env on Linux; on Windows the variables NVIDIA's
    installer sets (CUDA_PATH; CUDA_HOME, which torch reads first) and PATH, in cmd."""
    if not _windows_root(root):
        return FixRef(recipe="env", options={"cuda_home": root}, commands=_env_commands(root))
    try:  # a report's folder, whatever it holds: written for cmd only when cmd reads it as text
        folder = cmd_text(root, "toolkit folder")
    except QuotingError:
        return FixRef(commands=("where nvcc   # the nvcc.exe PATH finds first", "echo %CUDA_PATH%"),
                      note="set CUDA_PATH (and CUDA_HOME, which torch reads first) to that toolkit's folder in System Properties > "
                           "Environment Variables and put its bin first in Path; its name holds characters cmd would interpret, so no command is given")
    return FixRef(
        commands=(f'set "CUDA_HOME={folder}"', f'set "CUDA_PATH={folder}"', f'set "PATH={folder}\\bin;%PATH%"',
                  "where nvcc   # its first line must be that bin's nvcc.exe"),
        note="these hold in this cmd window; to keep them, set CUDA_PATH in System Properties > Environment Variables "
             "and move that toolkit's bin above the other CUDA bin folders in Path, then open a new shell",
    )


def _apt_command(xy: str) -> str:
    # NVIDIA's apt repository names the toolkit package cuda-toolkit-X-Y.
    return f"sudo apt-get install {sh('cuda-toolkit-' + xy.replace('.', '-'))}"


def _toolkit_fix(xy: str, note: str = "") -> FixRef:
    return FixRef(recipe="cuda-toolkit", options={"version": xy}, commands=(_apt_command(xy),), note=note)


def _describe(tk: dict[str, Any]) -> str:
    version = tk.get("version") or "unknown version"
    return f"{tk.get('root')} ({version})"


def _active_version(facts: Facts, needs_nvcc: bool = True) -> tuple[dict[str, Any], str] | None:
    """(the active toolkit, its version) or None when there is no active toolkit, or (with
    `needs_nvcc`) when it has no nvcc: toolkit-missing reports that. NotCheckable when
    there is one but its version is unknown."""
    active = facts["cuda.active"]
    if not active:
        return None
    entry = next((tk for tk in facts.get("cuda.toolkits") or [] if tk.get("root") == active.get("root")), None)
    if needs_nvcc and entry is not None and not entry.get("nvcc"):
        return None
    version = active.get("version")
    if not version:
        raise NotCheckable(f"the active toolkit at {active.get('root')} ({active.get('why')}) has no readable version")
    return active, str(version)


def _with_nvcc(toolkits: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [tk for tk in toolkits or [] if tk.get("nvcc")]


def _preferred_root(facts: Facts) -> str | None:
    """The toolkit every fix should converge on (the same choice as recipes/env.py): one
    with nvcc matching torch's CUDA (major.minor, then major), else the active one."""
    toolkits = _with_nvcc(facts.get("cuda.toolkits") or [])
    match = best_match(facts.get("torch.cuda"), toolkits, lambda tk: tk.get("version"))
    if match is not None:
        return str(match["root"])
    active = facts.get("cuda.active") or {}
    roots = {tk.get("root") for tk in facts.get("cuda.toolkits") or []}
    return str(active["root"]) if active.get("root") in roots else None


# ----------------------------------------------------------------------------- rules
@rule("toolkit-missing", needs=("torch.cuda", "cuda.toolkits"), optional=("torch.version",))
def toolkit_missing(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Fires when the installed torch is a CUDA build but no nvcc is found anywhere
        (PATH, CUDA_HOME, CUDA_PATH, /usr/local/cuda*, /opt, conda, pip wheels).

    Why is this bad?
        torch runs without a toolkit, but building a CUDA extension (pip install of
        flash-attn, apex, xformers from source; torch.utils.cpp_extension.load) needs nvcc:
        "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA
        install root."

    Example
        torch 2.14.1+cu130 in a venv on an nvidia/cuda:13.0.2-runtime image: the image
        has libcudart under /usr/local/cuda-13.0 but no bin/nvcc.

    Fix
        Install the toolkit matching torch's CUDA (recipe cuda-toolkit), then point
        CUDA_HOME at it:
            fwdoctor fix toolkit-missing
            sudo apt-get install cuda-toolkit-13-0
    """
    torch_cuda = facts["torch.cuda"]
    if not torch_cuda:
        return None  # a CPU build needs no toolkit
    toolkits = facts["cuda.toolkits"] or []
    if _with_nvcc(toolkits):
        return None
    xy = _xy(torch_cuda)
    runtime_only = ", ".join(tk["root"] for tk in toolkits)
    seen = f"; CUDA runtime without nvcc at {runtime_only}" if runtime_only else ""
    torch_version = f"torch {facts.get('torch.version')}" if facts.get("torch.version") else "torch"
    return Hit(
        f"{torch_version} is built for CUDA {xy} but no nvcc was found{seen}: CUDA extensions cannot be built",
        evidence={"torch.cuda": torch_cuda, "cuda.toolkits": toolkits},
        fix=_toolkit_fix(xy),
    )


@rule("multiple-toolkits", needs=("cuda.toolkits",), optional=("cuda.active", "torch.cuda"))
def multiple_toolkits(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Fires (info) when more than one CUDA toolkit is installed, and says which one
        builds (the active one) and why.

    Why is this bad?
        Nothing is wrong yet; but each tool picks a toolkit its own way (torch: CUDA_HOME,
        then nvcc on PATH; CMake: CUDAToolkit_ROOT, then nvcc on PATH; Makefiles:
        /usr/local/cuda), so two builds on the same host can use different nvcc versions.

    Example
        /usr/local/cuda-12.4 and /usr/local/cuda-13.0 installed; /usr/local/cuda links to
        13.0 while CUDA_HOME names 12.4.

    Fix
        Pick one and name it everywhere (recipe env writes CUDA_HOME, PATH and
        LD_LIBRARY_PATH for one root):
            fwdoctor fix multiple-toolkits
            export CUDA_HOME=/usr/local/cuda-13.0
    """
    toolkits = facts["cuda.toolkits"] or []
    if len(toolkits) < 2:
        return None
    active = facts.get("cuda.active")
    listing = "; ".join(_describe(tk) for tk in toolkits)
    if active:
        chosen = f"active: {active.get('root')} via {active.get('why')}"
    elif not facts.known("cuda.active"):
        chosen = "which one builds is not shown (CUDA_HOME's nvcc)"  # a report's text
    else:
        chosen = "none is active (no CUDA_HOME, CUDA_PATH, nvcc on PATH or /usr/local/cuda)"
    target = _preferred_root(facts)
    if target:
        fix = _env_fix(target)
    elif any(_windows_root(tk.get("root")) for tk in toolkits):
        fix = FixRef(commands=("where nvcc   # the nvcc.exe PATH finds first", "echo %CUDA_PATH%"),
                     note="choose one toolkit: set CUDA_PATH (and CUDA_HOME, which torch reads first) to its folder and put its bin first in Path")
    else:
        fix = FixRef(recipe="env", note="choose one toolkit root and pass it as cuda_home")
    return Hit(
        f"{len(toolkits)} CUDA toolkits installed: {listing}; {chosen}",
        evidence={"cuda.toolkits": toolkits, "cuda.active": active},
        fix=fix,
    )


_POINTER_NAMES = {
    "path_nvcc": "nvcc on PATH",
    "cuda_home": "CUDA_HOME",
    "cuda_path": "CUDA_PATH",
    "usr_local_cuda": "/usr/local/cuda",
    "ld_cudart": "libcudart on LD_LIBRARY_PATH",
}


@rule("cuda-path-inconsistent", needs=("cuda.pointers", "cuda.toolkits"), optional=("cuda.active", "torch.cuda"))
def cuda_path_inconsistent(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares where the nvcc first on PATH, CUDA_HOME, CUDA_PATH, the /usr/local/cuda
        link and the libcudart on LD_LIBRARY_PATH point, and fires when they name
        different toolkits.

    Why is this bad?
        Each tool follows a different pointer: an extension compiled by one nvcc against
        one toolkit's headers, then linked or loaded against another's libcudart, fails
        with "undefined symbol" errors or "CUDA driver version is insufficient for CUDA
        runtime version", or torch refuses: "The detected CUDA version (12.4) mismatches
        the version that was used to compile PyTorch (13.0)".

    Example
        PATH has /usr/local/cuda-12.4/bin first, CUDA_HOME=/usr/local/cuda-13.0.

    Fix
        Point all of them at one toolkit (recipe env):
            fwdoctor fix cuda-path-inconsistent
            export CUDA_HOME=/usr/local/cuda-13.0 PATH=/usr/local/cuda-13.0/bin:$PATH
    """
    pointers = facts["cuda.pointers"] or {}
    roots = {tk.get("root") for tk in facts["cuda.toolkits"] or []}
    named: dict[str, str] = {}
    invalid = {key for key, _, _ in _invalid_cuda_vars(pointers, facts["cuda.toolkits"])}
    for key, label in _POINTER_NAMES.items():
        root = pointers.get(key)
        # A CUDA_HOME/CUDA_PATH that names no toolkit is cuda-home-invalid's, not a disagreement.
        if not root or key in invalid:
            continue
        # The link and library path count only when they lead to a toolkit install.
        if key in ("cuda_home", "cuda_path") or root in roots:
            named[label] = root
    if len(set(named.values())) < 2:
        return None
    active = facts.get("cuda.active") or {}
    # Fix towards a real install: torch's match or the active one, else the first pointer
    # that names one (every pointer left names one: the others are cuda-home-invalid's).
    real = [root for root in named.values() if root in roots]
    target = _preferred_root(facts) or real[0]
    detail = ", ".join(f"{label} -> {root}" for label, root in named.items())
    return Hit(
        f"CUDA pointers disagree: {detail}",
        evidence={"cuda.pointers": dict(pointers), "cuda.active": active or None},
        fix=_env_fix(str(target)),
    )


# A Windows value ("C:\\Program Files\\...\\CUDA\\v12.4") holds a ':' that separates nothing.
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


def path_list(value: str) -> bool:
    """A CUDA_HOME/CUDA_PATH written like a search path ("/usr/local/cuda:", ":/a:/b"):
    torch.utils.cpp_extension and CMake take the whole value as one folder."""
    return ";" in value or (":" in value and not _DRIVE.match(value))


def _is_abs(root: Any) -> bool:
    """A folder named in full: /usr/local/cuda-12.4, C:\\Program Files\\... (not a report's placeholder)."""
    return str(root or "").startswith("/") or _windows_root(root)


def _invalid_cuda_vars(pointers: dict[str, Any], toolkits: list[dict[str, Any]] | None) -> list[tuple[str, str, str]]:
    """(pointer key, variable, why) for CUDA_HOME/CUDA_PATH values no build can use: a path
    list, or (when the installed toolkits are known) a folder with no toolkit nvcc."""
    with_nvcc = {tk.get("root") for tk in _with_nvcc(toolkits or [])}
    # A report shows an nvcc without its folder: any folder may be that toolkit's, so only a
    # path list is judged. Likewise a folder whose bin/ holds the nvcc first on PATH.
    unplaced = any(not _is_abs(root) for root in with_nvcc)
    out = []
    for key, var in (("cuda_home", "CUDA_HOME"), ("cuda_path", "CUDA_PATH")):
        root = pointers.get(key)
        if not root or root in with_nvcc:
            continue
        if path_list(str(root)):
            out.append((key, var, f"{var}={root} is a path list, not one folder: builds run {posixpath.join(str(root), 'bin/nvcc')}, which does not exist"))
        elif toolkits is not None and not unplaced and root != pointers.get("path_nvcc"):
            out.append((key, var, f"{var}={root} has no bin/nvcc (no CUDA toolkit with a compiler is installed there)"))
    return out


@rule("cuda-home-invalid", needs=("cuda.pointers",), optional=("cuda.toolkits", "torch.cuda", "cuda.active"))
def cuda_home_invalid(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads CUDA_HOME and CUDA_PATH of the inspected environment and fires when one holds
        several folders (a ':'- or ';'-separated list, a trailing ':') or, with the installed
        toolkits known, names a folder that has no bin/nvcc.

    Why is this bad?
        torch.utils.cpp_extension, setup.py builds and CMake's FindCUDA take CUDA_HOME (else
        CUDA_PATH) as the one toolkit folder and run CUDA_HOME/bin/nvcc before any other nvcc:
        `export CUDA_HOME=/usr/local/cuda:$CUDA_HOME` makes every extension build fail with
        "unable to execute '/usr/local/cuda:/bin/nvcc': No such file or directory"
        (facebookresearch/maskrcnn-benchmark#132), while `nvcc --version` on PATH still works.

    Example
            $ echo $CUDA_HOME
            /usr/local/cuda:
            error: command '/usr/local/cuda:/bin/nvcc' failed with exit status 1

    Fix
        Set CUDA_HOME to the one toolkit folder (the one holding bin/nvcc), e.g.
            export CUDA_HOME=/usr/local/cuda-12.4
        Only PATH and LD_LIBRARY_PATH are lists.
    """
    pointers = facts["cuda.pointers"] or {}
    toolkits = facts.get("cuda.toolkits")
    bad = _invalid_cuda_vars(pointers, toolkits if isinstance(toolkits, list) else None)
    if not bad:
        return None
    # Towards a toolkit with nvcc: torch's match or the active one, else the first installed.
    with_nvcc = [str(tk["root"]) for tk in _with_nvcc(toolkits if isinstance(toolkits, list) else [])]
    preferred = _preferred_root(facts) if with_nvcc else None
    target = preferred if preferred in with_nvcc else (with_nvcc[0] if with_nvcc else None)
    whys = "; ".join(why for _, _, why in bad)
    if target:
        fix = _env_fix(str(target))
    else:
        fix = FixRef(commands=("ls -d /usr/local/cuda*/bin/nvcc   # the toolkit folders; CUDA_HOME is the one before /bin/nvcc",),
                     note="set CUDA_HOME (and CUDA_PATH, if set) to one toolkit folder, e.g. export CUDA_HOME=/usr/local/cuda-12.4; only PATH and LD_LIBRARY_PATH are lists")
    return Hit(
        f"{whys}; torch extensions and CMake builds fail to find nvcc",
        evidence={"cuda.pointers": dict(pointers), "invalid": [var for _, var, _ in bad]},
        fix=fix,
    )


@rule("torch-toolkit-mismatch", needs=("torch.cuda", "cuda.active"), optional=("cuda.toolkits", "torch.version", "report.errors"))
def torch_toolkit_mismatch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the CUDA version torch was built for (torch.version.cuda) with the active
        toolkit's. Error on a different major, warning on a different minor (an error when
        a pasted apex build refused it: apex's setup.py checks the minor version too).

    Why is this bad?
        torch.utils.cpp_extension checks this before every extension build. A major
        difference stops it: "RuntimeError: The detected CUDA version (12.4) mismatches
        the version that was used to compile PyTorch (13.0). Please make sure to use the
        same CUDA versions." A minor difference only warns ("has a minor version mismatch
        ... Most likely this shouldn't be a problem"), but the extension then links a
        runtime torch does not ship.

    Example
        torch 2.14.1+cu130 with CUDA_HOME=/usr/local/cuda-12.4.

    Fix
        Point CUDA_HOME at an installed toolkit of torch's CUDA (recipe env), or install
        one (recipe cuda-toolkit):
            fwdoctor fix torch-toolkit-mismatch
            export CUDA_HOME=/usr/local/cuda-13.0
    """
    torch_cuda = facts["torch.cuda"]
    if not torch_cuda:
        return None
    found = _active_version(facts)
    if found is None:
        return None
    active, version = found
    want, have = _xy(torch_cuda), _xy(version)
    if want == have:
        return None
    major_differs = _major(want) != _major(have)
    matching = [tk for tk in _with_nvcc(facts.get("cuda.toolkits") or []) if tk.get("version") and _xy(tk["version"]) == want]
    if matching:
        root = str(matching[0]["root"])
        fix = FixRef(recipe="env", options={"cuda_home": root}, commands=_env_commands(root))
    else:
        fix = _toolkit_fix(want)
    torch_version = f"torch {facts.get('torch.version')}" if facts.get("torch.version") else "torch"
    # a pasted apex build that raised: apex's setup.py refuses a minor difference too (errors.yaml)
    refused = [e for e in facts.get("report.errors") or [] if e.get("kind") == "apex-cuda-version-mismatch"]
    minor = " (minor difference: apex's setup.py refuses it, torch.utils.cpp_extension only warns)" if refused else " (minor difference: extensions build with a warning)"
    return Hit(
        f"{torch_version} is built for CUDA {want} but the active toolkit {active.get('root')} ({active.get('why')}) is CUDA {have}"
        + ("" if major_differs else minor),
        evidence={"torch.cuda": torch_cuda, "cuda.active": active},
        fix=fix,
        severity=None if major_differs or refused else Severity.WARNING,
    )


@rule("host-compiler-unsupported", needs=("cuda.active", "compilers.gcc_default"), optional=("cuda.toolkits", "compilers.gcc_installed", "compilers.nvcc_host"))
def host_compiler_unsupported(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the host compiler the active nvcc runs (compilers.nvcc_host: -ccbin in
        NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS, NVCC_CCBIN, else gcc on PATH as nvcc.profile
        extends it, through Debian's gcc wrapper; the default gcc when that is not known)
        with the newest gcc the active nvcc accepts: the `#if __GNUC__ > N` check in its
        crt/host_config.h (the knowledge base when the header cannot be read). Also fires
        when nvcc finds no host compiler at all (Debian's wrapper with none of the g++-N it
        accepts installed).

    Why is this bad?
        nvcc stops before compiling anything: "#error -- unsupported GNU version! gcc
        versions later than 12 are not supported! The nvcc flag
        '-allow-unsupported-compiler' can be used to override this version check".
        Overriding it usually ends in libstdc++ header errors instead.

    Example
        Ubuntu 24.04 (gcc 13) with CUDA 12.2 (accepts gcc <= 12).

    Fix
        Build with an older gcc (torch extensions pass $CC to nvcc as -ccbin; CMake reads
        CUDAHOSTCXX), or use a newer toolkit:
            sudo apt-get install gcc-12 g++-12
            export CC=/usr/bin/gcc-12 CXX=/usr/bin/g++-12 CUDAHOSTCXX=/usr/bin/g++-12
    """
    gcc = facts["compilers.gcc_default"]
    nvcc_host = facts.get("compilers.nvcc_host")
    found = _active_version(facts)
    if found is None:
        return None
    if "compilers.nvcc_host" in facts and not facts.known("compilers.nvcc_host"):
        # Probed but not established (a -ccbin compiler of unknown version): the default
        # gcc is not what nvcc runs, so judging it would be a guess.
        raise NotCheckable(f"the compiler nvcc uses is unknown: {facts.why('compilers.nvcc_host')}")
    active, version = found
    if nvcc_host and nvcc_host.get("path") is None:
        return _no_host_compiler(nvcc_host, active, version)
    via = ""
    if nvcc_host:
        if nvcc_host.get("via") != "gcc on PATH":
            via = f", which nvcc uses via {nvcc_host.get('via')}"
        gcc = {"path": nvcc_host["path"], "version": nvcc_host["version"]}
    if not gcc:
        return None
    entry = next((tk for tk in facts.get("cuda.toolkits") or [] if tk.get("root") == active.get("root")), None)
    limit = entry.get("host_gcc_max") if entry else None
    where = f"{active.get('root')}'s crt/host_config.h"
    header = str(entry.get("host_config") or "") if entry else ""
    if header and not header.startswith(f"{active.get('root')}/"):
        where = header  # a distribution's headers live outside the root (Debian: /usr/include)
    if not limit:
        try:
            limit = kb.cuda.host_gcc_max(version)
        except ValueError as exc:
            raise NotCheckable(str(exc)) from None
        where = "the knowledge base"
    if not limit:
        raise NotCheckable(f"no data for CUDA {_xy(version)}: no readable crt/host_config.h and no knowledge-base row")
    try:
        gcc_major = Version(str(gcc["version"])).major
    except (InvalidVersion, KeyError, TypeError):
        raise NotCheckable(f"cannot read the gcc version {gcc!r}") from None
    if gcc_major <= int(limit):
        return None
    good = [g for g in facts.get("compilers.gcc_installed") or [] if _gcc_major(g) is not None and _gcc_major(g) <= int(limit)]
    if good:
        best = max(good, key=lambda g: _gcc_major(g) or 0)
        cc = str(best["path"])
        # /usr/bin/x86_64-linux-gnu-gcc-12 -> its g++ beside it; only the file name changes
        # (a folder such as /opt/gcc-12/bin keeps its name).
        cxx = posixpath.join(posixpath.dirname(cc), posixpath.basename(cc).replace("gcc", "g++"))
        commands = (f"export CC={sh(cc)} CXX={sh(cxx)} CUDAHOSTCXX={sh(cxx)}",) + _ccbin_override(nvcc_host, cc)
        fix = FixRef(recipe="env", options={"cuda_home": active.get("root")}, commands=commands, note=f"{cc} ({best.get('version')}) is installed and accepted")
    else:
        commands = (f"sudo apt-get install {sh(f'gcc-{limit}')} {sh(f'g++-{limit}')}", f"export CC={sh(f'/usr/bin/gcc-{limit}')} CXX={sh(f'/usr/bin/g++-{limit}')} CUDAHOSTCXX={sh(f'/usr/bin/g++-{limit}')}") + _ccbin_override(nvcc_host, f"/usr/bin/gcc-{limit}")
        fix = FixRef(recipe="env", options={"cuda_home": active.get("root")}, commands=commands, note="or install a newer CUDA toolkit (recipe cuda-toolkit)")
    return Hit(
        f"gcc {gcc['version']} ({gcc['path']}{via}) is newer than CUDA {_xy(version)}'s nvcc accepts (gcc <= {limit}, per {where})",
        evidence={"compilers.gcc_default": gcc, "compilers.nvcc_host": nvcc_host, "cuda.active": active, "host_gcc_max": str(limit)},
        fix=fix,
    )


def _ccbin_override(nvcc_host: dict[str, Any] | None, cc: str) -> tuple[str, ...]:
    """The line that changes the variable which made nvcc pick its compiler, if one did."""
    via = str((nvcc_host or {}).get("via") or "")
    for var in ("NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS"):
        if via == f"-ccbin in {var}":
            return (f"export {var}={sh('-ccbin ' + str(cc))}",)
    return (f"export NVCC_CCBIN={sh(cc)}",) if via == "NVCC_CCBIN" else ()


def _no_host_compiler(nvcc_host: dict[str, Any], active: dict[str, Any], version: str) -> Hit:
    """nvcc finds no host compiler: Debian's wrapper without any g++-N it accepts, or a
    -ccbin / NVCC_CCBIN naming nothing."""
    tries = str(nvcc_host.get("tries") or "")
    first = tries.split(", ")[0] if tries else ""
    if first.startswith("g++-"):
        major = first.removeprefix("g++-")
        commands: tuple[str, ...] = (f"sudo apt-get install {sh('g++-' + major)}",)
        note = f"{nvcc_host.get('wrapper')} runs the first of {tries} that is installed"
    else:
        commands, note = (), "point -ccbin / NVCC_CCBIN at an installed gcc the toolkit accepts"
    return Hit(
        f"nvcc of CUDA {_xy(version)} ({active.get('root')}) finds no host compiler: {nvcc_host.get('via')}",
        evidence={"compilers.nvcc_host": nvcc_host, "cuda.active": active},
        fix=FixRef(recipe="env", options={"cuda_home": active.get("root")}, commands=commands, note=note),
    )


@rule("toolkit-version-conflict", needs=("cuda.toolkits",), optional=("cuda.active",))
def toolkit_version_conflict(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        Reads every version source a toolkit install has (version.json, version.txt, the
        nvcc wheel's dist-info, conda-meta records, the dpkg record of the package that
        owns it, `nvcc --version` on a live host, cuda.h CUDA_VERSION) and fires when two
        of them name different major.minor releases.

    Why is this bad?
        The install is a mix of two releases: headers from one toolkit over another's
        nvcc (a tarball copied over a package, a half-finished upgrade, a conda env that
        pins cuda-version 12.4 beside a cuda-nvcc 12.6). Builds then compile against
        headers the runtime does not match ("undefined symbol" at load time, or cuda.h
        and libcuda disagreeing), and every other check here trusts one version of it.

    Example
        /usr/local/cuda-12.4/version.json says 12.4.1 while include/cuda.h defines
        CUDA_VERSION 13000.

    Fix
        Reinstall the toolkit so all its files come from one release (recipe
        cuda-toolkit), or remove the stray copy:
            sudo apt-get install --reinstall cuda-toolkit-12-4
    """
    hits = []
    for tk in facts["cuda.toolkits"] or []:
        if not tk.get("versions_disagree"):
            continue
        versions = tk.get("versions") or {}
        listing = ", ".join(f"{source} {version}" for source, version in versions.items())
        chosen = f"{tk.get('version')} (from {tk.get('version_source')})"
        hits.append(
            Hit(
                f"the toolkit at {tk.get('root')} names different releases: {listing}; the checks here use {chosen}",
                evidence={"root": tk.get("root"), "versions": versions},
                fix=_toolkit_fix(_xy(str(tk["version"])), note="reinstall it so every file comes from one release") if tk.get("version") else FixRef(note="reinstall the toolkit so every file comes from one release"),
            )
        )
    return hits or None


def _gcc_major(entry: dict[str, Any]) -> int | None:
    v = parse_version(entry.get("version"))
    return None if v is None else v.major


@rule("driver-too-old-for-toolkit", needs=("driver.version", "cuda.active"), optional=("cuda.toolkits",))
def driver_too_old_for_toolkit(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the loaded driver with what the active toolkit's programs need: error
        below the CUDA major's minor-version-compatibility floor (11.x 450.80.02, 12.x
        525.60.13, 13.x 580.65.06); warning between the floor and the driver that toolkit
        release ships for (Table 3), where only minor-version compatibility holds.

    Why is this bad?
        Below the floor nothing built by this nvcc runs: "CUDA driver version is
        insufficient for CUDA runtime version" (cudaErrorInsufficientDriver). With only
        minor-version compatibility programs run, but PTX compiled by the newer nvcc cannot
        be JIT-compiled by the older driver ("the provided PTX was compiled with an
        unsupported toolchain"), and some newer APIs return cudaErrorCallRequiresNewerDriver.

    Example
        Driver 535.104.05 with CUDA 13.0 (floor 580.65.06): error. Driver 580.65.06 with
        CUDA 13.2 (Table 3: 595.45.04): warning.

    Fix
        Upgrade the driver, or use a toolkit this driver fully supports (recipe
        cuda-toolkit, version from the knowledge base).
    """
    driver = facts["driver.version"]
    found = _active_version(facts, needs_nvcc=False)
    if not driver or found is None:
        return None  # no driver loaded: driver-missing / no-gpu say so
    active, version = found
    xy = _xy(version)
    try:
        floor = kb.cuda.driver_floor(version)
        full = kb.cuda.toolkit_driver(version)
        have = Version(str(driver))
        newest = kb.cuda.newest_cuda_for_driver(str(driver))
    except (ValueError, InvalidVersion) as exc:
        raise NotCheckable(str(exc)) from None
    if floor is None and full is None:
        raise NotCheckable(f"no data for CUDA {xy}: neither a minor-version floor nor a Table 3 driver")
    upgrade = f"upgrade the driver to >= {full or floor} for CUDA {xy}"
    if newest:
        fix = _toolkit_fix(newest, note=f"driver {driver} runs CUDA <= {newest}: use that toolkit, or {upgrade}")
    else:
        fix = FixRef(note=upgrade[0].upper() + upgrade[1:])
    evidence = {"driver.version": driver, "cuda.active": active, "driver_floor": floor, "toolkit_driver": full}
    hard = floor if floor is not None else full
    if have < Version(hard):
        return Hit(
            f"driver {driver} is older than CUDA {xy} needs (>= {hard}); programs built by {active.get('root')}'s nvcc fail with 'CUDA driver version is insufficient'",
            evidence=evidence,
            fix=fix,
        )
    if full is None:
        raise NotCheckable(f"driver {driver} meets CUDA {_major(xy)}.x's floor {floor}; no data on the driver CUDA {xy} ships for, so full compatibility is not checked")
    if have < Version(full):
        return Hit(
            f"driver {driver} runs CUDA {xy} only by minor-version compatibility (full support needs >= {full}); newer PTX will not JIT",
            evidence=evidence,
            fix=fix,
            severity=Severity.WARNING,
        )
    return None


@rule("gpu-arch-unsupported-by-toolkit", needs=("gpus.list", "cuda.active"), optional=("pci.nvidia_gpus", "cuda.toolkits"))
def gpu_arch_unsupported_by_toolkit(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        Checks each GPU's compute capability against the architectures the active nvcc
        can compile for: too new for it (sm_86 needs CUDA 11.1, sm_90 11.8, sm_120 12.8)
        or removed from it (Kepler sm_35/37 in 12.0; Maxwell, Pascal, Volta sm_50-72 in
        13.0).

    Why is this bad?
        Building for the GPU fails: "nvcc fatal : Unsupported gpu architecture
        'compute_70'"; torch extensions built with TORCH_CUDA_ARCH_LIST for this GPU stop
        the same way.

    Example
        A Tesla V100 (7.0) with CUDA 13.0; an RTX 3090 (8.6) with CUDA 11.0.

    Fix
        Use a toolkit that supports the GPU (recipe cuda-toolkit with the version given):
            fwdoctor fix gpu-arch-unsupported-by-toolkit
    """
    gpus = facts["gpus.list"] or []
    found = _active_version(facts)
    if not gpus or found is None:
        return None
    active, version = found
    xy = _xy(version)
    by_cc: dict[str, list[dict[str, Any]]] = {}
    pci = facts.get("pci.nvidia_gpus") or []
    no_cc: list[str] = []
    for gpu in gpus:
        # NVML reports the CC; the /proc and PCI fallbacks do not, so look the model up.
        cc = gpu.get("cc") or kb.gpus.cc_for_gpu(gpu, pci)
        if cc:
            by_cc.setdefault(str(cc), []).append(gpu)
        else:
            no_cc.append(str(gpu.get("name") or f"GPU {gpu.get('index', '?')}"))
    if not by_cc:
        names = ", ".join(str(g.get("name")) for g in gpus)
        raise NotCheckable(f"no compute capability known for {names}")
    hits: list[Hit] = []
    # a GPU of unknown capability is not judged: with no other GPU failing, not checked
    unknown: list[str] = [f"{name} (compute capability unknown)" for name in no_cc]
    for cc, group in by_cc.items():
        try:
            supported = kb.cuda.nvcc_supports(version, cc)
            span = kb.cuda.arch_first_last(cc)
        except ValueError as exc:
            unknown.append(f"{cc} ({exc})")
            continue
        if supported is None or span is None:
            unknown.append(cc)
            continue
        if supported:
            continue
        first, last = span
        sm = "sm_" + cc.replace(".", "")
        if Version(xy) < Version(first):
            why, target = f"{sm} needs CUDA >= {first}", first
        else:
            why, target = f"{sm} was last supported in CUDA {last}", str(last)
        names = ", ".join(f"GPU {g.get('index')} {g.get('name')}" for g in group)
        hits.append(
            Hit(
                f"nvcc of CUDA {xy} ({active.get('root')}) cannot compile for {names} (compute capability {cc}): {why}",
                evidence={"gpus": group, "cuda.active": active, "first_cuda": first, "last_cuda": last},
                fix=_toolkit_fix(target),
            )
        )
    if hits:
        return hits
    if unknown:
        raise NotCheckable(f"GPUs not judged against CUDA {xy}'s nvcc: {', '.join(unknown)}" if no_cc else
                           f"no data for CUDA {xy} and compute capability {', '.join(unknown)}")
    return None


RULES: tuple[Rule, ...] = (
    toolkit_missing,
    multiple_toolkits,
    cuda_path_inconsistent,
    cuda_home_invalid,
    torch_toolkit_mismatch,
    host_compiler_unsupported,
    toolkit_version_conflict,
    driver_too_old_for_toolkit,
    gpu_arch_unsupported_by_toolkit,
)
