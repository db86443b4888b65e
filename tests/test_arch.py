"""Binary and PTX compatibility (CUDA C Programming Guide, "Binary Compatibility" and
"PTX Compatibility"): cubins run on the same major with an equal or higher minor; PTX
JIT-compiles for any equal or higher CC; `a` targets only run on exactly their CC."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fwdoctor.arch import parse_targets, runs_on

# torch 2.14 cu130 wheels: 7.5;8.0;8.6;9.0;10.0;12.0+PTX (pytorch RELEASE.md support matrix)
CU130 = "7.5;8.0;8.6;9.0;10.0;12.0+PTX"


@pytest.mark.parametrize(
    "cc, runs",
    [
        ("7.5", True), ("8.0", True), ("8.6", True), ("8.9", True),  # 8.9 runs the sm_86 cubin
        ("9.0", True), ("10.0", True), ("10.3", True), ("12.0", True),
        ("12.1", True),  # sm_120 cubin, same major
        ("6.1", False), ("7.0", False),  # Pascal and Volta: no cubin, PTX too new
        ("11.0", False),  # Thor: no sm_11x cubin, and compute_120 PTX is above it
    ],
)
def test_cu130_wheel_arch_list_against_real_gpus(cc, runs):
    assert runs_on(CU130, cc).runs is runs


def test_ptx_jit_covers_newer_majors():
    verdict = runs_on(["sm_80", "compute_80"], "9.0")
    assert verdict.runs and "JIT" in verdict.how


def test_a_cubin_never_runs_on_a_lower_minor():
    assert not runs_on(["sm_86"], "8.0").runs


def test_arch_specific_cubins_run_only_on_their_exact_cc():
    assert runs_on(["sm_90a"], "9.0").runs
    assert not runs_on(["sm_90a"], "9.1").runs


def test_the_reason_lists_what_the_build_has():
    verdict = runs_on("5.0;6.0;7.0", "8.0")
    assert not verdict.runs
    assert "sm_50" in verdict.how and "compute_80" in verdict.how


def test_bad_arch_entries_are_named():
    with pytest.raises(ValueError, match="'sm_8x'"):
        parse_targets(["sm_8x"])


@given(st.text(max_size=40))
def test_parse_targets_only_raises_value_error(text):
    try:
        targets = parse_targets(text)
    except ValueError:
        return
    assert all(t.kind in ("sass", "ptx") and t.suffix in ("", "a", "f") for t in targets)
