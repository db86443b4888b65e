"""The cuDNN/NCCL rules on hand-made Facts: each id's firing and near-miss examples, how
unknown torch/toolkit facts are handled, and the documented sections of every rule."""

from __future__ import annotations

import pytest

from fwdoctor.model import Fact, Facts, Severity
from fwdoctor.rules import libs as rules

SITE = "/venv/lib/python3.11/site-packages"


@pytest.fixture(scope="module")
def kb(test_kb):
    return test_kb


def pip(lib="cudnn", cuda=13, version="9.24.0.43", header="9.24.0", library="9"):
    project = f"nvidia-{lib}-cu{cuda}"
    soname = "libcudnn.so.9" if lib == "cudnn" else "libnccl.so.2"
    return {"kind": "pip", "prefix": f"{SITE}/nvidia/{lib}", "header_version": header, "library_version": library,
            "library": f"{SITE}/nvidia/{lib}/lib/{soname}", "header": f"{SITE}/nvidia/{lib}/include/x.h",
            "cuda_major": cuda, "package": f"{project} {version}"}


def system(kind="dpkg", header=None, library="8.9.7", cuda=12, package="libcudnn8 8.9.7.29-1+cuda12.2", prefix="/usr", lib="libcudnn.so"):
    return {"kind": kind, "prefix": prefix, "header_version": header, "library_version": library,
            "library": f"{prefix}/lib/{lib}.{library}" if library else None, "header": f"{prefix}/include/h.h" if header else None,
            "cuda_major": cuda, "package": package}


def facts(lib="cudnn", installs=(), first=None, torch=True, torch_cuda="13.0", active=None, **extra):
    items = [Fact(f"{lib}.installs", list(installs)), Fact(f"{lib}.ld_first", first),
             Fact("ld.library_path", extra.pop("ldpath", [])), Fact("ld.preload", extra.pop("preload", []))]
    if torch:
        items += [Fact("torch.location", f"{SITE}/torch"), Fact("torch.cuda", torch_cuda),
                  Fact("torch.requires", {"nvidia-cudnn-cu13": "==9.24.0.43", "nvidia-nccl-cu13": "==2.30.7"})]
    elif torch is None:
        items += [Fact("torch.location", None), Fact("torch.cuda", None), Fact("torch.requires", {})]
    items.append(Fact("cuda.active", active))
    return Facts(items)


# ----------------------------------------------------------------------------- cuda mismatch
def test_a_cu11_cudnn_wheel_beside_a_cu13_torch_is_an_error(kb):
    f = facts(installs=[pip(), pip(cuda=11, version="9.1.0.70")])
    (finding,), skipped = rules.cudnn_cuda_mismatch.evaluate(f, kb)
    assert skipped is None and finding.severity is Severity.ERROR
    assert "nvidia-cudnn-cu11 9.1.0.70" in finding.message and "CUDA 13.0" in finding.message
    # Both wheels own nvidia/cudnn/lib/*: removing the stale one deletes torch's files too.
    assert finding.fix.recipe == "env" and finding.fix.commands == (
        "pip uninstall -y nvidia-cudnn-cu11", "pip install --force-reinstall --no-deps nvidia-cudnn-cu13==9.24.0.43")
    assert finding.fix.options == {"pip_uninstall": ["nvidia-cudnn-cu11"], "pip_reinstall": ["nvidia-cudnn-cu13==9.24.0.43"]}


def test_torchs_only_wheel_built_for_another_cuda_is_replaced_by_the_pinned_one(kb):
    (finding,), _ = rules.cudnn_cuda_mismatch.evaluate(facts(installs=[pip(cuda=12, version="9.10.2.21")]), kb)
    assert finding.fix.commands == ("pip uninstall -y nvidia-cudnn-cu12", "pip install nvidia-cudnn-cu13==9.24.0.43")
    assert finding.fix.options["pip_install"] == ["nvidia-cudnn-cu13==9.24.0.43"]


def test_the_wheel_torch_pins_is_no_mismatch(kb):
    assert rules.cudnn_cuda_mismatch.evaluate(facts(installs=[pip()]), kb) == ([], None)


def test_a_cuda_11_debian_cudnn_under_a_cuda_12_toolkit_is_an_error(kb):
    inst = system(package="libcudnn8 8.9.7.29-1+cuda11.8", cuda=11)
    f = facts(installs=[inst], torch=None, active={"root": "/usr/local/cuda-12.4", "version": "12.4.131"})
    (finding,), _ = rules.cudnn_cuda_mismatch.evaluate(f, kb)
    assert "libcudnn8 8.9.7.29-1+cuda11.8" in finding.message and "12.4.131" in finding.message
    assert finding.fix.commands[-1] == "apt-get install libcudnn8"


def test_a_cudnn_of_unknown_cuda_is_judged_by_its_version_through_the_kb(kb):
    inst = system(kind="toolkit", package=None, cuda=None, library="9.1.0", prefix="/usr/local/cuda-13.0")
    f = facts(installs=[inst], torch=None, active={"root": "/usr/local/cuda-13.0", "version": "13.0.88"})
    (finding,), _ = rules.cudnn_cuda_mismatch.evaluate(f, kb)
    assert "built only for CUDA 11 and 12" in finding.message


def test_a_cudnn_newer_than_the_kb_is_not_checked_rather_than_passed(kb):
    inst = system(kind="toolkit", package=None, cuda=None, library="9.40.0", prefix="/usr/local/cuda-13.0")
    f = facts(installs=[inst], torch=None, active={"root": "/usr/local/cuda-13.0", "version": "13.0.88"})
    findings, skipped = rules.cudnn_cuda_mismatch.evaluate(f, kb)
    assert findings == [] and "no data for cuDNN 9.40.0" in skipped.reason


def test_without_torch_or_toolkit_there_is_nothing_to_compare_and_it_says_so(kb):
    f = Facts([Fact("cudnn.installs", [system()]), Fact("cudnn.ld_first", None)])
    findings, skipped = rules.cudnn_cuda_mismatch.evaluate(f, kb)
    assert findings == [] and "no CUDA major to compare with" in skipped.reason


def test_an_nccl_built_for_cuda_12_preloaded_into_a_cu13_torch_is_an_error(kb):
    inst = system(package="libnccl2 2.21.5-1+cuda12.4", library="2.21.5", lib="libnccl.so")
    first = {"path": inst["library"], "version": "2.21.5", "via": "LD_PRELOAD"}
    (finding,), _ = rules.nccl_cuda_mismatch.evaluate(facts("nccl", [pip("nccl", version="2.30.7", header="2.30.7", library="2.30.7"), inst], first), kb)
    assert "libnccl2 2.21.5-1+cuda12.4" in finding.message and "torch (built for CUDA 13.0)" in finding.message


def test_a_cuda_12_cudnn_first_on_ld_library_path_beside_a_pip_torch_is_a_warning_with_the_env_fix(kb):
    inst = system(kind="toolkit", package=None, cuda=None, library="9.1.0", prefix="/usr/local/cuda-12.4")
    first = {"path": "/usr/local/cuda-12.4/lib/libcudnn.so.9", "version": "9.1.0", "via": "LD_LIBRARY_PATH"}
    f = facts(installs=[pip(), inst], first=first, ldpath=["/usr/local/cuda-12.4/lib"])
    (finding,), _ = rules.cudnn_cuda_mismatch.evaluate(f, kb)
    assert finding.severity is Severity.WARNING and "LD_LIBRARY_PATH puts it in front of torch" in finding.message
    assert finding.fix.options == {"ld_library_path_remove": ["/usr/local/cuda-12.4/lib"]}


def test_torch_cuda_unknown_falls_back_to_the_cuda_of_torchs_own_wheel(kb):
    f = Facts([Fact("nccl.installs", [pip("nccl", version="2.30.7"), pip("nccl", cuda=12, version="2.27.3")]), Fact("nccl.ld_first", None)])
    (finding,), _ = rules.nccl_cuda_mismatch.evaluate(f, kb)
    assert "nvidia-nccl-cu12 2.27.3" in finding.message and "torch.cuda unknown" in finding.message


# ----------------------------------------------------------------------------- shadowed
def test_ld_library_path_putting_an_older_cudnn_first_beside_a_pip_torch_is_a_warning(kb):
    first = {"path": "/usr/local/cuda-12.4/lib64/libcudnn.so.9", "version": "9.1.0", "via": "LD_LIBRARY_PATH"}
    f = facts(installs=[pip()], first=first, ldpath=["/opt/x", "/usr/local/cuda-12.4/lib64"])
    (finding,), _ = rules.cudnn_shadowed.evaluate(f, kb)
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("LD_LIBRARY_PATH puts cuDNN 9.1.0 (/usr/local/cuda-12.4/lib64/libcudnn.so.9) ahead of torch's cuDNN 9.24.0; ")
    assert finding.fix.recipe == "env" and finding.fix.commands == ("export LD_LIBRARY_PATH=/opt/x",)
    assert finding.fix.options == {"ld_library_path_remove": ["/usr/local/cuda-12.4/lib64"]}


def test_ld_library_path_naming_torchs_own_folder_is_not_shadowing(kb):
    first = {"path": f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9", "version": "9.24.0", "via": "LD_LIBRARY_PATH"}
    assert rules.cudnn_shadowed.evaluate(facts(installs=[pip()], first=first), kb) == ([], None)


def test_a_copy_of_the_same_version_elsewhere_is_not_shadowing(kb):
    first = {"path": "/opt/cudnn/lib/libcudnn.so.9", "version": "9.24.0", "via": "LD_LIBRARY_PATH"}
    assert rules.cudnn_shadowed.evaluate(facts(installs=[pip()], first=first), kb) == ([], None)


def test_a_same_major_library_of_unknown_exact_version_is_a_warning(kb):
    first = {"path": "/opt/cudnn/lib/libcudnn.so.9", "version": "9", "via": "LD_LIBRARY_PATH"}
    (finding,), _ = rules.cudnn_shadowed.evaluate(facts(installs=[pip()], first=first), kb)
    assert finding.severity is Severity.WARNING and "cannot be told" in finding.message


def test_a_preloaded_old_nccl_is_an_error_that_names_its_known_bugs(kb):
    first = {"path": "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "version": "2.18.1", "via": "LD_PRELOAD"}
    own = pip("nccl", version="2.30.7", header="2.30.7", library="2.30.7")
    (finding,), _ = rules.nccl_shadowed.evaluate(facts("nccl", [own], first, preload=[first["path"]]), kb)
    assert finding.severity is Severity.ERROR and finding.fix.commands == ("unset LD_PRELOAD",)
    assert [b["id"] for b in finding.evidence["known_bugs_of_shadowing_version"]] == ["tree-ll128-1gpu-1nic-corruption", "commsplit-memory-corruption"]


def test_without_torchs_wheel_the_version_torch_pins_is_the_reference_and_it_is_an_error(kb):
    first = {"path": "/usr/lib/libnccl.so.2", "version": "2.21.5", "via": "LD_LIBRARY_PATH"}
    (finding,), _ = rules.nccl_shadowed.evaluate(facts("nccl", [], first), kb)
    assert finding.severity is Severity.ERROR
    assert "torch's NCCL 2.30.7" in finding.message and finding.evidence["expected_from"].startswith("torch's metadata pin")


def test_shadowing_without_torch_is_not_a_finding(kb):
    first = {"path": "/usr/lib/libnccl.so.2", "version": "2.21.5", "via": "LD_LIBRARY_PATH"}
    assert rules.nccl_shadowed.evaluate(facts("nccl", [], first, torch=None), kb) == ([], None)


def test_shadowing_with_torch_unknown_and_no_wheel_is_not_checked(kb):
    first = {"path": "/usr/lib/libnccl.so.2", "version": "2.21.5", "via": "LD_LIBRARY_PATH"}
    findings, skipped = rules.nccl_shadowed.evaluate(facts("nccl", [], first, torch=False), kb)
    assert findings == [] and "torch's own NCCL is unknown" in skipped.reason


# ----------------------------------------------------------------------------- header/library
def test_a_header_and_library_of_different_releases_is_a_warning(kb):
    inst = system(kind="tarball", header="8.9.3", library="9.1.0", package=None, cuda=12, prefix="/usr/local/cudnn")
    (finding,), _ = rules.cudnn_header_library_mismatch.evaluate(facts(installs=[inst]), kb)
    assert finding.severity is Severity.WARNING and "says 8.9.3" in finding.message and "9.1.0" in finding.message


def test_a_bare_library_major_agreeing_with_the_header_is_no_mismatch(kb):
    assert rules.cudnn_header_library_mismatch.evaluate(facts(installs=[pip()]), kb) == ([], None)


def test_an_nccl_header_newer_than_its_library_is_a_warning(kb):
    inst = system(kind="system", header="2.30.7", library="2.21.5", package=None, cuda=12, lib="libnccl.so")
    (finding,), _ = rules.nccl_header_library_mismatch.evaluate(facts("nccl", [inst]), kb)
    assert "nccl" in finding.message.lower() and "2.21.5" in finding.message


# ----------------------------------------------------------------------------- multiple
def test_two_cudnn_versions_are_listed_with_who_loads_which(kb):
    first = {"path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "version": "8.9.7", "via": "LD_LIBRARY_PATH"}
    (finding,), _ = rules.multiple_cudnn.evaluate(facts(installs=[pip(), system(header="8.9.7")], first=first), kb)
    assert finding.severity is Severity.INFO and finding.message.startswith("2 cuDNN versions installed")
    assert finding.evidence["consumers"] == {
        "torch": f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9",
        "other libraries": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8 (first on LD_LIBRARY_PATH)",
        "builds": "/usr/include/h.h",
    }


def test_one_version_in_two_places_is_not_multiple(kb):
    other = system(kind="tarball", header="9.24.0", library="9.24.0", package=None, prefix="/opt/cudnn")
    assert rules.multiple_cudnn.evaluate(facts(installs=[pip(), other]), kb) == ([], None)


def test_multiple_nccl_names_bugs_per_version(kb):
    own = pip("nccl", version="2.30.7", header="2.30.7", library="2.30.7")
    old = system(package="libnccl2 2.25.1-1+cuda12.8", library="2.25.1", lib="libnccl.so")
    (finding,), _ = rules.multiple_nccl.evaluate(facts("nccl", [own, old]), kb)
    assert finding.evidence["known_bugs"] == {"2.25.1": ["comm-abort-hang", "commsplit-memory-corruption"]}


# ----------------------------------------------------------------------------- docs
@pytest.mark.parametrize("item", rules.RULES, ids=lambda r: r.id)
def test_every_rule_documents_what_why_example_and_fix(item):
    doc = item.doc
    positions = [doc.find(section) for section in ("What it does:", "Why is this bad?", "Example:", "Fix:")]
    assert -1 not in positions and positions == sorted(positions), item.id


def test_the_rules_cover_every_cudnn_and_nccl_finding_id():
    from fwdoctor.findings import FINDING_KINDS

    from fwdoctor.rules import releases  # nccl-release-known-bug: beside driver-release-known-bug (issue 26)

    assert {r.id for r in (*rules.RULES, *releases.RULES) if r.area in ("cudnn", "nccl")} == {k.id for k in FINDING_KINDS if k.area in ("cudnn", "nccl")}
