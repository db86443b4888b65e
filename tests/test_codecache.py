"""fwdoctor.codecache: the dataclasses' compiled methods kept between runs (issue 30).

What must hold: a class defined through the cache is the class dataclasses would make
(the same code, the same annotations: no __future__ flag of ours leaks in), a second run
compiles nothing, and a file that anyone but this user could have written, or that is not
a whole entry file, is never run."""

from __future__ import annotations

import dataclasses
import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fwdoctor import codecache

CLASSES = '''
import dataclasses
from typing import Optional

@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    version: Optional[str] = None
    tags: tuple = ()
    extra: dict = dataclasses.field(default_factory=dict, compare=False)

@dataclasses.dataclass(order=True)
class Point:
    x: int
    y: int = 0
'''


def _define(cache: codecache.CodeCache | None) -> dict:
    """The CLASSES, defined with `cache` in place (None: with the builtin exec)."""
    ns: dict = {"__name__": "probe_module"}
    if cache is not None:
        cache.activate()
    try:
        exec(compile(CLASSES, "<classes>", "exec", dont_inherit=True), ns)
    finally:
        if cache is not None:
            cache.deactivate()
    return ns


def _methods(ns: dict) -> dict:
    out = {}
    for cls in (ns["Row"], ns["Point"]):
        for name in ("__init__", "__repr__", "__eq__", "__setattr__", "__lt__", "__hash__"):
            fn = cls.__dict__.get(name)
            if fn is not None and hasattr(fn, "__code__"):
                out[f"{cls.__name__}.{name}"] = (fn.__code__.co_code, fn.__code__.co_consts, fn.__code__.co_names,
                                                 fn.__code__.co_filename, fn.__annotations__)
    return out


def test_a_class_made_through_the_cache_is_the_class_dataclasses_makes(tmp_path: Path) -> None:
    cache = codecache.CodeCache(tmp_path / "code.marshal")
    plain, cold = _define(None), _define(cache)
    assert cache.added > 4  # the cache did compile this time
    cache.save()
    warm_cache = codecache.CodeCache(tmp_path / "code.marshal")
    warm = _define(warm_cache)
    assert warm_cache.added == 0  # every text came from the file
    assert _methods(plain) == _methods(cold) == _methods(warm)
    # The methods annotate with the classes' real types, not with strings (dont_inherit:
    # this module and codecache both have `from __future__ import annotations`).
    assert not any(isinstance(a, str) for m in _methods(warm).values() for a in m[4].values())
    Row, Point = warm["Row"], warm["Point"]
    row = Row("nccl", "2.28.9", extra={"a": 1})
    assert row == Row("nccl", "2.28.9") and repr(row) == "Row(name='nccl', version='2.28.9', tags=(), extra={'a': 1})"
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.name = "x"  # type: ignore[misc]
    assert Point(1, 2) < Point(2, 0) and Row("a").extra is not Row("a").extra


def _entry_file(tmp_path: Path) -> Path:
    cache = codecache.CodeCache(tmp_path / "code" / "dataclasses.marshal")
    _define(cache)
    cache.save()
    assert codecache.CodeCache(cache.path).entries.keys() == cache.entries.keys()
    return cache.path


def test_the_file_and_its_folder_are_the_users_alone(tmp_path: Path) -> None:
    path = _entry_file(tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("spoil", ["group-writable", "world-writable", "symlink", "corrupt", "truncated", "foreign-format",
                                   "not-code", "directory"])
def test_a_file_anyone_else_could_write_or_that_is_not_a_whole_entry_file_is_never_used(tmp_path: Path, spoil: str) -> None:
    path = _entry_file(tmp_path)
    data = path.read_bytes()
    if spoil.endswith("writable"):
        path.chmod(0o620 if spoil == "group-writable" else 0o602)
    elif spoil == "symlink":
        real = path.with_name("real.marshal")
        path.rename(real)
        path.symlink_to(real)
    elif spoil == "corrupt":
        path.write_bytes(data[:len(codecache.FORMAT)] + b"\xff" * 64)
    elif spoil == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif spoil == "foreign-format":
        path.write_bytes(b"fwdoctor-code-0\n" + data[len(codecache.FORMAT):])
    elif spoil == "not-code":
        path.write_bytes(codecache.FORMAT + marshal.dumps({"def f(): pass": "print('hi')"}))
    elif spoil == "directory":
        path.unlink()
        path.mkdir()
    cache = codecache.CodeCache(path)
    assert cache.entries == {}
    _define(cache)  # and the classes are still made, compiled afresh
    assert cache.added > 4


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_file_owned_by_another_user_is_never_run_even_by_root(tmp_path: Path) -> None:
    """`sudo -E fwdoctor` with a user's XDG_CACHE_HOME: root must not run that user's file."""
    path = _entry_file(tmp_path)
    os.chown(path, 65534, 65534)
    assert codecache.CodeCache(path).entries == {}


def test_the_file_is_named_for_this_interpreter_and_off_when_caching_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("FWDOCTOR_NO_CACHE", raising=False)
    path = codecache.default_path()
    assert path == tmp_path / "fwdoctor" / "code" / f"dataclasses-{sys.implementation.cache_tag}-{sys.hexversion:x}.marshal"
    monkeypatch.setenv("FWDOCTOR_NO_CACHE", "1")
    assert codecache.default_path() is None and codecache.install(None) is None


def test_deactivate_gives_dataclasses_its_builtin_back(tmp_path: Path) -> None:
    cache = codecache.install(tmp_path / "x.marshal")
    assert cache is not None and vars(dataclasses)["exec"] == cache.exec
    codecache.CodeCache(tmp_path / "y.marshal").deactivate()  # not the one in place: no effect
    assert vars(dataclasses)["exec"] == cache.exec
    cache.deactivate()
    assert "exec" not in vars(dataclasses)


RUN = "import sys, dataclasses; sys.argv = ['fwdoctor', *sys.argv[1:]]; from fwdoctor.launch import main; main()"


def _fwdoctor(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "FWDOCTOR_NO_CACHE"}
    return subprocess.run([sys.executable, "-c", RUN, *argv], env={**base, "XDG_CACHE_HOME": str(tmp_path / "cache"), **env},
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_the_command_keeps_the_compiled_methods_and_a_second_run_compiles_none(tmp_path: Path) -> None:
    first = _fwdoctor(tmp_path, "explain", "driver-too-old-for-torch", "--json")
    assert first.returncode == 0, first.stderr
    files = list((tmp_path / "cache" / "fwdoctor" / "code").glob("dataclasses-*.marshal"))
    assert len(files) == 1
    before = files[0].stat().st_mtime_ns
    second = _fwdoctor(tmp_path, "explain", "driver-too-old-for-torch", "--json")
    assert second.returncode == 0 and json.loads(second.stdout) == json.loads(first.stdout)
    assert files[0].stat().st_mtime_ns == before  # nothing new was compiled, nothing rewritten


@pytest.mark.parametrize("how", ["--no-cache", "FWDOCTOR_NO_CACHE"])
def test_no_cache_reads_and_writes_no_code(tmp_path: Path, how: str) -> None:
    argv = ["--no-cache"] if how == "--no-cache" else []
    env = {"FWDOCTOR_NO_CACHE": "1"} if how == "FWDOCTOR_NO_CACHE" else {}
    res = _fwdoctor(tmp_path, *argv, "explain", "driver-too-old-for-torch", **env)
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "cache" / "fwdoctor" / "code").exists()
