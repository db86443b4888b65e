"""Issue 26, the nccl-fabric group: NCCL could not open a TCP connection to another rank
(nccl-socket-connect-failed: doctor/kb/errors.yaml rows nccl-socket-connect-failed,
nccl-socket-connect-returned, nccl-call-to-connect-failed; fwdoctor.triage.nccl_unreachable),
and the interface NCCL bootstrapped on. Each text is quoted from the public thread named above
it; NCCL's retry lines and a peer that closed its connection stay quiet."""

from __future__ import annotations

import pytest

from fwdoctor.model import Severity
from fwdoctor.triage import nccl_unreachable, triage
from fwdoctor.triage.judge import run
from pasting import as_pasted
from triage_helpers import facts_of
from triage_run import messages, severities

ID = "nccl-socket-connect-failed"

# https://github.com/espnet/espnet/issues/1940 (NCCL 2.4.8, 4 nodes; "Connect to %s failed : %s")
ESPNET_REFUSED = """\
tj1-asr-train-v100-13:941227:943077 [0] NCCL INFO Call to connect returned Connection refused, retrying
tj1-asr-train-v100-13:941227:943077 [0] NCCL INFO Call to connect returned Connection refused, retrying
tj1-asr-train-v100-13:941227:943077 [0] NCCL INFO Call to connect returned Connection refused, retrying

tj1-asr-train-v100-13:941227:943077 [0] include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed : Connection refused
tj1-asr-train-v100-13:941227:943077 [0] NCCL INFO bootstrap.cc:100 -> 2
tj1-asr-train-v100-13:941227:943077 [0] NCCL INFO bootstrap.cc:326 -> 2
tj1-asr-train-v100-13:941227:943077 [0] NCCL INFO init.cc:695 -> 2
"""
# https://github.com/sgl-project/sglang/issues/3820 (NCCL 2.21.5 in docker on two nodes)
SGLANG_NO_ROUTE = """\
[2025-02-24 14:09:34 TP12] sglang is using nccl==2.21.5
node5:236:236 [2] NCCL INFO cudaDriverVersion 12080
node5:236:236 [2] NCCL INFO Bootstrap : Using bond0:10.0.0.3<0>
node5:240:240 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No route to host) errno 115(Operation now in progress)
node5:240:240 [6] NCCL INFO misc/socket.cc:570 -> 2
node5:240:240 [6] NCCL INFO misc/socket.cc:621 -> 2
node5:240:240 [6] NCCL INFO bootstrap.cc:285 -> 2
"""
# https://github.com/NVIDIA/nccl-tests/issues/166 (NCCL 2.18, two nodes)
NCCLTESTS_ABORT = """\
ubuntu:39964:40075 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort
ubuntu:39964:40075 [0] NCCL INFO misc/socket.cc:564 -> 2
ubuntu:39964:40075 [0] NCCL INFO misc/socket.cc:586 -> 2
ubuntu:39964:40075 [0] NCCL INFO transport/net_socket.cc:336 -> 2

ubuntu:39964:40075 [0] proxy.cc:1519 NCCL WARN [Proxy Service 0] Failed to execute operation Connect from rank 0, retcode 2
"""
# https://github.com/NVIDIA/nccl/issues/975 (a link-local IPv6 address of ib1)
NCCL_975_IPV6 = """\
n122-246-085:12251:12400 [5] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to fe80::966d:ae03:a2:8cf0%ib1<17943> failed : Software caused connection abort
n122-246-085:12251:12400 [5] NCCL INFO misc/socket.cc:564 -> 2
"""
# https://github.com/NVIDIA/nccl-tests/issues/15 (NCCL 2.2.13, no "NCCL" in its prefix yet)
NCCLTESTS_15_TIMEOUT = """\
gpu-bql-144-103:18553:18553 [0] INFO NET : Using interface enp3s0:192.168.144.103<0>
gpu-bql-144-103:18553:18553 [0] INFO NET/Socket : 1 interfaces found
NCCL version 2.2.13+cuda9.0
gpu-bql-144-103:18553:18612 [0] INFO comm 0x7fa42c00a3b0 rank 0 nranks 2

gpu-bql-144-103:18553:18611 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out
gpu-bql-144-103:18553:18611 [0] INFO transport/net_socket.cu:118 -> 2
"""
# https://github.com/horovod/horovod/issues/584 (NCCL 2.3 on two machines)
HOROVOD_584 = """\
paigcr-b-gpu-1012:4152:4206 [0] NCCL INFO NET : Using interface lo:127.0.0.1<0>
paigcr-b-gpu-1012:4152:4206 [0] NCCL INFO NET : Using interface eth0:10.151.40.240<0>
paigcr-b-gpu-1012:4152:4206 [0] NCCL INFO NET : Using interface eth1:fe80::215:5dff:fe33:ff6d%eth1<0>
paigcr-b-gpu-1012:4152:4206 [0] NCCL INFO NET/Socket : 3 interfaces found

paigcr-b-gpu-1012:4153:4209 [1] include/socket.h:361 NCCL WARN Call to connect timeout : Connection refused
paigcr-b-gpu-1012:4153:4209 [1] NCCL INFO transport/net_socket.cu:139 -> 2
"""
# https://github.com/modelscope/ms-swift/issues/8043 (its title: a link-local address)
MSSWIFT_TITLE = "megatron sft训练时，socketPollConnect: connect to 169.254.20.10<52597> returned Connection refused\n"
# A container on Docker's default bridge: NCCL 2.3's interface line from
# https://github.com/facebookresearch/maskrcnn-benchmark/issues/628 beside the failure of
# https://github.com/espnet/espnet/issues/1940 (two real texts, one report)
DOCKER_BRIDGE = """\
55d3479b71fb:91:91 [0] NCCL INFO Using internal Network Socket
55d3479b71fb:91:91 [0] NCCL INFO NET : Using interface eth0:172.17.0.4<0>
55d3479b71fb:91:91 [0] NCCL INFO NET/Socket : 1 interfaces found
NCCL version 2.3.7+cuda9.0
tj1-asr-train-v100-13:941227:943077 [0] include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed : Connection refused
"""
# https://github.com/Oneflow-Inc/oneflow/issues/3586 (NCCL 2.7: a veth beside eno1; the log is
# cut before its warning, so what is left is NCCL's retries)
ONEFLOW_RETRIES = """\
worker:101542:101542 [0] NCCL INFO Bootstrap : Using [0]eno1:172.18.40.41<0> [1]veth25f2e72:fe80::380d:bfff:fe5b:54d2%veth25f2e72<0>
worker:101542:101542 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
worker:101542:101542 [0] NCCL INFO NET/IB : No device found.
worker:101542:101934 [0] NCCL INFO Call to connect returned Connection timed out, retrying
worker:101542:101934 [0] NCCL INFO Call to connect returned Connection timed out, retrying
"""

# Look-alikes that must stay quiet.
# https://github.com/espnet/espnet/issues/1940 (the same job on 2 nodes: it works; lines numbered by the paste)
ESPNET_HEALTHY = """\
451 tj1-asr-train-v100-11:41449:41449 [6] NCCL INFO Bootstrap : Using [0]eth0:10.38.10.4<0>
452 tj1-asr-train-v100-11:41449:41449 [6] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).
453 tj1-asr-train-v100-11:41449:41449 [6] NCCL INFO NCCL_IB_DISABLE set by environment to 1.
454 tj1-asr-train-v100-11:41449:41449 [6] NCCL INFO NET/Socket : Using [0]eth0:10.38.10.4<0>
455 NCCL version 2.4.8+cuda10.0
"""
# https://github.com/hiyouga/LlamaFactory/issues/8045 (NCCL 2.24+'s retries, INFO only)
LLAMAFACTORY_RETRIES = """\
zgiot:1183664:1184669 [0] NCCL INFO socketPollConnect: connect returned No route to host, retrying (26/34) after sleep for 2600 msec
zgiot:1183664:1184669 [0] NCCL INFO socketPollConnect: connect returned No route to host, retrying (27/34) after sleep for 2700 msec
"""
# https://github.com/NVIDIA/nccl/pull/1618 (a retry, and then "The job completed successfully")
RETRY_THEN_SUCCESS = """\
[03/16][2025-02-25 15:46:48,390] [misc/socket.cc:551] [s11gn1268:pid=3987720] NCCL INFO socketPollConnect: connect returned Connection timed out, retrying (1/34) after sleep for 100 msec
"""
# https://github.com/google/nccl-fastsocket/issues/4 (a plugin's retries that connect)
FASTSOCKET_CONNECTED = """\
full-debug2-test-1:4024:4055 [0] net_fastsocket.cc:674 NCCL WARN Maximum retry reached for connect 3.
full-debug2-test-0:4300:4325 [0] NCCL INFO NET/FastSocket : Connected after 1000 retries.
"""
# https://github.com/NVIDIA/nccl-tests/issues/166 (a peer that closed its connection, alone)
PEER_CLOSED = "ubuntu:39964:40044 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer node1<57557>\n"
# https://github.com/NVIDIA/nccl/issues/286 (prose: "connection reset by peer")
RESET_BY_PEER = """\
RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:410, unhandled system error, NCCL version 2.4.8
and 
connection reset by peer
"""

FAILURES = (ESPNET_REFUSED, SGLANG_NO_ROUTE, NCCLTESTS_ABORT, NCCL_975_IPV6, NCCLTESTS_15_TIMEOUT, HOROVOD_584, MSSWIFT_TITLE, DOCKER_BRIDGE)
QUIET = (ESPNET_HEALTHY, LLAMAFACTORY_RETRIES, RETRY_THEN_SUCCESS, FASTSOCKET_CONNECTED, PEER_CLOSED, RESET_BY_PEER, ONEFLOW_RETRIES)


@pytest.mark.parametrize("text", as_pasted(*FAILURES))
def test_a_connect_nccl_gave_up_on_is_an_error_in_every_pasting(test_kb, text):
    assert severities(text, test_kb).get(ID) == Severity.ERROR


@pytest.mark.parametrize("text", as_pasted(*QUIET))
def test_retries_a_healthy_log_and_a_peer_that_closed_stay_quiet(test_kb, text):
    assert ID not in severities(text, test_kb)


def test_the_message_names_the_address_the_error_and_why(test_kb):
    said = messages(ESPNET_REFUSED, test_kb)[ID]
    assert "10.38.10.112 (port 21724)" in said and "Connection refused" in said and "exited" in said
    said = messages(SGLANG_NO_ROUTE, test_kb)[ID]
    assert "10.0.0.4 (port 56849)" in said and "No route to host" in said
    assert "bootstrapped on bond0:10.0.0.3" in said and "Docker" not in said.split("bootstrapped")[1]


def test_an_abort_is_named_as_nccls_own_report_of_a_refused_or_timed_out_connect(test_kb):
    said = messages(NCCLTESTS_ABORT, test_kb)[ID]
    assert "Software caused connection abort" in said and "NVIDIA/nccl#1515" in said


def test_a_container_on_dockers_bridge_gets_host_networking_in_its_fix(test_kb):
    finding = next(f for f in run(DOCKER_BRIDGE, test_kb).report.findings if f.id == ID)
    assert "172.17.0.4 is an address on Docker's default bridge network" in finding.message
    assert any("--network=host" in c for c in finding.fix.commands)
    assert any(c.startswith("export NCCL_SOCKET_IFNAME=") for c in finding.fix.commands)


@pytest.mark.parametrize("address", ["10.0.0.2;reboot", "$(reboot)", "`reboot`", "host&&reboot"])
def test_an_address_from_the_report_is_one_quoted_word_in_the_fix(test_kb, address):
    """The address is the report's text: a hostile one must not become a command to paste."""
    text = f"NCCL WARN socketStartConnect: Connect to {address}<43215> failed : Connection refused\n"
    finding = next(f for f in run(text, test_kb).report.findings if f.id == ID)
    nc = next(c for c in finding.fix.commands if c.startswith("nc -l"))
    assert f"nc -zv '{address}' 12345" in nc and f"of '{address}';" in nc


def test_a_link_local_address_is_said_to_route_only_on_its_link(test_kb):
    assert "link-local" in messages(MSSWIFT_TITLE, test_kb)[ID]
    assert "link-local" in messages(NCCL_975_IPV6, test_kb)[ID]


@pytest.mark.parametrize("text", as_pasted(ONEFLOW_RETRIES))
def test_the_bootstrap_list_is_read_with_its_virtual_interface(text):
    ifaces = facts_of(nccl_unreachable.find, text)["nccl.bootstrap_ifaces"]
    assert [i["iface"] for i in ifaces] == ["eno1", "veth25f2e72"]
    assert ifaces[0]["address"] == "172.18.40.41"


@pytest.mark.parametrize("text", as_pasted(SGLANG_NO_ROUTE, NCCLTESTS_15_TIMEOUT))
def test_the_bootstrap_line_of_each_release_is_read(text):
    ifaces = facts_of(nccl_unreachable.find, text)["nccl.bootstrap_ifaces"]
    assert ifaces[0]["iface"] in ("bond0", "enp3s0") and ifaces[0]["address"] in ("10.0.0.3", "192.168.144.103")


def test_prose_about_a_bootstrap_is_not_read():
    assert not facts_of(nccl_unreachable.find, "Bootstrap : Using the default settings worked for me\n")


def test_a_healthy_bootstrap_log_raises_no_error(test_kb):
    facts, _ = triage(ESPNET_HEALTHY)
    assert facts["nccl.bootstrap_ifaces"] == [{"iface": "eth0", "address": "10.38.10.4"}]
    assert not [s for s in severities(ESPNET_HEALTHY, test_kb).values() if s == Severity.ERROR]
