"""Whole `fwdoctor check --root ... --env-file ... --json` runs on the tests/roots/libs-*
trees (each holds README.fixture saying what it is and fixture.env): every cuDNN/NCCL id
fires on its case and stays quiet on a near-miss."""

from __future__ import annotations

import pytest

from conftest import ROOTS, finding_ids

pytestmark = pytest.mark.usefixtures("use_test_kb")  # every command and probe reads the frozen tests/kb

LIB_IDS = {
    "cudnn-cuda-mismatch", "cudnn-shadowed", "cudnn-header-library-mismatch", "multiple-cudnn",
    "nccl-cuda-mismatch", "nccl-shadowed", "nccl-header-library-mismatch", "multiple-nccl",
}

# case -> the cuDNN/NCCL ids it must raise, exactly
CASES = {
    "libs-clean": set(),
    "libs-cudnn-cu12-beside-cu13": {"cudnn-cuda-mismatch"},
    "libs-cudnn-shadowed": {"cudnn-shadowed", "cudnn-cuda-mismatch", "multiple-cudnn"},
    "libs-cudnn-ldpath-own": set(),
    "libs-nccl-preloaded": {"nccl-shadowed", "nccl-cuda-mismatch", "multiple-nccl"},
    "libs-nccl-preload-own": set(),
    "libs-nccl-cu12-beside-cu13": {"nccl-cuda-mismatch"},
    "libs-cudnn-header-mismatch": {"cudnn-header-library-mismatch"},
    "libs-cudnn-header-match": set(),
    "libs-nccl-header-mismatch": {"nccl-header-library-mismatch"},
    "libs-nccl-header-match": set(),
}


def check(check_json, case):
    root = ROOTS / case
    return check_json("--root", str(root), "--env-file", str(root / "fixture.env"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_fixture_root_raises_exactly_its_cudnn_and_nccl_findings(check_json, case):
    code, report = check(check_json, case)
    assert finding_ids(report) & LIB_IDS == CASES[case]
    assert code == (1 if any(f["severity"] == "error" for f in report["findings"]) else 0)


def test_every_cudnn_and_nccl_id_fires_in_some_root_and_is_absent_from_another():
    fired = set().union(*CASES.values())
    assert fired == LIB_IDS
    for finding_id in LIB_IDS:
        assert any(finding_id not in ids for ids in CASES.values())


def test_the_shadowed_nccl_finding_names_paths_versions_and_the_env_fix(check_json):
    _, report = check(check_json, "libs-nccl-preloaded")
    (finding,) = [f for f in report["findings"] if f["id"] == "nccl-shadowed"]
    assert finding["message"] == "LD_PRELOAD puts NCCL 2.21.5 (/usr/lib/x86_64-linux-gnu/libnccl.so.2) ahead of torch's NCCL 2.30.7"
    assert finding["fix"]["recipe"] == "env" and finding["fix"]["commands"] == ["unset LD_PRELOAD"]
    assert report["facts"]["nccl.ld_first"]["value"] == {"path": "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "version": "2.21.5", "via": "LD_PRELOAD"}


def test_the_clean_root_reports_torchs_wheels_as_the_only_installs(check_json):
    _, report = check(check_json, "libs-clean")
    cudnn = report["facts"]["cudnn.installs"]["value"]
    nccl = report["facts"]["nccl.installs"]["value"]
    assert [(i["package"], i["header_version"]) for i in cudnn] == [("nvidia-cudnn-cu13 9.24.0.43", "9.24.0")]
    assert [(i["package"], i["library_version"], i["cuda_major"]) for i in nccl] == [("nvidia-nccl-cu13 2.30.7", "2.30.7", 13)]
