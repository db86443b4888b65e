"""Strict CI (FWDOCTOR_STRICT=1, tests/conftest.py) forgives a skip only in a test marked
requires_gpu or requires_no_gpu; an optional module's skip names its install command and
fails there too, as does a whole module skipped at import. Run on a copy of the real
conftest in pytest's own `pytester` sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parent / "conftest.py"

TESTS = '''
import pytest
from conftest import require_module


@pytest.mark.requires_gpu
def test_gpu_only():
    pytest.skip("no NVIDIA GPU on this host")


@pytest.mark.requires_no_gpu
def test_no_gpu_path():
    pytest.skip("this host has a GPU")


def test_apt_error_that_names_nvidia_smi():
    pytest.skip("E: Unable to locate package nvidia-smi")


def test_optional_module():
    require_module("fwdoctor_no_such_module", "pip install 'fwdoctor[conda]'")
'''

MODULE_SKIP = '''
from conftest import require_module

require_module("fwdoctor_no_such_module", "pip install 'fwdoctor[conda]'")


def test_never_collected():
    pass
'''


@pytest.fixture
def sandbox(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\nmarkers =\n    requires_gpu: x\n    requires_no_gpu: x\n    network: x\n")
    pytester.makepyfile(test_skips=TESTS, test_module_skip=MODULE_SKIP)
    return pytester


def test_strict_mode_fails_every_skip_but_a_gpu_markers(sandbox: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FWDOCTOR_STRICT", "1")
    result = sandbox.runpytest_subprocess("-rA", "--continue-on-collection-errors")
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped") == 2 and outcomes.get("failed") == 2 and outcomes.get("errors") == 1, result.stdout.str()
    out = result.stdout.str()
    assert "FAILED test_skips.py::test_apt_error_that_names_nvidia_smi" in out
    assert "FAILED test_skips.py::test_optional_module" in out
    assert "ERROR test_module_skip.py" in out
    assert "not a test marked requires_gpu or requires_no_gpu: Skipped: E: Unable to locate package nvidia-smi" in out


def test_outside_strict_mode_a_skip_says_how_to_install_the_module(sandbox: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FWDOCTOR_STRICT", raising=False)
    result = sandbox.runpytest_subprocess("-rs")
    assert result.parseoutcomes().get("skipped") == 5, result.stdout.str()
    assert "needs the optional module fwdoctor_no_such_module (No module named 'fwdoctor_no_such_module'): pip install 'fwdoctor[conda]'" in result.stdout.str()
