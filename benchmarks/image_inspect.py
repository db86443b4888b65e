"""How close is `fwdoctor check --image` to the cost of just streaming the image?

Builds (once; reused while the tag exists) an image of a few GB: the CI base image
(.ci/setup-docker.sh) plus a torch CUDA venv copied in (default: this checkout's .venv,
~5.5 GB, so the probes find real torch, cuDNN and NCCL wheels), or with --filler-gb N a
layer of N GB of random bytes. Then prints, in one run:

  - the bare export stream: `docker export CONTAINER | wc -c` (and the container create)
  - `fwdoctor check --image TAG --json`: wall time, peak temporary disk (TMPDIR polled),
    peak memory of the process
  - `docker save TAG` to a tarball, reading that tarball once (`cat > /dev/null`), and
    `fwdoctor check --image-archive TAR --json`: wall time, peak temporary disk
  - whether both checks gave the same findings

Targets (issue 17): peak temporary disk < 100 MB; --image within 1.2x of the bare export
stream; --image-archive within 1.2x of reading the tarball once. Needs a Docker engine and
root-free nothing else; several GB of free disk for the image and its tarball.

    python benchmarks/image_inspect.py [--tag T] [--venv DIR | --filler-gb N] [--rebuild]
                                       [--cold] [--archive-only]

--cold drops the page cache (root) before the tarball read and the archive check, so both
read the disk: with a warm cache the read is memory speed and the check's fixed cost
(interpreter start, KB, probes: about 1 s) dominates the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASE = os.environ.get("FWDOCTOR_E2E_BASE", "fwdoctor-e2e-base:bookworm")
FWDOCTOR = [sys.executable, "-c", "from fwdoctor.cli import main; main()"]
LONG = 3600  # seconds: a multi-GB build, save or export on a slow disk


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, timeout=LONG, **kwargs)


def image_exists(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True, timeout=60).returncode == 0


def build(tag: str, venv: Path | None, filler_gb: float) -> None:
    with tempfile.TemporaryDirectory(prefix="fwdoctor-bench-ctx-", dir="/var/tmp") as ctx:
        lines = [f"FROM {BASE}"]
        if venv is not None:
            # Hard links: the context costs no copy of the venv on the same filesystem.
            if subprocess.run(["cp", "-al", "--", str(venv), f"{ctx}/venv"], timeout=LONG).returncode != 0:
                shutil.copytree(venv, f"{ctx}/venv", symlinks=True)
            # The venv's interpreter links to this machine's Python: point it at the base
            # image's /usr/bin/python3.11 (unlink first: the context holds hard links).
            for name in ("python3", "pyvenv.cfg"):
                os.unlink(f"{ctx}/venv/{'bin/' if name == 'python3' else ''}{name}")
            os.symlink("/usr/bin/python3.11", f"{ctx}/venv/bin/python3")
            Path(ctx, "venv", "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n")
            lines += ["COPY venv /opt/venv", "ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
        else:
            with open(f"{ctx}/filler.bin", "wb") as out:
                for _ in range(int(filler_gb * 1024)):
                    out.write(os.urandom(1 << 20))  # incompressible, as model weights are
            lines += ["COPY filler.bin /opt/filler.bin"]
        Path(ctx, "Dockerfile").write_text("\n".join(lines) + "\n")
        start = time.perf_counter()
        run(["docker", "build", "-q", "-t", tag, ctx], stdout=subprocess.DEVNULL)
        print(f"built {tag} in {time.perf_counter() - start:.0f} s")


class DiskPeak:
    """The most disk a folder held while a command ran (st_blocks, polled every 0.2 s)."""

    def __init__(self, folder: str) -> None:
        self.folder, self.peak, self._stop = folder, 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _usage(self) -> int:
        total = 0
        for dirpath, dirnames, filenames in os.walk(self.folder):
            for name in dirnames + filenames:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
                except OSError:
                    pass
        return total

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._usage())
            self._stop.wait(0.2)

    def __enter__(self) -> "DiskPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._usage())


def timed_check(args: list[str]) -> tuple[float, int, int, dict]:
    """(wall s, peak temp disk bytes, peak RSS bytes, the JSON report) of one check."""
    with tempfile.TemporaryDirectory(prefix="fwdoctor-bench-tmp-") as tmp:
        env = {**os.environ, "TMPDIR": tmp}
        with DiskPeak(tmp) as disk:
            start = time.perf_counter()
            proc = subprocess.run([*FWDOCTOR, "check", *args, "--json"], capture_output=True, text=True, env=env, timeout=LONG)
            wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"check {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return wall, disk.peak, rss, json.loads(proc.stdout)


def bare_export(tag: str) -> tuple[float, float, float, int]:
    """(create s, export-stream s, remove s, bytes) for `docker export` of a created
    container (`check --image` creates and removes one too)."""
    start = time.perf_counter()
    cid = subprocess.run(["docker", "create", tag, "/nonexistent"], capture_output=True, text=True, check=True, timeout=LONG).stdout.strip()
    created = time.perf_counter() - start
    try:
        start = time.perf_counter()
        export = subprocess.Popen(["docker", "export", cid], stdout=subprocess.PIPE)
        count = subprocess.run(["wc", "-c"], stdin=export.stdout, capture_output=True, text=True, timeout=LONG)
        export.stdout.close()  # type: ignore[union-attr]
        export.wait(timeout=LONG)
        streamed = time.perf_counter() - start
    finally:
        start = time.perf_counter()
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True, timeout=LONG)
        removed = time.perf_counter() - start
    return created, streamed, removed, int(count.stdout.split()[0])


def drop_caches() -> None:
    """Empty the page cache (root only), so a read measures the disk, not memory."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as handle:
        handle.write("3\n")


def read_once(path: str) -> float:
    start = time.perf_counter()
    with open(path, "rb") as handle:
        while handle.read(1 << 20):
            pass
    return time.perf_counter() - start


def findings(report: dict) -> list[tuple[str, str]]:
    return sorted((f.get("id", ""), f.get("severity", "")) for f in report.get("findings", []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", default="fwdoctor-bench-image:1")
    parser.add_argument("--venv", type=Path, default=REPO / ".venv", help="a torch venv to copy into the image")
    parser.add_argument("--filler-gb", type=float, default=0.0, help="instead of a venv: a layer of N GB of random bytes")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--tar-dir", default="/var/tmp", help="where `docker save` writes the tarball")
    parser.add_argument("--cold", action="store_true", help="drop the page cache before the tarball read and the archive check (root)")
    parser.add_argument("--archive-only", action="store_true", help="skip the export and `check --image` figures")
    opts = parser.parse_args()

    if opts.rebuild or not image_exists(opts.tag):
        build(opts.tag, None if opts.filler_gb else opts.venv, opts.filler_gb)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "doctor")], capture_output=True, timeout=600)

    if not opts.archive_only:
        created, stream_s, removed, size = bare_export(opts.tag)
        image_s, image_disk, image_rss, image_report = timed_check(["--image", opts.tag])
    tar = os.path.join(opts.tar_dir, "fwdoctor-bench-image.tar")
    try:
        start = time.perf_counter()
        run(["docker", "save", "-o", tar, opts.tag])
        save_s = time.perf_counter() - start
        tar_size = os.path.getsize(tar)
        if opts.cold:
            drop_caches()
        read_s = read_once(tar)
        if opts.cold:
            drop_caches()
        archive_s, archive_disk, archive_rss, archive_report = timed_check(["--image-archive", tar])
    finally:
        if os.path.exists(tar):
            os.unlink(tar)

    mb = 1 << 20
    if opts.archive_only:
        image_report = archive_report
        print(f"image {opts.tag}: saved tarball {tar_size / 1e9:.2f} GB{' (page cache dropped before each read)' if opts.cold else ''}")
        print(f"  read the tarball once              {read_s:7.1f} s  ({tar_size / mb / read_s:.0f} MB/s)")
        print(f"  check --image-archive TAR          {archive_s:7.1f} s  = {archive_s / read_s:.2f}x the read     (target <= 1.2x)")
        print(f"      peak temp disk {archive_disk / mb:6.1f} MB (target < 100), peak RSS {archive_rss / mb:.0f} MB")
        return
    print(f"image {opts.tag}: export stream {size / 1e9:.2f} GB, saved tarball {tar_size / 1e9:.2f} GB")
    bare = created + stream_s + removed
    print(f"  docker create                      {created:7.1f} s")
    print(f"  bare `docker export | wc -c`       {stream_s:7.1f} s  ({size / mb / stream_s:.0f} MB/s)")
    print(f"  docker rm                          {removed:7.1f} s")
    print(f"  check --image                      {image_s:7.1f} s  = {image_s / bare:.2f}x create+export+rm (target <= 1.2x)")
    print(f"      peak temp disk {image_disk / mb:6.1f} MB (target < 100), peak RSS {image_rss / mb:.0f} MB")
    print(f"  docker save -o TAR                 {save_s:7.1f} s  (not counted)")
    print(f"  read the tarball once              {read_s:7.1f} s  ({tar_size / mb / read_s:.0f} MB/s)")
    print(f"  check --image-archive TAR          {archive_s:7.1f} s  = {archive_s / read_s:.2f}x the read     (target <= 1.2x)")
    print(f"      peak temp disk {archive_disk / mb:6.1f} MB (target < 100), peak RSS {archive_rss / mb:.0f} MB")
    same = findings(image_report) == findings(archive_report)
    print(f"  same findings from both: {same}  {findings(image_report)}")
    facts = image_report.get("facts") or {}
    for key in ("torch.version", "cudnn.installs", "nccl.installs"):
        value = (facts.get(key) or {}).get("value") if isinstance(facts.get(key), dict) else None
        print(f"  {key}: {json.dumps(value)[:160]}")


if __name__ == "__main__":
    main()
