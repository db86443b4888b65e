"""A Docker image from the local engine, for `fwdoctor check --image TAG`.

The image is never run: a container is created (not started) and its filesystem exported
as one tar stream, read once, front to back (tarfile over a forward-only reader,
fwdoctor.image.stream: file data nobody reads is dropped chunk by chunk, nothing is buffered
beyond a chunk). `inspect` builds from it an in-memory tree (fwdoctor.image.tree) keeping
content only for the files the probes declare they read (fwdoctor.image.keep). Nothing is
written to disk, whatever the image's size.

`export` writes such a skeleton to a folder for `--root` instead (fwdoctor.image.unpack).
"""

from __future__ import annotations

import atexit
import shutil
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterable, Iterator

from fwdoctor.image.inspected import ImageError, Inspected, parse_env
from fwdoctor.image.keep import KeepPlan, probe_plan
from fwdoctor.image.stream import ChunkReader
from fwdoctor.image.tree import TreeBuilder, TreeLimitError
from fwdoctor.image.unpack import Unpacker

# An export streams the whole rootfs; a chunked reader keeps memory flat.
_CHUNK = 1 << 20
# The whole export of one image, as an image archive gets (archive.Limits.deadline_s): an
# engine that streams slower than that is refused, not waited on. A read that stalls inside
# one chunk is ended by the client's own 600 s socket timeout (docker_client).
EXPORT_DEADLINE_S = 600.0


@dataclass(frozen=True)
class Exported:
    root: str  # folder holding the image's filesystem skeleton (removed at exit)
    env: dict[str, str]  # the image's ENV (Config.Env)
    skipped: tuple[str, ...] = ()  # members refused by the safe unpacker, with the reason
    config: dict[str, Any] = field(default_factory=dict)  # User, Entrypoint, Cmd, WorkingDir...


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
