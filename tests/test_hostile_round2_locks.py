"""Locks read only what they should (issue 24, items 5 and 6): `lock --check` fetches no
package file at all; `lock --verify` reads https, plain http only from a loopback channel the
lock names, file: only inside the lock's folder and never a device, with a byte cap per file
and one deadline, and never hashes a record already found inconsistent. A server on
127.0.0.1 dripping a byte every 2 s ends at the deadline with a clear message. Mutated
conda-lock.yml records are judged or refused, never a traceback or a hang.

The channel is tests/condachannel.py's (real package files, served on 127.0.0.1)."""

from __future__ import annotations

import http.server
import random
import threading
import time
from pathlib import Path

import pytest
import yaml
from conftest import require_module

from fwdoctor.recipes import conda_lock as cl
from tests import condachannel as cc
from tests.test_conda_lock import _edit, _package, lock_into, make_stack

require_module("rattler", "pip install 'fwdoctor[conda]'")
require_module("conda_lock", "pip install 'fwdoctor[conda]'")

GUARD_S = 30.0  # a hang guard only


@pytest.fixture(scope="module")
def channel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cc.build_gpu_channel(tmp_path_factory.mktemp("channel"))


@pytest.fixture
def served(channel: Path):
    with cc.serve(channel) as url:
        yield url + "/"


class _Drip(http.server.BaseHTTPRequestHandler):
    """Promises 1,000 bytes and sends one every 2 s (the issue's stalling server)."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        try:
            for _ in range(15):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(2)
        except OSError:
            pass  # the client gave up: what the test wants

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def drip():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Drip)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _record(url: str) -> cl.CondaRecord:
    return cl.CondaRecord("nccl", "2.23.4.1", "cuda12_h0_3", "linux-64", url, "0" * 64, "0" * 32, ())


# ----------------------------------------------------------------------------- what may be read
def test_the_fetch_policy_reads_https_named_loopback_http_and_files_inside_the_lock_folder_only(tmp_path):
    policy = cl.FetchPolicy.for_lock(tmp_path, ["http://127.0.0.1:38417/", "https://conda.anaconda.org/conda-forge"])
    (tmp_path / "channel").mkdir()
    assert policy.refusal("https://conda.anaconda.org/conda-forge/linux-64/x-1-0.conda") is None
    assert policy.refusal("http://127.0.0.1:38417/linux-64/x-1-0.conda") is None
    assert policy.refusal((tmp_path / "channel" / "x-1-0.conda").as_uri()) is None
    assert "loopback channel the lock names" in policy.refusal("http://127.0.0.1:9/linux-64/x-1-0.conda")
    assert "loopback channel the lock names" in policy.refusal("http://example.com/linux-64/x-1-0.conda")
    assert "outside the lock's folder" in policy.refusal("file:///dev/zero")
    assert "outside the lock's folder" in policy.refusal("file:///etc/passwd")
    assert "outside the lock's folder" in policy.refusal((tmp_path / "channel" / ".." / ".." / "x").as_uri())
    assert "never fetched" in policy.refusal("ftp://127.0.0.1/x")


def test_a_device_or_fifo_linked_into_the_lock_folder_is_never_read(tmp_path):
    import os

    (tmp_path / "zero.conda").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.conda")
    policy = cl.FetchPolicy(base=tmp_path, deadline_s=5)
    started = time.monotonic()
    problems, unverified = cl.verify_files([_record((tmp_path / "zero.conda").as_uri()), _record((tmp_path / "fifo.conda").as_uri())],
                                           everything=True, policy=policy)
    assert time.monotonic() - started < GUARD_S
    assert "outside the lock's folder" in problems[0]
    assert "not a regular file (a device or FIFO is never read)" in unverified[0]


def test_a_file_over_the_byte_cap_is_not_hashed_to_the_end(tmp_path):
    (tmp_path / "big.conda").write_bytes(b"x" * (3 << 20))
    policy = cl.FetchPolicy(base=tmp_path, max_bytes=1 << 20)
    _, unverified = cl.verify_files([_record((tmp_path / "big.conda").as_uri())], everything=True, policy=policy)
    assert "larger than 1 MiB (the limit for one package file)" in unverified[0]


def test_a_server_dripping_a_byte_every_2_s_ends_at_the_deadline_naming_it(drip):
    policy = cl.FetchPolicy.for_lock(Path("/nonexistent"), [drip], deadline_s=3)
    records = [_record(f"{drip}linux-64/nccl-2.23.4.1-cuda12_h0_3.tar.bz2"), _record(f"{drip}linux-64/other-1-0.tar.bz2")]
    started = time.monotonic()
    problems, unverified = cl.verify_files(records, everything=True, policy=policy)
    took = time.monotonic() - started
    assert 2.5 < took < 12, took
    assert problems == []
    assert len(unverified) == 1 and "not read within the 3 s deadline" in unverified[0]
    assert unverified[0].endswith("; 1 more record(s) not hashed")


# ----------------------------------------------------------------------------- lock --check / --verify
def test_check_without_verify_fetches_no_package_file_not_even_a_local_one(channel, served, tmp_path, monkeypatch):
    stack = make_stack(served)
    lock_into(stack, tmp_path)

    def no_fetch(*args, **kwargs):
        raise AssertionError(f"fetched {args[0]} without --verify")

    monkeypatch.setattr(cl, "file_hashes", no_fetch)
    assert cl.check(stack, tmp_path) == ([], [])


def test_verify_hashes_every_file_of_a_loopback_channel_the_lock_names(channel, served, tmp_path):
    stack = make_stack(served)
    lock_into(stack, tmp_path)
    assert cl.check(stack, tmp_path, verify_all=True) == ([], [])


def test_verify_never_hashes_a_record_already_found_inconsistent(channel, served, tmp_path, monkeypatch):
    stack = make_stack(served)
    lock_into(stack, tmp_path)
    path = tmp_path / cl.CONDA_LOCK_NAME
    _edit(path, lambda d: _package(d, "pytorch").update(url="file:///dev/zero"))
    _edit(path, lambda d: _package(d, "cudnn")["hash"].update(sha256="0" * 64))
    fetched: list[str] = []
    real = cl.file_hashes
    monkeypatch.setattr(cl, "file_hashes", lambda url, *a, **k: (fetched.append(url), real(url, *a, **k))[1])
    started = time.monotonic()
    problems, unverified = cl.check(stack, tmp_path, verify_all=True)
    assert time.monotonic() - started < 120
    assert any("linux-64/pytorch: url file:///dev/zero is not the file of pytorch-2.5.1-" in p for p in problems), problems
    assert fetched and not any("/dev/zero" in u or "/cudnn-" in u for u in fetched), fetched
    assert unverified == []


# ----------------------------------------------------------------------------- fuzz (item 6)
_JUNK = [None, 0, -1, 1e308, True, [], {}, [1, [2, [3]]], {"a": {"b": {}}}, "", "x" * 5000, "file:///dev/zero",
         "http://127.0.0.1:9/x-1-0.conda", "../../etc/passwd", "\x1b]0;title\x07", "0" * 64, "sha256:zz"]


def _mutate(record: dict, rng: random.Random) -> None:
    key = rng.choice(["name", "version", "build", "url", "hash", "platform", "dependencies", "category", "manager", "optional"])
    if key == "hash" and rng.random() < 0.5 and isinstance(record.get("hash"), dict):
        record["hash"][rng.choice(["md5", "sha256"])] = rng.choice(_JUNK)
    else:
        record[key] = rng.choice(_JUNK)


def test_random_mutations_of_conda_lock_records_are_judged_or_refused(channel, tmp_path):
    stack = make_stack(cc.file_url(channel))
    lock_dir = tmp_path / "lock"
    lock_into(stack, lock_dir)
    path = lock_dir / cl.CONDA_LOCK_NAME
    original = path.read_text()
    rng = random.Random(2415)
    policy = cl.FetchPolicy.for_lock(lock_dir, [], deadline_s=5)
    for _ in range(40):
        data = yaml.safe_load(original)
        for _ in range(rng.randint(1, 3)):
            _mutate(rng.choice(data["package"]), rng)
        header = "".join(l for l in original.splitlines(keepends=True) if l.startswith("#"))
        path.write_text(header + yaml.safe_dump(data, sort_keys=False))
        started = time.monotonic()
        problems, _ = cl.check(stack, lock_dir, resolve=False)
        assert problems and all(isinstance(p, str) and str(path) in p for p in problems)
        try:
            records = cl.read_conda_lock(path)
        except ValueError as exc:
            assert str(path) in str(exc)
        else:
            cl.verify_files(records, everything=True, policy=policy)
        assert time.monotonic() - started < GUARD_S


# ----------------------------------------------------------------------------- the pip lock's --verify
def _pip_lock(index: str) -> str:
    return f"--index-url {index}\nfilelock==3.20.0 \\\n    --hash=sha256:{'0' * 64}\n"


def test_pip_verify_asks_no_plain_http_index_but_a_loopback_one(monkeypatch):
    from urllib import request

    from fwdoctor.recipes import lockfile

    def no_connection(*args, **kwargs):
        raise AssertionError("connected")

    monkeypatch.setattr(request, "urlopen", no_connection)
    problems, unverified = lockfile.verify(_pip_lock("http://example.com/simple"), timeout=5)
    assert problems == [] and "is plain http to another machine (https only, or a loopback address)" in unverified[0]
    assert lockfile._http_refusal("http://127.0.0.1:8080/simple/x/") is None
    assert lockfile._http_refusal("https://pypi.org/simple/x/") is None
    assert "not an http(s) index" in lockfile._http_refusal("file:///dev/zero")


def test_pip_verify_against_a_dripping_index_ends_at_its_deadline(drip, monkeypatch):
    from fwdoctor.recipes import lockfile

    monkeypatch.setattr(lockfile, "VERIFY_DEADLINE_S", 3.0)
    started = time.monotonic()
    problems, unverified = lockfile.verify(_pip_lock(drip.rstrip("/") + "/simple"), timeout=30)
    took = time.monotonic() - started
    assert 2.5 < took < 12, took
    assert problems == [] and "not read within the --verify deadline" in unverified[0]
