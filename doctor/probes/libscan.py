"""Finding cuDNN and NCCL installs on a host: shared by probes/cudnn.py and probes/nccl.py.

Both libraries arrive the same five ways, so one scanner serves both, driven by the
`fwdoctor.libraries.Library` that names their files and packages:

* pip wheels: `site-packages/nvidia/<dir>/{include,lib}` with a dist-info such as
  `nvidia_cudnn_cu13-9.24.0.43.dist-info` (the cu12 and cu13 wheels share that folder);
* Debian packages recorded in /var/lib/dpkg/status (`libcudnn8 8.9.7.29-1+cuda12.2`,
  `libcudnn9-cuda-12`, `libnccl2 2.21.5-1+cuda12.4`), whose files live in /usr/include and
  /usr/lib/<triplet>; the same files without a package record are a "system" install;
* tarballs copied into a CUDA toolkit (`/usr/local/cuda-12.4/include` + `lib64`);
* tarballs unpacked on their own (`/usr/local/cudnn-*`, `/opt/nccl_*`);
* conda prefixes (`conda-meta/cudnn-*.json`, `$CONDA_PREFIX/{include,lib}`).

Everything here observes; nothing judges. Parsers are pure functions over text or bytes
and never raise on garbage (they return None). All file access goes through `Host`, so
the same code reads a live machine or a `--root` tree.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any, Iterable

from fwdoctor import versions
from fwdoctor.host import Host, UnreadableError
from fwdoctor.libraries import Library, deb_cuda_major, pip_cuda_major
from fwdoctor.model import Facts
from fwdoctor.probes.base import Read
from fwdoctor.versions import deb_upstream_version

# The NCCL "NCCL version X.Y.Z+cudaA.B" string sits in .rodata, about 3 MB into the
# 250 MB libnccl.so.2 of nvidia-nccl-cu13 2.30.7 (offset 2911660 on this machine). Scanning
# a bounded prefix in chunks finds it without reading the device code that fills the rest.
EMBEDDED_SCAN_LIMIT = 32 * 1024 * 1024
EMBEDDED_SCAN_CHUNK = 1024 * 1024
DPKG_STATUS = "/var/lib/dpkg/status"
DPKG_STATUS_LIMIT = 64 * 1024 * 1024
HEADER_LIMIT = 256 * 1024  # read_text_quiet's limit: headers and conda-meta records

SYSTEM_LIB_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib/sbsa-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
)
SYSTEM_INCLUDE_DIRS = (
    "/usr/include",
    "/usr/include/x86_64-linux-gnu",
    "/usr/include/aarch64-linux-gnu",
    "/usr/local/include",
)


# ----------------------------------------------------------------------------- parsers
_EMBEDDED_RE = re.compile(rb"NCCL version (\d+\.\d+\.\d+)[^\x00+\s]{0,16}\+cuda(\d+)\.(\d+)")


def parse_nccl_embedded(data: bytes) -> tuple[str, str] | None:
    """("2.26.5", "12.9") from the "NCCL version 2.26.5+cuda12.9" string libnccl carries
    (src/init.cc VERSION_STRING); None when the bytes do not hold it."""
    match = _EMBEDDED_RE.search(data)
    if not match:
        return None
    return match.group(1).decode(), f"{int(match.group(2))}.{int(match.group(3))}"


def parse_dpkg_status(text: str) -> list[dict[str, str]]:
    """Installed packages in a dpkg status file: [{"name", "version"}], in file order.

    Only stanzas whose Status ends in "installed" count: a removed package keeps its
    stanza with "deinstall ok config-files"."""
    packages = []
    for stanza in re.split(r"\n[ \t]*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if not line or line[0] in " \t":
                continue  # continuation lines of Description and friends
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip().lower()] = value.strip()
        name, version, status = fields.get("package"), fields.get("version"), fields.get("status", "")
        if name and version and status.split()[-1:] == ["installed"]:
            packages.append({"name": name, "version": version})
    return packages


def tarball_cuda_major(dirname: str) -> int | None:
    """The CUDA major in an unpacked archive's folder name:
    cudnn-linux-x86_64-9.1.0.70_cuda12-archive -> 12, nccl_2.18.1-1+cuda12.1_x86_64 -> 12."""
    match = re.search(r"(?:_|\+)cuda(\d+)", dirname)
    return int(match.group(1)) if match else None


def conda_cuda_major(record: dict[str, Any]) -> int | None:
    """The CUDA major of a conda-meta record: `cuda-version >=12,<13` or `cudatoolkit 11.8*`
    in depends, else `cuda12` in the build string."""
    for dep in record.get("depends") or []:
        if not isinstance(dep, str):
            continue
        match = re.match(r"^(?:cuda-version|cudatoolkit)\s*[>=~ ]*\s*(\d+)", dep)
        if match:
            return int(match.group(1))
    build = record.get("build")
    match = re.search(r"cuda(\d+)", build) if isinstance(build, str) else None
    return int(match.group(1)) if match else None


def record_version(record: dict[str, Any]) -> str | None:
    """The most precise version an install shows: a full library version (NCCL's embedded
    string, libcudnn.so.9.1.0), else its header's, else a bare library major."""
    library, header = record.get("library_version"), record.get("header_version")
    if library and library.count(".") >= 2:
        return library
    return header or library


# ----------------------------------------------------------------------------- reading
def reads_for(spec: Library) -> tuple[Read, ...]:
    """What find_installs/ld_first read for `spec` (fwdoctor.image.keep keeps only declared
    reads): the dpkg database, the version headers, the conda-meta records, and for NCCL
    the first EMBEDDED_SCAN_LIMIT bytes of the library, no more once the string is seen."""
    reads = [Read(DPKG_STATUS, limit=DPKG_STATUS_LIMIT)]
    reads += [Read("**/" + header, limit=HEADER_LIMIT) for header in spec.headers]
    reads += [Read(f"**/conda-meta/{name}-*.json", limit=HEADER_LIMIT) for name in spec.conda_names]
    if spec.embedded:
        reads.append(Read(f"**/{spec.lib_prefix}*", limit=EMBEDDED_SCAN_LIMIT, until=_EMBEDDED_RE))
    return tuple(reads)


def read_text_quiet(host: Host, path: str, limit: int = HEADER_LIMIT) -> str | None:
    """A file's text, or None when absent or unreadable (an install we cannot read is
    still reported, with the unreadable part left as None)."""
    try:
        return host.read_text(path, limit)
    except (UnreadableError, OSError):
        return None


def scan_embedded(host: Host, path: str, limit: int = EMBEDDED_SCAN_LIMIT) -> tuple[str, str] | None:
    """Look for the "NCCL version" string in the first `limit` bytes of a library, a chunk
    at a time (with an overlap so a string split across chunks is still found)."""
    try:
        if host.live and host.probe_cache is not None:
            # A pure function of the library's bytes: cached by the file's identity on the
            # live host (~3 ms and a few MB read on every check; fwdoctor.probecache).
            found = host.probe_cache.parsed(host.real_path(path), f"nccl-embedded-{limit}", __file__,
                                            lambda: _scan_embedded(host, path, limit))
            ok = isinstance(found, list) and len(found) == 2 and all(isinstance(part, str) for part in found)
            return (found[0], found[1]) if ok else None
        found = _scan_embedded(host, path, limit)
        return (found[0], found[1]) if found else None
    except (OSError, UnreadableError):
        return None


def _scan_embedded(host: Host, path: str, limit: int) -> list[str] | None:
    """scan_embedded's reading (a list: the JSON shape the cache keeps); raises OSError."""
    with host.open_binary(path) as handle:
        tail = b""
        read = 0
        while read < limit:
            chunk = handle.read(min(EMBEDDED_SCAN_CHUNK, limit - read))
            if not chunk:
                return None
            read += len(chunk)
            found = parse_nccl_embedded(tail + chunk)
            if found:
                return list(found)
            tail = chunk[-64:]
    return None


def library_files(host: Host, directory: str, spec: Library) -> list[tuple[str, str | None]]:
    """(path, file-name version) of every libcudnn.so* / libnccl.so* in a directory."""
    out = []
    for name in host.listdir(directory):
        # The name first: a library folder holds thousands of other files (~2,600 joins on
        # a plain check here, for a handful of matches).
        if not spec.is_library_file(name):
            continue
        path = posixpath.join(directory, name)
        # A dangling link (the real file deleted by a half-done upgrade) is no library.
        if host.is_file(path):
            out.append((path, spec.file_version(name)))
    return out


def best_library(files: list[tuple[str, str | None]], major: int | None = None) -> tuple[str, str | None] | None:
    """The file a reader should be shown: the most precise versioned name (the real file
    behind the symlinks), optionally only those of one major."""
    versioned = [f for f in files if f[1] is not None and (major is None or versions.major(f[1]) == major)]
    if versioned:
        return max(versioned, key=lambda f: (len(versions.release(f[1]) or ()), versions.release(f[1]) or ()))
    if major is None and files:
        return files[0]
    return None


def header_in(host: Host, directories: Iterable[str], spec: Library, major: int | None = None) -> tuple[str, str] | None:
    """(path, version) of the first readable header that yields a version, optionally
    only of one major (a Debian host may hold cudnn_version_v8.h and _v9.h side by side)."""
    for directory in directories:
        for name in spec.headers:
            path = posixpath.join(directory, name)
            if not host.is_file(path):
                continue
            text = read_text_quiet(host, path)
            version = spec.parse_header(text) if text is not None else None
            if version and (major is None or versions.major(version) == major):
                return path, version
    return None


def install_record(
    host: Host,
    spec: Library,
    kind: str,
    prefix: str,
    include_dirs: Iterable[str],
    lib_dirs: Iterable[str],
    cuda_major: int | None = None,
    package: str | None = None,
    major: int | None = None,
) -> dict[str, Any] | None:
    """One install in the FACTS.md shape, or None when neither a header nor a library is
    there. `major` restricts both to one version major (shared system folders)."""
    header = header_in(host, include_dirs, spec, major)
    files: list[tuple[str, str | None]] = []
    for directory in lib_dirs:
        files.extend(library_files(host, directory, spec))
    lib = best_library(files, major)
    if header is None and lib is None:
        return None
    library_version = lib[1] if lib else None
    if lib and spec.embedded:
        embedded = scan_embedded(host, lib[0])
        if embedded:
            library_version = embedded[0]
            if cuda_major is None:
                cuda_major = versions.major(embedded[1])
    return {
        "kind": kind,
        "prefix": prefix,
        "header_version": header[1] if header else None,
        "library_version": library_version,
        "library": lib[0] if lib else None,
        "header": header[0] if header else None,
        "cuda_major": cuda_major,
        "package": package,
    }


# ----------------------------------------------------------------------------- where to look
def site_packages(host: Host, facts: Facts) -> list[str]:
    """The inspected Python's site-packages: the python probe's answer when it ran first,
    else the active venv/conda env's and the system's dist-packages."""
    known = facts.get("python.site_packages")
    if isinstance(known, list) and known:
        return [p for p in known if isinstance(p, str)]
    found: list[str] = []
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = host.env.get(var)
        if prefix:
            for lib in ("lib", "lib64"):
                for pydir in host.glob(posixpath.join(prefix, lib), "python3*"):
                    found.append(posixpath.join(pydir, "site-packages"))
    found.append("/usr/lib/python3/dist-packages")
    for pydir in host.glob("/usr/local/lib", "python3*"):
        found.extend([posixpath.join(pydir, "dist-packages"), posixpath.join(pydir, "site-packages")])
    return [p for p in _unique(found) if host.is_dir(p)]


def _unique(items: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def pip_installs(host: Host, spec: Library, sites: list[str]) -> list[dict[str, Any]]:
    installs = []
    seen_dirs: set[str] = set()
    for site in sites:
        folder = posixpath.join(site, spec.pip_dir)
        real_folder = host.resolve(folder)
        if real_folder in seen_dirs:
            continue
        seen_dirs.add(real_folder)
        dists = []
        for name in host.listdir(site):
            match = spec.dist_re.match(name)
            if match:
                project = match.group(1).replace("_", "-")
                dists.append((project, match.group(2)))
        if not dists and not host.is_dir(folder):
            continue
        include, lib = posixpath.join(folder, "include"), posixpath.join(folder, "lib")
        for project, version in dists or [(None, None)]:
            record = install_record(
                host, spec, "pip", folder, [include], [lib],
                cuda_major=pip_cuda_major(project) if project else None,
                package=f"{project} {version}" if project else None,
            )
            if record is None and project:
                # The dist-info outlived its files (a half-finished uninstall); still an install.
                record = {"kind": "pip", "prefix": folder, "header_version": None, "library_version": None,
                          "library": None, "header": None, "cuda_major": pip_cuda_major(project),
                          "package": f"{project} {version}"}
            if record is not None:
                installs.append(record)
    return installs


def dpkg_packages(host: Host) -> tuple[list[dict[str, str]], UnreadableError | None]:
    """dpkg's installed packages (parse_dpkg_status), parsed once per host, and why the
    database could not be read (None when it could, or is absent)."""
    # The database can be tens of MB (700 KB on a plain Debian: ~10 ms a parse); the CUDA
    # toolkits, cuDNN and NCCL probes share one parse of it (issue 30: it was parsed twice).
    def read_and_parse() -> list[dict[str, str]]:
        return parse_dpkg_status(host.read_text(DPKG_STATUS, limit=DPKG_STATUS_LIMIT) or "")

    def parse() -> tuple[list[dict[str, str]], UnreadableError | None]:
        try:
            # On the live host, the parse is cached by the file's identity (dpkg replaces
            # the file on every change): ~6 ms of a check's CPU (fwdoctor.probecache).
            if host.live and host.probe_cache is not None:
                return host.probe_cache.parsed(DPKG_STATUS, "dpkg-status", __file__, read_and_parse), None
            return read_and_parse(), None
        except UnreadableError as exc:
            return [], exc
        except OSError:
            return [], None

    return host.memo("dpkg-status", parse)  # type: ignore[no-any-return]


def system_installs(host: Host, spec: Library) -> list[dict[str, Any]]:
    """Debian packages (kind "dpkg") and the unpackaged files in the system folders
    ("system"), one install per version major."""
    every, _ = dpkg_packages(host)
    packages = [p for p in every if spec.deb_packages.match(p["name"])]
    installs = []
    claimed: set[int | None] = set()
    for package in packages:
        upstream = deb_upstream_version(package["version"])
        major = versions.major(upstream)
        record = install_record(
            host, spec, "dpkg", "/usr", SYSTEM_INCLUDE_DIRS, SYSTEM_LIB_DIRS,
            cuda_major=deb_cuda_major(package["name"], package["version"]),
            package=f"{package['name']} {package['version']}",
            major=major,
        )
        if record is None:
            record = {"kind": "dpkg", "prefix": "/usr", "header_version": None, "library_version": upstream,
                      "library": None, "header": None,
                      "cuda_major": deb_cuda_major(package["name"], package["version"]),
                      "package": f"{package['name']} {package['version']}"}
        installs.append(record)
        claimed.add(major)
    files: list[tuple[str, str | None]] = []
    for directory in SYSTEM_LIB_DIRS:
        files.extend(library_files(host, directory, spec))
    majors = sorted({versions.major(v) for _, v in files if v is not None} - claimed)  # type: ignore[type-var]
    for major in majors:
        record = install_record(host, spec, "system", "/usr", SYSTEM_INCLUDE_DIRS, SYSTEM_LIB_DIRS, major=major)
        if record is not None:
            installs.append(record)
    if not installs and not files:
        # Headers alone (a -dev copy without the library) still count as an install.
        record = install_record(host, spec, "system", "/usr", SYSTEM_INCLUDE_DIRS, ())
        if record is not None:
            installs.append(record)
    return installs


def toolkit_roots(host: Host, facts: Facts) -> list[str]:
    roots = [r for r in host.glob("/usr/local", "cuda*") if host.is_dir(r)]
    toolkits = facts.get("cuda.toolkits")
    if isinstance(toolkits, list):
        roots.extend(t["root"] for t in toolkits if isinstance(t, dict) and isinstance(t.get("root"), str))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if host.env.get(var):
            roots.append(host.env[var])
    resolved = []
    for root in roots:
        real = host.resolve(root)
        if real not in resolved and host.is_dir(real):
            resolved.append(real)
    return resolved


def toolkit_installs(host: Host, spec: Library, facts: Facts) -> list[dict[str, Any]]:
    installs = []
    for root in toolkit_roots(host, facts):
        targets = host.glob(posixpath.join(root, "targets"), "*-linux")
        include_dirs = [posixpath.join(root, "include"), *(posixpath.join(t, "include") for t in targets)]
        lib_dirs = [posixpath.join(root, "lib64"), posixpath.join(root, "lib"), *(posixpath.join(t, "lib") for t in targets)]
        record = install_record(host, spec, "toolkit", root, include_dirs, lib_dirs)
        if record is not None:
            installs.append(record)
    return installs


def tarball_installs(host: Host, spec: Library) -> list[dict[str, Any]]:
    installs = []
    for directory, pattern in spec.tarball_globs:
        for prefix in host.glob(directory, pattern):
            if not host.is_dir(prefix):
                continue
            record = install_record(
                host, spec, "tarball", prefix, [posixpath.join(prefix, "include")],
                [posixpath.join(prefix, "lib"), posixpath.join(prefix, "lib64")],
                cuda_major=tarball_cuda_major(posixpath.basename(host.resolve(prefix))),
            )
            if record is not None:
                installs.append(record)
    return installs


def conda_installs(host: Host, spec: Library, facts: Facts) -> list[dict[str, Any]]:
    # conda.prefix: the inspected interpreter's conda env, also when nothing activated it
    # (`--python /opt/conda/envs/x/bin/python`, an image's PATH).
    prefixes = [host.env.get("CONDA_PREFIX"), facts.get("python.conda_prefix"), facts.get("conda.prefix")]
    installs = []
    for prefix in _unique(p for p in prefixes if isinstance(p, str) and p):
        meta = posixpath.join(prefix, "conda-meta")
        record_meta: dict[str, Any] | None = None
        for name in host.listdir(meta):
            if not name.endswith(".json") or not any(name.startswith(n + "-") for n in spec.conda_names):
                continue
            text = read_text_quiet(host, posixpath.join(meta, name))
            try:
                data = json.loads(text) if text else None
            except ValueError:
                data = None
            if isinstance(data, dict) and data.get("name") in spec.conda_names:
                record_meta = data
                break
        record = install_record(
            host, spec, "conda", prefix, [posixpath.join(prefix, "include")], [posixpath.join(prefix, "lib")],
            cuda_major=conda_cuda_major(record_meta) if record_meta else None,
            package=f"{record_meta.get('name')} {record_meta.get('version')}" if record_meta else None,
        )
        if record is not None:
            installs.append(record)
    return installs


def find_installs(host: Host, facts: Facts, spec: Library) -> list[dict[str, Any]]:
    """Every install of the library, pip first (the ones torch uses), then system,
    conda, toolkit and tarball. The same folder is never reported twice."""
    sites = site_packages(host, facts)
    found = [
        *pip_installs(host, spec, sites),
        *system_installs(host, spec),
        # Before the toolkits: a conda env with cuda-nvcc is also a toolkit root, and its
        # PREFIX/lib copy is conda's (with the record's CUDA major), not a tarball's.
        *conda_installs(host, spec, facts),
        *toolkit_installs(host, spec, facts),
        *tarball_installs(host, spec),
    ]
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for record in found:
        # One file seen from two places (/usr/local/lib as a system folder and as the
        # lib of a toolkit rooted at /usr/local) is one install, reported first-found.
        if record["library"]:
            key: tuple[Any, ...] = ("library", host.resolve(record["library"]))
        else:
            key = ("header", record["header"] and host.resolve(record["header"]), record["package"])
        if key in seen and record["kind"] != "pip":
            continue
        seen.add(key)
        out.append(record)
    return out


# ----------------------------------------------------------------------------- load order
def preload_entries(value: str) -> list[str]:
    """LD_PRELOAD is split on colons and spaces (ld.so(8))."""
    return [p for p in re.split(r"[:\s]+", value) if p]


def soname_major_wanted(installs: list[dict[str, Any]]) -> int | None:
    """The soname major torch asks for (libcudnn.so.9): the pip install's major."""
    for record in installs:
        if record["kind"] == "pip":
            major = versions.major(record.get("library_version") or record.get("header_version"))
            if major is not None:
                return major
    return None


def ld_first(host: Host, spec: Library, installs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The libcudnn/libnccl the dynamic loader would take before torch's own: an LD_PRELOAD
    entry first, then the first LD_LIBRARY_PATH folder holding the soname torch asks for
    (libcudnn.so.9; any libcudnn.so.* when no pip install says which). None when neither
    variable names one. The version comes from the install that owns the file, else the
    file name, else (NCCL) the string inside the file."""
    for entry in preload_entries(host.env.get("LD_PRELOAD", "")):
        base = posixpath.basename(entry)
        if spec.is_library_file(base) and host.is_file(entry):
            return _ld_record(host, spec, entry, "LD_PRELOAD", installs)
    major = soname_major_wanted(installs)
    wanted = f"{spec.lib_prefix}.{major}" if major is not None else None
    for directory in host.path_list("LD_LIBRARY_PATH"):
        if wanted is not None:
            candidate = posixpath.join(directory, wanted)
            if host.is_file(candidate):
                return _ld_record(host, spec, candidate, "LD_LIBRARY_PATH", installs)
            continue
        files = [f for f in library_files(host, directory, spec) if f[1] is not None]
        if files:
            chosen = min(files, key=lambda f: len(f[1] or ""))  # the soname link, as ld.so looks it up
            return _ld_record(host, spec, chosen[0], "LD_LIBRARY_PATH", installs)
    return None


def _ld_record(host: Host, spec: Library, path: str, via: str, installs: list[dict[str, Any]]) -> dict[str, Any]:
    # `path` stays as the loader would build it (the LD_LIBRARY_PATH entry + soname) so a
    # rule can name the entry to remove; the owner lookup compares resolved folders.
    real = host.resolve(path)
    real_dir = posixpath.dirname(real)
    version = None
    for record in installs:
        if record["library"] and posixpath.dirname(host.resolve(record["library"])) == real_dir:
            version = record_version(record)
            break
    if version is None:
        version = spec.file_version(posixpath.basename(real))
        if spec.embedded:
            embedded = scan_embedded(host, real)
            if embedded:
                version = embedded[0]
    return {"path": path, "version": version, "via": via}
