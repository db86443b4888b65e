"""The parsed-KB cache (fwdoctor.kb.cache): a hit gives exactly what parsing gives, and no
state of the cache (absent, corrupt, unwritable, turned off) changes what the KB says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import TEST_KB_DIR
from fwdoctor.kb import KB, KBError, load_yaml, parse_yaml
from fwdoctor.kb import cache


@pytest.fixture
def cache_home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("FWDOCTOR_NO_CACHE", raising=False)
    return tmp_path / "cache" / "fwdoctor" / "kb"


@pytest.mark.parametrize("name", sorted(p.name for p in TEST_KB_DIR.glob("*.yaml")))
def test_a_cache_hit_gives_exactly_what_parsing_the_file_gives(cache_home, name):
    path = TEST_KB_DIR / name
    parsed = parse_yaml(path.read_bytes(), name)
    assert load_yaml(path) == parsed  # miss: parsed, then written
    (entry,) = cache_home.glob(f"{path.stem}-*.json")
    assert json.loads(entry.read_text()) == parsed
    assert load_yaml(path) == parsed  # hit


def test_an_edited_file_never_hits_the_old_entry(cache_home, tmp_path):
    path = tmp_path / "torch.yaml"
    path.write_text("a: 1\n")
    assert load_yaml(path) == {"a": 1}
    path.write_text("a: 2\n")
    assert load_yaml(path) == {"a": 2}
    assert len(list(cache_home.glob("torch-*.json"))) == 2


def test_a_corrupt_entry_is_parsed_again_and_replaced(cache_home, tmp_path):
    path = tmp_path / "gpus.yaml"
    path.write_text("gpus: [x]\n")
    load_yaml(path)
    (entry,) = cache_home.glob("gpus-*.json")
    entry.write_text("{not json")
    assert load_yaml(path) == {"gpus": ["x"]}
    assert json.loads(entry.read_text()) == {"gpus": ["x"]}


def test_data_json_cannot_hold_exactly_is_not_cached(cache_home, tmp_path):
    path = tmp_path / "cuda.yaml"
    path.write_text("released: 2024-03-01\n1: integer key\n")
    first = load_yaml(path)
    assert str(first["released"]) == "2024-03-01" and first[1] == "integer key"
    assert not list(cache_home.glob("cuda-*.json"))
    assert load_yaml(path) == first


def test_an_unwritable_cache_folder_and_a_turned_off_cache_change_nothing(cache_home, tmp_path, monkeypatch):
    cache_home.parent.mkdir(parents=True)
    cache_home.write_text("a file where the folder should be")
    kb = KB.load(TEST_KB_DIR)
    assert kb.torch.variant_for("2.14.1+cu130") is not None
    monkeypatch.setenv("FWDOCTOR_NO_CACHE", "1")
    assert cache.cache_dir() is None
    assert KB.load(TEST_KB_DIR).torch.variant_for("2.14.1+cu130") == kb.torch.variant_for("2.14.1+cu130")


def test_a_broken_yaml_file_is_a_kb_error_naming_it_whatever_the_cache_holds(cache_home, tmp_path):
    folder = tmp_path / "kb"
    shutil.copytree(TEST_KB_DIR, folder)
    KB.load(folder)  # fills the cache
    (folder / "libs.yaml").write_text("libs: [unclosed\n")
    with pytest.raises(KBError, match=r"libs\.yaml:.*not valid YAML"):
        KB.load(folder)


def test_a_relative_cache_home_is_ignored_as_the_xdg_spec_says(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("FWDOCTOR_NO_CACHE", raising=False)
    assert cache.cache_dir() == tmp_path / ".cache" / "fwdoctor" / "kb"
    monkeypatch.setenv("HOME", "relative-home")
    assert cache.cache_dir() is None and cache.entry(b"x", "a.yaml") is None


def test_the_cache_follows_xdg_cache_home_and_an_unwritable_home_is_not_fatal(cli, tmp_path, monkeypatch):
    # HOME a plain file: nothing can be created below it, even by root (chmod would not stop root).
    home = tmp_path / "home"
    home.write_text("not a folder")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("FWDOCTOR_NO_CACHE", raising=False)
    path = tmp_path / "gpus.yaml"
    path.write_text("gpus: [x]\n")
    assert cache.cache_dir() == home / ".cache" / "fwdoctor" / "kb"
    assert load_yaml(path) == {"gpus": ["x"]}  # parsed; the cache could not be written, no error
    assert cli("explain", "driver-too-old-for-torch").exit_code == 0
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path.write_text("gpus: [y]\n")
    assert load_yaml(path) == {"gpus": ["y"]}
    assert list((tmp_path / "xdg" / "fwdoctor" / "kb").glob("gpus-*.json"))
