"""doctor/rules/build.py: every pre-flight rule on hand-made build facts (valid and invalid
examples), judged through fwdoctor.engine.judge as `fwdoctor build torch` judges them; on a
plain check they are "not checked"; saved build facts re-judge to the same findings."""

from __future__ import annotations

import json

from build_facts import GIB, Unknown, build_facts, gxx, kind_lib, path_lib, pip_lib, python_env, tool, toolkit
from fwdoctor.engine import judge
from fwdoctor.findings import FINDING_KINDS
from fwdoctor.model import Fact, Facts, Severity
from fwdoctor.rules import RULES
from fwdoctor.rules import build as rules


def run(kb, **changes):
    """(report, {id: [findings]}) for HEALTHY with `changes` (keys with _ for .)."""
    facts = build_facts({k.replace("__", "."): v for k, v in changes.items()})
    report = judge(facts, kb, rules.RULES)
    by_id: dict[str, list] = {}
    for finding in report.findings:
        by_id.setdefault(finding.id, []).append(finding)
    return report, by_id


def errors(report) -> list:
    return [f for f in report.findings if f.severity is Severity.ERROR]


def test_a_healthy_request_passes_the_preflight_with_nothing_to_say(test_kb):
    report, found = run(test_kb)
    assert report.findings == [] and report.not_checked == []


def test_every_build_rule_documents_itself_in_the_fixed_sections():
    for item in rules.RULES:
        for section in ("What it does", "Why is this bad?", "Example", "Fix"):
            assert section in item.doc, f"{item.id}: no {section!r}"


def test_the_build_only_ids_are_the_build_area_and_check_lists_exactly_those():
    build_area = {k.id for k in FINDING_KINDS if k.area == "build"}
    assert {r.id for r in rules.CHECK_RULES} == build_area
    assert set(rules.CHECK_RULES) <= set(RULES)
    # The four shared ids stay off check's list: check judges them for the host itself.
    assert {r.id for r in rules.RULES} - build_area == {"host-compiler-unsupported", "gpu-arch-unsupported-by-toolkit", "nccl-cuda-mismatch", "cudnn-cuda-mismatch"}
    assert not set(rules.RULES) - set(rules.CHECK_RULES) & set(RULES)


# --------------------------------------------------------------------------- arch
def test_an_arch_nvcc_cannot_compile_is_refused_with_the_nvcc_error(test_kb):
    report, found = run(test_kb, build__toolkit=toolkit("13.0", archs=("7.5", "8.0", "9.0")), build__arch={"list": "5.0;8.0", "from": "--arch"})
    (finding,) = found["gpu-arch-unsupported-by-toolkit"]
    assert finding.severity is Severity.ERROR
    assert "compute_50" in finding.message and "5.0" in finding.message and "from --arch" in finding.message


def test_without_list_gpu_arch_the_kb_decides(test_kb):
    tk = toolkit("13.0", archs=None)
    _, found = run(test_kb, build__toolkit=tk, build__arch={"list": "5.0;8.0", "from": "--arch"})
    assert found["gpu-arch-unsupported-by-toolkit"][0].evidence["unsupported"] == ["5.0"]
    _, found = run(test_kb, build__toolkit=tk, build__arch={"list": "8.0;9.0+PTX", "from": "--arch"})
    assert "gpu-arch-unsupported-by-toolkit" not in found


def test_an_arch_neither_nvcc_nor_the_kb_knows_is_reported_not_checked(test_kb):
    tk = toolkit("13.0", archs=None)
    _, found = run(test_kb, build__toolkit=tk, build__arch={"list": "8.0;99.0", "from": "--arch"})
    (warning,) = found["build-not-checked"]
    assert warning.severity is Severity.WARNING and "gpu-arch-unsupported-by-toolkit" in warning.message and "99.0" in warning.message
    # Beside a target it refuses, the unknown one is named in the error.
    _, found = run(test_kb, build__toolkit=tk, build__arch={"list": "5.0;99.0", "from": "--arch"})
    assert "99.0" in found["gpu-arch-unsupported-by-toolkit"][0].message


# --------------------------------------------------------------------------- host compiler
def test_a_too_new_gxx_without_an_alternative_is_refused(test_kb):
    report, found = run(test_kb, build__host_cxx=gxx("/usr/bin/g++", "15.1.0"))
    (finding,) = errors(report)
    assert finding.id == "host-compiler-unsupported" and "gcc 15.1.0" in finding.message and "gcc <= 14" in finding.message


def test_a_too_new_gxx_with_an_older_gxx_installed_switches_cudahostcxx(test_kb):
    others = [gxx("/usr/bin/g++-13", "13.3.0"), gxx("/usr/bin/g++-14", "14.2.0"), gxx("/usr/bin/g++-16", "16.0.0")]
    report, found = run(test_kb, build__host_cxx=gxx("/usr/bin/g++", "15.1.0"), build__gxx_installed=others)
    assert errors(report) == []
    (info,) = found["host-compiler-unsupported"]
    assert info.severity is Severity.INFO and info.evidence["using"] == "/usr/bin/g++-14"


def test_a_cudahostcxx_the_user_set_is_never_swapped(test_kb):
    report, _ = run(test_kb, build__host_cxx=gxx("/opt/gcc-15/bin/g++", "15.1.0", "CUDAHOSTCXX"), build__gxx_installed=[gxx("/usr/bin/g++-13", "13.3.0")])
    assert [f.id for f in errors(report)] == ["host-compiler-unsupported"]


def test_a_lower_bound_in_host_config_refuses_an_old_gxx(test_kb):
    report, _ = run(test_kb, build__toolkit=toolkit(gcc_min=6, gcc_max=12), build__host_cxx=gxx("/usr/bin/g++", "5.4.0"))
    assert "gcc 6 to 12" in errors(report)[0].message


def test_no_bound_or_no_compiler_version_is_not_checked_and_no_gxx_is_an_input_missing(test_kb):
    _, found = run(test_kb, build__toolkit=toolkit(gcc_max=None))
    assert "no GNU version bound" in found["build-not-checked"][0].message
    _, found = run(test_kb, build__host_cxx=gxx("/usr/bin/g++", None))
    assert "/usr/bin/g++ is unknown" in found["build-not-checked"][0].message
    report, _ = run(test_kb, build__host_cxx=None)
    assert [f.id for f in errors(report)] == ["build-input-missing"] and "no C++ compiler" in errors(report)[0].message


# --------------------------------------------------------------------------- libraries
def test_nccl_built_for_another_cuda_major_is_refused(test_kb):
    nccl = path_lib("nccl", "2.30.7", "/n/include", "/n/lib/libnccl.so.2", 13, '"NCCL version 2.30.7+cuda13.3" in libnccl.so.2')
    report, _ = run(test_kb, build__nccl=nccl)
    (finding,) = errors(report)
    assert finding.id == "nccl-cuda-mismatch" and "CUDA 13" in finding.message and "CUDA 12.8" in finding.message


def test_cudnn_with_an_unknown_cuda_major_is_a_not_checked_warning(test_kb):
    report, found = run(test_kb, build__cudnn=path_lib("cudnn", "9.1.0", "/c/include", "/c/lib/libcudnn.so.9", None))
    assert errors(report) == []
    assert "cudnn-cuda-mismatch" in found["build-not-checked"][0].message


def test_a_path_without_headers_or_library_is_refused(test_kb):
    report, _ = run(test_kb, build__cudnn=path_lib("cudnn", None, None, None, None))
    assert [f.id for f in errors(report)] == ["build-input-missing"]


def test_a_pip_version_older_than_the_cuda_majors_first_wheel_is_refused(test_kb):
    report, _ = run(test_kb, build__toolkit=toolkit("13.0"), build__nccl=pip_lib("nccl", "2.27.5", 13), build__cudnn=kind_lib("cudnn", "bundled"))
    (finding,) = errors(report)
    assert finding.id == "build-no-wheel" and "2.27.7" in finding.message


def test_a_cudnn_past_the_last_cu11_wheel_and_a_major_without_wheels_are_refused(test_kb):
    report, _ = run(test_kb, build__toolkit=toolkit("11.8"), build__torch="2.6.0", build__nccl=kind_lib("nccl", "bundled"),
                    build__cudnn=pip_lib("cudnn", "9.12.0.46", 11))
    assert [f.id for f in errors(report)] == ["build-no-wheel"]
    report, _ = run(test_kb, build__toolkit=toolkit("10.2"), build__nccl=pip_lib("nccl", "2.5.6", 10), build__cudnn=kind_lib("cudnn", "none"))
    assert "no pip wheel of NCCL for CUDA 10" in errors(report)[0].message


# --------------------------------------------------------------------------- python
def test_python_without_pip_is_refused_and_a_system_python_is_warned_about(test_kb):
    _, found = run(test_kb, build__python=python_env("/usr/bin/python3", isolated=False, has_pip=False))
    assert {f.severity for f in found["build-python-unusable"]} == {Severity.ERROR, Severity.WARNING}


def test_a_python_that_cannot_run_is_refused_with_the_reason(test_kb):
    report, _ = run(test_kb, build__python={"executable": "/nope/python", "error": "cannot run it: not found"})
    assert any(f.id == "build-python-unusable" and "not found" in f.message for f in errors(report))


# --------------------------------------------------------------------------- resources
def test_low_disk_and_memory_are_refused_before_a_build_but_not_for_cmake_only(test_kb):
    low = {"build__disk_free": {"path": "/w", "checked_at": "/", "bytes": 10 * GIB}, "build__mem_available_bytes": 2 * GIB}
    report, _ = run(test_kb, **low)
    assert {f.id for f in errors(report)} == {"build-disk-low", "build-ram-low"}
    report, _ = run(test_kb, request__build__cmake_only=True, **low)
    assert errors(report) == []


def test_unknown_disk_and_memory_are_not_checked_warnings_with_the_reason(test_kb):
    report, found = run(test_kb, build__disk_free=Unknown("statvfs failed at /w"), build__mem_available_bytes=Unknown("no MemAvailable"))
    messages = [f.message for f in found["build-not-checked"]]
    assert errors(report) == [] and len(messages) == 2
    assert any("statvfs failed at /w" in m for m in messages) and any("MAX_JOBS follows the core count" in m for m in messages)


# --------------------------------------------------------------------------- tools
def test_an_old_cmake_and_a_missing_ninja_are_installed_into_the_environment(test_kb):
    _, found = run(test_kb, build__cmake=tool("/usr/bin/cmake", "3.25.1"), build__ninja=None)
    assert sorted(f.evidence["install"] for f in found["build-tool-installed"]) == ["cmake>=3.27", "ninja"]
    _, found = run(test_kb, build__torch="2.7.1", build__cmake=tool("/usr/bin/cmake", "3.25.1"), build__ninja=None)
    assert [f.evidence["install"] for f in found["build-tool-installed"]] == ["ninja"]


def test_a_torch_older_than_the_recipe_knows_is_refused(test_kb):
    report, _ = run(test_kb, build__torch="1.13.1")
    assert "build-torch-unsupported" in {f.id for f in errors(report)}


def test_ccache_or_git_missing_is_refused(test_kb):
    report, _ = run(test_kb, request__build__ccache=True, build__git=None)
    assert sum(1 for f in errors(report) if f.id == "build-input-missing") == 2
    report, _ = run(test_kb, build__git=None, build__source={"path": "/src", "version_txt": "2.9.1"})
    assert errors(report) == []


# --------------------------------------------------------------------------- the engine's view
def test_a_plain_check_neither_runs_nor_counts_the_build_rules(test_kb):
    host_only = Facts()  # a plain `fwdoctor check`: no request.build.* and no build.* facts
    report = judge(host_only, test_kb, RULES)
    # Not checks of `check` (issue 29): no "not run" for them, and none fires.
    assert not [n for n in report.not_checked if n.area == "build"]
    assert not [f for f in report.findings if f.area == "build"]
    # With a build request in the facts they are check's too, each "not probed" alone.
    asked = judge(Facts([Fact("request.build.torch", "2.9.1", source="--version")]), test_kb, RULES)
    skipped = {n.rule: n.reason for n in asked.not_checked if n.area == "build"}
    assert set(skipped) == {r.id for r in rules.CHECK_RULES}


def test_saved_build_facts_rejudge_to_the_same_findings(test_kb):
    facts = build_facts({"build.toolkit": toolkit("13.0"), "build.nccl": pip_lib("nccl", "2.27.5", 13),
                         "build.disk_free": Unknown("a root folder's free disk is not the target machine's")})
    again = Facts.from_json(json.loads(json.dumps(facts.to_json())))
    first, second = judge(facts, test_kb, rules.RULES), judge(again, test_kb, rules.RULES)
    assert [(f.id, f.message) for f in first.findings] == [(f.id, f.message) for f in second.findings]
    assert {"build-no-wheel", "build-not-checked"} <= {f.id for f in first.findings}


def test_a_rule_that_breaks_is_reported_by_build_not_checked_not_swallowed(test_kb, monkeypatch, rule_errors_reported):
    # rule_errors_reported: what users get (the test suite's switch would re-raise instead)
    def broken(facts, kb):
        raise RuntimeError("boom")

    monkeypatch.setattr(rules, "RULES", (rules.Rule("build-ram-low", (), broken), rules.not_checked))
    report = judge(build_facts(), test_kb, rules.RULES)
    assert any("internal error in rule: RuntimeError: boom" in f.message for f in report.findings if f.id == "build-not-checked")
