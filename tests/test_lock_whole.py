"""Locks verified whole: `lock --check` compares everything `lock` writes and the lock's own
body digest catches a hand edit without re-resolving; `lock --verify` compares every sha256
with what the lock's index publishes (a PEP 503 index on 127.0.0.1, tests/localindex.py).

Each hand edit below is one of issue 11's examples: `lock --check` said "matches" for it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from conftest import TEST_KB_DIR
from fwdoctor.kb import KB
from fwdoctor.quoting import QuotingError
from fwdoctor.recipes import lockfile
from fwdoctor.recipes import stack as stack_mod
from localindex import serve
from test_lock_check import _pins_from_golden, copy_stack, locked_cpu_stack


def _lock(tmp_path: Path) -> Path:
    return tmp_path / "lockfiles" / "cpu-py311" / lockfile.LOCK_NAME


def _check(cli, tmp_path, monkeypatch, stack):
    monkeypatch.chdir(tmp_path)
    return cli("lock", "--check", str(stack.relative_to(tmp_path)))


def test_a_fresh_lock_states_its_body_digest_and_matches(cli, use_test_kb, tmp_path, monkeypatch):
    stack = locked_cpu_stack(tmp_path)
    text = _lock(tmp_path).read_text()
    stated, actual = lockfile.body_digest(text)
    assert stated == actual and stated == hashlib.sha256("".join(
        l for l in text.splitlines(keepends=True) if not l.startswith("# body-sha256: ")).encode()).hexdigest()
    result = _check(cli, tmp_path, monkeypatch, stack)
    assert result.exit_code == 0 and "matches" in result.output, result.output


def test_a_changed_sha256_is_caught(cli, use_test_kb, tmp_path, monkeypatch):
    stack = locked_cpu_stack(tmp_path)
    lock = _lock(tmp_path)
    text = lock.read_text()
    first = next(l for l in text.splitlines() if l.strip().startswith("--hash=sha256:"))
    lock.write_text(text.replace(first, first[:-4] + "0000"))
    result = _check(cli, tmp_path, monkeypatch, stack)
    assert result.exit_code == 1 and "edited after fwdoctor lock wrote it" in result.output, result.output


def test_a_removed_dependency_is_caught_and_its_line_named(cli, use_test_kb, tmp_path, monkeypatch):
    stack = locked_cpu_stack(tmp_path)
    lock = _lock(tmp_path)
    lines = lock.read_text().splitlines(keepends=True)
    at = next(i for i, l in enumerate(lines) if l.startswith("filelock=="))
    del lines[at:at + 2]
    lock.write_text("".join(lines))
    result = _check(cli, tmp_path, monkeypatch, stack)
    assert result.exit_code == 1 and "edited after fwdoctor lock wrote it" in result.output, result.output


def test_an_added_extra_index_url_is_caught_and_its_line_named(cli, use_test_kb, tmp_path, monkeypatch):
    stack = locked_cpu_stack(tmp_path)
    lock = _lock(tmp_path)
    text = lock.read_text()
    lock.write_text(text.replace("--only-binary=:all:\n", "--extra-index-url https://evil.example/simple\n--only-binary=:all:\n"))
    result = _check(cli, tmp_path, monkeypatch, stack)
    assert result.exit_code == 1, result.output
    assert "edited after fwdoctor lock wrote it" in result.output


def test_an_edit_with_a_recomputed_digest_is_still_named_by_line(use_test_kb, tmp_path):
    """Someone who rewrites the digest too: the file is compared with what `lock` writes."""
    stack = locked_cpu_stack(tmp_path)
    resolved = stack_mod.load_and_resolve(stack, KB(TEST_KB_DIR))
    lock = _lock(tmp_path)
    lines = [l for l in lock.read_text().splitlines(keepends=True) if not l.startswith("# body-sha256: ")]
    lines.insert(8, "--trusted-host evil.example\n")
    body = "".join(lines)
    lock.write_text(body.replace("# stack-digest:", f"# body-sha256: {lockfile.lock_digest(body)}\n# stack-digest:", 1)
                    .replace(f"# body-sha256: {lockfile.lock_digest(body)}\n# stack-digest: sha256:{resolved.digest}",
                             f"# stack-digest: sha256:{resolved.digest}\n# body-sha256: {lockfile.lock_digest(body)}"))
    problems = lockfile.check(resolved, lock.parent)
    assert problems == [f"{lock}: line '--trusted-host evil.example' differs from what fwdoctor lock writes there ('--require-hashes')"]


def test_a_lock_without_a_body_digest_is_stale(use_test_kb, tmp_path):
    stack = locked_cpu_stack(tmp_path)
    resolved = stack_mod.load_and_resolve(stack, KB(TEST_KB_DIR))
    lock = _lock(tmp_path)
    lock.write_text("".join(l for l in lock.read_text().splitlines(keepends=True) if not l.startswith("# body-sha256: ")))
    assert any("no single body-sha256 line" in p for p in lockfile.check(resolved, lock.parent))


def test_a_lock_value_with_a_newline_is_refused_naming_it(use_test_kb, tmp_path):
    stack = copy_stack(tmp_path, "cpu-py311")
    resolved = stack_mod.load_and_resolve(stack, KB(TEST_KB_DIR))
    with pytest.raises(QuotingError, match="the stack file path"):
        lockfile.render_lock(resolved, _pins_from_golden(), "stacks/x.yaml\n--extra-index-url https://evil.example")
    with pytest.raises(QuotingError, match="--extra-index-url"):
        lockfile.render_lock(resolved, _pins_from_golden(), "s.yaml", lockfile.Sources.of("https://pypi.org/simple", ["https://a\n--trusted-host b"]))


# --------------------------------------------------------------------------- --verify
def _index_lock(tmp_path: Path, resolved, served: dict[str, bytes], pinned: dict[str, bytes], index: str) -> str:
    pins = [lockfile.Pin(f.split("-")[0], f.split("-")[1], hashlib.sha256(pinned[f]).hexdigest(), f) for f in sorted(pinned)]
    return lockfile.render_lock(resolved, pins, "stacks/cpu-py311.yaml", lockfile.Sources.of(index))


def test_verify_compares_each_hash_with_the_index(use_test_kb, tmp_path):
    stack = copy_stack(tmp_path, "cpu-py311")
    resolved = stack_mod.load_and_resolve(stack, KB(TEST_KB_DIR))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    files = {"torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl": b"torch bytes", "filelock-3.20.0-py3-none-any.whl": b"filelock bytes"}
    for name, data in files.items():
        (wheels / name).write_bytes(data)
    with serve(wheels, tmp_path / "index") as index:
        good = _index_lock(tmp_path, resolved, files, files, index)
        assert lockfile.verify(good, timeout=10) == ([], [])
        tampered = dict(files, **{"filelock-3.20.0-py3-none-any.whl": b"other bytes"})
        problems, unverified = lockfile.verify(_index_lock(tmp_path, resolved, files, tampered, index), timeout=10)
        assert unverified == []
        assert problems == [f"filelock==3.20.0: sha256 {hashlib.sha256(b'other bytes').hexdigest()} is not published by {index}"]
    # The index is gone: nothing can be compared, and the lock says so rather than passing.
    problems, unverified = lockfile.verify(good, timeout=5)
    assert problems == [] and len(unverified) == 2 and all("no index answered" in u for u in unverified)


def test_verify_reads_a_pep_691_json_page(tmp_path):
    import contextlib
    import functools
    import http.server
    import threading

    page = json.dumps({"meta": {"api-version": "1.0"}, "name": "filelock",
                       "files": [{"filename": "filelock-3.20.0-py3-none-any.whl", "url": "x", "hashes": {"sha256": "ab" * 32}}]}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert lockfile.published_hashes(f"http://127.0.0.1:{server.server_address[1]}/simple", "FileLock", timeout=5) == {"ab" * 32}
    finally:
        server.shutdown()


def test_lock_verify_on_the_cli_fails_for_a_hash_the_index_does_not_publish(cli, use_test_kb, tmp_path, monkeypatch):
    stack = locked_cpu_stack(tmp_path)
    resolved = stack_mod.load_and_resolve(stack, KB(TEST_KB_DIR))
    pins = _pins_from_golden()
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for pin in pins:  # an index that publishes other bytes under every pinned name
        (wheels / pin.filename).write_bytes(b"not " + pin.filename.encode())
    with serve(wheels, tmp_path / "index") as index:
        lock = _lock(tmp_path)
        lock.write_text(lockfile.render_lock(resolved, pins, "stacks/cpu-py311.yaml", lockfile.Sources.of(index)))
        monkeypatch.chdir(tmp_path)
        result = cli("lock", "--verify", "stacks/cpu-py311.yaml")
    assert result.exit_code == 1, result.output
    assert "is not published by" in result.output


def test_verify_compares_find_links_files_too(use_test_kb, tmp_path):
    """A pin that comes from a --find-links folder (relative to the lock, as pip reads it)
    is verified against that folder's file, not reported as unpublished or skipped."""
    stack = copy_stack(tmp_path, "cpu-py311")
    resolved = stack_mod.load_and_resolve(stack, KB(TEST_KB_DIR))
    served = tmp_path / "served"
    served.mkdir()
    (served / "filelock-3.20.0-py3-none-any.whl").write_bytes(b"filelock bytes")
    local = tmp_path / "local-wheels"
    local.mkdir()
    torch_file = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    (local / torch_file).write_bytes(b"torch bytes")
    (local / "torch-2.12.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"another release")
    lock_dir = tmp_path / "lock"
    lock_dir.mkdir()

    def lock_text(torch_bytes: bytes, index: str) -> str:
        pins = [lockfile.Pin("filelock", "3.20.0", hashlib.sha256(b"filelock bytes").hexdigest(), "filelock-3.20.0-py3-none-any.whl"),
                lockfile.Pin("torch", "2.13.0+cpu", hashlib.sha256(torch_bytes).hexdigest(), torch_file)]
        return lockfile.render_lock(resolved, pins, "stacks/cpu-py311.yaml", lockfile.Sources.of(index, (), ["../local-wheels"]))

    with serve(served, tmp_path / "index") as index:
        assert lockfile.verify(lock_text(b"torch bytes", index), timeout=10, base=lock_dir) == ([], [])
        problems, unverified = lockfile.verify(lock_text(b"edited", index), timeout=10, base=lock_dir)
    assert unverified == []
    assert problems == [f"torch==2.13.0+cpu: sha256 {hashlib.sha256(b'edited').hexdigest()} is not published by {index}, --find-links ../local-wheels"]  # the index answered 404: no torch
    # The folder is gone and the index is down: not verified, naming both, never "verified".
    shutil.rmtree(local)
    problems, unverified = lockfile.verify(lock_text(b"torch bytes", "http://127.0.0.1:9/simple"), timeout=5, base=lock_dir)
    assert problems == [] and len(unverified) == 2
    assert all("--find-links ../local-wheels" in u for u in unverified)
