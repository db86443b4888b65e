"""A PEP 503 package index on 127.0.0.1 for the tests that lock, install and build offline.

`wheelhouse(cache, extra)` fills a folder with the committed CPU lock's wheels (torch is the
real download.pytorch.org CPU wheel in /opt/wheels; the others are fetched once from pypi.org
into the cache) plus `extra` requirements; `serve(folder, root)` serves them as
http://127.0.0.1:PORT/simple with a #sha256 on every link, as pypi.org does.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parent.parent
TORCH_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
WHEEL_CACHE = Path(os.environ.get("FWDOCTOR_E2E_WHEELS", "/var/tmp/fwdoctor-e2e-wheels"))


class Unavailable(RuntimeError):
    """The wheels cannot be had here; the message says why (the test skips or fails on it)."""


def _project(filename: str) -> str:
    return filename.split("-")[0].lower().replace("_", "-").replace(".", "-")


def wheelhouse(cache: Path = WHEEL_CACHE, extra: tuple[str, ...] = ()) -> Path:
    """`cache` holding every wheel of lockfiles/cpu-py311 and the `extra` pins (name==version)."""
    from fwdoctor.recipes.lockfile import read_pins

    if not TORCH_WHEEL.is_file():
        raise Unavailable(f"{TORCH_WHEEL} missing")
    cache.mkdir(parents=True, exist_ok=True)
    pins = read_pins((REPO / "lockfiles" / "cpu-py311" / "requirements.lock").read_text())
    wanted = [f"{name}=={version}" for name, version in sorted(pins.items()) if name != "torch"] + list(extra)
    have = {_project(p.name) for p in cache.glob("*.whl")}
    if not all(w.split("==")[0] in have for w in wanted):
        argv = [sys.executable, "-m", "pip", "--isolated", "download", "--no-deps", "--only-binary=:all:",
                "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
                "--index-url", "https://pypi.org/simple", "-d", str(cache), *wanted]
        cert = os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"
        if os.path.isfile(cert):
            argv += ["--cert", cert]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise Unavailable(f"cannot fetch the lock's wheels from pypi.org: {done.stderr.strip().splitlines()[-1:]}")
    target = cache / TORCH_WHEEL.name
    if not target.exists():
        shutil.copy(TORCH_WHEEL, target)
    return cache


def write_simple_index(wheels: Path, root: Path) -> None:
    """A PEP 503 index over `wheels`: root/simple/<name>/index.html with #sha256 links."""
    by_name: dict[str, list[Path]] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        by_name.setdefault(_project(wheel.name), []).append(wheel)
    (root / "files").mkdir(parents=True, exist_ok=True)
    for name, files in by_name.items():
        page = root / "simple" / name
        page.mkdir(parents=True, exist_ok=True)
        links = []
        for wheel in files:
            link = root / "files" / wheel.name
            if not link.exists():
                link.symlink_to(wheel)
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            links.append(f'<a href="../../files/{wheel.name}#sha256={digest}">{wheel.name}</a><br>')
        (page / "index.html").write_text("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")
    (root / "simple" / "index.html").write_text("".join(f'<a href="{n}/">{n}</a>\n' for n in sorted(by_name)))


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest output readable
        pass


@contextlib.contextmanager
def serve(wheels: Path, root: Path) -> Iterator[str]:
    """Serve `wheels` as an index under `root`; yields http://127.0.0.1:PORT/simple."""
    write_simple_index(wheels, root)
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
