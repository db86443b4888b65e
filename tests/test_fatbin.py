"""fwdoctor.fatbin: the arches of the cubins and PTX in a shared object's .nv_fatbin, read
without cuobjdump: on the installed torch's own library, and on small ELF files made here
(well formed, and each malformed header a one-line refusal naming the file)."""

from __future__ import annotations

import struct
import sysconfig
from pathlib import Path

import pytest

from conftest import TEST_VENV, require_module
from fwdoctor import fatbin


def entry(kind: int, arch: int, payload: bytes = b"\0" * 16) -> bytes:
    head = struct.pack("<HHIQ", kind, 0x0101, 64, len(payload)) + struct.pack("<IIHHI", 0, 0, 0, 8, arch) + b"\0" * 32
    return head + payload


def container(*entries: bytes, size_delta: int = 0) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", fatbin.MAGIC, 1, 16, len(body) + size_delta) + body


def elf(section: bytes) -> bytes:
    """An ELF64 file with a .nv_fatbin section holding `section`, and its .shstrtab."""
    names = b"\0.nv_fatbin\0.shstrtab\0"
    data_off = 64
    names_off = data_off + len(section)
    shoff = names_off + len(names)
    shoff += (-shoff) % 8
    header = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 3, 2)
    sections = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                struct.pack("<IIQQQQIIQQ", 1, 1, 0, 0, data_off, len(section), 0, 0, 8, 0),
                struct.pack("<IIQQQQIIQQ", 12, 3, 0, 0, names_off, len(names), 0, 0, 1, 0)]
    body = header + section + names
    return body + b"\0" * (shoff - len(body)) + b"".join(sections)


def test_cubins_and_ptx_are_listed_by_arch(tmp_path):
    so = tmp_path / "x.so"
    so.write_bytes(elf(container(entry(2, 90), entry(2, 90), entry(1, 90)) + b"\0" * 8 + container(entry(2, 100))))
    assert fatbin.arches(str(so)) == ["9.0", "10.0"]
    assert fatbin.arches(str(so), "ptx") == ["9.0"]


def test_a_shared_object_without_device_code_has_none(tmp_path):
    so = tmp_path / "x.so"
    so.write_bytes(elf(b""))
    assert fatbin.arches(str(so)) == []


def test_a_file_that_is_not_elf_is_refused_naming_it(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    with pytest.raises(fatbin.FatbinError, match=r"notes\.txt: not an ELF file"):
        fatbin.arches(str(bad))


def test_a_container_claiming_more_than_its_section_is_refused(tmp_path):
    so = tmp_path / "x.so"
    so.write_bytes(elf(container(entry(2, 90), size_delta=1 << 20)))
    with pytest.raises(fatbin.FatbinError, match="runs past its section"):
        fatbin.arches(str(so))


def test_an_entry_of_unknown_kind_is_refused(tmp_path):
    so = tmp_path / "x.so"
    so.write_bytes(elf(container(entry(7, 90))))
    with pytest.raises(fatbin.FatbinError, match="unreadable fatbin entry"):
        fatbin.arches(str(so))


def test_the_installed_torch_library_carries_every_arch_of_its_arch_list():
    """libtorch_cuda.so of torch 2.14.1+cu130 (~1 GB of device code, headers only: well under a second)."""
    require_module("torch", TEST_VENV)
    lib = Path(sysconfig.get_paths()["purelib"], "torch", "lib", "libtorch_cuda.so")
    assert lib.exists(), f"the dev venv's CUDA torch is expected at {lib}"
    found = fatbin.arches(str(lib))
    # torch.cuda.get_arch_list() of that wheel: sm_75 sm_80 sm_86 sm_90 sm_100 sm_120.
    assert {"7.5", "8.0", "8.6", "9.0", "10.0", "12.0"} <= set(found)
