"""Version answers cached by the program file's identity (fwdoctor/probecache.py, issue 30).

The program under test is a copy of an ELF binary (this interpreter's own executable) in a
temporary folder, so it can be replaced, touched, resized and removed; `compute` counts
how often the command really ran.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fwdoctor.cli import main
from fwdoctor.host import Host
from fwdoctor.probecache import ProbeCache, default_folder, identity
from fwdoctor.runner import CommandResult

ENV = {"PATH": "/usr/bin:/bin"}


class Counting:
    def __init__(self, stdout: str = "Cuda compilation tools, release 12.8, V12.8.93\n", returncode: int = 0) -> None:
        self.calls = 0
        self.stdout = stdout
        self.returncode = returncode

    def __call__(self) -> CommandResult:
        self.calls += 1
        return CommandResult(("x",), self.returncode, self.stdout, "")


@pytest.fixture
def program(tmp_path: Path) -> Path:
    exe = tmp_path / "bin" / "nvcc"
    exe.parent.mkdir()
    shutil.copy2(os.path.realpath(sys.executable), exe)
    return exe


@pytest.fixture
def cache(tmp_path: Path) -> ProbeCache:
    return ProbeCache(tmp_path / "cache" / "fwdoctor" / "probes")


def ask(cache: ProbeCache, program: Path, compute: Counting, env: dict[str, str] = ENV) -> CommandResult | None:
    return cache.run([str(program), "--version"], env, compute)


def test_an_unchanged_program_is_answered_from_the_cache_once_it_succeeded(cache: ProbeCache, program: Path) -> None:
    compute = Counting()
    first = ask(cache, program, compute)
    second = ask(cache, program, compute)
    assert compute.calls == 1
    assert second is not None and second.ok and second.stdout == first.stdout  # type: ignore[union-attr]
    assert second.argv == (str(program), "--version")


def test_a_program_replaced_at_the_same_path_runs_again(cache: ProbeCache, program: Path) -> None:
    compute = Counting()
    ask(cache, program, compute)
    before = program.stat()
    replacement = program.with_name("nvcc.new")
    shutil.copy2(program, replacement)
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size and mtime
    os.replace(replacement, program)  # new inode, as a package upgrade leaves it
    assert program.stat().st_ino != before.st_ino
    compute.stdout = "Cuda compilation tools, release 12.9, V12.9.41\n"
    assert ask(cache, program, compute).stdout.endswith("V12.9.41\n")  # type: ignore[union-attr]
    assert compute.calls == 2


def test_a_touched_program_runs_again(cache: ProbeCache, program: Path) -> None:
    compute = Counting()
    ask(cache, program, compute)
    st = program.stat()
    os.utime(program, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    ask(cache, program, compute)
    assert compute.calls == 2


def test_a_resized_program_runs_again(cache: ProbeCache, program: Path) -> None:
    compute = Counting()
    ask(cache, program, compute)
    st = program.stat()
    with open(program, "ab") as handle:
        handle.write(b"\0" * 16)
    os.utime(program, ns=(st.st_atime_ns, st.st_mtime_ns))  # only the size (and ctime) moved
    ask(cache, program, compute)
    assert compute.calls == 2


def test_a_removed_program_is_never_answered_from_the_cache(cache: ProbeCache, program: Path) -> None:
    compute = Counting()
    ask(cache, program, compute)
    program.unlink()
    gone = Counting(stdout="", returncode=127)
    assert ask(cache, program, gone).returncode == 127  # type: ignore[union-attr]
    assert gone.calls == 1


def test_the_relevant_environment_is_part_of_the_key(cache: ProbeCache, program: Path) -> None:
    compute = Counting()
    ask(cache, program, compute)
    ask(cache, program, compute, {"PATH": "/usr/bin:/bin", "NVCC_PREPEND_FLAGS": "-ccbin=/opt/gcc"})
    ask(cache, program, compute, {"PATH": "/usr/bin:/bin", "SHLVL": "3"})  # irrelevant: a hit
    assert compute.calls == 2


def test_failures_and_scripts_are_never_cached(cache: ProbeCache, program: Path, tmp_path: Path) -> None:
    failing = Counting(returncode=1)
    ask(cache, program, failing)
    ask(cache, program, failing)
    assert failing.calls == 2
    script = tmp_path / "bin" / "gcc"
    script.write_text("#!/bin/sh\nexec /usr/bin/gcc-12 \"$@\"\n")
    script.chmod(0o755)
    assert identity(str(script)) is None
    compute = Counting()
    ask(cache, script, compute)
    ask(cache, script, compute)
    assert compute.calls == 2


def test_a_corrupt_or_foreign_entry_is_ignored_and_replaced(cache: ProbeCache, program: Path) -> None:
    compute = Counting()
    ask(cache, program, compute)
    (entry,) = cache.folder.iterdir()
    for garbage in (b"\xff\x00not json", json.dumps({"key": {"argv": ["/bin/other"]}, "stdout": "1", "stderr": ""}).encode(), b"[]"):
        entry.write_bytes(garbage)
        assert ask(cache, program, compute).stdout.startswith("Cuda compilation tools")  # type: ignore[union-attr]
    assert compute.calls == 4
    assert ask(cache, program, compute) is not None and compute.calls == 4  # rewritten whole


def test_a_read_only_cache_folder_is_not_fatal(cache: ProbeCache, program: Path) -> None:
    cache.folder.mkdir(parents=True)
    cache.folder.chmod(0o555)
    try:
        compute = Counting()
        assert ask(cache, program, compute).ok  # type: ignore[union-attr]
        assert ask(cache, program, compute).ok  # type: ignore[union-attr]
        if os.geteuid() != 0:  # root writes through mode 0555; the next test covers it
            assert compute.calls == 2 and list(cache.folder.iterdir()) == []
    finally:
        cache.folder.chmod(0o755)


def test_a_cache_path_under_a_plain_file_is_not_fatal(tmp_path: Path, program: Path) -> None:
    (tmp_path / "blocker").write_text("")
    cache = ProbeCache(tmp_path / "blocker" / "probes")  # mkdir fails for root too
    compute = Counting()
    assert ask(cache, program, compute).ok and ask(cache, program, compute).ok  # type: ignore[union-attr]
    assert compute.calls == 2


def test_a_root_or_image_host_runs_nothing_so_nothing_is_cached(tmp_path: Path, cache: ProbeCache, program: Path) -> None:
    host = Host.at_root(tmp_path)
    host.probe_cache = cache
    assert host.run_version([str(program), "--version"]) is None
    assert not cache.folder.exists()


def _cli_env(tmp_path: Path, program: Path) -> dict[str, str]:
    return {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "PATH": f"{program.parent}:/usr/bin:/bin", "CUDA_HOME": "",
            "FWDOCTOR_NO_CACHE": ""}


def test_check_caches_nvcc_and_no_cache_bypasses_it(tmp_path: Path, program: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `nvcc` here is an ELF that answers `--version` with exit 0 (the interpreter's banner).
    for name, value in _cli_env(tmp_path, program).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("FWDOCTOR_NO_CACHE")
    folder = default_folder()
    assert folder == tmp_path / "xdg" / "fwdoctor" / "probes"
    runner = CliRunner()
    for argv in (["--no-cache", "check", "--json"], ["check", "--no-cache", "--json"], ["facts", "--no-cache"]):
        result = runner.invoke(main, argv)
        assert result.exit_code in (0, 1), result.output
        assert not folder.exists(), argv
    result = runner.invoke(main, ["check", "--json"])
    assert result.exit_code in (0, 1), result.output
    assert any(json.loads(p.read_text())["key"].get("argv") == [str(program), "--version"] for p in folder.iterdir())


def test_check_of_a_root_writes_no_cache(tmp_path: Path, program: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in _cli_env(tmp_path, program).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("FWDOCTOR_NO_CACHE")
    root = tmp_path / "root"
    (root / "usr" / "local" / "cuda" / "bin").mkdir(parents=True)
    shutil.copy2(program, root / "usr" / "local" / "cuda" / "bin" / "nvcc")
    result = CliRunner().invoke(main, ["check", "--root", str(root), "--json"])
    assert result.exit_code in (0, 1), result.output
    assert not (tmp_path / "xdg" / "fwdoctor" / "probes").exists()


def test_old_entries_are_pruned_to_the_newest_max_entries(cache: ProbeCache, program: Path, monkeypatch) -> None:
    # Each upgrade of a program leaves its old entry behind for good; on a write the folder is
    # cut back to the newest MAX_ENTRIES, and the entry just written is one of them.
    import fwdoctor.probecache as probecache

    monkeypatch.setattr(probecache, "MAX_ENTRIES", 5)
    folder = cache.folder
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(8):
        stale = folder / f"{n:016x}.json"
        stale.write_text("{}")
        os.utime(stale, ns=(n * 10**9, n * 10**9))
    compute = Counting()
    ask(cache, program, compute)
    left = sorted(p.name for p in folder.glob("*.json"))
    assert len(left) == 5
    assert {f"{n:016x}.json" for n in (4, 5, 6, 7)} <= set(left)  # the newest stale ones stay
    assert ask(cache, program, compute) is not None and compute.calls == 1  # the new entry is kept and read
