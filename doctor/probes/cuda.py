"""CUDA toolkit installs, which one is active, and what points where.

Shell equivalents:
    ls -d /usr/local/cuda-* /usr/local/cuda /opt/cuda* /opt/nvidia/*; echo $CUDA_HOME $CUDA_PATH
    cat ROOT/version.json ROOT/version.txt; grep CUDA_VERSION ROOT/include/cuda.h
    grep '__GNUC__ >' ROOT/include/crt/host_config.h; command -v nvcc; nvcc --version

An install is found through any of: /usr/local/cuda-*, the /usr/local/cuda link, /opt/cuda*,
/opt/nvidia/* (HPC SDK included: /opt/nvidia/hpc_sdk/Linux_x86_64/YY.M/cuda/X.Y, several
per SDK), CUDA_HOME, CUDA_PATH, a conda prefix with bin/nvcc or a conda CUDA runtime
(cudatoolkit, cuda-cudart), a pip nvidia-cuda-nvcc wheel (site-packages/nvidia/cu13 for
CUDA 13, nvidia/cuda_nvcc for cu12), the nvcc first on PATH (a Debian/Ubuntu
/usr/bin/nvcc wrapper followed to /usr/lib/nvidia-cuda-toolkit), and the libcudart on
LD_LIBRARY_PATH (environment modules such as Lmod and Spack reach a toolkit only through
these variables). Installs are deduplicated by their resolved root.

Every version source an install has is read into "versions": version.json (11.x+),
version.txt (<= 10.2), the nvcc wheel's .dist-info, conda-meta records (cuda-nvcc,
cuda-version, cuda-cudart, cudatoolkit), the dpkg record of the package that owns it
(Debian's nvidia-cuda-toolkit, NVIDIA's cuda-nvcc-X-Y), `nvcc --version` (live host only)
and cuda.h CUDA_VERSION; "version" is the first of them in that order, and
"versions_disagree" says when two of them name different major.minor releases. A
distribution's toolkit keeps its headers outside its root (Debian: /usr/include); the
layouts table says where. With --root nothing runs.

"Active" follows torch.utils.cpp_extension._find_cuda_home, the lookup that decides which
nvcc builds torch extensions: CUDA_HOME, else CUDA_PATH, else the nvcc first on PATH, else
/usr/local/cuda.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import Iterable

from fwdoctor.host import Host, UnreadableError
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, Read, probe
from fwdoctor.probes.libscan import dpkg_packages, parse_dpkg_status
from fwdoctor.versions import deb_upstream_version

NAME = "cuda-toolkits"
INCLUDE_DIRS = ("include", "targets/x86_64-linux/include", "targets/sbsa-linux/include", "targets/aarch64-linux/include")
LIB_DIRS = ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib")
# pip wheels: nvidia-cuda-nvcc (CUDA 13, no -cuXX suffix) installs nvidia/cu13/bin/nvcc;
# nvidia-cuda-nvcc-cu12 installs nvidia/cuda_nvcc/... (checked by unpacking both wheels).
PIP_ROOTS = ("nvidia/cu13", "nvidia/cu12", "nvidia/cuda_nvcc")
# A conda env's toolkit: the cuda-nvcc package puts nvcc in $PREFIX/bin.
SITE_GLOBS = (
    ("/usr/local/lib", "python3*", ("dist-packages", "site-packages")),
    ("/usr/lib", "python3*", ("dist-packages", "site-packages")),
    ("/opt/conda/lib", "python3*", ("site-packages",)),
)

_NVCC_RELEASE = re.compile(r"release (\d+)\.(\d+), V(\d+(?:\.\d+)*)")
_VERSION_TXT = re.compile(r"CUDA Version (\d+\.\d+(?:\.\d+)*)")
_CUDA_H = re.compile(r"^\s*#\s*define\s+CUDA_VERSION\s+(\d+)\b", re.MULTILINE)
_GNUC_GUARD = re.compile(r"^\s*#\s*if\s+__GNUC__\s*>\s*(\d+)\b", re.MULTILINE)
_GNUC_MESSAGE = re.compile(r"gcc versions later than (\d+) are not supported")
_JSON_CUDA = re.compile(r'"cuda"\s*:\s*\{[^{}]*?"version"\s*:\s*"([^"]+)"', re.DOTALL)
_DIST_INFO = re.compile(r"^nvidia_cuda_nvcc(?:_cu\d+)?-(\d+(?:\.\d+)+)\.dist-info$")
_CONDA_META = re.compile(r"^cuda-nvcc-(\d+(?:\.\d+)+)-[^-]+\.json$")
_VERSIONISH = re.compile(r"^\d+(?:\.\d+)+$")
# conda-meta records that carry a toolkit's version, most precise first: cuda-nvcc
# (12.x, conda-forge and nvidia channels), cuda-cudart, cuda-version (the 12.x+ metapackage
# every CUDA package pins), cudatoolkit (the 11.x and older single package).
CONDA_TOOLKIT_PACKAGES = ("cuda-nvcc", "cuda-cudart", "cuda-version", "cudatoolkit")
_CONDA_RECORD = re.compile(r"^(cuda-nvcc|cuda-cudart|cuda-version|cudatoolkit)-(\d+(?:\.\d+)*)-[^-]+\.json$")
DPKG_STATUS = "/var/lib/dpkg/status"
DPKG_STATUS_LIMIT = 64 * 1024 * 1024


@dataclass(frozen=True)
class Layout:
    """Where a distribution's packaged toolkit keeps what NVIDIA's installer puts under
    one root. Debian/Ubuntu nvidia-cuda-toolkit (checked on the bookworm package
    11.8.89~11.8.0-5~deb12u1): /usr/bin/nvcc is `exec /usr/lib/nvidia-cuda-toolkit/bin/nvcc`,
    headers come from nvidia-cuda-dev in /usr/include (cuda.h, crt/host_config.h),
    libraries in /usr/lib/x86_64-linux-gnu, and /etc/nvcc.profile (linked from bin/)
    prepends the package's gcc/g++ wrappers to PATH."""

    include_dirs: tuple[str, ...]
    packages: tuple[str, ...]  # dpkg packages whose version is the toolkit's


LAYOUTS: dict[str, Layout] = {
    "/usr/lib/nvidia-cuda-toolkit": Layout(("/usr/include",), ("nvidia-cuda-toolkit", "nvidia-cuda-dev")),
}
# The words of a wrapper script (wrapper_target): one pattern "(/[^\s...]+/bin/nvcc)" re-ran
# from each '/' to the end of its word (a word of 65,000 '/' in an image's file cost n^2).
_WORD = re.compile(r"""[^\s"'`;|&]+""")
# What this probe reads (fwdoctor.image.keep keeps only declared reads): a toolkit can live
# anywhere (/usr/local/cuda-X.Y, a wheel's nvidia/cu13, a conda prefix), hence `**/`. An
# nvcc is only read when it is a wrapper script under 4 KiB.
READS = (
    Read("**/version.json"), Read("**/version.txt"), Read("**/cuda.h"), Read("**/crt/host_config.h"),
    Read("**/bin/nvcc", limit=4096), Read("**/conda-meta/cuda-*.json"), Read("**/conda-meta/cudatoolkit-*.json"),
    Read("/etc/nvcc.profile"), Read("**/bin/nvcc.profile"), Read(DPKG_STATUS, limit=DPKG_STATUS_LIMIT),
    # probes/compilers.py: a `gcc` that nvcc.profile puts first may be Debian's wrapper script
    Read("**/bin/gcc", limit=16 * 1024),
)


# ----------------------------------------------------------------------------- parsers
def parse_version_json(text: str) -> str | None:
    """version.json -> its "cuda" "version" ("11.5.2", "11.8.20220929"); None if absent.

    Falls back to a pattern when the file is not valid JSON (hand-edited or truncated)."""
    value: object = None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("cuda"), dict):
        value = data["cuda"].get("version")
    if not isinstance(value, str):
        match = _JSON_CUDA.search(text)
        value = match.group(1) if match else None
    value = value.strip() if isinstance(value, str) else None
    return value if value and _VERSIONISH.match(value) else None


def parse_version_txt(text: str) -> str | None:
    """version.txt ("CUDA Version 10.0.130") -> "10.0.130"."""
    match = _VERSION_TXT.search(text)
    return match.group(1) if match else None


def parse_cuda_h(text: str) -> str | None:
    """cuda.h `#define CUDA_VERSION 12040` -> "12.4" (major * 1000 + minor * 10)."""
    match = _CUDA_H.search(text)
    if not match:
        return None
    number = int(match.group(1))
    if number < 1000:
        return None
    return f"{number // 1000}.{(number % 1000) // 10}"


def parse_nvcc_version(text: str) -> tuple[str, str] | None:
    """`nvcc --version` -> ("11.8", "11.8.89") from "release 11.8, V11.8.89"."""
    match = _NVCC_RELEASE.search(text)
    if not match:
        return None
    return f"{match.group(1)}.{match.group(2)}", match.group(3)


def parse_host_config(text: str) -> str | None:
    """crt/host_config.h -> the newest gcc major nvcc accepts ("15" from `#if __GNUC__ > 15`).

    The guard is the first `#if __GNUC__ > N` line; the "gcc versions later than N" message
    is the fallback for a header whose guard is formatted otherwise."""
    match = _GNUC_GUARD.search(text) or _GNUC_MESSAGE.search(text)
    return str(int(match.group(1))) if match else None


def parse_dist_info_name(name: str) -> str | None:
    """"nvidia_cuda_nvcc-13.0.88.dist-info" / "nvidia_cuda_nvcc_cu12-12.9.86.dist-info" -> version."""
    match = _DIST_INFO.match(name)
    return match.group(1) if match else None


def parse_conda_meta_name(name: str) -> str | None:
    """conda-meta "cuda-nvcc-12.4.131-0.json" -> "12.4.131"."""
    match = _CONDA_META.match(name)
    return match.group(1) if match else None


def parse_conda_record_name(name: str) -> tuple[str, str] | None:
    """conda-meta "cuda-version-12.4-h3060b56_3.json" -> ("cuda-version", "12.4"),
    "cudatoolkit-11.8.0-h4ba93d1_13.json" -> ("cudatoolkit", "11.8.0")."""
    match = _CONDA_RECORD.match(name)
    return (match.group(1), match.group(2)) if match else None


def dpkg_versions(text: str) -> dict[str, str]:
    """{package: upstream version} of the installed packages in a dpkg status file
    ("nvidia-cuda-toolkit" -> "11.8.89" from "11.8.89~11.8.0-5~deb12u1")."""
    return upstream_versions(parse_dpkg_status(text))


def upstream_versions(packages: list[dict[str, str]]) -> dict[str, str]:
    """dpkg_versions of already parsed packages."""
    found: dict[str, str] = {}
    for package in packages:
        upstream = deb_upstream_version(package["version"])
        if upstream:
            # Debian's CUDA versions put the packaging release after "~": 11.8.89~11.8.0
            found[package["name"]] = upstream.split("~")[0]
    return found


def nvidia_deb_packages(root: str) -> tuple[str, ...]:
    """The dpkg/rpm packages of NVIDIA's repository that own /usr/local/cuda-X.Y:
    cuda-nvcc-X-Y (nvcc's own version, 12.4.131), then cuda-cudart-X-Y, cuda-toolkit-X-Y."""
    match = re.fullmatch(r"cuda-(\d+)\.(\d+)", posixpath.basename(root))
    if not match:
        return ()
    xy = f"{match.group(1)}-{match.group(2)}"
    return (f"cuda-nvcc-{xy}", f"cuda-cudart-{xy}", f"cuda-toolkit-{xy}")


def versions_disagree(versions: dict[str, str]) -> bool:
    """Whether two sources name different major.minor releases (11.8.89 and 11.8 agree)."""
    releases = set()
    for value in versions.values():
        parts = value.split(".")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            releases.add((int(parts[0]), int(parts[1])))
    return len(releases) > 1


def root_of_libdir(libdir: str) -> str:
    """The toolkit root a library folder belongs to: ROOT/lib64, ROOT/lib,
    ROOT/targets/<triplet>/lib -> ROOT; anything else is its own root."""
    libdir = posixpath.normpath(libdir)
    parent, base = posixpath.split(libdir)
    if base in ("lib", "lib64"):
        grand, mid = posixpath.split(parent)
        if posixpath.basename(grand) == "targets" and mid:
            return posixpath.dirname(grand) or "/"
        return parent or "/"
    return libdir


# ----------------------------------------------------------------------------- discovery
@dataclass
class _Install:
    root: str
    found_via: list[str] = field(default_factory=list)
    site_packages: str | None = None  # for a pip wheel: where its .dist-info lives


class _Reader:
    """File reads that turn an unreadable file into a ProbeFailure instead of an abort."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.failures: list[ProbeFailure] = []
        self._dpkg: dict[str, str] | None = None

    def dpkg(self) -> dict[str, str]:
        """Installed dpkg packages {name: upstream version}, read once."""
        if self._dpkg is None:
            packages: list[dict[str, str]] = []
            if self.host.is_file(DPKG_STATUS):
                # One parse per host, shared with the cuDNN and NCCL probes.
                packages, error = dpkg_packages(self.host)
                if error is not None:
                    self.failures.append(ProbeFailure(NAME, f"cannot read {error.path}: {error.reason}"))
            self._dpkg = upstream_versions(packages)
        return self._dpkg

    def text(self, path: str) -> str | None:
        try:
            return self.host.read_text(path)
        except UnreadableError as exc:
            self.failures.append(ProbeFailure(NAME, f"cannot read {exc.path}: {exc.reason}"))
            return None


def looks_like_toolkit(host: Host, root: str) -> bool:
    """A folder holding nvcc, a version file, the runtime headers or libcudart."""
    if host.is_file(posixpath.join(root, "bin/nvcc")):
        return True
    for name in ("version.json", "version.txt"):
        if host.is_file(posixpath.join(root, name)):
            return True
    for inc in INCLUDE_DIRS:
        if host.is_file(posixpath.join(root, inc, "cuda_runtime_api.h")):
            return True
    return any(host.glob(posixpath.join(root, lib), "libcudart.so*") for lib in LIB_DIRS)


def site_packages_dirs(host: Host) -> list[str]:
    """Where pip wheels may live: the active venv/conda env, the interpreters on PATH, the
    system and user site folders. Host-view, existing, in search order."""
    prefixes: list[str] = []
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if host.env.get(var):
            prefixes.append(host.env[var])
    for name in ("python3", "python"):
        exe = host.which(name)
        if exe:
            prefixes.append(posixpath.dirname(posixpath.dirname(exe)))  # a venv: its own prefix
            prefixes.append(posixpath.dirname(posixpath.dirname(host.resolve(exe))))
    if host.env.get("HOME"):
        prefixes.append(posixpath.join(host.env["HOME"], ".local"))
    found: list[str] = []
    for prefix in dict.fromkeys(prefixes):  # python and python3 usually share one prefix
        for pydir in host.glob(posixpath.join(prefix, "lib"), "python3*"):
            for leaf in ("site-packages", "dist-packages"):
                candidate = posixpath.join(pydir, leaf)
                if host.is_dir(candidate) and candidate not in found:
                    found.append(candidate)
    for base, pattern, leaves in SITE_GLOBS:
        for pydir in host.glob(base, pattern):
            for leaf in leaves:
                candidate = posixpath.join(pydir, leaf)
                if host.is_dir(candidate) and candidate not in found:
                    found.append(candidate)
    if host.is_dir("/usr/lib/python3/dist-packages") and "/usr/lib/python3/dist-packages" not in found:
        found.append("/usr/lib/python3/dist-packages")
    return found


def wrapper_target(text: str) -> str | None:
    """The nvcc a small shell wrapper execs ("#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc "$@""),
    None when `text` is not such a wrapper."""
    if not text.startswith("#!"):
        return None
    for word in _WORD.finditer(text):
        # "/x/bin/nvcc" ended by a quote, a blank, ';' or the end (not '`', '|', '&')
        if text[word.end(): word.end() + 1] in ("", '"', "'", ";") or text[word.end()].isspace():
            path = word.group()[word.group().find("/"):] if "/" in word.group() else ""
            if path.endswith("/bin/nvcc") and len(path) > len("/bin/nvcc"):
                return path
    return None


def real_nvcc(host: Host, nvcc: str) -> str:
    """`nvcc` with symlinks resolved and one level of shell wrapper followed (distribution
    packages and wheel-built hosts put a `exec /real/bin/nvcc "$@"` script on PATH)."""
    real = host.resolve(nvcc)
    try:
        st = host.stat(real)
        head = host.read_text(real, limit=4096) if st is not None and st.st_size < 4096 else None
    except UnreadableError:
        head = None
    target = wrapper_target(head) if head else None
    if target and target != real and host.is_executable(target):
        return host.resolve(target)
    return real


def canonical_root(host: Host, root: str) -> str:
    """`root` resolved; a folder whose bin/nvcc is a distribution's wrapper counts as the
    packaged toolkit it runs (CUDA_HOME=/usr on Debian -> /usr/lib/nvidia-cuda-toolkit,
    the same install, not a second one)."""
    real = host.resolve(root)
    nvcc = posixpath.join(real, "bin/nvcc")
    if real not in LAYOUTS and host.is_file(nvcc):
        target = posixpath.dirname(posixpath.dirname(real_nvcc(host, nvcc)))
        if target in LAYOUTS:
            return target
    return real


def path_nvcc_root(host: Host) -> tuple[str, str] | None:
    """(nvcc first on PATH, the toolkit root its real binary lives in)."""
    nvcc = host.which("nvcc")
    if nvcc is None:
        return None
    return nvcc, posixpath.dirname(posixpath.dirname(real_nvcc(host, nvcc)))


def ld_cudart_root(host: Host) -> tuple[str, str] | None:
    """(the first LD_LIBRARY_PATH folder with a libcudart, the toolkit root it belongs to)."""
    for entry in host.path_list("LD_LIBRARY_PATH"):
        if host.glob(entry, "libcudart.so*"):
            return entry, root_of_libdir(host.resolve(entry))
    return None


def discover(host: Host, failures: list[ProbeFailure] | None = None, conda_prefix: str | None = None) -> list[_Install]:
    """Every toolkit install, deduplicated by resolved root, in discovery order. A place
    that cannot be looked at (a symlink loop) is a failure in `failures`, and skipped."""
    by_root: dict[str, _Install] = {}

    def add(root: str, via: str, site_packages: str | None = None, check: bool = True) -> None:
        try:
            _add(root, via, site_packages, check)
        except UnreadableError as exc:
            if failures is not None:
                failures.append(ProbeFailure(NAME, f"cannot look at {root} ({via}): {exc.path}: {exc.reason}"))

    def _add(root: str, via: str, site_packages: str | None, check: bool) -> None:
        if not root or not host.is_dir(root):
            return
        if check and not looks_like_toolkit(host, root):
            return
        real = canonical_root(host, root)
        install = by_root.setdefault(real, _Install(real))
        if via not in install.found_via:
            install.found_via.append(via)
        if site_packages and not install.site_packages:
            install.site_packages = site_packages

    try:
        found_path = path_nvcc_root(host)
    except UnreadableError as exc:
        found_path = None
        if failures is not None:
            failures.append(ProbeFailure(NAME, f"cannot follow the nvcc on PATH: {exc.path}: {exc.reason}"))
    if found_path:
        add(found_path[1], "nvcc on PATH")
    for var in ("CUDA_HOME", "CUDA_PATH"):
        add(host.env.get(var, ""), var)
    if host.exists("/usr/local/cuda"):
        add("/usr/local/cuda", "/usr/local/cuda link" if host.is_symlink("/usr/local/cuda") else "/usr/local/cuda")
    for root in host.glob("/usr/local", "cuda-*"):
        add(root, "/usr/local/cuda-*")
    for root in host.glob("/opt", "cuda*"):
        add(root, "/opt/cuda*")
    for root in host.glob("/opt/nvidia", "*"):
        add(root, "/opt/nvidia/*")
    # NVIDIA HPC SDK: /opt/nvidia/hpc_sdk/Linux_x86_64/<release>/cuda/<X.Y>
    for arch_dir in host.glob("/opt/nvidia/hpc_sdk", "Linux_*"):
        for release in host.glob(arch_dir, "*"):
            for root in host.glob(posixpath.join(release, "cuda"), "[0-9]*"):
                add(root, "/opt/nvidia/*")
    # The active conda env, and the inspected interpreter's (conda.prefix) when nothing
    # activated it: conda-forge's cuda-nvcc puts nvcc in PREFIX/bin, headers and libraries
    # in PREFIX/targets/<arch>-linux, cicc in PREFIX/nvvm.
    active_conda = host.env.get("CONDA_PREFIX", "")
    interp_conda = conda_prefix if conda_prefix and posixpath.normpath(conda_prefix) != posixpath.normpath(active_conda or "/") else ""
    for conda, via in ((active_conda, "CONDA_PREFIX"), (interp_conda, "conda env of the interpreter")):
        if conda and (host.is_file(posixpath.join(conda, "bin/nvcc")) or conda_toolkit_records(host, conda)):
            add(conda, via)
    for site in site_packages_dirs(host):
        for sub in PIP_ROOTS:
            root = posixpath.join(site, sub)
            if host.is_file(posixpath.join(root, "bin/nvcc")):
                add(root, "pip nvidia-cuda-nvcc", site_packages=site, check=False)
    try:
        found_ld = ld_cudart_root(host)
    except UnreadableError:
        found_ld = None  # reported by pointers()
    if found_ld:
        add(found_ld[1], "LD_LIBRARY_PATH")
    return list(by_root.values())


def conda_toolkit_records(host: Host, prefix: str) -> dict[str, str]:
    """{package: version} of the CUDA toolkit records in PREFIX/conda-meta."""
    found: dict[str, str] = {}
    for name in sorted(host.listdir(posixpath.join(prefix, "conda-meta"))):
        parsed = parse_conda_record_name(name)
        if parsed and parsed[0] not in found:
            found[parsed[0]] = parsed[1]
    return {p: found[p] for p in CONDA_TOOLKIT_PACKAGES if p in found}


# ----------------------------------------------------------------------------- one install
def _first_file(host: Host, root: str, relatives: Iterable[str]) -> str | None:
    for rel in relatives:
        path = posixpath.join(root, rel)
        if host.is_file(path):
            return path
    return None


def describe(host: Host, install: _Install, reader: _Reader) -> dict:
    """The cuda.toolkits entry for one install (see doctor/FACTS.md)."""
    root = install.root
    nvcc = posixpath.join(root, "bin/nvcc")
    nvcc = nvcc if host.is_executable(nvcc) else None
    layout = LAYOUTS.get(root)
    include_dirs = [posixpath.join(root, d) for d in INCLUDE_DIRS] + list(layout.include_dirs if layout else ())
    versions: dict[str, str] = {}  # source -> version, in the order "version" prefers them

    if host.is_file(posixpath.join(root, "version.json")):
        text = reader.text(posixpath.join(root, "version.json"))
        found = parse_version_json(text) if text else None
        if found:
            versions["version.json"] = found
    if host.is_file(posixpath.join(root, "version.txt")):
        text = reader.text(posixpath.join(root, "version.txt"))
        found = parse_version_txt(text) if text else None
        if found:
            versions["version.txt"] = found
    # A wheel's .dist-info sits beside the `nvidia` folder (site-packages, or the PREFIX
    # of `pip install --target PREFIX`); a wheel-built /usr/local/cuda-X.Y here keeps
    # them in ROOT/dist-info.
    beside = posixpath.dirname(posixpath.dirname(root)) if posixpath.basename(posixpath.dirname(root)) == "nvidia" else None
    for folder in filter(None, (install.site_packages, beside, posixpath.join(root, "dist-info"))):
        found = next(filter(None, (parse_dist_info_name(name) for name in host.listdir(folder))), None)
        if found:
            versions["dist-info"] = found
            break
    for package, found in conda_toolkit_records(host, root).items():
        versions[f"conda-meta {package}"] = found
    packages = (layout.packages if layout else ()) + nvidia_deb_packages(root)
    if packages:
        installed = reader.dpkg()
        owner = next((p for p in packages if p in installed), None)
        if owner:
            versions[f"dpkg {owner}"] = installed[owner]

    nvcc_release = None
    if nvcc and host.live:
        result = host.run_version([nvcc, "--version"])
        if result is not None and result.ok:
            parsed = parse_nvcc_version(result.stdout)
            if parsed:
                nvcc_release = parsed[0]
                versions["nvcc"] = parsed[1]
            else:
                first = (result.stdout.strip().splitlines() or [""])[-1]
                reader.failures.append(ProbeFailure(NAME, f"{nvcc} --version: unparseable output: {first[:200]!r}"))
        elif result is not None:
            reader.failures.append(ProbeFailure(NAME, result.describe_failure()))

    header = _first_file(host, "/", (posixpath.join(d, "cuda.h") for d in include_dirs))
    text = reader.text(header) if header else None
    found = parse_cuda_h(text) if text else None
    if found:
        versions["cuda.h"] = found

    gcc_max = None
    host_config = _first_file(host, "/", (posixpath.join(d, "crt/host_config.h") for d in include_dirs))
    if host_config:
        text = reader.text(host_config)
        gcc_max = parse_host_config(text) if text else None

    source = next(iter(versions), None)
    return {
        "root": root,
        "version": versions[source] if source else None,
        "version_source": _source_kind(source) if source else None,
        "versions": versions,
        "versions_disagree": versions_disagree(versions),
        "nvcc": nvcc,
        "nvcc_release": nvcc_release,
        "host_gcc_max": gcc_max,
        "host_config": host_config if gcc_max else None,
        "found_via": list(install.found_via),
    }


def _source_kind(source: str) -> str:
    """"conda-meta cuda-nvcc" -> "conda-meta", "dpkg nvidia-cuda-toolkit" -> "dpkg"."""
    return source.split(" ", 1)[0]


# ----------------------------------------------------------------------------- the probe
def pointers(host: Host) -> dict[str, str | None]:
    """The toolkit root each lookup points at (resolved), None where it points nowhere."""
    found_path = path_nvcc_root(host)
    found_ld = ld_cudart_root(host)

    def env_root(var: str) -> str | None:
        value = host.env.get(var, "")
        return canonical_root(host, value) if value else None

    return {
        "path_nvcc": found_path[1] if found_path else None,
        "cuda_home": env_root("CUDA_HOME"),
        "cuda_path": env_root("CUDA_PATH"),
        "usr_local_cuda": host.resolve("/usr/local/cuda") if host.exists("/usr/local/cuda") else None,
        "ld_cudart": found_ld[1] if found_ld else None,
    }


def choose_active(toolkits: list[dict], ptrs: dict[str, str | None]) -> dict | None:
    """The toolkit torch.utils.cpp_extension would build with, and why."""
    for key, why in (("cuda_home", "CUDA_HOME"), ("cuda_path", "CUDA_PATH"), ("path_nvcc", "nvcc first on PATH"), ("usr_local_cuda", "/usr/local/cuda link")):
        root = ptrs.get(key)
        if not root:
            continue
        match = next((t for t in toolkits if t["root"] == root), None)
        if match is None:
            # CUDA_HOME set to a folder with no toolkit: torch still uses it, and fails.
            return {"root": root, "version": None, "why": f"{why} (no toolkit there)"}
        return {"root": root, "version": match["version"], "why": why}
    return None


@probe(NAME, provides=("cuda.toolkits", "cuda.active", "cuda.pointers"))
def cuda_probe(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    reader = _Reader(host)
    toolkits = []
    conda_prefix = facts.get("conda.prefix")
    for install in discover(host, reader.failures, conda_prefix if isinstance(conda_prefix, str) else None):
        try:
            toolkits.append(describe(host, install, reader))
        except UnreadableError as exc:  # a symlink loop inside one install: skip just it
            reader.failures.append(ProbeFailure(NAME, f"cannot read {exc.path} in {install.root}: {exc.reason}"))
    yield Fact("cuda.toolkits", toolkits, source=", ".join(t["root"] for t in toolkits) or "no toolkit found")
    try:
        ptrs = pointers(host)
    except UnreadableError as exc:
        reason = f"cannot follow {exc.path}: {exc.reason}"
        reader.failures.append(ProbeFailure(NAME, reason))
        yield from reader.failures
        yield Fact.unknown("cuda.pointers", reason)
        yield Fact.unknown("cuda.active", reason)
        return
    yield from reader.failures
    yield Fact("cuda.pointers", ptrs, source="PATH, CUDA_HOME, CUDA_PATH, /usr/local/cuda, LD_LIBRARY_PATH")
    active = choose_active(toolkits, ptrs)
    yield Fact("cuda.active", active, source=active["why"] if active else "no CUDA_HOME, CUDA_PATH, nvcc on PATH or /usr/local/cuda")


PROBES: tuple[Probe, ...] = (cuda_probe,)
