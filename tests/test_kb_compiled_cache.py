"""The compiled KB cache (fwdoctor.kb.cache.compiled, issue 30): a warm check loads each
area's built objects without YAML and without validating again. These tests assert what
must never happen, not the time: a changed file or changed code served from an old entry,
a failed validation remembered as a success, or an entry that runs code when read."""

from __future__ import annotations

import ast
import os
import pickle
import shutil
from pathlib import Path

import pytest

from conftest import TEST_KB_DIR
import fwdoctor.kb as kb_module
from fwdoctor.kb import AREAS, KB, KBError, cache

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache_home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("FWDOCTOR_NO_CACHE", raising=False)
    cache.bypass(False)
    return tmp_path / "cache" / "fwdoctor" / "kb"


def fresh(directory: Path) -> KB:
    """A KB as a new process sees it: the in-process memo of built areas emptied."""
    kb_module._AREA_CACHE.clear()
    return KB.load(directory)


def test_every_area_read_from_its_entry_holds_what_building_it_gives(cache_home, monkeypatch):
    built = fresh(TEST_KB_DIR)
    entries = {p.name.rsplit("-", 1)[0] for p in cache_home.glob("*.pickle")}
    assert entries >= {"sources", "cuda", "gpus", "torch", "libs", "frameworks", "errors"}
    calls: list[str] = []
    real = cache.compiled

    def counting(name, files, build):
        return real(name, files, lambda: calls.append(name) or build())

    monkeypatch.setattr(cache, "compiled", counting)
    warm = fresh(TEST_KB_DIR)
    assert calls == []  # nothing was built: every area came from its entry
    for area in AREAS:
        assert cache.same(getattr(warm, area), getattr(built, area)), area


def test_an_edited_area_file_is_built_again_even_with_its_old_size_and_mtime(cache_home, tmp_path):
    folder = tmp_path / "kb"
    shutil.copytree(TEST_KB_DIR, folder)
    path = folder / "torch.yaml"
    before = fresh(folder).torch.variants()
    stat = path.stat()
    text = path.read_text()
    # The same number of bytes, the old mtime put back: only the inode's ctime (and the
    # content) differ, and that is enough to miss the entry.
    edited = text.replace('{version: "1.13.0",', '{version: "1.13.9",', 1)
    assert edited != text and len(edited) == len(text)
    path.write_text(edited)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    after = fresh(folder).torch.variants()
    assert {v.torch for v in after} != {v.torch for v in before}
    assert "1.13.9" in {v.torch for v in after}


def test_an_edited_sources_file_rebuilds_the_areas_that_cite_it(cache_home, tmp_path):
    folder = tmp_path / "kb"
    shutil.copytree(TEST_KB_DIR, folder)
    fresh(folder)
    sources = folder / "sources.yaml"
    text = sources.read_text()
    sources.write_text("\n".join(line for line in text.splitlines() if not line.startswith("  S-RN132:")) + "\n")
    # cuda.yaml's rows cite the removed key: now an error, the old, valid build not served.
    with pytest.raises(KBError, match="S-RN132"):
        fresh(folder)


def test_a_failed_validation_is_never_cached(cache_home, tmp_path):
    folder = tmp_path / "kb"
    shutil.copytree(TEST_KB_DIR, folder)
    (folder / "libs.yaml").write_text("libs: [unclosed\n")
    for _ in range(2):
        with pytest.raises(KBError, match=r"libs\.yaml"):
            fresh(folder)
    assert not list(cache_home.glob("libs-*.pickle"))


def test_changed_building_code_misses_every_entry(cache_home, monkeypatch):
    fresh(TEST_KB_DIR)
    calls: list[str] = []
    monkeypatch.setattr(cache, "_CODE", ["another build of fwdoctor"])
    real = cache.compiled

    def counting(name, files, build):
        return real(name, files, lambda: calls.append(name) or build())

    monkeypatch.setattr(cache, "compiled", counting)
    fresh(TEST_KB_DIR)
    assert "cuda.yaml" in calls and "sources.yaml" in calls


def test_the_code_key_covers_every_module_the_kb_builders_import():
    """BUILD_CODE (plus fwdoctor/kb/*.py) must name every fwdoctor module a kb/*.py file
    imports, or an edited helper would meet objects its old version built."""
    covered = {f"kb/{p.name}" for p in (REPO / "doctor" / "kb").glob("*.py")} | set(cache.BUILD_CODE)
    missing = set()
    for path in (REPO / "doctor" / "kb").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if not name.startswith("fwdoctor"):
                    continue
                parts = name.split(".")[1:]
                if isinstance(node, ast.ImportFrom) and not parts:  # from fwdoctor import arch
                    parts = [node.names[0].name]
                rel = "/".join(parts)
                if (REPO / "doctor" / rel).is_dir():
                    rel += "/__init__.py" if rel != "kb" else ""
                    if rel == "kb":
                        continue
                else:
                    rel += ".py"
                if not (REPO / "doctor" / rel).is_file():
                    continue  # a name, not a module: from fwdoctor import __version__
                if rel not in covered:
                    missing.add(f"{path.name}: {name} ({rel})")
    assert not missing


def test_an_entry_that_would_call_code_is_refused_and_the_area_built(cache_home, tmp_path):
    fresh(TEST_KB_DIR)
    marker = tmp_path / "ran"
    for entry in cache_home.glob("cuda-*.pickle"):
        material = pickle.loads(entry.read_bytes())[0]  # the test's own entry: trusted here
        entry.write_bytes(pickle.dumps((material, _Evil(str(marker)))))
    kb = fresh(TEST_KB_DIR)
    assert not marker.exists()
    assert kb.cuda.__class__.__name__ == "CudaKB"


class _Evil:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def test_a_corrupt_entry_is_built_again(cache_home):
    fresh(TEST_KB_DIR)
    for entry in cache_home.glob("gpus-*.pickle"):
        entry.write_bytes(b"\x80\x05garbage")
    assert fresh(TEST_KB_DIR).gpus is not None


def test_no_cache_reads_and_writes_no_entry(cache_home, tmp_path):
    cache.bypass(True)
    try:
        fresh(TEST_KB_DIR)
    finally:
        cache.bypass(False)
    assert not cache_home.exists() or not list(cache_home.glob("*.pickle"))


def test_the_global_no_cache_flag_bypasses_the_kb_cache_for_that_run_only(cache_home):
    from click.testing import CliRunner

    from fwdoctor.cli import main

    result = CliRunner().invoke(main, ["--no-cache", "list"])
    assert result.exit_code == 0, result.output
    assert not cache.cache_dir()  # bypassed while that run lasts...
    CliRunner().invoke(main, ["list"])
    assert cache.cache_dir() is not None  # ...and the next run caches again


def test_old_entries_of_a_name_are_pruned_when_a_new_one_is_written(cache_home, tmp_path):
    folder = tmp_path / "kb"
    shutil.copytree(TEST_KB_DIR, folder)
    path = folder / "docker.yaml"
    for n in range(cache.KEEP_PER_NAME + 3):
        path.write_text(path.read_text() + f"# edit {n}\n")
        fresh(folder)
    names = [p.name for p in cache_home.glob("docker-*.pickle")]
    assert len(names) == cache.KEEP_PER_NAME
    # The parsed-YAML layer's entries too (one per text of the file), each kind kept apart.
    assert len(list(cache_home.glob("docker-*.json"))) == cache.KEEP_PER_NAME
    # Another name's entries are left alone (errors-rows-* is not errors-*).
    assert list(cache_home.glob("cuda-*.pickle"))


def test_a_process_whose_code_was_replaced_under_it_stores_nothing(cache_home, monkeypatch):
    """A long-running process (a fleet server beside `pip install -U fwdoctor`) builds
    areas with the classes it imported; keyed by the code now on disk, its entries would
    reach the next, newer process as objects of the old classes. It builds, and stores
    nothing."""
    monkeypatch.setattr(cache, "_code_identity", lambda: ["the code on disk now"])
    monkeypatch.setattr(cache, "_CODE", ["the code this process imported"])
    kb = fresh(TEST_KB_DIR)
    assert kb.cuda is not None  # built all the same
    assert not list(cache_home.glob("*.pickle"))
    monkeypatch.setattr(cache, "_code_identity", lambda: ["the code this process imported"])
    fresh(TEST_KB_DIR)
    assert list(cache_home.glob("*.pickle"))  # the same code: stored as before
