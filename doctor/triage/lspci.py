"""`lspci -vvv` (or `lspci -vvv | grep ACSCtl`): the ACS control bits of PCIe bridges -> pci.acs.

    00:03.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge
            ...
            Capabilities: [2a0 v1] Access Control Services
                    ACSCap: SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans+
                    ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-

ACSCtl is the control register (ACSCap only says what could be switched on). ReqRedir+ or
CmpltRedir+ is "P2P Request/Completion Redirect": peer-to-peer traffic between devices below
the bridge goes up to the root complex, which NCCL's troubleshooting guide (section "PCI
Access Control Services (ACS)",
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs)
says makes P2P slow or hang. The bits are read from the flag words, not from a pattern over
the line: "ACSCtl:" then words ending in "+" or "-" (commas allowed, as people retype them).

The device a line belongs to is the last `lspci -vvv` header above it ("00:03.1 PCI bridge:"),
within its block (blocks end at a blank line); a grepped line has none, and all such lines
together make one entry with no bridge. lspci does not say which GPUs are below a bridge
(`lspci -tv` does), so "gpus" stays empty: the finding says the report does not show them.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

# "0000:00:03.1 PCI bridge: ..." / "41:00.0 VGA compatible controller: ...": the address, then
# the class up to the first ':' (split there, not matched: the name may hold ':').
_HEADER = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
# PCIe r4.0 7.7.8.3, the ACS Control Register: bit 0 Source Validation ... bit 6 Direct Translated P2P.
_BITS = {"SrcValid": 0, "TransBlk": 1, "ReqRedir": 2, "CmpltRedir": 3, "UpstreamFwd": 4, "EgressCtrl": 5, "DirectTrans": 6}
_MAX_ENTRIES = 256  # a machine has at most a few dozen bridges; more is a paste of many hosts or noise


def _flags(text: str) -> dict[str, bool]:
    """{"ReqRedir": True, ...} from the words after "ACSCtl:"."""
    out: dict[str, bool] = {}
    for word in text.replace(",", " ").split():
        name, sign = word[:-1], word[-1:]
        if name in _BITS and sign in "+-" and sign:
            out[name] = sign == "+"
    return out


def find(lines: Lines) -> list[Fragment]:
    device: tuple[str, str] | None = None  # (address, class) of the current lspci -vvv block
    bridges: list[tuple[int, dict[str, Any]]] = []
    loose: list[tuple[int, int]] = []  # (line, acs_ctrl) of redirecting ACSCtl lines with no device
    seen_ctl = 0
    for i, text in enumerate(lines.norm):
        if not text.strip():
            device = None
            continue
        if not text[:1].isspace():
            address, _, rest = text.partition(" ")
            kind, colon, _ = rest.partition(":")
            if colon and _HEADER.match(address):
                device = (address, kind.strip())
                continue
        at = text.find("ACSCtl:")
        if at < 0:
            continue
        flags = _flags(text[at + 7:])
        if len(flags) < 2:
            continue
        seen_ctl += 1
        if len(bridges) + len(loose) >= _MAX_ENTRIES:
            break
        ctrl = sum(1 << _BITS[name] for name, on in flags.items() if on)
        redirect = bool(flags.get("ReqRedir") or flags.get("CmpltRedir"))
        if device is None:
            if redirect:
                loose.append((i + 1, ctrl))
            continue
        if "bridge" not in device[1].lower():
            continue  # an endpoint's own ACS (a multi-function NIC, the GPU) redirects nothing between GPUs
        bridges.append((i + 1, {"bridge": device[0], "gpus": [], "acs_ctrl": ctrl, "redirect": redirect,
                                "why": f"lspci -vvv ACSCtl at report line {i + 1}"}))
    if not bridges and not loose and not seen_ctl:
        return []
    entries = [entry for _, entry in bridges]
    if loose:
        entries.append({"bridge": None, "gpus": [], "acs_ctrl": loose[0][1], "redirect": True,
                        "why": f"{len(loose)} ACSCtl line{'s' if len(loose) > 1 else ''} with P2P redirect on, without the device they belong to "
                               f"(report line {', '.join(str(n) for n, _ in loose[:8])}{', ...' if len(loose) > 8 else ''})"})
    numbers = [n for n, _ in bridges] + [n for n, _ in loose]
    if not numbers:
        return []  # only ACSCtl lines of endpoints, or none redirecting without a device: nothing said about bridges
    frag = Fragment("lspci", min(numbers), max(numbers))
    frag.add("pci.acs", entries)
    return [frag]
