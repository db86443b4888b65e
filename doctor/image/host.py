"""A `Host` over an image's in-memory tree (fwdoctor.image.tree): the same answers as
`Host.at_root` over the fully unpacked image, without a byte written to disk. A probe
reading a file nobody declared gets an UnreadableError saying so (and
tests/test_image_stream.py fails), never silence.
"""

from __future__ import annotations

import io
import os
import posixpath
import stat
from pathlib import Path
from typing import IO, ClassVar, Mapping

from fwdoctor.host import DEFAULT_PATH, MAX_READ_BYTES, Host, UnreadableError
from fwdoctor.image.tree import ImageTree, Node

_NOT_KEPT = "content not kept from the image (no probe declares reading it: fwdoctor.probes.READS)"


class ImageHost(Host):
    """A Host over an ImageTree: the same answers as Host.at_root over the unpacked image."""

    is_image: ClassVar[bool] = True
    tree: ImageTree

    @classmethod
    def of_tree(cls, tree: ImageTree, env: Mapping[str, str] | None = None, name: str = "image") -> "ImageHost":
        merged = {"PATH": DEFAULT_PATH}
        merged.update(env or {})
        # `root` names no real folder: anything that still builds a real path from it
        # (os.statvfs in a build probe) finds nothing there.
        host = cls(Path(f"/nonexistent-fwdoctor-{name}"), merged, live=False)
        host.tree = tree
        return host

    def _entry(self, view_path: str) -> tuple[bool, str | None]:
        node = self.tree.get(view_path)
        if node is None:
            return False, None
        return True, ((node.link or "") if node.kind == "l" else None)

    def _node(self, path: str) -> Node | None:
        return self.tree.get(self.resolve(path))

    def _unresolved(self, path: str) -> Node | None:
        parent = self.resolve(posixpath.dirname(path) or "/")
        return self.tree.get(posixpath.join(parent, posixpath.basename(path)))

    def exists(self, path: str) -> bool:
        return self._node(path) is not None

    def is_file(self, path: str) -> bool:
        node = self._node(path)
        return node is not None and node.kind == "f"

    def is_dir(self, path: str) -> bool:
        node = self._node(path)
        return node is not None and node.kind == "d"

    def is_symlink(self, path: str) -> bool:
        node = self._unresolved(path)
        return node is not None and node.kind == "l"

    def readlink(self, path: str) -> str | None:
        node = self._unresolved(path)
        return node.link if node is not None and node.kind == "l" else None

    def is_executable(self, path: str) -> bool:
        node = self._node(path)
        if node is None or node.kind != "f":
            return False
        # os.access(X_OK) on the file as unpacked (owned by us, mode as kept): root needs
        # any x bit, anyone else the owner's.
        return bool(node.mode & (0o111 if os.geteuid() == 0 else 0o100))

    def listdir(self, path: str) -> list[str]:
        resolved = self.resolve(path)
        node = self.tree.get(resolved)
        return self.tree.names(resolved) if node is not None and node.kind == "d" else []

    def read_bytes(self, path: str, limit: int = MAX_READ_BYTES) -> bytes | None:
        node = self._node(path)
        if node is None:
            return None
        if node.kind != "f":
            raise UnreadableError(path, "is a directory" if node.kind == "d" else "not a regular file (a FIFO or device)")
        if node.data is None:
            if node.size == 0:
                return b""
            raise UnreadableError(path, _NOT_KEPT)
        return node.data[:limit]

    def open_binary(self, path: str) -> IO[bytes]:
        data = self.read_bytes(path, limit=1 << 62)
        if data is None:
            raise FileNotFoundError(path)
        return io.BytesIO(data)

    def stat(self, path: str) -> os.stat_result | None:
        try:
            node = self._node(path)
        except UnreadableError:
            return None
        if node is None:
            return None
        kind = {"d": stat.S_IFDIR, "o": stat.S_IFIFO}.get(node.kind, stat.S_IFREG)
        blocks_size = node.size if node.kind == "f" else 4096
        return os.stat_result((kind | node.mode, 0, 0, 1, os.getuid(), os.getgid(), blocks_size, 0, 0, 0))
