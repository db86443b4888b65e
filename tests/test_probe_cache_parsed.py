"""Parses cached by the parsed file's identity (ProbeCache.parsed, issue 30): the dpkg
database's parse is reused only while the database and the parser's source are the very
files it came from. These tests assert invalidation, never time."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fwdoctor.host import Host
from fwdoctor.probecache import ProbeCache
from fwdoctor.probes import libscan

STANZA = "Package: {name}\nStatus: install ok installed\nVersion: {version}\n\n"


class Counting:
    def __init__(self, path: Path) -> None:
        self.path, self.calls = path, 0

    def __call__(self) -> list[dict[str, str]]:
        self.calls += 1
        return libscan.parse_dpkg_status(self.path.read_text())


@pytest.fixture
def status(tmp_path: Path) -> Path:
    path = tmp_path / "status"
    path.write_text(STANZA.format(name="cuda-toolkit-12-8", version="12.8.1-1"))
    return path


@pytest.fixture
def parser(tmp_path: Path) -> str:
    source = tmp_path / "parser.py"
    source.write_text("# the parser's source\n")
    return str(source)


def test_an_unchanged_file_is_parsed_once(tmp_path, status, parser):
    cache, parse = ProbeCache(tmp_path / "cache"), Counting(status)
    first = cache.parsed(str(status), "dpkg-status", parser, parse)
    assert cache.parsed(str(status), "dpkg-status", parser, parse) == first == [{"name": "cuda-toolkit-12-8", "version": "12.8.1-1"}]
    assert parse.calls == 1


def test_an_edited_file_is_parsed_again_even_with_its_old_size_and_mtime(tmp_path, status, parser):
    cache, parse = ProbeCache(tmp_path / "cache"), Counting(status)
    cache.parsed(str(status), "dpkg-status", parser, parse)
    stat = status.stat()
    status.write_text(STANZA.format(name="cuda-toolkit-12-9", version="12.9.1-1"))  # same size
    os.utime(status, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert cache.parsed(str(status), "dpkg-status", parser, parse)[0]["name"] == "cuda-toolkit-12-9"
    assert parse.calls == 2


def test_a_replaced_file_as_dpkg_writes_it_is_parsed_again(tmp_path, status, parser):
    cache, parse = ProbeCache(tmp_path / "cache"), Counting(status)
    cache.parsed(str(status), "dpkg-status", parser, parse)
    new = tmp_path / "status-new"
    new.write_text(STANZA.format(name="libnccl2", version="2.30.7-1+cuda13.0"))
    os.replace(new, status)  # dpkg writes status-new, then renames it over status
    assert cache.parsed(str(status), "dpkg-status", parser, parse)[0]["name"] == "libnccl2"


def test_an_edited_parser_misses_its_old_answers(tmp_path, status, parser):
    cache, parse = ProbeCache(tmp_path / "cache"), Counting(status)
    cache.parsed(str(status), "dpkg-status", parser, parse)
    Path(parser).write_text("# the parser, changed\n")
    cache.parsed(str(status), "dpkg-status", parser, parse)
    assert parse.calls == 2


def test_a_failed_parse_is_not_cached_and_a_removed_file_is_not_served(tmp_path, status, parser):
    cache = ProbeCache(tmp_path / "cache")

    def broken() -> list[dict[str, str]]:
        raise OSError("unreadable")

    with pytest.raises(OSError):
        cache.parsed(str(status), "dpkg-status", parser, broken)
    parse = Counting(status)
    cache.parsed(str(status), "dpkg-status", parser, parse)
    status.unlink()
    with pytest.raises(FileNotFoundError):
        cache.parsed(str(status), "dpkg-status", parser, parse)


def test_the_live_host_parses_dpkg_through_the_cache_and_a_root_never(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    root = tmp_path / "root"
    (root / "var/lib/dpkg").mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text(STANZA.format(name="libcudnn9-cuda-12", version="9.1.0.70-1"))
    packages, error = libscan.dpkg_packages(Host.at_root(root))
    assert error is None and packages[0]["name"] == "libcudnn9-cuda-12"
    assert not folder.exists()  # a root has no probe cache
    if not Path(libscan.DPKG_STATUS).is_file():
        pytest.skip("no dpkg database on this host")
    live = Host.live_host(probe_cache=ProbeCache(folder))
    first, _ = libscan.dpkg_packages(live)
    assert list(folder.glob("parsed-*.json"))
    again, _ = libscan.dpkg_packages(Host.live_host(probe_cache=ProbeCache(folder)))
    assert again == first == libscan.parse_dpkg_status(Path(libscan.DPKG_STATUS).read_text())


def test_the_nccl_version_scan_is_cached_by_the_library_file_and_redone_when_it_changes(tmp_path, monkeypatch):
    lib = tmp_path / "libnccl.so.2"
    lib.write_bytes(b"\x7fELF" + b"\0" * 4096 + b"NCCL version 2.26.5+cuda12.9\0" + b"\0" * 64)
    host = Host.live_host(probe_cache=ProbeCache(tmp_path / "cache"))
    assert libscan.scan_embedded(host, str(lib)) == ("2.26.5", "12.9")
    reads: list[str] = []
    real = libscan._scan_embedded
    monkeypatch.setattr(libscan, "_scan_embedded", lambda *a: reads.append(a[1]) or real(*a))
    fresh = Host.live_host(probe_cache=ProbeCache(tmp_path / "cache"))
    assert libscan.scan_embedded(fresh, str(lib)) == ("2.26.5", "12.9") and reads == []  # from the cache
    lib.write_bytes(b"\x7fELF" + b"\0" * 4096 + b"NCCL version 2.27.3+cuda12.9\0" + b"\0" * 64)  # same size
    assert libscan.scan_embedded(fresh, str(lib)) == ("2.27.3", "12.9") and reads == [str(lib)]
    # A library with no version string reads as None, and so does an unreadable one.
    lib.write_bytes(b"\x7fELF" + b"\0" * 128)
    assert libscan.scan_embedded(fresh, str(lib)) is None
    assert libscan.scan_embedded(fresh, str(tmp_path / "absent.so")) is None
