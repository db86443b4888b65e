"""Issue 26, the nccl-fabric group: NCCL's own WARN lines that name the cause, read from a
report (doctor/kb/errors.yaml rows, fwdoctor.triage.nccl_fabric): the allocation that found
/dev/shm full, NCCL_COMM_ID naming a subnet the node has no interface in, two ranks on one
GPU. Each text is quoted from the public thread named above it; each is also read as pasting
leaves it (tests/pasting.py), and its look-alikes are not."""

from __future__ import annotations

import pytest

from fwdoctor.triage import triage
from pasting import forms
from triage_helpers import findings


def kinds(text: str) -> list[str]:
    return [e["kind"] for e in triage(text)[0].get("report.errors") or []]


# /dev/shm full: the call NCCL names, without (or before) its "Error while creating" line.
SHM_FULL = {
    # https://github.com/NVIDIA/nccl/issues/290 (NCCL 2.4, Horovod in an NGC container)
    "posix_fallocate": "gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n"
                       "gpu2-ru7:2143:2561 [1] NCCL INFO include/shm.h:41 -> 2\n",
    # https://github.com/NVIDIA/nccl/issues/525 (a Kubeflow pod, lines without host:pid:tid)
    "posix_fallocate, bare": "[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n",
    # https://github.com/ai-dynamo/dynamo/issues/1408 (NCCL 2.22+: the errno printed)
    "failed to extend, errno": "[2025-06-06 09:52:01] ucwlai-k8snode-12-123:15016:15201 [1] misc/shmutils.cc:87 NCCL WARN Error: failed to "
                               "extend /dev/shm/nccl-YrFC5V to 33030532 bytes, error: No space left on device (28)\n",
    # https://github.com/kserve/kserve/issues/3791 (NCCL 2.12-2.21: no errno, the line ends there)
    "failed to extend": "hugging-model-1-predictor-00001-deployment-5c86c57756-p7ghj:1:1 [0] misc/shmutils.cc:72 NCCL WARN Error: "
                        "failed to extend /dev/shm/nccl-H1dBqY to 9637892 bytes\n",
}


@pytest.mark.parametrize("text", SHM_FULL.values(), ids=SHM_FULL.keys())
def test_the_shm_allocation_nccl_names_full_is_shm_too_small(cli, use_test_kb, tmp_path, text):
    for pasted in [text, *forms(text)]:
        hit = findings(cli, tmp_path, pasted)["shm-too-small"]
        assert "NCCL" in hit["message"] and ("posix_fallocate" in hit["message"] or "failed to extend" in hit["message"])


@pytest.mark.parametrize("text", [
    # another errno is another cause (not a full /dev/shm): constructed from the same format
    "host:1:2 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : Invalid argument\n",
    "host:1:2 [0] misc/shmutils.cc:88 NCCL WARN Error: failed to extend /dev/shm/nccl-Ab12Cd to 9637892 bytes, error: Operation not permitted (1)\n",
    # NCCL's INFO line for an interrupted fallocate, which it retries (src/os/linux.cc)
    "host:1:2 [0] NCCL INFO fallocate: Failed to extend /dev/shm/nccl-Ab12Cd to 9637892 bytes, error: Interrupted system call (4) - retrying\n",
    # a disk, not /dev/shm
    "OSError: [Errno 28] No space left on device: '/tmp/ckpt/model.pt'\n",
])
def test_look_alikes_of_a_full_shm_are_not_read(cli, use_test_kb, tmp_path, text):
    assert "nccl-shm-allocate-no-space" not in kinds(text)
    assert "shm-too-small" not in findings(cli, tmp_path, text)


def test_a_big_dev_shm_shown_beside_the_allocation_failure_wins(cli, use_test_kb, tmp_path):
    # a df of a 32 GB /dev/shm: the regular rule judges the size shown (stale segments, not a small mount)
    df = "Filesystem      Size  Used Avail Use% Mounted on\ntmpfs            32G     0   32G   0% /dev/shm\n"
    assert "shm-too-small" not in findings(cli, tmp_path, df + SHM_FULL["posix_fallocate"])


# NCCL_COMM_ID naming an address of a subnet the node (a container on Docker's bridge) has no interface in
# https://github.com/NVIDIA/nccl/issues/331 (NCCL 2.4.8)
SUBNET_331 = ("e82c50601d13:213:213 [0] include/socket.h:197 NCCL WARN Net : No interface found in the same subnet as remote address "
              "192.168.0.91<27030>\n")
# https://github.com/NVIDIA/nccl/issues/929 (NCCL 2.18, containers under WSL2)
SUBNET_929 = ("d9beab19e6d2:1791:1791 [0] misc/socket.cc:237 NCCL WARN Net : No interface found in the same subnet as remote address a.b.c.d0<1778>\n"
              "d9beab19e6d2:1791:1791 [0] bootstrap.cc:39 NCCL WARN NET/Socket : No usable listening interface found\n")


@pytest.mark.parametrize("text", [SUBNET_331, SUBNET_929])
def test_no_interface_in_nccl_comm_ids_subnet_is_a_missing_bootstrap_interface(cli, use_test_kb, tmp_path, text):
    for pasted in [text, *forms(text)]:
        hit = findings(cli, tmp_path, pasted)["nccl-socket-interface-missing"]
        assert hit["severity"] == "error" and "NCCL_COMM_ID" in hit["message"]
        assert any("--network=host" in c for c in hit["fix"]["commands"])


def test_the_nccl_comm_id_the_report_sets_is_named(cli, use_test_kb, tmp_path):
    # constructed: the reporter's variable (nccl#331's "NCCL_COMM_ID=192.168.0.91:27030") before NCCL's line
    message = findings(cli, tmp_path, "NCCL_COMM_ID=192.168.0.91:27030\n" + SUBNET_331)["nccl-socket-interface-missing"]["message"]
    assert "NCCL_COMM_ID=192.168.0.91:27030" in message


@pytest.mark.parametrize("text", [
    # NCCL's INFO when it does find one (src/misc/socket.cc), and prose about subnets
    "host:1:1 [0] NCCL INFO NET/Socket : Found interface eth0:10.0.0.5<0> in the same subnet as remote address 10.0.0.1<1778>\n",
    "The two machines are on different subnets (netmask 255.255.255.192).\n",
    # the Bootstrap line of a run that found its interface
    "node1:12345:12345 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>\n",
])
def test_look_alikes_of_the_subnet_warning_are_not_read(cli, use_test_kb, tmp_path, text):
    assert "nccl-comm-id-no-subnet-interface" not in kinds(text)
    assert "nccl-socket-interface-missing" not in findings(cli, tmp_path, text)


# Two ranks on one GPU: the program's device mapping, not the environment: a note, no finding.
# https://github.com/verl-project/verl/issues/161 (torch's DistBackendError with NCCL's last error)
DUPLICATE_GPU = """\
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5
ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
Last error:
Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 10
"""


def test_two_ranks_on_one_gpu_is_a_note_that_points_at_the_rank_to_device_mapping(cli, use_test_kb, tmp_path):
    for pasted in [DUPLICATE_GPU, *forms(DUPLICATE_GPU)]:
        facts, _ = triage(pasted)
        (entry,) = [e for e in facts["report.errors"] if e["kind"] == "nccl-duplicate-gpu"]
        assert "torch.cuda.set_device(local_rank)" in entry["note"] and "ranks 1 and 0" in entry["note"]
        assert not [f for f in findings(cli, tmp_path, pasted).values() if f["severity"] == "error"]


def test_a_duplicate_gpu_in_prose_without_nccls_words_is_not_read():
    assert "nccl-duplicate-gpu" not in kinds("Is a duplicate GPU detected by nvidia-smi a problem? rank 0 runs on GPU 1.\n")
