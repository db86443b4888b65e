"""`fwdoctor lock` says where it goes and what failed (issue 29, item 3): every index is
asked once before pip runs, and one that does not answer stops the lock within seconds,
named with the reason (refused, HTTP status, TLS, DNS); pip's own configuration is named as
ignored; pip's timeout and retries are explicit; `--verify` never passes on a local file
alone while the index stayed silent. Everything runs against stand-ins on 127.0.0.1."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import shutil
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import TEST_KB_DIR
from fwdoctor.kb import KB
from fwdoctor.recipes import lockfile, netcheck
from fwdoctor.recipes import stack as stack_mod
from localindex import serve
from test_lock_check import copy_stack


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the block ends: connecting is refused


@contextlib.contextmanager
def _http_503() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_error(503, "Service Unavailable")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def _plain_http_asked_with_https() -> Iterator[str]:
    """A plain-http server (it answers a TLS hello with an HTTP 400, as nginx does), named
    with https."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}/simple"
    finally:
        stop.set()
        thread.join(2)
        listener.close()


@contextlib.contextmanager
def _index(kind: str) -> Iterator[str]:
    if kind == "refused":
        yield f"http://127.0.0.1:{_closed_port()}/simple"
    elif kind == "503":
        with _http_503() as url:
            yield url
    elif kind == "tls":
        with _plain_http_asked_with_https() as url:
            yield url
    else:
        yield "https://index.fwdoctor-test.invalid/simple"


EXPECTED = {"refused": "connection refused", "503": "HTTP 503 Service Unavailable", "tls": "TLS: ", "dns": "DNS: the host name does not resolve"}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_lock_with_an_unreachable_index_fails_within_seconds_naming_it_and_why(cli, use_test_kb, tmp_path, monkeypatch, kind):
    stack = copy_stack(tmp_path, "cpu-py311")
    monkeypatch.chdir(tmp_path)
    with _index(kind) as url:
        started = time.monotonic()
        result = cli("lock", str(stack), "--out", "out", "--index-url", url, "--extra-index-url", url)
        took = time.monotonic() - started
    assert result.exit_code == 1, result.output
    assert f"{url} did not answer: {EXPECTED[kind]}" in result.output
    assert "pip was not run" in result.output
    assert took < netcheck.PROBE_TIMEOUT_S + 5, took
    assert not (tmp_path / "out").exists()


def test_a_plain_http_server_asked_with_https_is_called_a_tls_failure():
    with _plain_http_asked_with_https() as url:
        why = netcheck.probe_url(url + "/torch/", timeout=5)
    assert why is not None and why.startswith("TLS: ") and "plain http" in why


def test_an_index_without_the_project_still_answered_but_a_missing_find_links_page_did_not(tmp_path):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "filelock-3.20.0-py3-none-any.whl").write_bytes(b"filelock bytes")
    with serve(tmp_path / "w", tmp_path / "index") as index:
        assert netcheck.probe_sources([index], [], "no-such-project", timeout=5) == []
        page = index.rsplit("/", 1)[0] + "/missing.html"
        assert netcheck.probe_sources([], [page, str(tmp_path / "gone")], timeout=5) == [
            (f"--find-links {page}", "HTTP 404 File not found"), (f"--find-links {tmp_path / 'gone'}", "no such folder")]


def test_pips_configuration_is_named_as_ignored_with_the_flags_that_pass_it(use_test_kb, tmp_path, monkeypatch):
    (tmp_path / "xdg" / "pip").mkdir(parents=True)
    (tmp_path / "xdg" / "pip" / "pip.conf").write_text("[global]\nindex-url = https://mirror.example/simple\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    monkeypatch.setenv("PIP_CERT", "/etc/ssl/certs/ca-certificates.crt")  # honoured: --cert's default
    resolved = stack_mod.load_and_resolve(copy_stack(tmp_path, "cpu-py311"), KB(TEST_KB_DIR))
    said: list[str] = []
    url = f"http://127.0.0.1:{_closed_port()}/simple"
    with pytest.raises(lockfile.LockError, match="did not answer: connection refused"):
        lockfile.resolve_pins(resolved, index_url=url, extra_index_urls=[], progress=said.append)
    ignored = next(line for line in said if line.startswith("ignored"))
    assert "PIP_INDEX_URL" in ignored and str(tmp_path / "xdg" / "pip" / "pip.conf") in ignored
    assert "PIP_CERT" not in ignored and "--index-url" in ignored and "--cert" in ignored


def test_pip_is_given_its_timeout_and_retries_and_the_deadline_is_stated(use_test_kb, tmp_path):
    resolved = stack_mod.load_and_resolve(copy_stack(tmp_path, "cpu-py311"), KB(TEST_KB_DIR))
    joined = " ".join(lockfile.pip_argv(resolved, "r", "o"))
    assert f"--timeout {netcheck.PIP_SOCKET_TIMEOUT_S} --retries {netcheck.PIP_RETRIES}" in joined


def test_verify_does_not_pass_on_a_find_links_file_while_the_index_is_silent(cli, use_test_kb, tmp_path, monkeypatch):
    stack = copy_stack(tmp_path, "cpu-py311")
    resolved = stack_mod.load_and_resolve(stack, KB(TEST_KB_DIR))
    local = tmp_path / "local-wheels"
    local.mkdir()
    torch_file = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    (local / torch_file).write_bytes(b"torch bytes")
    pins = [lockfile.Pin("torch", "2.13.0+cpu", hashlib.sha256(b"torch bytes").hexdigest(), torch_file)]
    url = f"http://127.0.0.1:{_closed_port()}/simple"
    text = lockfile.render_lock(resolved, pins, "stacks/cpu-py311.yaml", lockfile.Sources.of(url, (), ["../local-wheels"]))
    lock_dir = tmp_path / "lock"
    lock_dir.mkdir()
    problems, unverified = lockfile.verify(text, timeout=5, base=lock_dir)
    assert problems == []
    assert unverified == [f"torch==2.13.0+cpu: index unreachable ({url}: connection refused (nothing listens on that port)); "
                          "found only in --find-links ../local-wheels"]
    shutil.rmtree(local)


def test_a_conda_channel_that_does_not_answer_is_named_before_any_solver_starts(use_test_kb, tmp_path):
    from fwdoctor.recipes import conda_lock

    url = f"http://127.0.0.1:{_closed_port()}/conda-channel"
    stack = copy_stack(tmp_path, "cpu-py311", f"conda:\n  channels: ['{url}']\n  packages: ['libjpeg-turbo=3.0']\n")
    resolved = stack_mod.load_and_resolve(stack, KB(TEST_KB_DIR))
    said: list[str] = []
    started = time.monotonic()
    with pytest.raises(conda_lock.CondaLockError) as err:
        conda_lock.lock(resolved, str(stack), tmp_path / "out", progress=said.append)
    assert time.monotonic() - started < netcheck.PROBE_TIMEOUT_S + 5
    assert str(err.value) == f"channel {url} did not answer: connection refused (nothing listens on that port) (nothing was solved)"
    assert said == [f"conda channels: {url} (each asked within {netcheck.PROBE_TIMEOUT_S:g} s)"]


def test_a_download_from_a_refused_port_says_connection_refused(tmp_path):
    from fwdoctor.recipes import download as dl

    url = f"http://127.0.0.1:{_closed_port()}/cuda.run"
    with pytest.raises(dl.DownloadError) as err:
        dl.download(url, str(tmp_path / "cuda.run"), "0" * 64, timeout=5)
    assert str(err.value) == f"{url}: connection refused (nothing listens on that port)"


def test_a_plans_pip_step_names_its_index_and_fails_at_once_when_it_does_not_answer(tmp_path):
    from fwdoctor.recipes.apply import FAILED, apply_plan
    from fwdoctor.recipes.plan import Plan, Step

    url = f"http://127.0.0.1:{_closed_port()}/simple"
    step = Step((sys.executable, "-m", "pip", "install", "--index-url", url, "torch==2.14.1"), why="install torch")
    said: list[str] = []
    started = time.monotonic()
    result = apply_plan(Plan("torch-wheel", "torch", steps=(step,)), log_path=str(tmp_path / "log"), progress=said.append)
    assert time.monotonic() - started < netcheck.PROBE_TIMEOUT_S + 5
    assert result.status == FAILED
    assert f"[1/1] pip asks: {url}" in said
    assert result.outcomes[0].output_tail == f"{url} did not answer: connection refused (nothing listens on that port) (pip was not run)"


def test_pip_sources_are_read_from_pip_command_lines_only():
    assert netcheck.pip_sources(["/v/bin/python", "-m", "pip", "install", "--index-url", "https://i/simple",
                                 "--extra-index-url=https://e/simple", "-f", "https://l/", "-f", "wheels", "x"]) == (
        ["https://i/simple", "https://e/simple"], ["https://l/"])
    assert netcheck.pip_sources(["curl", "--index-url", "https://i/"]) == ([], [])


def test_verify_takes_a_hash_an_answering_index_publishes_while_another_index_is_down(use_test_kb, tmp_path):
    """The committed CPU lock's case: download.pytorch.org silent, pypi.org answering. The
    pins pypi.org publishes are verified; torch (+cpu, not on pypi.org) is not verified."""
    stack = copy_stack(tmp_path, "cpu-py311")
    resolved = stack_mod.load_and_resolve(stack, KB(TEST_KB_DIR))
    served = tmp_path / "served"
    served.mkdir()
    (served / "filelock-3.20.0-py3-none-any.whl").write_bytes(b"filelock bytes")
    torch_file = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    pins = [lockfile.Pin("filelock", "3.20.0", hashlib.sha256(b"filelock bytes").hexdigest(), "filelock-3.20.0-py3-none-any.whl"),
            lockfile.Pin("torch", "2.13.0+cpu", hashlib.sha256(b"torch bytes").hexdigest(), torch_file)]
    down = f"http://127.0.0.1:{_closed_port()}/whl/cpu"
    with serve(served, tmp_path / "index") as index:
        problems, unverified = lockfile.verify(lockfile.render_lock(resolved, pins, "s.yaml", lockfile.Sources.of(down, [index])), timeout=5)
    assert problems == []
    assert unverified == [f"torch==2.13.0+cpu: index unreachable ({down}: connection refused (nothing listens on that port)); not found in {index}"]
