"""A Docker image's filesystem and ENV, for `fwdoctor check --image TAG`.

The image is never run: a container is created (not started), its filesystem exported as
a tar stream, and the stream unpacked into a temporary folder that `Host.at_root` then
treats as `/`. Unpacking is defensive, because an image is untrusted input: members with
absolute paths or `..` components, device nodes, FIFOs and hard links that point outside
the tree are skipped, and symlinks are kept as links (Host resolves them inside the root).
"""

from __future__ import annotations

import atexit
import os
import posixpath
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from typing import IO, Any, Iterable, Iterator

# An export streams the whole rootfs; a chunked reader keeps memory flat.
_CHUNK = 1 << 20


class ImageError(RuntimeError):
    """The image cannot be inspected; the message says why in one line."""


@dataclass(frozen=True)
class Exported:
    root: str  # folder holding the image's filesystem (removed at exit)
    env: dict[str, str]  # the image's ENV (Config.Env)
    skipped: tuple[str, ...] = ()  # members refused by the safe unpacker, with the reason


def export(tag: str, client: Any = None, keep: bool = False) -> Exported:
    """Export image `tag` into a temporary folder. Raises ImageError."""
    client = client or docker_client()
    import docker.errors

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        raise ImageError(f"no image {tag!r} in the local engine (pull or build it first)") from None
    except docker.errors.APIError as exc:
        raise ImageError(f"the Docker engine refused: {api_message(exc)}") from None
    env = parse_env((image.attrs.get("Config") or {}).get("Env") or [])
    root = tempfile.mkdtemp(prefix="fwdoctor-image-")
    if not keep:
        atexit.register(shutil.rmtree, root, True)
    container = None
    try:
        # Created, never started: nothing in the image runs. A command is needed only for
        # images without CMD/ENTRYPOINT, and is never executed.
        container = client.containers.create(image.id, command=["/nonexistent-fwdoctor-export"], entrypoint=[], network_disabled=True)
        skipped = safe_extract(_ChunkReader(container.export(chunk_size=_CHUNK)), root)
    except docker.errors.APIError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise ImageError(f"exporting {tag!r} failed: {api_message(exc)}") from None
    except tarfile.TarError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise ImageError(f"the export of {tag!r} is not a readable tar stream: {exc}") from None
    finally:
        if container is not None:
            try:
                container.remove(force=True)
            except Exception:  # the export worked; a leftover container is not worth failing for
                pass
    return Exported(root, env, tuple(skipped))


def parse_env(items: Iterable[str]) -> dict[str, str]:
    """Docker's ["KEY=VALUE", ...] as a mapping (a bare KEY means empty)."""
    env: dict[str, str] = {}
    for item in items:
        key, _, value = str(item).partition("=")
        if key:
            env[key] = value
    return env


def safe_extract(stream: IO[bytes], dest: str) -> list[str]:
    """Unpack a tar stream into `dest`, refusing anything that could escape or is not a
    plain file, folder or symlink. Returns "member: why" for each refused member."""
    skipped: list[str] = []
    os.makedirs(dest, exist_ok=True)
    dest_real = os.path.realpath(dest)
    # Parent folders already proven to lie inside the tree (realpath costs a syscall per
    # path component); forgotten whenever a symlink is created, which could change that.
    safe_parents: set[str] = set()
    with tarfile.open(fileobj=stream, mode="r|*") as archive:
        for member in archive:
            why = _refusal(member)
            if why:
                skipped.append(f"{member.name}: {why}")
                continue
            rel = posixpath.normpath(member.name.lstrip("./") or ".")
            target = os.path.join(dest_real, rel)
            parent = os.path.dirname(target)
            # A symlinked parent could point anywhere: only write through real folders.
            if parent not in safe_parents:
                if not _inside_real(dest_real, parent):
                    skipped.append(f"{member.name}: parent folder is a link out of the tree")
                    continue
                safe_parents.add(parent)
            try:
                if member.isdir():
                    os.makedirs(target, exist_ok=True)
                    os.chmod(target, 0o755 | (member.mode & 0o777))
                elif member.issym():
                    safe_parents.clear()
                    os.makedirs(parent, exist_ok=True)
                    _remove(target)
                    os.symlink(member.linkname, target)
                elif member.islnk():
                    source = os.path.join(dest_real, posixpath.normpath(member.linkname.lstrip("./")))
                    if not _inside_real(dest_real, source) or not os.path.isfile(source) or os.path.islink(source):
                        skipped.append(f"{member.name}: hard link to {member.linkname} outside the unpacked files")
                        continue
                    os.makedirs(parent, exist_ok=True)
                    _remove(target)
                    shutil.copyfile(source, target)
                    os.chmod(target, member.mode & 0o755)
                else:
                    os.makedirs(parent, exist_ok=True)
                    _remove(target)
                    handle = archive.extractfile(member)
                    if handle is None:
                        skipped.append(f"{member.name}: no data")
                        continue
                    with open(target, "wb") as out:
                        shutil.copyfileobj(handle, out, _CHUNK)
                    # No setuid/setgid/sticky bits, and readable by us.
                    os.chmod(target, (member.mode & 0o755) | 0o600)
            except OSError as exc:
                skipped.append(f"{member.name}: {exc.strerror or exc}")
    return skipped


def _refusal(member: tarfile.TarInfo) -> str:
    name = member.name
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "absolute path"
    if ".." in name.split("/"):
        return "'..' in the path"
    if member.ischr() or member.isblk():
        return "device node"
    if member.isfifo():
        return "FIFO"
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        return f"unsupported member type {member.type!r}"
    return ""


def _inside_real(root: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


def _remove(path: str) -> None:
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


class _ChunkReader:
    """A file-like view of an iterator of byte chunks (what docker-py's export yields)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            try:
                self._buffer += next(self._chunks)
            except StopIteration:
                break
        if size < 0:
            data, self._buffer = self._buffer, b""
        else:
            data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data


def docker_client() -> Any:
    """A connected Docker SDK client (600 s per call). Raises ImageError when there is none."""
    try:
        import docker
    except ImportError:
        raise ImageError("the Docker SDK is not installed (pip install 'fwdoctor[docker]')") from None
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:  # docker.errors.DockerException and connection errors alike
        raise ImageError(f"no Docker engine reachable ({_short(exc)}); start dockerd or set DOCKER_HOST") from None
    return client


def api_message(exc: Any) -> str:
    """A docker.errors.APIError's first line (the engine's explanation), at most 300 characters."""
    lines = str(getattr(exc, "explanation", None) or exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:300]


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
