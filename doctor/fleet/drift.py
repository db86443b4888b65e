"""Drift: for one column, the value most nodes share and the few nodes that differ.

    driver   node-0417: 550.163.01; the rest (999) 580.95.05

A person reads the odd nodes first, so the minorities are named (up to `max_listed`
names per value, then "+K more") and the majority is only counted. Nodes whose documents
do not say (an older facts file, a node with no smoke report) are counted apart: a
missing value is not a different value.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable

from fwdoctor.fleet.node import NodeRow

MAX_LISTED = 10  # names per value before "+K more" (--max-listed)


@dataclass(frozen=True)
class Group:
    value: str
    nodes: tuple[str, ...]  # every node with this value, in report order


@dataclass(frozen=True)
class Drift:
    """One column (or a value derived from one: the driver's branch) across the nodes."""

    what: str
    majority: str | None  # the most common value; None when no node says
    majority_count: int
    minorities: tuple[Group, ...] = ()  # biggest first
    unknown: int = 0  # nodes whose documents do not say
    known: int = 0
    odd: frozenset[str] = field(default_factory=frozenset)

    @property
    def differs(self) -> bool:
        return bool(self.minorities)

    @property
    def has_majority(self) -> bool:
        return self.majority_count * 2 > self.known

    def text(self, max_listed: int = MAX_LISTED, label: Callable[[str], str] = str) -> str:
        """"node-0417: 550.163.01; the rest (999) 580.95.05" (or "all 1000: 580.95.05")."""
        unknown = f" (not said for {self.unknown})" if self.unknown else ""
        if self.majority is None:
            return "not said for any node"
        if not self.minorities:
            return f"all {self.known}: {label(self.majority)}{unknown}"
        parts = []
        for group in self.minorities[:max_listed]:
            parts.append(f"{listed(group.nodes, max_listed)}: {label(group.value)}")
        hidden = len(self.minorities) - max_listed
        if hidden > 0:
            parts.append(f"+{hidden} more value(s) on {sum(len(g.nodes) for g in self.minorities[max_listed:])} node(s)")
        rest = "the rest" if self.has_majority else "no majority; the most"
        return "; ".join(parts) + f"; {rest} ({self.majority_count}) {label(self.majority)}{unknown}"


def listed(names: tuple[str, ...] | list[str], max_listed: int = MAX_LISTED) -> str:
    """Node names as Slurm hostlist ranges ("dgx-[0055-0058,0060],login1"), at most
    `max_listed` groups, then "(+K more groups)": a list scontrol and pdsh take as it is."""
    from fwdoctor.fleet.hostlist import folded

    return folded(list(names), max_listed)


def drift(what: str, rows: Iterable[NodeRow], value_of: Callable[[NodeRow], str | None]) -> Drift:
    """Group the nodes by `value_of(row)`. Two passes over the rows: counting first, then
    naming only the nodes outside the majority (the majority's names are never held)."""
    rows = list(rows) if not isinstance(rows, list) else rows
    counts: Counter[str] = Counter()
    unknown = 0
    for row in rows:
        value = value_of(row)
        if value is None:
            unknown += 1
        else:
            counts[value] += 1
    if not counts:
        return Drift(what, None, 0, unknown=unknown)
    # Most common first; a tie goes to the value sorting first, so two runs agree.
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    majority, majority_count = ranked[0]
    if len(ranked) == 1:
        return Drift(what, majority, majority_count, unknown=unknown, known=majority_count)
    names: dict[str, list[str]] = {value: [] for value, _ in ranked[1:]}
    for row in rows:
        value = value_of(row)
        if value is not None and value != majority:
            names[value].append(row.name)
    groups = tuple(Group(value, tuple(names[value])) for value, _ in ranked[1:])
    odd = frozenset(name for g in groups for name in g.nodes)
    return Drift(what, majority, majority_count, groups, unknown, sum(counts.values()), odd)
