"""Checksum-verified, atomic downloads: the only way a plan fetches a file.

The file is streamed into a temporary file beside its destination while its sha256 is
computed; only when the digest matches is it renamed into place (`os.replace`, atomic on
one filesystem). A mismatch, an HTTP error or an interruption (Ctrl-C, SIGTERM) removes the
temporary file, so the destination either holds the verified file or is untouched.

Plans call it as a command, so a printed plan stays runnable by hand:

    python -m fwdoctor.recipes.download --sha256 HEX URL DEST

URLs it cannot handle (a scheme other than http, https and file; a path naming no file,
such as one ending in `/..`; a `..` segment) and destinations it cannot write (a folder,
a path ending in `/`, a `..` component, an existing non-regular file such as a FIFO or a
symlink) are refused before any request. The whole transfer has a deadline (`--deadline`),
not only each read (`--timeout`): a server trickling one byte every 20 s is cut off.

Exit status: 0 downloaded (or DEST already had that digest), 1 failed (message on stderr),
2 refused input (a bad digest, URL or destination), 128+signal when stopped (130 for
SIGINT, 143 for SIGTERM, 129 for SIGHUP), always with one line on stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import signal
import stat
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable

from fwdoctor.recipes import netcheck

CHUNK = 1 << 20
# A CUDA runfile is ~4 GB: three hours is 0.4 MB/s, slower than any mirror worth waiting for.
DEFAULT_DEADLINE_S = 3 * 3600.0
SCHEMES = ("http", "https", "file")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class DownloadError(Exception):
    """The download failed; nothing was written at the destination."""


class ChecksumMismatch(DownloadError):
    def __init__(self, url: str, expected: str, actual: str) -> None:
        super().__init__(
            f"{url}: sha256 mismatch: expected {expected}, got {actual}; the file was discarded, nothing was installed"
        )
        self.expected = expected
        self.actual = actual


class BadInput(ValueError):
    """A URL or destination the download cannot handle; nothing was requested or written."""


class DeadlineExceeded(DownloadError):
    pass


def check_url(url: str) -> str:
    """`url` if it is an http(s) or file URL naming a file; else BadInput saying why."""
    if any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in url):
        raise BadInput(f"{url!r}: control characters or spaces in the URL")
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as exc:
        raise BadInput(f"{url}: not a URL ({exc})") from None
    if parts.scheme.lower() not in SCHEMES:
        raise BadInput(f"{url}: cannot download this; only {', '.join(SCHEMES)} URLs")
    if parts.scheme.lower() != "file" and not parts.hostname:
        raise BadInput(f"{url}: no host in the URL")
    segments = [urllib.parse.unquote(seg) for seg in parts.path.split("/")]
    if segments[-1] in ("", ".", ".."):
        raise BadInput(f"{url}: the URL names no file (its path ends in {parts.path[-3:] or '/'!r})")
    if ".." in segments:
        raise BadInput(f"{url}: a '..' segment in the URL's path")
    return url


def check_destination(dest: str) -> str:
    """`dest` if a file may be written there; else BadInput saying why. Never opens it."""
    if not dest or "\0" in dest:
        raise BadInput(f"{dest!r}: not a file name")
    name = os.path.basename(dest)
    if dest.endswith(os.sep) or name in ("", ".", ".."):
        raise BadInput(f"{dest}: names a folder, not a file")
    if ".." in dest.split(os.sep):
        raise BadInput(f"{dest}: a '..' component: the file would land outside the folder the path names")
    try:
        info = os.lstat(dest)
    except FileNotFoundError:
        return dest
    except OSError as exc:
        raise BadInput(f"{dest}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise BadInput(f"{dest}: is a folder; give the file's path")
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{dest}: exists and is not a regular file (a symlink, FIFO or device); refusing to replace it")
    return dest


def normalize_sha256(value: str) -> str:
    """A lower-case 64-digit hex digest; also accepts SRI form `sha256-BASE64=`."""
    text = value.strip()
    if text.startswith("sha256-"):
        import base64
        import binascii

        try:
            raw = base64.b64decode(text[len("sha256-"):], validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == 32:
            return raw.hex()
        raise ValueError(f"not a sha256 digest: {value!r}")
    text = text.lower()
    if not _HEX64.match(text):
        raise ValueError(f"not a sha256 digest: {value!r} (expected 64 hex digits)")
    return text


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def download(
    url: str,
    dest: str,
    sha256: str,
    timeout: float = 60.0,
    progress: Callable[[int, int | None], None] | None = None,
    deadline: float = DEFAULT_DEADLINE_S,
) -> str:
    """Fetch `url` into `dest` if its sha256 matches. Returns "cached" or "downloaded".

    `timeout` bounds each wait for data, `deadline` the whole transfer. Raises BadInput
    (a ValueError) for a URL or destination it cannot handle, DownloadError otherwise
    (ChecksumMismatch for a wrong digest, DeadlineExceeded); never leaves a partial file.
    """
    expected = normalize_sha256(sha256)
    check_url(url)
    check_destination(dest)
    if not deadline > 0:  # also NaN
        raise BadInput(f"--deadline {deadline}: must be a positive number of seconds")
    if os.path.isfile(dest) and sha256_file(dest) == expected:
        return "cached"
    directory = os.path.dirname(os.path.abspath(dest))
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise DownloadError(f"cannot create {directory}: {exc.strerror or exc}") from None
    _remove_stale_parts(directory, os.path.basename(dest))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(dest)}.", suffix=".part", dir=directory)
    try:
        digest = hashlib.sha256()
        done = 0
        ends = time.monotonic() + deadline
        try:
            with _deadline_alarm(url, deadline, ends):
                request = urllib.request.Request(url, headers={"User-Agent": "fwdoctor"})
                opened = urllib.request.urlopen(request, timeout=min(timeout, deadline))
            with opened as response, os.fdopen(fd, "wb") as out, _deadline_alarm(url, deadline, ends):
                fd = -1
                length = response.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else None
                while True:
                    if time.monotonic() > ends:  # off the main thread there is no alarm: checked per block
                        raise DeadlineExceeded(_late(url, deadline))
                    # read1: at most one receive, so the check above runs between trickled bytes
                    block = response.read1(CHUNK) if hasattr(response, "read1") else response.read(CHUNK)
                    if not block:
                        break
                    digest.update(block)
                    out.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
                out.flush()
                os.fsync(out.fileno())
        except urllib.error.HTTPError as exc:
            raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:  # DNS, refused, TLS, no answer: said as such
            raise DownloadError(f"{url}: {netcheck.reason(exc, timeout)}") from None
        except (TimeoutError, ConnectionError) as exc:
            raise DownloadError(f"{url}: {netcheck.reason(exc, timeout)}") from None
        except (OSError, ValueError) as exc:
            raise DownloadError(f"{url}: {exc}") from None
        actual = digest.hexdigest()
        if actual != expected:
            raise ChecksumMismatch(url, expected, actual)
        os.replace(tmp, dest)
        tmp = ""
        return "downloaded"
    finally:
        # Runs on errors and on KeyboardInterrupt alike: no partial file survives.
        if fd >= 0:
            os.close(fd)
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


def _late(url: str, deadline: float) -> str:
    return f"{url}: not complete within the {deadline:g} s deadline (--deadline); the partial file was discarded"


class _deadline_alarm:
    """In the main thread, SIGALRM at the deadline interrupts any blocking call (DNS,
    connect, a read that a byte every 20 s keeps alive). Elsewhere it does nothing and
    the per-block check in `download` ends the transfer."""

    def __init__(self, url: str, deadline: float, ends: float | None = None) -> None:
        self.url, self.deadline = url, deadline
        self.ends = ends if ends is not None else time.monotonic() + deadline
        self.previous: object = None
        self.armed = False

    def _expire(self, signum: int, frame: object) -> None:
        raise DeadlineExceeded(_late(self.url, self.deadline))

    def __enter__(self) -> "_deadline_alarm":
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            self.previous = signal.signal(signal.SIGALRM, self._expire)
            self.armed = True
            signal.setitimer(signal.ITIMER_REAL, max(0.001, self.ends - time.monotonic()))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)  # type: ignore[arg-type]


def _remove_stale_parts(directory: str, name: str) -> None:
    """Temporary files of an earlier run killed with SIGKILL (a timeout) are garbage."""
    prefix = f".{name}."
    try:
        entries = os.listdir(directory)
    except OSError:
        return
    for entry in entries:
        if entry.startswith(prefix) and entry.endswith(".part"):
            try:
                os.unlink(os.path.join(directory, entry))
            except OSError:
                pass


class _Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP: cleaned up like Ctrl-C, but the exit status names the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _interrupt(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fwdoctor.recipes.download", description="Download URL to DEST if its sha256 matches.")
    parser.add_argument("--sha256", required=True, help="expected digest (64 hex digits or sha256-BASE64)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds without data before giving up")
    parser.add_argument("--deadline", type=float, default=DEFAULT_DEADLINE_S, help="seconds for the whole download")
    parser.add_argument("url")
    parser.add_argument("dest")
    args = parser.parse_args(argv)
    # SIGTERM or SIGHUP (apply being stopped) must clean up like Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    try:
        outcome = download(args.url, args.dest, args.sha256, timeout=args.timeout, deadline=args.deadline)
    except ValueError as exc:  # BadInput, a bad digest: nothing was requested
        print(f"download: {exc}", file=sys.stderr)
        return 2
    except DownloadError as exc:
        print(f"download: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, _Stopped) else signal.SIGINT
        print(f"download: interrupted ({signal.Signals(signum).name}); nothing was written", file=sys.stderr)
        return 128 + int(signum)
    print(f"{args.dest}: {outcome} (sha256 {normalize_sha256(args.sha256)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
