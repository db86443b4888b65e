"""Issue 26, the nccl-fabric group (dev-miss round): what a report shows of NCCL across nodes and
of the CUDA its NCCL is built for, where no listing says it.

- fwdoctor.triage.nccl_nodes: NCCL_DEBUG=INFO logs of several hosts with different "NCCL
  version" banners (fleet-nccl-differs, a warning);
- fwdoctor.triage.nccl_unreachable: a bare "unhandled system error" in a job over several nodes
  run in containers (nccl-socket-connect-failed, a warning);
- fwdoctor.triage.nccl_cuda_prose: "found cu11 and cu12 packages" beside "undefined symbol:
  ncclXxx", and "my nccl depends on CUDA 11.0 ... my system (10.2)" (nccl-cuda-mismatch);
- fwdoctor.triage.p2p_prose: "NCCL_P2P_DISABLE=1 ... didnt work" is not a cure.

Each text is quoted from the public thread named above it, then mangled as pasting does.
"""

from __future__ import annotations

import pytest

from fwdoctor.triage import nccl_cuda_prose, nccl_nodes, p2p_prose
import pasting
from triage_helpers import facts_of, findings

MANGLES = [lambda t: t, pasting.quoted, pasting.crlf, pasting.coloured, pasting.stamped]

# https://github.com/NVIDIA/nccl/issues/1267 (two nodes' NCCL_DEBUG=INFO, each in its own fence)
NODE_1 = ("```\n"
          "instance-8g-96c-1:525765:525765 [0] NCCL INFO Bootstrap : Using ens7:10.128.0.30<0>\n"
          "instance-8g-96c-1:525765:525765 [0] NCCL INFO cudaDriverVersion 12000\n"
          "NCCL version 2.14.3+cuda11.7\n"
          "instance-8g-96c-1:525765:525972 [0] NCCL INFO NET/FastSocket : Tx CPU start: -2\n"
          "```\n")
NODE_4 = ("```\n"
          "instance-8g-96c-4:101707:101707 [0] NCCL INFO Bootstrap : Using ens7:10.128.0.33<0>\n"
          "instance-8g-96c-4:101707:101707 [0] NCCL INFO cudaDriverVersion 12000\n"
          "NCCL version 2.19.3+cuda12.3\n"
          "instance-8g-96c-4:101707:101889 [0] NCCL INFO NET/IB : No device found.\n"
          "```\n")
# NCCL >= 2.20 prints the banner with its prefix (NVIDIA/nccl#1237's form)
PREFIXED = ("gpu-a:1688:1688 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
            "gpu-b:2210:2210 [0] NCCL INFO NCCL version 2.20.5+cuda12.4\n")


@pytest.mark.parametrize("mangle", MANGLES)
def test_nccl_logs_of_two_hosts_with_two_releases_are_nccl_differing_across_nodes(cli, use_test_kb, tmp_path, mangle):
    nodes = facts_of(nccl_nodes.find, mangle(NODE_1 + "\n4:\n" + NODE_4))["nccl.node_versions"]
    assert [(n["host"], n["version"], n["cuda"]) for n in nodes] == [("instance-8g-96c-1", "2.14.3", "11.7"), ("instance-8g-96c-4", "2.19.3", "12.3")]
    hit = findings(cli, tmp_path, mangle(NODE_1 + "\n4:\n" + NODE_4))["fleet-nccl-differs"]
    assert hit["severity"] == "warning" and "instance-8g-96c-1: 2.14.3+cuda11.7" in hit["message"]


def test_prefixed_banners_of_two_hosts_are_read_too(cli, use_test_kb, tmp_path):
    assert findings(cli, tmp_path, PREFIXED)["fleet-nccl-differs"]["severity"] == "warning"


@pytest.mark.parametrize("text", [
    NODE_1,  # one host
    NODE_1 + NODE_1.replace("instance-8g-96c-1", "instance-8g-96c-2"),  # two hosts, one release
    # one host before and after an upgrade: not two nodes of a job
    NODE_1 + NODE_1.replace("2.14.3+cuda11.7", "2.19.3+cuda12.3") + NODE_4.replace("2.19.3", "2.14.3").replace("+cuda12.3", "+cuda11.7"),
    # a banner no NCCL line of its paste names a host for
    "```\nNCCL version 2.14.3+cuda11.7\n```\n" + NODE_4,
])
def test_one_release_or_no_host_per_banner_is_not_nccl_differing(cli, use_test_kb, tmp_path, text):
    assert "fleet-nccl-differs" not in findings(cli, tmp_path, text)


# https://github.com/deepinsight/insightface/issues/1444 (two machines, ranks in Docker)
INSIGHTFACE = ("i have two machines and trained the arcface in distributed way . but errors occurred at my second machine\n"
               "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:518, unhandled system error, NCCL version 2.4.8\n"
               "my training environment is in docker . but the ip addr of the docker address is separated from the physical machines\n")


@pytest.mark.parametrize("mangle", MANGLES)
def test_a_system_error_over_nodes_in_containers_warns_of_the_bridge_network(cli, use_test_kb, tmp_path, mangle):
    hit = findings(cli, tmp_path, mangle(INSIGHTFACE))["nccl-socket-connect-failed"]
    assert hit["severity"] == "warning" and "two machines" in hit["message"] and "docker" in hit["message"]


@pytest.mark.parametrize("text", [
    INSIGHTFACE.replace("my training environment is in docker", "my training environment is bare metal").replace("docker address", "host address"),  # no container
    INSIGHTFACE.replace("i have two machines", "i have one machine").replace("my second machine", "rank 1"),  # one node
    # the log is there and NCCL bootstrapped on a host address: its WARN line names the call
    INSIGHTFACE + "node1:12:12 [0] NCCL INFO Bootstrap : Using ens7:10.128.0.30<0>\n",
])
def test_a_system_error_without_nodes_and_containers_is_not_a_connect_failure(cli, use_test_kb, tmp_path, text):
    assert "nccl-socket-connect-failed" not in findings(cli, tmp_path, text)


# https://github.com/VichyTong/CodeJudge/issues/2
CODEJUDGE = ("# undefined symbol ncclCommRegister\n"
             "I check the version of pytorch and cuda, i found cu11 and cu12 related packages, and I check the CUDA version is 12.2.\n"
             "So i modify the requirement.txt and remove the cu11 related package, then reinstall the conda environment.\n")


@pytest.mark.parametrize("mangle", MANGLES)
def test_a_missing_nccl_function_beside_cu11_and_cu12_packages_said_is_an_nccl_for_another_cuda(cli, use_test_kb, tmp_path, mangle):
    got = findings(cli, tmp_path, mangle(CODEJUDGE))
    assert got["nccl-cuda-mismatch"]["severity"] == "error" and "cu11 and cu12" in got["nccl-cuda-mismatch"]["message"]
    assert "nccl-shadowed" not in got


@pytest.mark.parametrize("text", [
    "Wheels for cu11 and cu12 are published on the PyTorch index.\n",  # no one has them
    "i found cu12 and cu12 related packages\n",  # one major
    "I have cu118 installed\n",
])
def test_cuda_tags_without_two_majors_installed_are_not_read(text):
    assert "nccl.cuda_majors_said" not in facts_of(nccl_cuda_prose.find, text)


# https://github.com/NVIDIA/nccl-tests/issues/6 (a commenter's diagnosis)
NCCL_TESTS_6 = ("The error I have is `Test NCCL failure common.cu:777 'unhandled cuda error'`. By using `NCCL_DEBUG=WARN` I notice that "
                "my nccl depends on a different CUDA version (11.0) than I have on my system(10.2). Installing the correct nccl version fixs the problem for me.\n")


@pytest.mark.parametrize("mangle", MANGLES)
def test_nccl_built_for_another_cuda_than_the_system_said_in_words_is_a_warning(cli, use_test_kb, tmp_path, mangle):
    hit = findings(cli, tmp_path, mangle(NCCL_TESTS_6))["nccl-cuda-mismatch"]
    assert hit["severity"] == "warning" and "CUDA 11.0" in hit["message"] and "CUDA 10.2" in hit["message"]


@pytest.mark.parametrize("text", [
    NCCL_TESTS_6.replace("(11.0)", "(10.1)"),  # the same major
    "NCCL is built for CUDA 12.4 and works on my system.\n",
    "nccl-tests built against CUDA 11.8 installed on my system\n",
])
def test_one_cuda_major_said_is_not_an_nccl_for_another_cuda(text):
    assert "nccl.cuda_said" not in facts_of(nccl_cuda_prose.find, text)


# https://github.com/ray-project/ray/issues/30333: the variable did not help, and a hang is named later
RAY_30333 = ("Tried `export NCCL_IB_DISABLE=1` and `export NCCL_P2P_DISABLE=1`, both didnt work\n"
             "my-multi-node-pytorch-gpu-training-is-hanging-or-giving-me-obscure-nccl-errors\n")


@pytest.mark.parametrize("mangle", MANGLES)
def test_p2p_disable_that_did_not_work_is_not_a_cure(mangle):
    assert "report.p2p_disable_cures_hang" not in facts_of(p2p_prose.find, mangle(RAY_30333))
    cured = RAY_30333.replace("both didnt work", "that worked")
    assert "report.p2p_disable_cures_hang" in facts_of(p2p_prose.find, mangle(cured))
