"""Audit of doctor/kb/torch.yaml and the TorchKB queries."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from fwdoctor import arch
from fwdoctor.kb import KB, KB_DIR, KBError


@pytest.fixture(scope="module")
def kb():
    return KB.load()


def test_every_row_has_known_sources_and_unique_torch_variant_pairs(kb):
    rows = kb.torch.variants()
    keys = [(v.torch, v.variant) for v in rows]
    assert len(keys) == len(set(keys))
    local = yaml.safe_load((KB_DIR / "torch.yaml").read_text())["sources"]
    for v in rows:
        assert v.source, v
        for key in v.source:
            assert key in kb.sources or key in local, (v.local_version, key)


def test_the_matrix_covers_1_0_through_2_14_with_patch_releases(kb):
    versions = kb.torch.versions()
    for wanted in ("1.0.0", "1.2.0", "1.5.1", "1.7.1", "1.8.1", "1.10.1", "1.12.0", "1.12.1", "1.13.0", "1.13.1", "2.0.1", "2.4.1", "2.7.1", "2.9.0", "2.9.1", "2.12.1", "2.14.0", "2.14.1"):
        assert wanted in versions
    minors = {f"{Version(v).major}.{Version(v).minor}" for v in versions}
    assert {f"2.{n}" for n in range(0, 15)} | {f"1.{n}" for n in range(0, 14) if n != 3} <= minors


# Releases whose previous-versions.md block (S-PREVVER1X) has no untagged pip line: the PyPI build is
# not stated, so none is marked (a plain "1.12.1" then reads as unknown rather than as a guess).
NO_PYPI_DEFAULT = {"1.0.0", "1.0.1", "1.1.0", "1.9.0", "1.9.1", "1.10.0", "1.10.1", "1.11.0", "1.12.0", "1.12.1"}


def test_every_release_has_one_pypi_default_where_a_source_states_it_and_a_cpu_wheel(kb):
    for version in kb.torch.versions():
        rows = kb.torch.variants_of(version)
        assert sum(v.pypi_default for v in rows) == (0 if version in NO_PYPI_DEFAULT else 1), version
        assert any(v.variant == "cpu" and v.cuda is None and v.arch_list is None for v in rows), version
    assert kb.torch.variant_for("1.12.1") is None


# The "Linux and Windows" pip lines of previous-versions.md (S-PREVVER1X), per patch release.
PREVIOUS_VERSIONS = {
    "1.0.0": ["cpu", "cu100", "cu80", "cu90"], "1.0.1": ["cpu", "cu100", "cu90"], "1.1.0": ["cpu", "cu100", "cu90"],
    "1.2.0": ["cpu", "cu100", "cu92"], "1.4.0": ["cpu", "cu101", "cu92"],
    **dict.fromkeys(["1.5.0", "1.5.1", "1.6.0"], ["cpu", "cu101", "cu102", "cu92"]),
    **dict.fromkeys(["1.7.0", "1.7.1"], ["cpu", "cu101", "cu102", "cu110", "cu92"]),
    "1.8.0": ["cpu", "cu102", "cu111"], "1.8.1": ["cpu", "cu101", "cu102", "cu111"],
    **dict.fromkeys(["1.9.0", "1.9.1", "1.10.0", "1.10.1"], ["cpu", "cu102", "cu111"]),
    "1.11.0": ["cpu", "cu102", "cu113"],
    **dict.fromkeys(["1.12.0", "1.12.1"], ["cpu", "cu102", "cu113", "cu116"]),
}


def test_releases_1_0_to_1_12_list_the_variants_previous_versions_md_gives():
    kb = KB.load()
    old = [v for v in kb.torch.versions() if Version(v) < Version("1.13")]
    assert old == sorted(PREVIOUS_VERSIONS, key=Version)  # no 1.3.x, no 1.10.2, no 1.8.2 (LTS index)
    for version, variants in PREVIOUS_VERSIONS.items():
        assert [v.variant for v in kb.torch.variants_of(version)] == variants, version


def test_old_releases_carry_their_companions_and_pypi_default():
    kb = KB.load()
    row = kb.torch.variant_for("1.12.1+cu116")
    assert (row.cuda, row.torchvision, row.torchaudio) == ("11.6", "0.13.1", "0.12.1")
    assert row.index_url == "https://download.pytorch.org/whl/cu116"
    assert kb.torch.variant_for("1.7.1+cu92").torchvision == "0.8.2"
    assert kb.torch.variant_for("1.10.1+cu102").torchvision == "0.11.2"
    # "the default CUDA version for this release is 10.0" (S-REL120); 10.1 for 1.4; 10.2 for 1.5-1.8.
    assert [kb.torch.variant_for(v).variant for v in ("1.2.0", "1.4.0", "1.5.1", "1.6.0", "1.7.1", "1.8.0")] == [
        "cu100", "cu101", "cu102", "cu102", "cu102", "cu102"]


def test_kepler_sm_35_has_sass_until_1_2_and_none_from_1_4():
    # S-BLD2018: "3.5;5.0+PTX" (+6.0;7.0 for 9.0); S-BLD2020 and later: 3.5 became 3.7.
    kb = KB.load()
    for version in ("1.0.1+cu90", "1.1.0+cu100", "1.2.0+cu92", "1.2.0+cu100"):
        assert "3.5" in kb.torch.variant_for(version).arch_list, version
    for v in kb.torch.variants():
        if v.arch_list and Version(v.torch) >= Version("1.4"):
            assert not arch.runs_on(list(v.arch_list), "3.5"), v.local_version
            assert arch.runs_on(list(v.arch_list), "3.7") or Version(v.torch) >= Version("2.1"), v.local_version


def test_1_9_to_1_12_cuda_10_2_wheels_stop_at_volta_and_cuda_11_wheels_reach_ampere():
    # pytorch/builder release/1.9-1.12 (S-BLDR19..S-BLDR112); S-WPFS3 measured the 1.10.1 cu102 list.
    kb = KB.load()
    for version in ("1.9.0+cu102", "1.10.1+cu102", "1.11.0+cu102", "1.12.1+cu102"):
        arch_list = list(kb.torch.variant_for(version).arch_list)
        assert arch_list == ["3.7", "5.0", "6.0", "7.0"], version
        assert not arch.runs_on(arch_list, "8.0"), version
    for version in ("1.9.1+cu111", "1.10.0+cu111", "1.11.0+cu113", "1.12.1+cu113", "1.12.1+cu116"):
        assert arch.runs_on(list(kb.torch.variant_for(version).arch_list), "8.6"), version


@pytest.mark.parametrize("version", ["1.0.0+cu100", "1.0.0+cu80", "1.6.0+cu102", "1.7.1+cu110", "1.8.0+cu111", "1.8.1+cu102"])
def test_old_variants_whose_build_script_is_ambiguous_stay_unknown(version):
    # torch.yaml's note above 1.0: the builder script changed around these releases.
    assert KB.load().torch.variant_for(version).arch_list is None


def test_old_releases_without_python_tags_are_never_recommended(kb):
    assert all(not v.pythons for v in kb.torch.variants() if Version(v.torch) < Version("1.13"))
    assert kb.torch.newest_for_cuda("10.2") is None
    assert kb.torch.newest_for_cuda("11.3") is None
    assert kb.torch.newest_matching(lambda v: v.cuda == "10.2") is None
    assert kb.torch.newest("cu102") is None


def test_cuda_variants_name_their_cuda_version_and_index(kb):
    for v in kb.torch.variants():
        if v.variant == "cpu":
            assert v.index_url == "https://download.pytorch.org/whl/cpu"
            continue
        major, minor = Version(v.cuda).major, Version(v.cuda).minor
        assert v.variant == f"cu{major}{minor}"
        assert v.index_url == f"https://download.pytorch.org/whl/{v.variant}"


def test_every_arch_list_parses_and_confirmed_lists_stay_confirmed(kb):
    for v in kb.torch.variants():
        if v.arch_list is not None:
            assert arch.parse_targets(list(v.arch_list))
    # Still unconfirmed (no stored build script or wheel read for them): they must read as unknown.
    for unknown in ("2.9.1+cu129",):
        assert kb.torch.variant_for(unknown).arch_list is None, unknown
    # Filled from copies of the build script (issue 16; tests/test_kb_audit.py compares them with
    # the quoted lines in tests/data/kb-sources/).
    for filled in ("2.6.0+cu118", "2.6.0+cu126", "2.7.1+cu118", "2.11.0+cu129", "2.12.1+cu129"):
        assert kb.torch.variant_for(filled).arch_list is not None, filled


# Lists read from the PyPI wheels themselves (torch.yaml S-PYPIWHEELS: the "-gencode" flags string and
# the fatbin entries of torch/lib/libtorch_cuda.so; sha256 prefixes there).
@pytest.mark.parametrize(
    "version, arch_list",
    [
        ("2.6.0+cu124", "5.0;6.0;7.0;7.5;8.0;8.6;9.0"),
        ("2.7.0+cu126", "5.0;6.0;7.0;7.5;8.0;8.6;9.0"),
        ("2.7.1+cu126", "5.0;6.0;7.0;7.5;8.0;8.6;9.0"),
        ("2.8.0+cu128", "7.0;7.5;8.0;8.6;9.0;10.0;12.0"),
        ("2.9.1+cu128", "7.0;7.5;8.0;8.6;9.0;10.0;12.0"),
        ("2.10.0+cu128", "7.0;7.5;8.0;8.6;9.0;10.0;12.0"),
        ("2.15.0+cu132", "7.5;8.0;8.6;9.0;10.0;12.0"),
    ],
)
def test_arch_lists_match_the_official_pypi_wheels(kb, version, arch_list):
    assert kb.torch.variant_for(version).arch_list == tuple(arch_list.split(";"))


@pytest.mark.parametrize("version", ["2.11.0+cu130", "2.12.0+cu130", "2.12.1+cu130", "2.13.0+cu130", "2.14.0+cu130", "2.14.1+cu130"])
def test_cu130_wheels_carry_no_ptx_although_release_md_says_12_0_plus_ptx(kb, version):
    # S-PYPIWHEELS / S-WHEEL2141: no code=compute_120 flag and no PTX entry in libtorch_cuda.so's fatbin.
    row = kb.torch.variant_for(version)
    assert row.arch_list == ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0")
    assert not any(t.kind == "ptx" for t in arch.parse_targets(list(row.arch_list)))


def test_cu132_rows_of_2_12_to_2_14_claim_no_unconfirmed_ptx(kb):
    # RELEASE.md's "12.0+PTX" is contradicted by every CUDA 13 wheel read (torch.yaml note above 2.12);
    # the cu132 wheels of 2.12-2.14 were not read, so PTX is not claimed for them either.
    for version in ("2.12.1+cu132", "2.13.0+cu132", "2.14.1+cu132"):
        assert kb.torch.variant_for(version).arch_list == ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0"), version


def test_2_7_cu128_has_blackwell_sass_and_ptx_but_no_volta(kb):
    # S-CORRIDORKEY141: get_arch_list() of 2.7.1+cu128 on Linux ends with compute_120 and has no sm_70.
    arch_list = list(kb.torch.variant_for("2.7.1+cu128").arch_list)
    assert arch_list == ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX"]
    assert not arch.runs_on(arch_list, "7.0")
    assert arch.runs_on(arch_list, "12.0")


def test_2_15_has_wheels_for_python_3_11_to_3_15_and_its_pypi_wheel_is_cu132(kb):
    # S-PYPIFILES215: cp311..cp315 (+ cp314t, cp315t), Requires-Python >=3.11; version.py says +cu132.
    row = kb.torch.variant_for("2.15.0")
    assert row.local_version == "2.15.0+cu132" and row.pypi_default
    assert row.pythons == ("3.11", "3.12", "3.13", "3.14", "3.15")
    assert [v.variant for v in kb.torch.variants_of("2.15.0")] == ["cpu", "cu132"]


def test_cuda_13_wheels_dropped_volta_and_cu126_keeps_maxwell(kb):
    cu130 = kb.torch.variant_for("2.14.1+cu130")
    assert not arch.runs_on(list(cu130.arch_list), "7.0")
    assert arch.runs_on(list(cu130.arch_list), "9.0")
    cu126 = kb.torch.variant_for("2.14.1+cu126")
    assert arch.runs_on(list(cu126.arch_list), "5.2")
    assert not arch.runs_on(list(cu126.arch_list), "12.0")


def test_variant_for_reads_local_tags_and_falls_back_to_the_pypi_default(kb):
    exact = kb.torch.variant_for("2.14.1+cu130")
    assert (exact.torch, exact.variant, exact.cuda, exact.cudnn, exact.nccl) == ("2.14.1", "cu130", "13.0", "9.24.0.43", "2.30.7")
    plain = kb.torch.variant_for("2.14.1")
    assert plain.variant == "cu130" and plain.pypi_default
    assert kb.torch.variant_for("2.9.1").variant == "cu128"
    cpu = kb.torch.variant_for("2.13.0+cpu")
    assert cpu.variant == "cpu" and cpu.cuda is None


@pytest.mark.parametrize("version", ["2.5.0a0+git1234abc", "2.14.1+rocm6.4", "3.0.0", "2.12.0+cu129", "not a version", ""])
def test_variant_for_answers_none_for_builds_the_kb_does_not_know(kb, version):
    assert kb.torch.variant_for(version) is None


def test_companion_versions_follow_the_torchvision_numbering(kb):
    for v in kb.torch.variants():
        t = Version(v.torch)
        if v.torchvision and t.major == 2:
            assert Version(v.torchvision).minor == t.minor + 15, v.local_version
        if v.torchaudio and t.major == 2:
            assert Version(v.torchaudio).release[:2] == t.release[:2], v.local_version


def test_newest_for_cuda_respects_the_ceiling_and_the_python(kb):
    assert kb.torch.newest_for_cuda("12.9").local_version == "2.14.1+cu126"
    old = kb.torch.newest_for_cuda("12.4", python="3.8")
    assert old.torch == "2.4.1" and "3.8" in old.pythons


def test_pip_args_select_the_wheel_and_its_companions(kb):
    args = kb.torch.variant_for("2.9.1+cu126").pip_args()
    assert args == ["torch==2.9.1", "torchvision==0.24.1", "torchaudio==2.9.1", "--index-url", "https://download.pytorch.org/whl/cu126"]


def _broken_kb(tmp_path: Path, edit) -> KB:
    for name in ("sources.yaml", "torch.yaml", "cuda.yaml", "gpus.yaml"):
        shutil.copy(KB_DIR / name, tmp_path / name)
    data = yaml.safe_load((tmp_path / "torch.yaml").read_text())
    edit(data)
    (tmp_path / "torch.yaml").write_text(yaml.safe_dump(data))
    return KB(tmp_path)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["releases"][0]["variants"][0].update(cuda="12.1"), "does not match variant"),
        (lambda d: d["releases"][0]["variants"][0].update(arch_list="8.6;banana"), "not an architecture"),
        (lambda d: d["releases"][0]["variants"][0].pop("source"), "source"),
        (lambda d: d["releases"][0]["variants"][0].update(source="S-NOPE"), "unknown source key"),
        (lambda d: d["releases"][0].update(pypi_default="cu999"), "is not one of the variants"),
        (lambda d: d["releases"][0]["patches"][0].update(version="2.0.0"), "is not a 1.0.N release"),
        (lambda d: d["releases"][1].update(torch="1.0"), "listed twice"),
        (lambda d: d["releases"][0]["variants"][1].update(variant="cu9"), "expected cpu or cuNNN"),
        (lambda d: d["releases"][0].update(pythons=["three"]), "CPython minor"),
    ],
)
def test_a_malformed_row_is_rejected_naming_its_location(tmp_path, edit, message):
    with pytest.raises(KBError, match=message) as caught:
        _broken_kb(tmp_path, edit).torch
    assert "torch.yaml: releases[" in str(caught.value)
