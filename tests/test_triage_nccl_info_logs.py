"""Issue 26, the nccl-fabric group: what an NCCL_DEBUG=INFO log says before any WARN, read
from a report into the facts `smoke allreduce` reads from its ranks' logs (nccl.run: the
network NCCL chose, each peer's transport), beside the listings NCCL's maintainers ask for
next to it: `nvidia-smi topo -m` / `nvidia-smi nvlink -s` (topology.nvlink) and ibv_devinfo /
ibstat / ibstatus (fabric.ib_devices). The run rules (nccl-p2p-disabled-nvlink,
nccl-socket-with-ib) then judge a pasted log as they judge `smoke allreduce`'s.

Each text is quoted from the public thread named above it; a test that puts two together says
so. Each is also read as pasting leaves it (tests/pasting.py), and its look-alikes are not."""

from __future__ import annotations

import pytest

from fwdoctor.smoke import nccl_log
from fwdoctor.triage import ib_devices, nccl_debug, nvidia_topo, triage
from pasting import forms
from triage_helpers import facts_of, findings

# https://github.com/NVIDIA/nccl/issues/451: the host's ibstatus, then NCCL in a container
# without the device (the thread: pass /dev/infiniband into it). NCCL's lines as pasted, the
# "host:pid:tid [dev]" cut off.
NCCL_451 = """\
Infiniband device 'mlx5_bond_0' port 1 status:
        default gid:     fe80:0000:0000:0000:0e42:a1ff:fe9a:6766
        base lid:        0x0
        sm lid:          0x0
        state:           4: ACTIVE
        phys state:      5: LinkUp
        rate:            25 Gb/sec (1X EDR)
        link_layer:      Ethernet

and I start the program inside the docker  container with
```
export NCCL_DEBUG=info
export NCCL_IB_DISABLE=0
export NCCL_SOCKET_IFNAME=bond0
deepspeed train.py xxxxx
```
but I got the following nccl information:

NCCL INFO NCCL_IB_DISABLE set by environment to 0.
misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed
transport/net_ib.cc:148 NCCL WARN NET/IB : Unable to open device mlx5_bond_0
NCCL INFO NET/IB : No device found.
NCCL INFO NET/Socket : Using [0]bond0:200.1.93.2<0>
NCCL INFO Using network Socket
NCCL INFO Bootstrap : Using [0]bond0:200.1.93.2<0>
NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
NCCL INFO NCCL_IB_DISABLE set by environment to 0.
"""

# https://github.com/NVIDIA/nccl/issues/941 ("No device found in container", NGC pytorch:23.04)
NCCL_941 = """\
05-06-76-200:7839:7839 [0] NCCL INFO Bootstrap : Using ens5f0np0:10.220.178.201<0>
05-06-76-200:7839:7839 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v5)
05-06-76-200:7839:7839 [0] NCCL INFO cudaDriverVersion 12010
NCCL version 2.17.1+cuda12.1
05-06-76-200:7839:7911 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so
05-06-76-200:7839:7911 [0] NCCL INFO P2P plugin IBext
05-06-76-200:7839:7911 [0] NCCL INFO NET/IB : No device found.
05-06-76-200:7839:7911 [0] NCCL INFO NET/IB : No device found.
05-06-76-200:7839:7911 [0] NCCL INFO NET/Socket : Using [0]ens5f0np0:10.220.178.201<0> [1]ens3f0np0:192.17.3.33<0> [2]ens8f1np1:10.220.178.201<0> [3]bond0:10.220.178.201<0> [4]virbr0:192.168.122.1<0>
05-06-76-200:7839:7911 [0] NCCL INFO Using network Socket
"""

# https://github.com/NVIDIA/nccl/issues/1591: the host's ibstat (one of its CAs)
IBSTAT_1591 = """\
ibstat
...
CA 'mlx5_5'
        CA type: MT4129
        Number of ports: 1
        Firmware version: 28.41.1000
        Hardware version: 0
        Node GUID: 0x9c63c003005548ae
        System image GUID: 0x9c63c003005548ae
        Port 1:
                State: Active
                Physical state: LinkUp
                Rate: 400
                Base lid: 987
                LMC: 0
                SM lid: 359
                Capability mask: 0xa751e848
                Port GUID: 0x9c63c003005548ae
                Link layer: InfiniBand
"""

# https://github.com/deepseek-ai/DeepEP/issues/60: ibv_devinfo in a container, the port down
IBV_DEVINFO_DOWN = """\
root@f51fec68bf55:~# ibv_devinfo
hca_id: mlx5_0
        transport:                      InfiniBand (0)
        fw_ver:                         28.39.2048
        node_guid:                      58a2:e103:002a:09b8
        sys_image_guid:                 58a2:e103:002a:09b8
        vendor_id:                      0x02c9
        vendor_part_id:                 4129
        hw_ver:                         0x0
        board_id:                       MT_0000000838
        phys_port_cnt:                  1
                port:   1
                        state:                  PORT_DOWN (1)
                        max_mtu:                4096 (5)
                        active_mtu:             4096 (5)
                        sm_lid:                 0
                        port_lid:               65535
                        port_lmc:               0x00
                        link_layer:             InfiniBand
"""

# https://github.com/NVIDIA/nccl/issues/1925: NCCL in a pod that has its HCA: it uses IB
USING_IB_1925 = """\
nccl-sleep-c7d759db6-2bp29:2620971:2620971 [3] NCCL INFO NCCL_IB_DISABLE set by environment to 0.
nccl-sleep-c7d759db6-2bp29:2620971:2620971 [3] NCCL INFO NCCL_IB_HCA set to mlx5_0
nccl-sleep-c7d759db6-2bp29:2620971:2620971 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:172.25.30.42<0>
nccl-sleep-c7d759db6-2bp29:2620971:2620971 [3] NCCL INFO Initialized NET plugin IB
nccl-sleep-c7d759db6-2bp29:2620971:2620971 [3] NCCL INFO Assigned NET plugin IB to comm
nccl-sleep-c7d759db6-2bp29:2620971:2620971 [3] NCCL INFO Using network IB
"""

# https://github.com/NVIDIA/nccl/issues/1608: an H100 NVL pair on NVLink, and the run's NCCL_*
# variables (NCCL_P2P_DISABLE=1 among them)
NCCL_1608 = """\
Settings that lead to error 3:
(myenv) exx@sn4622123662:~/Desktop/fine-tune$ printenv | grep ^NCCL
NCCL_LEGACY_CUDA_REGISTER=0
NCCL_P2P_DISABLE=1
NCCL_SOCKET_IFNAME=eth0
NCCL_P2P_LEVEL=NVL
NCCL_DEBUG=INFO
NCCL_SET_STACK_SIZE=1
NCCL_CUMEM_ENABLE=0

### GPU Topology
```
nvidia-smi topo -m
        GPU0    GPU1    GPU2    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV12    SYS     0-15,32-47      0               N/A
GPU1    NV12     X      SYS     0-15,32-47      0               N/A
GPU2    SYS     SYS      X      16-31,48-63     1               N/A
```
"""

# https://github.com/NVIDIA/nccl/issues/1608: `nvidia-smi nvlink -s` of the same H100 NVL
# (six of its 18 links print <inactive> on a healthy NVL bridge)
NVLINK_S_1608 = """\
nvidia-smi nvlink -s
GPU 0: NVIDIA H100 NVL (UUID: GPU-5895e020-7d50-0c08-6ec8-e543a425c76c)
         Link 0: 26.562 GB/s
         Link 1: 26.562 GB/s
         Link 2: 26.562 GB/s
         Link 3: 26.562 GB/s
         Link 4: <inactive>
         Link 5: <inactive>
         Link 6: 26.562 GB/s
         Link 7: 26.562 GB/s
         Link 8: 26.562 GB/s
         Link 9: 26.562 GB/s
         Link 10: <inactive>
         Link 11: <inactive>
         Link 12: 26.562 GB/s
         Link 13: 26.562 GB/s
         Link 14: 26.562 GB/s
         Link 15: 26.562 GB/s
         Link 16: <inactive>
         Link 17: <inactive>
"""

# https://github.com/NVIDIA/nccl-tests/issues/228: A100 SXM4 NVLinks (the maintainer: the run's
# NCCL_P2P_LEVEL=LOC forced P2P off; unsetting it took busbw to 220 GB/s)
NVLINK_S_228 = """\
```
GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-ff8a40d4-abc6-08d1-f939-15848b5d4e05)
\t Link 0: 25 GB/s
\t Link 1: 25 GB/s
\t Link 2: 25 GB/s
\t Link 3: 25 GB/s
\t Link 4: 25 GB/s
\t Link 5: 25 GB/s
\t Link 6: 25 GB/s
\t Link 7: 25 GB/s
\t Link 8: 25 GB/s
\t Link 9: 25 GB/s
\t Link 10: 25 GB/s
\t Link 11: 25 GB/s
GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-0c512562-871f-8257-6187-b5ae1b986d5e)
\t Link 0: 25 GB/s
\t Link 1: 25 GB/s
\t Link 2: 25 GB/s
\t Link 3: 25 GB/s
\t Link 4: 25 GB/s
\t Link 5: 25 GB/s
\t Link 6: 25 GB/s
\t Link 7: 25 GB/s
\t Link 8: 25 GB/s
\t Link 9: 25 GB/s
\t Link 10: 25 GB/s
\t Link 11: 25 GB/s
```
"""

# https://github.com/rwth-i6/returnn/issues/1469: NCCL's own line for NCCL_P2P_LEVEL=LOC
# (src/graph/paths.cc prints the level's name)
P2P_LEVEL_LOC = "ncg12:252606:253206 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to LOC\n"

# https://github.com/NVIDIA/nccl/issues/933: 8 GPUs on NVSwitch (NV8) beside 9 NICs (first rows)
TOPO_933 = """\
        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    NIC0    NIC1    NIC2    NIC3    NIC4    NIC5    NIC6    NIC7    NIC8    CPU Affinity    NUMA Affinity
GPU0     X      NV8     NV8     NV8     NV8     NV8     NV8     NV8     NODE    SYS     PIX     SYS     NODE    SYS     NODE    SYS     NODE    0-47,96-143     0
GPU1    NV8      X      NV8     NV8     NV8     NV8     NV8     NV8     NODE    SYS     NODE    SYS     PIX     SYS     NODE    SYS     NODE    0-47,96-143     0
GPU2    NV8     NV8      X      NV8     NV8     NV8     NV8     NV8     NODE    SYS     NODE    SYS     NODE    SYS     PIX     SYS     NODE    0-47,96-143     0
"""

# https://github.com/noonghunna/club-3090/issues/1229: two RTX 5090 on PCIe (tabs), then
# `nvidia-smi topo -p2p rw`, the same shape with CUDA's verdicts in it
TOPO_PCIE_AND_P2P = """\
\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tPHB\t0-63\t0\t\tN/A
GPU1\tPHB\t X \t0-63\t0\t\tN/A

Legend:

  X    = Self
"""
P2P_MATRIX = """\
 \tGPU0\tGPU1\t
 GPU0\tX\tGNS\t
 GPU1\tGNS\tX\t
"""

# https://github.com/NVIDIA/nccl/issues/1190: NCCL 2.5-2.12 named SHM "direct shared memory"
# (src/transport/shm.cc); the lines pasted without their prefix
NCCL_1190 = """\
NCCL INFO Bootstrap : Using lo:127.0.0.1<0>
NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]
NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>
NCCL INFO Using network Socket
NCCL INFO Trees [0] -1/-1/-1->1->0 [1] -1/-1/-1->1->0
NCCL INFO Channel 00 : 1[89000] -> 0[3d000] via direct shared memory
NCCL INFO Channel 01 : 1[89000] -> 0[3d000] via direct shared memory
NCCL INFO Connected all rings
"""

# Constructed in NCCL 2.18.3+'s format (src/transport/shm.cc: "Channel %02d : %d[%d] -> %d[%d]
# via SHM/%s/%s", the brackets each rank's NVML index): SHM between GPU1 and GPU2
SHM_GPU1_GPU2 = "node:1:2 [1] NCCL INFO Channel 00 : 0[1] -> 1[2] via SHM/direct/direct\n"


# ----------------------------------------------------------------------------- readers
def test_ibstatus_ibstat_and_ibv_devinfo_give_each_port_s_state():
    assert facts_of(ib_devices.find, NCCL_451)["fabric.ib_devices"] == [
        {"name": "mlx5_bond_0", "ports": [{"port": 1, "state": "ACTIVE", "phys_state": None, "rate": "25 Gb/sec (1X EDR)",
                                           "rate_gbps": 25.0, "link_layer": "Ethernet"}]}]
    [ca] = facts_of(ib_devices.find, IBSTAT_1591)["fabric.ib_devices"]
    assert (ca["name"], ca["ports"][0]["state"], ca["ports"][0]["link_layer"], ca["ports"][0]["rate_gbps"]) == ("mlx5_5", "ACTIVE", "InfiniBand", 400.0)
    [hca] = facts_of(ib_devices.find, IBV_DEVINFO_DOWN)["fabric.ib_devices"]
    assert (hca["name"], hca["ports"][0]["state"], hca["ports"][0]["link_layer"]) == ("mlx5_0", "DOWN", "InfiniBand")
    for text in (NCCL_451, IBSTAT_1591, IBV_DEVINFO_DOWN):
        for pasted in forms(text):
            assert facts_of(ib_devices.find, pasted)["fabric.ib_devices"] == facts_of(ib_devices.find, text)["fabric.ib_devices"]


def test_topo_matrix_and_nvlink_status_give_the_nvlinked_gpus():
    nv = facts_of(nvidia_topo.find, NCCL_1608)["topology.nvlink"]
    assert [(g["index"], g["active"], g["peers"]) for g in nv] == [(0, 12, [1]), (1, 12, [0]), (2, 0, [])]
    nv = facts_of(nvidia_topo.find, TOPO_933)["topology.nvlink"]
    assert [(g["index"], g["active"], g["peers"]) for g in nv] == [(0, 8, [1, 2, 3, 4, 5, 6, 7]), (1, 8, [0, 2, 3, 4, 5, 6, 7]), (2, 8, [0, 1, 3, 4, 5, 6, 7])]
    nv = facts_of(nvidia_topo.find, NVLINK_S_228)["topology.nvlink"]
    assert [(g["index"], g["links"], g["active"]) for g in nv] == [(0, 12, 12), (1, 12, 12)]
    # a healthy H100 NVL: the links its bridge does not wire are not links down
    assert [(g["index"], g["links"], g["active"]) for g in facts_of(nvidia_topo.find, NVLINK_S_1608)["topology.nvlink"]] == [(0, 12, 12)]
    for text in (NCCL_1608, TOPO_933, NVLINK_S_228):
        for pasted in forms(text):
            assert facts_of(nvidia_topo.find, pasted)["topology.nvlink"] == facts_of(nvidia_topo.find, text)["topology.nvlink"]


def test_a_matrix_beside_nvlink_status_gives_each_gpu_once():
    # NVIDIA/nccl#1608 pasted both: the matrix's rows (with their peers) stand
    nv = facts_of(nvidia_topo.find, NCCL_1608 + NVLINK_S_1608)["topology.nvlink"]
    assert [(g["index"], g["peers"]) for g in nv] == [(0, [1]), (1, [0]), (2, [])]


def test_a_pcie_matrix_shows_no_nvlink_and_a_p2p_matrix_is_not_a_topology():
    assert [g["active"] for g in facts_of(nvidia_topo.find, TOPO_PCIE_AND_P2P)["topology.nvlink"]] == [0, 0]
    assert facts_of(nvidia_topo.find, P2P_MATRIX) == {}


def test_a_pasted_log_gives_the_network_nccl_chose_and_each_peer_s_transport():
    run = facts_of(nccl_debug.find, NCCL_941)["nccl.run"]
    assert (run["network"], run["ib_none"], run["version"]) == ("Socket", True, "2.17.1")
    run = facts_of(nccl_debug.find, NCCL_451)["nccl.run"]
    assert (run["network"], run["ib_none"], run["env"]) == ("Socket", True, {"NCCL_IB_DISABLE": "0"})
    run = facts_of(nccl_debug.find, NCCL_1190)["nccl.run"]
    assert (run["network"], run["transports"]) == ("Socket", {"SHM": 2})
    for text in (NCCL_941, NCCL_451, NCCL_1190):
        for pasted in forms(text):
            assert facts_of(nccl_debug.find, pasted)["nccl.run"]["network"] == "Socket"


def test_nccl_2_5_to_2_12_direct_shared_memory_is_shm():
    assert nccl_log.classify("direct shared memory")["transport"] == "SHM"


def test_a_log_that_connected_nothing_and_prose_that_quotes_nccl_are_not_a_run():
    assert "nccl.run" not in facts_of(nccl_debug.find, "05-06-76-200:7839:7839 [0] NCCL INFO Bootstrap : Using ens5f0np0:10.220.178.201<0>\n")
    # the maintainer's quote in NVIDIA/nccl-tests#228: prose, not NCCL's own line
    assert "nccl.env" not in facts_of(nccl_debug.find, "I see the following in the output:\n\nNCCL_P2P_LEVEL set by environment to LOC\n")


# ----------------------------------------------------------------------------- rules
def test_nccl_on_sockets_beside_an_active_rdma_port_is_nccl_socket_with_ib(cli, use_test_kb, tmp_path):
    for pasted in [NCCL_451, *forms(NCCL_451)]:
        hit = findings(cli, tmp_path, pasted)["nccl-socket-with-ib"]
        assert "mlx5_bond_0:1" in hit["message"] and "No device found" in hit["message"]
    # two threads' pastes together, as one report showing both would: NVIDIA/nccl#941's log, #1591's ibstat
    assert "mlx5_5:1" in findings(cli, tmp_path, IBSTAT_1591 + "\n" + NCCL_941)["nccl-socket-with-ib"]["message"]


@pytest.mark.parametrize("text", [
    NCCL_941,                                 # no RDMA listing: not checked, not guessed
    IBSTAT_1591 + "\n" + USING_IB_1925,       # NCCL uses IB
    IBV_DEVINFO_DOWN + "\n" + NCCL_941,       # the port is down: sockets are all there is
])
def test_look_alikes_of_nccl_on_sockets_beside_ib(cli, use_test_kb, tmp_path, text):
    assert "nccl-socket-with-ib" not in findings(cli, tmp_path, text)


def test_p2p_off_on_nvlinked_gpus_is_nccl_p2p_disabled_nvlink(cli, use_test_kb, tmp_path):
    for pasted in [NCCL_1608, *forms(NCCL_1608)]:
        hit = findings(cli, tmp_path, pasted)["nccl-p2p-disabled-nvlink"]
        assert "NCCL_P2P_DISABLE=1" in hit["message"]
    # two threads' pastes together: NVIDIA/nccl-tests#228's NVLinks, NCCL's line for P2P_LEVEL=LOC
    text = NVLINK_S_228 + P2P_LEVEL_LOC
    for pasted in [text, *forms(text)]:
        assert "NCCL_P2P_LEVEL=LOC" in findings(cli, tmp_path, pasted)["nccl-p2p-disabled-nvlink"]["message"]


@pytest.mark.parametrize("text", [
    TOPO_PCIE_AND_P2P + "\n" + NCCL_1190,                                # no NVLink at all
    NCCL_1608.replace("NCCL_P2P_DISABLE=1\n", "").replace("NCCL_P2P_LEVEL=NVL\n", "") + "\n" + SHM_GPU1_GPU2,
    NVLINK_S_1608,                                                       # NVLink and nothing turned off
])
def test_look_alikes_of_p2p_off_on_nvlink(cli, use_test_kb, tmp_path, text):
    # the second: SHM between GPU1 and GPU2, which #1608's matrix joins only through the CPUs (SYS)
    found = findings(cli, tmp_path, text)
    assert "nccl-p2p-disabled-nvlink" not in found and "nvlink-down" not in found


def test_triage_reads_these_listings_without_the_probes():
    facts, _ = triage(NCCL_451 + NCCL_1608)
    assert facts.known("fabric.ib_devices") and facts.known("topology.nvlink") and facts.known("nccl.run")
