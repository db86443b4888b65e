"""Issue 26, the nccl-fabric group: NCCL falling back to TCP sockets on an InfiniBand node
(fwdoctor.triage.nccl_ib_fallback, the nccl-socket-with-ib rule of fwdoctor.triage.nccl_fabric
for a report with no ibv_devinfo). Each text is quoted from the public thread named above it."""

from __future__ import annotations

import pytest

from fwdoctor.model import Severity
from fwdoctor.triage import triage
from pasting import as_pasted
from triage_run import messages, severities

# https://github.com/sgl-project/sglang/pull/1427 (merged: the image lacked libibverbs;
# installing libibverbs-dev restored IB; tests/data/triage-field/nccl-fabric/b37a-sglang-...)
NO_LIBIBVERBS = """\
NCCL INFO Failed to open libibverbs.so[.1]
...
NCCL INFO NET/Socket : Using [0]ib0.<ip>
"""
# https://github.com/NVIDIA/nccl/issues/952 (an IPoIB bootstrap, and NCCL finds no IB device)
NO_DEVICE = """\
<cluster_name>:925:925 [6] NCCL INFO Bootstrap : Using ibp12s0:10.149.0.32<0>
<cluster_name>:921:921 [2] NCCL INFO Bootstrap : Using ibp12s0:10.149.0.32<0>
<cluster_name>:924:1152 [5] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so
<cluster_name>:924:1152 [5] NCCL INFO P2P plugin IBext
<cluster_name>:924:1152 [5] NCCL INFO NET/IB : No device found.
"""

# Look-alikes that must not fire.
# https://github.com/Mellanox/nv_peer_memory/issues/56 (NCCL 2.4.7 set up its socket transport
# beside IB and listed ib0 for it, then used IB)
OLD_NCCL_BOTH = """\
master_node:20:289 [0] NCCL INFO NET/Socket : Using [0]ib0:192.168.11.1<0>
master_node:20:289 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).
master_node:20:289 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.
master_node:20:289 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.1<0>
NCCL version 2.4.7+cuda10.0
"""
# https://github.com/NVIDIA/nccl-tests/issues/182 (bootstrap over IPoIB, data over IB)
IPOIB_BOOTSTRAP_IB_USED = """\
testgpu2:3255:3255 [0] NCCL INFO Bootstrap : Using ibs65:10.10.10.101<0>
testgpu2:3255:3262 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ibs65:10.10.10.101<0>
testgpu2:3255:3262 [1] NCCL INFO Using network IB
"""
# https://github.com/facebookresearch/maskrcnn-benchmark/issues/628 (no rdma-core on an
# Ethernet-only container: nothing lost)
NO_LIBIBVERBS_ETHERNET = """\
55d3479b71fb:91:91 [0] misc/ibvwrap.cu:63 NCCL WARN Failed to open libibverbs.so[.1]
55d3479b71fb:91:91 [0] NCCL INFO Using internal Network Socket
55d3479b71fb:91:91 [0] NCCL INFO NET : Using interface eth0:172.17.0.4<0>
55d3479b71fb:91:91 [0] NCCL INFO NET/Socket : 1 interfaces found
NCCL version 2.3.7+cuda9.0
"""
# NCCL told to use sockets (nccl-transport-disabled's, not this rule's)
TOLD_TO = """\
node1:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.
node1:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>
node1:1:1 [0] NCCL INFO Using network Socket
"""


@pytest.mark.parametrize("text", as_pasted(NO_LIBIBVERBS, NO_DEVICE))
def test_nccl_on_sockets_beside_an_ipoib_interface_is_a_warning(test_kb, text):
    assert severities(text, test_kb).get("nccl-socket-with-ib") == Severity.WARNING


def test_the_message_names_the_interface_and_what_nccl_said(test_kb):
    said = messages(NO_LIBIBVERBS, test_kb)["nccl-socket-with-ib"]
    assert "ib0" in said and "libibverbs" in said
    said = messages(NO_DEVICE, test_kb)["nccl-socket-with-ib"]
    assert "ibp12s0" in said and "No device found" in said and "/dev/infiniband" in said


@pytest.mark.parametrize("text", as_pasted(OLD_NCCL_BOTH, IPOIB_BOOTSTRAP_IB_USED, NO_LIBIBVERBS_ETHERNET, TOLD_TO))
def test_ib_in_use_an_ethernet_node_or_sockets_asked_for_do_not_fire(test_kb, text):
    assert "nccl-socket-with-ib" not in severities(text, test_kb)
    assert not triage(text)[0].known("report.nccl_ib_fallback")


def test_a_prefixless_line_or_one_in_prose_without_the_other_half_says_nothing():
    assert not triage("NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>\n")[0].known("report.nccl_ib_fallback")
    assert not triage("NCCL INFO NET/IB : No device found.\n")[0].known("report.nccl_ib_fallback")
