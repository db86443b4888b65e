"""Stack resolution against the frozen test KB (tests/kb): what it fills in, and the impossible stacks it
refuses with the reason (exit 1 from `fwdoctor stack resolve`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fwdoctor.recipes import stack as stack_mod

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.usefixtures("use_test_kb")  # the CLI tests read tests/kb too


@pytest.fixture(scope="module")
def kb(test_kb):
    return test_kb


def resolve(kb, **fields):
    data = {"name": "t", **fields}
    return stack_mod.resolve(stack_mod.parse(data, "t.yaml"), kb)


def test_a_stack_without_cuda_gets_the_variant_pypi_serves_and_the_os_shipping_its_python(kb):
    r = resolve(kb, python="3.12", torch="2.14.1")
    assert (r.variant, r.cuda, r.os) == ("cu130", "13.0", "ubuntu24.04")
    assert r.filled == ("cuda", "os")
    assert r.base_image == "nvidia/cuda:13.0.2-base-ubuntu24.04"
    assert r.index_url == "https://pypi.org/simple" and r.requirements[0] == "torch==2.14.1"


def test_a_variant_only_on_the_pytorch_index_is_pinned_with_its_local_tag(kb):
    r = resolve(kb, python="3.12", torch="2.14.1", cuda="12.6", os="ubuntu24.04")
    assert r.requirements[0] == "torch==2.14.1+cu126"
    assert r.index_url == "https://download.pytorch.org/whl/cu126"
    assert r.extra_index_urls == ("https://pypi.org/simple",)
    assert r.base_image == "nvidia/cuda:12.6.3-base-ubuntu24.04"


def test_companions_take_their_paired_versions_from_the_kb(kb):
    r = resolve(kb, python="3.12", torch="2.14.1", companions=["torchvision"])
    assert "torchvision==0.29.1" in r.requirements


def test_a_cpu_stack_on_debian_uses_the_slim_python_image(kb):
    r = resolve(kb, python="3.11", torch="2.13.0", cuda="cpu")
    assert r.os == "debian12" and r.base_image == "python:3.11-slim-bookworm" and r.python_from_base


def test_the_cudnn_tag_token_follows_the_images_era(kb):
    r = resolve(kb, python="3.10", torch="2.2.2", cuda="12.1", os="ubuntu22.04", flavor="cudnn-runtime")
    assert r.base_image == "nvidia/cuda:12.1.1-cudnn8-runtime-ubuntu22.04"
    r = resolve(kb, python="3.12", torch="2.14.1", flavor="cudnn-devel")
    assert r.base_image == "nvidia/cuda:13.0.2-cudnn-devel-ubuntu24.04"


def test_target_gpus_are_recorded_with_the_kernel_that_runs_on_them(kb):
    r = resolve(kb, python="3.10", torch="2.10.0", cuda="12.8", gpus=["8.9", "7.0"])
    assert r.gpus == {"8.9": "sass sm_86", "7.0": "sass sm_70"}


@pytest.mark.parametrize(
    "fields, words",
    [
        (dict(python="3.9", torch="2.14.1"), "has no wheel for Python 3.9"),
        (dict(python="3.12", torch="2.14.1", cuda="11.8"), "has no cu118 wheel"),
        (dict(python="3.12", torch="2.14.1", gpus=["6.1"]), "no kernels for GPU 6.1 (sm_61) in torch 2.14.1+cu130"),
        (dict(python="3.12", torch="2.14.1", min_driver="535.104.05"), "needs driver >= 580.65.06; the fleet's oldest driver is 535.104.05"),
        (dict(python="3.12", torch="2.5.1", cuda="12.4", os="ubuntu24.04"), "no nvidia/cuda tag for CUDA 12.4 on ubuntu24.04"),
        (dict(python="3.11", torch="2.14.1", os="ubuntu24.04"), "ubuntu24.04 ships Python 3.12"),
        (dict(python="3.11", torch="2.14.1"), "no base OS ships Python 3.11 for a CUDA image"),
        (dict(python="3.12", torch="2.14.1", cuda="13.0", os="debian12"), "no nvidia/cuda tag for CUDA 13.0 on debian12"),
        (dict(python="3.12", torch="2.13.0", cuda="cpu", gpus=["8.0"]), "is a CPU build"),
        (dict(python="3.12", torch="9.9.9"), "torch 9.9.9 is not in the KB"),
        (dict(python="3.12", torch="2.14.1", cuda="13.1", os="ubuntu24.04"), "has no cu131 wheel"),
        (dict(python="3.12", torch="2.14.1", flavor="cudnn-runtime", os="ubuntu24.04", cuda="13.0", gpus=["6.0"]), "sm_60"),
    ],
)
def test_an_impossible_stack_is_refused_with_the_reason(kb, fields, words):
    with pytest.raises(stack_mod.StackImpossible) as err:
        resolve(kb, **fields)
    assert words in str(err.value)


def test_stack_resolve_exits_1_with_the_reason_for_an_impossible_stack(tmp_path, cli):
    path = tmp_path / "old-gpus.yaml"
    path.write_text("name: old-gpus\npython: '3.12'\ntorch: '2.14.1'\ngpus: ['6.1']\n")
    result = cli("stack", "resolve", str(path))
    assert result.exit_code == 1
    assert "impossible stack: stack old-gpus: no kernels for GPU 6.1" in result.output


def test_stack_resolve_prints_the_filled_stack(cli):
    result = cli("stack", "resolve", str(REPO / "stacks" / "cu128-py310.yaml"))
    assert result.exit_code == 0
    assert "base_image: nvidia/cuda:12.8.1-base-ubuntu22.04" in result.output


def test_an_unconfirmed_arch_list_is_a_note_not_a_silent_pass(kb):
    # tests/kb has no confirmed TORCH_CUDA_ARCH_LIST for 2.6.0+cu126.
    r = resolve(kb, python="3.12", torch="2.6.0", cuda="12.6", gpus=["8.0"])
    assert r.arch_list is None
    assert r.gpus == {"8.0": "not checked: arch list of this wheel unconfirmed in the KB"}
    assert r.notes == ("GPUs 8.0 not checked: the KB has no confirmed arch list for torch 2.6.0+cu126",)


def test_a_confirmed_arch_list_says_which_kernel_runs_each_stack_gpu(kb):
    r = stack_mod.load_and_resolve(REPO / "stacks" / "cu126-pascal.yaml", kb)
    assert r.gpus == {"6.0": "sass sm_60", "6.1": "sass sm_60", "7.0": "sass sm_70"} and r.notes == ()
