"""`fwdoctor build ext`: the pre-flight's refusals on facts (frozen tests/kb), the plan's
environment, the prepare script's -gencode rewrite, the proof's readers, and the dry runs
through the CLI on this host. The real build of causal-conv1d: test_build_ext_real.py."""

from __future__ import annotations

import os
import sys

import pytest

from conftest import TEST_VENV, require_module
from build_facts import GIB, HEALTHY, Unknown, build_facts, gxx, toolkit
from fwdoctor.engine import judge
from fwdoctor.findings import FINDING_KINDS
from fwdoctor.model import Severity
from fwdoctor.recipes import build_ext as bx
from fwdoctor.recipes.scripts import FOLDER
from fwdoctor.rules import build_ext as rules

sys.path.insert(0, str(FOLDER))
import ext_prepare  # noqa: E402  (recipes/scripts/ext_prepare.py: runs in the target interpreter)

TORCH = {"python": "cp311", "include": "/v/include/python3.11", "python_h": True, "version": "2.14.1+cu130", "cuda": "13.0", "hip": None,
         "cxx11_abi": True, "arch_list": ["sm_75", "sm_80", "sm_90"], "lib_dir": "/v/lib/python3.11/site-packages/torch/lib", "error": ""}
EXT: dict = {
    **HEALTHY,
    "request.ext.spec": "causal-conv1d==1.7.0",
    "request.ext.jobs": None,
    "request.ext.arch_from": "--arch",
    "request.build.arch": "9.0",
    "build.arch": {"list": "9.0", "from": "--arch"},
    "build.toolkit": {**toolkit("13.0", root="/usr/local/cuda-13.0", gcc_max=15), "from": "$CUDA_HOME"},
    "ext.source": {"kind": "requirement", "name": "causal-conv1d", "version": "1.7.0"},
    "ext.torch": TORCH,
}


def run(kb, **changes):
    facts = build_facts({k.replace("__", "."): v for k, v in changes.items()}, base=EXT)
    report = judge(facts, kb, rules.RULES)
    by_id: dict[str, list] = {}
    for f in report.findings:
        by_id.setdefault(f.id, []).append(f)
    return facts, report, by_id


def test_the_extension_ids_are_their_own_area_and_every_one_has_a_rule():
    area = {k.id for k in FINDING_KINDS if k.area == "extension"}
    assert area == {r.id for r in rules.RULES if r.id.startswith("ext-")}


def test_a_healthy_request_plans_the_build_with_its_environment_printed(test_kb):
    facts, report, found = run(test_kb)
    assert not report.has_errors, [f.message for f in report.findings]
    ep = bx.ext_plan(facts, test_kb, report)
    env = ep.to_plan().env
    assert env["CUDA_HOME"] == "/usr/local/cuda-13.0"
    assert env["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert env["CAUSAL_CONV1D_FORCE_BUILD"] == "TRUE"
    assert env["MAX_JOBS"] == "16"  # 16 cores, 64 GiB at 2 GiB per job
    script = ep.to_plan().to_shell()
    assert "pip wheel --no-build-isolation --no-deps -v" in script
    assert "pip download --no-deps --no-binary :all: --no-build-isolation" in script
    assert "--gencode 9.0" in script
    assert "CUDAHOSTCXX" not in env


def test_the_prebuilt_wheel_that_would_fit_is_named_with_torch_cuda_abi_and_python(test_kb):
    _, _, found = run(test_kb)
    (hit,) = found["ext-prebuilt-wheel"]
    assert hit.evidence["wheel"] == ("https://github.com/Dao-AILab/causal-conv1d/releases/download/v1.7.0/"
                                     "causal_conv1d-1.7.0+cu13torch2.14cxx11abiTRUE-cp311-cp311-linux_x86_64.whl")
    _, _, found = run(test_kb, ext__torch={**TORCH, "cxx11_abi": False, "python": "cp312"})
    assert "cxx11abiFALSE-cp312-cp312" in found["ext-prebuilt-wheel"][0].evidence["wheel"]


def test_flash_attn_for_cuda_13_names_why_no_prebuilt_wheel_fits(test_kb):
    _, _, found = run(test_kb, ext__source={"kind": "requirement", "name": "flash-attn", "version": "2.8.3"})
    (hit,) = found["ext-prebuilt-wheel"]
    assert hit.message.startswith("none fits: flash-attn's prebuilt wheels are named for CUDA 11, CUDA 12, and torch 2.14.1+cu130 is CUDA 13.0")
    assert hit.evidence["wheel"] is None


def test_an_nvcc_of_another_major_is_refused_with_torchs_own_error(test_kb):
    _, report, found = run(test_kb, build__toolkit={**toolkit("12.8", root="/usr/local/cuda-12.8"), "from": "$CUDA_HOME"})
    (hit,) = found["ext-cuda-mismatch"]
    assert hit.severity is Severity.ERROR and report.has_errors
    assert ("The detected CUDA version (12.8) mismatches the version that was used to compile PyTorch (13.0). "
            "Please make sure to use the same CUDA versions.") in hit.message


def test_an_nvcc_of_another_minor_only_warns_as_torch_does(test_kb):
    _, report, found = run(test_kb, build__toolkit={**toolkit("13.2", root="/usr/local/cuda-13.2", gcc_max=15), "from": "$CUDA_HOME"})
    assert found["ext-cuda-mismatch"][0].severity is Severity.WARNING
    assert not report.has_errors


def test_a_gcc_too_new_without_a_fitting_gxx_is_refused(test_kb):
    _, report, found = run(test_kb, build__toolkit={**toolkit("13.0", root="/usr/local/cuda-13.0", gcc_max=14), "from": "$CUDA_HOME"},
                           build__host_cxx=gxx("/usr/bin/g++", "15.1.0"), build__gxx_installed=[])
    (hit,) = found["host-compiler-unsupported"]
    assert hit.severity is Severity.ERROR and report.has_errors
    assert "unsupported GNU version!" in hit.message


def test_a_gcc_too_new_with_a_fitting_gxx_builds_with_it_as_the_host_compiler(test_kb):
    facts, report, found = run(test_kb, build__toolkit={**toolkit("13.0", root="/usr/local/cuda-13.0", gcc_max=14), "from": "$CUDA_HOME"},
                               build__host_cxx=gxx("/usr/bin/g++", "15.1.0"), build__gxx_installed=[{"path": "/usr/bin/g++-13", "version": "13.3.0"}])
    assert found["host-compiler-unsupported"][0].severity is Severity.INFO
    assert not report.has_errors
    env = bx.ext_plan(facts, test_kb, report).env
    # torch's cpp_extension hands $CC to nvcc as -ccbin; CUDAHOSTCXX is CMake's name.
    assert env["CUDAHOSTCXX"] == env["CC"] == env["CXX"] == "/usr/bin/g++-13"


def test_flash_attn_on_a_v100_refuses_naming_the_projects_arch_rule(test_kb):
    # CUDA 12.8 still compiles sm_70, so only the project's own arch list refuses.
    _, report, found = run(test_kb, ext__source={"kind": "requirement", "name": "flash-attn", "version": "2.8.3"},
                           build__toolkit={**toolkit("12.8", root="/usr/local/cuda-12.8"), "from": "$CUDA_HOME"},
                           ext__torch={**TORCH, "version": "2.9.1+cu128", "cuda": "12.8"},
                           build__arch={"list": "7.0", "from": "host GPUs (7.0)"})
    assert report.has_errors
    assert set(found) & {f.id for f in report.findings if f.severity is Severity.ERROR} == {"ext-arch-unsupported-by-project"}
    (hit,) = found["ext-arch-unsupported-by-project"]
    assert hit.message == "flash-attn 2.8.3 builds for 8.0, 9.0 with nvcc 12.8, not for 7.0 (from host GPUs (7.0))"


def test_more_jobs_than_memory_allows_is_refused_with_the_number_that_fits(test_kb):
    _, report, found = run(test_kb, request__ext__jobs=16, build__mem_available_bytes=10 * GIB)
    (hit,) = found["ext-jobs-exceed-memory"]
    assert report.has_errors and hit.evidence["fits"] == 5
    assert hit.message.startswith("--jobs 16 needs ~32 GiB (2 GiB per job")
    assert hit.message.endswith("10.0 GiB is available: at most --jobs 5")


def test_without_jobs_max_jobs_is_capped_by_memory_per_job(test_kb):
    facts, report, _ = run(test_kb, build__mem_available_bytes=5 * GIB)
    assert bx.ext_plan(facts, test_kb, report).env["MAX_JOBS"] == "2"


def test_missing_python_headers_and_ninja_are_named(test_kb):
    _, report, found = run(test_kb, ext__torch={**TORCH, "python_h": False}, build__ninja=None)
    assert "Python.h: No such file or directory" in found["ext-python-headers-missing"][0].message
    assert found["ext-ninja-missing"][0].severity is Severity.WARNING


def test_a_cpu_torch_or_no_torch_is_refused(test_kb):
    _, _, found = run(test_kb, ext__torch={**TORCH, "cuda": None, "version": "2.14.1+cpu"})
    assert "CPU-only" in found["ext-torch-unusable"][0].message
    _, _, found = run(test_kb, ext__torch={"python": "cp311", "python_h": True, "error": "import torch failed: ModuleNotFoundError: No module named 'torch'"})
    assert found["ext-torch-unusable"][0].message.startswith("import torch failed: ModuleNotFoundError")


def test_an_unknown_project_is_said_and_its_project_checks_are_not_checked(test_kb):
    _, report, found = run(test_kb, ext__source={"kind": "folder", "path": "/src/my-ext", "name": "my-ext", "version": None})
    assert found["ext-project-unknown"][0].message.startswith("no data for my-ext (any version) in the KB")
    not_checked = {f.evidence["rule"] for f in found["ext-not-checked"]}
    assert {"ext-arch-unsupported-by-project", "ext-cuda-unsupported-by-project", "ext-prebuilt-wheel"} <= not_checked
    assert not report.has_errors


def test_an_unknown_arch_list_is_not_checked_rather_than_passed(test_kb):
    _, _, found = run(test_kb, build__arch=Unknown("--arch auto: no GPU found on this host"))
    reasons = {f.evidence["rule"]: f.evidence["reason"] for f in found["ext-not-checked"]}
    assert "no GPU found" in reasons["ext-arch-unsupported-by-project"]


# --------------------------------------------------------------------------- the prepare script
SETUP_PY = '''\
cc_flag = []
if True:
    cc_flag.append("-gencode")
    cc_flag.append("arch=compute_75,code=sm_75")
    cc_flag.append("-gencode")
    cc_flag.append("arch=compute_80,code=sm_80")
    if bare_metal_version >= Version("11.8"):
        cc_flag.append("-gencode")
        cc_flag.append("arch=compute_90,code=sm_90")
    if bare_metal_version >= Version("12.8"):
        cc_flag.append("-gencode")
        cc_flag.append("arch=compute_100,code=sm_100")
'''


def test_the_prepare_script_keeps_only_the_asked_gencode_entries_and_stays_python():
    text, kept = ext_prepare.keep_arches(SETUP_PY, ["9.0"])
    assert kept == ["90"]
    assert 'cc_flag.append("arch=compute_90,code=sm_90")' in text
    assert "compute_75" not in text and "compute_80" not in text and "compute_100" not in text
    compile(text, "setup.py", "exec")


def test_the_prepare_script_refuses_an_arch_setup_py_does_not_list(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "setup.py").write_text(SETUP_PY)
    assert ext_prepare.main(["--from", str(src), "--to", str(tmp_path / "out"), "--gencode", "8.6"]) == 1
    assert ext_prepare.main(["--from", str(src), "--to", str(tmp_path / "out"), "--gencode", "8.0,9.0"]) == 0
    assert "compute_75" not in (tmp_path / "out" / "setup.py").read_text()


# --------------------------------------------------------------------------- the proof's readers
# cuobjdump 13.0 --list-elf of the causal_conv1d_cuda .so built for 9.0 (test_build_ext_real.py),
# and of a fat build of the same sources.
LIST_ELF_90 = "ELF file    1: causal_conv1d_cuda.cpython-311-x86_64-linux-gnu.1.sm_90.cubin\nELF file    2: causal_conv1d_cuda.cpython-311-x86_64-linux-gnu.2.sm_90.cubin\n"
LIST_ELF_FAT = LIST_ELF_90 + "ELF file    3: x.3.sm_80.cubin\nELF file    4: x.4.sm_100a.cubin\n"


def test_the_kernel_list_is_read_from_cuobjdump():
    assert bx.parse_list_elf(LIST_ELF_90) == ["9.0"]
    assert bx.parse_list_elf(LIST_ELF_FAT) == ["8.0", "9.0", "10.0a"]
    assert bx.parse_list_elf("") == []


def test_undefined_symbols_other_than_the_interpreters_fail_the_proof():
    text = ("\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc10.so => /v/torch/lib/libc10.so (0x0)\n\tlibfoo.so => not found\n"
            "undefined symbol: PyExc_RuntimeError\t(./x.so)\nundefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs\t(./x.so)\n")
    undefined, missing = bx.parse_ldd_r(text)
    assert undefined == ["_ZN3c105ErrorC2ENS_14SourceLocationESs"]
    assert missing == ["libfoo.so"]


def test_a_failed_build_is_summarised_by_triages_error_signatures():
    log = ("  [2/4] /usr/local/cuda/bin/nvcc ...\nRuntimeError: \nThe detected CUDA version (12.8) mismatches the version that was used to "
           "compile\nPyTorch (13.0). Please make sure to use the same CUDA versions.\n")
    lines = bx.summarize_failure(log)
    assert lines and "mismatches the version" in lines[0]


# --------------------------------------------------------------------------- through the CLI
NVCC = "/usr/local/cuda-13.0/bin/nvcc"


@pytest.fixture
def cuda_home(monkeypatch):
    assert os.access(NVCC, os.X_OK), f"these tests need the CUDA 13.0 toolkit at {NVCC} (CI's image has it)"
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda-13.0")


@pytest.mark.usefixtures("use_test_kb", "roomy_host", "cuda_home")
def test_the_causal_conv1d_dry_run_plans_against_this_interpreters_torch(cli, tmp_path):
    require_module("torch", TEST_VENV)
    result = cli("build", "ext", "causal-conv1d==1.7.0", "--arch", "9.0", "--python", sys.executable, "--workdir", str(tmp_path / "w"))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "export CUDA_HOME=/usr/local/cuda-13.0" in out and "export TORCH_CUDA_ARCH_LIST=9.0" in out
    assert "export CAUSAL_CONV1D_FORCE_BUILD=TRUE" in out and "export MAX_JOBS=" in out
    assert "info  ext-prebuilt-wheel: the prebuilt wheel that would fit torch 2.14.1+cu130" in out
    assert "causal_conv1d-1.7.0+cu13torch2.14cxx11abi" in out


@pytest.mark.usefixtures("use_test_kb", "roomy_host", "cuda_home")
def test_the_flash_attn_dry_run_for_a_v100_refuses_and_names_the_arch_rule(cli, tmp_path):
    result = cli("build", "ext", "flash-attn==2.8.3", "--gpu", "7.0", "--python", sys.executable, "--workdir", str(tmp_path / "w"))
    assert result.exit_code == 1, result.output
    assert "error ext-arch-unsupported-by-project: flash-attn 2.8.3 builds for 8.0, 9.0 with nvcc 13.0, not for 7.0" in result.output
    assert "fwdoctor: build refused" in result.output


@pytest.mark.usefixtures("use_test_kb", "roomy_host")
def test_a_spec_that_is_neither_requirement_sdist_nor_folder_is_an_input_error(cli, tmp_path):
    result = cli("build", "ext", str(tmp_path / "nothing.txt"), "--arch", "9.0", "--python", sys.executable)
    assert result.exit_code == 2
    assert "expected a requirement (causal-conv1d==1.7.0), an sdist (NAME-VERSION.tar.gz) or a source folder" in result.output


# --------------------------------------------------------------------------- the probes, on fixture roots
from fwdoctor.engine import collect  # noqa: E402
from fwdoctor.host import Host  # noqa: E402
from fwdoctor.model import Fact  # noqa: E402
from fwdoctor.probes import build_ext as probes  # noqa: E402


def _toolkit_root(root, folder: str, release: str = "13.0") -> None:
    (root / folder.lstrip("/") / "bin").mkdir(parents=True)
    nvcc = root / folder.lstrip("/") / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    (root / folder.lstrip("/") / "include" / "crt").mkdir(parents=True)
    (root / folder.lstrip("/") / "include" / "cuda_runtime.h").write_text("")
    (root / folder.lstrip("/") / "include" / "crt" / "host_config.h").write_text("#if __GNUC__ > 15\n#error -- unsupported GNU version!\n#endif\n")
    (root / folder.lstrip("/") / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "%s.48"}}' % release)


def _ext_facts(root, env):
    return collect(Host.at_root(root, env), (probes.ext_source, probes.ext_toolkit, probes.ext_torch),
                   seed=[Fact("request.ext.spec", "causal-conv1d==1.7.0"), Fact("request.build.python", "/v/bin/python")])


def test_the_toolkit_is_cuda_home_first_as_torchs_cpp_extension_takes_it(tmp_path):
    _toolkit_root(tmp_path, "/usr/local/cuda-13.0")
    _toolkit_root(tmp_path, "/opt/cuda-12.8", "12.8")
    facts = _ext_facts(tmp_path, {"CUDA_HOME": "/opt/cuda-12.8", "PATH": "/usr/local/cuda-13.0/bin:/usr/bin"})
    assert facts["build.toolkit"]["root"] == "/opt/cuda-12.8" and facts["build.toolkit"]["release"] == "12.8"
    facts = _ext_facts(tmp_path, {"PATH": "/usr/local/cuda-13.0/bin:/usr/bin"})
    assert facts["build.toolkit"]["root"] == "/usr/local/cuda-13.0" and facts["build.toolkit"]["from"].startswith("nvcc on PATH")


def test_an_nvcc_wrapper_outside_a_toolkit_falls_back_to_usr_local_cuda_and_says_why(tmp_path):
    _toolkit_root(tmp_path, "/usr/local/cuda")
    wrapper = tmp_path / "usr/local/bin/nvcc"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text('#!/bin/sh\nexec /usr/local/cuda/bin/nvcc "$@"\n')
    wrapper.chmod(0o755)
    facts = _ext_facts(tmp_path, {"PATH": "/usr/local/bin:/usr/bin"})
    assert facts["build.toolkit"]["root"] == "/usr/local/cuda"
    assert "torch alone would take CUDA_HOME=/usr/local and miss its headers" in facts["build.toolkit"]["from"]


def test_under_a_root_torch_is_not_imported_and_says_why(tmp_path):
    facts = _ext_facts(tmp_path, {"PATH": "/usr/bin"})
    assert not facts.known("ext.torch") and "nothing runs inside --root" in facts.why("ext.torch")
    assert not facts.known("build.toolkit") and "set CUDA_HOME" in facts.why("build.toolkit")


@pytest.mark.parametrize("spec, parsed", [
    ("causal-conv1d==1.7.0", {"kind": "requirement", "name": "causal-conv1d", "version": "1.7.0"}),
    ("flash-attn", {"kind": "requirement", "name": "flash-attn", "version": None}),
    ("/d/causal_conv1d-1.7.0.tar.gz", {"kind": "sdist", "name": "causal_conv1d", "version": "1.7.0"}),
    ("/d/notes.txt", None),
])
def test_spec_is_a_requirement_or_an_sdist_name(spec, parsed):
    assert probes.parse_spec(spec) == parsed


@pytest.mark.usefixtures("use_test_kb", "roomy_host", "cuda_home")
def test_the_json_of_a_refused_dry_run_holds_the_findings_and_no_plan(cli, tmp_path):
    import json

    result = cli("build", "ext", "flash-attn==2.8.3", "--gpu", "Tesla V100-SXM2-16GB", "--python", sys.executable, "--json")
    assert result.exit_code == 1
    doc, _ = json.JSONDecoder().raw_decode(result.output[result.output.index("{"):])  # then the refusal line
    assert doc["plan"] is None
    hit = next(f for f in doc["findings"] if f["id"] == "ext-arch-unsupported-by-project")
    assert hit["message"].endswith("not for 7.0 (from --gpu Tesla V100-SXM2-16GB)")
