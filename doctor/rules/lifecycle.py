"""NVIDIA's driver lifecycle: driver-branch-eol. The loaded driver's branch is looked up in
cuda.yaml `driver_branches` (the branch kinds and end-of-life months of NVIDIA's data-center
"Supported Drivers and CUDA Toolkit Versions" tables) and judged as of the day the facts
were collected, else the day the knowledge base was refreshed. Pure: no clock is read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fwdoctor.kb.cuda import BRANCH_KIND_NAMES
from fwdoctor.kb.gpus import driver_branch
from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule
from fwdoctor.rules.torch import WINDOWS_KEYS, windows_driver

if TYPE_CHECKING:
    from fwdoctor.kb import KB


def _as_of(facts: Facts, kb: KB) -> tuple[str, str] | None:
    """The month to judge a lifecycle against, and where it came from: when the facts were
    collected (their provenance), else the day the KB was refreshed. None without either."""
    when = facts.provenance.collected_at if facts.provenance is not None else None
    if when:
        return when[:10], "facts collected"
    if kb.refreshed:
        return kb.refreshed, "knowledge base refreshed"
    return None


# CUDA on WSL uses the Windows host's driver: "Do not install any Linux display driver in WSL"
# (NVIDIA's CUDA on WSL User Guide, https://docs.nvidia.com/cuda/wsl-user-guide/index.html,
# "Getting Started with CUDA on WSL 2", step 1).
_WINDOWS_MOVE = ("Install one on the Windows host (NVIDIA's driver download page or the vendor's; Windows Update lags), "
                 "never a Linux NVIDIA driver inside WSL: CUDA on WSL uses the Windows driver.")


@rule("driver-branch-eol", needs=("driver.version",), optional=WINDOWS_KEYS)
def driver_branch_eol(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads the loaded driver's branch (535 of 535.288.01) and looks it up in NVIDIA's
        data-center driver lifecycle (cuda.yaml `driver_branches`: the branch kind and the
        end-of-life month of "Supported Drivers and CUDA Toolkit Versions", Table 2). A
        branch whose end of life has passed, by the day the facts were collected (else the
        day the knowledge base was refreshed), is named with that date.

    Why is this bad?
        A branch past its end of life gets no more bug fixes or security updates: a driver
        CVE published after that date stays open on this host, and a new GPU, CUDA minor or
        kernel release is never qualified for it. Nothing fails today; the host simply
        falls out of support. R535, the last long-term branch for CUDA 12, ended in June
        2026, and every branch still supported runs CUDA 13.

    Example
            $ cat /proc/driver/nvidia/version
            NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.288.01  ...
            warning  driver-branch-eol: driver 535.288.01 is on R535 (Long Term Support
                     Branch), past NVIDIA's end of life (June 2026) as of 2026-12-03

    Fix
        Move to a supported branch (a long-term branch for fewest changes) from your
        distribution's or NVIDIA's repository, then check again; CUDA 12 programs keep
        running on the R580 and newer branches:

            apt list --installed 'nvidia-driver-*' 'cuda-drivers*'
            sudo apt-get install nvidia-driver-580-server   # Ubuntu; or cuda-drivers-580
            fwdoctor check

        Under WSL 2 or on native Windows the driver is the Windows host's: update it there,
        never install a Linux NVIDIA driver inside WSL.
    """
    version = facts["driver.version"]
    branch = driver_branch(version)
    if branch is None:
        raise NotCheckable(f"driver.version {version!r} names no branch")
    as_of = _as_of(facts, kb)
    if as_of is None:
        raise NotCheckable("no date to judge the lifecycle against: the facts carry no collected_at and the knowledge base no refreshed date")
    row = kb.cuda.driver_branch_row(branch)
    if row is None:
        raise NotCheckable(f"no lifecycle row for R{branch} in the knowledge base (NVIDIA's tables list production and long-term branches; short-lived new-feature branches have no end-of-life date)")
    day, why = as_of
    if not row.past_eol(day):
        return None
    kind = f" ({BRANCH_KIND_NAMES[row.kind]})" if row.kind else ""
    supported = kb.cuda.supported_branches(day)
    moves = ", ".join(f"R{r.branch} ({BRANCH_KIND_NAMES[r.kind]}, until {r.eol_text})" for r in supported)
    listed = f"Supported branches as of {day}: {moves}." if moves else "No supported branch is known to the knowledge base."
    if windows_driver(facts):  # a Windows driver (native Windows, or the host's under WSL 2)
        fix = FixRef(commands=("nvidia-smi   # in PowerShell or cmd on the Windows host: the driver Windows and WSL programs use",),
                     note=f"{listed} {_WINDOWS_MOVE}")
    else:
        fix = FixRef(commands=("apt list --installed 'nvidia-driver-*' 'cuda-drivers*'", "fwdoctor check"),
                     note=f"{listed} Install one from your distribution's or NVIDIA's repository; fwdoctor does not install drivers.")
    return Hit(
        f"driver {version} is on R{branch}{kind}, past NVIDIA's end of life ({row.eol_text}) as of {day}; it gets no more fixes or security updates",
        evidence={"driver.version": version, "branch": branch, "kind": row.kind, "eol": row.eol, "as_of": day,
                  "as_of_from": why, "supported": [r.branch for r in supported], "source": list(row.source)},
        fix=fix,
    )


RULES: tuple[Rule, ...] = (driver_branch_eol,)
