"""`python -m tests.stallfs MOUNTPOINT`: mount the stalling filesystem (see __init__)."""

from __future__ import annotations

import errno
import stat
import sys
import threading
from typing import Any

import mfusepy as fuse

# path -> content; a read of any STALLED path never returns.
FILES: dict[str, bytes] = {
    "/etc/os-release": b'ID=debian\nVERSION_ID="12"\n',
    "/etc/hostname": b"stalled-node\n",
}
STALLED = {"/etc/os-release"}
DIRS = {"/", "/etc"}


class StallingFS(fuse.Operations):  # type: ignore[misc]
    use_ns = True

    def __init__(self) -> None:
        self.forever = threading.Event()  # never set

    def getattr(self, path: str, fh: Any = None) -> dict[str, int]:
        if path in DIRS:
            return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2}
        if path in FILES:
            return {"st_mode": stat.S_IFREG | 0o644, "st_nlink": 1, "st_size": len(FILES[path])}
        raise fuse.FuseOSError(errno.ENOENT)

    def readdir(self, path: str, fh: Any) -> list[str]:
        if path not in DIRS:
            raise fuse.FuseOSError(errno.ENOENT)
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix):].split("/")[0] for p in (*FILES, *DIRS) if p.startswith(prefix) and p != path}
        return [".", "..", *sorted(names)]

    def open(self, path: str, flags: int) -> int:
        return 0

    def read(self, path: str, size: int, offset: int, fh: Any) -> bytes:
        if path in STALLED:
            self.forever.wait()
        return FILES[path][offset : offset + size]


if __name__ == "__main__":
    fuse.FUSE(StallingFS(), sys.argv[1], foreground=True, ro=True)
