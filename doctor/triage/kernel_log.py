"""Kernel log lines (`dmesg`, `dmesg -T`, `journalctl -k`, /var/log/kern.log or syslog) ->
gpus.xid_events and driver.legacy_notices.

    [ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 48, pid=..., An uncorrectable double bit error ...
    [Sun May 17 15:55:50 2026] NVRM: The NVIDIA GeForce GTX 1050 GPU installed in this system is
                               NVRM:  supported through the NVIDIA 580.xx Legacy drivers. ...
    Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48, ...
    Nov 22 15:39:14 host kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=..., GPU has fallen off the bus.
    kern  :err   : [  12.01] NVRM: ...                (dmesg -x; talosctl dmesg: "kern: err: [ISO]: ")

The messages are read by the live probe's own parsers (fwdoctor.kernlog), so a report and a
host give the same events. What this module adds is which lines of a report are kernel log
lines. Prefixes are taken off in order: a syslog/journal header (date, time and host before
"kernel:"), a dmesg -x facility and level, a timestamp in brackets or an ISO time. A line whose
header or facility says it is the kernel's counts whatever its message; any other line counts
only when its message starts with "NVRM:" (the nvidia module's own prefix, also on the
indented continuation lines dmesg and journalctl print). So a sentence that mentions "NVRM:
Xid 79" or quotes a Xid line inside prose is no kernel line, and neither is "kernel: 6.5.0" in
a list of versions. rsyslog's "#012" (a line break inside one message) splits a line again.

The keys are set only where the report shows kernel log lines ([] where those show no Xid or
no notice: a report without them leaves both UNKNOWN). A Xid line the kernel's own form does
not fit (cut short, retyped) or a notice that does not parse means the text shows something
that was not read: the key is then left out rather than said to be [].
"""

from __future__ import annotations

import re

from fwdoctor.kernlog import SYSLOG_NEWLINE, parse_fallen_off_bus, parse_legacy_notices, parse_xid_lines
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

KIND = "kernel log"
# A syslog/journal header before "kernel:" is a date, a time and a host name: at most six words
# ("Dec  2 11:38:27 worker4", "2024-05-20T02:46:53+0000 node", "[  199.2] worker4" of
# journalctl -o short-monotonic), with a clock or a dmesg seconds stamp in it.
_HEADER_MAX = 130
_CLOCK = re.compile(r"\d:\d\d|\d\.\d{6}")
# dmesg -x: "kern  :err   : "; talosctl dmesg: "kern:     err: ", "kern: warning: ". Facility and
# level names are dmesg's (a word pair of any names would take "test: info:" in prose for one).
_FACILITY = re.compile(r"(?:kern|user|daemon|syslog)\s{0,8}:\s{0,8}(?:emerg|alert|crit|err|warn(?:ing)?|notice|info|debug)\s{0,8}:\s?")
# "[ 1234.567890]" (dmesg), "[Mon May 20 02:46:53 2024]" (dmesg -T), "[2024-05-20T02:46:53.856596762Z]:" (talosctl).
_STAMP = re.compile(
    r"\[\s{0,12}\d{1,10}\.\d{1,9}\]"
    r"|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]"
    r"|\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.,]?\d{0,9}(?:Z|[+-]\d\d:?\d\d)?\]:?"
)
# dmesg --time-format iso: "2025-05-27T04:18:56,089671+00:00 "
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.,]?\d{0,9}(?:Z|[+-]\d\d:?\d\d)?\s")
# The notice takes five lines; a window of eight allows a line of other NVRM output inside it.
_NOTICE_LINES = 8


def message(text: str) -> str | None:
    """The kernel message of a report line, its prefixes taken off, or None when the line is
    not a kernel log line."""
    rest = text.strip()
    marked = False  # a prefix only the kernel log has: whatever the message, it is the kernel's
    if rest.startswith("kernel:"):
        # A journal line pasted without its date; alone the word is no mark ("kernel: 6.5.0" in a
        # list of versions): the message must be the module's.
        rest = rest[7:].lstrip()
    else:
        at = rest.find(" kernel:", 0, _HEADER_MAX)
        head = rest[:at].rstrip()
        # ...and not a program's own "app[12]:" tag before a message that says "kernel:"
        if at > 0 and len(head.split()) <= 6 and not head.endswith(":") and _CLOCK.search(head):
            rest, marked = rest[at + 8:].lstrip(), True
    facility = _FACILITY.match(rest)
    if facility:
        rest, marked = rest[facility.end():].lstrip(), True
    stamp = _STAMP.match(rest) or _ISO.match(rest)
    if stamp:
        rest = rest[stamp.end():].lstrip()
    if marked or rest.startswith("NVRM:"):
        return rest
    return None


def find(lines: Lines) -> list[Fragment]:
    shown: list[tuple[int, list[str]]] = []  # (0-based line, its message's pieces) of each kernel log line
    for i, text in enumerate(lines.norm):
        if "NVRM:" not in text and "kern" not in text:
            continue  # most lines: no kernel log prefix or message can be in them
        said = message(text)
        if said is not None:
            shown.append((i, said.split(SYSLOG_NEWLINE)))
    if not shown:
        return []
    frag = Fragment(KIND, shown[0][0] + 1, shown[-1][0] + 1)
    unread = _xids(frag, shown)
    # "NVRM: Xid 79 again after the reboot" alone is a sentence about a log, not one: a report
    # whose only kernel lines are such shows no log to say "no legacy notice" of.
    if any(i + 1 not in unread for i, _ in shown):
        _notices(frag, shown)
    return [frag] if frag.facts else []  # only unreadable Xid mentions: nothing established


def _xids(frag: Fragment, shown: list[tuple[int, list[str]]]) -> set[int]:
    """gpus.xid_events from the kernel lines; returns the lines that mention a Xid the kernel's
    own form does not fit (cut short, retyped): where there are such, [] would be a guess."""
    events, at, unread = [], [], []
    for i, pieces in shown:
        for piece in pieces:
            found = parse_xid_lines(piece)
            if found:
                events += found
                at.append(i + 1)
            elif "Xid" in piece:
                unread.append(i + 1)
    # The probe-time "fallen off the bus" message spans three NVRM: lines: read over them all.
    fallen = [e for e in parse_fallen_off_bus("\n".join(p for _, pieces in shown for p in pieces)) if e not in events]
    if fallen:
        events += fallen
        at += [i + 1 for i, pieces in shown if any("fallen off the bus" in p for p in pieces)]
        at.sort()
    if unread:
        frag.notes.append(f"line {unread[0]}: a Xid line not in the kernel's own form ('NVRM: Xid (PCI:...): N, ...'): not read")
    if events:
        frag.add("gpus.xid_events", events, at[0], at[-1])
    elif not unread:  # kernel log lines and none of them a Xid: the log the report shows has none
        frag.add("gpus.xid_events", [])
    return set(unread)


def _notices(frag: Fragment, shown: list[tuple[int, list[str]]]) -> None:
    notices: list[dict[str, str]] = []
    spans: list[tuple[int, int]] = []  # report lines of each notice read
    for k, (i, pieces) in enumerate(shown):
        if not any("installed in this system" in p for p in pieces):
            continue
        window: list[str] = []
        for j in range(k, min(len(shown), k + _NOTICE_LINES)):
            if j > k and shown[j][0] != shown[j - 1][0] + 1:
                break  # the notice's lines follow each other; a gap is another paste
            window += shown[j][1]
            if not any("this GPU" in p for p in shown[j][1]):
                continue  # the notice ends "will ignore this GPU": read it once that line is in
            found = parse_legacy_notices("\n".join(window))
            if found:
                notices += [n for n in found if n not in notices]
                spans.append((i + 1, shown[j][0] + 1))
                break
    unread = [i + 1 for i, pieces in shown if any("Legacy drivers" in p for p in pieces)
              and not any(a <= i + 1 <= b for a, b in spans)]
    if unread:
        frag.notes.append(f"line {unread[0]}: a legacy-driver notice cut short or reworded: not read")
    if notices:
        frag.add("driver.legacy_notices", notices, spans[0][0], spans[-1][1])
    elif not unread:  # kernel log lines without the notice
        frag.add("driver.legacy_notices", [])
