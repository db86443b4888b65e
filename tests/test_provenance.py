"""Provenance that resolves: every source the KB, the fixture notes and the docs cite is
something a stranger can look up, with no private notes, search-index ids or build-machine
paths in between.

What counts as a resolvable citation (a `sources:` value must contain at least one):
  - a URL: `https://...` or `http://...`;
  - a pinned file: `owner/repo@<ref>:path`, where <ref> is a commit (7-40 hex digits) or a
    tag (`v2.30.7-1`, `release-1.0`; no slash), e.g. `NVIDIA/nccl@5067397c:src/nccl.h.in`;
  - a document title and section: `"Title", section "Section"` (both quoted, literally the
    word `section` between them), e.g. `"CUDA Compatibility", section "Minor Version
    Compatibility"`.
A source that could not be traced to anything public keeps its row but starts with
`unverified: <why>`; this test counts those and prints them (run with `-s` to see them), and
any value that mentions `unverified:` further in is counted the same way.

tests/kb/ is deliberately not scanned: it is a frozen copy of the KB for logic tests (see
tests/conftest.py), owned separately, and may keep the citations it was frozen with.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
KB_DIR = REPO / "doctor" / "kb"

URL = re.compile(r"https?://[^\s,;)\]'\"`]+")
REPO_REF = re.compile(
    r"(?<![\w.-])[A-Za-z0-9][\w.-]*/[\w.-]+"  # owner/repo
    r"@(?:[0-9a-f]{7,40}|[A-Za-z0-9][\w.+-]*)"  # @commit or @tag (no slash)
    r":[^\s,;()]+"  # :path
)
TITLE_SECTION = re.compile(r'"[^"]{3,}", section "[^"]+"')
UNVERIFIED = re.compile(r"\bunverified:")
# A commit written apart from its owner/repo:path ("NVIDIA/nccl src/nccl.h.in @5067397c",
# "owner/repo@<hex> path"): a reader cannot tell which file at which commit is meant.
DETACHED_COMMIT = re.compile(r"(?:(?<=\s)|^)@[0-9a-f]{7,40}\b|[\w.-]+/[\w.-]+@[0-9a-f]{7,40}(?!:)(?![0-9a-f])")

# Citations of things a stranger cannot open: the private research notes, the project's
# steering folder, internal search-index ids and vague "some public file" pointers.
PRIVATE_NOTES = re.compile(r"kb-facts|(?<![\w/.-])shared/[A-Za-z]", re.IGNORECASE)
INDEX_IDS = re.compile(
    r"GitHub files? (?:id )?\d|\bfile ids?\b|\bindex ids?\b|search (?:tool|index)"
    r"|public[- ]repository index",
    re.IGNORECASE,
)
VAGUE = re.compile(
    r"a public GitHub file|public GitHub report|third-party (?:uv\.lock files|pip logs)"
    r"|via annotated copy",
    re.IGNORECASE,
)
# Absolute paths of the machine the project was researched or built on, given as where
# something came from. Standard locations inside a root (/usr/local/cuda, /proc/..., /opt/venv)
# are not provenance and are not matched.
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|root|tmp|home/[^/\s]+)/")
KEY_TOKEN = re.compile(r"(?<![\w-])S-[A-Z0-9][A-Z0-9-]*[A-Z0-9](?![\w-])")

# Known leftovers this test lets through, each failing the test once it is gone (so the
# entry goes too). None today.
KNOWN_ELSEWHERE: dict[str, str] = {}


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _kb_files() -> list[Path]:
    return sorted(KB_DIR.glob("*.yaml"))


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def _sources_maps() -> dict[str, dict[str, str]]:
    """File name -> its `sources:` map (sources.yaml is the shared one)."""
    return {p.name: dict(_load(p).get("sources") or {}) for p in _kb_files()}


def _known_keys(maps: dict[str, dict[str, str]], file: str | None) -> set[str]:
    shared = set(maps["sources.yaml"])
    if file is None:
        return shared.union(*(set(m) for m in maps.values()))
    return shared | set(maps.get(file, {}))


def _note_files() -> list[Path]:
    """README notes and other prose where provenance is written down."""
    found = [REPO / "README.md", REPO / "lockfiles" / "README.md"]
    found += sorted((REPO / "docs").rglob("*.md"))
    for pattern in ("README.md", "README.fixture"):
        found += [p for p in sorted((REPO / "tests").rglob(pattern)) if "kb" not in p.relative_to(REPO / "tests").parts[:1]]
    return [p for p in found if p.is_file()]


def _fixture_files() -> list[Path]:
    """Every text file under tests/data and tests/roots (fixture content can carry a
    provenance comment, e.g. the first line of a header)."""
    out = []
    for base in (REPO / "tests" / "data", REPO / "tests" / "roots"):
        for p in sorted(base.rglob("*")):
            if p.is_file() and not p.is_symlink():
                try:
                    p.read_text()
                except (UnicodeDecodeError, OSError):
                    continue
                out.append(p)
    return out


def _python_prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python file."""
    text = path.read_text()
    out: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                out.append((body[0].lineno, body[0].value.value))
    return out


def _lines(text: str) -> list[tuple[int, str]]:
    return list(enumerate(text.splitlines(), 1))


def _violations(lines: list[tuple[int, str]], where: str, *, paths: bool) -> list[str]:
    bad = []
    for n, line in lines:
        for label, pattern in (("private notes", PRIVATE_NOTES), ("search-index id", INDEX_IDS), ("vague pointer", VAGUE)):
            m = pattern.search(line)
            if m:
                bad.append(f"{where}:{n}: {label} {m.group(0)!r}: {line.strip()[:160]}")
        if paths:
            m = MACHINE_PATH.search(line)
            if m:
                bad.append(f"{where}:{n}: build-machine path {m.group(0)!r}: {line.strip()[:160]}")
    return bad


def _all_source_values() -> list[tuple[str, str, str]]:
    return [(file, key, " ".join(str(value).split())) for file, m in _sources_maps().items() for key, value in m.items()]


def _unverified() -> list[str]:
    return [f"{file} {key}: {value}" for file, key, value in _all_source_values() if UNVERIFIED.search(value)]


# ---------------------------------------------------------------- (a) sources resolve


def test_every_source_key_expands_to_a_url_a_pinned_file_a_titled_section_or_says_unverified():
    bad = []
    for file, key, value in _all_source_values():
        if value.startswith("unverified:"):
            continue
        if not (URL.search(value) or REPO_REF.search(value) or TITLE_SECTION.search(value)):
            bad.append(f"{file} {key}: no URL, owner/repo@ref:path or \"Title\", section \"...\": {value[:160]}")
    assert not bad, "\n".join(bad)


def test_no_source_writes_a_commit_apart_from_its_repository_and_path():
    bad = []
    for file, key, value in _all_source_values():
        for m in DETACHED_COMMIT.finditer(value):
            bad.append(f"{file} {key}: {m.group(0)!r} is not owner/repo@commit:path: {value[:160]}")
    assert not bad, "\n".join(bad)


def test_unverified_sources_are_counted_and_listed(capsys):
    found = _unverified()
    with capsys.disabled():
        print(f"\n{len(found)} KB source(s) marked unverified:")
        for line in found:
            print(f"  {line[:200]}")
    for line in found:
        assert re.search(r"unverified: \S", line), f"say why it is unverified: {line}"


# ---------------------------------------------------------------- (b) nothing private


def test_kb_files_cite_no_private_notes_index_ids_or_build_machine_paths():
    bad = []
    for path in _kb_files():
        bad += _violations(_lines(path.read_text()), _rel(path), paths=True)
    assert not bad, "\n".join(bad)


def test_readme_notes_cite_no_private_notes_index_ids_or_build_machine_paths():
    bad = []
    for path in _note_files():
        rel = _rel(path)
        lines = _lines(path.read_text())
        if rel in KNOWN_ELSEWHERE:
            leftover = KNOWN_ELSEWHERE[rel]
            assert any(leftover in line for _, line in lines), f"{rel} no longer says {leftover!r}: drop it from KNOWN_ELSEWHERE"
            lines = [(n, line.replace(leftover, "")) for n, line in lines]
        # Build-machine paths are checked where provenance is written down (fixture and lock
        # notes); README.md and docs/ show example commands with made-up paths on purpose.
        bad += _violations(lines, rel, paths=rel.startswith(("tests/", "lockfiles/")))
    assert not bad, "\n".join(bad)


def test_fixture_files_carry_no_private_citations():
    bad = []
    for path in _fixture_files():
        bad += _violations(_lines(path.read_text()), _rel(path), paths=False)
    assert not bad, "\n".join(bad)


def test_code_comments_and_docstrings_cite_no_private_notes_or_index_ids():
    bad = []
    for base in ("doctor", "recipes"):
        for path in sorted((REPO / base).rglob("*.py")):
            for n, text in _python_prose(path):
                for i, line in enumerate(text.splitlines()):
                    bad += _violations([(n + i, line)], _rel(path), paths=False)
                    m = re.search(r"/work/", line)
                    if m:
                        bad.append(f"{_rel(path)}:{n + i}: build-machine path '/work/': {line.strip()[:160]}")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------- (c) keys exist


def _source_uses(node, path="") -> list[tuple[str, str]]:
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            here = f"{path}.{k}" if path else str(k)
            if k == "source" or k.endswith("_source"):
                for key in v if isinstance(v, list) else [v]:
                    out.append((here, str(key)))
            else:
                out += _source_uses(v, here)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            out += _source_uses(item, f"{path}[{i}]")
    return out


def test_every_source_key_a_kb_row_uses_is_defined_in_a_sources_map():
    maps = _sources_maps()
    bad = []
    for path in _kb_files():
        data = _load(path)
        data.pop("sources", None)
        known = _known_keys(maps, path.name)
        for where, key in _source_uses(data):
            if key not in known:
                bad.append(f"{path.name} {where}: source key {key!r} is in no sources map")
    assert not bad, "\n".join(bad)


def test_every_source_key_named_in_kb_comments_and_notes_is_defined():
    maps = _sources_maps()
    bad = []
    for path in _kb_files():
        known = _known_keys(maps, path.name)
        for n, line in _lines(path.read_text()):
            for key in KEY_TOKEN.findall(line):
                if key not in known:
                    bad.append(f"{_rel(path)}:{n}: {key} is in no sources map")
    every = _known_keys(maps, None)
    for path in _note_files():
        for n, line in _lines(path.read_text()):
            for key in KEY_TOKEN.findall(line):
                if key not in every:
                    bad.append(f"{_rel(path)}:{n}: {key} is in no sources map")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    "value, ok",
    [
        ("https://docs.nvidia.com/deploy/cuda-compatibility/", True),
        ("NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027:src/nccl.h.in", True),
        ("pytorch/pytorch@v2.9.0:RELEASE.md", True),
        ('"CUDA Compatibility", section "Minor Version Compatibility"', True),
        ("NVIDIA/nccl src/nccl.h.in @5067397c", False),
        ("GitHub file 63125688786: nvidia-smi output", False),
        ("pytorch/pytorch RELEASE.md", False),
    ],
)
def test_the_citation_forms_accept_resolvable_values_and_refuse_the_rest(value, ok):
    resolvable = bool(URL.search(value) or REPO_REF.search(value) or TITLE_SECTION.search(value))
    clean = not (DETACHED_COMMIT.search(value) or INDEX_IDS.search(value))
    assert (resolvable and clean) == ok
