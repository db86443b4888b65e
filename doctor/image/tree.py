"""An image's filesystem held in memory, bounded: what `check --image` and
`--image-archive` judge.

One pass over a tar stream (a container export, or image layers in order) builds an
`ImageTree`: every folder, symlink and file with its type, mode, size and link target, and
content only for the files a plan keeps (the probes' declared reads, fwdoctor.image.keep),
each up to the probe's own read limit. fwdoctor.image.host answers a probe's questions from
that tree.

Nothing in the stream touches the host filesystem, whatever its members say: names are
only keys in a dict. The same refusals as the on-disk unpacker still apply (absolute and
`..` paths, device nodes, FIFOs, hard links to files not in the tree, members under a
symlinked folder: fwdoctor.image.members), so the skip list reads the same.
"""

from __future__ import annotations

import posixpath
import tarfile
from typing import IO, Any

from fwdoctor.image.members import member_path, refusal

_CHUNK = 1 << 20
# The most file content one inspection keeps, all kept files together. The declared reads
# of a real image come to a few MB (dpkg status, headers, dist-info METADATA, libc's first
# 4 MB, NCCL's first ~3 MB); past this a file keeps only its name, and the skip list says so.
KEEP_BUDGET = 80 * 1024 * 1024
# Deeper member paths are refused (one skip-list row each): Linux's PATH_MAX of 4096 bytes
# allows at most ~2,048 components; no real image comes near 256, and a 3,000-deep path once
# ran the folder creation past Python's recursion limit ("internal error").
MAX_PATH_DEPTH = 256
# Members of one image, all layers together: a CUDA + torch image has ~200,000; past this
# the tree (~300 bytes a node) is refused instead of growing without bound.
MAX_MEMBERS = 2_000_000
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"


class TreeLimitError(RuntimeError):
    """The stream is past a limit of the tree (members); the message names the limit."""


class Node:
    __slots__ = ("kind", "mode", "size", "link", "data")

    def __init__(self, kind: str, mode: int, size: int = 0, link: str | None = None, data: bytes | None = None) -> None:
        self.kind = kind  # "d" folder, "f" file, "l" symlink
        self.mode = mode
        self.size = size
        self.link = link
        self.data = data  # kept content (a prefix of at most the declared limit), None: none kept


class ImageTree:
    """Absolute image paths -> Node, with each folder's entry names."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {"/": Node("d", 0o755)}
        self.children: dict[str, set[str]] = {"/": set()}

    def get(self, path: str) -> Node | None:
        return self.nodes.get(path)

    def names(self, folder: str) -> list[str]:
        return sorted(self.children.get(folder, ()))

    def ensure_folder(self, path: str) -> bool:
        """Create missing folders up to `path` (like makedirs); False when a component
        is a file or a symlink (nothing is ever put "through" a link). A loop, not
        recursion: the depth is the member's."""
        missing: list[str] = []
        node = self.nodes.get(path)
        while node is None:
            missing.append(path)
            path = posixpath.dirname(path)
            node = self.nodes.get(path)
        if node.kind != "d":
            return False
        for folder in reversed(missing):
            self.nodes[folder] = Node("d", 0o755)
            self.children[folder] = set()
            self.children[posixpath.dirname(folder)].add(posixpath.basename(folder))
        return True

    def put(self, path: str, node: Node) -> None:
        """Set `path` (its parent folder exists). A folder over a folder keeps its entries."""
        old = self.nodes.get(path)
        if old is not None and not (old.kind == "d" and node.kind == "d"):
            self.remove(path)
        if old is not None and old.kind == "d" and node.kind == "d":
            old.mode = node.mode
            return
        self.nodes[path] = node
        if node.kind == "d":
            self.children[path] = set()
        self.children[posixpath.dirname(path)].add(posixpath.basename(path))

    def remove(self, path: str) -> None:
        if path == "/" or path not in self.nodes:
            return
        self.children.get(posixpath.dirname(path), set()).discard(posixpath.basename(path))
        stack = [path]  # a loop, not recursion (see ensure_folder)
        while stack:
            here = stack.pop()
            node = self.nodes.pop(here, None)
            if node is not None and node.kind == "d":
                stack.extend(posixpath.join(here, name) for name in self.children.pop(here, set()))

    def kept_bytes(self) -> int:
        return sum(len(n.data) for n in self.nodes.values() if n.data)


class TreeBuilder:
    """Reads tar streams into one ImageTree: an export, or layers in order (`layer=True`:
    `.wh.NAME` deletes NAME, `.wh..wh..opq` empties its folder of earlier layers' entries)."""

    def __init__(self, plan: Any, budget: int = KEEP_BUDGET) -> None:
        self.tree = ImageTree()
        self.plan = plan
        self.budget = budget
        self.kept = 0
        self.skipped: list[str] = []
        self._layer_paths: set[str] = set()
        self.members = 0

    def apply(self, stream: IO[bytes], layer: bool = False, mode: str = "r|*") -> None:
        """Read one tar. `mode` "r:" (uncompressed, and `stream` seeks forward) skips file
        data by seeking; "r|*" reads it through (compressed layers)."""
        self._layer_paths = set()
        opened = tarfile.open(fileobj=stream, mode=mode) if mode == "r:" else tarfile.open(fileobj=stream, mode=mode, bufsize=_CHUNK)
        with opened as archive:
            for member in archive:
                archive.members = []  # nothing looks members up again: memory stays flat
                why = refusal(member)
                if why:
                    self.skipped.append(f"{member.name}: {why}")
                    continue
                path = member_path(member.name)
                if path.count("/") > MAX_PATH_DEPTH:
                    self.skipped.append(f"{member.name[:200]}...: deeper than {MAX_PATH_DEPTH} folders (the limit)")
                    continue
                self.members += 1
                if self.members > MAX_MEMBERS:
                    raise TreeLimitError(f"more than {MAX_MEMBERS:,} members (the limit)")
                base = posixpath.basename(path)
                if layer and base.startswith(WHITEOUT):
                    self._whiteout(member.name, path, base)
                    continue
                if path == "/":
                    if member.isdir():
                        self.tree.nodes["/"].mode = 0o755 | (member.mode & 0o777)
                    continue
                if not self.tree.ensure_folder(posixpath.dirname(path)):
                    self.skipped.append(f"{member.name}: parent folder is a link or a file")
                    continue
                self._layer_paths.add(path)
                self._member(archive, member, path)

    def _member(self, archive: tarfile.TarFile, member: tarfile.TarInfo, path: str) -> None:
        if member.isdir():
            self.tree.put(path, Node("d", 0o755 | (member.mode & 0o777)))
        elif member.issym():
            self.tree.put(path, Node("l", 0o777, len(member.linkname), member.linkname))
        elif member.islnk():
            source = self.tree.get(member_path(member.linkname))
            if source is None or source.kind != "f":
                self.skipped.append(f"{member.name}: hard link to {member.linkname} outside the unpacked files")
                return
            # The same file under another name: its kept content is shared, not copied.
            self.tree.put(path, Node("f", _file_mode(member.mode), source.size, None, source.data))
        elif not member.isreg():
            # A FIFO or device node: listed (it exists), never read, as on a root folder.
            self.tree.put(path, Node("o", _file_mode(member.mode)))
        else:
            self.tree.put(path, Node("f", _file_mode(member.mode), member.size, None, self._content(archive, member, path)))

    def _content(self, archive: tarfile.TarFile, member: tarfile.TarInfo, path: str) -> bytes | None:
        rule = self.plan.rule(path) if self.plan is not None else (member.size, None)
        if rule is None or member.size == 0:
            return None if member.size else b""
        want, until = min(member.size, rule[0]), rule[1]
        if self.kept + want > self.budget:
            self.skipped.append(f"{member.name}: content not kept (the {self.budget >> 20} MB budget for kept files is spent)")
            return None
        handle = archive.extractfile(member)
        if handle is None:
            return None
        parts: list[bytes] = []
        tail, left = b"", want
        while left > 0:
            chunk = handle.read(min(_CHUNK, left))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
            if until is not None:
                if until.search(tail + chunk):
                    break  # the scanning probe stops in this chunk: nothing after it is read
                tail = chunk[-256:]
        data = b"".join(parts)
        self.kept += len(data)
        return data

    def _whiteout(self, name: str, path: str, base: str) -> None:
        folder = posixpath.dirname(path)
        if base == OPAQUE:
            # Earlier layers' entries go; this layer's own (already read) stay.
            for name in self.tree.names(folder):
                child = posixpath.join(folder, name)
                if child not in self._layer_paths:
                    self.tree.remove(child)
            return
        victim = base[len(WHITEOUT):]
        if victim in ("", ".", ".."):
            self.skipped.append(f"{name}: whiteout of {victim!r}")
            return
        self.tree.remove(posixpath.join(folder, victim))


def _file_mode(mode: int) -> int:
    # As the on-disk unpacker left it: no setuid/setgid/sticky bits, readable by us.
    return (mode & 0o755) | 0o600
