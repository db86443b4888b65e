"""What a tar member of an image is allowed to be, and the image path it names: the one
policy both readers apply (the in-memory tree, fwdoctor.image.tree, and the on-disk
skeleton, fwdoctor.image.unpack), so their skip lists read the same.

An image is untrusted input: absolute and `..` paths, device nodes, FIFOs and unknown
member types are refused with a one-line reason, whatever reads the stream.
"""

from __future__ import annotations

import posixpath
import tarfile


def member_path(name: str) -> str:
    """A tar member's name as an absolute image path. Only a leading "./" goes (as tar
    writes names): `lstrip("./")` also ate the dots of top-level names, so a top-level
    whiteout `.wh.opt` was ignored and `/.venv` read as `/venv`."""
    while name.startswith("./"):
        name = name[2:]
    return posixpath.normpath("/" + name)


def refusal(member: tarfile.TarInfo) -> str:
    """Why `member` is refused ("absolute path", "FIFO" ...), or "" when it may be read."""
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
