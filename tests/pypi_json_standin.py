"""A stand-in for pypi.org's JSON API on 127.0.0.1, for tools/kb_refresh.py's tests.

`serve(folder, releases)` serves:
  /pypi/NAME/json      {"info": {"name"}, "releases": {version: [file, ...]}} as pypi.org
                       does (filename, url, digests.sha256, yanked, core-metadata);
  /files/FILENAME      the files of `folder`, with HEAD and HTTP Range (what reading one
                       member of a wheel needs), and FILENAME.metadata where present (PEP 658).
Wheels are built by `wheel(folder, name, version, metadata, members)`: real zip files.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import json
import threading
import zipfile
from pathlib import Path
from typing import Any, Iterator


def wheel(folder: Path, filename: str, metadata: str, members: dict[str, str] | None = None, pep658: bool = True) -> Path:
    """A wheel `filename` whose dist-info/METADATA is `metadata` (and a .metadata file
    beside it when `pep658`)."""
    dist, version = filename.split("-")[:2]
    path = folder / filename
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (members or {}).items():
            archive.writestr(name, text)
        archive.writestr(f"{dist}-{version}.dist-info/METADATA", metadata)
        archive.writestr(f"{dist}-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\n")
    if pep658:
        (folder / f"{filename}.metadata").write_text(metadata)
    return path


class _Handler(http.server.BaseHTTPRequestHandler):
    folder: Path
    releases: dict[str, dict[str, list[str]]]  # project -> version -> filenames
    overrides: dict[str, dict[str, Any]]  # filename -> fields to force (sha256, yanked)

    def log_message(self, *args: Any) -> None:
        pass

    def _project(self, name: str) -> dict[str, Any] | None:
        if name not in self.releases:
            return None
        out: dict[str, list[dict[str, Any]]] = {}
        for version, names in self.releases[name].items():
            out[version] = []
            for filename in names:
                path = self.folder / filename
                entry: dict[str, Any] = {
                    "filename": filename, "url": f"/files/{filename}", "packagetype": "bdist_wheel",
                    "digests": {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()},
                    "yanked": False, "upload_time_iso_8601": "2026-12-01T00:00:00Z",
                }
                meta = self.folder / f"{filename}.metadata"
                if meta.exists():
                    entry["core-metadata"] = {"sha256": hashlib.sha256(meta.read_bytes()).hexdigest()}
                entry.update(self.overrides.get(filename, {}))
                out[version].append(entry)
        return {"info": {"name": name}, "releases": out}

    def _send(self, code: int, body: bytes, ctype: str, extra: dict[str, str] | None = None, head: bool = False) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _serve(self, head: bool) -> None:
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) == 3 and parts[0] == "pypi" and parts[2] == "json":
            project = self._project(parts[1])
            if project is None:
                return self._send(404, b"", "text/plain", head=head)
            return self._send(200, json.dumps(project).encode(), "application/json", head=head)
        if len(parts) == 2 and parts[0] == "files" and (self.folder / parts[1]).is_file():
            data = (self.folder / parts[1]).read_bytes()
            wanted = self.headers.get("Range")
            if wanted and wanted.startswith("bytes="):
                first, _, last = wanted[6:].partition("-")
                start, end = int(first), min(int(last), len(data) - 1)
                return self._send(206, data[start:end + 1], "application/octet-stream", {"Content-Range": f"bytes {start}-{end}/{len(data)}"}, head)
            return self._send(200, data, "application/octet-stream", head=head)
        self._send(404, b"", "text/plain", head=head)

    def do_GET(self) -> None:  # noqa: N802 (http.server's names)
        self._serve(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(head=True)


@contextlib.contextmanager
def serve(folder: Path, releases: dict[str, dict[str, list[str]]], overrides: dict[str, dict[str, Any]] | None = None) -> Iterator[str]:
    """The stand-in index's base URL (http://127.0.0.1:PORT) while the block runs."""
    handler = type("Handler", (_Handler,), {"folder": folder, "releases": releases, "overrides": overrides or {}})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
