"""The dynamic loader's environment. Shell equivalent: echo "$LD_LIBRARY_PATH" "$LD_PRELOAD"

The values come from the inspected environment (`Host.env`: the live process, or
--env-file under --root), never from the doctor's own os.environ.
"""

from __future__ import annotations

from typing import Iterable

from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts
from fwdoctor.probes.base import Probe, probe
from fwdoctor.probes.libscan import preload_entries


@probe("ldpath", provides=("ld.library_path", "ld.preload"))
def ldpath(host: Host, facts: Facts) -> Iterable[Fact]:
    source = "environment" if host.live else "--env-file"
    # Empty entries are dropped: ld.so ignores them for LD_PRELOAD and, for
    # LD_LIBRARY_PATH, an empty entry means "current directory", which no probe can judge.
    yield Fact("ld.library_path", host.path_list("LD_LIBRARY_PATH"), source=f"LD_LIBRARY_PATH ({source})")
    yield Fact("ld.preload", preload_entries(host.env.get("LD_PRELOAD", "")), source=f"LD_PRELOAD ({source})")


PROBES: tuple[Probe, ...] = (ldpath,)
