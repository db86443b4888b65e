"""Whole `fwdoctor check` runs on the driver fixture roots (tests/roots/driver-*), through
the CLI, plus a live run with a hung nvidia-smi. Other areas' probes run on these roots
too, so the assertions are about this area's finding ids only."""

from __future__ import annotations

from pathlib import Path

import pytest

from fwdoctor.host import Host
from fwdoctor.probes.driver import nvml_snapshot

TESTS = Path(__file__).resolve().parent
ROOTS = TESTS / "roots"
pytestmark = pytest.mark.usefixtures("use_test_kb")  # every command and probe reads the frozen tests/kb
# The fake nvidia-smi on PATH is only asked where NVML does not answer first.
_smi_skip = pytest.mark.skipif(
    (lambda s: s is not None and s.source == "nvml")(nvml_snapshot(Host.live_host())),
    reason="NVML answers on this host, so nvidia-smi is never run",
)


def smi_is_run(test):
    """A no-GPU path (requires_no_gpu: strict CI forgives its skip where a GPU answers)."""
    return pytest.mark.requires_no_gpu(_smi_skip(test))
MINE = {"driver-missing", "nouveau-loaded", "driver-library-mismatch", "no-gpu", "shm-too-small"}


@pytest.fixture
def env_file(tmp_path):
    path = tmp_path / "root.env"
    path.write_text("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n")
    return str(path)


def mine(report):
    return {f["id"]: f for f in report["findings"] if f["id"] in MINE}


@pytest.mark.parametrize(
    "root, expected, exit_code",
    [
        ("driver-ok", {}, None),
        ("driver-missing", {"driver-missing": "error"}, 1),
        ("driver-nouveau", {"driver-missing": "error", "nouveau-loaded": "error"}, 1),
        ("driver-mismatch", {"driver-library-mismatch": "error"}, 1),
        ("driver-no-gpu", {"no-gpu": "info"}, None),
        ("driver-shm-container", {"shm-too-small": "warning"}, None),
        ("driver-shm-container-big", {}, None),
        ("driver-shm-multigpu", {"shm-too-small": "warning"}, None),
        ("driver-shm-onegpu", {}, None),
    ],
)
def test_each_fixture_root_gives_exactly_its_driver_findings(check_json, env_file, root, expected, exit_code):
    code, report = check_json("--root", str(ROOTS / root), "--env-file", env_file)
    assert {i: f["severity"] for i, f in mine(report).items()} == expected
    if exit_code is not None:
        assert code == exit_code
    else:  # only warnings/infos of ours: an error, if any, belongs to another area
        assert code == (1 if any(f["severity"] == "error" for f in report["findings"]) else 0)


def test_the_mismatch_message_names_both_versions_and_the_fix_reboots(check_json, env_file):
    _, report = check_json("--root", str(ROOTS / "driver-mismatch"), "--env-file", env_file)
    finding = mine(report)["driver-library-mismatch"]
    assert "575.57.08" in finding["message"] and "580.95.05" in finding["message"]
    assert finding["fix"]["commands"][0] == "sudo reboot"
    assert finding["code"] == "FWD103"


def test_the_driver_ok_root_reports_the_h100_as_seen_by_the_driver(cli, env_file):
    import json

    result = cli("facts", "--root", str(ROOTS / "driver-ok"), "--env-file", env_file)
    facts = json.loads(result.output)["facts"]
    assert facts["driver.version"]["value"] == "580.95.05"
    assert facts["gpus.list"]["value"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert facts["driver.cuda_version"]["unknown"] is True


def test_a_missing_root_is_a_doctor_error_not_a_traceback(cli, tmp_path):
    result = cli("check", "--json", "--root", str(tmp_path / "nope"))
    assert result.exit_code == 2


@smi_is_run
def test_a_hung_nvidia_smi_on_a_live_host_gives_probe_failed_and_the_rest_of_the_report(check_json, tmp_path):
    env = tmp_path / "hang.env"
    env.write_text(f"PATH={TESTS / 'fakebin' / 'hang'}:/usr/bin:/bin\n")
    code, report = check_json("--env-file", str(env), "--timeout", "1")
    failed = [f for f in report["findings"] if f["id"] == "probe-failed"]
    assert any("nvidia-smi" in f["message"] and "timeout" in f["message"] for f in failed)
    assert all(f["severity"] == "warning" for f in failed)
    assert code in (0, 1)  # judged, not crashed (2)


@smi_is_run
def test_nvidia_smis_version_mismatch_text_is_captured_as_the_nvml_error(cli, tmp_path):
    import json

    env = tmp_path / "mismatch.env"
    env.write_text(f"PATH={TESTS / 'fakebin' / 'mismatch'}:/usr/bin:/bin\n")
    result = cli("facts", "--env-file", str(env))
    data = json.loads(result.output)
    assert data["facts"]["driver.nvml_error"]["value"] == "Failed to initialize NVML: Driver/library version mismatch"
    assert not any(f["probe"] == "nvidia-smi" for f in data["probe_failures"])
