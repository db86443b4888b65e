"""recipes/download.py against careless input and slow servers (issue 11, item 6).

A URL it cannot handle or a destination it cannot write is exit 2 with one line (it was a
traceback after the download, or a request anyway); a server that trickles one byte every
20 s is cut off at the overall deadline (per-read timeouts never fire against it); nothing
is written outside the destination's folder. The servers are real sockets on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BODY = b"fwdoctor test payload\n" * 10
DIGEST = hashlib.sha256(BODY).hexdigest()


@pytest.fixture()
def server():
    """/file.bin whole; /trickle/file.bin one byte every 20 s (Content-Length says 220)."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            if not self.path.startswith("/trickle/"):
                self.wfile.write(BODY)
                return
            for byte in BODY:
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return
                if stop.wait(20.0):
                    return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    stop.set()
    httpd.shutdown()
    httpd.server_close()


def _download(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fwdoctor.recipes.download", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def _no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_destination_that_is_a_folder_is_refused_before_any_request(server: str, tmp_path: Path) -> None:
    folder = tmp_path / "dl"
    folder.mkdir()
    result = _download("--sha256", DIGEST, f"{server}/file.bin", str(folder))
    assert result.returncode == 2, result.stderr
    _no_traceback(result)
    assert f"{folder}: is a folder" in result.stderr
    assert list(folder.iterdir()) == []


def test_a_destination_ending_in_a_slash_is_refused(server: str, tmp_path: Path) -> None:
    result = _download("--sha256", DIGEST, f"{server}/file.bin", f"{tmp_path}/new/")
    assert result.returncode == 2, result.stderr
    _no_traceback(result)
    assert "names a folder, not a file" in result.stderr
    assert not (tmp_path / "new").exists()


def test_a_destination_climbing_out_of_its_folder_is_refused(server: str, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    result = _download("--sha256", DIGEST, f"{server}/file.bin", f"{tmp_path}/a/../escaped.bin")
    assert result.returncode == 2, result.stderr
    _no_traceback(result)
    assert "'..'" in result.stderr
    assert not (tmp_path / "escaped.bin").exists()


def test_a_destination_that_is_a_fifo_is_refused_without_opening_it(server: str, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = _download("--sha256", DIGEST, f"{server}/file.bin", str(fifo), timeout=20)
    assert result.returncode == 2, result.stderr
    _no_traceback(result)
    assert "not a regular file" in result.stderr


@pytest.mark.parametrize(("path", "why"), [("/..", "names no file"), ("/dir/..", "names no file"), ("/", "names no file"),
                                           ("/a/../file.bin", "'..'"), ("/%2e%2e", "names no file")])
def test_urls_naming_no_file_are_refused(server: str, tmp_path: Path, path: str, why: str) -> None:
    dest = tmp_path / "out.bin"
    result = _download("--sha256", DIGEST, f"{server}{path}", str(dest))
    assert result.returncode == 2, result.stderr
    _no_traceback(result)
    assert why in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/file.bin", "data:,hello", "gopher://x/f", "file.bin", "http:///file.bin"])
def test_schemes_it_cannot_handle_are_refused(tmp_path: Path, url: str) -> None:
    result = _download("--sha256", DIGEST, url, str(tmp_path / "out.bin"))
    assert result.returncode == 2, result.stderr
    _no_traceback(result)
    assert "download: " in result.stderr and url in result.stderr


def test_a_good_download_still_lands(server: str, tmp_path: Path) -> None:
    dest = tmp_path / "dl" / "file.bin"
    result = _download("--sha256", DIGEST, f"{server}/file.bin", str(dest))
    assert result.returncode == 0, result.stderr
    assert dest.read_bytes() == BODY
    assert sorted(p.name for p in dest.parent.iterdir()) == ["file.bin"]


def test_a_server_trickling_one_byte_every_20_s_is_cut_off_at_the_deadline(server: str, tmp_path: Path) -> None:
    # Each read gets a byte well within --timeout, so only an overall deadline ends it.
    dest = tmp_path / "dl" / "file.bin"
    started = time.monotonic()
    result = _download("--sha256", DIGEST, "--timeout", "30", "--deadline", "3", f"{server}/trickle/file.bin", str(dest), timeout=60)
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    _no_traceback(result)
    assert "not complete within the 3 s deadline" in result.stderr
    assert elapsed < 15, elapsed
    assert list(dest.parent.iterdir()) == []  # no partial file


def test_a_server_that_never_answers_is_cut_off_at_the_deadline(tmp_path: Path) -> None:
    # The connection is accepted by the kernel (listen backlog) and nothing ever comes.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        started = time.monotonic()
        result = _download("--sha256", DIGEST, "--timeout", "30", "--deadline", "2", f"http://127.0.0.1:{port}/f.run",
                           str(tmp_path / "f.run"), timeout=60)
    assert result.returncode == 1, result.stderr
    assert "deadline" in result.stderr
    assert time.monotonic() - started < 15


def test_the_library_call_honours_the_deadline_too(server: str, tmp_path: Path) -> None:
    from fwdoctor.recipes import download as dl

    started = time.monotonic()
    with pytest.raises(dl.DownloadError, match="deadline"):
        dl.download(f"{server}/trickle/file.bin", str(tmp_path / "f.bin"), DIGEST, timeout=30, deadline=2)
    assert time.monotonic() - started < 15
    assert list(tmp_path.iterdir()) == []
