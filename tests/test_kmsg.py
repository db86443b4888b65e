"""fwdoctor.kmsg: the kernel's buffer read from /dev/kmsg as `dmesg` prints it.

The device test reads this machine's real /dev/kmsg beside the real `dmesg` (util-linux),
where both are allowed; the record tests use the device's record format
(Documentation/ABI/testing/dev-kmsg) around kernel lines quoted in public reports.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from fwdoctor import kmsg
from fwdoctor.host import Host
from fwdoctor.kernlog import parse_legacy_notices, parse_xid_lines
from fwdoctor.probes import topology


def _readable(path: str) -> bool:
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not (_readable(kmsg.KMSG) and shutil.which("dmesg")), reason="needs a readable /dev/kmsg and dmesg")
def test_the_device_reads_as_dmesg_prints_it():
    ours = kmsg.as_dmesg(kmsg.read_records()).splitlines()
    theirs = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=30, check=True).stdout.splitlines()
    assert len(ours) > 5
    # Records may arrive between the two reads: the older run's lines are the other's prefix.
    shared = min(len(ours), len(theirs))
    assert ours[:shared] == theirs[:shared]
    assert abs(len(ours) - len(theirs)) < 50


@pytest.mark.skipif(not _readable(kmsg.KMSG), reason="needs a readable /dev/kmsg")
def test_a_live_check_reads_the_kernel_log_without_starting_dmesg():
    host = Host.live_host(dict(os.environ, PATH="/nonexistent"), command_timeout=10)  # no dmesg to find
    text, where = topology._kernel_log(host)
    assert where == kmsg.KMSG and text is not None  # this machine has no NVIDIA module: no NVRM record
    assert all("NVRM" in line for line in text.splitlines())


def test_the_newest_records_are_kept_within_the_limit(tmp_path):
    # A regular file stands in for the device: each read() returns up to RECORD_BYTES, so
    # the records here are one read each only by their size; what counts is the byte limit.
    path = tmp_path / "kmsg"
    record = b"6,1,100,-;" + b"x" * (kmsg.RECORD_BYTES - 11) + b"\n"
    path.write_bytes(record * 5)
    kept = kmsg.read_records(str(path), limit=2 * kmsg.RECORD_BYTES)
    assert len(kept) == 2 and all(r == record for r in kept)


# NVSentinel issue 155's Xid line and fallen-off-the-bus message (driver 570.158.01), and the
# legacy-branch notice of siderolabs/talos issue 8764, as /dev/kmsg records.
RECORDS = [
    b"6,812,9876543210,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.158.01\n SUBSYSTEM=module\n DEVICE=+module:nvidia\n",
    b"4,1024,123456789012,-;NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus\n",
    b"3,1025,123456790000,-;NVRM: The NVIDIA GPU 0000:b3:00.0\n",
    b"3,1026,123456790001,c;NVRM: (PCI ID: 10de:26b5) installed in this system has\n",
    b"3,1027,123456790002,c;NVRM: fallen off the bus and is not responding to commands.\n",
    b"4,7,5000000,-;NVRM: The NVIDIA GeForce GT 710 GPU installed in this system is\\x0aNVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please\\x0a"
    b"NVRM:  visit http://www.nvidia.com/object/unix.html for more\\x0aNVRM:  information.  The 535.129.03 NVIDIA driver will ignore\\x0aNVRM:  this GPU.  Continuing probe...\n",
]


def test_only_the_nvidia_modules_records_are_kept_when_asked():
    other = b"6,2,3000000,-;usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"
    assert kmsg.as_dmesg([other, *RECORDS], containing=b"NVRM") == kmsg.as_dmesg(RECORDS)
    assert "usb 1-1" in kmsg.as_dmesg([other, *RECORDS])


def test_records_become_dmesg_lines_the_kernel_log_parsers_read():
    text = kmsg.as_dmesg(RECORDS)
    lines = text.splitlines()
    assert lines[0] == "[ 9876.543210] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.158.01"
    assert not any("SUBSYSTEM=" in line for line in lines)  # the records' properties are not text
    assert lines[1] == "[123456.789012] NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus"
    assert [(e["bus"], e["xid"]) for e in parse_xid_lines(text)] == [("PCI:0000:44:00", 79), ("PCI:0000:b3:00", 79)]
    assert parse_legacy_notices(text) == [{"gpu": "GeForce GT 710", "branch": "470", "driver": "535.129.03"}]


@pytest.mark.parametrize("record", [b"", b"no separator\n", b"6,1;text without a timestamp\n", b"6,1,abc,-;bad stamp\n"])
def test_malformed_records_are_left_out(record):
    assert kmsg.as_dmesg([record]) == ""


def test_a_gpu_health_probe_on_a_root_still_reads_the_syslog_file():
    # Only a live host reads the device: a root folder's kern.log is what the probe reads there.
    from pathlib import Path

    root = Path(__file__).parent / "roots" / "fabric-ib-xid"
    text, where = topology._kernel_log(Host.at_root(str(root), {}))
    assert where == "/var/log/kern.log" and "Xid" in text
