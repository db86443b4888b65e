"""The GPU code in a shared object: the arches of the cubins (and PTX) in its .nv_fatbin
section, as `cuobjdump --list-elf` / `--list-ptx` name them, without cuobjdump (a toolkit
installed from pip wheels or trimmed in an image has none; /usr/local/cuda-13.0 here has none).

Layout, as nvcc's fatbinary writes it (crt/fatbinary_section.h names the section and the
magic; the entry fields as read by the open readers of the format, e.g.
n-eiling/cuda-fatbin-decompression): the section holds containers, each a 16-byte header
(u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries) followed by
entries, each a header (u16 kind: 1 PTX, 2 ELF; u16; u32 header size; u64 payload size; ...
u32 arch at offset 28, e.g. 90 for sm_90) and its payload. Only headers are read: a
libtorch_cuda.so section is ~1 GB of payload.

Every reader has a budget: at most MAX_ENTRIES entries and MAX_CONTAINERS containers; past
them, or on a header that points outside the section, `FatbinError` names the file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = 0xBA55ED50
MAX_CONTAINERS = 10_000
MAX_ENTRIES = 100_000
KIND_PTX, KIND_ELF = 1, 2


class FatbinError(ValueError):
    """The file is not an ELF we can read, or its .nv_fatbin is malformed."""


@dataclass(frozen=True)
class Entry:
    kind: str  # "elf" or "ptx"
    arch: int  # 90 for sm_90


def _section(f, path: str) -> tuple[int, int] | None:
    """(offset, size) of .nv_fatbin in the ELF64 little-endian file; None when absent."""
    ident = f.read(64)
    if len(ident) < 64 or ident[:4] != b"\x7fELF":
        raise FatbinError(f"{path}: not an ELF file")
    if ident[4] != 2 or ident[5] != 1:
        raise FatbinError(f"{path}: only 64-bit little-endian ELF is read")
    shoff, = struct.unpack_from("<Q", ident, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ident, 0x3A)
    if shnum == 0 or shentsize < 64 or shnum > 65_000:
        return None
    f.seek(shoff)
    table = f.read(shentsize * shnum)
    if len(table) < shentsize * shnum:
        raise FatbinError(f"{path}: section table past the end of the file")
    headers = [struct.unpack_from("<IIQQQQ", table, i * shentsize) for i in range(shnum)]
    _, _, _, _, str_off, str_size = headers[shstrndx]
    f.seek(str_off)
    names = f.read(min(str_size, 1 << 20))
    for name_off, _type, _flags, _addr, offset, size in headers:
        end = names.find(b"\0", name_off)
        if names[name_off:end] == b".nv_fatbin":
            return offset, size
    return None


def entries(path: str) -> list[Entry]:
    """Every cubin and PTX entry of `path`'s .nv_fatbin ([] when it has none)."""
    out: list[Entry] = []
    with open(path, "rb") as f:
        found = _section(f, path)
        if found is None:
            return []
        start, size = found
        pos, end, containers = start, start + size, 0
        while pos + 16 <= end:
            f.seek(pos)
            magic, _version, hsize, fat_size = struct.unpack("<IHHQ", f.read(16))
            if magic != MAGIC:
                # Containers are 8-byte aligned, padding between them is zeros.
                pos += 8
                continue
            containers += 1
            if containers > MAX_CONTAINERS:
                raise FatbinError(f"{path}: more than {MAX_CONTAINERS} fatbin containers")
            entry, stop = pos + hsize, pos + hsize + fat_size
            if stop > end:
                raise FatbinError(f"{path}: a fatbin container runs past its section")
            while entry + 32 <= stop:
                f.seek(entry)
                head = f.read(32)
                kind, _, ehsize, payload = struct.unpack_from("<HHIQ", head, 0)
                arch, = struct.unpack_from("<I", head, 28)
                if ehsize < 32 or kind not in (KIND_PTX, KIND_ELF):
                    raise FatbinError(f"{path}: unreadable fatbin entry at offset {entry}")
                out.append(Entry("elf" if kind == KIND_ELF else "ptx", arch))
                if len(out) > MAX_ENTRIES:
                    raise FatbinError(f"{path}: more than {MAX_ENTRIES} fatbin entries")
                entry += ehsize + payload
            pos = stop
    return out


def cc(arch: int) -> str:
    """90 -> "9.0", 100 -> "10.0", 121 -> "12.1"."""
    return f"{arch // 10}.{arch % 10}"


def arches(path: str, kind: str = "elf") -> list[str]:
    """The compute capabilities of `path`'s cubins (kind "elf") or PTX, sorted, unique."""
    found = {e.arch for e in entries(path) if e.kind == kind}
    return [cc(a) for a in sorted(found)]
