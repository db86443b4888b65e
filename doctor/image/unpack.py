"""An image's tar stream unpacked defensively into a folder, for `--root` and the
Dockerfile export: everything, or with a `KeepPlan` a skeleton (sparse placeholders of the
real size for files whose content is not kept).

Unpacking to disk is defensive, because an image is untrusted input: members refused by
fwdoctor.image.members are skipped, hard links that point outside the tree too, nothing is
written through a symlink, and symlinks are kept as links (Host resolves them inside the
root).
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
from typing import IO, Iterator

from fwdoctor.image.keep import KeepPlan
from fwdoctor.image.members import member_path, refusal
from fwdoctor.image.tree import KEEP_BUDGET

# A chunked reader keeps memory flat, whatever a member's size.
_CHUNK = 1 << 20


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
                why = refusal(member)
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
