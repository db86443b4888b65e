"""`fwdoctor select torch` (doctor/selection.py (fwdoctor.selection)) on real cases, against the frozen test KB.

Expected answers follow the driver floors (S-RN132, S-COMPAT) and the wheel matrix (S-RELMD,
S-TI, S-PTBC, S-PT188443; keys of doctor/kb/sources.yaml), which tests/kb/*.yaml (a snapshot of
doctor/kb) encode; a newer torch in the shipped KB does not change them.
"""

from __future__ import annotations

import json

import pytest

from fwdoctor import selection as sel

pytestmark = pytest.mark.usefixtures("use_test_kb")  # the CLI tests read tests/kb too


@pytest.fixture(scope="module")
def kb(test_kb):
    return test_kb


def pick(kb, driver, gpus, python="3.11", torch="", cuda=None):
    target = sel.target_from_facts(None, kb, driver=driver, gpus=gpus, python=python, torch_spec=torch, cuda=cuda)
    return sel.select_torch(kb, target)


def test_a_k80_on_driver_470_gets_the_last_cu118_wheel_with_kepler_kernels(kb):
    s = pick(kb, "470.82.01", ["3.7"])
    assert s.choice.local_version == "2.5.1+cu118"
    # 11.x minor-version compatibility: 470 >= 450.80.02 runs CUDA 11.8.
    lines = [r.line() for r in s.rejected]
    assert "2.5.1+cu124: driver 470.82.01 < 525.60.13 needed for CUDA 12.4; no kernels for sm_37" in lines


def test_a_gtx_1080_ti_on_driver_580_gets_cu126_because_cu13_wheels_have_no_pascal_kernels(kb):
    s = pick(kb, "580.95.05", ["6.1"])
    assert s.choice.local_version == "2.14.1+cu126"
    assert "2.14.1+cu130: no kernels for sm_61" in [r.line() for r in s.rejected]


def test_an_rtx_5090_on_driver_570_gets_a_cuda_12_wheel_with_sm_120_kernels(kb):
    s = pick(kb, "570.86.10", ["12.0"])
    assert s.choice.cuda.startswith("12.")
    assert "12.0" in s.choice.arch_list or "12.0+PTX" in s.choice.arch_list
    assert "2.14.1+cu130: driver 570.86.10 < 580.65.06 needed for CUDA 13.0" in [r.line() for r in s.rejected]
    assert "2.14.1+cu126: no kernels for sm_120" in [r.line() for r in s.rejected]


def test_an_h100_on_driver_535_runs_cuda_12_6_by_minor_version_compatibility(kb):
    s = pick(kb, "535.104.05", ["9.0"])
    assert s.choice.local_version == "2.14.1+cu126"  # 12.6 > 12.2 (535's own CUDA): minor-version compat


def test_a_v100_and_an_h100_in_one_host_need_a_wheel_with_kernels_for_both(kb):
    s = pick(kb, "580.95.05", ["7.0", "9.0"])
    assert s.choice.local_version == "2.14.1+cu126"
    assert "2.14.1+cu130: no kernels for sm_70" in [r.line() for r in s.rejected]


def test_the_pypi_default_wins_when_it_fits(kb):
    s = pick(kb, "580.95.05", ["9.0"], python="3.13")
    # 2.15.0's PyPI wheel is cu132 (S-PYPIFILES215); driver 580 runs 13.2 by minor-version compat.
    assert s.choice.pypi_default and s.choice.local_version == "2.15.0+cu132"


def test_python_3_8_falls_back_to_the_last_release_with_3_8_wheels(kb):
    s = pick(kb, "580.95.05", ["9.0"], python="3.8")
    assert s.choice.torch == "2.4.1"
    assert "2.5.1+cu124: no wheel for Python 3.8 (has 3.9, 3.10, 3.11, 3.12, 3.13)" in [r.line() for r in s.rejected]


def test_a_torch_specifier_and_a_cuda_pin_narrow_the_choice(kb):
    s = pick(kb, "580.95.05", ["9.0"], torch=">=2.8,<2.10", cuda="12.8")
    assert s.choice.local_version == "2.9.1+cu128"


def test_nothing_fits_says_why_and_lists_the_closest_options(kb):
    s = pick(kb, "390.157", ["3.7"])
    assert s.choice is None
    assert s.reason == "no official torch wheel in the KB fits Python 3.11, driver 390.157, GPUs 3.7 (sm_37)"
    assert s.closest and all(r.reasons for r in s.closest)


def test_gpu_names_resolve_through_the_kb(kb):
    assert sel.resolve_gpu(kb, "Tesla K80") == sel.Gpu("Tesla K80", "3.7")


def test_short_geforce_names_resolve_too(kb):
    assert sel.resolve_gpu(kb, "GTX 1080 Ti").cc == "6.1"
    assert sel.resolve_gpu(kb, "RTX 4090").cc == "8.9"


def test_an_unknown_gpu_name_is_a_clear_error(kb):
    with pytest.raises(sel.SelectError, match="not a compute capability and not a GPU name the KB knows"):
        sel.resolve_gpu(kb, "Voodoo 5 6000")


def test_select_torch_cli_prints_the_choice_index_and_rejections(cli):
    result = cli("select", "torch", "--driver", "535.104.05", "--gpu", "9.0", "--python", "3.11")
    assert result.exit_code == 0
    assert "torch 2.14.1+cu126  (CUDA 12.6, from the PyTorch index)" in result.output
    assert "index:       https://download.pytorch.org/whl/cu126" in result.output
    assert "  2.14.1+cu130: driver 535.104.05 < 580.65.06 needed for CUDA 13.0" in result.output


def test_select_torch_cli_json_and_exit_1_when_nothing_fits(cli):
    result = cli("select", "torch", "--driver", "390.157", "--gpu", "3.7", "--python", "3.11", "--json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["choice"] is None and data["closest"]


def test_select_torch_cli_rejects_a_bad_specifier_with_exit_2(cli):
    result = cli("select", "torch", "--driver", "535.104.05", "--gpu", "9.0", "--python", "3.11", "--torch", "two point nine")
    assert result.exit_code == 2
    assert "not a version specifier" in result.output
