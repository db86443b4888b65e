"""Reads bounded in time (issue 11, item 3): a read on a stalled network mount.

A real stall, not a simulated one: tests/stallfs mounts a FUSE filesystem whose
/etc/os-release never answers a read (the kernel blocks the reader exactly as on an NFS
mount whose server is gone). `check --root` on it must finish, report the probe that
overran and the path, and judge everything else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _fuse_missing() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse here"
    if shutil.which("fusermount3") is None:
        return "fuse3 (fusermount3) is not installed: .ci/setup-fuse.sh installs it"
    try:
        import mfusepy  # noqa: F401
    except ImportError:
        return "needs the optional module mfusepy: pip install -e '.[dev]'"
    return None


@pytest.fixture
def stalled_root(tmp_path: Path):
    missing = _fuse_missing()
    if missing:
        pytest.skip(missing)
    mount = tmp_path / "mnt"
    mount.mkdir()
    server = subprocess.Popen([sys.executable, "-m", "tests.stallfs", str(mount)], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            if os.path.ismount(mount):
                break
            if server.poll() is not None:
                pytest.fail(f"the FUSE filesystem did not mount: {server.stderr.read().decode(errors='replace')[-500:]}")
            time.sleep(0.1)
        else:
            pytest.fail("the FUSE filesystem did not mount in 10 s")
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False, timeout=30, capture_output=True)
        server.kill()
        server.wait(timeout=30)


def test_check_on_a_stalled_mount_finishes_and_names_the_probe_and_path(stalled_root: Path) -> None:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "fwdoctor", "check", "--root", str(stalled_root), "--timeout", "1", "--json"],
                          capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - started
    report = json.loads(proc.stdout)
    failed = [f for f in report["findings"] if f["id"] == "probe-failed"]
    assert [f["evidence"]["probe"] for f in failed] == ["system"]
    reason = failed[0]["evidence"]["reason"]
    assert "did not finish in 8 s" in reason and "/etc/os-release" in reason
    # The other probes ran and their checks were judged (exit 2 would be "nothing checked").
    # 3 x --timeout + 5 for the probe that stalled; nothing else waits on the mount.
    assert elapsed < 60, f"check took {elapsed:.0f} s"
    assert proc.returncode in (0, 1), proc.stderr
