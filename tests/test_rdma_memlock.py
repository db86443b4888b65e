"""rdma-memlock-too-low: RDMA memory registration against a low locked-memory limit. The
host side (fwdoctor.probes.topology memlock_probe, fwdoctor.rules.fabric) and the report side
(fwdoctor.triage.ulimit, fwdoctor.triage.rdma, the rows of doctor/kb/errors.yaml). Each report
text is quoted from the public thread named above it; mangled copies are what pasting does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fwdoctor.engine import judge
from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts
from fwdoctor.probes import topology
from fwdoctor.probes.topology import memlock_probe
from fwdoctor.proclimits import parse_cap_ipc_lock, parse_memlock_limits
from fwdoctor.rules import fabric
from fwdoctor.triage import triage, ulimit
from fwdoctor.triage.text import Lines
import pasting

ROOTS = Path(__file__).parent / "roots"
ID = "rdma-memlock-too-low"
KIB, MIB = 1024, 1024 * 1024

# /proc/self/limits as the kernel writes it (fs/proc/base.c proc_pid_limits: "%-25s %-20s %-20s %-10s");
# the 8 MiB row is the Docker daemon's default quoted in mlcommons/mlperf-automations#664.
LIMITS_8M = """\
Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max open files            1048576              1048576              files     
Max locked memory         8388608              8388608              bytes     
Max address space         unlimited            unlimited            bytes     
"""
LIMITS_UNLIMITED = LIMITS_8M.replace("8388608              8388608", "unlimited            unlimited")
# CapEff: a non-root user (none), root on the host (all), Docker's default set (no CAP_IPC_LOCK, bit 14)
CAPS_NONE, CAPS_ROOT, CAPS_DOCKER = "0000000000000000", "000001ffffffffff", "00000000a80425fb"
MLX5_0 = [{"name": "mlx5_0", "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand"}]}]


# ------------------------------------------------------------------ host side: the probe
def test_the_locked_memory_row_of_proc_limits_is_read_in_bytes():
    assert parse_memlock_limits(LIMITS_8M) == {"soft_bytes": 8 * MIB, "hard_bytes": 8 * MIB}
    assert parse_memlock_limits(LIMITS_UNLIMITED) == {"soft_bytes": None, "hard_bytes": None}
    assert parse_memlock_limits("Max locked memory         65536                unlimited            bytes\n") == {"soft_bytes": 64 * KIB, "hard_bytes": None}
    assert parse_memlock_limits("Max open files 1024 1024 files\n") is None
    assert parse_memlock_limits("Max locked memory         lots                 lots                 bytes\n") is None


@pytest.mark.parametrize("caps, held", [(CAPS_NONE, False), (CAPS_ROOT, True), (CAPS_DOCKER, False)])
def test_cap_ipc_lock_is_bit_14_of_capeff(caps, held):
    assert parse_cap_ipc_lock(f"Name:\tpython3\nCapInh:\t0000000000000000\nCapEff:\t{caps}\n") is held
    assert parse_cap_ipc_lock("Name:\tpython3\n") is None


def test_a_live_host_reads_its_own_limit_and_capabilities(monkeypatch):
    host = Host.live_host()
    files = {"/proc/self/limits": LIMITS_8M, "/proc/self/status": f"Uid:\t1000\t1000\t1000\t1000\nCapEff:\t{CAPS_DOCKER}\n"}
    monkeypatch.setattr(host, "read_text", lambda path, limit=None: files.get(path))
    (fact,) = list(memlock_probe.func(host, Facts([])))
    assert fact.value == {"soft_bytes": 8 * MIB, "hard_bytes": 8 * MIB, "ipc_lock": False}
    assert "/proc/self/limits" in fact.source


def test_the_probe_reads_this_machines_limit_without_failing():
    (fact,) = list(memlock_probe.func(Host.live_host(), Facts([])))
    assert not fact.is_known or set(fact.value) == {"soft_bytes", "hard_bytes", "ipc_lock"}


def test_a_root_folder_has_no_limit_to_read():
    (fact,) = list(memlock_probe.func(Host.at_root(ROOTS / "fabric-ib-xid"), Facts([])))
    assert not fact.is_known and "a root folder has none" in str(Facts([fact]).why("system.memlock"))
    assert memlock_probe in topology.PROBES


# ------------------------------------------------------------------ host side: the rule
def host(**changes) -> Facts:
    values = {"fabric.ib_devices": MLX5_0, "fabric.rdma_nodes": ["rdma_cm", "uverbs0"],
              "system.memlock": {"soft_bytes": None, "hard_bytes": None, "ipc_lock": False}, "system.container": False}
    values.update(changes)
    return Facts([Fact(k, v, source="test") for k, v in values.items()])


def judged(facts: Facts, kb):
    report = judge(facts, kb, [fabric.rdma_memlock_too_low])
    return {f.id: f for f in report.findings}, {n.rule: n.reason for n in report.not_checked}


def test_a_64_kib_limit_beside_an_infiniband_device_is_an_error(test_kb):
    found, _ = judged(host(**{"system.memlock": {"soft_bytes": 64 * KIB, "hard_bytes": 64 * KIB, "ipc_lock": False},
                              "system.container": True}), test_kb)
    hit = found[ID]
    assert hit.severity.value == "error"
    assert hit.message.startswith("this process may lock only 64 KiB (ulimit -l 64) of memory") and "mlx5_0" in hit.message
    assert hit.fix.commands[0].startswith("docker run --ulimit memlock=-1:-1 --cap-add IPC_LOCK")  # a container: its launch first
    assert not any(c.startswith("ulimit -l unlimited") for c in hit.fix.commands)  # the hard limit is as low: only root can lift it


def test_a_low_soft_limit_under_a_higher_hard_one_can_be_lifted_by_the_job(test_kb):
    found, _ = judged(host(**{"system.memlock": {"soft_bytes": 8 * MIB, "hard_bytes": None, "ipc_lock": False}}), test_kb)
    assert "hard limit unlimited" in found[ID].message
    assert found[ID].fix.commands[0].startswith("ulimit -l unlimited")


@pytest.mark.parametrize("changes", [
    {"system.memlock": {"soft_bytes": None, "hard_bytes": None, "ipc_lock": False}},      # unlimited
    {"system.memlock": {"soft_bytes": 2048 * MIB, "hard_bytes": 2048 * MIB, "ipc_lock": False}},  # above the floor
    {"system.memlock": {"soft_bytes": 64 * KIB, "hard_bytes": 64 * KIB, "ipc_lock": True}},  # root with CAP_IPC_LOCK: not counted
    {"fabric.ib_devices": [], "system.memlock": {"soft_bytes": 64 * KIB, "hard_bytes": 64 * KIB, "ipc_lock": False}},  # no RDMA
    {"fabric.rdma_nodes": [], "system.memlock": {"soft_bytes": 64 * KIB, "hard_bytes": 64 * KIB, "ipc_lock": False}},  # no verbs nodes
])
def test_nothing_to_say_where_registration_is_not_limited(test_kb, changes):
    found, skipped = judged(host(**changes), test_kb)
    assert ID not in found and ID not in skipped


def test_a_root_with_rdma_devices_says_not_checked_and_why(cli, use_test_kb):
    report = json.loads(cli("check", "--root", str(ROOTS / "fabric-ib-xid"), "--json").stdout)
    reasons = {n["rule"]: n["reason"] for n in report["not_checked"]}
    assert "a root folder has none" in reasons[ID] and ID not in {f["id"] for f in report["findings"]}
    quiet = json.loads(cli("check", "--root", str(ROOTS / "fabric-socket-ifname"), "--json").stdout)  # sysfs, no RDMA device: nothing to check
    assert ID not in {n["rule"] for n in quiet["not_checked"]} | {f["id"] for f in quiet["findings"]}


def test_facts_saved_on_a_host_with_a_64_kib_limit(cli, use_test_kb, tmp_path):
    saved = json.loads(cli("facts", "--root", str(ROOTS / "fabric-ib-xid")).stdout)
    saved["facts"]["system.memlock"] = {"value": {"soft_bytes": 64 * KIB, "hard_bytes": 64 * KIB, "ipc_lock": False}, "source": "/proc/self/limits"}
    path = tmp_path / "host.json"
    path.write_text(json.dumps(saved))
    result = cli("check", "--facts", str(path), "--json")
    found = {f["id"]: f for f in json.loads(result.stdout)["findings"]}
    assert found[ID]["severity"] == "error" and "mlx5_0, mlx5_1, mlx5_2" in found[ID]["message"]
    assert result.exit_code == 1


# ------------------------------------------------------------------ report side: the ulimit reader
# https://github.com/openucx/ucx/issues/8229 (the reporter's `ulimit -a`)
ULIMIT_A = """\
ulimit -a
core file size          (blocks, -c) 0
data seg size           (kbytes, -d) unlimited
max locked memory       (kbytes, -l) 64
max memory size         (kbytes, -m) unlimited
open files                      (-n) 1024
"""


def memlock_of(text: str):
    facts, _ = triage(text)
    return facts.get("system.memlock") if facts.known("system.memlock") else None


@pytest.mark.parametrize("text, value", [
    (ULIMIT_A, {"soft_bytes": 64 * KIB}),
    ("$ ulimit -l\n64\n", {"soft_bytes": 64 * KIB}),
    ("root@node1:~# ulimit -l\nunlimited\n", {"soft_bytes": None}),
    ("Max locked memory         8388608              8388608              bytes\n", {"soft_bytes": 8 * MIB, "hard_bytes": 8 * MIB}),
    ("> max locked memory           (kbytes, -l) 8192\n", {"soft_bytes": 8 * MIB}),  # bash 5.1's wider column, quoted
])
def test_the_locked_memory_limit_a_report_shows(text, value):
    assert memlock_of(text) == value


@pytest.mark.parametrize("text", [
    "max locked memory       (kbytes, -l) lots\n",
    "$ ulimit -l\n\n\n\n64\n",   # an answer this far below is not the command's
    "we set ulimit -l to 64 in the image\n",
    "Max locked memory is something the docs talk about\n",
])
def test_look_alike_ulimit_lines_give_no_limit(text):
    assert memlock_of(text) is None


def test_the_reader_names_its_lines():
    (frag,) = ulimit.find(Lines.of(ULIMIT_A))
    assert (frag.kind, frag.start, frag.end) == ("ulimit", 4, 4)


# ------------------------------------------------------------------ report side: the error texts
def triaged(cli, tmp_path, text: str) -> dict:
    path = tmp_path / "report.md"
    path.write_bytes(text.encode("utf-8"))
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f for f in doc["findings"]}


# https://github.com/openucx/ucx/issues/8746
UCX = ("[1668693503.473099] [ampere:1188443:0]          ib_log.c:246  UCX  ERROR mlx5_0: ibv_create_cq() failed: Cannot allocate memory. "
       "Please set max locked memory (ulimit -l) to 'unlimited' (current: 64 kbytes)\n")
# https://github.com/deepseek-ai/DeepEP/issues/143
NCCL_CQ = "msm-h200-2:4016:4653 [7] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory\n"


mangled = pasting.forms


@pytest.mark.parametrize("text", [UCX, *mangled(UCX)])
def test_ucx_naming_the_limit_is_an_error(cli, use_test_kb, tmp_path, text):
    hit = triaged(cli, tmp_path, text)[ID]
    assert hit["severity"] == "error" and "RLIMIT_MEMLOCK" in hit["message"]
    assert any("--ulimit memlock=-1:-1" in c for c in hit["fix"]["commands"])


def test_ucx_wrapped_by_a_terminal_is_still_read(cli, use_test_kb, tmp_path):
    wrapped = UCX.replace("Please set max locked memory (ulimit -l) to", "Please set max locked memory (ulimit -l) to\n")
    hit = triaged(cli, tmp_path, wrapped)[ID]
    assert hit["severity"] == "error" and "64 KiB (ulimit -l 64)" in hit["message"]


@pytest.mark.parametrize("text", [NCCL_CQ, *mangled(NCCL_CQ)])
def test_ncclS_enomem_alone_is_a_warning_that_says_what_to_check(cli, use_test_kb, tmp_path, text):
    hit = triaged(cli, tmp_path, text)[ID]
    assert hit["severity"] == "warning" and "ibv_create_cq failed with ENOMEM" in hit["message"]
    assert hit["fix"]["commands"][0].startswith("srun bash -c 'ulimit -l'")


def test_ncclS_enomem_beside_a_64_kib_ulimit_is_an_error(cli, use_test_kb, tmp_path):
    hit = triaged(cli, tmp_path, ULIMIT_A + NCCL_CQ)[ID]
    assert hit["severity"] == "error" and "64 KiB (ulimit -l 64)" in hit["message"]


@pytest.mark.parametrize("text", [
    # https://github.com/NVIDIA/nccl/issues/1842: another errno of the same call
    "misc/ibvwrap.cc:182 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Invalid argument \n",
    # https://github.com/abetlen/llama-cpp-python/issues/618: mlock, not RDMA
    "warning: failed to mlock 73728000-byte buffer (after previously locking 0 bytes): Cannot allocate memory\n"
    "Try increasing RLIMIT_MLOCK ('ulimit -l' as root).\n",
    # https://github.com/NVIDIA/nccl/issues/563: the AWS OFI plugin's own registration (EFA), another code path
    "ip-10-0-87-143:149:298 [5] register_mr_buffers:465 NCCL WARN NET/OFI Unable to register memory (type = 1) for device 0. RC: 12, Error: Cannot allocate memory\n",
    ULIMIT_A,                                         # a low limit shown with no RDMA error: nothing says RDMA is used
    "$ ulimit -l\nunlimited\n" + NCCL_CQ,             # ENOMEM where the job's limit is shown unlimited: another cause
])
def test_look_alikes_do_not_raise_it(cli, use_test_kb, tmp_path, text):
    assert ID not in triaged(cli, tmp_path, text)


def test_a_report_without_the_limit_says_what_would_show_it(cli, use_test_kb, tmp_path):
    path = tmp_path / "report.md"
    path.write_text("NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n")
    doc = json.loads(cli("triage", "--json", str(path)).output)
    assert ID not in {f["id"] for f in doc["findings"]}
    assert "ibv_devinfo" in {n["rule"]: n["reason"] for n in doc["not_checked"]}[ID]


# ------------------------------------------------------------------ RoCE: NET/IB completion error 12 (nccl-ib-connect-failed)
# https://github.com/pytorch/pytorch/issues/81628 (fixed by NCCL_IB_GID_INDEX=3); https://github.com/NVIDIA/nccl/issues/1698 (2.2x's form)
ERR12_OLD = "NCCL WARN NET/IB : Got completion from peer 192.168.17.147<38560> with error 12, opcode 0, len 0, vendor err 129\n"
ERR12_NEW = ("mycl-g2:353236:353423 [6] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer 192.168.3.5<53908> with status=12 "
             "opcode=129 len=1048576 vendor err 129 (Recv) localGid ::ffff:192.168.6.3 remoteGids::ffff:192.168.6.5 hca mlx5_10\n")
# NCCL's own line for a variable it was given (the form of NVIDIA/nccl#1052's log)
GID_SET = "node2:14159:14172 [0] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.\n"


@pytest.mark.parametrize("text", [ERR12_OLD, ERR12_NEW, *mangled(ERR12_OLD), *mangled(ERR12_NEW)])
def test_completion_error_12_is_nics_that_cannot_reach_each_other(cli, use_test_kb, tmp_path, text):
    hit = triaged(cli, tmp_path, text)["nccl-ib-connect-failed"]
    assert hit["severity"] == "error" and "status 12" in hit["message"] and "NCCL_IB_GID_INDEX" in hit["message"]
    assert hit["fix"]["commands"][0].startswith("show_gids")


def test_a_gid_index_the_report_sets_is_named(cli, use_test_kb, tmp_path):
    hit = triaged(cli, tmp_path, GID_SET + ERR12_NEW)["nccl-ib-connect-failed"]
    assert "NCCL_IB_GID_INDEX=3 (the report sets it)" in hit["message"]


@pytest.mark.parametrize("text", [
    # https://github.com/NVIDIA/nccl/issues/928: status 4 (a local protection error), not a timeout
    "H100-2:19989:20082 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer fe80::966d:ae03:8b:df78%ib0<53249> with error 4, opcode 32564, len 32564, vendor err 81 (Send)\n",
    "NET/IB : Got completion from peer 10.0.0.2<1> with status=120 opcode=0 len=0 vendor err 1 (Send)\n",  # not 12
])
def test_other_completion_statuses_are_not_read_as_a_timeout(cli, use_test_kb, tmp_path, text):
    assert "nccl-ib-connect-failed" not in triaged(cli, tmp_path, text)
