"""How old the knowledge is: newer-than-kb. A release the probes see but the KB does not
list (a torch, a CUDA minor, a driver branch) is named with the KB's date and not judged,
rather than judged by the nearest older row."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable

from packaging.version import InvalidVersion, Version

from fwdoctor.kb.gpus import driver_branch
from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule

if TYPE_CHECKING:
    from fwdoctor.kb import KB


def _version(text: Any) -> Version | None:
    try:
        return Version(str(text))
    except InvalidVersion:
        return None


def _minor(text: Any) -> Version | None:
    v = _version(text)
    return Version(f"{v.major}.{v.minor}") if v is not None and len(v.release) >= 2 else None


# newest_torch and newest_branch are pure functions of the KB, asked once per judged host:
# `fleet report` judges every node against one KB, and recomputing them cost 10,000 nodes
# ~25% of their judging time (issue 30, item 4; cProfile of benchmarks/fleet_report.py).
_PER_KB: "weakref.WeakKeyDictionary[Any, dict[str, Any]]" = weakref.WeakKeyDictionary()


def _per_kb(kb: Any, name: str, compute: Callable[[], Any]) -> Any:
    try:
        memo = _PER_KB.setdefault(kb, {})
    except TypeError:  # a KB stand-in that cannot be weakly referenced: no memo
        return compute()
    if name not in memo:
        memo[name] = compute()
    return memo[name]


def newest_torch(kb: KB) -> Version | None:
    return _per_kb(kb, "newest_torch", lambda: _newest_torch(kb))


def _newest_torch(kb: KB) -> Version | None:
    releases = [Version(v.torch) for v in kb.torch.variants()]
    return max(releases) if releases else None


def newest_branch(kb: KB) -> int | None:
    """The newest driver branch any KB row names: a CUDA toolkit's driver, a GPU's first
    listing, a family's first or last release, a branch of NVIDIA's lifecycle table."""
    return _per_kb(kb, "newest_branch", lambda: _newest_branch(kb))


def _newest_branch(kb: KB) -> int | None:
    branches = [driver_branch(r.driver) for r in kb.cuda.toolkit_drivers]
    branches += [driver_branch(r) for f in kb.gpus.floors.values() for r in f.first]
    branches += [b for fam in kb.gpus.families for b in (fam.first_branch, fam.last_branch)]
    branches += [r.branch for r in kb.cuda.driver_branches]
    known = [b for b in branches if b is not None]
    return max(known) if known else None


def newer_than_kb(facts: Facts, kb: KB) -> list[str]:
    """What the facts show that is newer than every row of the KB. Pure."""
    out: list[str] = []
    torch = _version(str(facts.get("torch.version") or "").split("+")[0]) if facts.get("torch.version") else None
    top = newest_torch(kb)
    if torch is not None and top is not None and torch.release[:3] > top.release[:3]:
        out.append(f"torch {facts.get('torch.version')} (the KB lists up to {top})")
    horizon = _minor(kb.cuda.horizon)
    seen: dict[Version, str] = {}
    active = facts.get("cuda.active")
    for what, value in (("torch's CUDA", facts.get("torch.cuda")),
                        ("the active toolkit's CUDA", active.get("version") if isinstance(active, dict) else None)):
        minor = _minor(value) if value else None
        if minor is not None and horizon is not None and minor > horizon and minor not in seen:
            seen[minor] = what
            out.append(f"{what} {minor} (the KB describes CUDA up to {kb.cuda.horizon})")
    driver = facts.get("driver.version")
    branch = driver_branch(driver) if driver else None
    newest = newest_branch(kb)
    if branch is not None and newest is not None and branch > newest:
        out.append(f"driver {driver} (R{branch}; the newest branch the KB names is R{newest})")
    return out


@rule("newer-than-kb", optional=("torch.version", "torch.cuda", "cuda.active", "driver.version"))
def newer_than_kb_rule(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the torch release, the CUDA minors (torch's and the active toolkit's) and
        the driver branch the probes found with the newest ones the knowledge base lists,
        and names each one that is newer, with the date the KB was last refreshed
        (sources.yaml `refreshed:`, also in `fwdoctor --version`).

    Why is this bad?
        Nothing is wrong with the host for being newer. But every judgement fwdoctor makes
        comes from the KB's rows: a torch 2.16 or a CUDA 13.6 it has no row for is not
        judged at all (its arch list, pins and driver floor are unknown), and answering
        with the nearest older row would be a guess that looks like knowledge. Those
        checks say "not checked"; this finding says why.

    Example
            fwdoctor 0.1.0: ... knowledge base refreshed 2026-12-03
            info  newer-than-kb: newer than the knowledge base (2026-12-03): torch
                  2.16.0+cu134 (the KB lists up to 2.15.0): not judged

    Fix
        Update fwdoctor (a newer release carries a newer KB), or point --kb at a
        knowledge-base folder brought up to date, then check again:

            pip install -U fwdoctor
            fwdoctor --version        # the knowledge base's date
    """
    keys = ("torch.version", "torch.cuda", "cuda.active", "driver.version")
    if not any(facts.known(k) and facts.get(k) for k in keys):
        raise NotCheckable(f"no release to compare: {', '.join(keys)} unknown or absent")
    newer = newer_than_kb(facts, kb)
    if not newer:
        return None
    date = kb.refreshed or "date unknown"
    return Hit(
        f"newer than the knowledge base ({date}): {'; '.join(newer)}: not judged",
        evidence={"kb_refreshed": kb.refreshed, "newer": newer},
        fix=FixRef(commands=("pip install -U fwdoctor", "fwdoctor --version"),
                   note="Checks that need a row for these releases are reported as not checked, never judged by an older row."),
    )


RULES: tuple[Rule, ...] = (newer_than_kb_rule,)
