"""The shipped doctor/kb/extensions.yaml rows for xformers and tiny-cuda-nn (issue 28): each
loads with its sources, and a dry run on facts names the variables that force the build and
carry the arch list, or says which checks the row cannot make. An audit of the shipped KB
(like test_kb_*.py), not a logic test on the frozen tests/kb."""

from __future__ import annotations

import pytest
import yaml

from build_facts import build_facts, toolkit
from fwdoctor.engine import judge
from fwdoctor.kb import KB
from fwdoctor.recipes import build_ext as bx
from fwdoctor.rules import build_ext as rules
from test_build_ext import EXT, TORCH


@pytest.fixture(scope="module")
def shipped():
    return KB.load()


def dry_run(kb, name, version, arch="9.0", release="13.0"):
    facts = build_facts({"ext.source": {"kind": "requirement", "name": name, "version": version},
                         "request.ext.spec": f"{name}=={version}" if version else name,
                         "build.arch": {"list": arch, "from": "--arch"}, "request.build.arch": arch,
                         "build.toolkit": {**toolkit(release, root=f"/usr/local/cuda-{release}", gcc_max=15), "from": "$CUDA_HOME"},
                         "ext.torch": TORCH}, base=EXT)
    report = judge(facts, kb, rules.RULES)
    found = {f.id: f for f in report.findings}
    return facts, report, found


def test_the_xformers_and_tiny_cuda_nn_rows_load_with_their_sources(shipped):
    xf = shipped.extensions.project("xformers", "0.0.31")
    assert xf is not None and xf.arch_choice == "torch-arch-list" and xf.force_build == {"FORCE_CUDA": "1"}
    assert xf.nvcc_threads == 4 and xf.archs is None and xf.min_cuda is None and xf.wheels is None
    assert shipped.extensions.project("xformers", "0.0.30") is None  # outside the release read
    tc = shipped.extensions.project("tinycudann", None)
    assert tc is not None and tc.arch_choice == "arch-env" and tc.arch_env == "TCNN_CUDA_ARCHITECTURES"
    assert tc.force_build == {} and tc.archs is None and tc.wheels is None
    assert tc.arch_env_value(["8.6", "9.0"]) == "86,90"
    cited = yaml.safe_load((shipped.directory / "extensions.yaml").read_text())["sources"]
    assert set(xf.source) | set(tc.source) <= set(cited)
    assert "facebookresearch/xformers@39addc86389ff5a7703c23221f48c3631f0a0151:setup.py" in cited["S-XF-SETUP"]
    assert "NVlabs/tiny-cuda-nn@02919511e152ee1059b51b7825bd9a4de659645c:bindings/torch/setup.py" in cited["S-TCNN-SETUP"]


def test_the_xformers_dry_run_forces_cuda_and_passes_the_arch_list_through_torch(shipped):
    facts, report, found = dry_run(shipped, "xformers", "0.0.31")
    assert not report.has_errors, [f.message for f in report.findings]
    ep = bx.ext_plan(facts, shipped, report)
    assert ep.env["FORCE_CUDA"] == "1" and ep.env["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert all("--gencode" not in step.argv for step in ep.prepare)  # torch-arch-list: setup.py is not rewritten
    assert any("xformers: setup.py reads TORCH_CUDA_ARCH_LIST" in n for n in ep.notes)
    # What the row does not know is said, never passed as checked.
    assert "no wheel URL" in found["ext-prebuilt-wheel"].message and found["ext-prebuilt-wheel"].evidence["wheel"] is None
    not_checked = " ".join(f.message for f in report.findings if f.id == "ext-not-checked")
    assert "xformers's KB row lists no arch set" in not_checked
    assert "xformers's KB row has no oldest nvcc" in not_checked


def test_the_tiny_cuda_nn_dry_run_sets_tcnn_cuda_architectures(shipped):
    facts, report, found = dry_run(shipped, "tinycudann", None, arch="8.6")
    assert not report.has_errors, [f.message for f in report.findings]
    ep = bx.ext_plan(facts, shipped, report)
    assert ep.env["TCNN_CUDA_ARCHITECTURES"] == "86"
    assert ep.to_plan().env["TCNN_CUDA_ARCHITECTURES"] == "86" and "--gencode" not in ep.prepare[-1].argv
    assert any("drops arches outside its range" in n for n in ep.notes)
    assert found["ext-prebuilt-wheel"].message == "tinycudann: its prebuilt wheels' naming is not in the KB (setup.py names no prebuilt wheel): none is named"
    # setup.py retargets rather than refuses: the KB has no fixed list, so the arch is not
    # refused and the check says it was not made.
    assert "ext-arch-unsupported-by-project" not in found
    assert "tinycudann's KB row lists no arch set" in " ".join(f.message for f in report.findings if f.id == "ext-not-checked")


ROW = {"name": "p", "versions": ">=1", "import": "p", "modules": [], "force_build": {}, "no_build_isolation": True,
       "gib_per_job": 1, "disk_gib": 1, "source": "S"}


@pytest.mark.parametrize(("extra", "message"), [
    ({"arch_choice": "gencode-in-setup"}, "a gencode-in-setup row lists the -gencode entries"),
    ({"arch_choice": "arch-env"}, "arch_env names the variable of an arch-env row"),
    ({"arch_choice": "torch-arch-list", "arch_env": "X"}, "arch_env names the variable of an arch-env row"),
])
def test_the_loader_refuses_a_row_whose_arch_fields_do_not_fit_its_arch_choice(extra, message):
    from fwdoctor.kb import Ctx, KBError
    from fwdoctor.kb.extensions import from_yaml

    with pytest.raises(KBError, match=message):
        from_yaml({"projects": [{**ROW, **extra}]}, Ctx("extensions.yaml", sources={"S": "s"}))
    # Without a fixed list and a floor, a torch-arch-list row loads and says so (None, not []).
    row = from_yaml({"projects": [{**ROW, "arch_choice": "torch-arch-list"}]}, Ctx("extensions.yaml", sources={"S": "s"})).projects[0]
    assert row.archs is None and row.archs_for("13.0") is None and row.min_cuda is None


def test_the_deepspeed_dry_run_forces_the_ops_and_says_what_it_leaves_to_the_op_builders(shipped):
    row = shipped.extensions.project("deepspeed", "0.16.4")
    assert row is not None and row.force_build == {"DS_BUILD_OPS": "1"} and row.arch_choice == "torch-arch-list"
    assert shipped.extensions.project("deepspeed", "0.3.0") is None  # another build logic: no data
    facts, report, found = dry_run(shipped, "deepspeed", "0.16.4")
    assert not report.has_errors, [f.message for f in report.findings]
    ep = bx.ext_plan(facts, shipped, report)
    assert ep.env["DS_BUILD_OPS"] == "1" and ep.env["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert any("DS_BUILD_<OP>" in n for n in ep.notes) and any("DS_ENABLE_NINJA" in n for n in ep.notes)
    not_checked = " ".join(f.message for f in report.findings if f.id == "ext-not-checked")
    assert "deepspeed's KB row lists no arch set" in not_checked and "deepspeed's KB row has no oldest nvcc" in not_checked


def test_the_apex_dry_run_turns_on_its_extensions_and_names_its_exact_cuda_rule(shipped):
    row = shipped.extensions.project("apex", "0.1")
    assert row is not None and row.modules == ("apex_C", "amp_C") and row.archs is None
    facts, report, found = dry_run(shipped, "apex", "0.1")
    assert not report.has_errors, [f.message for f in report.findings]
    ep = bx.ext_plan(facts, shipped, report)
    assert ep.env["APEX_CPP_EXT"] == ep.env["APEX_CUDA_EXT"] == "1" and ep.env["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert any("equals torch's CUDA exactly" in n for n in ep.notes)
    assert "apex's KB row lists no arch set" in " ".join(f.message for f in report.findings if f.id == "ext-not-checked")
