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


def test_the_matrix_covers_1_13_through_2_14_with_patch_releases(kb):
    versions = kb.torch.versions()
    for wanted in ("1.13.0", "1.13.1", "2.0.1", "2.4.1", "2.7.1", "2.9.0", "2.9.1", "2.12.1", "2.14.0", "2.14.1"):
        assert wanted in versions
    minors = {f"{Version(v).major}.{Version(v).minor}" for v in versions}
    assert {f"2.{n}" for n in range(0, 15)} | {"1.13"} <= minors


def test_every_release_has_exactly_one_pypi_default_and_a_cpu_wheel(kb):
    for version in kb.torch.versions():
        rows = kb.torch.variants_of(version)
        assert sum(v.pypi_default for v in rows) == 1, version
        assert any(v.variant == "cpu" and v.cuda is None and v.arch_list is None for v in rows), version


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
        (lambda d: d["releases"][0]["patches"][0].update(version="2.0.0"), "is not a 1.13.N release"),
        (lambda d: d["releases"][1].update(torch="1.13"), "listed twice"),
        (lambda d: d["releases"][0].update(pythons=["three"]), "CPython minor"),
    ],
)
def test_a_malformed_row_is_rejected_naming_its_location(tmp_path, edit, message):
    with pytest.raises(KBError, match=message) as caught:
        _broken_kb(tmp_path, edit).torch
    assert "torch.yaml: releases[" in str(caught.value)
