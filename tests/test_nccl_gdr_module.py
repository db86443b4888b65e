"""nccl-gdr-module-missing: GPUDirect RDMA off because no NVIDIA peer-memory module
(nvidia-peermem, nv_peer_mem) is loaded beside InfiniBand/RoCE HCAs. The host side
(fwdoctor.probes.topology infiniband_probe's fabric.peermem, fwdoctor.rules.fabric) and the
report side (the errors.yaml row nccl-ib-gdr-no-module, fwdoctor.triage.nccl_gdr). Each report
text is quoted from the public thread named above it; mangled copies are what pasting does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fwdoctor.engine import judge
from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts
from fwdoctor.probes.topology import infiniband_probe, peermem_fact
from fwdoctor.rules import fabric
import pasting

ROOTS = Path(__file__).parent / "roots"
ID = "nccl-gdr-module-missing"
MLX5_0 = [{"name": "mlx5_0", "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand"}]}]


# ------------------------------------------------------------------ host side: the probe
def test_no_peer_memory_module_under_a_root_with_sysfs():
    fact = peermem_fact(Host.at_root(ROOTS / "fabric-gdr-peermem-missing"))
    assert fact.value == {"loaded": False, "found": None}


def test_nvidia_peermem_is_found_where_nccl_looks_for_it():
    fact = peermem_fact(Host.at_root(ROOTS / "fabric-gdr-peermem-loaded"))
    assert fact.value == {"loaded": True, "found": "/sys/module/nvidia_peermem/version"}


def test_the_legacy_nv_peer_mem_counts_too(tmp_path):
    (tmp_path / "sys/kernel/mm/memory_peers/nv_mem").mkdir(parents=True)
    (tmp_path / "sys/kernel/mm/memory_peers/nv_mem/version").write_text("1.3-0\n")
    assert peermem_fact(Host.at_root(tmp_path)).value == {"loaded": True, "found": "/sys/kernel/mm/memory_peers/nv_mem/version"}


def test_a_tree_without_sysfs_cannot_say(tmp_path):
    (tmp_path / "etc").mkdir()
    fact = peermem_fact(Host.at_root(tmp_path))
    assert not fact.is_known and "no /sys/module" in str(Facts([fact]).why("fabric.peermem"))


def test_the_infiniband_probe_provides_it():
    keys = {f.key for f in infiniband_probe.func(Host.at_root(ROOTS / "fabric-gdr-peermem-missing"), Facts([]))}
    assert keys == {"fabric.ib_devices", "fabric.peermem"} and "fabric.peermem" in infiniband_probe.provides


# ------------------------------------------------------------------ host side: the rule
def host(**changes) -> Facts:
    values = {"fabric.ib_devices": MLX5_0, "fabric.peermem": {"loaded": False, "found": None}, "driver.loaded": True,
              "system.kernel": "5.15.0-119-generic", "driver.module_flavor": "proprietary"}
    values.update(changes)
    return Facts([Fact(k, v, source="test") for k, v in values.items()])


def judged(facts: Facts, kb):
    report = judge(facts, kb, [fabric.nccl_gdr_module_missing])
    return {f.id: f for f in report.findings}, {n.rule: n.reason for n in report.not_checked}


def test_an_hca_without_peermem_on_the_proprietary_module_is_a_warning(test_kb):
    found, _ = judged(host(), test_kb)
    hit = found[ID]
    assert hit.severity.value == "warning" and hit.code == "FWD718"
    assert "mlx5_0:1" in hit.message and "proprietary" in hit.message and "DMA-BUF cannot stand in" in hit.message
    assert hit.fix.commands[0].startswith("sudo modprobe nvidia-peermem")
    assert any("modules-load.d" in c for c in hit.fix.commands)


def test_a_kernel_before_5_12_rules_dma_buf_out(test_kb):
    found, _ = judged(host(**{"system.kernel": "5.4.0-182-generic", "driver.module_flavor": "open"}), test_kb)
    assert "older than 5.12" in found[ID].message


def test_what_the_facts_do_not_say_is_said_not_guessed(test_kb):
    found, _ = judged(host(**{"system.kernel": None, "driver.module_flavor": "open"}), test_kb)
    assert "is unknown: the kernel release not known" in found[ID].message


@pytest.mark.parametrize("changes", [
    {"fabric.peermem": {"loaded": True, "found": "/sys/module/nvidia_peermem/version"}},  # loaded
    {"system.kernel": "6.8.0-45-generic", "driver.module_flavor": "open"},  # DMA-BUF stands in
    {"fabric.ib_devices": []},  # no HCA
    {"fabric.ib_devices": [{"name": "mlx5_1", "ports": [{"port": 1, "state": "DOWN"}]}]},  # no ACTIVE port: NCCL uses none
    {"driver.loaded": False},  # no NVIDIA driver: no GPU memory to register
])
def test_nothing_to_say(test_kb, changes):
    found, skipped = judged(host(**changes), test_kb)
    assert ID not in found and ID not in skipped


def test_kernel_versions_compare_as_versions():
    assert fabric.dmabuf_possible("5.12.0-1-generic", "open")[0] is True
    assert fabric.dmabuf_possible("5.9.16", "open")[0] is False  # 5.9 < 5.12, though "5.9" > "5.12" as text
    assert fabric.dmabuf_possible("6.8.0", None)[0] is None


@pytest.mark.parametrize("root, fires", [("fabric-gdr-peermem-missing", True), ("fabric-gdr-peermem-loaded", False), ("fabric-gdr-no-hca", False)])
def test_fixture_roots(cli, use_test_kb, root, fires):
    report = json.loads(cli("check", "--root", str(ROOTS / root), "--json").stdout)
    found = {f["id"]: f for f in report["findings"]}
    assert (ID in found) is fires and ID not in {n["rule"] for n in report["not_checked"]}
    if fires:
        assert found[ID]["severity"] == "warning" and "mlx5_0:1" in found[ID]["message"]


# ------------------------------------------------------------------ report side
def triaged(cli, tmp_path, text: str) -> dict:
    path = tmp_path / "report.md"
    path.write_bytes(text.encode("utf-8"))
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f for f in doc["findings"]}


# https://github.com/NVIDIA/nccl/issues/899 (two nodes, NCCL 2.1x: every HCA "(no module)", then no GDRDMA)
NO_MODULE = """\
21346d5cefce:5325:5337 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1' (no module)
21346d5cefce:5325:5337 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 2 'mlx5_2' (no module)
21346d5cefce:5325:5337 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 3 'mlx5_3' (no module)
21346d5cefce:5325:5338 [0] NCCL INFO Channel 00 : 0[1a000] -> 1[1a000] [receive] via NET/IB/0
6a5a91752e39:74352:74372 [0] NCCL INFO Channel 00 : 1[1a000] -> 0[1a000] [receive] via NET/IB/0
"""


@pytest.mark.parametrize("text", pasting.as_pasted(NO_MODULE))
def test_nccl_saying_no_module_is_read_in_every_pasting_form(cli, use_test_kb, tmp_path, text):
    hit = triaged(cli, tmp_path, text)[ID]
    assert hit["severity"] == "warning" and "mlx5_1, mlx5_2, mlx5_3" in hit["message"]
    assert hit["fix"]["commands"][0].startswith("sudo modprobe nvidia-peermem")


# The nccl-rdma-sharp plugin before Mellanox/nccl-rdma-sharp-plugins#104 printed "(no module)"
# and, where DMA-BUF works, "(DMABUF) enabled" for the same HCA (its p2p_plugin.c format strings).
WITH_DMABUF = ("node1:100:200 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n"
               "node1:100:200 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0\n")


@pytest.mark.parametrize("text", [
    *pasting.as_pasted(WITH_DMABUF),
    # https://github.com/NVIDIA/nccl/issues/1537: NCCL >= 2.13 gives no reason; other causes give the same line
    "hostname1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n",
    # GDR on: "(nvidia-peermem) enabled" and GDRDMA channels (the plugin's and NCCL's words)
    "NCCL INFO NET/IB : GPU Direct RDMA (nvidia-peermem) enabled for HCA 0 'mlx5_bond_0\n"
    "NCCL INFO Channel 03/0 : 11[3] -> 3[3] [send] via NET/IB/3/GDRDMA\n",
    # a single node: no NET/IB at all
    "node:1:2 [0] NCCL INFO Channel 00/02 :    0   1\nnode:1:2 [0] NCCL INFO Channel 00 : 0[1a000] -> 1[1b000] via P2P/IPC\n",
    # the socket transport's line names an Ethernet interface, not an HCA, and no module
    "NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'\n",
])
def test_look_alikes_stay_silent(cli, use_test_kb, tmp_path, text):
    assert ID not in triaged(cli, tmp_path, text)
