"""nccl-release-known-bug (FWD405) and driver-release-known-bug (FWD125), issue 26: a release with a
known bug, fixed in a later release (doctor/kb/libs.yaml nccl_bugs with `symptoms`, doctor/kb/cuda.yaml
driver_bugs). Triage says error where a report shows an affected release and the row's symptom, a
warning on the release alone; the same symptom on an unaffected release is not this id. `check`
warns on the release alone. The errors.yaml rows' own examples run in tests/test_triage_corpus.py.
"""

from __future__ import annotations

import pytest

from fwdoctor.engine import judge
from fwdoctor.kb import KB
from fwdoctor.model import Fact, Facts, Severity
from fwdoctor.rules import RULES
from fwdoctor.rules import releases
from fwdoctor.triage.judge import run
from tests.pasting import forms

# vllm-project/vllm#3688 (torch 2.1.2's NCCL 2.18.1, vLLM's custom all-reduce; NVIDIA/nccl#957), verbatim.
VLLM_3688 = (
    "(RayWorkerVllm pid=4028887) ERROR 03-28 21:38:23 ray_utils.py:44] torch.distributed.DistBackendError: NCCL error in: "
    "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1\n"
    "(RayWorkerVllm pid=4028887) ERROR 03-28 21:38:23 ray_utils.py:44] ncclUnhandledCudaError: Call to CUDA function failed.\n"
    "(RayWorkerVllm pid=4028887) ERROR 03-28 21:38:23 ray_utils.py:44] Last error:\n"
    "(RayWorkerVllm pid=4028887) ERROR 03-28 21:38:23 ray_utils.py:44] Cuda failure 'invalid argument'\n"
)
# NVIDIA/nccl#1185 "FSDP fails on v2.20.3-1": its WARN line verbatim, beside the wheel row collect_env prints.
UDS_LINE = ("<host>:33:10589 [2] misc/ipcsocket.cc:57 NCCL WARN UDS: Binding to socket /tmp/nccl-socket-2-e647f8d8e15809a1 "
            "failed : Address already in use (98)\n")
NCCL_1185 = "[pip3] nvidia-nccl-cu12==2.20.3\n" + UDS_LINE
# rapidsai/dask-cuda#909's pynvml error, verbatim, beside an nvidia-smi header of an affected 535 driver
# (535.98: nvitop#88/#89, the release that removed the process-info v3 functions).
NVML_ERROR = "pynvml.nvml.NVMLError_FunctionNotFound: Function Not Found for nvmlDeviceGetComputeRunningProcesses_v2\n"
SMI_53598 = "| NVIDIA-SMI 535.98                 Driver Version: 535.98       CUDA Version: 12.2     |\n"
# gpuopenanalytics/pynvml#48: the driver the reporter went back to, verbatim.
SMI_525 = "| NVIDIA-SMI 525.125.06   Driver Version: 525.125.06   CUDA Version: 12.0     |\n"


@pytest.fixture(scope="module")
def kb() -> KB:
    return KB()


def found(text: str, kb: KB) -> dict[str, Severity]:
    return {f.id: f.severity for f in run(text, kb).report.findings}


def message(text: str, kb: KB, finding_id: str) -> str:
    return next(f.message for f in run(text, kb).report.findings if f.id == finding_id)


# ------------------------------------------------------------------ the KB rows
def test_every_release_bug_row_names_symptoms_that_are_errors_yaml_rows_pointing_to_its_finding(kb):
    # A symptom alone raises no id (its row's note says so and names the finding that reads it beside the release).
    rows = [("nccl-release-known-bug", b) for b in kb.libs.nccl_bugs if b.symptoms] + [("driver-release-known-bug", b) for b in kb.cuda.driver_bugs]
    assert len(rows) >= 3
    for finding_id, bug in rows:
        assert bug.fixed and not bug.affected.contains(bug.fixed, prereleases=True), bug.id
        for symptom in bug.symptoms:
            sig = kb.errors.by_id(symptom)
            assert sig is not None, f"{bug.id}: {symptom} is no errors.yaml row"
            assert not sig.findings and finding_id in (sig.note or ""), f"{symptom}'s note does not name {finding_id}"


def test_the_nccl_957_row_covers_the_releases_whose_source_has_the_bug_and_not_the_fixed_ones(kb):
    affected = {v for v in ("2.17.1", "2.18.1", "2.18.3", "2.18.5", "2.18.6", "2.19.1", "2.19.3", "2.20.5")
                if any(b.id == "ipc-buffer-memcpy-invalid-argument" for b in kb.libs.nccl_release_bugs(v))}
    assert affected == {"2.18.1", "2.18.3", "2.18.5", "2.19.1"}


def test_the_535_nvml_row_covers_535_43_to_535_98_and_not_the_fixed_patch_release(kb):
    assert [b.id for b in kb.cuda.driver_release_bugs("535.54.03")] == ["nvml-process-info-abi-535"]
    assert kb.cuda.driver_release_bugs("535.98")
    assert kb.cuda.driver_release_bugs("535.104.05") == []
    assert kb.cuda.driver_release_bugs("525.125.06") == []
    assert kb.cuda.driver_release_bugs("not a version") == []


# ------------------------------------------------------------------ triage: release and symptom
@pytest.mark.parametrize("text", [VLLM_3688, *forms(VLLM_3688)])
def test_nccl_2181_with_cuda_failure_invalid_argument_is_the_957_release_bug(text, kb):
    assert found(text, kb).get("nccl-release-known-bug") is Severity.ERROR


def test_the_957_message_names_the_release_the_symptom_and_the_fixed_release(kb):
    said = message(VLLM_3688, kb, "nccl-release-known-bug")
    assert "NCCL 2.18.1" in said and "2.18.6" in said and "invalid argument" in said


@pytest.mark.parametrize("text", [NCCL_1185, *forms(NCCL_1185)])
def test_nccl_2203_wheel_with_the_uds_bind_failure_is_the_1185_release_bug(text, kb):
    assert found(text, kb).get("nccl-release-known-bug") is Severity.ERROR


@pytest.mark.parametrize("text", [SMI_53598 + NVML_ERROR, *forms(SMI_53598 + NVML_ERROR)])
def test_driver_53598_with_nvml_function_not_found_is_the_535_release_bug(text, kb):
    assert found(text, kb).get("driver-release-known-bug") is Severity.ERROR


def test_the_driver_message_names_the_fixed_release(kb):
    assert "535.104.05" in message(SMI_53598 + NVML_ERROR, kb, "driver-release-known-bug")


# ------------------------------------------------------------------ look-alikes
def test_the_same_invalid_argument_on_a_fixed_nccl_is_not_a_release_bug(kb):
    assert "nccl-release-known-bug" in found(VLLM_3688, kb)
    assert "nccl-release-known-bug" not in found(VLLM_3688.replace("NCCL version 2.18.1", "NCCL version 2.19.3"), kb)


def test_the_uds_bind_failure_on_2205_is_not_a_release_bug(kb):
    assert "nccl-release-known-bug" in found(NCCL_1185, kb)
    assert "nccl-release-known-bug" not in found(NCCL_1185.replace("2.20.3", "2.20.5"), kb)


def test_the_symptom_alone_without_a_release_is_not_a_release_bug(kb):
    assert kb.errors.by_id("nccl-uds-bind-in-use") and kb.errors.by_id("nvml-function-not-found")
    assert "nccl-release-known-bug" not in found(UDS_LINE, kb)
    assert "driver-release-known-bug" not in found(NVML_ERROR, kb)


def test_nvml_function_not_found_on_driver_525_is_not_a_driver_release_bug(kb):
    assert "driver-release-known-bug" in found(SMI_53598 + NVML_ERROR, kb)
    assert "driver-release-known-bug" not in found(SMI_525 + NVML_ERROR, kb)


def test_the_nvls_transports_invalid_argument_on_an_affected_release_is_the_fabric_manager_not_an_error_here(kb):
    # NVIDIA/nccl#976: "transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'" on NCCL 2.18.5,
    # a fabric manager restarted under running processes (nccl-nvls-failed).
    text = "NCCL INFO NCCL version 2.18.5+cuda12.2\ntransport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'\n"
    got = found(text, kb)
    assert got.get("nccl-nvls-failed") is Severity.ERROR
    assert got.get("nccl-release-known-bug") is Severity.WARNING


def test_an_affected_release_without_the_symptom_is_only_a_warning(kb):
    assert found("NCCL INFO NCCL version 2.18.1+cuda12.1\n", kb).get("nccl-release-known-bug") is Severity.WARNING
    assert found(SMI_53598, kb).get("driver-release-known-bug") is Severity.WARNING
    assert found("[pip3] nvidia-nccl-cu12==2.20.3\n", kb).get("nccl-release-known-bug") is Severity.WARNING


def test_torchs_pinned_nccl_from_the_kb_counts_when_no_nccl_version_is_shown(kb):
    # torch 2.1.2+cu121 pins nvidia-nccl-cu12 2.18.1 (doctor/kb/torch.yaml); vllm#3688's collect_env head
    # and its symptom line, without the banner torch appends
    text = ("PyTorch version: 2.1.2+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\n"
            "ROCM used to build PyTorch: N/A\n" + VLLM_3688.splitlines(keepends=True)[-1])
    assert found(text, kb).get("nccl-release-known-bug") is Severity.ERROR


# ------------------------------------------------------------------ the live check, on facts
def check(facts: list[Fact], kb: KB) -> dict[str, tuple[Severity, str]]:
    report = judge(Facts(facts), kb, [r for r in RULES if r in releases.RULES])
    return {f.id: (f.severity, f.message) for f in report.findings}


def test_check_warns_on_a_hosts_driver_in_an_affected_range_naming_the_fixed_release(kb):
    got = check([Fact("driver.version", "535.86.05", source="/proc/driver/nvidia/version")], kb)
    severity, said = got["driver-release-known-bug"]
    assert severity is Severity.WARNING and "535.104.05" in said


def test_check_says_nothing_on_a_fixed_driver(kb):
    assert "driver-release-known-bug" in check([Fact("driver.version", "535.54.03", source="test")], kb)
    assert "driver-release-known-bug" not in check([Fact("driver.version", "535.104.05", source="test")], kb)


def test_check_warns_on_torchs_nccl_in_an_affected_range_and_never_errs_without_a_symptom(kb):
    deep = {"nccl_version": "2.20.3"}
    got = check([Fact("torch.deep", deep, source="torch child")], kb)
    assert got["nccl-release-known-bug"][0] is Severity.WARNING
    assert "2.20.5" in got["nccl-release-known-bug"][1]


def test_check_reads_the_installed_nccl_wheel(kb):
    install = {"kind": "pip", "prefix": "/venv/lib/python3.11/site-packages/nvidia/nccl", "library_version": "2.18.3",
               "library": "/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2", "package": "nvidia-nccl-cu12"}
    got = check([Fact("nccl.installs", [install], source="site-packages")], kb)
    assert got["nccl-release-known-bug"][0] is Severity.WARNING
    assert "nccl-release-known-bug" not in check([Fact("nccl.installs", [dict(install, library_version="2.19.3")], source="t")], kb)
    # a wheel upgraded past torch 2.1.2's pin (2.18.1) is the one torch loads
    upgraded = [Fact("nccl.installs", [dict(install, library_version="2.19.3")], source="t"), Fact("torch.version", "2.1.2+cu121", source="t")]
    assert "nccl-release-known-bug" not in check(upgraded, kb)
    assert "nccl-release-known-bug" in check(upgraded[1:], kb)


def test_check_on_a_host_without_nccl_passes_and_without_any_nccl_fact_is_not_checked(kb):
    assert "nccl-release-known-bug" not in check([Fact("nccl.installs", [], source="t")], kb)
    report = judge(Facts([]), kb, list(releases.RULES))
    assert any(n.rule == "nccl-release-known-bug" for n in report.not_checked)
