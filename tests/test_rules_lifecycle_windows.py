"""driver-branch-eol's fix where the driver is a Windows one: under WSL 2 the driver is the
Windows host's, and NVIDIA's CUDA on WSL guide says never to install a Linux driver inside WSL,
so the apt fix a Linux host gets would break CUDA there."""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from fwdoctor.model import Fact, Facts
from fwdoctor.rules.lifecycle import driver_branch_eol

# 560.94: NVIDIA's Game Ready driver of August 2024 for Windows (R560, a new-feature branch
# that the shipped KB lists as past its end of life).
WINDOWS_DRIVER = "560.94"


def _fix(**extra) -> tuple[tuple[str, ...], str]:
    facts = Facts([Fact("driver.version", WINDOWS_DRIVER), *(Fact(k, v) for k, v in extra.items())])
    found, skipped = driver_branch_eol.evaluate(facts, KB())
    assert skipped is None and len(found) == 1, skipped
    return found[0].fix.commands, found[0].fix.note


@pytest.mark.parametrize("where", [{"platform.wsl": {"version": 2}}, {"driver.wsl": {"version": 2}},
                                   {"platform.windows_build": {"build": 22631, "version": "10.0.22631"}}])
def test_a_windows_driver_is_updated_on_the_windows_host_never_with_apt(where):
    commands, note = _fix(**where)
    assert not any("apt" in c for c in commands), commands
    assert "Windows host" in note and "never a Linux NVIDIA driver inside WSL" in note


def test_a_linux_driver_keeps_the_distribution_fix():
    commands, note = _fix()
    assert commands[0].startswith("apt list --installed") and "WSL" not in note
