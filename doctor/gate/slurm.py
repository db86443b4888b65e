"""Act on Slurm through its own tool, as NHC does: `scontrol update nodename=N state=drain
reason="fwdoctor: <first cause>"` for a node that should not take jobs, `state=resume` for one
fwdoctor drained and that is healthy again. fwdoctor owns only the drains it wrote:

- a node drained by anyone else (an admin's "maintenance", NHC) is left alone, whatever the
  verdict: its reason does not start with "fwdoctor:";
- a DOWN node is never resumed (the controller or an admin took it out; resume would
  return it to service without them);
- nothing is done when the node is already as the verdict wants (idempotent): a drained
  node stays drained with its first reason unless the cause changed.

Every decision, including "nothing to do", is one line in the returned actions (the log).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from fwdoctor import runner

PREFIX = "fwdoctor:"
REASON_MAX = 160  # short enough for sinfo -R's column and Slurm's log lines
SCONTROL_TIMEOUT_S = 10.0

_STATE = re.compile(r"(?:^|\s)State=(\S+)")
# 22.05 prints "Reason=fwdoctor: x [root@2026-12-03T17:20:01]" last on the -o line.
_REASON = re.compile(r"(?:^|\s)Reason=(.*?)(?:\s+\[[^\]\s]+@[^\]\s]+\])?\s*$")

Run = Callable[[Sequence[str], float], runner.CommandResult]


@dataclass(frozen=True)
class NodeState:
    name: str
    flags: tuple[str, ...]  # ("IDLE", "DRAIN"), ("DOWN", "NOT_RESPONDING") ...
    reason: str  # "" when none

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.flags or "DRAINED" in self.flags or "DRAINING" in self.flags

    @property
    def down(self) -> bool:
        return "DOWN" in self.flags

    @property
    def ours(self) -> bool:
        return self.reason.startswith(PREFIX)


class SlurmError(RuntimeError):
    """scontrol could not say or do what was asked; the message names the command."""


def parse_show_node(text: str, name: str) -> NodeState:
    """`scontrol show node -o NAME` -> NodeState. Raises SlurmError when there is no State."""
    line = next((ln for ln in text.splitlines() if ln.startswith("NodeName=")), text.strip())
    state = _STATE.search(line)
    if state is None:
        raise SlurmError(f"scontrol show node {name}: no State= in {line[:200]!r}")
    reason = _REASON.search(line)
    flags = tuple(f.rstrip("*") for f in state.group(1).split("+") if f)
    return NodeState(name, flags, reason.group(1).strip() if reason else "")


def reason_text(cause: str) -> str:
    """The reason fwdoctor writes: its prefix, the cause on one printable line, capped."""
    clean = " ".join("".join(ch if ch.isprintable() else " " for ch in cause).split())
    text = f"{PREFIX} {clean}"
    return text if len(text) <= REASON_MAX else text[: REASON_MAX - 3] + "..."


def _run(argv: Sequence[str], timeout: float) -> runner.CommandResult:
    return runner.run(list(argv), timeout=timeout)


def show(name: str, run: Run = _run, timeout: float = SCONTROL_TIMEOUT_S) -> NodeState:
    result = run(["scontrol", "show", "node", "-o", name], timeout)
    if not result.ok:
        raise SlurmError(result.describe_failure())
    return parse_show_node(result.stdout, name)


def act(name: str, verdict: str, cause: str | None, run: Run = _run, timeout: float = SCONTROL_TIMEOUT_S) -> list[str]:
    """Bring the node's drain state in line with the verdict ("drain" drains; "ok" and
    "warn" resume a fwdoctor drain); returns the log lines, one per decision."""
    node = show(name, run, timeout)
    now = f"{name} is {'+'.join(node.flags) or '?'}" + (f" (reason {node.reason!r})" if node.reason else "")
    if verdict == "drain":
        wanted = reason_text(cause or "the gate failed")
        if node.drained and not node.ours:
            return [f"slurm: {now}: drained by someone else, left alone (fwdoctor would drain: {wanted!r})"]
        if node.drained and node.reason == wanted:
            return [f"slurm: {now}: already drained by fwdoctor for this cause, nothing to do"]
        _update(run, timeout, f"nodename={name}", "state=drain", f"reason={wanted}")
        verb = "re-drained with a new reason" if node.drained else "drained"
        return [f"slurm: {now}: {verb}: scontrol update nodename={name} state=drain reason={wanted!r}"]
    if not node.drained:
        return [f"slurm: {now}: not drained, nothing to do"]
    if not node.ours:
        return [f"slurm: {now}: drained by someone else, left alone"]
    if node.down:
        return [f"slurm: {now}: DOWN, never resumed by fwdoctor (the controller or an admin took it out)"]
    _update(run, timeout, f"nodename={name}", "state=resume")
    return [f"slurm: {now}: healthy again, resumed: scontrol update nodename={name} state=resume"]


def _update(run: Run, timeout: float, *args: str) -> None:
    result = run(["scontrol", "update", *args], timeout)
    if not result.ok:
        raise SlurmError(result.describe_failure())
