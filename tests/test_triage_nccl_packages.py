"""Issue 26, the nccl-fabric group: the NCCL packages a report lists installed (`apt list
--installed`, `dpkg -l`: fwdoctor.triage.nccl_packages) against the report's CUDA toolkit
(nccl-cuda-mismatch), and torch's "..., NCCL version 2.14.3" read where a terminal wrapped it
(fwdoctor.triage.nccl_debug). Each text is quoted from the public thread named above it, then
mangled as pasting does (markdown quote and fence, CRLF, colours, CI time stamps, wrapping)."""

from __future__ import annotations

import pytest

from fwdoctor.triage import nccl_debug, nccl_packages
import pasting
from triage_helpers import facts_of, findings

# https://github.com/NVIDIA/nccl/issues/473 (`apt list`; a CUDA 11.2 build of NCCL 2.8.4)
APT_LIST = """\
libnccl-dev/unknown,now 2.8.4-1+cuda11.2 amd64 [installed]
libnccl2/unknown,now 2.8.4-1+cuda11.2 amd64 [installed]
"""
# https://github.com/karpathy/llm.c/pull/742 (`dpkg -l | grep nccl`, then `dpkg -l | grep libnccl`)
DPKG_REPO_ONLY = """\
ii  libvncclient1:amd64                        0.9.13+dfsg-3build2                     amd64        API to write one's own VNC server - client library
ii  nccl-local-repo-ubuntu2204-2.22.3-cuda12.2 1.0-1                                   amd64        nccl-local repository configuration files
"""
DPKG = "ii  libnccl2                                   2.22.3-1+cuda12.2                       amd64        NVIDIA Collective Communication Library (NCCL) Runtime\n"
# https://github.com/NVIDIA/nccl-tests/issues/6 (the fix the commenter ran: a command, not what was installed)
APT_INSTALL_FIX = "`sudo apt install libnccl-dev=2.9.8-1+cuda10.2 libnccl2=2.9.8-1+cuda10.2`\n"
# constructed: nvcc's own banner for CUDA 10.2 and 12.2 (the CUDA 10.2 system of nccl-tests#6)
NVCC_102 = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 10.2, V10.2.89\n"
NVCC_122 = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.2, V12.2.140\n"
# https://github.com/NVIDIA/nccl/issues/473 (nccl-tests' failure line)
FAILURE = "fastmoe: Test NCCL failure common.cu:777 'unhandled system error'\n"


MANGLES = [lambda t: t, pasting.crlf, pasting.quoted, pasting.fenced, pasting.coloured, pasting.stamped]


@pytest.mark.parametrize("mangle", MANGLES)
def test_apt_list_and_dpkg_rows_of_libnccl_say_the_cuda_each_build_is_for(mangle):
    listed = facts_of(nccl_packages.find, mangle(APT_LIST))["nccl.packages"]
    assert [(p["package"], p["version"], p["cuda"], p["via"]) for p in listed] == [
        ("libnccl-dev", "2.8.4", "11.2", "apt list"), ("libnccl2", "2.8.4", "11.2", "apt list")]
    (row,) = facts_of(nccl_packages.find, mangle(DPKG))["nccl.packages"]
    assert (row["package"], row["deb_version"], row["cuda"], row["via"]) == ("libnccl2", "2.22.3-1+cuda12.2", "12.2", "dpkg -l")


@pytest.mark.parametrize("text", [
    DPKG_REPO_ONLY,  # a repository package and a VNC library: no NCCL installed
    APT_INSTALL_FIX,  # an install command
    "libnccl2/unknown 2.19.3-1+cuda12.3 amd64\n",  # `apt list` of what the repository offers
    "  libnccl2 | 2.18.3-1+cuda12.2 | https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64  Packages\n",  # apt-cache madison
    "rc  libnccl2  2.8.4-1+cuda11.2  amd64  NVIDIA Collective Communication Library (NCCL) Runtime\n",  # removed, config left
])
def test_what_is_not_an_installed_nccl_package_is_not_read(text):
    assert "nccl.packages" not in facts_of(nccl_packages.find, text)


@pytest.mark.parametrize("mangle", MANGLES)
def test_an_installed_nccl_for_another_cuda_major_than_the_toolkit_is_a_mismatch(cli, use_test_kb, tmp_path, mangle):
    hit = findings(cli, tmp_path, mangle(NVCC_102 + APT_LIST + FAILURE))["nccl-cuda-mismatch"]
    assert hit["severity"] == "error"
    assert "libnccl2 2.8.4-1+cuda11.2" in hit["message"] and "toolkit is 10.x" in hit["message"]
    assert "+cuda10." in " ".join(hit["fix"]["commands"])


def test_a_package_for_the_toolkits_own_major_or_nothing_to_compare_with_is_left_alone(cli, use_test_kb, tmp_path):
    assert "nccl-cuda-mismatch" not in findings(cli, tmp_path, NVCC_122 + DPKG)  # 12.2 and 12.2
    assert "nccl-cuda-mismatch" not in findings(cli, tmp_path, APT_LIST + FAILURE)  # no toolkit shown
    assert "nccl-cuda-mismatch" not in findings(cli, tmp_path, NVCC_102 + APT_INSTALL_FIX)  # the fix, not an install
    assert "nccl-cuda-mismatch" not in findings(cli, tmp_path, NVCC_102 + NVCC_122 + APT_LIST)  # two toolkits: which one builds?
    # a torch wheel brings its own NCCL: the system's libnccl2 is not what it loads
    assert "nccl-cuda-mismatch" not in findings(cli, tmp_path, NVCC_102 + "torch==1.8.1+cu102\n" + APT_LIST)
    # the run's banner names another NCCL release than the package: that package is not the one it loaded
    assert "nccl-cuda-mismatch" not in findings(cli, tmp_path, NVCC_102 + APT_LIST + "node1:1:1 [0] NCCL INFO NCCL version 2.7.8\n")


# https://github.com/pytorch/pytorch/issues/122571 (torch's error names NCCL 2.19.3; the thread's own line breaks)
TORCH_2193 = """\
torch.distributed.DistBackendError: NCCL error in: 
/opt/conda/conda-bld/pytorch_1708025847130/work/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691
internal error - please report this issue to the NCCL developers, NCCL version 2.19.3
"""
# https://github.com/mila-iqia/milabench/issues/183 (NCCL 2.14.3 in the container on an H100, as the thread wrapped it)
MILABENCH_WRAPPED = """\
opt-1_3b.0 [stderr] DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, internal error, NCCL
version 2.14.3
opt-1_3b.0 [stderr] ncclInternalError: Internal check failed.
"""
# https://github.com/nebius/soperator/pull/428's nccl-tests device list: an H100 (milabench's thread names it only in prose)
H100 = "#  Rank  0 Group  0 Pid   1887 on   worker-1 device  0 [0x8d] NVIDIA H100 80GB HBM3\n"


def wrap_at(text: str, words: str) -> str:
    """`text` with its line broken after `words`, as a terminal or a text box does."""
    return text.replace(words + " ", words + "\n", 1)


@pytest.mark.parametrize("mangle", MANGLES)
@pytest.mark.parametrize("after", ["NCCL", "NCCL version"])
def test_torchs_nccl_version_is_read_where_a_terminal_wrapped_it(mangle, after):
    text = mangle(wrap_at(TORCH_2193, f"developers, {after}"))
    (entry,) = facts_of(nccl_debug.find, text)["nccl.loaded"]["versions"]
    begun = next(i for i, line in enumerate(text.splitlines(), 1) if "developers" in line)
    assert entry == {"version": "2.19.3", "cuda": None, "line": begun}


@pytest.mark.parametrize("mangle", MANGLES)
def test_a_wrapped_nccl_older_than_the_gpu_is_nccl_gpu_unsupported(cli, use_test_kb, tmp_path, mangle):
    hit = findings(cli, tmp_path, mangle(H100 + MILABENCH_WRAPPED))["nccl-gpu-unsupported"]
    assert "NCCL 2.14.3" in hit["message"] and "older than NCCL 2.15.1" in hit["message"]


@pytest.mark.parametrize("text", [
    "Our cluster uses NCCL\nversion 3 of the scheduler\n",  # no 2.x.y release follows
    "RuntimeError: NCCL error in: ..., unhandled system error, NCCL\nversion 21.0.3\n",  # torch's misprinted code
    "see the NCCL\nnode1:1:1 [0] NCCL INFO NCCL version 2.7.8\n",  # the next line's own banner, counted on its line
])
def test_a_line_ending_in_nccl_joins_the_next_only_for_a_banner_it_begins(text):
    versions = (facts_of(nccl_debug.find, text).get("nccl.loaded") or {}).get("versions") or []
    assert all(v["line"] != 1 for v in versions)
    assert [v["version"] for v in versions] in ([], ["2.7.8"])


# https://github.com/NVIDIA/nccl/issues/359 (ld linking nccl-tests: an NCCL built for CUDA 10.0, the program for 11.0)
LD_CONFLICT = ("/usr/bin/ld: warning: libcudart.so.10.0, needed by /usr/lib/gcc/x86_64-linux-gnu/7/../../../x86_64-linux-gnu/libnccl.so, "
               "may conflict with libcudart.so.11.0\n")
# https://github.com/NVIDIA/nccl/issues/79 (CUDA 7.5 and 8.0)
LD_CONFLICT_75 = "/usr/bin/ld: warning: libcudart.so.7.5, needed by /usr/local/lib/libnccl.so, may conflict with libcudart.so.8.0\n"


@pytest.mark.parametrize("mangle", [*MANGLES, lambda t: wrap_at(t, "libnccl.so,")])
@pytest.mark.parametrize("text", [LD_CONFLICT, LD_CONFLICT_75])
def test_ld_saying_libnccls_cuda_runtime_conflicts_with_the_programs_is_a_mismatch(cli, use_test_kb, tmp_path, mangle, text):
    hit = findings(cli, tmp_path, mangle(text))["nccl-cuda-mismatch"]
    assert hit["severity"] == "error" and "libnccl.so" in hit["message"]


@pytest.mark.parametrize("text", [
    # https://github.com/pytorch/pytorch/issues/9437: one runtime named, the other not shown
    "/usr/bin/ld: warning: libcudart.so.8.0, needed by //usr/local/lib/libnccl.so.1, not found (try using -rpath or -rpath-link)\n",
    # constructed look-alikes: two sonames of one CUDA major; a library other than NCCL
    "/usr/bin/ld: warning: libcudart.so.11.0, needed by /usr/lib/x86_64-linux-gnu/libnccl.so, may conflict with libcudart.so.11\n",
    "/usr/bin/ld: warning: libcudart.so.10.0, needed by /usr/local/lib/libfoo.so, may conflict with libcudart.so.11.0\n",
])
def test_ld_lines_that_name_no_second_cuda_major_for_nccl_are_not_a_mismatch(cli, use_test_kb, tmp_path, text):
    assert "nccl-cuda-mismatch" not in findings(cli, tmp_path, text)


# https://github.com/awslabs/awsome-distributed-ai/issues/203 (AWS: libfabric from EFA installers before 1.29.1 with NCCL 2.19+)
OFI_CUDA_MR = "register_rail_mr_buffer:617 NCCL WARN NET/OFI Unable to register memory (type = 2) for device 4. RC: -22, Error: Invalid argument\n"


def notes_of(cli, tmp_path, text: str) -> list[str]:
    import json

    path = tmp_path / "report.md"
    path.write_text(text, encoding="utf-8")
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return [e.get("kind") for e in doc["facts"]["report.errors"]["value"]]


@pytest.mark.parametrize("mangle", [*MANGLES, lambda t: wrap_at(t, "register memory")])
def test_ofi_refusing_cuda_memory_with_einval_is_the_efa_libfabric_note(cli, use_test_kb, tmp_path, mangle):
    assert "ofi-cuda-mr-einval" in notes_of(cli, tmp_path, mangle(OFI_CUDA_MR))
    assert not [f for f in findings(cli, tmp_path, mangle(OFI_CUDA_MR)).values() if f["severity"] == "error"]


@pytest.mark.parametrize("text", [
    # https://github.com/NVIDIA/nccl/issues/563: host memory (type 1), ENOMEM
    "ip-10-0-87-143:149:298 [5] register_mr_buffers:465 NCCL WARN NET/OFI Unable to register memory (type = 1) for device 0. RC: 12, Error: Cannot allocate memory\n",
    # https://github.com/aws/aws-ofi-nccl/issues/70: another code
    "ip-10-0-78-113:3234:3425 [5] register_mr_buffers:469 NCCL WARN NET/OFI Unable to register memory (type = 1) for device 0. RC: -736476143, Error:\n",
    "register_mr_buffers:544 NCCL WARN NET/OFI Unable to register memory (type = 2) for device 0. RC: -225, Error: x\n",  # constructed
])
def test_other_ofi_registration_failures_are_not_that_note(cli, use_test_kb, tmp_path, text):
    assert "ofi-cuda-mr-einval" not in notes_of(cli, tmp_path, text)
