"""A Docker image's filesystem and ENV, for `fwdoctor check --image TAG`.

The image is never run: a container is created (not started) and its filesystem exported
as one tar stream, read once, front to back (tarfile over a forward-only reader: file
data nobody reads is dropped chunk by chunk, nothing is buffered beyond a chunk). `inspect` builds from it an in-memory `fwdoctor.imagefs.ImageTree`: every
folder, symlink and file with its type, mode, size and link target, and content only for
the files the probes declare they read (`fwdoctor.probes.READS`, compiled into a
`KeepPlan`), each up to the probe's own read limit; a large binary scanned for a marker
(NCCL's version string) is kept only up to the chunk where the marker was seen. Nothing is
written to disk, whatever the image's size. `fwdoctor.image_archive` builds the same tree
from a `docker save` tarball or an OCI layout, without an engine.

`export` writes such a skeleton to a folder for `--root` (sparse placeholders of the real
size for files whose content is not kept). Unpacking to disk is defensive, because an
image is untrusted input: members with absolute paths or `..` components, device nodes,
FIFOs and hard links that point outside the tree are skipped, nothing is written through a
symlink, and symlinks are kept as links (Host resolves them inside the root).
"""

from __future__ import annotations

import atexit
import os
import posixpath
import re
import shutil
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterable, Iterator, Mapping, Sequence

from fwdoctor.imagefs import KEEP_BUDGET, ImageHost, ImageTree, TreeBuilder, TreeLimitError, member_path

# An export streams the whole rootfs; a chunked reader keeps memory flat.
_CHUNK = 1 << 20
# The whole export of one image, as an image archive gets (image_archive.Limits.deadline_s):
# an engine that streams slower than that is refused, not waited on. A read that stalls
# inside one chunk is ended by the client's own 600 s socket timeout (docker_client).
EXPORT_DEADLINE_S = 600.0



class ImageError(RuntimeError):
    """The image cannot be inspected; the message says why in one line."""


@dataclass(frozen=True)
class Exported:
    root: str  # folder holding the image's filesystem skeleton (removed at exit)
    env: dict[str, str]  # the image's ENV (Config.Env)
    skipped: tuple[str, ...] = ()  # members refused by the safe unpacker, with the reason
    config: dict[str, Any] = field(default_factory=dict)  # User, Entrypoint, Cmd, WorkingDir...


# ----------------------------------------------------------------------------- what to keep
def glob_regex(pattern: str) -> str:
    """A Read pattern as a regex over "/path/in/image": `*` and `?` stay inside one
    component, `**/` matches any folders (none included), a trailing `**` anything below."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            out.append("[^" + re.escape(body[1:]) + "]" if body.startswith("!") else "[" + re.escape(body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    if not pattern.startswith(("/", "**/")):
        out.insert(0, "/")
    return "".join(out)


class KeepPlan:
    """Which files keep content, and how much: compiled from the probes' Read list."""

    def __init__(self, reads: Sequence[Any]) -> None:
        self._reads = [(re.compile(glob_regex(r.pattern) + r"\Z"), r.limit, r.until) for r in reads]
        # One combined test first: most members match nothing.
        self._any = re.compile("|".join(f"(?:{glob_regex(r.pattern)})" for r in reads) + r"\Z") if reads else None

    def rule(self, path: str) -> tuple[int, "re.Pattern[bytes] | None"] | None:
        """(bytes to keep from the start, marker after which to stop) for a file at the
        absolute image path `path`, or None for a placeholder."""
        if self._any is None or not self._any.match(path):
            return None
        limit, untils, bounded = 0, [], True
        for regex, read_limit, until in self._reads:
            if regex.match(path):
                limit = max(limit, read_limit)
                bounded = bounded and until is not None
                if until is not None:
                    untils.append(until)
        # A marker only ends the keeping when every read of this file stops at one.
        return limit, (untils[0] if bounded and len(untils) == 1 else None)


def probe_plan() -> KeepPlan:
    """The plan for the probes `fwdoctor check` runs."""
    from fwdoctor.probes import READS

    return KeepPlan(READS)


# ----------------------------------------------------------------------------- export
@dataclass(frozen=True)
class Inspected:
    """An image read into memory: what `check --image` / `--image-archive` judge."""

    tree: ImageTree
    env: dict[str, str]  # the image's ENV (Config.Env)
    skipped: tuple[str, ...] = ()  # members refused, with the reason
    config: dict[str, Any] = field(default_factory=dict)  # User, Entrypoint, Cmd, WorkingDir...

    def host(self, env: Mapping[str, str] | None = None) -> ImageHost:
        """A Host over the image; `env` (an --env-file) overrides the image's ENV."""
        return ImageHost.of_tree(self.tree, {**self.env, **(env or {})})


def inspect(tag: str, client: Any = None, plan: KeepPlan | None = None) -> Inspected:
    """Read image `tag` through one export stream into memory. Raises ImageError."""
    builder = TreeBuilder(plan or probe_plan())
    # An export is a plain tar: read in tarfile's random-access mode over a forward-only
    # reader, so file data nobody reads is dropped, not copied (see ChunkReader).
    config = _export_stream(tag, client, lambda stream: builder.apply(stream, mode="r:"))
    # The engine adds /.dockerenv to every container's filesystem, so the export has it and
    # the image (its docker save) does not; read as the image, like /etc/hostname (the old
    # lstrip("./") hid this: the export's file read as /dockerenv).
    builder.tree.remove("/.dockerenv")
    return Inspected(builder.tree, parse_env(config.get("Env") or []), tuple(builder.skipped), config)


def export(tag: str, client: Any = None, keep: bool = False, plan: KeepPlan | None = None) -> Exported:
    """Export image `tag` into a temporary skeleton folder for `--root` (see the module
    doc). Raises ImageError."""
    root = tempfile.mkdtemp(prefix="fwdoctor-image-")
    if not keep:
        atexit.register(shutil.rmtree, root, True)
    unpacker = Unpacker(root, plan or probe_plan())
    try:
        config = _export_stream(tag, client, unpacker.apply)
    except ImageError:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return Exported(root, parse_env(config.get("Env") or []), tuple(unpacker.skipped), config)


def _export_stream(tag: str, client: Any, consume: Callable[[IO[bytes]], None]) -> dict[str, Any]:
    """Create (never start) a container of `tag`, hand its export stream to `consume`,
    remove it; returns the image's Config. Raises ImageError."""
    client = client or docker_client()
    import docker.errors

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        raise ImageError(f"no image {tag!r} in the local engine (pull or build it first)") from None
    except docker.errors.APIError as exc:
        raise ImageError(f"the Docker engine refused: {api_message(exc)}") from None
    config = dict(image.attrs.get("Config") or {})
    container = None
    try:
        # Created, never started: nothing in the image runs. A command is needed only for
        # images without CMD/ENTRYPOINT, and is never executed.
        container = client.containers.create(image.id, command=["/nonexistent-fwdoctor-export"], entrypoint=[], network_disabled=True)
        consume(ChunkReader(_within_deadline(container.export(chunk_size=_CHUNK), f"the export of {tag!r}", EXPORT_DEADLINE_S)))
    except docker.errors.APIError as exc:
        raise ImageError(f"exporting {tag!r} failed: {api_message(exc)}") from None
    except tarfile.TarError as exc:
        raise ImageError(f"the export of {tag!r} is not a readable tar stream: {exc}") from None
    except TreeLimitError as exc:
        raise ImageError(f"the export of {tag!r} has {exc}") from None
    finally:
        if container is not None:
            try:
                container.remove(force=True)
            except Exception:  # the export worked; a leftover container is not worth failing for
                pass
    return config


def _within_deadline(chunks: Iterable[bytes], what: str, seconds: float) -> Iterator[bytes]:
    """The chunks of a stream until `seconds` have passed since the first was asked for;
    then an ImageError naming the stream and the limit."""
    deadline = time.monotonic() + seconds
    for chunk in chunks:
        if time.monotonic() > deadline:
            raise ImageError(f"{what}: not read within {seconds:g} s (the limit for one image)")
        yield chunk


def parse_env(items: Iterable[str]) -> dict[str, str]:
    """Docker's ["KEY=VALUE", ...] as a mapping (a bare KEY means empty)."""
    env: dict[str, str] = {}
    for item in items:
        key, _, value = str(item).partition("=")
        if key:
            env[key] = value
    return env


def safe_extract(stream: IO[bytes], dest: str, plan: KeepPlan | None = None) -> list[str]:
    """Unpack a tar stream into `dest`, refusing anything that could escape or is not a
    plain file, folder or symlink. With a `plan`, files keep only what it says (a
    skeleton); without, everything. Returns "member: why" for each refused member."""
    unpacker = Unpacker(dest, plan)
    unpacker.apply(stream)
    return unpacker.skipped


class Unpacker:
    """Unpacks a tar stream into a folder: everything, or with a plan a skeleton."""

    def __init__(self, dest: str, plan: KeepPlan | None = None, budget: int = KEEP_BUDGET) -> None:
        os.makedirs(dest, exist_ok=True)
        self.dest = os.path.realpath(dest)
        self.plan = plan
        self.budget = budget
        self.skipped: list[str] = []
        self.kept_bytes = 0
        # rel path -> bytes of real content on disk (a placeholder's tail is a hole).
        self._kept: dict[str, int] = {}
        # Parent folders already proven to lie inside the tree (realpath costs a syscall per
        # path component); forgotten whenever a symlink is created, which could change that.
        self._safe_parents: set[str] = set()

    def apply(self, stream: IO[bytes]) -> None:
        with tarfile.open(fileobj=stream, mode="r|*", bufsize=_CHUNK) as archive:
            for member in archive:
                why = _refusal(member)
                if why:
                    self.skipped.append(f"{member.name}: {why}")
                    continue
                rel = member_path(member.name)[1:] or "."
                self._member(archive, member, rel)

    # ------------------------------------------------------------------ members
    def _parent_ok(self, member_name: str, parent: str) -> bool:
        # A symlinked parent could point anywhere: only write through real folders.
        if parent not in self._safe_parents:
            if not _inside_real(self.dest, parent):
                self.skipped.append(f"{member_name}: parent folder is a link out of the tree")
                return False
            self._safe_parents.add(parent)
        return True

    def _member(self, archive: tarfile.TarFile, member: tarfile.TarInfo, rel: str) -> None:
        target = os.path.join(self.dest, rel) if rel != "." else self.dest
        parent = os.path.dirname(target)
        if rel != "." and not self._parent_ok(member.name, parent):
            return
        try:
            if member.isdir():
                if os.path.islink(target) or (os.path.lexists(target) and not os.path.isdir(target)):
                    _remove(target)  # a dir replacing a link: never chmod through the link
                    self._safe_parents.clear()
                os.makedirs(target, exist_ok=True)
                os.chmod(target, 0o755 | (member.mode & 0o777))
            elif member.issym():
                self._safe_parents.clear()
                os.makedirs(parent, exist_ok=True)
                _remove(target)
                self._kept.pop(rel, None)
                os.symlink(member.linkname, target)
            elif member.islnk():
                self._hardlink(member, rel, target, parent)
            else:
                os.makedirs(parent, exist_ok=True)
                _remove(target)
                self._file(archive, member, rel, target)
        except OSError as exc:
            self.skipped.append(f"{member.name}: {exc.strerror or exc}")

    def _hardlink(self, member: tarfile.TarInfo, rel: str, target: str, parent: str) -> None:
        source_rel = member_path(member.linkname)[1:] or "."
        source = os.path.join(self.dest, source_rel)
        if not _inside_real(self.dest, source) or not os.path.isfile(source) or os.path.islink(source):
            self.skipped.append(f"{member.name}: hard link to {member.linkname} outside the unpacked files")
            return
        os.makedirs(parent, exist_ok=True)
        _remove(target)
        size = os.path.getsize(source)
        want = self._want(rel, size)
        have = self._kept.get(source_rel, size if self.plan is None else 0)
        # Copy only real content: a placeholder's hole must stay a hole.
        with open(source, "rb") as src:
            data = src.read(min(want, have))
        self._write(rel, target, iter([data]) if data else iter(()), size, member.mode, len(data), None, member.name)

    def _file(self, archive: tarfile.TarFile, member: tarfile.TarInfo, rel: str, target: str) -> None:
        rule = self.plan.rule("/" + rel) if self.plan is not None else None
        want = member.size if self.plan is None else min(member.size, rule[0]) if rule else 0
        until = rule[1] if rule else None
        chunks: Iterator[bytes] = iter(())
        if want:
            handle = archive.extractfile(member)
            if handle is None:
                self.skipped.append(f"{member.name}: no data")
                return
            chunks = _read_chunks(handle, want)
        self._write(rel, target, chunks, member.size, member.mode, want, until, member.name)

    def _want(self, rel: str, size: int) -> int:
        """Bytes of this file to keep: all without a plan, else the declared limit."""
        if self.plan is None:
            return size
        rule = self.plan.rule("/" + rel)
        return min(size, rule[0]) if rule else 0

    def _write(self, rel: str, target: str, chunks: Iterator[bytes], size: int, mode: int, want: int, until: "re.Pattern[bytes] | None", name: str) -> None:
        if self.plan is not None and want and self.kept_bytes + want > self.budget:
            self.skipped.append(f"{name}: content not kept (the {self.budget >> 20} MB budget for kept files is spent)")
            chunks, want = iter(()), 0
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(target, flags, 0o600)
        written = 0
        try:
            tail = b""
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
                written += len(chunk)
                if until is not None:
                    if until.search(tail + chunk):
                        break  # the scanning probe stops in this chunk: nothing after it is read
                    tail = chunk[-256:]
            # The rest of the file is a hole: its size is right, its blocks never written.
            os.ftruncate(fd, size)
            # No setuid/setgid/sticky bits, and readable by us.
            os.fchmod(fd, (mode & 0o755) | 0o600)
        finally:
            os.close(fd)
        self.kept_bytes += written
        if written:
            self._kept[rel] = written
        else:
            self._kept.pop(rel, None)


def _read_chunks(handle: IO[bytes], limit: int) -> Iterator[bytes]:
    left = limit
    while left > 0:
        chunk = handle.read(min(_CHUNK, left))
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


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
    elif os.path.lexists(path):
        os.unlink(path)


class ChunkReader:
    """A file-like view of an iterator of byte chunks (what docker-py's export yields).

    Reads hand out slices of the current chunk through an offset, so a stream of N bytes
    costs O(N) copying whatever the read size (tarfile asks for small blocks). It can also
    seek *forward*: skipped bytes are dropped chunk by chunk, never copied, which lets
    tarfile's random-access mode ("r:") step over the gigabytes of file data the probes
    never read at the speed the stream arrives (its stream mode, "r|", copies every byte
    three times on the way past)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._chunk = b""
        self._offset = 0
        self._position = 0  # bytes of the stream consumed so far

    def tell(self) -> int:
        return self._position

    def seekable(self) -> bool:
        return True  # forward only; tarfile never seeks back while iterating

    def seek(self, position: int, whence: int = 0) -> int:
        if whence == 1:
            position += self._position
        elif whence != 0:
            raise OSError("a stream cannot seek from its end")
        skip = position - self._position
        if skip < 0:
            if -skip > self._offset:
                raise OSError(f"a stream cannot seek back {-skip} bytes")
            self._offset += skip  # back within the current chunk
            self._position = position
            return position
        while skip > 0:
            left = len(self._chunk) - self._offset
            if left >= skip:
                self._offset += skip
                break
            skip -= left
            self._position += left
            try:
                self._chunk, self._offset = next(self._chunks), 0
            except StopIteration:
                self._chunk, self._offset = b"", 0
                return self._position
        self._position = position
        return position

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            parts = [self._chunk[self._offset:], *self._chunks]
            self._chunk, self._offset = b"", 0
            data = b"".join(parts)
            self._position += len(data)
            return data
        parts: list[bytes] = []
        while size > 0:
            if self._offset >= len(self._chunk):
                try:
                    self._chunk, self._offset = next(self._chunks), 0
                except StopIteration:
                    break
                continue
            piece = self._chunk[self._offset:self._offset + size]
            self._offset += len(piece)
            self._position += len(piece)
            size -= len(piece)
            parts.append(piece)
        return parts[0] if len(parts) == 1 else b"".join(parts)


_ChunkReader = ChunkReader  # the name earlier releases used


def docker_client() -> Any:
    """A connected Docker SDK client (600 s per call). Raises ImageError when there is none."""
    try:
        import docker
    except ImportError:
        from fwdoctor import extras

        raise ImageError(f"the Docker SDK is not installed: {extras.install_hint('docker')}") from None
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
