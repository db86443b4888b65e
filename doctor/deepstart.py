"""`check --deep`'s torch child, started the moment a command knows it will want it.

Importing torch in the inspected interpreter takes seconds; everything else a check does
(importing the probes and rules, asking whether the interpreter runs, reading the host)
takes a fraction of one. So the child is started first, as soon as the source of facts
is known to be this host and the interpreter is chosen (fwdoctor.sources.gather), and the
torch_deep probe collects it when its turn comes (issue 30: the child used to start
~430 ms after launch, after every import and the interpreter query).

This module is what both sides share, and imports nothing of fwdoctor.probes: importing
that package imports every probe, which is the work the child should overlap with. One
child per host and interpreter (`Host.memo`): a probe that finds none starts its own, so
`collect()` on its own (tests, the MCP server) behaves as before.
"""

from __future__ import annotations

from pathlib import Path

from fwdoctor import runner
from fwdoctor.host import Host

# Passed as `python -c SOURCE` from `/` (doctor/probes/torch_child.py says why).
CHILD = Path(__file__).parent / "probes" / "torch_child.py"
# Importing torch reads ~1 GB of shared libraries; a cold cache on network storage is slow,
# a hung driver is slower: never less than this, whatever --timeout says.
MIN_TIMEOUT_S = 60.0


def torch_child(host: Host, python: str) -> runner.Started:
    """The torch child for `python` on this (live) host: the one already started, or one
    started now. Raises OSError when the child's source cannot be read."""
    return host.memo(f"deepstart.torch:{python}", lambda: _start(host, python))  # type: ignore[no-any-return]


def _start(host: Host, python: str) -> runner.Started:
    source = CHILD.read_text(encoding="utf-8")
    return runner.Started([python, "-c", source], timeout=max(MIN_TIMEOUT_S, host.command_timeout), env=host.env, cwd="/")


def start_early(host: Host, python: str | None) -> runner.Started | None:
    """Start the torch child now (best effort: None when there is nothing to start, and a
    source that cannot be read is left for the probe to report)."""
    if not host.live or not python:
        return None
    try:
        return torch_child(host, python)
    except OSError:
        return None
