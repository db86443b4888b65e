"""How long and how much memory does refusing a decompression bomb cost? (issue 24)

Builds, in memory, the bombs of tests/test_hostile_round2_images.py: a ~1 MB gzip layer
expanding to 1 GiB, 242 bytes of bzip2 expanding to 192 MiB (one stream each), and the same 1 MB
gzip as the whole `docker save | gzip` tarball, and loads each with
fwdoctor.image.archive.load in a fresh child process, printing the wall time to the
refusal and the child's peak RSS (VmHWM) against an empty load of a small image.
Target: each refused in under a second, memory within a few tens of MB of the baseline.

    python benchmarks/image_bombs.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from fwdoctor.image import archive
from fwdoctor.image.inspected import ImageError
from fwdoctor.image.keep import probe_plan
plan = probe_plan()
started = time.monotonic()
try:
    archive.load(sys.argv[1], plan)
    outcome = "loaded"
except ImageError as exc:
    outcome = str(exc)
# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so it would report the
# parent's peak (building the bombs takes a 192 MiB buffer).
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"s": time.monotonic() - started, "rss_mb": hwm / 1024,
                  "outcome": outcome}))
"""


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from tests.test_hostile_round2_images import bzip2_bomb, docker_save, gzip_bomb, small_layer

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = {
            "small image (baseline)": docker_save(folder, [small_layer()], name="small.tar"),
            "gzip layer, 1 MB -> 1 GiB": docker_save(folder, [gzip_bomb()], name="gz.tar", diff_ids=["sha256:" + "0" * 64]),
            "bzip2 layer, 242 B -> 192 MiB": docker_save(folder, [bzip2_bomb()], name="bz.tar", diff_ids=["sha256:" + "0" * 64]),
        }
        outer = folder / "outer.tar.gz"
        outer.write_bytes(gzip_bomb())
        cases["gzip tarball, 1 MB -> 1 GiB"] = outer
        print(f"{'input':34} {'bytes':>9} {'seconds':>8} {'peak RSS MB':>12}  outcome")
        for label, path in cases.items():
            out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=600,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
            result = json.loads(out.stdout.strip().splitlines()[-1])
            size = path.stat().st_size
            print(f"{label:34} {size:>9,} {result['s']:>8.2f} {result['rss_mb']:>12.0f}  {result['outcome'][:90]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
