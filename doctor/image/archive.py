"""Images without a daemon, for `fwdoctor check --image-archive FILE|DIR`.

Reads a `docker save` tarball (manifest.json -> Config and Layers) or an OCI image layout
(index.json -> manifest -> config and layer blobs under blobs/<alg>/<hex>), given as the
tar file or as the unpacked folder. The layers are applied in order into one in-memory
tree by fwdoctor.image.tree's TreeBuilder, with the same safety rules and the same "keep only
what the probes read" plan as an export, and with whiteouts honoured: `.wh.NAME` deletes
NAME from the layers below, `.wh..wh..opq` empties its folder of them. Nothing is written
to disk. Each layer blob is read once, front to back: gzip, bzip2 and xz through the
standard decompressor objects, zstd through the `zstandard` module when it is installed,
each call capped in what it hands back, into tarfile's plain mode over a forward-only reader
(linear in the layer; file data nobody reads is hashed and dropped chunk by chunk).

Every reader has a budget (`Limits`, issue 24): a layer's tar may expand to 64 MiB plus 50x
its compressed size, an image gets 600 s, at most 127 layers (Docker's own limit), JSON
files 8 MiB and 64 levels, member paths 256 folders. Digests are compared while the bytes
stream: each OCI descriptor's (index -> manifest -> config and layers), blob names of the
form blobs/sha256/HEX, and the config's rootfs.diff_ids against each uncompressed tar. Every
failure is an ImageError whose one-line message names the file at fault (and the limit).
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
import os
import platform
import posixpath
import re
import tarfile
import time
import zlib
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterator

from fwdoctor.image.inspected import ImageError, Inspected, parse_env
from fwdoctor.image.keep import KeepPlan, probe_plan
from fwdoctor.image.stream import ChunkReader
from fwdoctor.image.tree import TreeBuilder, TreeLimitError

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_MAGIC = {"gzip": b"\x1f\x8b", "bzip2": b"BZh", "xz": b"\xfd7zXZ\x00", "zstd": _ZSTD_MAGIC}
_INDEX_TYPES = ("application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json")
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x"}
_IN = 1 << 16  # compressed bytes fed to a decompressor at a time
_OUT = 1 << 20  # the most it may hand back at a time: memory stays at a chunk or two
_DIGEST = re.compile(r"(sha256|sha384|sha512):([0-9a-f]+)\Z")
_JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


@dataclass(frozen=True)
class Limits:
    """What one image may cost; past any of them the image is refused in one line naming
    the limit. The output cap is relative: a layer may expand to `floor_bytes` plus `ratio`
    times its compressed size. Real layers compress 2-5x (CUDA libraries ~2.5x); a 1 MB gzip
    of zeros expands ~1,000x and a 286-byte bzip2 layer to 800 MB (issue 24), and without the
    cap either cost minutes and gigabytes before the tar inside said anything."""

    deadline_s: float = 600.0  # the whole image: every layer read, hashed and applied
    layers: int = 127  # Docker's own limit on an image's layers
    ratio: int = 50
    floor_bytes: int = 64 << 20
    total_bytes: int = 256 << 30  # all layers' tar streams together
    json_bytes: int = 8 << 20  # index.json, a manifest or a config (real ones: a few KB to ~1 MB)
    json_depth: int = 64  # nesting of one of them (real ones: under 10)


LIMITS = Limits()


class _Budget:
    """The deadline and byte count of one image."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.deadline = time.monotonic() + limits.deadline_s
        self.total = 0

    def tick(self, what: str) -> None:
        if time.monotonic() > self.deadline:
            raise ImageError(f"{what}: not read within {self.limits.deadline_s:g} s (the limit for one image)")


class _Folder:
    """An OCI layout or an unpacked `docker save` as a folder."""

    def __init__(self, path: str) -> None:
        self.path = os.path.realpath(path)

    def _real(self, name: str) -> str | None:
        real = os.path.realpath(os.path.join(self.path, name))
        return real if real.startswith(self.path + os.sep) and os.path.isfile(real) else None

    def exists(self, name: str) -> bool:
        return self._real(name) is not None

    def size(self, name: str) -> int:
        real = self._real(name)
        return os.path.getsize(real) if real else 0

    def open(self, name: str) -> IO[bytes]:
        real = self._real(name)
        if real is None:
            raise FileNotFoundError(name)
        return open(real, "rb")

    def close(self) -> None:
        pass


class _Capped:
    """A decompressing file (gzip.GzipFile ...) that may not go past `cap` bytes nor past
    the deadline: the outer tarball of `docker save | gzip`, read at random like a plain one."""

    def __init__(self, inner: IO[bytes], cap: int, budget: _Budget) -> None:
        self.inner, self.cap, self.budget = inner, cap, budget

    def _past(self, position: int) -> None:
        if position > self.cap:
            raise ImageError(f"expands past {self.cap >> 20} MiB ({self.budget.limits.ratio}x its compressed size plus "
                             f"{self.budget.limits.floor_bytes >> 20} MiB, the limit): a decompression bomb?")
        self.budget.tick("the archive")

    def read(self, size: int = -1) -> bytes:
        position = self.inner.tell()
        size = self.cap + 1 - position if size is None or size < 0 else size
        self._past(position + min(size, _OUT * 64))
        return self.inner.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset + (self.inner.tell() if whence == 1 else 0)
        if whence == 2:
            raise OSError("a compressed archive is not read from its end")
        self._past(target)
        return self.inner.seek(target)

    def tell(self) -> int:
        return self.inner.tell()

    def close(self) -> None:
        self.inner.close()


class _Tarball:
    """A `docker save` tarball (or a tarred OCI layout): members found by name, read where
    they lie."""

    def __init__(self, path: str, budget: _Budget) -> None:
        with open(path, "rb") as handle:
            head = handle.read(6)
        opener = {"gzip": gzip.GzipFile, "bzip2": bz2.BZ2File, "xz": lzma.LZMAFile}
        kind = next((k for k, magic in _MAGIC.items() if head.startswith(magic)), None)
        if kind == "zstd":
            raise ImageError("a zstd-compressed archive is not read in place (unzstd it first)")
        fileobj = None
        if kind is not None:
            cap = budget.limits.floor_bytes + budget.limits.ratio * os.path.getsize(path)
            fileobj = _Capped(opener[kind](path, "rb"), cap, budget)
        self.archive = tarfile.open(path, mode="r:", fileobj=fileobj) if fileobj else tarfile.open(path, mode="r:")
        self.members = {}
        for m in self.archive:
            self.members[member_name(m.name)] = m
            if len(self.members) > 100_000:
                raise ImageError("more than 100,000 members in the archive (the limit; an image has a few per layer)")

    def exists(self, name: str) -> bool:
        member = self.members.get(name)
        return member is not None and (member.isfile() or member.issym() or member.islnk())

    def size(self, name: str) -> int:
        member = self.members.get(name)
        try:
            resolved = self.archive._find_link_target(member) if member is not None and not member.isfile() else member
        except (KeyError, tarfile.TarError):
            return 0
        return resolved.size if resolved is not None else 0

    def open(self, name: str) -> IO[bytes]:
        member = self.members.get(name)
        # tarfile follows a symlinked member (docker save links layers it shares) inside
        # the archive, one hop at a time.
        try:
            handle = self.archive.extractfile(member) if member is not None else None
        except (KeyError, RecursionError):
            raise ImageError(f"{name} is a link to nothing in the archive (or a loop of links)") from None
        if handle is None:
            raise FileNotFoundError(name)
        return handle

    def close(self) -> None:
        self.archive.close()


def member_name(name: str) -> str:
    """An outer archive member's name as the manifests write it: only a leading "./" goes
    (`lstrip("./")` also ate leading dots of names)."""
    while name.startswith("./"):
        name = name[2:]
    return posixpath.normpath(name or ".")


@dataclass(frozen=True)
class _Layer:
    name: str  # its path in the archive
    digest: str | None  # the blob's own digest, "sha256:..." (OCI descriptors, blobs/ names)
    diff_id: str | None  # the uncompressed tar's digest (the config's rootfs.diff_ids)


def load(path: str, plan: KeepPlan | None = None, limits: Limits = LIMITS) -> Inspected:
    """The image in a `docker save` tarball or OCI layout at `path`, read into memory
    like fwdoctor.image.local_engine.inspect. Raises ImageError."""
    budget = _Budget(limits)
    source = _open(path, budget)
    try:
        config, layers = _read_manifest(source, limits)
        builder = TreeBuilder(plan or probe_plan())
        for layer in layers:
            budget.tick(f"layer {layer.name}")
            try:
                with source.open(layer.name) as raw:
                    _apply_layer(builder, raw, layer, source.size(layer.name), budget)
            except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
                raise ImageError(f"layer {layer.name} is not a readable tar: {exc}") from None
            except TreeLimitError as exc:
                raise ImageError(f"layer {layer.name} brings the image to {exc}") from None
        return Inspected(builder.tree, parse_env(config.get("Env") or []), tuple(builder.skipped), config)
    finally:
        source.close()


def _open(path: str, budget: _Budget) -> _Folder | _Tarball:
    if os.path.isdir(path):
        return _Folder(path)
    if not os.path.exists(path):
        raise ImageError("no such file or folder")
    if not os.path.isfile(path):
        # A FIFO would block in open(), /dev/zero would read as an endless tar.
        raise ImageError("not a regular file nor a folder (a FIFO, socket or device is never read)")
    try:
        return _Tarball(path, budget)
    except tarfile.ReadError:
        raise ImageError("not a tar archive (a `docker save` tarball) nor an OCI layout folder") from None
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise ImageError(f"not a readable tar archive: {exc}") from None
    except OSError as exc:
        raise ImageError(exc.strerror or str(exc)) from None


def _hasher(digest: str | None, what: str) -> "hashlib._Hash | None":
    if digest is None:
        return None
    match = _DIGEST.match(digest)
    if match is None:
        raise ImageError(f"the {what} has a digest fwdoctor cannot check ({digest[:80]!r}; sha256, sha384 or sha512)")
    return hashlib.new(match.group(1))


def _verify(hasher: "hashlib._Hash | None", digest: str | None, what: str) -> None:
    if hasher is not None and digest is not None and f"{hasher.name}:{hasher.hexdigest()}" != digest:
        raise ImageError(f"{what} does not match its digest (it is {hasher.name}:{hasher.hexdigest()}, "
                         f"the manifest states {digest}): a tampered or corrupt archive")


def _json(source: _Folder | _Tarball, name: str, limits: Limits, digest: str | None = None) -> Any:
    _safe_name(name)
    hasher = _hasher(digest, name)
    try:
        with source.open(name) as handle:
            data = handle.read(limits.json_bytes + 1)
    except FileNotFoundError:
        raise ImageError(f"the manifest names {name}, which is not in the archive") from None
    except OSError as exc:
        raise ImageError(f"{name}: {exc.strerror or exc}") from None
    if len(data) > limits.json_bytes:
        raise ImageError(f"{name} is larger than {limits.json_bytes >> 20} MiB (the limit for an image's JSON)")
    if hasher is not None:
        hasher.update(data)
        _verify(hasher, digest, name)
    depth = deepest = 0
    for token in _JSON_TOKENS.finditer(data):
        char = token.group()[:1]
        if char in (b"[", b"{"):
            depth += 1
            if depth > limits.json_depth:
                raise ImageError(f"{name} nests deeper than {limits.json_depth} levels (the limit for an image's JSON)")
        elif char in (b"]", b"}"):
            depth -= 1
        deepest = max(deepest, depth)
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ImageError(f"{name} is not valid JSON: {str(exc)[:200]}") from None


def _safe_name(name: str) -> str:
    if not isinstance(name, str) or not name or name.startswith("/") or ".." in name.split("/"):
        raise ImageError(f"the manifest names {str(name)[:200]!r}, which is not a path inside the archive")
    return name


def _blob(descriptor: Any, what: str) -> tuple[str, str]:
    digest = descriptor.get("digest") if isinstance(descriptor, dict) else None
    alg, _, hexpart = str(digest or "").partition(":")
    if not alg or not hexpart or not alg.isalnum() or not all(c in "0123456789abcdef" for c in hexpart):
        raise ImageError(f"the {what} has no usable digest ({str(digest)[:100]!r})")
    return f"blobs/{alg}/{hexpart}", f"{alg}:{hexpart}"


def _read_manifest(source: _Folder | _Tarball, limits: Limits) -> tuple[dict[str, Any], list[_Layer]]:
    """(the image config's `config` part: Env, User, Entrypoint..., the layers in order)."""
    if source.exists("index.json"):
        config, config_name, layers = _oci(source, limits)
    elif source.exists("manifest.json"):
        config, config_name, layers = _docker(source, limits)
    else:
        raise ImageError("no index.json (OCI layout) and no manifest.json (docker save) in it")
    if len(layers) > limits.layers:
        raise ImageError(f"{config_name}'s image lists {len(layers)} layers (the limit is {limits.layers}, Docker's own)")
    rootfs = config.get("rootfs") if isinstance(config, dict) else None
    diff_ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if diff_ids is not None:
        # Absent in hand-made archives only; when stated, every layer is held to it.
        if not isinstance(diff_ids, list) or len(diff_ids) != len(layers) or not all(isinstance(d, str) for d in diff_ids):
            raise ImageError(f"{config_name} states {len(diff_ids) if isinstance(diff_ids, list) else 'no list of'} diff_ids "
                             f"for {len(layers)} layers")
        layers = [_Layer(layer.name, layer.digest, diff_id) for layer, diff_id in zip(layers, diff_ids)]
    return _config_part(config, config_name), layers


def _docker(source: _Folder | _Tarball, limits: Limits) -> tuple[Any, str, list[_Layer]]:
    manifest = _json(source, "manifest.json", limits)
    if not isinstance(manifest, list) or not manifest or not isinstance(manifest[0], dict):
        raise ImageError("manifest.json lists no image")
    entry = manifest[0]  # `docker save a b` holds several: the first is the one judged
    config_name, layers = entry.get("Config"), entry.get("Layers")
    if not isinstance(config_name, str) or not isinstance(layers, list):
        raise ImageError("manifest.json's image has no Config or no Layers")
    if len(layers) > limits.layers:
        raise ImageError(f"manifest.json's image lists {len(layers)} layers (the limit is {limits.layers}, Docker's own)")
    # Docker 25+ names blobs by digest (blobs/sha256/HEX); older ones name the config
    # HEX.json, HEX its sha256 (the image ID).
    config = _json(source, _safe_name(config_name), limits, _named_digest(config_name))
    names = [_safe_name(name) for name in layers]
    for name in names:
        if not source.exists(name):
            raise ImageError(f"manifest.json names layer {name}, which is not in the archive")
    return config, config_name, [_Layer(name, _named_digest(name), None) for name in names]


def _named_digest(name: str) -> str | None:
    match = re.fullmatch(r"blobs/(sha256|sha384|sha512)/([0-9a-f]{64,128})|([0-9a-f]{64})\.json", name)
    if match is None:
        return None
    return f"{match.group(1)}:{match.group(2)}" if match.group(1) else f"sha256:{match.group(3)}"


def _oci(source: _Folder | _Tarball, limits: Limits) -> tuple[Any, str, list[_Layer]]:
    node: Any = _json(source, "index.json", limits)
    where = "index.json"
    for _ in range(8):  # an index may point at an index (a multi-platform image)
        if not isinstance(node, dict):
            raise ImageError(f"{where} is not an OCI index or manifest")
        if node.get("mediaType") in _INDEX_TYPES or ("manifests" in node and "layers" not in node):
            descriptor = _pick(node.get("manifests"), where)
            where, digest = _blob(descriptor, f"manifest listed in {where}")
            node = _json(source, where, limits, digest)
            continue
        config_name, config_digest = _blob(node.get("config"), f"config of {where}")
        layers = node.get("layers")
        if not isinstance(layers, list):
            raise ImageError(f"{where} has no layers list")
        if len(layers) > limits.layers:
            raise ImageError(f"{where} lists {len(layers)} layers (the limit is {limits.layers}, Docker's own)")
        found = [_blob(layer, f"layer of {where}") for layer in layers]
        for name, _ in found:
            if not source.exists(name):
                raise ImageError(f"{where} names layer {name}, which is not in the archive")
        return _json(source, config_name, limits, config_digest), config_name, [_Layer(name, digest, None) for name, digest in found]
    raise ImageError("index.json nests indexes more than 8 deep")


def _pick(manifests: Any, where: str) -> dict[str, Any]:
    """The manifest for this machine's platform, else the only or first one."""
    if not isinstance(manifests, list) or not manifests:
        raise ImageError(f"{where} lists no manifest")
    arch = _GOARCH.get(platform.machine().lower(), platform.machine().lower())
    for item in manifests:
        plat = item.get("platform") if isinstance(item, dict) else None
        if isinstance(plat, dict) and plat.get("os") == "linux" and plat.get("architecture") == arch:
            return item
    # Attestation manifests (BuildKit's "unknown/unknown") are never the image.
    real = [m for m in manifests if isinstance(m, dict) and isinstance(m.get("platform") or {}, dict)
            and (m.get("platform") or {}).get("os") != "unknown"]
    return (real or manifests)[0]


def _config_part(config: Any, name: str) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise ImageError(f"the image config {name} is not a JSON object")
    part = config.get("config") or config.get("Config") or {}
    return dict(part) if isinstance(part, dict) else {}


# ----------------------------------------------------------------------------- one layer
def _apply_layer(builder: TreeBuilder, raw: IO[bytes], layer: _Layer, size: int, budget: _Budget) -> None:
    """Read one layer blob once, front to back: its digest over the blob, its diff_id over
    the tar inside, the tar applied to the tree. Decompression goes through decompressor
    objects with a cap on what each call hands back, into a forward-only reader that tarfile
    reads in its plain ("r:") mode, skipping file data nobody keeps chunk by chunk: linear
    in the layer, memory a few chunks. (tarfile's own "r|*" decompresses each read whole and
    copies its buffer on every read: time grew with the square of the output.)"""
    blob_hash = _hasher(layer.digest, f"layer {layer.name}")
    tar_hash = _hasher(layer.diff_id, f"layer {layer.name}'s diff_id")
    limits = budget.limits
    cap = min(limits.floor_bytes + limits.ratio * size, limits.total_bytes - budget.total)
    consumed = [0]

    def read(n: int) -> bytes:
        data = raw.read(n)
        if blob_hash is not None:
            blob_hash.update(data)
        consumed[0] += len(data)
        return data

    head = read(262)
    kind = "tar" if head[257:262] == b"ustar" else next((k for k, magic in _MAGIC.items() if head.startswith(magic)), "tar")
    if kind == "tar" and blob_hash is not None and layer.digest == layer.diff_id:
        tar_hash = None  # an uncompressed blob (Docker 25+'s docker save) is its own diff_id: hashed once

    def counted() -> Iterator[bytes]:
        out = 0
        for chunk in _inflate(kind, head, read, layer.name):
            out += len(chunk)
            if out > cap:
                raise ImageError(f"layer {layer.name} expands past {cap >> 20} MiB ({limits.ratio}x its {size:,} bytes plus "
                                 f"{limits.floor_bytes >> 20} MiB, the limit): a decompression bomb?")
            budget.tick(f"layer {layer.name}")
            if tar_hash is not None:
                tar_hash.update(chunk)
            yield chunk
        budget.total += out

    chunks = counted()
    builder.apply(ChunkReader(chunks), layer=True, mode="r:")
    for _ in chunks:  # the rest past the tar's end: still part of the digests
        pass
    while read(_OUT):
        budget.tick(f"layer {layer.name}")
    _verify(blob_hash, layer.digest, f"layer {layer.name}")
    _verify(tar_hash, layer.diff_id, f"layer {layer.name}'s uncompressed tar (its diff_id)")


def _inflate(kind: str, head: bytes, read: Callable[[int], bytes], name: str) -> Iterator[bytes]:
    """The layer's tar stream in chunks of at most _OUT bytes."""
    if kind == "tar":
        yield head
        while chunk := read(_OUT):
            yield chunk
        return
    if kind == "zstd":
        try:
            import zstandard  # type: ignore[import-not-found]
        except ImportError:
            raise ImageError(f"layer {name} is zstd-compressed and the zstandard module is not installed (pip install zstandard)") from None

        class _Raw:
            def __init__(self) -> None:
                self.pending = head

            def read(self, n: int = -1) -> bytes:
                if self.pending:
                    data, self.pending = self.pending, b""
                    return data
                return read(n if n and n > 0 else _IN)

        reader = zstandard.ZstdDecompressor().stream_reader(_Raw(), read_size=_IN, read_across_frames=True)
        try:
            while chunk := reader.read(_OUT):
                yield chunk
        except zstandard.ZstdError as exc:
            raise ImageError(f"layer {name} is not a readable tar: not a zstd stream ({exc})") from None
        return
    new = {"gzip": lambda: zlib.decompressobj(16 + zlib.MAX_WBITS), "bzip2": bz2.BZ2Decompressor,
           "xz": lambda: lzma.LZMADecompressor(lzma.FORMAT_XZ)}[kind]
    decomp, pending = new(), head
    try:
        while True:
            if not pending:
                pending = read(_IN)
                if not pending:
                    if not decomp.eof:
                        raise ImageError(f"layer {name} is not a readable tar: it ends inside its {kind} stream (truncated)")
                    return
            if kind == "gzip":
                chunk = decomp.decompress(pending, _OUT)
                pending = decomp.unconsumed_tail
            else:
                chunk = decomp.decompress(pending, _OUT)
                pending = b""
                while not decomp.eof and not decomp.needs_input:
                    if chunk:
                        yield chunk
                    chunk = decomp.decompress(b"", _OUT)
            if chunk:
                yield chunk
            if decomp.eof:
                # (zlib repeats the bytes past the end in unconsumed_tail: unused_data alone.)
                rest = decomp.unused_data or read(_IN)
                if not rest.startswith(_MAGIC[kind]):
                    return  # padding or trailing bytes after the last stream: hashed, not unpacked
                # Concatenated streams (pigz, pbzip2, multi-member gzip) are one stream.
                decomp, pending = new(), rest
    except (zlib.error, OSError, EOFError, lzma.LZMAError) as exc:
        raise ImageError(f"layer {name} is not a readable tar: not a {kind} stream ({exc})") from None
