"""The NVIDIA kernel module's messages in a kernel log: Xid events and the legacy-branch notice.

Pure text parsers, shared by the live probe (fwdoctor.probes.topology reads `dmesg` or
/var/log/kern.log) and by `fwdoctor triage` (fwdoctor.triage.kernel_log reads the lines a
bug report pastes). They live here, outside the probes package, because triage imports no
probe (tests/test_import_budget.py); fwdoctor.probes.topology still exports both names.

Each pattern is linear in its line (tests/test_hostile_round2_parsing.py times them).
"""

from __future__ import annotations

import re
from typing import Any

# [^()]: an unclosed "Xid (" stops at the next '(' instead of scanning to the end each time.
XID = re.compile(r"NVRM: Xid \((?P<bus>[^()]*)\): (?P<xid>\d+),(?P<rest>.*)$")

# The module's own verdict on a GPU it will not drive, as printed at load time (continued
# over several "NVRM:" lines; journalctl may cut the first at the terminal width with ">"):
#   NVRM: The NVIDIA GeForce GT 710 GPU installed in this system is
#   NVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please
#   NVRM:  visit http://www.nvidia.com/object/unix.html for more
#   NVRM:  information.  The 535.129.03 NVIDIA driver will ignore
#   NVRM:  this GPU.  Continuing probe...
# (siderolabs/talos issue 8764; NixOS/nixos-hardware issues 1828 and 1880 show the same text.)
NVRM_PART = re.compile(r"NVRM:\s?(?P<text>.*)$")
LEGACY = re.compile(
    r"The NVIDIA (?P<gpu>[^.]{1,120}?) GPU installed in this system(?: is|>)?\s+supported through the NVIDIA "
    r"(?P<branch>\d{3})\.xx Legacy drivers\..{0,400}?The (?P<driver>\d+(?:\.\d+){1,3}) NVIDIA driver will ignore\s+this GPU"
)
# The notice is one kernel message of five lines: dmesg and journalctl show its line breaks,
# rsyslog writes each as "#012" (its escape of the control character \n), so a syslog or
# kern.log file holds the whole notice on one line.
SYSLOG_NEWLINE = "#012"


def parse_legacy_notices(text: str) -> list[dict[str, str]]:
    """Kernel log -> [{"gpu": "GeForce GT 710", "branch": "470", "driver": "535.129.03"}]:
    each GPU the loaded module said it will ignore because only a legacy branch drives it.
    The message's NVRM: pieces are joined first (it spans five lines)."""
    pieces: list[str] = []
    for line in text.replace(SYSLOG_NEWLINE, "\n").splitlines():
        m = NVRM_PART.search(line)
        if m:
            pieces.append(m["text"].strip())
    joined = " ".join(pieces)
    out: list[dict[str, str]] = []
    for m in LEGACY.finditer(joined):
        gpu = m["gpu"].removeprefix("NVIDIA ").strip()  # "The NVIDIA NVIDIA GeForce GTX 1050": newer drivers double it
        notice = {"gpu": gpu[:120], "branch": m["branch"], "driver": m["driver"]}
        if notice not in out:
            out.append(notice)
    return out


def parse_xid_lines(text: str) -> list[dict[str, Any]]:
    """Kernel log lines "NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus."
    -> [{"bus": "PCI:0000:18:00", "xid": 79, "text": the line's tail}], then the GPUs the
    module found fallen off the bus while probing (parse_fallen_off_bus), as Xid 79."""
    out = []
    for line in text.splitlines():
        m = XID.search(line)
        if m:
            out.append({"bus": m["bus"], "xid": int(m["xid"]), "text": m["rest"].strip()[:200]})
    return out + [e for e in parse_fallen_off_bus(text) if e not in out]


# The module's probe-time message for a GPU that no longer answers on the bus: Xid 79's
# meaning ("GPU has fallen off the bus", NVIDIA's Xid catalog) without a Xid line, e.g.
#   NVRM: The NVIDIA GPU 0000:b3:00.0
#   NVRM: (PCI ID: 10de:26b5) installed in this system has
#   NVRM: fallen off the bus and is not responding to commands.
# (NVIDIA/NVSentinel issue 155, driver 570.158.01.) One message over three NVRM: lines.
FALLEN_OFF = re.compile(
    r"The NVIDIA GPU (?P<domain>[0-9a-fA-F]{4}):(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\.[0-7]\s+"
    r"\(PCI ID: [0-9a-fA-F]{4}:[0-9a-fA-F]{4}\) installed in this system has\s+fallen off the bus"
)


def parse_fallen_off_bus(text: str) -> list[dict[str, Any]]:
    """The fallen-off-the-bus notice -> [{"bus": "PCI:0000:b3:00", "xid": 79, "text": ...}],
    the bus written as a Xid line writes it, so one GPU's two reports count once per line."""
    if "fallen off" not in text:
        return []  # most kernel logs: nothing to join
    joined = " ".join(m["text"].strip() for line in text.replace(SYSLOG_NEWLINE, "\n").splitlines() if (m := NVRM_PART.search(line)))
    return [{"bus": f"PCI:{m['domain']}:{m['bus']}:{m['dev']}", "xid": 79,
             "text": "fallen off the bus and is not responding to commands (the driver's probe message; no Xid line)"}
            for m in FALLEN_OFF.finditer(joined)]
