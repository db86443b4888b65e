"""Issue 26, the build-ext group: what a report of a failed CUDA-extension build shows.

- a project's setup.py refusing CUDA_HOME's nvcc below its floor ("FlashAttention is only
  supported on CUDA 11.6 and above", errors.yaml row project-cuda-floor, fwdoctor.triage.ext_build):
  ext-cuda-unsupported-by-project, and torch-toolkit-mismatch where torch's CUDA is at or above
  the floor;
- torch.__version__ written inside a sentence or a title (fwdoctor.triage.repl), its "+cu121"
  saying torch's CUDA;
- torch.utils.cpp_extension's mismatch quoted without "The detected" (an issue title);
- memory exhausted while the extension compiled (top, free, /proc/meminfo beside MAX_JOBS or a
  build command; fwdoctor.triage.build_memory): ext-jobs-exceed-memory.

Each text is quoted from the public thread named above it, then mangled as pasting does."""

from __future__ import annotations

import pytest

import pasting
from fwdoctor.triage import build_memory, repl
from triage_helpers import facts_of, findings

# https://github.com/Dao-AILab/flash-attention/issues/825 (the error, a later comment's torch and nvcc -V)
FA_825_ERROR = ("RuntimeError: FlashAttention is only supported on CUDA 11.6 and above.  "
                "Note: make sure nvcc has a supported version by running nvcc -V.\n")
FA_825_TORCH = 'My environment is "torch.__version__  = 2.3.1+cu121"\n'
FA_825_NVCC = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2019 NVIDIA Corporation\n"
               "Built on Sun_Jul_28_19:07:16_PDT_2019\nCuda compilation tools, release 10.1, V10.1.243\n")
# https://github.com/ChenHongruixuan/ChangeMamba/issues/60 (pip's captured setup.py output; torch 1.13.1 shown bare)
CHANGEMAMBA = ("      RuntimeError: package is only supported on CUDA 11.6 and above.  Note: make sure nvcc has a supported version by running nvcc -V.\n"
               "      \n      \n      torch.__version__  = 1.13.1\n      \n      \n      CUDA_HOME = /usr\n")
# https://github.com/mistralai/mistral-inference/issues/54 (its title)
MISTRAL_TITLE = "# Unable to build Docker image with cuda:11.8.0-devel-ubuntu20.04 - CUDA version (11.8) mismatches the version that was used to compile PyTorch (12.1)\n"
# https://github.com/Dao-AILab/flash-attention/issues/389 (the build command and top during it)
FA_389_BUILD = "2. `MAX_JOBS=4 pip install flash-attn --no-build-isolation`\n- `MAX_JOBS=16 pip install flash-attn --no-build-isolation`\n"
FA_389_TOP = ("top - 01:20:22 up  1:01,  1 user,  load average: 51.09, 19.76, 12.06\n"
              "Tasks: 525 total,   3 running, 522 sleeping,   0 stopped,   0 zombie\n"
              "%Cpu(s): 41.7 us, 35.5 sy,  0.0 ni,  8.6 id, 13.8 wa,  0.0 hi,  0.4 si,  0.0 s\n"
              "MiB Mem : 128686.2 total,    571.3 free, 128028.8 used,     86.1 buff/cache\n"
              "MiB Swap:      0.0 total,      0.0 free,      0.0 used.    524.7 avail Mem\n")
# https://github.com/fabriziosalmi/proxmox-lxc-autoscale/pull/18 (`free -m` on a host with memory to spare)
FREE_M_HEALTHY = ("               total        used        free      shared  buff/cache   available\n"
                  "Mem:           31966       10870        9147        1572       14146       21095\n"
                  "Swap:           2047         137        1910\n")

MANGLES = [lambda t: t, pasting.quoted, pasting.fenced, pasting.crlf, pasting.coloured]


@pytest.mark.parametrize("mangle", MANGLES)
def test_a_setup_py_cuda_floor_beside_a_newer_torch_is_both_findings(cli, use_test_kb, tmp_path, mangle):
    got = findings(cli, tmp_path, mangle(FA_825_ERROR + FA_825_TORCH + FA_825_NVCC))
    assert got["ext-cuda-unsupported-by-project"]["severity"] == "error"
    assert "11.6" in got["ext-cuda-unsupported-by-project"]["message"] and "release 10.1" in got["ext-cuda-unsupported-by-project"]["message"]
    # 12.1 against an nvcc below 11.6: another major, an error
    assert got["torch-toolkit-mismatch"]["severity"] == "error"
    assert "12.1" in got["torch-toolkit-mismatch"]["message"]


def test_the_floor_alone_is_the_project_finding_and_never_a_torch_mismatch(cli, use_test_kb, tmp_path):
    got = findings(cli, tmp_path, CHANGEMAMBA)
    assert got["ext-cuda-unsupported-by-project"]["severity"] == "error"
    assert "torch-toolkit-mismatch" not in got  # torch 1.13.1's CUDA is not shown


def test_a_torch_of_the_floors_major_is_only_a_warning_without_the_nvcc_release(cli, use_test_kb, tmp_path):
    got = findings(cli, tmp_path, FA_825_ERROR + "torch.__version__ = 1.13.1+cu117\n")
    assert got["torch-toolkit-mismatch"]["severity"] == "warning"  # nvcc could be 11.3: a minor skew


def test_a_torch_below_the_floor_is_no_torch_mismatch(cli, use_test_kb, tmp_path):
    got = findings(cli, tmp_path, FA_825_ERROR + "torch.__version__ = 1.10.0+cu113\n")
    assert "torch-toolkit-mismatch" not in got
    assert "ext-cuda-unsupported-by-project" in got


@pytest.mark.parametrize("text, version, cuda", [
    (FA_825_TORCH, "2.3.1+cu121", "12.1"),
    ("# torch.__version__ = 2.2.0+cu118 but showing Error: FlashAttention is only supported on CUDA 11.6 and above.\n", "2.2.0+cu118", "11.8"),
    ("torch.__version__: 2.0.1+cpu.\n", "2.0.1+cpu", None),
])
def test_torch_version_inside_a_sentence_or_title_is_read_with_its_cuda(text, version, cuda):
    facts = facts_of(repl.find, text)
    assert facts["torch.version"] == version
    assert facts["torch.cuda"] == cuda


def test_a_comparison_with_torch_version_states_no_version():
    assert "torch.version" not in facts_of(repl.find, 'if torch.__version__ == "2.1.0": print("ok")\n')


@pytest.mark.parametrize("text", pasting.as_pasted(MISTRAL_TITLE))
def test_the_cpp_extension_mismatch_quoted_without_its_head_is_a_torch_toolkit_mismatch(cli, use_test_kb, tmp_path, text):
    got = findings(cli, tmp_path, text)
    assert got["torch-toolkit-mismatch"]["severity"] == "error"


@pytest.mark.parametrize("mangle", MANGLES)
def test_top_showing_memory_exhausted_during_a_max_jobs_build_is_jobs_exceeding_memory(cli, use_test_kb, tmp_path, mangle):
    got = findings(cli, tmp_path, mangle(FA_389_BUILD + FA_389_TOP))
    finding = got["ext-jobs-exceed-memory"]
    assert finding["severity"] == "error"
    assert "0.5 GiB available of 125.7 GiB" in finding["message"] and "no swap" in finding["message"]
    assert "flash-attn" in finding["message"]


def test_top_is_read_with_its_swap_line():
    memory = facts_of(build_memory.find, FA_389_TOP)["system.memory"]
    assert memory["total_bytes"] == int(128686.2 * 1024**2)
    assert memory["available_bytes"] == int(524.7 * 1024**2)  # top's "avail Mem", not bare "free"
    assert memory["swap_total_bytes"] == 0


def test_exhausted_memory_without_a_build_in_the_report_is_no_finding(cli, use_test_kb, tmp_path):
    assert "ext-jobs-exceed-memory" not in findings(cli, tmp_path, FA_389_TOP)


def test_free_swap_to_fall_back_on_is_no_finding(cli, use_test_kb, tmp_path):
    with_swap = FA_389_TOP.replace("MiB Swap:      0.0 total,      0.0 free,      0.0 used.",
                                   "MiB Swap:  32768.0 total,  30000.0 free,   2768.0 used.")
    assert "ext-jobs-exceed-memory" not in findings(cli, tmp_path, FA_389_BUILD + with_swap)


def test_free_m_with_memory_to_spare_is_no_finding(cli, use_test_kb, tmp_path):
    memory = facts_of(build_memory.find, FREE_M_HEALTHY)["system.memory"]
    assert memory["total_bytes"] == 31966 * 1024 and memory["available_bytes"] == 21095 * 1024  # free's columns by its header
    assert "ext-jobs-exceed-memory" not in findings(cli, tmp_path, FA_389_BUILD + FREE_M_HEALTHY)


def test_free_h_and_meminfo_units_are_read():
    # the same host's memory as `free -h` and /proc/meminfo print it (its units, its columns)
    free_h = ("               total        used        free      shared  buff/cache   available\n"
              "Mem:           125Gi       124Gi       558Mi        12Mi        86Mi       512Mi\n"
              "Swap:             0B          0B          0B\n")
    memory = facts_of(build_memory.find, free_h)["system.memory"]
    assert memory["total_bytes"] == 125 * 1024**3 and memory["available_bytes"] == 512 * 1024**2 and memory["swap_total_bytes"] == 0
    meminfo = "MemTotal:       131774668 kB\nMemFree:          585012 kB\nMemAvailable:     537292 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\n"
    memory = facts_of(build_memory.find, meminfo)["system.memory"]
    assert memory["available_bytes"] == 537292 * 1024 and memory["swap_total_bytes"] == 0
