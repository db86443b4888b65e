"""The kernel's message buffer read from /dev/kmsg, as `dmesg` prints it.

`dmesg` reads the same device; reading it here spares a live `check` a process start (~3 ms
alone, ~10 ms from a Python process that has imported the probes, every run: the kernel log
is never cached). Records are formatted as dmesg shows them ("[   12.345678] text"), so
fwdoctor.kernlog's parsers read either.

/dev/kmsg (Documentation/ABI/testing/dev-kmsg): each read() returns one record,
"LEVEL,SEQ,TS_USEC,FLAGS[,...];TEXT\\n" followed by optional " KEY=VALUE\\n" lines; a
non-blocking reader gets EAGAIN once it has caught up and EPIPE when the record it was about
to read was overwritten (it then goes on with the oldest one left). Unprintable bytes in TEXT
come escaped as \\xNN, a line break as \\x0a.
"""

from __future__ import annotations

import os
import re
from collections import deque

KMSG = "/dev/kmsg"
RECORD_BYTES = 8192  # larger than any record (the kernel's limit is 1 KiB of text plus its prefix)
MAX_RECORDS = 100_000  # a buffer being flooded while it is read cannot keep the probe reading
_ESCAPED = re.compile(r"\\x([0-9a-fA-F]{2})")


def read_records(path: str = KMSG, limit: int = 4 * 1024 * 1024) -> list[bytes]:
    """Every record in the buffer, oldest first, the newest `limit` bytes of them at most.
    Raises OSError where the device cannot be opened (no /dev/kmsg, or dmesg_restrict=1 for a
    user without CAP_SYSLOG): the caller then asks `dmesg` or the syslog files."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    kept: deque[bytes] = deque()
    size = 0
    try:
        for _ in range(MAX_RECORDS):
            try:
                record = os.read(fd, RECORD_BYTES)
            except BlockingIOError:  # caught up with the writer
                break
            except BrokenPipeError:  # the next record was overwritten: go on with the oldest left
                continue
            if not record:
                break
            kept.append(record)
            size += len(record)
            while size > limit and kept:
                size -= len(kept.popleft())
    finally:
        os.close(fd)
    return list(kept)


def as_dmesg(records: list[bytes], containing: bytes | None = None) -> str:
    """Records -> dmesg's text: "[seconds.micros] text" per record, escapes undone, the
    records' KEY=VALUE continuation lines left out (dmesg leaves them out too). With
    `containing`, only the records holding those bytes (b"NVRM": the NVIDIA module's own,
    all fwdoctor.kernlog reads): a server's buffer of thousands of records is then not
    decoded line by line for the few that matter."""
    lines: list[str] = []
    for record in records:
        if containing is not None and containing not in record:
            continue
        head, sep, rest = record.decode("utf-8", errors="replace").partition(";")
        if not sep:
            continue
        fields = head.split(",")
        text = rest.split("\n", 1)[0]
        try:
            usec = int(fields[2])
        except (IndexError, ValueError):
            continue
        text = _ESCAPED.sub(lambda m: chr(int(m[1], 16)), text)
        stamp = f"[{usec // 1_000_000:5d}.{usec % 1_000_000:06d}]"
        for k, piece in enumerate(text.split("\n")):
            lines.append(f"{stamp} {piece}" if k == 0 else f"{' ' * len(stamp)} {piece}")
    return "\n".join(lines) + ("\n" if lines else "")
