"""The Host view: --root confinement, env files, and command running."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fwdoctor.host import EnvFileError, Host, UnreadableError, parse_env_file


@pytest.fixture
def root(tmp_path):
    (tmp_path / "usr/local/cuda-12.4/bin").mkdir(parents=True)
    (tmp_path / "usr/local/cuda-12.4/version.json").write_text('{"cuda": {"version": "12.4.1"}}')
    nvcc = tmp_path / "usr/local/cuda-12.4/bin/nvcc"
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    # An absolute link, as real installs have: it must resolve inside the root.
    os.symlink("/usr/local/cuda-12.4", tmp_path / "usr/local/cuda")
    # A link that tries to climb out of the root.
    os.symlink("../../../../../../etc", tmp_path / "usr/escape")
    return tmp_path


def test_absolute_symlink_targets_resolve_inside_the_root(root):
    host = Host.at_root(root)
    assert host.resolve("/usr/local/cuda/bin/nvcc") == "/usr/local/cuda-12.4/bin/nvcc"
    assert host.read_text("/usr/local/cuda/version.json") == '{"cuda": {"version": "12.4.1"}}'


def test_dotdot_and_relative_links_never_escape_the_root(root):
    host = Host.at_root(root)
    assert host.resolve("/usr/escape/passwd") == "/etc/passwd"
    assert host.real_path("/usr/escape/passwd") == str(root) + "/etc/passwd"
    assert host.read_text("/usr/escape/passwd") is None
    assert host.read_text("/../../../../etc/passwd") is None


def test_which_searches_path_from_the_env_inside_the_root(root):
    host = Host.at_root(root, {"PATH": "/usr/local/cuda/bin:/usr/bin"})
    assert host.which("nvcc") == "/usr/local/cuda/bin/nvcc"
    assert host.which("gcc") is None


def test_a_root_host_runs_nothing(root):
    assert Host.at_root(root).run(["true"]) is None


def test_a_root_that_is_not_a_directory_is_refused(tmp_path):
    with pytest.raises(NotADirectoryError, match="not a directory"):
        Host.at_root(tmp_path / "missing")


def test_symlink_loops_are_reported_not_followed_forever(tmp_path):
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    host = Host.at_root(tmp_path)
    with pytest.raises(UnreadableError, match="too many levels"):
        host.resolve("/a/x")


def test_unreadable_files_raise_a_named_error(tmp_path):
    (tmp_path / "dir").mkdir()
    with pytest.raises(UnreadableError, match="is a directory"):
        Host.at_root(tmp_path).read_text("/dir")


def test_env_file_parses_comments_export_and_quotes_without_expansion():
    env = parse_env_file('# a comment\nexport PATH="/opt/x/bin:$PATH"\nCUDA_HOME=/usr/local/cuda\n\nEMPTY=\n')
    assert env == {"PATH": "/opt/x/bin:$PATH", "CUDA_HOME": "/usr/local/cuda", "EMPTY": ""}


def test_env_file_errors_name_the_file_and_line():
    with pytest.raises(EnvFileError, match=r"image.env:2: expected KEY=VALUE"):
        parse_env_file("A=1\nthis is not an assignment\n", name="image.env")


@given(st.text(max_size=300))
def test_env_file_parser_never_fails_other_than_with_env_file_error(text):
    try:
        env = parse_env_file(text)
    except EnvFileError:
        return
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())


def test_live_host_lists_executables_on_path():
    host = Host.live_host({"PATH": "/bin:/usr/bin"})
    assert host.which("sh") in ("/bin/sh", "/usr/bin/sh")


def test_each_folder_above_the_files_is_asked_about_once(tmp_path, monkeypatch):
    # Resolving the files of one folder used to lstat every folder above each of them again
    # (~900 calls on a plain check, issue 30); the answers are kept per host, links included.
    lib = tmp_path / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (tmp_path / "lib").symlink_to("usr/lib")
    for n in range(20):
        (lib / f"libx{n}.so").write_text("x")
    host = Host.at_root(tmp_path, {})
    asked: list[str] = []
    real_lstat = os.lstat
    monkeypatch.setattr(os, "lstat", lambda p, *a, **k: (asked.append(str(p)), real_lstat(p, *a, **k))[1])
    paths = [host.real_path(f"/lib/x86_64-linux-gnu/libx{n}.so") for n in range(20)]
    assert paths == [str(lib / f"libx{n}.so") for n in range(20)]  # through the link, inside the root
    assert asked.count(str(tmp_path / "lib")) == 1 and asked.count(str(lib)) == 1
    assert len(asked) == 4 + 20  # /lib (a link), /usr, /usr/lib, the folder once each; each file once


def test_a_folder_is_listed_once_per_host_and_each_caller_gets_its_own_copy(tmp_path, monkeypatch):
    # The CUDA, cuDNN, NCCL and driver probes each scan the same library folders (issue 30).
    (tmp_path / "lib").mkdir()
    for name in ("libb.so", "liba.so"):
        (tmp_path / "lib" / name).write_text("x")
    host = Host.at_root(tmp_path, {})
    listed: list[str] = []
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p=".": (listed.append(str(p)), real_listdir(p))[1])
    first = host.listdir("/lib")
    first.append("changed by a caller")
    assert host.listdir("/lib") == ["liba.so", "libb.so"]  # sorted, and not the caller's list
    assert host.listdir("/nowhere") == [] and host.listdir("/nowhere") == []
    assert listed.count(str(tmp_path / "lib")) == 1 and listed.count(str(tmp_path / "nowhere")) == 1
    # A new host (the next run, the re-check after a fix) lists again.
    Host.at_root(tmp_path, {}).listdir("/lib")
    assert listed.count(str(tmp_path / "lib")) == 2
