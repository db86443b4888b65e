"""Topology and fabric: `nvidia-smi topo -m` on recorded outputs (tests/data/topo, README
there), the probes on fixture roots (tests/roots/fabric-*, README.fixture in each), and
the fabric rules through a whole `fwdoctor check --root`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fwdoctor.engine import judge
from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts
from fwdoctor.probes import topology
from fwdoctor.rules import fabric

TESTS = Path(__file__).resolve().parent
TOPO = TESTS / "data" / "topo"
ROOTS = TESTS / "roots"


# ----------------------------------------------------------------------------- topo -m
def test_every_recorded_topo_output_has_provenance():
    readme = (TOPO / "README.md").read_text()
    for path in TOPO.glob("*.txt"):
        assert path.name in readme


def test_three_h100_nvl_two_bonded_by_twelve_nvlinks():
    matrix = topology.parse_topo_matrix((TOPO / "nvidia-nccl-1608-h100nvl-3gpu.txt").read_text())
    assert matrix["devices"] == ["GPU0", "GPU1", "GPU2"]
    assert matrix["links"]["GPU0"] == {"GPU1": "NV12", "GPU2": "SYS"}
    assert matrix["cpu_affinity"]["GPU2"] == "16-31,48-63" and matrix["numa_affinity"]["GPU2"] == "1"
    assert topology.nvlink_from_matrix(matrix) == [
        {"index": 0, "links": 12, "active": 12, "peers": [1], "source": "nvidia-smi topo -m"},
        {"index": 1, "links": 12, "active": 12, "peers": [0], "source": "nvidia-smi topo -m"},
        {"index": 2, "links": 0, "active": 0, "peers": [], "source": "nvidia-smi topo -m"},
    ]


def test_four_h100_with_nics_and_a_legend():
    matrix = topology.parse_topo_matrix((TOPO / "nvidia-nccl-1617-4xh100-nv6-nics.txt").read_text())
    assert matrix["devices"] == ["GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1", "NIC2", "NIC3"]
    assert matrix["links"]["GPU1"]["NIC1"] == "PIX" and matrix["links"]["NIC3"]["GPU3"] == "PIX"
    assert "NIC0" not in matrix["cpu_affinity"]  # NIC rows have no affinity columns
    assert [(n["index"], n["links"], n["peers"]) for n in topology.nvlink_from_matrix(matrix)] == [
        (0, 6, [1, 2, 3]), (1, 6, [0, 2, 3]), (2, 6, [0, 1, 3]), (3, 6, [0, 1, 2])]


def test_two_pcie_gpus_tab_separated():
    matrix = topology.parse_topo_matrix((TOPO / "noonghunna-club-3090-1229-2x5090-phb.txt").read_text())
    assert matrix["links"] == {"GPU0": {"GPU1": "PHB"}, "GPU1": {"GPU0": "PHB"}}
    assert matrix["cpu_affinity"] == {"GPU0": "0-63", "GPU1": "0-63"}
    assert [n["links"] for n in topology.nvlink_from_matrix(matrix)] == [0, 0]


def test_text_without_a_matrix_is_none():
    assert topology.parse_topo_matrix("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.") is None


# ----------------------------------------------------------------------------- parsers
def test_dpkg_status_gives_the_fabric_managers_upstream_version():
    text = (ROOTS / "fabric-fm-version-mismatch" / "var/lib/dpkg/status").read_text()
    assert topology.parse_dpkg_fabricmanager(text) == {"package": "nvidia-fabricmanager-535", "version": "535.129.03"}
    assert topology.parse_dpkg_fabricmanager("Package: zlib1g\nStatus: install ok installed\nVersion: 1:1.2.11\n") is None


def test_xid_lines():
    assert topology.parse_xid_lines("noise\nNVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus\n") == [
        {"bus": "PCI:0000:44:00", "xid": 79, "text": "GPU has fallen off the bus"}]


# ----------------------------------------------------------------------------- probes on roots
def probe_facts(root: str, env: dict[str, str] | None = None, seed: tuple[Fact, ...] = ()) -> Facts:
    host = Host.at_root(ROOTS / root, env)
    facts = Facts(seed)
    items = list(seed)
    for p in topology.PROBES:
        items += [f for f in p.func(host, facts) if isinstance(f, Fact)]
        facts = Facts(items)
    return facts


def test_ib_ports_with_state_rate_and_link_layer():
    facts = probe_facts("fabric-ib-xid")
    ports = {d["name"]: d["ports"][0] for d in facts["fabric.ib_devices"]}
    assert ports["mlx5_0"] == {"port": 1, "state": "ACTIVE", "phys_state": "LinkUp", "rate": "400 Gb/sec (4X NDR)", "rate_gbps": 400.0, "link_layer": "InfiniBand"}
    assert (ports["mlx5_1"]["state"], ports["mlx5_2"]["link_layer"]) == ("DOWN", "Ethernet")
    assert facts["gpus.xid_events"][0]["xid"] == 79 and facts.source("gpus.xid_events") == "/var/log/kern.log"


def test_a_root_cannot_say_whether_the_fabric_manager_runs():
    facts = probe_facts("fabric-fm-version-mismatch")
    assert [s["device_id"] for s in facts["fabric.nvswitches"]] == ["0x22a3"] * 4
    assert facts["fabric.fabricmanager"] == {"binary": "/usr/bin/nv-fabricmanager", "package": "nvidia-fabricmanager-535", "version": "535.129.03", "running": None}
    assert not facts.known("topology.nvlink") and not facts.known("topology.matrix")


def test_nvml_nvlink_and_health_fields_become_topology_facts():
    gpus = [{"index": i, "name": "NVIDIA H100 80GB HBM3", "bus_id": f"00000000:{18 + i}:00.0", "mig": False, "source": "nvml",
             "nvlink": {"links": 18, "active": 18 if i else 16},
             "health": {"retired_pages_pending": None, "remapped_rows_pending": i == 1, "remapping_failed": False}} for i in range(2)]
    facts = probe_facts("fabric-ib-xid", seed=(Fact("gpus.list", gpus, source="nvml"),))
    assert [(n["index"], n["links"], n["active"]) for n in facts["topology.nvlink"]] == [(0, 18, 16), (1, 18, 18)]
    (hit,) = judge(facts, None, [fabric.gpu_memory_repair_pending]).findings
    assert hit.message == "GPU 1 (00000000:19:00.0): remapped rows pending; reset the GPU before running jobs on it"


# ----------------------------------------------------------------------------- rules through check --root
def check(cli, root: str, *extra: str) -> dict:
    result = cli("check", "--root", str(ROOTS / root), *extra, "--json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def ids(report: dict) -> set[str]:
    return {f["id"] for f in report["findings"]}


def test_nvswitches_without_a_fabric_manager_is_an_error(cli, use_test_kb):
    report = check(cli, "fabric-nvswitch-no-fm")
    assert ids(report) == {"nvswitch-fabricmanager-not-running"}
    finding = next(f for f in report["findings"] if f["id"] == "nvswitch-fabricmanager-not-running")
    assert finding["severity"] == "error" and finding["message"].startswith("4 NVSwitch(es) on the PCI bus but no nvidia-fabricmanager installed")
    assert report["exit_code"] == 1


def test_a_fabric_manager_of_another_release(cli, use_test_kb):
    report = check(cli, "fabric-fm-version-mismatch")
    assert ids(report) == {"fabricmanager-driver-mismatch"}
    (f,) = [f for f in report["findings"] if f["id"] == "fabricmanager-driver-mismatch"]
    assert f["message"] == "nvidia-fabricmanager is 535.129.03 (nvidia-fabricmanager-535) but the driver is 580.95.05: they must be the same release"
    reasons = {n["rule"]: n["reason"] for n in report["not_checked"]}
    assert "no processes under --root" in reasons["nvswitch-fabricmanager-not-running"]


def test_xid_in_the_kernel_log_and_ib_disabled_in_the_env_file(cli, use_test_kb):
    root = ROOTS / "fabric-ib-xid"
    report = check(cli, "fabric-ib-xid", "--env-file", str(root / "env"))
    assert ids(report) == {"gpu-xid-errors", "nccl-transport-disabled"}
    assert ids(check(cli, "fabric-ib-xid")) == {"gpu-xid-errors"}  # without the env file, NCCL is left alone


def test_healthy_driver_root_has_no_fabric_findings(cli, use_test_kb):
    report = check(cli, "driver-ok")
    assert ids(report) == set()


def test_facts_saved_from_a_root_are_judged_the_same(cli, use_test_kb, tmp_path):
    saved = cli("facts", "--root", str(ROOTS / "fabric-nvswitch-no-fm"))
    assert saved.exit_code == 0
    path = tmp_path / "facts.json"
    path.write_text(saved.stdout)
    result = cli("check", "--facts", str(path), "--json")
    assert "nvswitch-fabricmanager-not-running" in ids(json.loads(result.stdout))


@pytest.mark.parametrize("mig, expect", [(True, ["gpu-mig-enabled"]), (False, [])])
def test_mig_mode_is_reported_as_information(mig, expect):
    facts = Facts([Fact("gpus.list", [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "mig": mig, "source": "nvml"}], source="nvml")])
    assert [f.id for f in judge(facts, None, [fabric.gpu_mig_enabled]).findings] == expect


def test_without_nvml_a_live_host_falls_back_to_topo_m():
    bin_dir = TOPO / "bin"
    host = Host.live_host(env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    gpus = [{"index": i, "name": "NVIDIA H100 80GB HBM3", "source": "nvidia-smi"} for i in range(4)]
    out = list(topology.nvlink_probe.func(host, Facts([Fact("gpus.list", gpus, source="nvidia-smi")])))
    facts = Facts([f for f in out if isinstance(f, Fact)])
    assert facts.source("topology.nvlink") == "nvidia-smi topo -m"
    assert [(n["index"], n["links"], n["peers"]) for n in facts["topology.nvlink"]][0] == (0, 6, [1, 2, 3])
    assert facts["topology.matrix"]["links"]["GPU0"]["NIC0"] == "PIX"
    with_nvml = [dict(g, source="nvml", nvlink={"links": 18, "active": 18}) for g in gpus]
    out = list(topology.nvlink_probe.func(host, Facts([Fact("gpus.list", with_nvml, source="nvml")])))
    facts = Facts([f for f in out if isinstance(f, Fact)])
    assert facts.source("topology.nvlink") == "nvml" and facts.why("topology.matrix") == "not needed: NVML answered for NVLink"
