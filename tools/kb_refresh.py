"""Propose a knowledge-base refresh from the package index (`make kb-refresh`).

A maintainer tool, not part of the installed CLI. It asks an index's JSON API
(https://pypi.org/pypi/NAME/json, PEP 691's sibling that pypi.org serves) which releases of
the packages the KB describes are newer than every KB row, reads each new release's METADATA
from its PEP 658 file (`<wheel url>.metadata`, a few KB) or, where the index has none, from
the wheel's zip central directory and one member by HTTP range requests (never the whole
wheel), and writes a proposed KB change:

  new_releases:   per package and version, what a row needs (Requires-Python, the CPython
                  tags of its wheels, its nvidia-* pins) and the source to cite (the wheel's
                  URL and sha256, and the member read with its sha256). TensorFlow's arch list
                  comes from the wheel's tensorflow/python/platform/build_info.py (by range).
  moved_sources:  KB citations of a wheel on the index whose file is gone, yanked, or has
                  another sha256 now.

    python tools/kb_refresh.py [--index https://pypi.org] [--kb doctor/kb] [--out FILE]

Arch lists of torch and the JAX CUDA plugins live in their CUDA libraries' fatbins (the
.nv_fatbin ELF section: containers of cubins, each tagged sm_NN, and PTX, compute_NN). With
--fatbin the tool reads those members by range and lists them (`fatbin_arch_list`); each
member is compressed in the wheel, so it is fetched whole (tens to hundreds of MB: torch's
libtorch_cuda.so is most of a 1-2 GB wheel), hence off by default and `arch_list: null` with
the reason.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Any, Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import parse_wheel_filename
from packaging.version import InvalidVersion, Version

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

TIMEOUT = 60
USER_AGENT = "fwdoctor-kb-refresh (https://github.com/; maintainer tool)"
# Packages whose releases the KB describes; the nvidia-* ones through torch's and the
# frameworks' pins.
PACKAGES = (
    "torch", "torchvision", "torchaudio",
    "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin", "jax-cuda12-pjrt", "jax-cuda13-pjrt",
    "tensorflow", "paddlepaddle", "paddlepaddle-gpu",
    "nvidia-cudnn-cu12", "nvidia-cudnn-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu13",
    "nvidia-cuda-nvcc", "nvidia-cuda-runtime",
)
# CUDA libraries whose fatbins carry a wheel's kernels (read only with --fatbin).
FATBIN_MEMBERS = {
    "torch": re.compile(r"^torch/lib/libtorch_cuda\.so$"),
    "jax-cuda12-plugin": re.compile(r"^jax_cuda12_plugin/.*\.so$"),
    "jax-cuda13-plugin": re.compile(r"^jax_cuda13_plugin/.*\.so$"),
}
FATBIN_MAGIC = 0xBA55ED50
WHEEL_SOURCE = re.compile(r"(https?://\S+?/([^/\s]+\.whl))\s*\(wheel sha256 ([0-9a-f]{64})\)")
BUILD_INFO = "tensorflow/python/platform/build_info.py"


# ----------------------------------------------------------------------------- the index
class Index:
    """An index's JSON API and files, fetched with a timeout; responses are kept."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        self._json: dict[str, Any] = {}
        self.context = ssl.create_default_context()
        self.bytes_read = 0

    def _open(self, url: str, headers: dict[str, str] | None = None) -> bytes:
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=self.context if url.startswith("https") else None) as response:
            data = response.read()
        self.bytes_read += len(data)
        return data

    def project(self, name: str) -> dict[str, Any] | None:
        """/pypi/NAME/json, or None when the index does not know the project."""
        if name not in self._json:
            try:
                self._json[name] = json.loads(self._open(f"{self.base}/pypi/{name}/json"))
            except urllib.error.HTTPError as exc:
                if exc.code != 404:
                    raise
                self._json[name] = None
        return self._json[name]

    def url(self, file_url: str) -> str:
        return urllib.parse.urljoin(f"{self.base}/pypi/", file_url)

    def get(self, url: str) -> bytes:
        return self._open(self.url(url))

    def member(self, wheel_url: str, name: str) -> bytes | None:
        """One member of a remote wheel, read by HTTP range (the central directory, then the
        member): a few MB of a wheel of hundreds. None when the wheel has no such member."""
        remote = _RangeFile(self, self.url(wheel_url))
        with zipfile.ZipFile(io.BufferedReader(remote, buffer_size=1 << 16)) as archive:
            try:
                return archive.read(name)
            except KeyError:
                return None


class _RangeFile(io.RawIOBase):
    def __init__(self, index: Index, url: str) -> None:
        self.index, self.url, self.pos = index, url, 0
        request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": USER_AGENT})
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=index.context if url.startswith("https") else None) as response:
            self.size = int(response.headers["Content-Length"])

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def readinto(self, buffer: Any) -> int:
        count = min(len(buffer), self.size - self.pos)
        if count <= 0:
            return 0
        data = self.index._open(self.url, {"Range": f"bytes={self.pos}-{self.pos + count - 1}"})[:count]
        buffer[: len(data)] = data
        self.pos += len(data)
        return len(data)


# ----------------------------------------------------------------------------- fatbins
def elf_section(data: bytes, wanted: str) -> bytes | None:
    """The contents of section `wanted` of a little-endian ELF64 file; None when absent
    or when `data` is not such a file. Pure."""
    import struct

    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if not shoff or shstrndx >= shnum or shoff + shnum * shentsize > len(data):
        return None

    def header(i: int) -> tuple[int, int, int]:
        name, _type = struct.unpack_from("<II", data, shoff + i * shentsize)
        offset, size = struct.unpack_from("<QQ", data, shoff + i * shentsize + 0x18)
        return name, offset, size

    _, str_off, str_size = header(shstrndx)
    names = data[str_off:str_off + str_size]
    for i in range(shnum):
        name, offset, size = header(i)
        end = names.find(b"\0", name)
        if names[name:end].decode("ascii", "replace") == wanted:
            return data[offset:offset + size]
    return None


def fatbin_counts(blob: bytes) -> tuple[int, dict[str, int]]:
    """(number of fatbin containers in `blob`, an .nv_fatbin section; for each target the
    number of containers holding it): "sm_90" for a cubin (kind 2), "compute_120" for PTX
    (kind 1). Layout: container {u32 magic 0xBA55ED50, u16 version, u16 header size, u64
    size}, then entries {u16 kind, u16, u32 header size, u64 size, ..., u32 arch at 0x1C}.
    Pure."""
    import struct

    counts: dict[str, int] = {}
    containers = 0
    pos = 0
    while pos + 16 <= len(blob):
        magic, _version, head, size = struct.unpack_from("<IHHQ", blob, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # containers are 8-byte aligned; skip padding
            continue
        containers += 1
        entry, end = pos + head, min(pos + head + size, len(blob))
        seen: set[str] = set()
        while entry + 0x20 <= end:
            kind, _u, ehead, esize = struct.unpack_from("<HHIQ", blob, entry)
            arch, = struct.unpack_from("<I", blob, entry + 0x1C)
            if kind in (1, 2):
                seen.add(f"{'sm' if kind == 2 else 'compute'}_{arch}")
            if ehead == 0:
                break
            entry += ehead + esize
        for target in seen:
            counts[target] = counts.get(target, 0) + 1
        pos = (end + 7) // 8 * 8
    return containers, counts


def _target_order(target: str) -> tuple[int, bool]:
    return int(target.split("_")[1]), target.startswith("compute")


def fatbin_targets(blob: bytes) -> list[str]:
    """The targets every fatbin container in `blob` holds: the library's arch list (what
    TORCH_CUDA_ARCH_LIST gave every kernel). A target only some containers hold is a few
    kernels built for more (libtorch_cuda.so 2.14.1+cu130: sm_75 80 86 90 100 120 in all 475
    containers, sm_103 in 59, sm_89 and sm_121 in one). Pure."""
    containers, counts = fatbin_counts(blob)
    return sorted((t for t, n in counts.items() if n == containers), key=_target_order)


def fatbin_arch_list(index: "Index", package: str, wheel_url: str) -> tuple[list[str] | None, str]:
    """The targets in the fatbins of the wheel's CUDA libraries, and what was read."""
    pattern = FATBIN_MEMBERS[package]
    remote = _RangeFile(index, index.url(wheel_url))
    targets: set[str] | None = None
    read = []
    with zipfile.ZipFile(io.BufferedReader(remote, buffer_size=1 << 20)) as archive:
        for info in archive.infolist():
            if not pattern.match(info.filename):
                continue
            data = archive.read(info)
            section = elf_section(data, ".nv_fatbin")
            if not section:
                continue  # a library without device code
            found = set(fatbin_targets(section))
            read.append(f"{info.filename} (sha256 {hashlib.sha256(data).hexdigest()}: {' '.join(sorted(found, key=_target_order))})")
            targets = found if targets is None else targets & found
    if targets is None:
        return None, f"no member matching {pattern.pattern} has an .nv_fatbin section"
    return sorted(targets, key=_target_order), f"{index.url(wheel_url)}: the targets every fatbin container holds, in the .nv_fatbin of " + ", ".join(read)


# ----------------------------------------------------------------------------- the KB
def known_versions(kb: Any) -> dict[str, set[Version]]:
    """Every release of each package the KB's rows name."""
    known: dict[str, set[Version]] = {name: set() for name in PACKAGES}

    def add(name: str, text: Any) -> None:
        try:
            known.setdefault(name, set()).add(Version(str(text)))
        except InvalidVersion:
            pass

    for v in kb.torch.variants():
        add("torch", v.torch)
        if v.torchvision:
            add("torchvision", v.torchvision)
        if v.torchaudio:
            add("torchaudio", v.torchaudio)
        major = v.cuda.split(".")[0] if v.cuda else None
        if major and v.cudnn:
            add(f"nvidia-cudnn-cu{major}", v.cudnn)
        if major and v.nccl:
            add(f"nvidia-nccl-cu{major}", v.nccl)
    for row in kb.libs.pip_packages:  # libs.yaml: the first and last wheel of each nvidia-* package
        add(row.package, row.first)
        add(row.package, row.last)
    for framework in ("jax", "tensorflow", "paddle"):
        for release in kb.frameworks.releases(framework):
            names = {"jax": ["jax", "jaxlib"], "tensorflow": ["tensorflow"], "paddle": []}[framework]
            for build in release.builds:
                names.append(build.package)
                if build.pjrt:
                    names.append(build.pjrt)
                for req, spec in build.requires.items():
                    pinned = re.fullmatch(r"==\s*([\w.]+)", spec.strip())
                    if pinned and req in known:
                        add(req, pinned.group(1))
            for name in names:
                add(name, release.version)
    return known


def cited_wheels(kb_dir: Path) -> list[tuple[str, str, str, str]]:
    """(source key, wheel URL, file name, sha256) for every KB citation of a wheel by URL."""
    import yaml

    out = []
    for path in sorted(kb_dir.glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        for key, value in (data.get("sources") or {}).items():
            for match in WHEEL_SOURCE.finditer(str(value)):
                out.append((key, match.group(1), urllib.parse.unquote(match.group(2)), match.group(3)))
    return out


# ----------------------------------------------------------------------------- proposals
def _pick_wheel(files: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The Linux x86_64 wheel to read: CPython 3.12 first, then any, then a pure wheel."""
    wheels = [f for f in files if f.get("filename", "").endswith(".whl") and not f.get("yanked")]

    def rank(f: dict[str, Any]) -> tuple[int, int]:
        name = f["filename"]
        linux = "x86_64" in name and ("manylinux" in name or "linux" in name)
        pure = name.endswith("-none-any.whl")
        return (0 if linux else 1 if pure else 2, 0 if "-cp312-" in name else 1)

    wheels.sort(key=rank)
    return wheels[0] if wheels and rank(wheels[0])[0] < 2 else None


def _pythons(files: Iterable[dict[str, Any]]) -> list[str]:
    minors = set()
    for f in files:
        try:
            _, _, _, tags = parse_wheel_filename(f["filename"])
        except Exception:
            continue
        for tag in tags:
            match = re.fullmatch(r"cp3(\d+)", tag.interpreter)
            if match:
                minors.add(f"3.{match.group(1)}")
    return sorted(minors, key=Version)


def _metadata(index: Index, wheel: dict[str, Any]) -> tuple[str | None, str]:
    """(METADATA text, how it was read)."""
    meta = wheel.get("core-metadata") or wheel.get("data-dist-info-metadata")
    if meta:
        try:
            data = index.get(wheel["url"] + ".metadata")
        except urllib.error.HTTPError:
            data = None  # announced but not served (a mirror): read the wheel's own member
        if data is not None:
            want = meta.get("sha256") if isinstance(meta, dict) else None
            got = hashlib.sha256(data).hexdigest()
            if want and want != got:
                return None, f"PEP 658 file {index.url(wheel['url'])}.metadata: sha256 {got} is not the index's {want}"
            return data.decode("utf-8", "replace"), f"{index.url(wheel['url'])}.metadata (PEP 658; sha256 {got})"
    member = f"{wheel['filename'].split('-')[0]}-{wheel['filename'].split('-')[1]}.dist-info/METADATA"
    data = index.member(wheel["url"], member)
    if data is None:
        return None, f"{index.url(wheel['url'])}: no member {member}"
    return data.decode("utf-8", "replace"), f"{index.url(wheel['url'])} (wheel sha256 {wheel['digests']['sha256']}): member {member} by HTTP range, sha256 {hashlib.sha256(data).hexdigest()}"


def propose(index: Index, package: str, version: str, files: list[dict[str, Any]], fatbin: bool = False) -> dict[str, Any]:
    """What a KB row for this release needs, with the source to cite."""
    row: dict[str, Any] = {"package": package, "version": version, "pythons": _pythons(files)}
    wheel = _pick_wheel(files)
    if wheel is None:
        row["note"] = "no Linux x86_64 or pure wheel on the index"
        return row
    row["wheel"] = {"url": index.url(wheel["url"]), "sha256": wheel["digests"]["sha256"], "upload_time": wheel.get("upload_time_iso_8601") or wheel.get("upload_time")}
    text, how = _metadata(index, wheel)
    row["source"] = how
    if text is not None:
        meta = Parser().parsestr(text)
        row["requires_python"] = meta.get("Requires-Python")
        pins: dict[str, str] = {}
        for line in meta.get_all("Requires-Dist") or []:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.name.startswith(("nvidia-", "triton", "jaxlib", "jax-cuda")) or req.name in ("torch",):
                key = req.name + (f" ; {req.marker}" if req.marker else "")
                pins[key] = str(req.specifier)
        row["requires"] = pins
    if package == "tensorflow":
        info = index.member(wheel["url"], BUILD_INFO)
        if info is not None:
            match = re.search(r"\('cuda_compute_capabilities', \[([^\]]*)\]\)", info.decode("utf-8", "replace"))
            row["arch_list"] = re.findall(r"'([\w]+)'", match.group(1)) if match else None
            row["arch_source"] = f"{row['wheel']['url']} (wheel sha256 {row['wheel']['sha256']}): member {BUILD_INFO} by HTTP range, sha256 {hashlib.sha256(info).hexdigest()}"
    elif package in FATBIN_MEMBERS:
        if fatbin:
            row["arch_list"], row["arch_source"] = fatbin_arch_list(index, package, wheel["url"])
        else:
            row["arch_list"] = None
            row["arch_note"] = "in the CUDA libraries' fatbins: run with --fatbin to read them (whole members, large)"
    return row


def refresh(index: Index, kb_dir: Path, packages: Iterable[str] = PACKAGES, max_new: int = 5, check_sources: bool = True, fatbin: bool = False) -> dict[str, Any]:
    from fwdoctor.kb import KB

    kb = KB.load(kb_dir)
    known = known_versions(kb)
    report: dict[str, Any] = {"index": index.base, "kb": str(kb_dir), "kb_refreshed": kb.refreshed, "new_releases": [], "newest_known": {}, "moved_sources": [], "unknown_packages": []}
    # The nvidia-cuda-* wheels are the toolkit's own: the KB knows every minor up to its horizon.
    horizon = Version(kb.cuda.horizon)
    for package in packages:
        project = index.project(package)
        if project is None:
            report["unknown_packages"].append(package)
            continue
        have = known.get(package) or set()
        newest = max(have) if have else None
        report["newest_known"][package] = str(newest) if newest else None
        releases = []
        for text, files in (project.get("releases") or {}).items():
            try:
                version = Version(text)
            except InvalidVersion:
                continue
            if version.is_prerelease or version.is_devrelease or not files or all(f.get("yanked") for f in files):
                continue
            if package.startswith("nvidia-cuda-"):
                report["newest_known"][package] = f"CUDA {kb.cuda.horizon}.x (cuda.yaml horizon)"
                if Version(f"{version.major}.{version.minor}") > horizon:
                    releases.append((version, text, files))
            elif newest is None or version > newest:
                releases.append((version, text, files))
        releases.sort(reverse=True)
        for version, text, files in releases[:max_new]:
            report["new_releases"].append(propose(index, package, text, files, fatbin))
        if len(releases) > max_new:
            report["new_releases"].append({"package": package, "note": f"{len(releases) - max_new} older new releases left out: {', '.join(t for _, t, _ in releases[max_new:])}"})
    if check_sources:
        report["moved_sources"], report["sources_checked"] = moved_sources(index, kb_dir)
    report["bytes_read"] = index.bytes_read
    return report


def moved_sources(index: Index, kb_dir: Path) -> tuple[list[dict[str, str]], int]:
    """KB citations of a wheel whose file the index no longer serves as cited, and how many
    citations were checked."""
    moved = []
    cited = cited_wheels(kb_dir)
    for key, url, filename, sha in cited:
        try:
            name, version, *_ = parse_wheel_filename(filename)
        except Exception:
            continue
        project = index.project(str(name))
        files = (project or {}).get("releases", {}).get(str(version)) or (project or {}).get("releases", {}).get(filename.split("-")[1]) or []
        match = next((f for f in files if f.get("filename") == filename), None)
        if match is None:
            moved.append({"source": key, "file": filename, "why": "no longer on the index"})
        elif match.get("digests", {}).get("sha256") != sha:
            moved.append({"source": key, "file": filename, "why": f"sha256 is now {match['digests']['sha256']}"})
        elif match.get("yanked"):
            moved.append({"source": key, "file": filename, "why": f"yanked: {match.get('yanked_reason') or 'no reason given'}"})
    return moved, len(cited)


def summary(report: dict[str, Any]) -> str:
    lines = [f"kb-refresh against {report['index']} (KB {report['kb']}, refreshed {report['kb_refreshed']})"]
    for package, newest in report["newest_known"].items():
        new = [r["version"] for r in report["new_releases"] if r.get("package") == package and "version" in r]
        lines.append(f"  {package:<20} KB up to {newest or '-':<12} new: {', '.join(new) if new else 'none'}")
    for row in report["new_releases"]:
        if "version" not in row:
            continue
        pins = ", ".join(f"{k} {v}" for k, v in (row.get("requires") or {}).items() if k.startswith("nvidia-cudnn") or k.startswith("nvidia-nccl"))
        extra = f"; arch {row['arch_list']}" if row.get("arch_list") else ""
        lines.append(f"  + {row['package']} {row['version']}: Python {', '.join(row.get('pythons') or []) or '?'}; {row.get('requires_python') or ''}{'; ' + pins if pins else ''}{extra}")
    lines.append(f"  moved sources: {len(report['moved_sources'])} of {report.get('sources_checked', 0)} cited wheels" + "".join(f"\n    {m['source']}: {m['file']}: {m['why']}" for m in report["moved_sources"]))
    if report["unknown_packages"]:
        lines.append(f"  not on the index: {', '.join(report['unknown_packages'])}")
    lines.append(f"  read {report['bytes_read'] / 1e6:.1f} MB")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", default="https://pypi.org", help="the index base URL (its JSON API is BASE/pypi/NAME/json)")
    parser.add_argument("--kb", type=Path, default=REPO / "doctor" / "kb", help="the KB folder to compare with")
    parser.add_argument("--out", type=Path, default=Path("kb-refresh.yaml"), help="where the proposed change goes (YAML)")
    parser.add_argument("--package", action="append", help="only these packages (repeatable)")
    parser.add_argument("--max-new", type=int, default=5, help="read at most this many new releases per package")
    parser.add_argument("--no-sources", action="store_true", help="skip the check of cited wheels")
    parser.add_argument("--fatbin", action="store_true", help="read torch's and the JAX plugins' arch lists from their CUDA libraries (large downloads)")
    args = parser.parse_args(argv)
    import yaml

    report = refresh(Index(args.index), args.kb, args.package or PACKAGES, args.max_new, not args.no_sources, args.fatbin)
    args.out.write_text("# Proposed KB change from tools/kb_refresh.py; review each row before editing doctor/kb.\n"
                        + yaml.safe_dump(report, sort_keys=False, width=200))
    sys.stdout.write(summary(report))
    sys.stdout.write(f"proposal written to {args.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
