"""The toolkit rules as pure functions of (Facts, KB): for each, examples that fire and
near misses that do not, the severity split, NotChecked for KB gaps, and the fixes."""

from __future__ import annotations

import pytest

from conftest import TEST_KB_DIR
from fwdoctor.kb import KB
from fwdoctor.model import Fact, Facts, Severity
from fwdoctor.rules import toolkit as rules

KB_ = KB.load(TEST_KB_DIR)  # the frozen test KB: a KB update never moves these answers

TK130 = {"root": "/usr/local/cuda-13.0", "version": "13.0.88", "version_source": "dist-info", "nvcc": "/usr/local/cuda-13.0/bin/nvcc",
         "nvcc_release": "13.0", "host_gcc_max": "15", "found_via": ["/usr/local/cuda link"]}
TK124 = {"root": "/usr/local/cuda-12.4", "version": "12.4.1", "version_source": "version.json", "nvcc": "/usr/local/cuda-12.4/bin/nvcc",
         "nvcc_release": None, "host_gcc_max": None, "found_via": ["CUDA_HOME"]}
TK132 = {**TK130, "root": "/usr/local/cuda-13.2", "version": "13.2.0", "host_gcc_max": None, "found_via": ["/usr/local/cuda-*"]}
RUNTIME = {"root": "/usr/local/cuda-13.0", "version": None, "version_source": None, "nvcc": None, "nvcc_release": None,
           "host_gcc_max": None, "found_via": ["/usr/local/cuda link"]}
NO_POINTERS = {"path_nvcc": None, "cuda_home": None, "cuda_path": None, "usr_local_cuda": None, "ld_cudart": None}


def active(tk: dict, why: str = "/usr/local/cuda link") -> dict:
    return {"root": tk["root"], "version": tk["version"], "why": why}


def facts(**values) -> Facts:
    return Facts(Fact(key.replace("__", "."), value) for key, value in values.items())


def run(rule, f: Facts):
    """(findings, not_checked) as the engine would produce them."""
    return rule.evaluate(f, KB_)


def ids_and_severities(rule, f: Facts) -> list[tuple[str, str]]:
    found, _ = run(rule, f)
    return [(x.id, x.severity.value) for x in found]


# ----------------------------------------------------------------------------- toolkit-missing
def test_toolkit_missing_fires_for_a_cuda_torch_with_only_a_runtime():
    found, _ = run(rules.toolkit_missing, facts(torch__cuda="13.0", torch__version="2.14.1+cu130", cuda__toolkits=[RUNTIME]))
    assert [f.severity for f in found] == [Severity.INFO]
    assert "no nvcc" in found[0].message and "/usr/local/cuda-13.0" in found[0].message
    assert found[0].fix.recipe == "cuda-toolkit" and found[0].fix.options == {"version": "13.0"}
    assert "sudo apt-get install cuda-toolkit-13-0" in found[0].fix.commands


@pytest.mark.parametrize("torch_cuda, toolkits", [(None, []), ("13.0", [TK130])])
def test_toolkit_missing_is_quiet_for_a_cpu_torch_or_when_nvcc_exists(torch_cuda, toolkits):
    assert ids_and_severities(rules.toolkit_missing, facts(torch__cuda=torch_cuda, cuda__toolkits=toolkits)) == []


def test_toolkit_missing_without_torch_facts_is_not_checked():
    found, skipped = run(rules.toolkit_missing, facts(cuda__toolkits=[]))
    assert found == [] and "torch.cuda" in skipped.reason


# ----------------------------------------------------------------------------- multiple-toolkits
def test_multiple_toolkits_lists_each_and_names_the_active_one():
    found, _ = run(rules.multiple_toolkits, facts(cuda__toolkits=[TK130, TK124], cuda__active=active(TK124, "CUDA_HOME")))
    assert found[0].severity is Severity.INFO
    assert "2 CUDA toolkits" in found[0].message and "active: /usr/local/cuda-12.4 via CUDA_HOME" in found[0].message
    assert found[0].fix.recipe == "env" and found[0].fix.options == {"cuda_home": "/usr/local/cuda-12.4"}


def test_one_toolkit_is_not_multiple():
    assert ids_and_severities(rules.multiple_toolkits, facts(cuda__toolkits=[TK130], cuda__active=active(TK130))) == []


# ----------------------------------------------------------------------------- cuda-path-inconsistent
def test_path_and_cuda_home_on_different_toolkits_is_inconsistent():
    ptrs = {**NO_POINTERS, "path_nvcc": TK130["root"], "cuda_home": TK124["root"], "usr_local_cuda": TK130["root"]}
    found, _ = run(rules.cuda_path_inconsistent, facts(cuda__pointers=ptrs, cuda__toolkits=[TK130, TK124], cuda__active=active(TK124, "CUDA_HOME")))
    assert [f.severity for f in found] == [Severity.WARNING]
    assert "nvcc on PATH -> /usr/local/cuda-13.0" in found[0].message and "CUDA_HOME -> /usr/local/cuda-12.4" in found[0].message
    assert found[0].fix.options == {"cuda_home": "/usr/local/cuda-12.4"}
    assert "export CUDA_HOME=/usr/local/cuda-12.4" in found[0].fix.commands


def test_cuda_home_naming_a_missing_folder_is_cuda_home_invalid_not_a_disagreement():
    ptrs = {**NO_POINTERS, "cuda_home": "/opt/missing", "usr_local_cuda": TK130["root"]}
    f = facts(cuda__pointers=ptrs, cuda__toolkits=[TK130])
    assert run(rules.cuda_path_inconsistent, f)[0] == []
    found, _ = run(rules.cuda_home_invalid, f)
    assert [x.severity for x in found] == [Severity.WARNING]
    assert "CUDA_HOME=/opt/missing has no bin/nvcc" in found[0].message and found[0].fix.options == {"cuda_home": "/usr/local/cuda-13.0"}


# ----------------------------------------------------------------------------- cuda-home-invalid
# facebookresearch/maskrcnn-benchmark#132: export CUDA_HOME=/usr/local/cuda:$CUDA_HOME (empty) left a trailing ':'
@pytest.mark.parametrize("value", ["/usr/local/cuda:", ":/usr/local/cuda-8.0:/root/cuda:/usr/local/cuda-9.0", "/usr/local/cuda-13.0;/usr/local/cuda-12.4"])
def test_a_cuda_home_written_as_a_path_list_is_invalid_even_without_the_toolkits(value):
    for toolkits in ([TK130], None):  # None: a report's env lines (no installed toolkits known)
        f = facts(cuda__pointers={**NO_POINTERS, "cuda_home": value}, **({"cuda__toolkits": toolkits} if toolkits else {}))
        found, _ = run(rules.cuda_home_invalid, f)
        assert len(found) == 1 and "is a path list" in found[0].message and f"{value}/bin/nvcc" in found[0].message


def test_a_cuda_home_on_a_toolkit_with_nvcc_or_a_windows_folder_is_valid():
    assert run(rules.cuda_home_invalid, facts(cuda__pointers={**NO_POINTERS, "cuda_home": TK130["root"]}, cuda__toolkits=[TK130]))[0] == []
    # a Windows CUDA_PATH's drive colon separates nothing (no toolkits known: not judged further)
    assert run(rules.cuda_home_invalid, facts(cuda__pointers={**NO_POINTERS, "cuda_path": "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4"}))[0] == []


def test_a_report_showing_nvcc_without_its_folder_cannot_say_cuda_home_lacks_nvcc():
    # A real H200's `env` and `nvcc --version` pasted (tests/data/hosts/h200-2026-12-04): the
    # nvcc's folder is not shown, so CUDA_HOME=/usr/local/cuda may well be it.
    from fwdoctor.triage.base import toolkit_entry

    shown = toolkit_entry("13.0.88", "nvcc on PATH")
    for ptrs in ({"cuda_home": "/usr/local/cuda"}, {"cuda_home": "/opt/cuda", "path_nvcc": "/opt/cuda"}):
        assert run(rules.cuda_home_invalid, facts(cuda__pointers={**NO_POINTERS, **ptrs}, cuda__toolkits=[shown]))[0] == []
    found, _ = run(rules.cuda_home_invalid, facts(cuda__pointers={**NO_POINTERS, "cuda_home": "/usr/local/cuda:"}, cuda__toolkits=[shown]))
    assert len(found) == 1 and "is a path list" in found[0].message


def test_a_cuda_home_on_a_runtime_only_install_has_no_nvcc_to_build_with():
    runtime_only = {**TK124, "nvcc": None}
    f = facts(cuda__pointers={**NO_POINTERS, "cuda_home": TK124["root"], "path_nvcc": TK130["root"]}, cuda__toolkits=[TK130, runtime_only])
    found, _ = run(rules.cuda_home_invalid, f)
    assert "has no bin/nvcc" in found[0].message and found[0].fix.options == {"cuda_home": "/usr/local/cuda-13.0"}


def test_all_pointers_on_one_toolkit_are_consistent():
    ptrs = {"path_nvcc": TK130["root"], "cuda_home": TK130["root"], "cuda_path": None, "usr_local_cuda": TK130["root"], "ld_cudart": TK130["root"]}
    assert ids_and_severities(rules.cuda_path_inconsistent, facts(cuda__pointers=ptrs, cuda__toolkits=[TK130, TK124])) == []


def test_a_libcudart_folder_that_is_no_toolkit_does_not_count():
    # LD_LIBRARY_PATH at a pip wheel's nvidia/cuda_runtime/lib is not a toolkit install.
    ptrs = {**NO_POINTERS, "usr_local_cuda": TK130["root"], "ld_cudart": "/opt/venv/lib/python3.11/site-packages/nvidia/cuda_runtime"}
    assert ids_and_severities(rules.cuda_path_inconsistent, facts(cuda__pointers=ptrs, cuda__toolkits=[TK130])) == []


# ----------------------------------------------------------------------------- torch-toolkit-mismatch
@pytest.mark.parametrize(
    "torch_cuda, tk, expected",
    [
        ("13.0", TK124, [("torch-toolkit-mismatch", "error")]),  # major differs: cpp_extension raises
        ("13.0", TK132, [("torch-toolkit-mismatch", "warning")]),  # minor differs: it only warns
        ("13.0", TK130, []),
        ("12.4", TK124, []),
        (None, TK124, []),  # CPU torch
    ],
)
def test_torch_toolkit_mismatch_is_an_error_on_major_and_a_warning_on_minor(torch_cuda, tk, expected):
    f = facts(torch__cuda=torch_cuda, cuda__active=active(tk), cuda__toolkits=[tk])
    assert ids_and_severities(rules.torch_toolkit_mismatch, f) == expected


def test_torch_toolkit_mismatch_points_cuda_home_at_an_installed_match():
    f = facts(torch__cuda="13.0", torch__version="2.14.1+cu130", cuda__active=active(TK124, "CUDA_HOME"), cuda__toolkits=[TK124, TK130])
    found, _ = run(rules.torch_toolkit_mismatch, f)
    assert "torch 2.14.1+cu130 is built for CUDA 13.0" in found[0].message and "is CUDA 12.4" in found[0].message
    assert (found[0].fix.recipe, found[0].fix.options) == ("env", {"cuda_home": "/usr/local/cuda-13.0"})


def test_torch_toolkit_mismatch_without_a_match_installs_one():
    found, _ = run(rules.torch_toolkit_mismatch, facts(torch__cuda="13.0", cuda__active=active(TK124), cuda__toolkits=[TK124]))
    assert (found[0].fix.recipe, found[0].fix.options) == ("cuda-toolkit", {"version": "13.0"})


def test_an_active_toolkit_without_a_version_is_not_checked_and_says_where():
    f = facts(torch__cuda="13.0", cuda__active={"root": "/opt/missing", "version": None, "why": "CUDA_HOME (no toolkit there)"}, cuda__toolkits=[])
    found, skipped = run(rules.torch_toolkit_mismatch, f)
    assert found == [] and "/opt/missing" in skipped.reason


def test_a_runtime_only_active_toolkit_is_left_to_toolkit_missing():
    f = facts(torch__cuda="13.0", cuda__active=active(RUNTIME), cuda__toolkits=[RUNTIME])
    assert run(rules.torch_toolkit_mismatch, f) == ([], None)


# ----------------------------------------------------------------------------- host-compiler-unsupported
def gcc(version: str, path: str = "/usr/bin/gcc") -> dict:
    return {"path": path, "version": version}


def test_a_gcc_newer_than_the_header_allows_is_an_error_with_an_installed_older_gcc_as_fix():
    f = facts(cuda__active=active(TK130), cuda__toolkits=[TK130], compilers__gcc_default=gcc("16.1.1"),
              compilers__gcc_installed=[gcc("16.1.1", "/usr/bin/gcc-16"), gcc("12.2.0", "/usr/bin/gcc-12")])
    found, _ = run(rules.host_compiler_unsupported, f)
    assert [x.severity for x in found] == [Severity.ERROR]
    assert "gcc <= 15, per /usr/local/cuda-13.0's crt/host_config.h" in found[0].message
    assert found[0].fix.commands == ("export CC=/usr/bin/gcc-12 CXX=/usr/bin/g++-12 CUDAHOSTCXX=/usr/bin/g++-12",)


def test_the_fix_names_the_g_plus_plus_beside_the_chosen_gcc_and_keeps_its_folder():
    f = facts(cuda__active=active(TK130), cuda__toolkits=[TK130], compilers__gcc_default=gcc("16.1.1"),
              compilers__gcc_installed=[gcc("12.2.0", "/opt/gcc-12/bin/gcc-12")])
    found, _ = run(rules.host_compiler_unsupported, f)
    assert found[0].fix.commands == ("export CC=/opt/gcc-12/bin/gcc-12 CXX=/opt/gcc-12/bin/g++-12 CUDAHOSTCXX=/opt/gcc-12/bin/g++-12",)


def test_fixes_converge_on_the_toolkit_matching_torchs_cuda_by_version_not_text():
    # torch.cuda "13.0" and a toolkit "13.0.88": the same minor, found via packaging.version.
    tk = {**TK130, "root": "/opt/cuda-13", "found_via": ["/opt/cuda*"]}
    f = facts(torch__cuda="13.0", cuda__active=active(TK124, why="CUDA_HOME"), cuda__toolkits=[TK124, tk])
    assert rules._preferred_root(f) == "/opt/cuda-13"
    assert rules._preferred_root(facts(torch__cuda="12.4", cuda__active=active(TK124), cuda__toolkits=[tk, TK124])) == "/usr/local/cuda-12.4"
    assert rules._preferred_root(facts(torch__cuda="13.2", cuda__active=active(TK124), cuda__toolkits=[TK124, tk])) == "/opt/cuda-13"


def test_without_a_header_the_kb_limit_applies_and_the_fix_installs_that_gcc():
    f = facts(cuda__active=active(TK124), cuda__toolkits=[TK124], compilers__gcc_default=gcc("14.2.0"), compilers__gcc_installed=[])
    found, _ = run(rules.host_compiler_unsupported, f)
    assert "gcc <= 13, per the knowledge base" in found[0].message
    assert "sudo apt-get install gcc-13 g++-13" in found[0].fix.commands


@pytest.mark.parametrize("version", ["15.2.0", "12.2.0", "6.5.0"])
def test_a_gcc_at_or_below_the_limit_is_fine(version):
    f = facts(cuda__active=active(TK130), cuda__toolkits=[TK130], compilers__gcc_default=gcc(version))
    assert run(rules.host_compiler_unsupported, f) == ([], None)


def test_a_toolkit_the_kb_lacks_and_without_a_header_is_not_checked():
    tk = {**TK124, "root": "/usr/local/cuda-14.0", "version": "14.0.10"}
    found, skipped = run(rules.host_compiler_unsupported, facts(cuda__active=active(tk), cuda__toolkits=[tk], compilers__gcc_default=gcc("15.1.0")))
    assert found == [] and "no data for CUDA 14.0" in skipped.reason


# ----------------------------------------------------------------------------- driver-too-old-for-toolkit
@pytest.mark.parametrize(
    "driver, tk, expected",
    [
        ("575.57.08", TK130, [("driver-too-old-for-toolkit", "error")]),  # below 13.x floor 580.65.06
        ("580.65.06", TK132, [("driver-too-old-for-toolkit", "warning")]),  # 13.2 wants 595.45.04: minor compat only
        ("580.95.05", TK130, []),
        ("550.54.15", TK124, []),
        ("525.60.13", TK124, [("driver-too-old-for-toolkit", "warning")]),
        ("520.61.05", TK124, [("driver-too-old-for-toolkit", "error")]),
    ],
)
def test_driver_against_the_active_toolkit(driver, tk, expected):
    f = facts(driver__version=driver, cuda__active=active(tk), cuda__toolkits=[tk])
    assert ids_and_severities(rules.driver_too_old_for_toolkit, f) == expected


def test_a_cuda_10_toolkit_without_minor_compat_uses_table_3():
    tk = {**TK124, "root": "/usr/local/cuda-10.2", "version": "10.2.89"}
    f = facts(driver__version="418.39", cuda__active=active(tk), cuda__toolkits=[tk])
    found, _ = run(rules.driver_too_old_for_toolkit, f)
    assert found[0].severity is Severity.ERROR and ">= 440.33" in found[0].message


def test_the_driver_fix_suggests_the_newest_cuda_this_driver_runs():
    f = facts(driver__version="575.57.08", cuda__active=active(TK130), cuda__toolkits=[TK130])
    found, _ = run(rules.driver_too_old_for_toolkit, f)
    assert (found[0].fix.recipe, found[0].fix.options) == ("cuda-toolkit", {"version": "12.9"})
    assert found[0].fix.note == "driver 575.57.08 runs CUDA <= 12.9: use that toolkit, or upgrade the driver to >= 580.65.06 for CUDA 13.0"


@pytest.mark.parametrize("version, reason", [("14.0.10", "no data for CUDA 14.0"), ("13.5.37", "no data on the driver CUDA 13.5 ships for")])
def test_a_kb_gap_on_the_driver_is_not_checked(version, reason):
    tk = {**TK130, "version": version}
    found, skipped = run(rules.driver_too_old_for_toolkit, facts(driver__version="590.48.01", cuda__active=active(tk), cuda__toolkits=[tk]))
    assert found == [] and reason in skipped.reason


def test_no_driver_loaded_is_left_to_the_driver_rules():
    assert run(rules.driver_too_old_for_toolkit, facts(driver__version=None, cuda__active=active(TK130))) == ([], None)


# ----------------------------------------------------------------------------- gpu-arch-unsupported-by-toolkit
def gpu(index: int, name: str, cc: str | None) -> dict:
    return {"index": index, "name": name, "cc": cc, "memory_mib": None, "uuid": None, "bus_id": None, "mig": None, "persistence": None, "source": "nvml"}


def test_a_volta_gpu_under_cuda_13_cannot_be_compiled_for():
    f = facts(gpus__list=[gpu(0, "Tesla V100-SXM2-16GB", "7.0")], cuda__active=active(TK130), cuda__toolkits=[TK130])
    found, _ = run(rules.gpu_arch_unsupported_by_toolkit, f)
    assert [x.severity for x in found] == [Severity.ERROR]
    assert "sm_70 was last supported in CUDA 12.9" in found[0].message
    assert found[0].fix.options == {"version": "12.9"}


def test_an_ampere_gpu_under_cuda_11_0_needs_11_1():
    tk = {**TK124, "version": "11.0.2"}
    found, _ = run(rules.gpu_arch_unsupported_by_toolkit, facts(gpus__list=[gpu(0, "NVIDIA GeForce RTX 3090", "8.6")], cuda__active=active(tk), cuda__toolkits=[tk]))
    assert "sm_86 needs CUDA >= 11.1" in found[0].message


def test_identical_gpus_give_one_finding_and_mixed_gpus_one_per_capability():
    gpus = [gpu(0, "Tesla V100", "7.0"), gpu(1, "Tesla V100", "7.0"), gpu(2, "Tesla P100", "6.0"), gpu(3, "NVIDIA H100", "9.0")]
    found, _ = run(rules.gpu_arch_unsupported_by_toolkit, facts(gpus__list=gpus, cuda__active=active(TK130), cuda__toolkits=[TK130]))
    assert len(found) == 2 and "GPU 0 Tesla V100, GPU 1 Tesla V100" in found[0].message


def test_a_gpu_without_a_reported_cc_is_looked_up_by_name():
    f = facts(gpus__list=[gpu(0, "Tesla V100-SXM2-16GB", None)], cuda__active=active(TK130), cuda__toolkits=[TK130])
    assert ids_and_severities(rules.gpu_arch_unsupported_by_toolkit, f) == [("gpu-arch-unsupported-by-toolkit", "error")]


def test_supported_gpus_pass():
    f = facts(gpus__list=[gpu(0, "NVIDIA H100", "9.0"), gpu(1, "NVIDIA L4", "8.9")], cuda__active=active(TK130), cuda__toolkits=[TK130])
    assert run(rules.gpu_arch_unsupported_by_toolkit, f) == ([], None)


def test_a_capability_the_kb_lacks_is_not_checked():
    f = facts(gpus__list=[gpu(0, "NVIDIA future", "13.7")], cuda__active=active(TK130), cuda__toolkits=[TK130])
    found, skipped = run(rules.gpu_arch_unsupported_by_toolkit, f)
    assert found == [] and "no data for CUDA 13.0 and compute capability 13.7" in skipped.reason


def test_an_unknown_gpu_model_without_a_cc_is_not_checked():
    f = facts(gpus__list=[gpu(0, "NVIDIA device 0x9999", None)], cuda__active=active(TK130), cuda__toolkits=[TK130])
    found, skipped = run(rules.gpu_arch_unsupported_by_toolkit, f)
    assert found == [] and "no compute capability known for NVIDIA device 0x9999" in skipped.reason


# ----------------------------------------------------------------------------- across rules
@pytest.mark.parametrize("rule", rules.RULES, ids=lambda r: r.id)
def test_every_rule_documents_the_four_sections(rule):
    doc = rule.doc
    for section in ("What it does", "Why is this bad?", "Example", "Fix"):
        assert f"\n{section}\n" in f"\n{doc}\n", f"{rule.id}: no {section!r} section"


def test_every_fix_names_a_registered_recipe():
    from fwdoctor.recipes.registry import recipe_ids

    cases = [
        (rules.toolkit_missing, facts(torch__cuda="13.0", cuda__toolkits=[RUNTIME])),
        (rules.multiple_toolkits, facts(cuda__toolkits=[TK130, TK124], cuda__active=active(TK130))),
        (rules.torch_toolkit_mismatch, facts(torch__cuda="13.0", cuda__active=active(TK124), cuda__toolkits=[TK124])),
        (rules.host_compiler_unsupported, facts(cuda__active=active(TK130), cuda__toolkits=[TK130], compilers__gcc_default=gcc("16.1.0"))),
        (rules.driver_too_old_for_toolkit, facts(driver__version="575.57.08", cuda__active=active(TK130))),
        (rules.gpu_arch_unsupported_by_toolkit, facts(gpus__list=[gpu(0, "V100", "7.0")], cuda__active=active(TK130))),
    ]
    for rule, f in cases:
        found, _ = run(rule, f)
        assert found, rule.id
        assert all(x.fix and x.fix.recipe in recipe_ids() for x in found), rule.id


@pytest.mark.parametrize("bad", ["abc", ""])
def test_a_garbled_toolkit_version_is_not_checked_never_a_crash(bad):
    tk = {**TK130, "version": bad}
    f = facts(torch__cuda="13.0", driver__version="580.95.05", gpus__list=[gpu(0, "H100", "9.0")], compilers__gcc_default=gcc("12.2.0"),
              cuda__active=active(tk), cuda__toolkits=[tk])
    for rule in (rules.torch_toolkit_mismatch, rules.driver_too_old_for_toolkit, rules.gpu_arch_unsupported_by_toolkit):
        found, skipped = run(rule, f)
        assert found == [] and skipped is not None, rule.id
        assert ("cannot read CUDA version 'abc'" if bad else "has no readable version") in skipped.reason


def test_all_path_fixes_converge_on_the_toolkit_matching_torch():
    ptrs = {**NO_POINTERS, "cuda_home": TK124["root"], "usr_local_cuda": TK130["root"]}
    f = facts(torch__cuda="13.0", cuda__pointers=ptrs, cuda__toolkits=[TK124, TK130], cuda__active=active(TK124, "CUDA_HOME"))
    targets = set()
    for rule in (rules.cuda_path_inconsistent, rules.multiple_toolkits, rules.torch_toolkit_mismatch):
        found, _ = run(rule, f)
        targets.add(found[0].fix.options["cuda_home"])
    assert targets == {"/usr/local/cuda-13.0"}


def test_variables_that_name_no_installed_toolkit_are_cuda_home_invalid_without_a_target():
    ptrs = {**NO_POINTERS, "cuda_home": "/opt/a", "cuda_path": "/opt/b"}
    f = facts(cuda__pointers=ptrs, cuda__toolkits=[])
    assert run(rules.cuda_path_inconsistent, f)[0] == []
    found, _ = run(rules.cuda_home_invalid, f)
    assert "CUDA_HOME=/opt/a" in found[0].message and "CUDA_PATH=/opt/b" in found[0].message
    assert found[0].fix.recipe is None and found[0].fix.commands
