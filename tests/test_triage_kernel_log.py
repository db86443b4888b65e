"""Issue 26: `fwdoctor triage` reads the kernel log lines a report pastes (dmesg, dmesg -T,
journalctl -k, kern.log/syslog, dmesg -x, talosctl dmesg) into gpus.xid_events and
driver.legacy_notices, with the live probe's own parsers (fwdoctor.kernlog), and raises
gpu-xid-errors and driver-gpu-unsupported from them.

The kernel log texts are real: tests/data/kernel-log/, each file's thread named in its
README.md. Where a test needs a sentence around them, or a paste's damage (CRLF, quote
markers, a line past the cap), it says so beside the text it builds.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import DATA
from fwdoctor import kernlog
from fwdoctor.triage import PARSERS, kernel_log, text as triage_text, triage
from fwdoctor.triage.text import MAX_PARSED_LINE, Lines

pytestmark = pytest.mark.usefixtures("use_test_kb")

LOGS = DATA / "kernel-log"


def log(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def run(cli, tmp_path: Path, text: str, *options: str) -> dict:
    """`fwdoctor triage --json` on `text`: the parsed document."""
    path = tmp_path / "report.md"
    path.write_text(text, encoding="utf-8")
    return json.loads(cli("triage", "--json", *options, str(path)).output)


def events(facts) -> list[tuple[str, int]]:
    return [(e["bus"], e["xid"]) for e in facts["gpus.xid_events"]]


# ----------------------------------------------------------------------------- Xid events
# (file, the (bus, Xid) of every event in order, the report lines they are on)
XIDS = [
    ("akash-support-244-dmesg-T-grep-nvrm.txt",
     [("PCI:0000:00:05", 43), ("PCI:0000:00:05", 43), ("PCI:0000:00:07", 31), ("PCI:0000:00:08", 94)], "report line 5-12"),
    ("gpu-operator-1146-syslog-xid-48-64.txt", [("PCI:0000:07:00", 48), ("PCI:0000:07:00", 64)], "report line 4-5"),
    ("open-gpu-kernel-modules-1010-journalctl-xid-79.txt", [("PCI:0000:01:00", 79)], "report line 3"),
    ("pop-os-3363-journalctl-xid-79.txt", [("PCI:0000:01:00", 79)], "report line 2"),
    ("gpud-xid-readme-quoted-dmesg-T.txt", [("PCI:0000:cb:00", 31), ("PCI:0000:cb:00", 109)], "report line 1-4"),
    ("open-gpu-kernel-modules-1150-kernel-prefix-xid-45.txt",
     [(f"PCI:0000:{bus}:00", 45) for bus in ("dc", "ed", "ba", "97", "dc", "ba", "ed")], "report line 1-7"),
]


@pytest.mark.parametrize("name, expected, lines", XIDS, ids=[x[0].split("-xid")[0] for x in XIDS])
def test_each_recorded_layout_gives_its_xid_events_with_their_lines(name, expected, lines):
    facts, fragments = triage(log(name))
    assert events(facts) == expected
    assert facts.source("gpus.xid_events") == f"{lines}: kernel log"
    assert facts["driver.legacy_notices"] == []  # a kernel log without the notice says there is none
    assert "kernel log" in [f.kind for f in fragments]


def test_the_event_keeps_the_kernels_own_text():
    facts, _ = triage(log("gpu-operator-1146-syslog-xid-48-64.txt"))
    first = facts["gpus.xid_events"][0]
    assert first["text"].startswith("pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE)")
    # The lines of the other GPU (RmInitAdapter failed, 0a:00.0) are no Xid and count nothing.
    assert {e["bus"] for e in facts["gpus.xid_events"]} == {"PCI:0000:07:00"}


@pytest.mark.parametrize("name, expected, lines", XIDS, ids=[x[0].split("-xid")[0] for x in XIDS])
def test_triage_raises_gpu_xid_errors_and_nothing_else_on_a_bare_xid_log(cli, tmp_path, name, expected, lines):
    doc = run(cli, tmp_path, log(name))
    found = {f["id"]: f for f in doc["findings"]}
    assert set(found) == {"gpu-xid-errors"}
    hit = found["gpu-xid-errors"]
    assert hit["severity"] == "warning" and doc["exit_code"] == 0
    assert hit["message"].startswith(f"the kernel log has {len(expected)} NVIDIA Xid event(s): ")
    for bus, xid in set(expected):
        assert f"Xid {xid} x{expected.count((bus, xid))} on {bus}" in hit["message"]
    assert hit["evidence"]["source"] == f"{lines}: kernel log"


def test_the_markdown_comment_quotes_the_xid_lines_it_read(cli, tmp_path):
    path = tmp_path / "report.md"
    path.write_text(log("gpu-operator-1146-syslog-xid-48-64.txt"), encoding="utf-8")
    out = cli("triage", "--format", "markdown", str(path)).output
    assert "#### warning: `gpu-xid-errors` (FWD113)" in out
    evidence = out.split("<summary>evidence from the report</summary>", 1)[1].split("</details>", 1)[0]
    assert "line 4-5:" in evidence and "NVRM: Xid (PCI:0000:07:00): 48," in evidence and "NVRM: Xid (PCI:0000:07:00): 64," in evidence
    assert "RmInitAdapter" not in evidence  # only the lines the events came from


# ----------------------------------------------------------------------------- legacy notices
# (file, the notice, its report lines)
NOTICES = [
    ("nixos-hardware-1880-dmesg-T-legacy-580.txt", {"gpu": "GeForce GTX 1050", "branch": "580", "driver": "595.71.05"}, "report line 2-6"),
    ("talos-8764-talosctl-dmesg-legacy-470.txt", {"gpu": "GeForce GT 710", "branch": "470", "driver": "535.129.03"}, "report line 1-5"),
    ("plex-media-player-71-dmesg-legacy-340.txt", {"gpu": "Second Generation ION", "branch": "340", "driver": "346.72"}, "report line 1-5"),
]


@pytest.mark.parametrize("name, notice, lines", NOTICES, ids=[n[0].split("-legacy")[0] for n in NOTICES])
def test_each_recorded_layout_of_the_legacy_notice_is_read(name, notice, lines):
    facts, _ = triage(log(name))
    assert facts["driver.legacy_notices"] == [notice]
    assert facts.source("driver.legacy_notices") == f"{lines}: kernel log"
    assert facts["gpus.xid_events"] == []


@pytest.mark.parametrize("name, notice, lines", NOTICES, ids=[n[0].split("-legacy")[0] for n in NOTICES])
def test_triage_says_the_module_ignores_the_gpu_without_knowing_the_driver_in_place(cli, tmp_path, name, notice, lines):
    # The report shows no nvidia-smi: driver-gpu-unsupported is judged from the notice alone.
    doc = run(cli, tmp_path, log(name))
    assert doc["facts"]["driver.version"].get("unknown") is True
    found = {f["id"]: f for f in doc["findings"]}
    assert set(found) == {"driver-gpu-unsupported"} and doc["exit_code"] == 1
    hit = found["driver-gpu-unsupported"]
    assert hit["severity"] == "error"
    assert hit["message"] == (f"the NVIDIA {notice['driver']} module ignores the {notice['gpu']}: its kernel log notice says only the "
                              f"R{notice['branch']} legacy branch drives it; install a driver of the R{notice['branch']} legacy branch")
    assert f"nvidia-driver-{notice['branch']}-server" in hit["fix"]["commands"][0]
    assert hit["evidence"]["driver.version"] is None and hit["evidence"]["source"] == f"{lines}: kernel log"


def test_a_notice_of_the_loaded_driver_is_judged_by_the_regular_rule_and_an_older_boots_is_not(cli, tmp_path):
    # Constructed: the module's own "loading" line (its form as in akash-network/support#244)
    # before the talosctl notice. Same driver: the regular rule reports it; another driver (the
    # notice is an earlier boot's): nothing, as `check` does with a kern.log of several boots.
    notice = log("talos-8764-talosctl-dmesg-legacy-470.txt")
    loading = "[Sun Jul 28 09:15:27 2024] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {}  Sun May 12 19:39:15 UTC 2024\n"
    same = {f["id"]: f for f in run(cli, tmp_path, loading.format("535.129.03") + notice)["findings"]}
    assert same["driver-gpu-unsupported"]["evidence"]["driver.version"] == "535.129.03"
    assert "the NVIDIA 535.129.03 module ignores the GeForce GT 710" in same["driver-gpu-unsupported"]["message"]
    other = run(cli, tmp_path, loading.format("550.54.14") + notice)
    assert "driver-gpu-unsupported" not in {f["id"] for f in other["findings"]}


def test_the_notice_written_on_one_syslog_line_is_read_by_triage_and_by_the_live_probe():
    # rsyslog keeps a kernel message's line breaks as "#012": the talosctl notice's five pieces
    # (tests/data/kernel-log), joined so and behind a syslog header, as /var/log/syslog holds it.
    pieces = [line.split("NVRM:", 1)[1].rstrip() for line in log("talos-8764-talosctl-dmesg-legacy-470.txt").splitlines()[:5]]
    line = "May 20 02:46:53 node kernel: NVRM:" + "#012NVRM:".join(pieces) + "\n"
    notice = [{"gpu": "GeForce GT 710", "branch": "470", "driver": "535.129.03"}]
    from fwdoctor.probes.topology import parse_legacy_notices  # the live probe's name for it

    assert parse_legacy_notices(line) == notice
    facts, _ = triage("From /var/log/syslog:\n" + line)
    assert facts["driver.legacy_notices"] == notice and facts.source("driver.legacy_notices") == "report line 2: kernel log"


# ----------------------------------------------------------------------------- what pasting does
def test_crlf_quote_markers_fences_and_prose_around_the_log_change_nothing():
    raw = log("akash-support-244-dmesg-T-grep-nvrm.txt")
    expected = events(triage(raw)[0])
    # Constructed damage: a mail client's CRLF and "> " quoting, a markdown fence and a sentence.
    pasted = "My job died, here is what the node said:\r\n\r\n> ```\r\n" + "".join(f"> {line}\r\n" for line in raw.splitlines()) + "> ```\r\n"
    facts, _ = triage(pasted)
    assert events(facts) == expected
    assert facts.source("gpus.xid_events") == "report line 8-15: kernel log"  # 3 lines of preface more


def test_no_kernel_log_in_the_report_leaves_both_keys_unknown_and_says_what_would_show_them(cli):
    text = (DATA / "triage" / "01-driver-too-old-fooocus-11040.md").read_text().split("---\n", 2)[2]
    facts, fragments = triage(text)
    for key in ("gpus.xid_events", "driver.legacy_notices"):
        assert not facts.known(key)
        assert facts.why(key) == "the report does not show the kernel log's NVIDIA lines (`sudo dmesg -T | grep NVRM`)"
    assert "kernel log" not in [f.kind for f in fragments]


def test_a_report_without_kernel_lines_has_gpu_xid_errors_not_checked(cli, tmp_path):
    doc = run(cli, tmp_path, "torch.cuda.is_available() returns False on my box.\n")
    assert "gpu-xid-errors" in {n["rule"] for n in doc["not_checked"]}
    assert "gpu-xid-errors" not in {f["id"] for f in doc["findings"]}


def test_a_gpu_fallen_off_the_bus_at_probe_time_counts_as_xid_79():
    # NVSentinel#155: a GPU fallen off the bus, reported by the driver without a Xid line.
    facts, _ = triage(log("nvsentinel-155-dmesg-fallen-off-bus-without-xid.txt"))
    assert [(e["bus"], e["xid"]) for e in facts["gpus.xid_events"]] == [("PCI:0000:b3:00", 79)]
    assert facts.source("gpus.xid_events") == "report line 3: kernel log"
    assert facts["driver.legacy_notices"] == []  # "installed in this system has fallen off the bus": no notice
    assert facts["driver.version"] == "570.158.01"  # the loading line, read by triage/driver_version.py


@pytest.mark.parametrize("sentence", [
    "We keep getting Xid 79 (GPU has fallen off the bus) on node 3 every few days.",
    "Is NVRM: Xid 48 a hardware problem? dmesg is full of them.",
    # NVSentinel#155's comment form: a Xid line quoted inside a sentence, as an example
    "note: this should duplicate `NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus`",
    "NVRM: Xid 79 again after the reboot, on the same GPU",
    "kernel: 6.5.0-41-generic",  # a list of versions, not a journal line
    "Jun 30 11:07:05 gpu-0 trainer[412]: kernel: the job's own log line, not the kernel's",  # a program's tag before "kernel:"
])
def test_a_sentence_that_mentions_a_xid_is_no_event_and_no_kernel_log(sentence):
    facts, fragments = triage(f"Some context first.\n{sentence}\nThanks.\n")
    assert not facts.known("gpus.xid_events"), facts["gpus.xid_events"]
    assert not facts.known("driver.legacy_notices")
    assert "kernel log" not in [f.kind for f in fragments]


def test_a_xid_line_cut_short_among_kernel_lines_leaves_the_events_unknown():
    # Constructed from the pop-os#3363 lines: the Xid line cut after its code (no ", ..."), as a
    # paste cut at the terminal width leaves it. "No Xid" would be a guess.
    lines = log("pop-os-3363-journalctl-xid-79.txt").splitlines()
    lines[1] = lines[1].split(",")[0]
    facts, fragments = triage("\n".join(lines) + "\n")
    assert lines[1].endswith("NVRM: Xid (PCI:0000:01:00): 79")
    assert not facts.known("gpus.xid_events")
    assert facts["driver.legacy_notices"] == []  # the other kernel lines still show no notice
    (frag,) = [f for f in fragments if f.kind == "kernel log"]
    assert frag.notes == ["line 2: a Xid line not in the kernel's own form ('NVRM: Xid (PCI:...): N, ...'): not read"]


def test_a_legacy_notice_cut_short_leaves_the_notices_unknown():
    # Constructed from the plex-media-player#71 notice without its last two lines.
    cut = "\n".join(log("plex-media-player-71-dmesg-legacy-340.txt").splitlines()[:3]) + "\n"
    facts, _ = triage(cut)
    assert not facts.known("driver.legacy_notices")
    assert facts["gpus.xid_events"] == []


# ----------------------------------------------------------------------------- the prefixes
@pytest.mark.parametrize("line, said", [
    ("[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus.", "NVRM: GPU at 0000:01:00.0 has fallen off the bus."),  # Bumblebee#554
    ("Jul 31 14:10:32 Demitrius kernel: [ 2739.854585] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:0a75) installed",  # Bumblebee (old) #537
     "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:0a75) installed"),
    ("syslog:err   : 2025-05-27T04:18:56,089671+00:00 NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen off the bus",  # leptonai/gpud#870, dmesg -x
     "NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen off the bus"),
    ("sep 03 13:48:46 <hostname-redacted> kernel: irq 16: nobody cared (try booting with the \"irqpoll\" option)",  # CachyOS/linux-cachyos#1019
     "irq 16: nobody cared (try booting with the \"irqpoll\" option)"),
    ("             NVRM: installed in this system is not supported by open", "NVRM: installed in this system is not supported by open"),  # negativo17#158
    ("[   60.063350] nvidia 0000:2c:00.0: probe with driver nvidia failed with error -1", None),  # a stamp alone: not said to be the kernel's
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  352.99  Mon Jul  4 23:52:14 PDT 2016", None),  # /proc/driver/nvidia/version
])
def test_the_kernel_message_behind_each_prefix(line, said):
    assert kernel_log.message(line) == said


def test_the_parsers_are_the_live_probes_and_keep_their_old_names():
    from fwdoctor.probes import topology

    assert topology.parse_xid_lines is kernlog.parse_xid_lines
    assert topology.parse_legacy_notices is kernlog.parse_legacy_notices
    assert kernel_log.find in PARSERS


# ----------------------------------------------------------------------------- hostile lines
def _seconds(run, *args) -> float:
    start = time.perf_counter()
    run(*args)
    return time.perf_counter() - start


HOSTILE = {
    "unclosed xids": "NVRM: Xid (" * 3000,
    "notice starts": "[ 1.000000] NVRM: " + "The NVIDIA a GPU installed in this system is " * 700 + "x",
    "notice bodies": "NVRM: " + "supported through the NVIDIA 470.xx Legacy drivers. The 1.1 NVIDIA driver will ignore " * 370 + "this GPU",
    "kernel words": "kernel: " * 4000 + "x",
    "header blanks": "Dec  2 11:38:27" + " " * 32000 + "kernel: x",
    "stamp brackets": "[" * 32000 + "x",
    "stamp digits": "[ " + "1" * 32000 + ".1] NVRM: x",
    "facilities": "kern  :err   : " * 2000 + "x",
    "syslog breaks": "NVRM: x" + "#012NVRM: Xid (" * 2000,
}


@pytest.mark.parametrize("label", sorted(HOSTILE))
def test_the_reader_is_linear_on_hostile_lines(label, monkeypatch):
    # The reader itself, without the line cap that protects it in triage() (as the readers of
    # tests/test_hostile_round2_parsing.py are timed): 4 KB, then 32 KB at ~8x the cost.
    monkeypatch.setattr(triage_text, "MAX_PARSED_LINE", 10**9)
    line = HOSTILE[label]
    small = line[:4096] + line[-40:]
    took = min(_seconds(kernel_log.find, Lines.of(small)) for _ in range(2))
    assert took < 0.1, f"{took:.3f} s on a 4 KB line of {label}"
    big = line[:32768] + line[-40:]
    took_big = min(_seconds(kernel_log.find, Lines.of(big)) for _ in range(2))
    assert took_big < max(0.1, 20 * took), f"{took * 1e3:.1f} ms at 4 KB, {took_big * 1e3:.1f} ms at 32 KB on {label}"


def test_a_32_kb_line_is_not_parsed_even_when_it_holds_a_xid():
    line = "[ 1843.308145] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus." + " x" * 16384
    assert len(line) > MAX_PARSED_LINE
    took = _seconds(triage, line)
    facts, fragments = triage(line)
    assert took < 1.0 and not facts.known("gpus.xid_events") and fragments == []
    # the same line under the cap is an event
    assert events(triage(line[:200])[0]) == [("PCI:0000:18:00", 79)]


def test_the_fallen_off_the_bus_message_is_read_from_a_syslog_line_and_not_from_prose():
    from fwdoctor.kernlog import parse_xid_lines

    # rsyslog keeps the three-line message on one line, its line breaks written as #012
    syslog = ("Jun  3 10:01:02 gpu7 kernel: [ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0#012NVRM: (PCI ID: 10de:26b5) "
              "installed in this system has#012NVRM: fallen off the bus and is not responding to commands.")
    assert [(e["bus"], e["xid"]) for e in parse_xid_lines(syslog)] == [("PCI:0000:b3:00", 79)]
    assert parse_xid_lines("our GPU 0000:b3:00.0 has fallen off the bus again, see NVSentinel#155") == []
