"""NCCL_DEBUG=INFO parsing on recorded logs (tests/data/nccl-logs, README there), the
all-reduce's NCCL log plumbing, and the transport rules judged on a parsed log."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fwdoctor.engine import judge
from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts
from fwdoctor.probes import topology
from fwdoctor.rules import fabric
from fwdoctor.smoke import allreduce as ar
from fwdoctor.smoke import nccl_log, transport
from fwdoctor.smoke.result import FAIL, PASS

LOGS = Path(__file__).resolve().parent / "data" / "nccl-logs"
ROOTS = Path(__file__).resolve().parent / "roots"


def summary(name: str) -> dict:
    return nccl_log.summarize([(LOGS / name).read_text()])


def test_every_recorded_log_has_provenance_and_parses():
    readme = (LOGS / "README.md").read_text()
    for path in sorted(LOGS.glob("*.log")):
        assert path.name in readme, f"{path.name} has no provenance line"
        s = nccl_log.summarize([path.read_text()])
        assert s["lines"] > 0, path.name


def test_two_nodes_over_infiniband_with_gpudirect_and_cumem_inside():
    s = summary("nvidia-nccl-1189-h20-2node-ib-cumem.log")
    assert s["transports"] == {"NET/IB": 9, "P2P/CUMEM": 5}
    ib = [p for p in s["peers"] if p["transport"] == "NET/IB"]
    assert {p["net_device"] for p in ib} == {2, 3} and all(p["gdrdma"] for p in ib)
    peer = next(p for p in ib if (p["from"], p["to"]) == (1, 3))
    assert peer["channels"] == [0, 2, 4, 6] and peer["directions"] == ["receive"] and peer["via"] == ["NET/IB/2/GDRDMA"]
    assert (s["nranks"], s["nnodes"]) == (4, 2)
    assert s["rings"]["2"] == [[2, 0, 1]]  # this release prints each rank's neighbours
    assert s["trees"][0]["channels"][1] == "0/3/-1->1->-1"
    assert "NET/IB x9 (GDRDMA)" in nccl_log.describe(s)


def test_p2p_ipc_inside_the_node_and_sockets_between_nodes():
    s = summary("nvidia-nccl-952-2node-socket-ipc.log")
    assert s["transports"] == {"P2P/IPC": 14, "NET/Socket": 2}
    sock = next(p for p in s["peers"] if p["transport"] == "NET/Socket")
    assert (sock["from"], sock["to"], sock["net_device"], sock["gdrdma"]) == (15, 6, 3, False)
    assert sock["from_dev"] == "7" and sock["directions"] == ["send"]
    ipc = next(p for p in s["peers"] if p["transport"] == "P2P/IPC" and p["from"] == 8)
    assert ipc["channels"] == [1, 2, 3, 4, 5, 6, 7] and ipc["via"] == ["P2P/IPC/read"]


def test_direct_pointer_shm_and_the_ring_order():
    s = summary("nvidia-nccl-1027-8gpu-p2p-shm.log")
    assert s["transports"] == {"P2P/direct": 6, "SHM": 1}
    assert s["rings"] == {"0": [0, 1, 2, 3, 4, 5, 6, 7], "1": [0, 1, 2, 3, 4, 5, 6, 7]}
    shm = next(p for p in s["peers"] if p["transport"] == "SHM")
    assert (shm["from"], shm["to"], shm["via"]) == (3, 4, ["SHM/direct/direct"])


def test_roce_devices_and_the_bare_version_line():
    s = summary("nvidia-nccl-tests-185-h100-roce.log")
    assert (s["version"], s["cuda"], s["network"]) == ("2.19.3", "12.3", "IB")
    assert s["ib_devices"] == [{"name": "mlx5_10", "port": 1, "link": "RoCE"}, {"name": "mlx5_11", "port": 1, "link": "RoCE"}]
    assert s["hosts"] == ["dgxh100-3", "dgxh100-4"]


def test_a_bonded_ib_plugin_list_and_its_transport_name():
    s = summary("nvidia-nccl-tests-373-ibext-roce-bonded.log")
    assert [d["name"] for d in s["ib_devices"]] == ["mlx5_2", "mlx5_3", "mlx5_0", "mlx5_1"]
    assert s["network"] == "IBext_v8" and s["transports"] == {"NET/IBext_v8": 3}
    assert s["env"] == {"NCCL_P2P_LEVEL": "LOC"} and (s["nranks"], s["nnodes"]) == (3, 3)


def test_socket_network_its_interface_and_the_env_nccl_reports():
    s = summary("nvidia-nccl-676-2node-socket.log")
    assert (s["version"], s["network"]) == ("2.11.4", "Socket")
    assert s["socket_ifaces"] == [{"index": 0, "iface": "enp225s0f1", "address": "10.10.10.2"}]
    assert s["env"] == {"NCCL_SOCKET_IFNAME": "en"}
    off = summary("nvidia-nccl-1053-ib-disabled-lo.log")
    assert off["env"]["NCCL_IB_DISABLE"] == "1" and off["socket_ifaces"][0]["iface"] == "lo"


def test_the_2_2x_version_line_and_no_ib_device():
    s = summary("nvidia-nccl-1637-rtx5090-p2p-disabled.log")
    assert (s["version"], s["cuda"], s["ib_none"], s["ib_devices"]) == ("2.25.1", "12.2", True, [])
    assert [i["iface"] for i in s["socket_ifaces"]] == ["eno1", "CloudflareWARP"]


def test_rings_and_trees_of_two_nodes_and_the_old_ring_connection_form():
    s = summary("nvidia-nccl-676-2node-rings-trees.log")
    assert s["rings"] == {"0": [0, 1], "1": [0, 1]}
    assert [t["channels"] for t in s["trees"]] == [{0: "1/-1/-1->0->-1", 1: "-1/-1/-1->0->1"}, {0: "-1/-1/-1->1->0", 1: "0/-1/-1->1->-1"}]
    old = summary("nvidia-nccl-226-multinode-socket-old.log")
    assert old["version"] == "2.4.7" and old["transports"] == {"NET/Socket": 3}
    assert {(p["from"], p["to"]) for p in old["peers"]} == {(30, 28), (46, 44), (48, 32)}


def test_ranks_that_loaded_different_versions_are_reported_not_merged():
    a = (LOGS / "nvidia-nccl-676-2node-socket.log").read_text()
    b = (LOGS / "nvidia-nccl-tests-185-h100-roce.log").read_text()
    s = nccl_log.summarize([a, b])
    assert s["versions"] == ["2.11.4", "2.19.3"]


def test_nothing_captured_says_so():
    assert nccl_log.describe(nccl_log.summarize([])) == "no NCCL_DEBUG output captured"


def test_classify_names_the_transports():
    assert nccl_log.classify("P2P/CUMEM/read") == {"transport": "P2P/CUMEM", "net_device": None, "gdrdma": False, "read": True}
    assert nccl_log.classify("NET/IB/5/GDRDMA")["gdrdma"] is True
    assert nccl_log.classify("P2P/direct pointer/read")["transport"] == "P2P/direct"


# ----------------------------------------------------------------------------- the all-reduce's plumbing
def test_the_nccl_run_asks_for_info_logs_one_file_per_rank(tmp_path):
    env = ar.nccl_debug_env({"NCCL_DEBUG": "WARN", "NCCL_DEBUG_SUBSYS": "ALL", "PATH": "/usr/bin"}, str(tmp_path))
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_SUBSYS"] == "ALL"  # the user's subsystem list is kept
    assert env["NCCL_DEBUG_FILE"] == os.path.join(str(tmp_path), "nccl-%h-%p.log")
    assert ar.nccl_debug_env({}, str(tmp_path))["NCCL_DEBUG_SUBSYS"] == "INIT,ENV,NET"


def test_rank_files_named_as_nccl_names_them_are_read_and_summarized(tmp_path):
    # What NCCL_DEBUG_FILE=DIR/nccl-%h-%p.log leaves behind: one file per rank process.
    (tmp_path / "nccl-H20-GPU-05-1789224.log").write_text((LOGS / "nvidia-nccl-1189-h20-2node-ib-cumem.log").read_text())
    (tmp_path / "nccl-dgxh100-4-460770.log").write_text((LOGS / "nvidia-nccl-tests-185-h100-roce.log").read_text())
    (tmp_path / "result.json").write_text("{}")
    logs = ar.read_rank_logs(str(tmp_path))
    assert len(logs) == 2
    passed = ar.SmokeResult("allreduce", PASS, "nccl, 4 ranks (1 node): 3 sizes exact", details={"backend": "nccl"})
    out = ar.with_nccl_log(passed, logs)
    assert out.details["nccl"]["rank_logs"] == 2 and out.details["nccl"]["version"] == "2.19.3"
    assert "NET/IB x9 (GDRDMA)" in out.message and out.message.startswith("nccl, 4 ranks")
    failed = ar.with_nccl_log(ar.SmokeResult("allreduce", FAIL, "rank 0 failed"), [])
    assert failed.message == "rank 0 failed" and failed.details["nccl_transport"].startswith("no NCCL_DEBUG output captured")


@pytest.mark.requires_no_gpu  # a no-GPU path: skipped where a GPU answers
@pytest.mark.slow  # torchrun with two ranks importing torch: ~20 s on two cores
def test_an_nccl_run_without_a_gpu_fails_and_says_no_nccl_log_was_captured():
    """The real launch path with backend nccl on this CPU-only machine: torchrun starts,
    every rank refuses (no GPU), NCCL never initialises, and the result says so."""
    from helpers import torch_python

    python = torch_python()
    if python is None:
        pytest.skip("no interpreter with torch")
    opts = ar.AllreduceOptions(python=python, backend="nccl", nproc=2, max_bytes=64, timeout=120)
    result = ar.run(opts, planned=ar.Plan("nccl", 2, gpu_count=2))
    if result.status == PASS:
        pytest.skip("this host has GPUs")
    assert result.status == FAIL
    assert result.details["nccl"]["rank_logs"] == 0
    assert result.details["nccl_transport"].startswith("no NCCL_DEBUG output captured")


# ----------------------------------------------------------------------------- rules on a parsed log
def _host_facts(root: str, env: dict[str, str] | None = None) -> Facts:
    host = Host.at_root(ROOTS / root, env)
    items = []
    for p in topology.PROBES:
        items += [f for f in p.func(host, Facts()) if isinstance(f, Fact)]
    return Facts(items)


def test_sockets_between_nodes_while_an_ib_port_is_active_is_reported(test_kb):
    facts = _host_facts("fabric-ib-xid")
    judged = transport.judge_run(facts, summary("nvidia-nccl-952-2node-socket-ipc.log"), {}, test_kb)
    ids = [f["id"] for f in judged["findings"]]
    assert ids == ["nccl-socket-with-ib"]
    message = judged["findings"][0]["message"]
    assert "mlx5_0:1 (InfiniBand, 400 Gb/sec (4X NDR))" in message and "mlx5_2:1 (Ethernet" in message and "mlx5_1" not in message


def test_ib_traffic_on_the_same_host_is_healthy(test_kb):
    facts = _host_facts("fabric-ib-xid")
    judged = transport.judge_run(facts, summary("nvidia-nccl-1189-h20-2node-ib-cumem.log"), {}, test_kb)
    assert judged["findings"] == []


def test_nccl_saying_ib_disabled_fires_even_when_the_env_file_is_clean(test_kb):
    facts = _host_facts("fabric-ib-xid")
    judged = transport.judge_run(facts, summary("nvidia-nccl-1053-ib-disabled-lo.log"), {"NCCL_DEBUG": "INFO"}, test_kb)
    assert [f["id"] for f in judged["findings"]] == ["nccl-transport-disabled"]
    assert judged["findings"][0]["evidence"]["nccl.env"] == {"NCCL_IB_DISABLE": "1"}


def _facts(**values) -> Facts:
    return Facts([Fact(k.replace("__", "."), v, source="test") for k, v in values.items()])


def test_shm_only_between_nvlinked_gpus_is_p2p_disabled(test_kb):
    nvlink = [{"index": i, "links": 18, "active": 18, "peers": None, "source": "nvml"} for i in range(8)]
    facts = _facts(topology__nvlink=nvlink, nccl__env={}, nccl__run=summary("nvidia-nccl-1817-8gpu-shm.log"))
    report = judge(facts, test_kb, [fabric.nccl_p2p_disabled_nvlink])
    (finding,) = report.findings
    assert finding.id == "nccl-p2p-disabled-nvlink" and "via SHM (11 channel(s)), never P2P" in finding.message
    pcie_only = _facts(topology__nvlink=[{"index": 0, "links": 0, "active": 0, "peers": [], "source": "nvml"}], nccl__env={"NCCL_P2P_DISABLE": "1"})
    assert judge(pcie_only, test_kb, [fabric.nccl_p2p_disabled_nvlink]).findings == []


def test_the_loaded_nccl_against_torchs_pin(test_kb):
    run = summary("nvidia-nccl-tests-185-h100-roce.log")
    pinned = _facts(nccl__run=run, **{"torch__requires": {"nvidia-nccl-cu12": "==2.21.5", "nvidia-cudnn-cu12": "==9.1.0.70"}})
    (finding,) = judge(pinned, test_kb, [fabric.nccl_runtime_not_torch]).findings
    assert finding.message == "the all-reduce loaded NCCL 2.19.3 but torch requires nvidia-nccl-cu12==2.21.5"
    same = _facts(nccl__run=run, torch__requires={"nvidia-nccl-cu12": "==2.19.3"})
    assert judge(same, test_kb, [fabric.nccl_runtime_not_torch]).findings == []
    unpinned = judge(_facts(nccl__run=run, torch__requires={}), test_kb, [fabric.nccl_runtime_not_torch])
    assert unpinned.findings == [] and "pins no nvidia-nccl" in unpinned.not_checked[0].reason
