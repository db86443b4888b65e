"""The conda environment of the inspected interpreter, read from its conda-meta records.

conda, mamba, micromamba, pixi and rattler all record every package they link into a
prefix as PREFIX/conda-meta/<name>-<version>-<build>.json (name, version, build, channel,
depends, files, ...). Those records, not `pip list`, say which pytorch build an env holds
(`cuda126_mkl_py312_h30b5a27_300` vs `cpu_mkl_py311_...`) and which libstdc++ and CUDA
libraries conda put in PREFIX/lib, the folder conda's python finds first (its RPATH is
$ORIGIN/../lib). Everything here reads files through `Host`, so a live host, a --root tree
and an image are read alike; every read is capped and declared in READS.

Which environment: the one the inspected interpreter (python.executable, chosen by
fwdoctor.interpreter: --python, $VIRTUAL_ENV, $CONDA_PREFIX, PATH) lives in when that
folder has conda-meta/; else, when no interpreter is known, $CONDA_PREFIX.

Shell equivalent:
    ls "$CONDA_PREFIX"/conda-meta/*.json; conda list --prefix "$CONDA_PREFIX"
    strings "$CONDA_PREFIX/lib/libstdc++.so.6" | grep ^GLIBCXX_
    cat "$SITE"/*.dist-info/INSTALLER; strings "$SITE"/pkg/*.so | grep ^GLIBCXX_
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any, Iterable

from packaging.version import InvalidVersion, Version

from fwdoctor.host import Host, UnreadableError
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, Read, probe
from fwdoctor.probes.python import SHADOW_WATCH, distributions

# A pytorch record lists every file it installed (files + paths_data with hashes): ~3 MB
# for conda-forge's 2.x builds. 16 MiB holds the largest with room; a bigger one is read
# from its file name only (name, version, build) and reported as a probe failure.
META_LIMIT = 16 * 1024 * 1024
MAX_RECORDS = 4000  # a conda env holds a few hundred; beyond this the folder is not a sane env
# conda's libstdc++.so.6 is ~2.5 MB (libstdcxx 14.x); its GLIBCXX_* names sit in .dynstr,
# in the first few hundred KB.
LIBSTDCXX_LIMIT = 4 * 1024 * 1024
# A pip wheel's extension modules: the GLIBCXX_* names they need sit in .dynstr near the
# start of the file. A bounded prefix of a bounded number of files keeps the scan cheap on
# envs with thousands of .so files (a torch wheel has ~60).
SO_SCAN_LIMIT = 2 * 1024 * 1024
MAX_SO_FILES = 200
RECORD_LIMIT = 4 * 1024 * 1024
INSTALLER_LIMIT = 1024

# What this probe reads (fwdoctor.image.keep keeps only declared reads). Of a wheel's shared
# objects only its Python extension modules (NAME.cpython-311-x86_64-linux-gnu.so,
# NAME.abi3.so) up to three folders below site-packages are scanned: they are what an
# `import` loads first and what a from-source build compiles with the system's g++; the
# libraries beside them (torch/lib/libtorch_cuda.so, hundreds of MB) are left alone.
_EXTENSION = re.compile(r"\.cpython-[^/]*\.so$|\.abi3\.so$")
READS = (
    Read("**/conda-meta/*.json", limit=META_LIMIT),
    Read("**/lib/libstdc++.so.6*", limit=LIBSTDCXX_LIMIT),
    Read("**/*.dist-info/INSTALLER", limit=INSTALLER_LIMIT),
    Read("**/*.dist-info/RECORD", limit=RECORD_LIMIT),
    *(Read("**/site-packages/" + "*/" * depth + suffix, limit=SO_SCAN_LIMIT)
      for depth in range(4) for suffix in ("*.cpython-*.so", "*.abi3.so")),
)

KEYS = (
    "conda.prefix",
    "conda.packages",
    "conda.torch_build",
    "conda.pip_over_conda",
    "conda.libstdcxx_glibcxx",
    "conda.wheel_glibcxx",
    "conda.user_site_only",
)

# conda package name -> the distribution name its dist-info carries (pytorch ships
# torch-X.dist-info). Packages whose pip and conda names agree are not listed.
CONDA_TO_DIST = {"pytorch": "torch"}
# Python packages that break GPU work when pip replaces conda's copy in place.
OVER_WATCH = ("pytorch", "torchvision", "torchaudio", "triton", "numpy")
# Installers that write a dist-info's INSTALLER file and are not conda (PEP 376/627).
PIP_INSTALLERS = ("pip", "uv")
# Packages that leak from the user site into a conda env (the python.user_site_shadows
# watch list, plus numpy: a ~/.local numpy 1.x breaks a conda numpy 2 ABI and the reverse).
USER_SITE_WATCH = re.compile(rf"^(?:{SHADOW_WATCH.pattern.strip('^$')}|numpy)$")

_GLIBCXX = re.compile(rb"GLIBCXX_(3\.4(?:\.\d+)?)\x00")
# conda-forge: cuda118_py39hbf661d7_301, cuda126_mkl_py312_h30b5a27_300, cuda130_...;
# the pytorch channel: py3.10_cuda12.1_cudnn8.9.2_0; CPU: cpu_mkl_py311_..., py3.8_cpu_0.
_CF_CUDA = re.compile(r"^cuda(\d+)(\d)(?:_|$)")
_PT_CUDA = re.compile(r"(?:^|_)cuda(\d+)\.(\d+)(?:[._]|$)")
_CPU = re.compile(r"(?:^|_)cpu(?:_|$)")


# ----------------------------------------------------------------------------- parsers
def record_name_parts(filename: str) -> tuple[str, str, str] | None:
    """("pytorch", "2.4.0", "cuda118_py39hbf661d7_301") from a conda-meta file name;
    version and build never hold a dash, the package name may."""
    if not filename.endswith(".json"):
        return None
    parts = filename[: -len(".json")].rsplit("-", 2)
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]


def channel_name(value: Any) -> str | None:
    """"conda-forge" from "https://conda.anaconda.org/conda-forge/" or ".../conda-forge/linux-64";
    "pkgs/main" from "https://repo.anaconda.com/pkgs/main/linux-64"; a bare name as is."""
    if not isinstance(value, str) or not value:
        return None
    text = value.rstrip("/")
    if "://" not in text:
        return text
    path = text.split("://", 1)[1].partition("/")[2]
    parts = [p for p in path.split("/") if p]
    if parts and re.fullmatch(r"(noarch|(linux|osx|win)-[a-z0-9_]+)", parts[-1]):
        parts = parts[:-1]
    if len(parts) >= 2 and parts[-2] == "pkgs":
        return "/".join(parts[-2:])
    return parts[-1] if parts else text


def build_cuda(build: str) -> tuple[str | None, str | None]:
    """(kind, CUDA) from a pytorch build string: ("cuda", "11.8") for cuda118_py39h..._301
    (conda-forge: `cuda{{ cuda_compiler_version | replace('.', '') }}_...`, feedstock
    recipe/meta.yaml) or py3.10_cuda12.1_cudnn8.9.2_0 (the pytorch channel), ("cpu", None) for
    cpu_mkl_py311_h..._101 / py3.8_cpu_0, (None, None) when the string says neither."""
    match = _CF_CUDA.match(build) or _PT_CUDA.search(build)
    if match:
        return "cuda", f"{int(match.group(1))}.{int(match.group(2))}"
    if _CPU.search(build):
        return "cpu", None
    return None, None


def glibcxx_tags(data: bytes) -> list[str]:
    """The GLIBCXX_* version names in an ELF's bytes ("3.4", "3.4.29", ...), oldest first. A
    libstdc++ defines them (verdef); any other object only names those it needs (verneed)."""
    found = {m.group(1).decode() for m in _GLIBCXX.finditer(data)}
    return sorted(found, key=_tag_key)


def _tag_key(tag: str) -> Version:
    try:
        return Version(tag)
    except InvalidVersion:
        return Version("0")


def newest(tags: Iterable[str]) -> str | None:
    tags = list(tags)
    return max(tags, key=_tag_key) if tags else None


def record_paths(text: str) -> list[str]:
    """The paths a dist-info RECORD lists (first CSV column), relative to site-packages."""
    out = []
    for line in text.splitlines():
        path = line.split(",", 1)[0].strip().strip('"')
        if path:
            out.append(path)
    return out


# ----------------------------------------------------------------------------- reading
def _read_text(host: Host, path: str, limit: int) -> str | None:
    try:
        return host.read_text(path, limit=limit)
    except (UnreadableError, OSError):
        return None


def _read_bytes(host: Host, path: str, limit: int) -> bytes | None:
    try:
        return host.read_bytes(path, limit=limit)
    except (UnreadableError, OSError):
        return None


def find_prefix(host: Host, facts: Facts) -> tuple[str | None, str]:
    """(conda prefix, why) of the inspected interpreter; (None, why not)."""
    exe = facts.get("python.executable")
    if isinstance(exe, str) and exe:
        for candidate in (exe, host.resolve(exe)):
            bindir = posixpath.dirname(candidate)
            if posixpath.basename(bindir) != "bin":
                continue
            prefix = posixpath.dirname(bindir) or "/"
            if host.is_dir(posixpath.join(prefix, "conda-meta")):
                return prefix, f"{exe} lives in {prefix}, which has conda-meta/"
        return None, f"the inspected interpreter {exe} is not in a conda environment (no conda-meta/ beside its bin/)"
    env = host.env.get("CONDA_PREFIX") or ""
    if env and host.is_dir(posixpath.join(env, "conda-meta")):
        return env, "$CONDA_PREFIX (no interpreter known)"
    return None, "no interpreter known and no $CONDA_PREFIX with conda-meta/"


def read_records(host: Host, prefix: str, failures: list[ProbeFailure]) -> dict[str, dict[str, Any]]:
    """{name: record} from PREFIX/conda-meta; a record too large or not JSON keeps what its
    file name says (name, version, build) and is reported."""
    meta = posixpath.join(prefix, "conda-meta")
    names = sorted(n for n in host.listdir(meta) if n.endswith(".json"))
    if len(names) > MAX_RECORDS:
        failures.append(ProbeFailure("conda", f"{meta} holds {len(names)} records; only the first {MAX_RECORDS} were read"))
        names = names[:MAX_RECORDS]
    records: dict[str, dict[str, Any]] = {}
    for filename in names:
        parts = record_name_parts(filename)
        if parts is None:
            continue
        path = posixpath.join(meta, filename)
        data: Any = None
        try:
            raw = host.read_bytes(path, limit=META_LIMIT)
        except (UnreadableError, OSError) as exc:
            raw = None
            failures.append(ProbeFailure("conda", f"cannot read {path}: {getattr(exc, 'reason', exc)}"))
        if raw is not None:
            try:
                data = json.loads(raw.decode("utf-8", errors="replace"))
            except (ValueError, RecursionError):
                # The same words whether the file or an image's kept prefix was read.
                what = f"larger than {META_LIMIT >> 20} MiB" if len(raw) >= META_LIMIT else "not a JSON record"
                failures.append(ProbeFailure("conda", f"{path} is {what}; read from its file name only"))
        record = dict(data) if isinstance(data, dict) else {}
        name = record.get("name") if isinstance(record.get("name"), str) else parts[0]
        record.setdefault("version", parts[1])
        record.setdefault("build", parts[2])
        record["_path"] = path
        records.setdefault(name, record)
    return records


def package_summary(records: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, rec in sorted(records.items()):
        out[name] = {
            "version": str(rec.get("version")),
            "build": str(rec.get("build")),
            "channel": channel_name(rec.get("channel")),
            "fn": rec.get("fn") if isinstance(rec.get("fn"), str) else None,
        }
    return out


def torch_build(records: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    rec = records.get("pytorch")
    if rec is None:
        return None
    kind, cuda = build_cuda(str(rec.get("build")))
    listed = rec.get("depends")
    depends = [d for d in listed if isinstance(d, str)] if isinstance(listed, list) else []
    return {
        "version": str(rec.get("version")),
        "build": str(rec.get("build")),
        "channel": channel_name(rec.get("channel")),
        "kind": kind,
        "cuda": cuda,
        "depends": [d for d in depends if re.match(r"^(cuda-version|cudatoolkit|cudnn|nccl|__cuda|pytorch-cuda|libstdcxx|libstdcxx-ng)\b", d)],
        "record": rec["_path"],
    }


def _installer(host: Host, dist_info: str) -> str | None:
    text = _read_text(host, posixpath.join(dist_info, "INSTALLER"), INSTALLER_LIMIT)
    if text is None:
        return None
    first = text.strip().splitlines()[:1]
    return first[0].strip() if first else ""


def _owned(record: dict[str, Any], dist_info_name: str) -> bool | None:
    """Whether a conda record lists files of the dist-info folder; None when it lists no files."""
    files = record.get("files")
    if not isinstance(files, list) or not files:
        return None
    needle = "/" + dist_info_name + "/"
    return any(isinstance(f, str) and needle in "/" + f for f in files)


def _dist_infos(host: Host, site: str, dist: str) -> list[tuple[str, str]]:
    """(path, version) of every NAME-*.dist-info for one normalized distribution name (an
    install over another can leave both)."""
    out = []
    for name in host.listdir(site):
        if not name.endswith(".dist-info"):
            continue
        stem, _, version = name[: -len(".dist-info")].partition("-")
        if re.sub(r"[-_.]+", "-", stem).lower() == dist:
            out.append((posixpath.join(site, name), version))
    return out


def pip_over_conda(host: Host, records: dict[str, dict[str, Any]], sites: list[str]) -> list[dict[str, Any]]:
    """Watched conda packages whose dist-info in the env's site-packages another installer
    wrote: the record does not list that dist-info, or (a record without a file list) its
    INSTALLER names pip/uv."""
    found = []
    for conda_name in OVER_WATCH:
        rec = records.get(conda_name)
        if rec is None:
            continue
        dist = CONDA_TO_DIST.get(conda_name, conda_name)
        for site in sites:
            entries = _dist_infos(host, site, dist)
            for dist_info, dist_version in entries:
                installer = _installer(host, dist_info)
                owned = _owned(rec, posixpath.basename(dist_info))
                if owned is False or (owned is None and installer in PIP_INSTALLERS):
                    found.append({
                        "package": dist,
                        "conda": f"{conda_name} {rec.get('version')} {rec.get('build')}",
                        "conda_record": rec["_path"],
                        "dist_info": dist_info,
                        "dist_version": dist_version,
                        "installer": installer,
                        "conda_dist_info_left": [p for p, _ in entries if p != dist_info and _owned(rec, posixpath.basename(p)) is not False],
                    })
            if entries:
                break  # the first site dir with the package is the one that imports
    return found


def libstdcxx(host: Host, prefix: str, records: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    path = posixpath.join(prefix, "lib", "libstdc++.so.6")
    if not host.is_file(path):
        return None
    data = _read_bytes(host, path, LIBSTDCXX_LIMIT)
    tags = glibcxx_tags(data or b"")
    rec = records.get("libstdcxx") or records.get("libstdcxx-ng")
    name = "libstdcxx" if "libstdcxx" in records else "libstdcxx-ng"
    return {
        "library": path,
        "real": host.resolve(path),
        "newest": newest(tags),
        "tags": tags,
        "package": f"{name} {rec.get('version')}" if rec else None,
    }


def wheel_glibcxx(host: Host, sites: list[str]) -> tuple[list[dict[str, Any]], bool]:
    """([{"dist", "file", "needs"}] for pip-installed dists whose extension modules need a
    GLIBCXX_* version, newest need per dist), and whether the MAX_SO_FILES cap was hit."""
    out: list[dict[str, Any]] = []
    scanned = 0
    capped = False
    for site in sites:
        for key, (dist_info, version) in sorted(distributions(host, site).items()):
            if not dist_info.endswith(".dist-info") or _installer(host, dist_info) not in PIP_INSTALLERS:
                continue
            text = _read_text(host, posixpath.join(dist_info, "RECORD"), RECORD_LIMIT) or ""
            best: tuple[str, str] | None = None
            for rel in record_paths(text):
                if not _EXTENSION.search(rel) or rel.startswith(("/", "..")) or rel.count("/") > 3:
                    continue
                if scanned >= MAX_SO_FILES:
                    capped = True
                    break
                path = posixpath.join(site, rel)
                if not host.is_file(path):
                    continue
                scanned += 1
                need = newest(glibcxx_tags(_read_bytes(host, path, SO_SCAN_LIMIT) or b""))
                if need and (best is None or _tag_key(need) > _tag_key(best[1])):
                    best = (path, need)
            if best is not None:
                out.append({"dist": f"{key} {version}", "file": best[0], "needs": best[1]})
    return out, capped


def user_site_only(host: Host, user_site: str | None, sites: list[str]) -> list[dict[str, str]]:
    """Watched packages in the user site that the env itself does not have: a conda env
    reads ~/.local/lib/pythonX.Y/site-packages unless PYTHONNOUSERSITE is set, so these
    import from there. (Packages in both are python.user_site_shadows.)"""
    if not user_site:
        return []
    env: set[str] = set()
    for site in sites:
        if host.resolve(site) != host.resolve(user_site):
            env |= set(distributions(host, site))
    out = []
    for key, (path, version) in sorted(distributions(host, user_site).items()):
        if USER_SITE_WATCH.match(key) and key not in env:
            out.append({"package": key, "user": path, "user_version": version})
    return out


# ----------------------------------------------------------------------------- the probe
@probe("conda", provides=KEYS)
def conda_env(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    prefix, why = find_prefix(host, facts)
    yield Fact("conda.prefix", prefix, source=why)
    if prefix is None:
        for key in KEYS[1:]:
            yield Fact(key, None, source=f"not a conda environment: {why}")
        return
    failures: list[ProbeFailure] = []
    records = read_records(host, prefix, failures)
    yield from failures
    meta = posixpath.join(prefix, "conda-meta")
    yield Fact("conda.packages", package_summary(records), source=meta)
    build = torch_build(records)
    yield Fact("conda.torch_build", build, source=build["record"] if build else f"no pytorch record in {meta}")
    sites = facts.get("python.site_packages")
    sites = [s for s in sites if isinstance(s, str)] if isinstance(sites, list) else []
    if not sites:
        for key in ("conda.pip_over_conda", "conda.wheel_glibcxx", "conda.user_site_only"):
            yield Fact.unknown(key, f"the environment's site-packages are unknown ({facts.why('python.site_packages')})")
    else:
        yield Fact("conda.pip_over_conda", pip_over_conda(host, records, sites), source=f"{meta} and the dist-infos in {', '.join(sites)}")
    std = libstdcxx(host, prefix, records)
    yield Fact("conda.libstdcxx_glibcxx", std, source=std["library"] if std else f"no {prefix}/lib/libstdc++.so.6")
    if sites:
        needs, capped = wheel_glibcxx(host, sites)
        if capped:
            yield ProbeFailure("conda", f"more than {MAX_SO_FILES} shared objects in pip-installed wheels; the rest were not scanned for GLIBCXX needs")
        yield Fact("conda.wheel_glibcxx", needs, source=f"GLIBCXX_* names in the .so files of pip-installed dist-infos (INSTALLER pip/uv) in {', '.join(sites)}")
        user_site = facts.get("python.user_site")
        yield Fact("conda.user_site_only", user_site_only(host, user_site if isinstance(user_site, str) else None, sites),
                   source=f"{user_site} (PYTHONNOUSERSITE unset)" if user_site else "no user site in use (PYTHONNOUSERSITE set, or no ~/.local site dir)")
    # The conda record says which CUDA pytorch was built for even when torch/version.py
    # cannot be read (a half-copied env, an image keeping only conda-meta): fill torch.cuda
    # then, and only then (this probe runs after probes/torch.py).
    if build is not None and build["kind"] is not None and not facts.known("torch.cuda") and "torch.cuda" in facts:
        yield Fact("torch.cuda", build["cuda"], source=f"{build['record']} (build {build['build']}); {facts.why('torch.cuda')}")


PROBES: tuple[Probe, ...] = (conda_env,)
