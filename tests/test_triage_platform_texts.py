"""Issue 26, batch 21: texts of the machine around the framework (a CPU without AVX, an x86
Python on Apple silicon, a glibc older than a wheel, NCCL without an IP interface, CUDA seeing no
device, a Windows DLL's missing dependency, driver libraries baked into an image, a CUDA library
of another release). The first three raise cpu-lacks-avx, python-arch-mismatch and glibc-too-old
(fwdoctor.rules.platform), quoting the line, and their note is not printed again; the others are
read by a doctor/kb/errors.yaml row whose note says what to do, and raise no error. Every text is quoted from the development-part
report of tests/data/triage-field named above it (its public thread in parentheses)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("use_test_kb")


def triaged(cli, tmp_path, text: str) -> tuple[dict[str, dict], dict[str, str], str]:
    """(report.errors entries by kind, findings' severities by id, the text report unwrapped)."""
    path = tmp_path / "report.md"
    path.write_text(text, encoding="utf-8")
    doc = json.loads(cli("triage", "--json", str(path)).output)
    entries = {e["kind"]: e for e in (doc["facts"].get("report.errors") or {}).get("value") or []}
    findings = {f["id"]: f["severity"] for f in doc["findings"]}
    shown = cli("triage", str(path)).output
    return entries, findings, " ".join(part.strip() for part in shown.split("\n"))


def assert_noted_without_error(entries, findings, shown, kind: str) -> dict:
    entry = entries[kind]
    assert entry["note"].startswith("no finding id fits: ")
    assert " ".join(entry["note"].split()) in shown  # printed under "Error texts no finding id covers"
    assert "error" not in findings.values(), findings
    return entry


def assert_raised(entries, findings, shown, kind: str, finding_id: str, severity: str = "error") -> dict:
    entry = entries[kind]
    assert findings.get(finding_id) == severity, findings
    assert f"report line {entry['line']}" in shown
    assert " ".join(entry["note"].split()) not in shown  # the finding cites it: not listed again as uncovered
    return entry


# jax/jaxlib-xeon-x5690-westmere-no-avx.md (jax-ml/jax#31723)
JAXLIB_NO_AVX = """\
```
    cpu_feature_guard.check_cpu_features()
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~^^
RuntimeError: This version of jaxlib was built using AVX instructions, which your CPU and/or operating system do not support. You may be able work around this issue by building jaxlib from source.
````

lscpu: Architecture:             x86_64
  Model name:             Intel(R) Xeon(R) CPU           X5690  @ 3.47GHz
"""

# jax/luxai-macos-x86-python-on-arm-jaxlib-avx.md (Lux-AI-Challenge/Lux-Design-S3#21)
JAXLIB_X86_ON_ARM = """\
`This version of jaxlib was built using AVX instructions, which your CPU and/or operating system do not support. This error is frequently encountered on macOS when running an x86 Python installation on ARM hardware. In this case, try installing an ARM build of Python. Otherwise, you may be able work around this issue by building jaxlib from source.
`
 uninstalling/upgrading jaxlib/building jaxlib from source or installing an ARM build of python did not solve this issue.

I am using macOS 14.4 with an apple m3 pro chip.
"""


def test_jaxlibs_avx_guard_says_the_cpu_lacks_avx(cli, tmp_path):
    entries, findings, shown = triaged(cli, tmp_path, JAXLIB_NO_AVX)
    entry = assert_raised(entries, findings, shown, "jaxlib-cpu-lacks-avx", "cpu-lacks-avx")
    assert entry["isa"] == "AVX" and "X5690" in shown  # the model from the lscpu lines below it
    assert "x86-python-on-apple-silicon" not in entries  # no macOS hint in this text


def test_jaxlibs_macos_hint_names_the_apple_chip_the_report_names(cli, tmp_path):
    entries, findings, shown = triaged(cli, tmp_path, JAXLIB_X86_ON_ARM)
    assert "jaxlib-cpu-lacks-avx" in entries and "cpu-lacks-avx" not in findings  # Rosetta's, not the CPU's
    entry = assert_raised(entries, findings, shown, "x86-python-on-apple-silicon", "python-arch-mismatch", "warning")
    assert entry["apple_silicon"] == "report line 5: apple m3" and "report line 5: apple m3" in shown
    assert "error" not in findings.values(), findings


# tensorflow/tf17-amd-a4-3300m-no-avx-illegal-instruction.md (tensorflow/tensorflow#18322)
TF_ILLEGAL = """\
>>> import tensorflow as tf
Illegal instruction ( core dumped creato )
"""
# paddle/paddle300b1-docker-illegal-instruction-avx-off-build-works.md (PaddlePaddle/Paddle#69003)
PADDLE_ILLEGAL = """\
python
>>> import paddle
Illegal instruction (core dumped)
```

### 版本&环境信息 Version & Environment Information

****************************************
Paddle version: N/A
Paddle With CUDA: N/A

OS: ubuntu 22.04
Nvidia driver version: 565.57.01
Nvidia driver List:
GPU 0: NVIDIA A100 80GB PCIe
"""


@pytest.mark.parametrize("text", [TF_ILLEGAL, PADDLE_ILLEGAL], ids=["tensorflow-1.7", "paddle-3.0.0b1"])
def test_an_illegal_instruction_on_import_points_at_avx(cli, tmp_path, text):
    entries, findings, shown = triaged(cli, tmp_path, text)
    entry = assert_raised(entries, findings, shown, "illegal-instruction", "cpu-lacks-avx")
    assert entry["framework"] in ("tensorflow", "paddle") and "SIGILL" in entry["note"]


def test_an_illegal_instruction_after_no_avx_framework_keeps_its_note_and_raises_no_error(cli, tmp_path):
    entries, findings, shown = triaged(cli, tmp_path, ">>> import torch\nIllegal instruction (core dumped)\n")
    entry = assert_noted_without_error(entries, findings, shown, "illegal-instruction")
    assert "framework" not in entry and "WITH_AVX=OFF" in entry["note"]


# jax/jaxlib-centos7-glibc-217-needs-223.md (jax-ml/jax#854)
GLIBC_223 = "ImportError: /lib64/libm.so.6: version `GLIBC_2.23' not found (required by lib/python3.7/site-packages/jaxlib/xla_extension.so)\n"
# doctor/kb/errors.yaml's example of libstdcxx-version-not-found (dmtcp/dmtcp#790): libstdc++, not glibc
GLIBCXX_320 = "/bin/bash: /lib64/libstdc++.so.6: version `GLIBCXX_3.4.20' not found (required by /gpfs/fs1/home/a/ap248/ap248/dmtcp/lib/dmtcp/libdmtcp_batch-queue.so)\n"


def test_a_glibc_older_than_the_wheel_names_the_library_and_the_version_needed(cli, tmp_path):
    entries, findings, shown = triaged(cli, tmp_path, GLIBC_223)
    entry = assert_raised(entries, findings, shown, "glibc-version-not-found", "glibc-too-old")
    assert (entry["library"], entry["needed"]) == ("/lib64/libm.so.6", "GLIBC_2.23")
    assert "older than lib/python3.7/site-packages/jaxlib/xla_extension.so needs (GLIBC_2.23)" in shown
    assert "libstdcxx-version-not-found" not in entries
    assert "glibc-version-not-found" not in triaged(cli, tmp_path, GLIBCXX_320)[0]


# nccl-fabric/nccl-socket-creation-failed-no-ip-interface.md (NVIDIA/nccl#210)
NCCL_SOCKET = "include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol\n"


def test_nccls_socket_creation_failure_asks_for_an_ip_interface(cli, tmp_path):
    # since issue 26's nccl-fabric work a finding id states it (tests/test_triage_nccl_fabric.py)
    entries, findings, shown = triaged(cli, tmp_path, NCCL_SOCKET)
    assert "nccl-socket-family-unsupported" in entries and findings.get("nccl-socket-interface-missing") == "error"


# tensorflow/fpn-tf-cuda-visible-devices-1-single-gpu-no-device.md (DetectionTeamUCAS/FPN_Tensorflow#146)
CUINIT_NO_DEVICE = ("2020-12-29 10:10:44.476602: E tensorflow/stream_executor/cuda/cuda_driver.cc:318] failed call to cuInit: "
                    "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected\n")


def test_cuda_seeing_no_device_is_cuda_visible_devices_hides_gpus(cli, tmp_path):
    # since issue 26's visibility work a finding id states it (tests/test_rules_visibility.py)
    entries, findings, shown = triaged(cli, tmp_path, CUINIT_NO_DEVICE)
    # a warning: the report does not show the variable, which is only the likeliest cause
    assert "cuda-no-device" in entries and findings.get("cuda-visible-devices-hides-gpus") == "warning"
    assert "report line 1" in shown and "CUDA_VISIBLE_DEVICES" in shown and "nvidia-smi -L" in shown


# windows-wsl/kohya-win11-torch24-fbgemm-libomp140-missing.md (kohya-ss/sd-scripts#1597): the
# console wrapped the message before the DLL's path
FBGEMM_126 = """\
02:54:16-476773 INFO     nVidia toolkit detected
02:54:18-197331 ERROR    Could not load torch: [WinError 126] Das angegebene Modul wurde nicht gefunden. Error loading
                         "P:\\AI\\kohya_ss\\venv\\lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its dependencies.
"""


def test_a_torch_dll_windows_cannot_load_is_named_with_what_it_needs(cli, tmp_path):
    entries, findings, shown = triaged(cli, tmp_path, FBGEMM_126)
    # windows-msvc-runtime-missing (FWD547) since issue 26's batch 25: the row raises it, naming
    # the DLL and torch 2.4.0's extra libomp140 need in the fix.
    entry = entries["windows-dll-dependency-missing"]
    assert findings.get("windows-msvc-runtime-missing") == "error", findings
    assert "note" not in entry and f"report line {entry['line']}" in shown
    assert (entry["line"], entry["path"]) == (2, "P:\\AI\\kohya_ss\\venv\\lib\\site-packages\\torch\\lib\\fbgemm.dll")
    assert "fbgemm.dll" in shown and "libomp140.x86_64.dll" in shown


# containers/loghi-wsl2-image-bundles-libnvidia-ml-file-exists.md (knaw-huc/loghi#3)
LIB_EXISTS = """\
docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'
nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/4f7924ec6b328915cd622e25d220121ae3018c9da36cb4a7ef2109ae719a1f19/merged/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1: file exists: unknown.
"""


def test_a_driver_library_baked_into_the_image_is_named(cli, tmp_path):
    entries, findings, shown = triaged(cli, tmp_path, LIB_EXISTS)
    entry = entries["nvidia-container-cli-lib-exists"]
    # container-image-ships-driver-libs (FWD147) since issue 26's relabel: the finding names the library
    assert findings.get("container-image-ships-driver-libs") == "error", findings
    assert entry["lib"] == "libnvidia-ml.so.1" and "the image ships libnvidia-ml.so.1" in shown


# conda/pytorch113-conda-nvidia-libcusparse-12-for-cu117.md (pytorch/pytorch#90673)
CUSPARSE_12_FOR_11 = """\
ImportError: /fsx/conda/envs/test_libcusparse/lib/python3.10/site-packages/torch/lib/libtorch_cuda_cu.so: undefined symbol: cusparseSpSM_analysis, version libcusparse.so.11
>>>
```

what's been downloaded from conda install command.
+ libcusparse                12.0.0.76  0                             nvidia/linux-64         Cached
"""


def test_a_cuda_library_of_another_release_names_the_soname_and_the_symbol(cli, tmp_path):
    entries, findings, shown = triaged(cli, tmp_path, CUSPARSE_12_FOR_11)
    entry = entries["cuda-lib-symbol-of-other-release"]
    # conda's nvidia channel put the other release there (conda-cuda-libs-mismatch's case), not
    # LD_LIBRARY_PATH: framework-libs-shadowed (the row's finding) stays quiet
    assert "framework-libs-shadowed" not in findings, findings
    assert (entry["soname"], entry["symbol"]) == ("libcusparse.so.11", "cusparseSpSM_analysis")
    assert entry["library"].endswith("/torch/lib/libtorch_cuda_cu.so")
    assert "cudnn-undefined-symbol" not in entries and "cudnn-shadowed" not in findings


# conda/micromamba-pytorch-libtorch-cpu-execstack-glibc241.md (conda-forge/pytorch-cpu-feedstock#350)
EXECSTACK = "ImportError: libtorch_cpu.so: cannot enable executable stack as shared object requires: Invalid argument\n"
CONDA_GLIBC = "```\n       virtual packages : __unix=0=0\n                          __linux=6.13.2=0\n                          __glibc={glibc}=0\n```\n"


def test_a_library_asking_for_an_executable_stack_on_glibc_241_is_named(cli, tmp_path):
    entries, findings, shown = triaged(cli, tmp_path, EXECSTACK + "\n" + CONDA_GLIBC.format(glibc="2.41"))
    entry = entries["execstack-refused"]
    assert findings.get("glibc-execstack-refused") == "error", findings
    assert entry["library"] == "libtorch_cpu.so" and f"report line {entry['line']}" in shown
    assert "glibc is 2.41" in shown and "GLIBC_TUNABLES=glibc.rtld.execstack=2" in shown


def test_the_same_refusal_on_a_glibc_older_than_241_is_not_that_cause(cli, tmp_path):
    _, findings, _ = triaged(cli, tmp_path, EXECSTACK + "\n" + CONDA_GLIBC.format(glibc="2.40"))
    assert "glibc-execstack-refused" not in findings
