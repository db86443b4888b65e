"""`df -h /dev/shm` (and `df /dev/shm`, `df -h`): the size of /dev/shm -> system.shm_bytes.

    Filesystem      Size  Used Avail Use% Mounted on
    shm              64M     0   64M   0% /dev/shm

df -h prints sizes in powers of 1024 with one letter (K, M, G, T); plain `df` prints
1K-blocks, which is read only under its own "1K-blocks" header (another -B unit would be
misread). A row is split on blanks, never matched whole: six columns, the last /dev/shm.

Docker names the tmpfs it mounts at /dev/shm "shm" and sizes it 64 MiB unless
`--shm-size` says otherwise (moby/moby#29492: "The default size for /dev/shm is 64MB";
`docker run ... df -h` prints "shm 64M 0 64M 0% /dev/shm",
https://gitlab.com/gitlab-org/gitlab/-/issues/281199), while a host's own /dev/shm is a
"tmpfs": a row whose filesystem is "shm" also says the report comes from inside a
container (system.container), which the shm-too-small rule needs on a host whose GPU
count the report does not show.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# df -h's size: "64M", "1.0G", "7.8G", "512K" (at most 7 characters; df prints 3 digits).
_HUMAN = re.compile(r"(\d{1,4}(?:\.\d{1,2})?)([KMGT])")
_MAX_BLOCKS = 10**12  # 1K-blocks: a petabyte of shm is no real row


def _size(token: str, blocks: bool) -> int | None:
    if blocks:
        return int(token) * 1024 if token.isdigit() and len(token) <= 13 and int(token) <= _MAX_BLOCKS else None
    match = _HUMAN.fullmatch(token)
    if not match:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def find(lines: Lines) -> list[Fragment]:
    out = []
    blocks_header = -100  # the line number of the last "1K-blocks" header
    for i, text in enumerate(lines.norm):
        if "/dev/shm" not in text:
            if "1K-blocks" in text and "Mounted on" in text:
                blocks_header = i
            continue
        cols = text.split()
        if len(cols) != 6 or cols[5] != "/dev/shm" or not cols[4].endswith("%"):
            continue
        size = _size(cols[1], blocks=i - blocks_header <= 20 and cols[1].isdigit())
        if size is None:
            continue
        frag = Fragment("df /dev/shm", i + 1, i + 1)
        frag.add("system.shm_bytes", size)
        if cols[0] == "shm":
            frag.add("system.container", True)
            frag.notes.append(f"line {i + 1}: a /dev/shm named 'shm' is the one Docker (or a Kubernetes pod) mounts")
        out.append(frag)
    return out
