"""Issue 26, the nccl-fabric group: NCCL with no socket interface for its bootstrap, no
network plugin that starts, NVLS failing with a CUDA error (fwdoctor.triage.nccl_fabric), and
NCCL_SOCKET_IFNAME against /sys/class/net on a root (fwdoctor.rules.fabric). Each text is
quoted from the public thread named above it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fwdoctor.rules.fabric import socket_ifname_matches
from fwdoctor.triage import nccl_debug, triage
from fwdoctor.triage.text import Lines
from triage_helpers import facts_of

ROOTS = Path(__file__).parent / "roots"


def triaged(cli, tmp_path, text: str) -> dict:
    path = tmp_path / "report.md"
    path.write_text(text, encoding="utf-8")
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f for f in doc["findings"]}


def notes(text: str) -> list[str]:
    return [e.get("note") or "" for e in triage(text)[0]["report.errors"]]


# https://github.com/NVIDIA/nccl/issues/210 (no IP interface on the machine)
SOCKET_FAMILY = "include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol\n"
# https://github.com/EasonXiao-888/MambaTree/issues/14 (torch with NCCL 2.14.3)
NO_SOCKET_IFACE = """\
RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1201, internal error, NCCL version 2.14.3
ncclInternalError: Internal check failed.
Last error:
Bootstrap : no socket interface found
"""
# https://github.com/NVIDIA/nccl/issues/846 (NCCL's own line for a variable it was given)
IFNAME_SET = "debug-ll4-1701-worker-1:140685:140685 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n"


def test_no_ip_interface_for_the_bootstrap_is_an_error_that_says_what_to_list(cli, use_test_kb, tmp_path):
    hit = triaged(cli, tmp_path, SOCKET_FAMILY)["nccl-socket-interface-missing"]
    assert hit["severity"] == "error" and "no usable IP interface" in hit["message"]
    assert any(c.startswith("ip -brief address") for c in hit["fix"]["commands"])
    assert "nccl-socket-interface-missing" in triaged(cli, tmp_path, NO_SOCKET_IFACE)


def test_nccls_own_set_by_environment_line_is_read_by_the_smoke_log_parser():
    (frag,) = nccl_debug.find(Lines.of(IFNAME_SET * 2))
    assert {f.key: f.value for f in frag.facts} == {"nccl.env": {"NCCL_SOCKET_IFNAME": "eth0"}}
    assert nccl_debug.find(Lines.of("NCCL_SOCKET_IFNAME set by environment to eth0 (no NCCL prefix)\n")) == []


def test_the_interface_the_report_sets_is_named(cli, use_test_kb, tmp_path):
    # constructed: NCCL's line for the variable (nccl#846) before the bootstrap's failure (MambaTree#14)
    message = triaged(cli, tmp_path, IFNAME_SET + NO_SOCKET_IFACE)["nccl-socket-interface-missing"]["message"]
    assert "NCCL_SOCKET_IFNAME=eth0 (the report sets it)" in message


# https://github.com/getainode/ainode/pull/87 (engine containers without /dev/infiniband)
NO_NET_PLUGIN = ("First real mp launch on 0.5.9 (DeepSeek V4 Flash, Spark-2 head + Spark-3 worker): both ranks met at the rendezvous, then "
                 "died in `ncclCommInitRank` with `NCCL error: invalid usage` after `NCCL WARN Failed to initialize any NET plugin`. "
                 "`docker inspect` on both engine containers showed `Devices: []`.\n")


def test_no_network_plugin_points_at_the_rdma_devices(cli, use_test_kb, tmp_path):
    hit = triaged(cli, tmp_path, NO_NET_PLUGIN)["nccl-net-plugin-failed"]
    assert hit["severity"] == "error" and "/dev/infiniband" in hit["message"]
    assert any(c.startswith("ls /dev/infiniband") for c in hit["fix"]["commands"])
    assert not any(c.startswith("unset NCCL_NET") for c in hit["fix"]["commands"])  # the report does not set it
    forced = triaged(cli, tmp_path, "export NCCL_NET=IB\n" + NO_NET_PLUGIN)["nccl-net-plugin-failed"]
    assert "NCCL_NET=IB" in forced["message"] and any(c.startswith("unset NCCL_NET") for c in forced["fix"]["commands"])


# https://github.com/NVIDIA/nccl/issues/976 (NCCL 2.18.5: no error number) and #1338 (2.21.5)
NVLS_218 = "transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'\n"
NVLS_221 = """\
node2:242431:242479 [5] transport/nvls.cc:158 NCCL WARN Cuda failure 1 'invalid argument'
node2:242431:242475 [1] NCCL INFO transport/nvls.cc:330 -> 1
node2:242431:242475 [1] NCCL INFO init.cc:1277 -> 1
"""
# https://github.com/sgl-project/sglang/issues/6246 (the same words from the P2P transport: not NVLS)
P2P_INVALID = "6f747114300646eb-5af0524bda8e4aee:4167:5269 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 'invalid argument'\n"


@pytest.mark.parametrize("text", [NVLS_218, NVLS_221])
def test_nvls_failing_points_at_the_fabric_manager_and_nvls_off(cli, use_test_kb, tmp_path, text):
    hit = triaged(cli, tmp_path, text)["nccl-nvls-failed"]
    assert hit["severity"] == "error" and "'invalid argument'" in hit["message"] and "fabric manager" in hit["message"]
    assert any(c.startswith("export NCCL_NVLS_ENABLE=0") for c in hit["fix"]["commands"])


def test_a_cuda_failure_of_another_transport_is_not_nvls(cli, use_test_kb, tmp_path):
    assert "nccl-nvls-failed" not in triaged(cli, tmp_path, P2P_INVALID)


# https://github.com/pytorch/pytorch/issues/37004 (torch relays ncclSystemError; the WARN before it names the call)
UNHANDLED = ("RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:290, unhandled system error\n")


def test_unhandled_system_error_alone_is_a_note_naming_the_rerun_not_a_finding(cli, use_test_kb, tmp_path):
    assert not [i for i, f in triaged(cli, tmp_path, UNHANDLED).items() if f["severity"] == "error"]
    assert any("NCCL_DEBUG=INFO" in n for n in notes(UNHANDLED))


# ------------------------------------------------------------ NCCL_SOCKET_IFNAME on a host
@pytest.mark.parametrize("value, selected", [
    ("eth", []), ("eno", ["eno1"]), ("eno1,ib", ["eno1", "ib0"]), ("^lo,docker", ["eno1", "ib0"]),
    ("=eno", []), ("=eno1", ["eno1"]), ("^=eno1", ["ib0", "lo"]), ("ib0:1", ["ib0"]), ("^eno,ib,lo", []),
])
def test_socket_ifname_is_matched_as_nccl_reads_it(value, selected):
    assert socket_ifname_matches(value, ["eno1", "ib0", "lo"]) == selected


def check(cli, *args: str) -> dict:
    result = cli("check", "--root", str(ROOTS / "fabric-socket-ifname"), *args, "--json")
    assert result.exit_code in (0, 1), result.output
    return {f["id"]: f for f in json.loads(result.stdout)["findings"]}


def test_a_root_whose_interfaces_socket_ifname_does_not_match(cli, use_test_kb):
    root = ROOTS / "fabric-socket-ifname"
    hit = check(cli, "--env-file", str(root / "env"))["nccl-socket-interface-missing"]
    assert hit["message"].startswith("NCCL_SOCKET_IFNAME=eth0 matches no network interface of this host (eno1, ib0, lo)")
    assert "nccl-socket-interface-missing" not in check(cli, "--env-file", str(root / "env-ok"))
    assert "nccl-socket-interface-missing" not in check(cli)  # unset: NCCL picks one itself


@pytest.mark.parametrize("finding_id", ["nccl-socket-interface-missing", "nccl-net-plugin-failed", "nccl-nvls-failed", "nccl-socket-virtual-interfaces",
                                        "nccl-kernels-missing", "shm-not-writable"])
def test_each_new_finding_is_explained_in_the_fixed_sections(cli, finding_id):
    out = cli("explain", finding_id).output
    for section in ("What it does", "Why is this bad?", "Example", "Fix"):
        assert section in out, (finding_id, section)


# ------------------------------------------------------------ CUDA 802 and the fabric manager
# https://github.com/NVIDIA/nccl-tests/issues/264 (8 H100; fixed by enabling the fabric manager)
NOT_READY = "test: Test CUDA failure common.cu:941 'system not yet initialized'\n"
# https://github.com/aws-samples/aws-deep-learning-ami-ubuntu-dcv-desktop/issues/33
AWS_SAID = ("Currently `nvidia-fabricmanage`r is not installed so on A100, H100, H200 and B200 instances, "
            "CUDA initialization fails with 802 system error.\n")


def test_802_alone_is_a_warning_and_an_error_beside_a_second_sign(cli, use_test_kb, tmp_path):
    alone = triaged(cli, tmp_path, NOT_READY)["nvswitch-fabricmanager-not-running"]
    assert alone["severity"] == "warning" and "system not yet initialized (error 802)" in alone["message"]
    assert any(c.startswith("sudo systemctl enable --now nvidia-fabricmanager") for c in alone["fix"]["commands"])
    assert triaged(cli, tmp_path, AWS_SAID)["nvswitch-fabricmanager-not-running"]["severity"] == "error"


@pytest.mark.parametrize("name, board", [("NVIDIA H100 80GB HBM3", True), ("NVIDIA A100-SXM4-80GB", True), ("NVIDIA H200", True),
                                         ("NVIDIA H100 PCIe", False), ("NVIDIA H100 NVL", False), ("NVIDIA A100-PCIE-40GB", False)])
def test_gpus_of_nvswitch_boards_are_told_from_their_pcie_cards(name, board):
    from fwdoctor.model import Fact, Facts
    from fwdoctor.triage.nccl_fabric import _nvswitch_gpu

    assert bool(_nvswitch_gpu(Facts([Fact("gpus.list", [{"name": name}], source="test")]))) is board


# ------------------------------------------------------- container interfaces in NCCL's socket list
# https://github.com/NVIDIA/nccl/issues/697 (two nodes; NCCL_SOCKET_IFNAME=bond0 fixed it), its list cut to five entries
SOCKET_LIST = """\
ncclSystemError: System call (socket, malloc, munmap, etc) failed when training on two remote nodes
INFO NET/Socket : Using
[0]bond0:192.168.1.161<0>
[1]br-05ab815fa14e:172.19.0.1<0>
[2]br-d5d80d7dbbad:172.21.0.1<0>
[12]veth6163fba:fe80::b878:6cff:fe52:abe2%veth6163fba<0>
[13]veth70ec058:fe80::e0:11ff:fec8:925f%veth70ec058<0>
"""


def test_a_wrapped_socket_list_is_read_one_entry_a_line():
    (frag,) = nccl_debug.find(Lines.of(SOCKET_LIST))
    (fact,) = frag.facts
    assert (fact.key, frag.start, frag.end) == ("nccl.socket_ifaces", 2, 7)
    assert [s["iface"] for s in fact.value] == ["bond0", "br-05ab815fa14e", "br-d5d80d7dbbad", "veth6163fba", "veth70ec058"]


def test_container_bridges_beside_the_real_interface_name_it_in_the_fix(cli, use_test_kb, tmp_path):
    hit = triaged(cli, tmp_path, SOCKET_LIST)["nccl-socket-virtual-interfaces"]
    assert hit["severity"] == "warning" and "beside bond0" in hit["message"]
    assert hit["fix"]["commands"][0].startswith("export NCCL_SOCKET_IFNAME=bond0")


@pytest.mark.parametrize("names, virtual", [
    (["bond0", "br-05ab815fa14e", "veth6163fba"], ["br-05ab815fa14e", "veth6163fba"]),
    (["eno1"], []), (["docker0"], []),  # NCCL's last resort on a node with nothing else: one node works
    (["eno1", "ib0"], []),
])
def test_container_interfaces_count_only_beside_another(names, virtual):
    from fwdoctor.rules.fabric import virtual_interfaces

    assert virtual_interfaces(names) == virtual


def test_the_all_reduce_log_is_judged_the_same(use_test_kb):
    from fwdoctor.engine import judge
    from fwdoctor.model import Fact, Facts
    from fwdoctor.rules.fabric import nccl_socket_virtual_interfaces
    from fwdoctor.smoke import nccl_log

    run = nccl_log.summarize(["node1:1:1 [0] NCCL INFO NET/Socket : Using [0]eno1:10.0.0.1<0> [1]br-0a1b:172.18.0.1<0>\n"])
    (hit,) = judge(Facts([Fact("nccl.run", run, source="smoke allreduce")]), None, [nccl_socket_virtual_interfaces]).findings
    assert "(br-0a1b) beside eno1" in hit.message


# ------------------------------------------------------------ a hang that NCCL_P2P_DISABLE cures
# https://github.com/NVIDIA/nccl/issues/631 (sjeaugey: "P2P not being functional is usually tied to ACS being enabled")
P2P_CURES = (' I do not know the exact reason, but the model "freeze"(stuck) when using 4 or more GPUs. So, while trying various things, '
             "I confirmed that the model works by setting the variable NCCL_P2P_DISABLE =1 .\n")


def test_a_hang_that_p2p_disable_cures_is_an_acs_warning_naming_lspci(cli, use_test_kb, tmp_path):
    hit = triaged(cli, tmp_path, P2P_CURES)["pcie-acs-redirect"]
    assert hit["severity"] == "warning" and "NCCL_P2P_DISABLE=1" in hit["message"]
    assert hit["fix"]["commands"][0].startswith("sudo lspci -vvv | grep -i acsctl")


@pytest.mark.parametrize("text", [
    "export NCCL_P2P_DISABLE=1\n",  # an env line sets it: nothing said about a hang or a cure
    "The job hangs at init.\nexport NCCL_P2P_DISABLE=1\n",  # set, not said to help
    "NCCL_P2P_DISABLE=1 works, but is slow\n",  # no hang
])
def test_setting_p2p_disable_alone_says_nothing_about_acs(cli, use_test_kb, tmp_path, text):
    assert "pcie-acs-redirect" not in triaged(cli, tmp_path, text)


# -------------------------------------------------------------- an NCCL without the GPU's kernels
# https://github.com/NVIDIA/nccl-tests/issues/208 (two RTX 4090, NCCL 2.21.5+cuda11.8)
NAMED_SYMBOL = """\
NCCL version 2.21.5+cuda11.8

noodle-4090-0:1896106:1896121 [1] enqueue.cc:47 NCCL WARN Cuda failure 'named symbol not found'

noodle-4090-0:1896106:1896121 [1] enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'
"""


def test_nccls_own_kernels_not_found_is_an_nccl_built_without_the_arch(cli, use_test_kb, tmp_path):
    hit = triaged(cli, tmp_path, NAMED_SYMBOL)["nccl-kernels-missing"]
    assert hit["severity"] == "error" and "NVCC_GENCODE" in hit["message"]
    assert any("cuobjdump --list-elf" in c for c in hit["fix"]["commands"])
    assert "nccl-kernels-missing" not in triaged(cli, tmp_path, "a.cu:12 Cuda failure 'named symbol not found'\n")  # not NCCL's enqueue


# ------------------------------------------------------------------ /dev/shm not writable
# https://github.com/pytorch/pytorch/issues/37004 ("sudo chmod 777 /dev/shm and the problem is gone")
SHM_DENIED = "node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied\n"


def test_shm_open_denied_is_shm_not_writable_not_too_small(cli, use_test_kb, tmp_path):
    found = triaged(cli, tmp_path, SHM_DENIED)
    assert found["shm-not-writable"]["severity"] == "error" and "shm-too-small" not in found
    assert "sudo chmod 1777 /dev/shm" in found["shm-not-writable"]["fix"]["commands"]


@pytest.mark.parametrize("options, access", [
    ("rw,nosuid,nodev,inode64", {"mode": "1777", "read_only": False, "writable": True}),
    ("rw,nosuid,nodev,mode=755", {"mode": "755", "read_only": False, "writable": False}),
    ("ro,nosuid,nodev", {"mode": "1777", "read_only": True, "writable": False}),
])
def test_the_shm_mount_options_say_whether_every_user_may_write(options, access):
    from fwdoctor.probes.topology import parse_shm_access

    assert parse_shm_access(f"shm /dev/shm tmpfs {options} 0 0\n") == access
    assert parse_shm_access("proc /proc proc rw 0 0\n") is None


def test_a_root_whose_shm_is_mode_755(cli, use_test_kb):
    result = cli("check", "--root", str(ROOTS / "shm-mode-755"), "--json")
    found = {f["id"]: f for f in json.loads(result.stdout)["findings"]}
    assert found["shm-not-writable"]["message"].startswith("/dev/shm is not writable (its mode is 755, not 1777")
    assert "shm-not-writable" not in {f["id"] for f in json.loads(cli("check", "--root", str(ROOTS / "fabric-socket-ifname"), "--json").stdout)["findings"]}


# --------------------------------------------- NCCL_NET=IB on a host (or container) without RDMA nodes
def test_nccl_net_ib_in_a_container_without_dev_infiniband(cli, use_test_kb):
    root = ROOTS / "fabric-ib-container"

    def found(*args: str) -> dict:
        result = cli("check", "--root", str(root), *args, "--json")
        return {f["id"]: f for f in json.loads(result.stdout)["findings"]}

    hit = found("--env-file", str(root / "env"))["nccl-net-plugin-failed"]
    assert hit["message"].startswith("NCCL_NET=IB asks for NCCL's InfiniBand/RoCE plugin only, and this host has mlx5_0 but no /dev/infiniband/uverbs*")
    assert "nccl-net-plugin-failed" not in found("--env-file", str(root / "env-socket"))
    assert "nccl-net-plugin-failed" not in found()


def test_nccl_net_ib_with_its_verbs_nodes_is_left_alone(use_test_kb):
    from fwdoctor.engine import judge
    from fwdoctor.model import Fact, Facts
    from fwdoctor.rules.fabric import nccl_net_plugin_failed

    facts = Facts([Fact("nccl.env", {"NCCL_NET": "ib"}, source="test"), Fact("fabric.ib_devices", [{"name": "mlx5_0", "ports": []}], source="test"),
                   Fact("fabric.rdma_nodes", ["rdma_cm", "uverbs0"], source="test")])
    assert judge(facts, None, [nccl_net_plugin_failed]).findings == []
    no_device = Facts([*(facts.fact(k) for k in ("nccl.env", "fabric.rdma_nodes")), Fact("fabric.ib_devices", [], source="test")])
    (hit,) = judge(no_device, None, [nccl_net_plugin_failed]).findings
    assert "no RDMA device in /sys/class/infiniband" in hit.message


# --- batch 25: launcher prefixes, NCCL 2.27's unset address, IOMMU cures, the NCCL a run loaded ---

# https://github.com/NVIDIA/nccl/issues/1837 (NCCL 2.27.7, NCCL_SOCKET_IFNAME naming an interface the host lacks;
# the launcher writes "[trainer3]:" in front of NCCL's own prefix)
IFNAME_ETH2 = """\
[trainer3]:twshared1016:1958:1958 [3] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth2
[trainer3]:twshared1016:1958:1958 [3] NCCL INFO NCCL_SOCKET_IFNAME set to eth2
...
[trainer0|0]:ncclInternalError: Internal check failed.
[trainer0|0]:Last error:
[trainer0|0]:ncclSocketInit: connecting to address  with family 59936 is neither AF_INET(2) nor AF_INET6(10)
"""
# https://github.com/aws/aws-ofi-nccl/issues/889 (a CloudWatch log: a timestamp and a bar in front of NCCL's prefix)
CLOUDWATCH = "  | 2025-05-16T16:39:51.208-07:00 | ip-10-36-29-253:79:79 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n"


def test_nccls_line_is_read_behind_a_launchers_rank_tag_or_a_log_timestamp():
    (frag,) = nccl_debug.find(Lines.of(IFNAME_ETH2))
    assert {f.key: f.value for f in frag.facts} == {"nccl.env": {"NCCL_SOCKET_IFNAME": "eth2"}}
    (frag,) = nccl_debug.find(Lines.of(CLOUDWATCH))
    assert {f.key: f.value for f in frag.facts} == {"nccl.env": {"NCCL_SOCKET_IFNAME": "eth0"}}


def test_an_unset_bootstrap_address_beside_the_ifname_the_report_sets_is_the_missing_interface(cli, use_test_kb, tmp_path):
    hit = triaged(cli, tmp_path, IFNAME_ETH2)["nccl-socket-interface-missing"]
    assert hit["severity"] == "error" and "NCCL_SOCKET_IFNAME=eth2 (the report sets it)" in hit["message"]
    # pasted as a markdown quote with Windows line ends
    mangled = "".join("> " + line for line in IFNAME_ETH2.splitlines(keepends=True)).replace("\n", "\r\n")
    assert "NCCL_SOCKET_IFNAME=eth2" in triaged(cli, tmp_path, mangled)["nccl-socket-interface-missing"]["message"]
    # the words alone (no NCCL_SOCKET_IFNAME in the report) have other causes: not named
    alone = IFNAME_ETH2.splitlines(keepends=True)[-1]
    assert "nccl-socket-interface-missing" not in triaged(cli, tmp_path, alone)


# https://github.com/NVIDIA/nccl/issues/120 (AMD Ryzen 7 1700X; sjeaugey: iommu=soft; the reporter: "Everything goes well now")
IOMMU_SOFT = """\
# single/all_gather_test is always stuck

sjeaugey · comment · 2017-11-30
Oh, you are using an AMD CPU. Then I suggest you review this post and see if it fixes your problem :
https://github.com/pytorch/pytorch/issues/1637#issuecomment-338268158
(basically adding iommu=soft to the kernel command line)

starsblinking · comment · 2017-12-01
@sjeaugey Thanks very much! Everything goes well now. I just thought that CPU virtualization in BIOS settings is right IOMMU but actually not.  I didn't find IOMMU settings in BIOS settings when PC boot. `sudo vim /etc/default/grub` and `sudo update-grub` do work. 
"""
# https://github.com/NVIDIA/nccl/issues/257 (GTX 1080 Ti, AllReduce hangs)
INTEL_IOMMU_OFF = """\
# AllReduce hangs
@sjeaugey @cliffwoolley Booting the kernel with `intel_iommu=off` resolved all our problems. No need for `NCCL_P2P_DISABLE` now. Worked like a charm!
"""
# https://github.com/NVIDIA/nccl-tests/issues/117 (RTX 4090 hang; IOMMU flags tried, none helped)
IOMMU_TRIED = """\
# NCCL all_reduce_perf test hangs with multiple RTX 4090 GPUs, works fine when I swap in 2080tis
I've tried various different settings in the grub boot file

iommu=off
amd_iommu=off
"""


def test_a_hang_that_an_iommu_boot_flag_cured_is_an_iommu_warning(cli, use_test_kb, tmp_path):
    for text in (IOMMU_SOFT, INTEL_IOMMU_OFF):
        hit = triaged(cli, tmp_path, text)["iommu-translation"]
        assert hit["severity"] == "warning" and "IOMMU stops translating" in hit["message"]
        assert any("iommu=pt" in c for c in hit["fix"]["commands"])
    assert "iommu-translation" not in triaged(cli, tmp_path, IOMMU_TRIED)
    assert "iommu-translation" not in triaged(cli, tmp_path, IOMMU_SOFT.replace("do work", "don't work").replace("goes well", "hangs still"))


# https://github.com/tinygrad/open-gpu-kernel-modules/issues/29 (nccl-tests on RTX 5090 with NCCL 2.25.1; its
# "ncclMaxSharedMem ... exceeds" lines left out, so only the banner and the device list speak)
RTX5090_2251 = """\
#  Rank  7 Group  0 Pid 259034 on       test device  7 [0000:e1:00] NVIDIA GeForce RTX 5090
test:259034:259034 [0] NCCL INFO Bootstrap: Using ens29f0:10.30.9.23<0>
test:259034:259034 [0] NCCL INFO cudaDriverVersion 12080
test:259034:259034 [0] NCCL INFO NCCL version 2.25.1+cuda12.8
"""
# https://github.com/tinygrad/open-gpu-kernel-modules/issues/35 (RTX 5090 D with NCCL 2.26.2)
RTX5090D_2262 = """\
#  Rank  1 Group  0 Pid  28273 on lam-MU72-SU0-00 device  1 [0000:ca:00] NVIDIA GeForce RTX 5090 D
lam-MU72-SU0-00:28273:28273 [1] NCCL INFO cudaDriverVersion 12080
lam-MU72-SU0-00:28273:28273 [0] NCCL INFO NCCL version 2.26.2+cuda12.8
"""
# https://github.com/mila-iqia/milabench/issues/183 (torch's error names NCCL 2.14.3) and, constructed, an H100 from
# https://github.com/NVIDIA/nccl-tests/issues/252's device list (the milabench thread names the GPU only in prose)
H100_2143 = """\
#  Rank  0 Group  0 Pid 203082 on    kolyoz1 device  0 [0x42] NVIDIA H100 80GB HBM3
opt-1_3b.0 [stderr] DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, internal error, NCCL version 2.14.3
"""


def test_nccls_banner_and_nccl_tests_device_list_are_read():
    facts = facts_of(nccl_debug.find, RTX5090_2251)
    assert facts["nccl.loaded"]["version"] == "2.25.1" and facts["nccl.loaded"]["cuda"] == "12.8"
    assert [g["name"] for g in facts["gpus.list"]] == ["NVIDIA GeForce RTX 5090"]
    assert facts_of(nccl_debug.find, H100_2143)["nccl.loaded"]["versions"] == [{"version": "2.14.3", "cuda": None, "line": 2}]
    assert "nccl.loaded" not in facts_of(nccl_debug.find, "RuntimeError: ... NCCL version 21.0.3\n")  # torch's misprinted code


def test_an_nccl_older_than_the_gpus_architecture_is_an_error(cli, use_test_kb, tmp_path):
    hit = triaged(cli, tmp_path, RTX5090_2251)["nccl-gpu-unsupported"]
    assert hit["severity"] == "error" and "older than NCCL 2.26.2" in hit["message"] and "RTX 5090" in hit["message"]
    assert "older than NCCL 2.15.1" in triaged(cli, tmp_path, H100_2143)["nccl-gpu-unsupported"]["message"]
    assert "nccl-gpu-unsupported" not in triaged(cli, tmp_path, RTX5090D_2262)


# constructed: nvcc's "release 10.2" (the CUDA 10.2 system of https://github.com/NVIDIA/nccl-tests/issues/6, where
# "my nccl depends on a different CUDA version (11.0)") before the banner of an NCCL built for CUDA 11.0, as
# https://github.com/NVIDIA/nccl/issues/525's title prints it
NVCC_102 = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 10.2, V10.2.89\n"
BANNER_110 = "Kubeflow - NCCL version 2.9.6+cuda11.0 -- NCCL WARN Call to posix_fallocate failed : No space left on device\n"


def test_an_nccl_built_for_another_cuda_major_than_its_loader_is_a_mismatch(cli, use_test_kb, tmp_path):
    hit = triaged(cli, tmp_path, NVCC_102 + BANNER_110)["nccl-cuda-mismatch"]
    assert hit["severity"] == "error" and "built for CUDA 11.0" in hit["message"] and "CUDA 10" in hit["message"]
    assert "nccl-cuda-mismatch" not in triaged(cli, tmp_path, BANNER_110)  # nothing to compare with
    # torch speaks for the process where the report shows it: torch 1.7.1+cu110 loads an NCCL for CUDA 11
    assert "nccl-cuda-mismatch" not in triaged(cli, tmp_path, NVCC_102 + "torch==1.7.1+cu110\n" + BANNER_110)
