"""cuDNN versus the GPUs present: the cudnn_arch rows of libs.yaml, their loader and queries,
and the rule `cudnn-gpu-unsupported`.

The rule tests read a copy of the frozen test KB (tests/kb) with the cudnn_arch rows below
added in tmp_path (tests/kb/README.md: a test that needs rows the snapshot lacks builds them
there). The rows are the shipped ones (doctor/kb/libs.yaml, 2026-12-01), cited with the test
KB's own source keys; tests/test_kb_audit.py checks the shipped rows against the quoted
matrices and wheel measurements. GPU names and compute capabilities are NVIDIA's
(https://developer.nvidia.com/cuda-gpus, https://developer.nvidia.com/cuda-legacy-gpus)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fwdoctor.kb import KB, KBError
from fwdoctor.model import Fact, Facts, Severity
from fwdoctor.rules import libs as rules
from conftest import TEST_KB_DIR

SITE = "/venv/lib/python3.11/site-packages"

CUDNN_ARCH = """
cudnn_arch:
  - {versions: ">=8.9,<9", cuda_majors: [11, 12], min_cc: "5.0", max_cc: null, source: S-CUDNN896}
  - {versions: ">=9.0,<9.11", cuda_majors: [11, 12], min_cc: "5.0", max_cc: null, source: [S-CUDNN900, S-CUDNNLATEST]}
  - {versions: ">=9.11,<9.29", cuda_majors: [12], min_cc: "7.5", max_cc: null, source: S-CUDNN917}
  - {versions: ">=9.12,<9.29", cuda_majors: [13], min_cc: "7.5", max_cc: null, source: S-CUDNN917}
"""

V100 = {"index": 0, "name": "Tesla V100-SXM2-32GB", "cc": "7.0"}
GTX1080TI = {"index": 0, "name": "NVIDIA GeForce GTX 1080 Ti", "cc": "6.1"}
RTX4090 = {"index": 1, "name": "NVIDIA GeForce RTX 4090", "cc": "8.9"}
RTX5090 = {"index": 0, "name": "NVIDIA GeForce RTX 5090", "cc": "12.0"}
K80 = {"index": 0, "name": "Tesla K80", "cc": "3.7"}


def _kb_with(tmp_path: Path, extra: str) -> KB:
    folder = tmp_path / "kb"
    shutil.copytree(TEST_KB_DIR, folder)
    libs = folder / "libs.yaml"
    libs.write_text(libs.read_text() + extra)
    return KB.load(folder)


@pytest.fixture
def kb(tmp_path):
    return _kb_with(tmp_path, CUDNN_ARCH)


def pip(cuda=12, version="9.19.0.56"):
    return {"kind": "pip", "prefix": f"{SITE}/nvidia/cudnn", "header_version": ".".join(version.split(".")[:3]),
            "library_version": "9", "library": f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9",
            "header": f"{SITE}/nvidia/cudnn/include/cudnn_version.h", "cuda_major": cuda,
            "package": f"nvidia-cudnn-cu{cuda} {version}"}


def dpkg(version="9.20.0.48", cuda=12):
    return {"kind": "dpkg", "prefix": "/usr", "header_version": ".".join(version.split(".")[:3]),
            "library_version": ".".join(version.split(".")[:3]), "library": f"/usr/lib/x86_64-linux-gnu/libcudnn.so.{version[:6]}",
            "header": "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h", "cuda_major": cuda,
            "package": f"libcudnn9-cuda-{cuda} {version}-1"}


def facts(installs, gpus, pin=None, torch_cuda="12.8", first=None):
    requires = {f"nvidia-cudnn-cu{pin[0]}": f"=={pin[1]}"} if pin else {}
    return Facts([
        Fact("cudnn.installs", list(installs)), Fact("cudnn.ld_first", first), Fact("gpus.list", list(gpus)),
        Fact("pci.nvidia_gpus", []), Fact("ld.library_path", []), Fact("ld.preload", []),
        Fact("torch.location", f"{SITE}/torch"), Fact("torch.cuda", torch_cuda), Fact("torch.requires", requires),
        Fact("cuda.active", None),
    ])


# ----------------------------------------------------------------------------- the rule
def test_an_upgraded_cu12_cudnn_on_a_v100_is_an_error_and_goes_back_to_torchs_pin(kb):
    # torch 2.10.0+cu128 pins nvidia-cudnn-cu12==9.10.2.21; `pip install -U` brought 9.19.
    (finding,), skipped = rules.cudnn_gpu_unsupported.evaluate(facts([pip(12, "9.19.0.56")], [V100], pin=(12, "9.10.2.21")), kb)
    assert skipped is None and finding.severity is Severity.ERROR and finding.id == "cudnn-gpu-unsupported"
    assert "nvidia-cudnn-cu12 9.19.0.56" in finding.message and "7.5 and newer" in finding.message
    assert "Tesla V100-SXM2-32GB is 7.0" in finding.message and "torch loads it" in finding.message
    assert finding.fix.recipe == "env" and finding.fix.commands == ("pip install nvidia-cudnn-cu12==9.10.2.21",)
    assert finding.evidence["supported_min_cc"] == "7.5" and finding.evidence["cc"] == "7.0"


def test_the_last_release_before_the_cut_runs_a_v100(kb):
    found, skipped = rules.cudnn_gpu_unsupported.evaluate(facts([pip(12, "9.10.2.21")], [V100], pin=(12, "9.10.2.21")), kb)
    assert found == [] and skipped is None


def test_when_torchs_own_pin_is_too_new_the_fix_bounds_the_release_line_and_says_why(kb):
    (finding,), _ = rules.cudnn_gpu_unsupported.evaluate(facts([pip(12, "9.19.0.56")], [GTX1080TI], pin=(12, "9.19.0.56")), kb)
    assert finding.fix.commands == ("pip install 'nvidia-cudnn-cu12<9.11'",)
    assert finding.fix.options == {"pip_install": ["nvidia-cudnn-cu12<9.11"]}
    assert "cuDNN version incompatibility" in finding.fix.note and "select torch" in finding.fix.note


def test_a_system_copy_nobody_loads_first_is_a_warning_with_the_release_to_install(kb):
    (finding,), _ = rules.cudnn_gpu_unsupported.evaluate(facts([pip(12, "9.10.2.21"), dpkg("9.20.0.48")], [V100], pin=(12, "9.10.2.21")), kb)
    assert finding.severity is Severity.WARNING and "libcudnn9-cuda-12" in finding.message
    assert "programs that load it" in finding.message
    assert finding.fix.recipe is None and "before 9.11" in finding.fix.note and "CUDA 12" in finding.fix.note


def test_a_system_copy_put_first_by_ld_library_path_is_an_error(kb):
    first = {"path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "version": "9.20.0", "via": "LD_LIBRARY_PATH"}
    found, _ = rules.cudnn_gpu_unsupported.evaluate(facts([pip(12, "9.10.2.21"), dpkg("9.20.0.48")], [V100], first=first), kb)
    assert [f.severity for f in found] == [Severity.ERROR] and "LD_LIBRARY_PATH puts it first" in found[0].message


def test_only_the_gpus_below_the_floor_are_named_on_a_mixed_host(kb):
    (finding,), _ = rules.cudnn_gpu_unsupported.evaluate(facts([pip(13, "9.24.0.43")], [RTX4090, {**V100, "index": 2}], torch_cuda="13.0"), kb)
    assert "GPU 2 Tesla V100" in finding.message and "RTX 4090" not in finding.message
    assert [g["index"] for g in finding.evidence["gpus"]] == [2]


def test_every_supported_gpu_passes(kb):
    found, skipped = rules.cudnn_gpu_unsupported.evaluate(facts([pip(13, "9.24.0.43")], [RTX4090, RTX5090], torch_cuda="13.0"), kb)
    assert found == [] and skipped is None


def test_cudnn_8_9_claims_no_ceiling_because_its_wheels_carry_ptx(kb):
    # The 8.9.x matrices stop at 9.0, but nvidia-cudnn-cu12 8.9.7.29 ships compute_90 PTX
    # (tests/data/kb-sources/cudnn-wheels-sass.txt), so a Blackwell GPU is not flagged.
    found, skipped = rules.cudnn_gpu_unsupported.evaluate(facts([pip(12, "8.9.7.29")], [RTX5090]), kb)
    assert found == [] and skipped is None


def test_a_row_with_a_ceiling_flags_newer_gpus(tmp_path):
    # No shipped row has a ceiling; the loader and rule support one (a release without PTX).
    ceiling = '\ncudnn_arch:\n  - {versions: ">=8.9,<9", cuda_majors: [12], min_cc: "5.0", max_cc: "9.0", source: S-CUDNN896}\n'
    kb = _kb_with(tmp_path, ceiling)
    (finding,), _ = rules.cudnn_gpu_unsupported.evaluate(facts([pip(12, "8.9.7.29")], [RTX5090]), kb)
    assert "5.0 to 9.0" in finding.message and finding.evidence["supported_max_cc"] == "9.0"


def test_a_gpu_no_cudnn_release_supports_gets_no_command_but_says_so(kb):
    (finding,), _ = rules.cudnn_gpu_unsupported.evaluate(facts([pip(11, "8.9.7.29")], [K80], torch_cuda="11.8"), kb)
    assert finding.fix.commands == () and "no cuDNN release the KB knows for CUDA 11" in finding.fix.note


def test_a_release_past_the_kb_is_not_checked_never_passed(kb):
    found, skipped = rules.cudnn_gpu_unsupported.evaluate(facts([pip(13, "9.40.0.1")], [V100], torch_cuda="13.0"), kb)
    assert found == [] and skipped is not None and "no data for cuDNN 9.40.0 for CUDA 13" in skipped.reason


def test_a_gpu_of_unknown_compute_capability_is_not_checked(kb):
    gpu = {"index": 0, "name": "NVIDIA Unknown Board 9000"}
    found, skipped = rules.cudnn_gpu_unsupported.evaluate(facts([pip(12, "9.19.0.56")], [gpu]), kb)
    assert found == [] and "no compute capability known for NVIDIA Unknown Board 9000" in skipped.reason


def test_without_the_rows_the_rule_says_not_checked(test_kb):
    # The frozen test KB predates cudnn_arch: every version is "no data".
    found, skipped = rules.cudnn_gpu_unsupported.evaluate(facts([pip(12, "9.19.0.56")], [V100]), test_kb)
    assert found == [] and "cudnn_arch" in skipped.reason


def test_the_rule_documents_its_sections():
    doc = rules.cudnn_gpu_unsupported.doc
    for section in ("What it does:", "Why is this bad?", "Example:", "Fix:"):
        assert section in doc
    assert 'pip install "nvidia-cudnn-cu12<9.11"' in doc


# ----------------------------------------------------------------------------- the loader
def test_unknown_cuda_major_needs_the_rows_of_every_major_to_agree(kb):
    assert kb.libs.cudnn_arch_row("9.20.0", None).span() == "7.5 and newer"  # cu12 and cu13 rows agree
    assert kb.libs.cudnn_arch_row("9.5.1", None).span() == "5.0 and newer"


def test_rows_of_one_cuda_major_must_not_overlap(tmp_path):
    overlapping = CUDNN_ARCH + '  - {versions: ">=9.10,<9.12", cuda_majors: [12], min_cc: "7.0", max_cc: null, source: S-CUDNN917}\n'
    with pytest.raises(KBError, match="two rows for CUDA 12 overlap"):
        _kb_with(tmp_path, overlapping)


def test_a_row_needs_an_upper_bound_and_a_sane_span(tmp_path):
    with pytest.raises(KBError, match="needs an upper bound"):
        _kb_with(tmp_path, '\ncudnn_arch:\n  - {versions: ">=9.11", cuda_majors: [12], min_cc: "7.5", source: S-CUDNN917}\n')
    with pytest.raises(KBError, match="max_cc 7.0 is below min_cc 7.5"):
        _kb_with(tmp_path / "b", '\ncudnn_arch:\n  - {versions: ">=9.11,<9.12", cuda_majors: [12], min_cc: "7.5", max_cc: "7.0", source: S-CUDNN917}\n')


# ----------------------------------------------------------------------------- the shipped rows
@pytest.mark.parametrize(
    "version, cuda, cc, supported",
    [
        ("9.10.2.21", 12, "7.0", True),   # last cu12 release with sm_70 kernels (S-CUDNNWHEELS)
        ("9.11.0.98", 12, "7.0", False),  # first without (S-CUDNNWHEELS)
        ("9.17.0.29", 12, "7.5", True),   # 9.17.0 matrix: 7.5 is the lowest (S-CUDNN917)
        ("9.17.0.29", 13, "7.0", False),
        ("9.10.2.21", 11, "5.0", True),   # 9.10.2 matrix, CUDA 11.x
        ("8.9.7.29", 12, "3.7", False),   # 8.9.6 matrix starts at 5.0
        ("9.28.0.42", 12, "12.0", True),
    ],
)
def test_the_shipped_kb_answers_the_audited_cases(version, cuda, cc, supported):
    assert KB().libs.cudnn_arch_row(version, cuda).supports(cc) is supported


def test_the_cudnn_of_a_conda_torchs_own_environment_is_an_error_with_a_conda_command(kb):
    conda = {"kind": "conda", "prefix": "/venv", "header_version": "9.19.0", "library_version": "9.19.0",
             "library": "/venv/lib/libcudnn.so.9.19.0", "header": "/venv/include/cudnn_version.h",
             "cuda_major": 12, "package": "cudnn 9.19.0.56"}
    (finding,), _ = rules.cudnn_gpu_unsupported.evaluate(facts([conda], [V100]), kb)
    assert finding.severity is Severity.ERROR and "torch loads it" in finding.message
    assert finding.fix.commands == ('conda install "cudnn<9.11"',)
