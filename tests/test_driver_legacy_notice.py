"""The driver's own verdict (issue 16): a module that ignores a GPU only a legacy branch
drives says so in the kernel log, and `check` reports it as driver-gpu-unsupported even
where the KB does not know the GPU (the frozen test KB has no driver ranges at all) and
when the module, finding no other GPU, did not stay loaded (no driver-missing beside it).

The kernel log lines are real reports, re-laid as /var/log/kern.log lines:
- GeForce GT 710 under 535.129.03: siderolabs/talos issue 8764 (2024-05-20);
- GeForce GTX 1050 under 595.58.03, journalctl's line cut with ">":
  NixOS/nixos-hardware issue 1828 (2026-04-13).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fwdoctor.probes.topology import parse_legacy_notices

ROOTS = Path(__file__).resolve().parent / "roots"
pytestmark = pytest.mark.usefixtures("use_test_kb")

TALOS_GT710 = """\
May 20 02:46:53 node kernel: [    6.201442] NVRM: The NVIDIA GeForce GT 710 GPU installed in this system is
May 20 02:46:53 node kernel: [    6.201443] NVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please
May 20 02:46:53 node kernel: [    6.201444] NVRM:  visit http://www.nvidia.com/object/unix.html for more
May 20 02:46:53 node kernel: [    6.201445] NVRM:  information.  The 535.129.03 NVIDIA driver will ignore
May 20 02:46:53 node kernel: [    6.201446] NVRM:  this GPU.  Continuing probe...
May 20 02:46:53 node kernel: [    6.204790] NVRM: No NVIDIA GPU found.
"""
NIXOS_GTX1050 = """\
Apr 13 16:41:14 nixos kernel: NVRM: The NVIDIA NVIDIA GeForce GTX 1050 GPU installed in this system>
                              NVRM:  supported through the NVIDIA 580.xx Legacy drivers. Please
                              NVRM:  visit http://www.nvidia.com/object/unix.html for more
                              NVRM:  information.  The 595.58.03 NVIDIA driver will ignore
                              NVRM:  this GPU.  Continuing probe...
Apr 13 16:41:14 nixos kernel: NVRM: No NVIDIA GPU found.
"""


def test_the_notice_is_parsed_from_both_real_layouts() -> None:
    assert parse_legacy_notices(TALOS_GT710) == [{"gpu": "GeForce GT 710", "branch": "470", "driver": "535.129.03"}]
    assert parse_legacy_notices(NIXOS_GTX1050) == [{"gpu": "GeForce GTX 1050", "branch": "580", "driver": "595.58.03"}]
    # Other NVRM chatter, a cut-off notice, and a Xid line are not notices.
    assert parse_legacy_notices("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.95.05\n"
                                "NVRM: The NVIDIA GeForce GT 710 GPU installed in this system is\n"
                                "NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n") == []


def _root(tmp_path: Path, base: str, log: str, device: str) -> Path:
    root = tmp_path / "root"
    shutil.copytree(ROOTS / base, root)
    (root / "sys/bus/pci/devices/0000:62:00.0/device").write_text(device + "\n")
    (root / "var/log").mkdir(parents=True)
    (root / "var/log/kern.log").write_text(log)
    return root


def _ids(report: dict) -> dict[str, dict]:
    return {f["id"]: f for f in report["findings"]}


def test_a_module_that_left_because_its_only_gpu_is_legacy(check_json, tmp_path: Path) -> None:
    root = _root(tmp_path, "driver-missing", TALOS_GT710, "0x128b")  # GK208B [GeForce GT 710]
    code, report = check_json("--root", str(root))
    found = _ids(report)
    assert code == 1
    assert "driver-missing" not in found  # the notice explains it better
    hit = found["driver-gpu-unsupported"]
    assert hit["severity"] == "error"
    assert "ignores the GeForce GT 710" in hit["message"] and "R470 legacy branch" in hit["message"]
    assert "did not stay loaded" in hit["message"]
    # No module is loaded, so the notice's own driver is the one named.
    assert "the NVIDIA 535.129.03 module ignores" in hit["message"]
    assert "nvidia-driver-470-server" in " ".join(hit["fix"]["commands"])
    assert hit["evidence"]["source"] == "/var/log/kern.log"


def test_a_loaded_module_that_ignores_one_gpu(check_json, tmp_path: Path) -> None:
    root = _root(tmp_path, "driver-ok", NIXOS_GTX1050.replace("595.58.03", "580.95.05").replace("580.xx", "470.xx"), "0x1c81")
    code, report = check_json("--root", str(root))
    hit = _ids(report)["driver-gpu-unsupported"]
    assert "580.95.05 module ignores the GeForce GTX 1050" in hit["message"]
    assert "did not stay loaded" not in hit["message"]


def test_a_notice_from_an_earlier_boot_with_another_driver_is_not_evidence(check_json, tmp_path: Path) -> None:
    # kern.log keeps earlier boots: the 535 module's notice says nothing of the 580 now loaded.
    root = _root(tmp_path, "driver-ok", TALOS_GT710, "0x2330")
    _, report = check_json("--root", str(root))
    assert "driver-gpu-unsupported" not in _ids(report)


def test_of_three_boots_notices_the_newest_names_the_driver(check_json, tmp_path: Path) -> None:
    # kern.log keeps every boot; with no module loaded now, the newest boot's notice speaks
    # (a mutation that read another notice survived `make mutants` before this test).
    log = "".join(TALOS_GT710.replace("535.129.03", driver) for driver in ("535.129.03", "545.29.06", "550.54.14"))
    root = _root(tmp_path, "driver-missing", log, "0x128b")
    _, report = check_json("--root", str(root))
    hit = _ids(report)["driver-gpu-unsupported"]
    assert "the NVIDIA 550.54.14 module ignores" in hit["message"]
