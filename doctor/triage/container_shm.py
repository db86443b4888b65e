"""What a report says of a small /dev/shm without showing its size (shm-too-small, whose
regular rule in fwdoctor.rules.runtime reads the size and documents the finding).

Two texts, each read by a row of doctor/kb/errors.yaml:

- A worker killed by SIGBUS, as its launcher relays it (`launcher-child-sigbus`: DeepSpeed's
  "exits with return code = -7", torch.distributed.elastic's "(exitcode: -7)"). A process that
  writes to a page of a tmpfs file the tmpfs cannot back gets SIGBUS, not ENOSPC: NCCL's
  shared-memory segments and torch's shared tensors live in /dev/shm, which Docker sizes 64 MiB
  (haotian-liu/LLaVA#739, msr-fiddle/pipedream#76: --shm-size fixed both).
- NCCL's bare "unhandled system error" (`nccl-unhandled-system-error`) where the report shows no
  NCCL_DEBUG log, which would name the failed call, and no second node: on one node the call
  that fails is, far most often, creating NCCL's shared-memory segment in a container's /dev/shm
  (NCCL's troubleshooting guide, "Shared memory"; NVIDIA/nccl#473 and HRNet/DEKR#18: --ipc=host
  fixed it). A socket or an InfiniBand call fails too, mostly between nodes.

Neither text shows the size, so both are warnings that name the command that settles it
(`df -h /dev/shm` where the job runs). Runs only where the regular rule could not: a size the
report shows beats these lines.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule

if TYPE_CHECKING:
    from fwdoctor.kb import KB
    from fwdoctor.triage.errors import Hit as RowHit

SIGBUS_KIND = "launcher-child-sigbus"
NCCL_SYSTEM_ERROR_KIND = "nccl-unhandled-system-error"
# The rows whose findings this module raises itself (fwdoctor.triage.rules._HANDLED).
KINDS = frozenset({SIGBUS_KIND, NCCL_SYSTEM_ERROR_KIND})

# An NCCL_DEBUG log: its lines name the call that failed and the transports (other rules read them).
# A paste may drop the "host:pid:tid [dev] NCCL" prefix ("INFO NET/Socket : Using ...").
_NCCL_LOG = re.compile(r"\bNCCL (?:WARN|INFO)\b|\bINFO (?:NET/|Bootstrap|Using network)")
_LAST_ERROR = re.compile(r"\bLast error:\s{0,4}(\S)?")
# A job over more than one node: a launcher's node count above 1, a hostfile, prose naming
# several nodes, NCCL's bootstrap interface chosen by hand (a multi-node setting).
_NODES = re.compile(r"--n(?:um_)?nodes?[= ]{1,3}(?:[2-9]|\d{2,4})\b|\bnnodes[= ]{1,3}(?:[2-9]|\d{2,4})\b|--hostfile\b"
                    r"|\b(?:two|three|four|several|multiple|[2-9]|\d{2,4}) (?:[a-z]{1,12} )?(?:nodes|machines|servers|hosts)\b|\bmulti-?node\b|\bNCCL_SOCKET_IFNAME\b",
                    re.IGNORECASE)
# Where a report says it runs in a container (as fwdoctor.triage.errors reads it).
_CONTAINER = re.compile(r"\b(?:docker|podman|nvidia-docker|containers?|kubernetes|k8s|kubectl|compose)\b|--ipc[= ]host|--shm-size",
                        re.IGNORECASE | re.ASCII)

_FIX = FixRef(
    commands=(
        "df -h /dev/shm   # where the job runs (inside the container): Docker's default is 64M",
        "docker run --shm-size=16g ...   # or: docker run --ipc=host ...",
    ),
    note="Kubernetes: mount an emptyDir with medium: Memory at /dev/shm; compose: shm_size: 16gb (or ipc: host)",
)


def _first(norm: tuple[str, ...], pattern: re.Pattern[str]) -> str | None:
    for j, line in enumerate(norm):
        found = pattern.search(line)
        if found:
            return f"report line {j + 1}: {found.group(0)}"
    return None


def shm_context(hit: RowHit) -> bool:
    """Hook of the NCCL system-error and SIGBUS rows: always stands; records where the report
    shows an NCCL_DEBUG log (`nccl_log`), a second node (`nodes`) and a container (`container`),
    each "report line N: text", when it does."""
    for key, pattern in (("nccl_log", _NCCL_LOG), ("nodes", _NODES), ("container", _CONTAINER)):
        where = _first(hit.norm, pattern)
        if where:
            hit.data[key] = where
    if "nccl_log" not in hit.data:
        # torch >= 2.2 appends NCCL's own last WARN ("Last error:" and the text, on that line or the next)
        for j, line in enumerate(hit.norm):
            found = _LAST_ERROR.search(line)
            if found and (found.group(1) or (j + 1 < len(hit.norm) and hit.norm[j + 1].strip())):
                hit.data["nccl_log"] = f"report line {j + 1}: {line.strip()[:200]}"
                break
    return True


def _where(error: dict[str, Any]) -> str:
    container = error.get("container")
    return f"the report names a container ({container})" if container else "the report does not say whether it ran in a container"


@rule("shm-too-small", needs=("report.errors",))
def sigbus_said(facts: Facts, kb: KB) -> Hit | None:
    """A worker killed by SIGBUS, as its launcher relays it (see shm-too-small): a warning,
    since the report does not show /dev/shm's size."""
    said = report_errors(facts, SIGBUS_KIND)
    if not said:
        return None
    return Hit(
        f"a worker process was killed by SIGBUS ({report_line(said[0])}): a process gets SIGBUS when it writes to shared memory "
        f"that /dev/shm cannot back, most often a full /dev/shm (64 MiB in a Docker container unless --shm-size); {_where(said[0])}",
        evidence={"report.errors": said},
        fix=_FIX, severity=Severity.WARNING,
    )


@rule("shm-too-small", needs=("report.errors",), optional=("gpus.list",))
def nccl_system_error_one_node(facts: Facts, kb: KB) -> Hit | None:
    """NCCL's "unhandled system error" on one node, without the NCCL_DEBUG log that names the
    failed call (see shm-too-small): a warning naming `df -h /dev/shm`."""
    said = [e for e in report_errors(facts, NCCL_SYSTEM_ERROR_KIND) if not e.get("nccl_log") and not e.get("nodes")]
    if not said:
        return None
    gpus = facts.get("gpus.list") or []
    shown = f" with {len(gpus)} GPUs" if len(gpus) > 1 else ""
    return Hit(
        f"NCCL failed a system call ({report_line(said[0])}) on one node{shown}, and the report shows no NCCL_DEBUG log naming the call: "
        f"on one node it is most often creating NCCL's shared-memory segment in a small /dev/shm (a Docker container's is 64 MiB); {_where(said[0])}",
        evidence={"report.errors": said},
        fix=FixRef(commands=(*_FIX.commands, "NCCL_DEBUG=WARN python ...   # the WARN line names the call that failed"), note=_FIX.note),
        severity=Severity.WARNING,
    )


RULES: tuple[Rule, ...] = (sigbus_said, nccl_system_error_one_node)
