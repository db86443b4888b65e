"""`fwdoctor triage` on a corpus of real bug reports (tests/data/triage, see its README).

An item is right when every `expect` id is reported, no `forbid` id is, every
`not_checked` id comes out "not checked", and (for a `healthy` item, where the bug was in
code) no finding is an error. Each item is its own test, so a rule that stops firing fails
the reports it should read and names them (an overall percentage let two whole rules go
missing); a known miss is listed in KNOWN_MISSES with the reason, as an xfail that must keep
failing (strict), so a fix shows up too.

Each error-text signature of fwdoctor.triage.errors also has its own test on its own real
example (SIGNATURES): the entry it writes to `report.errors` and the finding it supports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from conftest import DATA
from fwdoctor.findings import BY_ID
from fwdoctor.model import Severity
from fwdoctor.triage.judge import run

CORPUS = DATA / "triage"
ITEMS = sorted(CORPUS.glob("[0-9][0-9]-*.md"))


@dataclass
class Item:
    path: Path
    meta: dict
    body: str


def load(path: Path) -> Item:
    _, head, body = path.read_text(encoding="utf-8").split("---\n", 2)
    return Item(path, yaml.safe_load(head), body)


def verdict(item: Item, kb) -> tuple[bool, str]:
    report = run(item.body, kb).report
    ids = {f.id for f in report.findings}
    skipped = {n.rule for n in report.not_checked}
    errors = sorted(f.id for f in report.findings if f.severity is Severity.ERROR)
    problems = []
    if missing := set(item.meta["expect"]) - ids:
        problems.append(f"missing {sorted(missing)}")
    if wrong := set(item.meta["forbid"]) & ids:
        problems.append(f"forbidden {sorted(wrong)}")
    if unsaid := set(item.meta.get("not_checked") or []) - skipped:
        problems.append(f"not reported as not checked: {sorted(unsaid)}")
    if item.meta["healthy"] and errors:
        problems.append(f"error findings on a healthy report: {errors}")
    return not problems, "; ".join(problems) or f"ok ({sorted(ids) or 'no findings'})"


def test_the_corpus_is_big_enough_and_well_formed():
    items = [load(p) for p in ITEMS]
    assert len(items) >= 40
    assert sum(1 for i in items if i.meta["healthy"]) >= 5
    for item in items:
        meta = item.meta
        assert re.match(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$", meta["source"]), item.path.name
        assert meta["cause"].strip(), item.path.name
        for finding_id in [*meta["expect"], *meta["forbid"], *(meta.get("not_checked") or [])]:
            assert finding_id in BY_ID, f"{item.path.name}: unknown finding id {finding_id}"
        if meta["healthy"]:
            assert not meta["expect"], f"{item.path.name}: a healthy report expects no finding"
        assert item.body.strip(), item.path.name
    assert len({i.meta["source"] for i in items}) == len(items), "one item per thread"


# Reports triage is known to get wrong, each with the reason (none today: all 52 are right).
# An entry here is an xfail that must keep failing: when triage learns the report, delete it.
KNOWN_MISSES: dict[str, str] = {}


@pytest.mark.parametrize("path", ITEMS, ids=[p.stem for p in ITEMS])
def test_triage_reads_each_real_report_right(path, test_kb, request):
    """One case per report: the findings its thread confirmed, none it rules out, and
    "not checked" where the KB cannot judge."""
    if path.name in KNOWN_MISSES:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_MISSES[path.name], strict=True))
    ok, why = verdict(load(path), test_kb)
    assert ok, why


def test_the_known_misses_are_corpus_items():
    assert set(KNOWN_MISSES) <= {p.name for p in ITEMS}


# One row per error-text signature of fwdoctor.triage.errors: a verbatim line from a public
# thread (the corpus item it sits in, or the thread), the `report.errors` entry it must give
# and the finding it supports (None: the text names no version, so it is recorded only).
SIGNATURES = [
    ("driver-too-old", "01-driver-too-old-fooocus-11040.md",
     "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver.\n",
     {"driver_cuda": "11.4", "found": 11040}, "driver-too-old-for-torch"),
    ("sm-incompatible", "14-sm120-wyoming-xtts.md",
     "NVIDIA GeForce RTX 5060 Ti with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
     "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n",
     {"cc": "12.0", "gpu": "NVIDIA GeForce RTX 5060 Ti", "supports": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]},
     "gpu-arch-unsupported-by-torch"),
    ("cuda-version-mismatch", "28-detected-cuda-openpcdet-118-117.md",
     "The detected CUDA version (11.8) mismatches the version that was used to compile\nPyTorch (11.7). Please make sure to use the same CUDA versions.\n",
     {"detected": "11.8", "torch": "11.7"}, "torch-toolkit-mismatch"),
    ("unsupported-gnu", "21-gnu-xmr-stak-gcc7.md",
     "`/opt/cuda/include/crt/host_config.h:121:2: error: #error -- unsupported GNU version! gcc versions later than 6 are not supported!`\n",
     {"gcc_max": "6"}, "host-compiler-unsupported"),
    ("unsupported-gpu-arch", "31-compute89-3detr-nvcc115.md",
     "nvcc fatal: Unsupported gpu architecture 'compute_89'\n", {"arch": "compute_89"}, "gpu-arch-unsupported-by-toolkit"),
    # Not in the corpus: https://github.com/NVIDIA/nvidia-container-toolkit/issues/224
    ("cudnn-undefined-symbol", "https://github.com/NVIDIA/nvidia-container-toolkit/issues/224",
     "Could not load library libcudnn_cnn_train.so.8. Error: /home/czh/anaconda3/envs/python39/bin/../lib/libcudnn_ops_train.so.8: undefined symbol: _Z22cudnnGenericOpTensorNdILi2EE13cudnnStatus_t, version libcudnn_ops_infer.so.8\n",
     {"library": "libcudnn_ops_train.so.8"}, "cudnn-shadowed"),
    ("torch-not-compiled-with-cuda", "35-cpu-torch-fooocus-api-rtx2060.md", "# Torch not compiled with CUDA enabled\n", {}, None),
    # Not in the corpus: https://github.com/mlcommons/inference/issues/54
    ("driver-insufficient", "https://github.com/mlcommons/inference/issues/54",
     "RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime version at /pytorch/torch/csrc/cuda/Module.cpp:34\n",
     {}, None),
    # Not in the corpus: https://github.com/nv-tlabs/SCube/issues/7
    ("no-kernel-image", "https://github.com/nv-tlabs/SCube/issues/7",
     "RuntimeError: CUDA error: no kernel image is available for execution on the device\n", {}, None),
    ("nvml-mismatch", "09-nvml-mismatch-unattended-upgrade.md", "Failed to initialize NVML: Driver/library version mismatch\n", {},
     "driver-library-mismatch"),
    # pynvml's spelling of the same error; not in the corpus: https://github.com/rapidsai/dask-cuda/issues/949
    ("nvml-mismatch", "https://github.com/rapidsai/dask-cuda/issues/949",
     "pynvml.nvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.\n", {}, "driver-library-mismatch"),
    ("nvrm-api-mismatch", "45-nvrm-api-mismatch-syslog-stackhpc.md",
     "Jun 30 11:07:05 gpu-0 kernel: NVRM: API mismatch: the client has the version 535.54.03, but#012NVRM: this kernel module has the version 530.30.02.  Please#012NVRM: make sure that this kernel module and all NVIDIA driver#012NVRM: components have the same version.\n",
     {}, "driver-library-mismatch"),
]


@pytest.mark.parametrize("kind, source, text, data, finding", SIGNATURES, ids=[f"{row[0]}-{i}" for i, row in enumerate(SIGNATURES)])
def test_each_error_signature_reads_its_own_real_example(kind, source, text, data, finding, test_kb):
    if not source.startswith("https://"):  # the example is quoted from that corpus item, verbatim
        assert text in load(CORPUS / source).body, source
    report = run(text, test_kb).report
    (entry,) = report.facts["report.errors"]
    assert entry["kind"] == kind and entry["line"] == 1
    assert {key: entry[key] for key in data} == data
    ids = {f.id for f in report.findings}
    if finding is None:
        assert not [f for f in report.findings if f.severity is Severity.ERROR], ids
    else:
        assert finding in ids, ids


def test_every_signature_kind_has_an_example():
    import inspect

    from fwdoctor.triage import errors

    kinds = set(re.findall(r'_one\("error", number, "([a-z-]+)"', inspect.getsource(errors)))
    assert kinds == {row[0] for row in SIGNATURES}


def test_torch_not_compiled_with_cuda_says_the_torch_is_a_cpu_build(test_kb):
    facts = run("# Torch not compiled with CUDA enabled\n", test_kb).report.facts
    assert facts["torch.installed"] is True and facts["torch.cuda"] is None
