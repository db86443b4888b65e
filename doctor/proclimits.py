"""Readers of /proc/PID/limits and /proc/PID/status for the locked-memory limit (RLIMIT_MEMLOCK,
`ulimit -l`) and CAP_IPC_LOCK. Plain text in, plain data out: the live probe
(fwdoctor.probes.topology) reads this process's files, triage (fwdoctor.triage.ulimit) reads the
rows a report pastes; triage imports no probe module (tests/test_import_budget.py)."""

from __future__ import annotations

from typing import Any

CAP_IPC_LOCK = 14  # linux/capability.h: "Allow locking of shared memory segments", and pinning past RLIMIT_MEMLOCK


def parse_memlock_limits(text: str) -> dict[str, Any] | None:
    """{"soft_bytes", "hard_bytes"} (None: unlimited) from /proc/PID/limits' row
    "Max locked memory         65536                65536                bytes"; None without it."""
    for line in text.splitlines():
        if not line.startswith("Max locked memory"):
            continue
        cols = line[len("Max locked memory"):].split()
        if len(cols) < 2:
            return None
        values = [None if c == "unlimited" else int(c) if c.isdigit() and len(c) <= 20 else -1 for c in cols[:2]]
        if -1 in values:
            return None
        return {"soft_bytes": values[0], "hard_bytes": values[1]}
    return None


def parse_cap_ipc_lock(status: str) -> bool | None:
    """Whether /proc/PID/status's CapEff (hex) holds CAP_IPC_LOCK; None without the row."""
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            try:
                return bool(int(line.split(":", 1)[1].strip()[:32], 16) >> CAP_IPC_LOCK & 1)
            except ValueError:
                return None
    return None
