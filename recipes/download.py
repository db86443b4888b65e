"""Checksum-verified, atomic downloads: the only way a plan fetches a file.

The file is streamed into a temporary file beside its destination while its sha256 is
computed; only when the digest matches is it renamed into place (`os.replace`, atomic on
one filesystem). A mismatch, an HTTP error or an interruption (Ctrl-C, SIGTERM) removes the
temporary file, so the destination either holds the verified file or is untouched.

Plans call it as a command, so a printed plan stays runnable by hand:

    python -m fwdoctor.recipes.download --sha256 HEX URL DEST

Exit status: 0 downloaded (or DEST already had that digest), 1 failed (message on stderr).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import signal
import sys
import tempfile
import urllib.error
import urllib.request
from typing import Callable

CHUNK = 1 << 20
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
) -> str:
    """Fetch `url` into `dest` if its sha256 matches. Returns "cached" or "downloaded".

    Raises DownloadError (ChecksumMismatch for a wrong digest); never leaves a partial file.
    """
    expected = normalize_sha256(sha256)
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
        try:
            request = urllib.request.Request(url, headers={"User-Agent": "fwdoctor"})
            with urllib.request.urlopen(request, timeout=timeout) as response, os.fdopen(fd, "wb") as out:
                fd = -1
                length = response.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else None
                while True:
                    block = response.read(CHUNK)
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
        except urllib.error.URLError as exc:
            raise DownloadError(f"{url}: {exc.reason}") from None
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


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fwdoctor.recipes.download", description="Download URL to DEST if its sha256 matches.")
    parser.add_argument("--sha256", required=True, help="expected digest (64 hex digits or sha256-BASE64)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds without data before giving up")
    parser.add_argument("url")
    parser.add_argument("dest")
    args = parser.parse_args(argv)
    # SIGTERM (apply being stopped) must clean up like Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        outcome = download(args.url, args.dest, args.sha256, timeout=args.timeout)
    except ValueError as exc:
        print(f"download: {exc}", file=sys.stderr)
        return 1
    except DownloadError as exc:
        print(f"download: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("download: interrupted; nothing was written", file=sys.stderr)
        return 130
    print(f"{args.dest}: {outcome} (sha256 {normalize_sha256(args.sha256)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
