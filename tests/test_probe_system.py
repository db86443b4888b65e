"""The system probe (os-release, kernel, arch, glibc, container, /dev/shm) on recorded
files, roots and this host."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.probes import system
from fwdoctor.probes.system import (
    cgroup_says_container,
    glibc_from_banner,
    glibc_from_filename,
    parse_os_release,
    parse_shm_size,
)

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data" / "driver"
ROOTS = TESTS / "roots"


def data(name: str) -> str:
    return (DATA / name).read_text()


# ----------------------------------------------------------------------------- parsers
def test_os_release_gives_id_version_and_pretty_name():
    assert parse_os_release(data("os-release-debian12.txt")) == {
        "id": "debian",
        "version_id": "12",
        "pretty": "Debian GNU/Linux 12 (bookworm)",
    }


def test_os_release_without_an_id_is_none():
    assert parse_os_release("NAME=Something\n") is None


@pytest.mark.parametrize("name, version", [("libc-2.31.so", "2.31"), ("/lib/x86_64-linux-gnu/ld-2.27.so", "2.27"), ("libc.so.6", None), ("ld-linux-x86-64.so.2", None)])
def test_old_glibc_file_names_carry_the_version(name, version):
    assert glibc_from_filename(name) == version


def test_the_libc_banner_gives_the_glibc_version():
    banner = data("libc-banner-debian12.txt").encode()
    assert glibc_from_banner(b"\x7fELF\x00\x00" + banner + b"\x00more") == "2.36"
    assert glibc_from_banner(b"\x7fELF no banner here") is None


@pytest.mark.parametrize(
    "name, size",
    [("mounts-docker-default-shm.txt", 64 * 1024 * 1024), ("mounts-this-machine-shm.txt", 24684092 * 1024)],
)
def test_shm_size_comes_from_the_tmpfs_size_option(name, size):
    assert parse_shm_size(data(name)) == size


def test_a_tmpfs_without_a_size_option_has_no_known_size():
    assert parse_shm_size("shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime 0 0\n") is None
    assert parse_shm_size("tmpfs /dev/shm tmpfs rw,size=50% 0 0\n") is None


def test_a_docker_cgroup_means_a_container_and_a_bare_one_does_not():
    assert cgroup_says_container("12:pids:/docker/0123456789abcdef\n")
    assert not cgroup_says_container("0::/\n")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_system_parsers_never_raise(text):
    # Each answers None or a value taken from the text itself.
    release = parse_os_release(text)
    assert release is None or (set(release) == {"id", "version_id", "pretty"} and release["id"] and release["id"] in text)
    glibc = glibc_from_filename(text)
    assert glibc is None or glibc in text
    data = text.encode("utf-8", "surrogatepass")
    banner = glibc_from_banner(data)
    assert banner is None or banner.encode() in data
    size = parse_shm_size(text)
    assert size is None or (isinstance(size, int) and size >= 0)
    assert cgroup_says_container(text) in (True, False)


# ----------------------------------------------------------------------------- roots
def root_facts(root: Path):
    return collect(Host.at_root(root), system.PROBES)


def test_a_container_root_with_dockers_default_shm(tmp_path):
    facts = root_facts(ROOTS / "driver-shm-container")
    assert facts["system.container"] is True
    assert facts["system.shm_bytes"] == 64 * 1024 * 1024
    assert not facts.known("system.kernel") and not facts.known("system.arch")
    assert facts["system.os"] is None


def test_a_root_with_a_libc_banner_and_os_release(tmp_path):
    lib = tmp_path / "lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libc.so.6").write_bytes(b"\x7fELF\x00" + data("libc-banner-debian12.txt").encode() + b"\x00")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text(data("os-release-debian12.txt"))
    facts = root_facts(tmp_path)
    assert facts["system.glibc"] == "2.36"
    assert facts["system.arch"] == "x86_64"
    assert facts["system.os"]["id"] == "debian"
    assert facts["system.container"] is False


def test_a_root_with_an_old_style_libc_link(tmp_path):
    lib = tmp_path / "lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libc-2.31.so").write_bytes(b"\x7fELF")
    (lib / "libc.so.6").symlink_to("libc-2.31.so")
    assert root_facts(tmp_path)["system.glibc"] == "2.31"


def test_a_musl_root_has_no_glibc(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib/ld-musl-x86_64.so.1").write_bytes(b"\x7fELF")
    facts = root_facts(tmp_path)
    assert facts.known("system.glibc") and facts["system.glibc"] is None


# ----------------------------------------------------------------------------- this host
def test_on_this_host_kernel_arch_and_glibc_match_python():
    facts = collect(Host.live_host(), system.PROBES)
    assert facts["system.kernel"] == os.uname().release
    assert facts["system.arch"] == os.uname().machine
    assert facts["system.glibc"] == os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    st_ = os.statvfs("/dev/shm")
    assert facts["system.shm_bytes"] == st_.f_frsize * st_.f_blocks


