"""Issue 26: the one NVIDIA GPU a report names outside any tool's output
(fwdoctor.triage.gpu_prose), and the torch rule that needs only the GPU and torch's release
(fwdoctor.rules.torch.gpu_below_every_wheel_of_release): a Kepler GPU under any torch the KB
lists has no kernel whichever CUDA wheel was installed.

Two prose lines are quoted from public reports: pytorch/pytorch#14681 ("GPU is GeForce GT 740M
| 3.0", a development-part report of tests/data/triage-field) and tensorflow/tensorflow#60269
("My GPUs are NVIDIA GeForce RTX 2060 and Intel® UHD Graphics 630."); the others are written for
the spelling or the trap each tests (pytorch/pytorch#30376 is the "CC 3.5 dropped in 1.3" source)."""

from __future__ import annotations

import pytest

from fwdoctor.model import Fact, Facts
from fwdoctor.rules import torch as torch_rules
from fwdoctor.rules.base import NotCheckable
from fwdoctor.triage import gpu_prose
from triage_helpers import facts_of, findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


def named(text: str) -> list[str]:
    """The GPU models the reader states, each once."""
    return list(dict.fromkeys(g["name"] for g in facts_of(gpu_prose.find, text).get("gpus.list", [])))


@pytest.mark.parametrize("text, gpu", [
    ("GPU is GeForce GT 740M | 3.0", "GeForce GT 740M"),
    ("My GPUs are NVIDIA GeForce RTX 2060 and Intel® UHD Graphics 630.", "NVIDIA GeForce RTX 2060"),
    ("I have a GTX1080Ti and CUDA 10.0", "GTX 1080 Ti"),
    ("all_reduce hangs on 8x A100-SXM4-80GB", "A100"),
    ("on an NVIDIA T4 (Colab)", "NVIDIA T4"),
    ("Tesla K80, driver 470", "Tesla K80"),
    ("RTX 4070 Ti SUPER, 16 GB", "RTX 4070 Ti SUPER"),
    ("Quadro FX 2800M on Windows 7", "Quadro FX 2800M"),
    ("a RTX 5090 Laptop GPU", "RTX 5090"),
])
def test_one_gpu_named_in_prose_is_read(text, gpu):
    assert named(text) == [gpu]


@pytest.mark.parametrize("text", [
    "works on the RTX 3090, fails on the V100",  # two products: which one failed?
    "an AWS T4 instance",                         # T4/L4/A2 need "NVIDIA", "Tesla" or "GPU"
    "the L4 cache is cold",
    "H264 encoding on my ThinkPad T480",
    "torch 2.1.0+cu121 for sm_80 on x86_64",
    "no GPU here",
])
def test_no_gpu_or_two_gpus_give_no_fact(text):
    assert named(text) == []


@pytest.mark.parametrize("text, count", [
    ("all_reduce hangs on 8x A100-SXM4-80GB", 8),
    ("a node with 2 x RTX 3090 (no NVLink)", 2),
    ("4*V100 on the old cluster", 4),
    ("RTX 3090 x 2", 1),              # a count after the name is not read
    ("1x H100", 1),
    ("512x A100 in the whole cluster", 1),  # no node holds that many
    ("CUDA 12.2x H100", 1),           # "12.2x": a digit run broken by a dot is no count
])
def test_a_count_right_before_the_name_gives_that_many_gpus(text, count):
    gpus = facts_of(gpu_prose.find, text)["gpus.list"]
    assert len(gpus) == count and [g["index"] for g in gpus] == list(range(count))


def test_the_same_gpu_named_twice_is_one_gpu():
    assert named("GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-1)\nThe RTX 3090 then stops.") == ["NVIDIA GeForce RTX 3090"]


def test_a_long_hostile_line_is_not_read_and_a_long_line_of_names_is_linear():
    assert named("RTX 3090 " + "x" * 40_000) == []  # over the parsed line limit
    assert named(" ".join(["GTX 1080"] * 400)) == ["GTX 1080"]


def test_tool_output_wins_over_prose(cli, tmp_path):
    text = ("I think my GTX 1080 is the problem.\n\n"
            "Collecting environment information...\nPyTorch version: 2.1.0+cu121\nIs debug build: False\n"
            "CUDA used to build PyTorch: 12.1\nGPU models and configuration: GPU 0: NVIDIA GeForce RTX 3090\n"
            "Nvidia driver version: 535.104.05\n")
    path = tmp_path / "report.md"
    path.write_text(text)
    import json

    doc = json.loads(cli("triage", "--json", str(path)).output)
    gpus = doc["facts"]["gpus.list"]
    assert [g["name"] for g in gpus["value"]] == ["NVIDIA GeForce RTX 3090"] and "collect_env" in gpus["source"]


PIP_TORCH_210 = "$ pip list | grep torch\ntorch                2.1.0\n"


def test_a_kepler_gpu_under_a_release_with_no_wheel_for_it_is_an_error(cli, tmp_path):
    # The frozen test KB lists Kepler from the K20 (3.5) on; the shipped KB also has the GT 740M (3.0).
    found = findings(cli, tmp_path, "We run on a Tesla K40 GPU.\n\n" + PIP_TORCH_210)
    hit = found["gpu-arch-unsupported-by-torch"]
    assert hit["severity"] == "error"
    assert "compute capability 3.5" in hit["message"] and "any CUDA wheel of torch 2.1.0" in hit["message"]
    assert "cu118, cu121" in hit["message"] and "is 3.7" in hit["message"]
    assert hit["fix"]["recipe"] == "torch-source"


def test_a_gpu_some_wheel_of_the_release_supports_is_not_judged_without_the_wheel(cli, tmp_path):
    assert "gpu-arch-unsupported-by-torch" not in findings(cli, tmp_path, "My GPU is a GeForce RTX 3090.\n\n" + PIP_TORCH_210)
    # sm_37 is in 2.1.0's cu118 wheel only: the cu121 wheel would fail, but which one is installed is unknown
    assert "gpu-arch-unsupported-by-torch" not in findings(cli, tmp_path, "NVIDIA Tesla K80 here.\n\n" + PIP_TORCH_210)


def test_the_summary_says_the_build_is_unknown_not_cpu(cli, tmp_path):
    path = tmp_path / "report.md"
    path.write_text(PIP_TORCH_210)
    shown = cli("triage", str(path)).output
    assert "2.1.0 (build unknown)" in shown and "CPU build" not in shown


def _facts(**values) -> Facts:
    return Facts([Fact(k.replace("__", "."), v, source="test") for k, v in values.items()])


def test_the_rule_leaves_a_known_wheel_to_the_exact_rule_and_an_unknown_release_unjudged(test_kb):
    kb = test_kb
    kepler = [{"index": 0, "name": "Tesla K40", "cc": None}]
    rule = torch_rules.gpu_below_every_wheel_of_release
    assert rule.func(_facts(gpus__list=kepler, torch__version="2.1.0", torch__cuda="12.1"), kb) is None
    assert rule.func(_facts(gpus__list=kepler, torch__version=None), kb) is None
    with pytest.raises(NotCheckable, match="not in the KB"):
        rule.func(_facts(gpus__list=kepler, torch__version="0.4.1"), kb)
    with pytest.raises(NotCheckable, match="compute capability"):
        rule.func(_facts(gpus__list=[{"index": 0, "name": "Some Future GPU", "cc": None}], torch__version="2.1.0"), kb)
    hits = rule.func(_facts(gpus__list=kepler, torch__version="2.1.0"), kb)
    assert [h.evidence["gpus"][0]["cc"] for h in hits] == ["3.5"]
