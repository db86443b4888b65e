"""Issue 26, the torch group: the loader's "undefined symbol: X, version libY.so.N" for a CUDA
library of NVIDIA's pip wheels (errors.yaml row cuda-lib-symbol-of-other-release,
fwdoctor.triage.cuda_libs_shadowed): a system CUDA's older copy loaded before the wheel's.
framework-libs-shadowed is an error only beside the folder that won (ldd, a CUDA toolkit first on
LD_LIBRARY_PATH); alone it is a warning naming the check. Each text is quoted from the public
thread named above it, then mangled as pasting does."""

from __future__ import annotations

import pytest

from fwdoctor.triage import cuda_libs_shadowed
import pasting
from triage_helpers import facts_of, findings

# https://github.com/infiniflow/ragflow/issues/4466 (its ldd and echo, verbatim)
RAGFLOW = ("ldd /home/mit/kxyRAG/ragflow/.venv/lib/python3.12/site-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12\n"
           "\tlinux-vdso.so.1 (0x00007ffebafed000)\n"
           "\tlibnvJitLink.so.12 => /usr/local/cuda-12.1/lib64/libnvJitLink.so.12 (0x000070ddad800000)\n"
           "\tlibpthread.so.0 => /lib/x86_64-linux-gnu/libpthread.so.0 (0x000070ddc0d62000)\n"
           "\n"
           "(ragflow-py3.12) mit@mit-FRONTIER:~/kxyRAG/ragflow$ echo $LD_LIBRARY_PATH\n"
           "/usr/local/cuda-12.1/lib64:\n")
# https://github.com/pytorch/pytorch/issues/111469 (its title: the same symbol, loader's full line)
PT_111469 = ("ImportError: /usr/local/lib/python3.10/dist-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: "
             "undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12\n")
# https://github.com/pytorch/pytorch/pull/141063 (malfet: with LD_LIBRARY_PATH at a CUDA 12.3)
PT_141063 = ("ImportError: /usr/local/lib/python3.10/dist-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: "
             "undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12\n")
# https://github.com/jax-ml/jax/issues/30050 (LD_DEBUG=libs: the HPC SDK's CUDA 12.4 on LD_LIBRARY_PATH)
LD_DEBUG = ("      4709:\tfind library=libnvJitLink.so.12 [0]; searching\n"
            "      4709:\t search path=/usr/lib/x86_64-linux-gnu/openmpi/lib:/opt/nvidia/hpc_sdk/Linux_x86_64/24.5/cuda/12.4/lib64:"
            "/opt/nvidia/hpc_sdk/Linux_x86_64/24.5/math_libs/12.4/lib64\t\t(LD_LIBRARY_PATH)\n")
# https://github.com/pytorch/pytorch/issues/134929 (Kaggle: a conda lib folder, not a toolkit's)
KAGGLE = "os.environ['LD_LIBRARY_PATH'] = f\"/opt/conda/lib:{os.environ.get('LD_LIBRARY_PATH', '')}\"\n"

MANGLES = [lambda t: t, pasting.quoted, pasting.fenced, pasting.crlf, pasting.coloured, pasting.stamped]


@pytest.mark.parametrize("mangle", MANGLES)
def test_ldd_showing_a_system_cudas_nvjitlink_is_that_library_shadowing_the_wheels(cli, use_test_kb, tmp_path, mangle):
    got = findings(cli, tmp_path, mangle(RAGFLOW + PT_111469))
    hit = got["framework-libs-shadowed"]
    assert hit["severity"] == "error"
    assert "/usr/local/cuda-12.1/lib64" in hit["message"] and "__nvJitLinkAddData_12_1" in hit["message"]


@pytest.mark.parametrize("mangle", MANGLES)
def test_an_older_toolkit_first_on_ld_library_path_is_an_error(cli, use_test_kb, tmp_path, mangle):
    text = "export LD_LIBRARY_PATH=/usr/local/cuda-12.3/lib64:$LD_LIBRARY_PATH\n" + PT_141063
    hit = findings(cli, tmp_path, mangle(text))["framework-libs-shadowed"]
    assert hit["severity"] == "error" and "CUDA 12.3's libnvJitLink.so.12" in hit["message"] and "12.4" in hit["message"]


@pytest.mark.parametrize("text", [
    PT_141063,  # the error alone: which copy loaded is not shown
    KAGGLE + PT_141063,  # a conda lib folder: may hold it, may not
    "export LD_LIBRARY_PATH=/usr/local/cuda-12.6/lib64\n" + PT_141063,  # a toolkit newer than 12.4 has the symbol
    # the wheel's own folder first (pytorch/pytorch#111469's workaround) before a toolkit
    "export LD_LIBRARY_PATH=/usr/local/lib/python3.10/dist-packages/nvidia/nvjitlink/lib:/usr/local/cuda-12.1/lib64\n" + PT_141063,
])
def test_without_the_folder_that_won_it_is_a_warning_naming_the_check(cli, use_test_kb, tmp_path, text):
    got = findings(cli, tmp_path, text)
    assert all(f["severity"] != "error" for f in got.values()), got
    if "framework-libs-shadowed" in got:
        assert "env -u LD_LIBRARY_PATH" in " ".join(got["framework-libs-shadowed"]["fix"]["commands"])


def test_an_nvjitlink_wheel_older_than_the_symbol_is_a_warning_on_the_wheel(cli, use_test_kb, tmp_path):
    got = findings(cli, tmp_path, "nvidia-nvjitlink-cu12    12.1.105\n" + PT_141063)
    assert got["framework-nvidia-wheel-mismatch"]["severity"] == "warning"
    assert "nvidia-nvjitlink-cu12 12.1.105" in got["framework-nvidia-wheel-mismatch"]["message"]
    assert "framework-libs-shadowed" not in got


@pytest.mark.parametrize("mangle", MANGLES)
def test_the_reader_takes_ld_library_path_ldd_and_wheels(mangle):
    facts = facts_of(cuda_libs_shadowed.find, mangle(RAGFLOW + LD_DEBUG + "[pip3] nvidia-nvjitlink-cu12==12.4.127\n"))
    assert [v["entries"] for v in facts["cuda.ld_path_said"]] == [
        ["/usr/local/cuda-12.1/lib64"],
        ["/usr/lib/x86_64-linux-gnu/openmpi/lib", "/opt/nvidia/hpc_sdk/Linux_x86_64/24.5/cuda/12.4/lib64", "/opt/nvidia/hpc_sdk/Linux_x86_64/24.5/math_libs/12.4/lib64"]]
    assert facts["cuda.ldd_said"][0]["soname"] == "libnvJitLink.so.12"
    assert [(w["package"], w["version"]) for w in facts["cuda.lib_wheels_said"]] == [("nvidia-nvjitlink-cu12", "12.4.127")]


@pytest.mark.parametrize("path, release", [
    ("/usr/local/cuda-12.1/lib64", "12.1"), ("/opt/nvidia/hpc_sdk/Linux_x86_64/24.5/cuda/12.4/lib64", "12.4"), ("/usr/local/cuda/lib64", None)])
def test_a_toolkit_folder_names_its_release(path, release):
    assert cuda_libs_shadowed.toolkit_release(path) == release
    assert not cuda_libs_shadowed.is_wheel_folder(path)
