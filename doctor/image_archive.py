"""Images without a daemon, for `fwdoctor check --image-archive FILE|DIR`.

Reads a `docker save` tarball (manifest.json -> Config and Layers) or an OCI image layout
(index.json -> manifest -> config and layer blobs under blobs/<alg>/<hex>), given as the
tar file or as the unpacked folder. The layers are applied in order into one in-memory
tree by fwdoctor.imagefs's TreeBuilder, with the same safety rules and the same "keep only
what the probes read" plan as an export, and with whiteouts honoured: `.wh.NAME` deletes
NAME from the layers below, `.wh..wh..opq` empties its folder of them. Nothing is written
to disk. A plain-tar layer is read where it lies, seeking over file data nobody reads (so
a `docker save` tarball costs its headers, not its size); gzip, bzip2 and xz layers stream
through tarfile, zstd through the `zstandard` module when it is installed.

Every failure is an ImageError whose message names the file at fault.
"""

from __future__ import annotations

import json
import os
import platform
import posixpath
import tarfile
from typing import IO, Any

from fwdoctor.image import ImageError, Inspected, KeepPlan, parse_env, probe_plan
from fwdoctor.imagefs import TreeBuilder

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_INDEX_TYPES = ("application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json")
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x"}


class _Folder:
    """An OCI layout or an unpacked `docker save` as a folder."""

    def __init__(self, path: str) -> None:
        self.path = os.path.realpath(path)

    def _real(self, name: str) -> str | None:
        real = os.path.realpath(os.path.join(self.path, name))
        return real if real.startswith(self.path + os.sep) and os.path.isfile(real) else None

    def exists(self, name: str) -> bool:
        return self._real(name) is not None

    def open(self, name: str) -> IO[bytes]:
        real = self._real(name)
        if real is None:
            raise FileNotFoundError(name)
        return open(real, "rb")

    def close(self) -> None:
        pass


class _Tarball:
    """A `docker save` tarball (or a tarred OCI layout): members found by name, read where
    they lie."""

    def __init__(self, path: str) -> None:
        self.archive = tarfile.open(path, mode="r:*")
        self.members = {posixpath.normpath(m.name.lstrip("./") or "."): m for m in self.archive.getmembers()}

    def exists(self, name: str) -> bool:
        member = self.members.get(name)
        return member is not None and (member.isfile() or member.issym() or member.islnk())

    def open(self, name: str) -> IO[bytes]:
        member = self.members.get(name)
        # tarfile follows a symlinked member (docker save links layers it shares) inside the archive.
        handle = self.archive.extractfile(member) if member is not None else None
        if handle is None:
            raise FileNotFoundError(name)
        return handle

    def close(self) -> None:
        self.archive.close()


def load(path: str, plan: KeepPlan | None = None) -> Inspected:
    """The image in a `docker save` tarball or OCI layout at `path`, read into memory
    like fwdoctor.image.inspect. Raises ImageError."""
    source = _open(path)
    try:
        config, layers = _read_manifest(source)
        builder = TreeBuilder(plan or probe_plan())
        for name in layers:
            try:
                with source.open(name) as raw:
                    stream, mode = _decompressed(raw, name)
                    builder.apply(stream, layer=True, mode=mode)
            except (tarfile.TarError, EOFError, OSError) as exc:
                raise ImageError(f"layer {name} is not a readable tar: {exc}") from None
        return Inspected(builder.tree, parse_env(config.get("Env") or []), tuple(builder.skipped), config)
    finally:
        source.close()


def _open(path: str) -> _Folder | _Tarball:
    if os.path.isdir(path):
        return _Folder(path)
    if not os.path.exists(path):
        raise ImageError("no such file or folder")
    if not os.path.isfile(path):
        # A FIFO would block in open(), /dev/zero would read as an endless tar.
        raise ImageError("not a regular file nor a folder (a FIFO, socket or device is never read)")
    try:
        return _Tarball(path)
    except tarfile.ReadError:
        raise ImageError("not a tar archive (a `docker save` tarball) nor an OCI layout folder") from None
    except (tarfile.TarError, EOFError) as exc:
        raise ImageError(f"not a readable tar archive: {exc}") from None
    except OSError as exc:
        raise ImageError(exc.strerror or str(exc)) from None


def _json(source: _Folder | _Tarball, name: str) -> Any:
    _safe_name(name)
    try:
        with source.open(name) as handle:
            return json.loads(handle.read(64 * 1024 * 1024))
    except FileNotFoundError:
        raise ImageError(f"the manifest names {name}, which is not in the archive") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ImageError(f"{name} is not valid JSON: {exc}") from None
    except OSError as exc:
        raise ImageError(f"{name}: {exc.strerror or exc}") from None


def _safe_name(name: str) -> str:
    if not isinstance(name, str) or not name or name.startswith("/") or ".." in name.split("/"):
        raise ImageError(f"the manifest names {name!r}, which is not a path inside the archive")
    return name


def _blob(descriptor: Any, what: str) -> str:
    digest = descriptor.get("digest") if isinstance(descriptor, dict) else None
    alg, _, hexpart = str(digest or "").partition(":")
    if not alg or not hexpart or not alg.isalnum() or not all(c in "0123456789abcdef" for c in hexpart):
        raise ImageError(f"the {what} has no usable digest ({digest!r})")
    return f"blobs/{alg}/{hexpart}"


def _read_manifest(source: _Folder | _Tarball) -> tuple[dict[str, Any], list[str]]:
    """(the image config's `config` part: Env, User, Entrypoint..., layer names in order)."""
    if source.exists("index.json"):
        return _oci(source)
    if source.exists("manifest.json"):
        return _docker(source)
    raise ImageError("no index.json (OCI layout) and no manifest.json (docker save) in it")


def _docker(source: _Folder | _Tarball) -> tuple[dict[str, Any], list[str]]:
    manifest = _json(source, "manifest.json")
    if not isinstance(manifest, list) or not manifest or not isinstance(manifest[0], dict):
        raise ImageError("manifest.json lists no image")
    entry = manifest[0]  # `docker save a b` holds several: the first is the one judged
    config_name, layers = entry.get("Config"), entry.get("Layers")
    if not isinstance(config_name, str) or not isinstance(layers, list):
        raise ImageError("manifest.json's image has no Config or no Layers")
    config = _json(source, _safe_name(config_name))
    names = [_safe_name(name) for name in layers]
    for name in names:
        if not source.exists(name):
            raise ImageError(f"manifest.json names layer {name}, which is not in the archive")
    return _config_part(config, config_name), names


def _oci(source: _Folder | _Tarball) -> tuple[dict[str, Any], list[str]]:
    node: Any = _json(source, "index.json")
    where = "index.json"
    for _ in range(8):  # an index may point at an index (a multi-platform image)
        if not isinstance(node, dict):
            raise ImageError(f"{where} is not an OCI index or manifest")
        if node.get("mediaType") in _INDEX_TYPES or ("manifests" in node and "layers" not in node):
            descriptor = _pick(node.get("manifests"), where)
            where = _blob(descriptor, f"manifest listed in {where}")
            node = _json(source, where)
            continue
        config_name = _blob(node.get("config"), f"config of {where}")
        layers = node.get("layers")
        if not isinstance(layers, list):
            raise ImageError(f"{where} has no layers list")
        names = [_blob(layer, f"layer of {where}") for layer in layers]
        for name in names:
            if not source.exists(name):
                raise ImageError(f"{where} names layer {name}, which is not in the archive")
        return _config_part(_json(source, config_name), config_name), names
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
    real = [m for m in manifests if isinstance(m, dict) and (m.get("platform") or {}).get("os") != "unknown"]
    return (real or manifests)[0]


def _config_part(config: Any, name: str) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise ImageError(f"the image config {name} is not a JSON object")
    part = config.get("config") or config.get("Config") or {}
    return dict(part) if isinstance(part, dict) else {}


def _decompressed(raw: IO[bytes], name: str) -> tuple[IO[bytes], str]:
    """The layer and the tarfile mode to read it in: a plain tar where it lies, seeking
    over file data nobody reads ("r:"); gzip, bzip2 and xz through tarfile's stream
    mode; zstd through the optional `zstandard` module."""
    head = raw.read(262)
    raw.seek(0)
    if head[257:262] == b"ustar":
        return raw, "r:"
    if head[:4] != _ZSTD_MAGIC:
        return raw, "r|*"
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError:
        raise ImageError(f"layer {name} is zstd-compressed and the zstandard module is not installed (pip install zstandard)") from None
    return zstandard.ZstdDecompressor().stream_reader(raw), "r|"
