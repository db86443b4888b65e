"""doctor/rules/torch.py: each rule's valid and invalid examples, as Facts."""

from __future__ import annotations

import pytest

from fwdoctor.model import Fact, Facts
from fwdoctor.rules import torch as rules

H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0"}
V100 = {"index": 1, "name": "Tesla V100-SXM2-16GB", "cc": "7.0"}
RTX5090 = {"index": 0, "name": "NVIDIA GeForce RTX 5090", "cc": "12.0"}


@pytest.fixture(scope="module")
def kb(test_kb):
    return test_kb


def facts(**values) -> Facts:
    base = {"python.executable": "/opt/venv/bin/python", "python.version": "3.11.7"}
    base.update({k.replace("__", "."): v for k, v in values.items()})
    return Facts(Fact(k, v, source="test") for k, v in base.items())


def run(rule, kb, f):
    findings, skipped = rule.evaluate(f, kb)
    return findings, skipped


def test_a_cuda_13_wheel_on_a_12_x_driver_is_an_error_with_a_runnable_wheel_as_fix(kb):
    f = facts(torch__version="2.14.1+cu130", torch__cuda="13.0", driver__version="550.127.05")
    (finding,), _ = run(rules.driver_too_old_for_torch, kb, f)
    assert finding.severity.value == "error"
    assert "needs NVIDIA driver >= 580.65.06" in finding.message and "550.127.05" in finding.message
    assert finding.fix.recipe == "torch-wheel"
    assert finding.fix.options["variant"] == "cu126" and finding.fix.options["torch"] == "2.14.1"
    assert "--index-url https://download.pytorch.org/whl/cu126" in finding.fix.commands[0]


def test_minor_version_compatibility_lets_a_12_8_wheel_run_on_a_12_0_era_driver(kb):
    f = facts(torch__version="2.9.1+cu128", torch__cuda="12.8", driver__version="525.60.13")
    assert run(rules.driver_too_old_for_torch, kb, f) == ([], None)


def test_a_driver_below_the_12_x_floor_fails_a_12_x_wheel(kb):
    f = facts(torch__version="2.9.1+cu128", torch__cuda="12.8", driver__version="515.76")
    (finding,), _ = run(rules.driver_too_old_for_torch, kb, f)
    assert "525.60.13" in finding.message
    assert finding.fix.options["variant"] == "cu118"  # the newest wheel a 515 driver runs


def test_a_cpu_build_or_no_driver_is_not_this_rules_business(kb):
    assert run(rules.driver_too_old_for_torch, kb, facts(torch__cuda=None, driver__version="470.57.02")) == ([], None)
    assert run(rules.driver_too_old_for_torch, kb, facts(torch__cuda="13.0", driver__version=None)) == ([], None)


def test_a_cuda_version_without_a_floor_is_not_checked(kb):
    # 10.2 was the example until issue 26 (a 10.x wheel's floor is its toolkit's driver);
    # the test KB has no Table 3 row for 9.2.
    findings, skipped = run(rules.driver_too_old_for_torch, kb, facts(torch__cuda="9.2", driver__version="396.26"))
    assert findings == [] and "no driver floor" in skipped.reason


def test_a_cuda_10_2_wheel_needs_the_10_2_toolkits_driver_without_minor_version_compatibility(kb):
    # Before CUDA 11 there is no minor-version compatibility: cu102 needs Table 3's 440.33.
    f = facts(torch__version="1.7.1+cu102", torch__cuda="10.2", driver__version="418.87.01")
    (finding,), _ = run(rules.driver_too_old_for_torch, kb, f)
    assert finding.severity.value == "error" and finding.evidence["driver_floor"] == "440.33"
    assert "needs NVIDIA driver >= 440.33 (the CUDA 10.2 toolkit's driver; CUDA 10 has no minor-version compatibility)" in finding.message
    assert "418.87.01" in finding.message


@pytest.mark.parametrize("driver", ["440.33", "440.33.01", "450.80.02"])
def test_a_cuda_10_2_wheel_runs_on_the_10_2_toolkits_driver_or_newer(kb, driver):
    f = facts(torch__version="1.7.1+cu102", torch__cuda="10.2", driver__version=driver)
    assert run(rules.driver_too_old_for_torch, kb, f) == ([], None)


def test_a_cuda_10_1_wheel_on_a_10_0_driver_fails_though_the_major_matches(kb):
    f = facts(torch__version="1.4.0", torch__cuda="10.1", driver__version="410.104")
    (finding,), _ = run(rules.driver_too_old_for_torch, kb, f)
    assert "needs NVIDIA driver >= 418.39" in finding.message


def test_11_x_answers_are_unchanged_by_the_pre_11_floors(kb):
    f = facts(torch__version="1.7.1+cu110", torch__cuda="11.0", driver__version="450.51.05")
    (finding,), _ = run(rules.driver_too_old_for_torch, kb, f)
    assert "needs NVIDIA driver >= 450.80.02 (CUDA 11.x minor-version compatibility)" in finding.message
    assert run(rules.driver_too_old_for_torch, kb, facts(torch__cuda="11.8", driver__version="450.80.02")) == ([], None)


def test_an_unknown_driver_is_not_checked_with_the_reason(kb):
    f = Facts([Fact("torch.cuda", "13.0"), Fact.unknown("driver.version", "no /proc/driver/nvidia/version")])
    findings, skipped = run(rules.driver_too_old_for_torch, kb, f)
    assert findings == [] and "no /proc/driver/nvidia/version" in skipped.reason


def test_volta_has_no_kernel_in_a_cuda_13_wheel_and_the_fix_covers_every_gpu(kb):
    f = facts(gpus__list=[H100, V100], torch__cuda="13.0", torch__version="2.14.1+cu130", driver__version="580.95.05",
              torch__arch_list=["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"])
    (finding,), _ = run(rules.gpu_arch_unsupported_by_torch, kb, f)
    assert "Tesla V100" in finding.message and "sm_70" in finding.message
    assert "no kernel image is available for execution on the device" in finding.message
    assert finding.fix.options["variant"] == "cu126"  # 2.14.1+cu126 has 7.0 and 9.0


def test_a_gpu_covered_by_sass_of_a_lower_minor_is_fine(kb):
    f = facts(gpus__list=[{"index": 0, "name": "NVIDIA GeForce RTX 3090", "cc": "8.6"}], torch__cuda="12.1",
              torch__version="2.1.2+cu121", torch__arch_list=["sm_50", "sm_80"])
    assert run(rules.gpu_arch_unsupported_by_torch, kb, f) == ([], None)


def test_the_deep_arch_list_beats_the_kb(kb):
    # Blackwell with a 2.6 wheel: torch's own list (--deep) is what the rule reports.
    f = facts(gpus__list=[RTX5090], torch__cuda="12.4", torch__version="2.6.0+cu124",
              torch__deep={"arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]})
    (finding,), _ = run(rules.gpu_arch_unsupported_by_torch, kb, f)
    assert "sm_120" in finding.message and finding.evidence["arch_list_from"] == "torch.cuda.get_arch_list()"


def test_without_any_arch_list_the_rule_says_not_checked_and_suggests_deep(kb):
    # 2.6.0+cu126 is one of the wheels whose arch list no source confirms (torch.yaml: null).
    f = Facts([Fact("gpus.list", [H100]), Fact("torch.cuda", "12.6"), Fact("torch.version", "2.6.0+cu126"),
               Fact.unknown("torch.arch_list", "no confirmed arch list")])
    findings, skipped = run(rules.gpu_arch_unsupported_by_torch, kb, f)
    assert findings == [] and "--deep" in skipped.reason


def test_a_gpu_without_reported_capability_is_looked_up_by_name(kb):
    f = facts(gpus__list=[{"index": 0, "name": "GeForce GTX 1080 Ti", "cc": None}], torch__cuda="13.0",
              torch__version="2.14.1+cu130", torch__arch_list=["sm_75", "sm_90"])
    (finding,), _ = run(rules.gpu_arch_unsupported_by_torch, kb, f)
    assert "6.1" in finding.message


def test_a_cpu_build_on_a_gpu_host_suggests_the_cuda_build_of_the_same_release(kb):
    f = facts(torch__installed=True, torch__cuda=None, torch__version="2.13.0+cpu", driver__loaded=True,
              driver__version="580.95.05", gpus__list=[H100])
    (finding,), _ = run(rules.torch_cpu_build_on_gpu_host, kb, f)
    assert finding.severity.value == "warning"
    # The same wheel `select torch --torch ==2.13.0` picks: the PyPI default (cu130) when the driver runs it.
    assert finding.fix.options["torch"] == "2.13.0" and finding.fix.options["variant"] == "cu130"


def test_a_cpu_build_without_a_gpu_or_driver_is_fine(kb):
    no_gpu = facts(torch__installed=True, torch__cuda=None, driver__loaded=False, gpus__list=[], pci__nvidia_gpus=[])
    assert run(rules.torch_cpu_build_on_gpu_host, kb, no_gpu) == ([], None)
    cuda = facts(torch__installed=True, torch__cuda="13.0", driver__loaded=True, gpus__list=[H100])
    assert run(rules.torch_cpu_build_on_gpu_host, kb, cuda) == ([], None)


def test_torch_not_installed_is_info_and_offers_the_cpu_wheel_without_a_driver(kb):
    f = facts(torch__installed=False, python__site_packages=["/opt/venv/lib/python3.11/site-packages"])
    (finding,), _ = run(rules.torch_not_installed, kb, f)
    assert finding.severity.value == "info"
    assert finding.fix.options["variant"] == "cpu"
    assert run(rules.torch_not_installed, kb, facts(torch__installed=True)) == ([], None)


def test_every_rule_documents_its_four_sections():
    for item in rules.RULES:
        for section in ("What it does", "Why is this bad?", "Example", "Fix"):
            assert section in item.doc, (item.id, section)


def test_no_torch_in_a_jax_or_tensorflow_environment_is_not_reported(kb):
    jax_env = facts(torch__installed=False, frameworks__installed=[{"framework": "jax", "version": "0.10.2"}])
    assert run(rules.torch_not_installed, kb, jax_env) == ([], None)
    empty = facts(torch__installed=False, frameworks__installed=[])
    (finding,), _ = run(rules.torch_not_installed, kb, empty)
    assert finding.id == "torch-not-installed"


WINDOWS = {"version": "10.0.19045", "build": 19045}


@pytest.mark.parametrize("driver, flagged", [("441.12", True), ("441.22", False), ("451.48", False)])
def test_a_windows_driver_is_held_to_table_3s_windows_column_for_cuda_10_2(kb, driver, flagged):
    # 441.12 is above the Linux 440.33 but below the Windows 441.22 the 10.2 toolkit ships.
    f = facts(torch__version="1.7.1+cu102", torch__cuda="10.2", driver__version=driver, platform__windows_build=WINDOWS)
    findings, skipped = run(rules.driver_too_old_for_torch, kb, f)
    assert skipped is None
    if flagged:
        (finding,) = findings
        assert "needs NVIDIA driver >= 441.22 (the CUDA 10.2 toolkit's Windows driver; CUDA 10 has no minor-version compatibility)" in finding.message
    else:
        assert findings == []


def test_the_same_driver_number_on_linux_meets_the_linux_column(kb):
    f = facts(torch__version="1.7.1+cu102", torch__cuda="10.2", driver__version="441.12")
    assert run(rules.driver_too_old_for_torch, kb, f) == ([], None)


def test_wsl_2_reports_the_windows_driver_and_11_x_keeps_the_linux_floor(kb):
    wsl2 = {"version": 2, "text": "5.15.90.1-microsoft-standard-WSL2"}
    f = facts(torch__version="1.7.1+cu102", torch__cuda="10.2", driver__version="441.12", platform__wsl=wsl2)
    (finding,), _ = run(rules.driver_too_old_for_torch, kb, f)
    assert "441.22" in finding.message
    # No Windows floor for 11.x in the KB: the Linux one (a Windows driver is numbered above it).
    f = facts(torch__version="2.9.1+cu128", torch__cuda="12.8", driver__version="515.76", platform__windows_build=WINDOWS)
    (finding,), _ = run(rules.driver_too_old_for_torch, kb, f)
    assert "needs NVIDIA driver >= 525.60.13 (CUDA 12.x minor-version compatibility)" in finding.message


def test_a_live_wsl_2_host_shows_the_windows_driver_too(kb):
    # driver.wsl is the live probe's (probes/driver.py): inside WSL 2, NVML and nvidia-smi give
    # the Windows host's driver, numbered as Windows drivers are.
    wsl2 = {"version": 2, "kernel": "5.15.153.1-microsoft-standard-WSL2", "windows_build": None}
    f = facts(torch__version="1.7.1+cu102", torch__cuda="10.2", driver__version="441.12", driver__wsl=wsl2)
    (finding,), _ = run(rules.driver_too_old_for_torch, kb, f)
    assert "needs NVIDIA driver >= 441.22 (the CUDA 10.2 toolkit's Windows driver" in finding.message
    f = facts(torch__version="1.7.1+cu102", torch__cuda="10.2", driver__version="441.12", driver__wsl={**wsl2, "version": 1})
    assert run(rules.driver_too_old_for_torch, kb, f) == ([], None)  # WSL 1 has no GPU: not a Windows driver's number here
