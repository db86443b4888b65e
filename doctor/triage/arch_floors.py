"""A GPU the report names below every release of the framework it names.

A report often names its GPU ("GeForce GT 740M", "Quadro FX 2800M") and its framework
("pytorch", "tensorflow-gpu", TensorFlow's own log paths) but not the release. Where the
GPU's compute capability (doctor/kb/gpus.yaml) is below what *every* release of that
framework ran on, the release does not matter: no build has a kernel for it. TensorFlow's
floor over all releases is a KB row (frameworks.yaml `gpu_floor`): an error. torch's is
read from the wheels the KB lists (torch.yaml), which do not reach back to torch's first
releases: a warning that names the command that shows the release. A GPU whose capability
the KB does not know, or one some release runs, is not judged here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from fwdoctor import arch
from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, rule

if TYPE_CHECKING:
    from fwdoctor.kb import KB

# one copyable line in an 80-column report (tests/test_text_width.py); the version's +cuXXX tag says the CUDA
_TORCH_RELEASE = "python -c 'import torch;print(torch.__version__,torch.cuda.get_arch_list())'"


def _named_gpus(facts: Facts, kb: KB) -> list[tuple[dict[str, Any], str]]:
    """(GPU, compute capability) for each GPU whose capability is known (reported or KB)."""
    pci = facts.get("pci.nvidia_gpus") or []
    return [(gpu, str(cc)) for gpu in facts["gpus.list"] or [] if isinstance(gpu, dict) and (cc := kb.gpus.cc_for_gpu(gpu, pci))]


def _named(facts: Facts) -> list[str]:
    value = facts["report.frameworks_named"]
    return [str(n) for n in value] if isinstance(value, list) else []


@rule("gpu-arch-unsupported-by-framework", needs=("gpus.list", "report.frameworks_named"), optional=("pci.nvidia_gpus",))
def gpu_below_framework_floor(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """A GPU below the lowest compute capability any GPU release of the framework the
    report names ran on (frameworks.yaml `gpu_floor`: TensorFlow 3.0): whichever release it
    is, it has no kernel for the GPU (see gpu-arch-unsupported-by-framework)."""
    from fwdoctor.kb.frameworks import TITLES

    hits = []
    for framework in _named(facts):
        floor = kb.frameworks.gpu_floor(framework)
        if floor is None:
            continue
        cc_floor, source = floor
        for gpu, cc in _named_gpus(facts, kb):
            if arch.cc_key(cc) >= arch.cc_key(cc_floor):
                continue
            title = TITLES.get(framework, framework)
            name = gpu.get("name") or f"GPU {gpu.get('index', 0)}"
            hits.append(Hit(
                f"{name} (compute capability {cc}, {arch.sm_name(cc)}) is below every {title} GPU release: none runs on a GPU below "
                f"compute capability {cc_floor}, so whichever release this is, it has no kernel for it ({facts.source('gpus.list')}; "
                f"{title} named at {facts.source('report.frameworks_named')})",
                evidence={"gpu": {**gpu, "cc": cc}, "framework": framework, "floor": cc_floor, "kb_source": list(source)},
                fix=FixRef(commands=("nvidia-smi --query-gpu=name,compute_cap --format=csv",),
                           note=f"run {title} on a GPU of compute capability {cc_floor} or newer (or on the CPU); no {title} build runs on this one"),
            ))
            break
    return hits or None


@rule("gpu-arch-unsupported-by-torch", needs=("gpus.list", "report.frameworks_named"), optional=("torch.version", "pci.nvidia_gpus"))
def gpu_below_every_torch_wheel(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """A report that names PyTorch and a GPU but not torch's release, on a GPU no CUDA wheel
    of any torch release in the KB has a kernel for: a warning (a torch older than the KB's
    releases is the only one that could run it; its release settles it). See
    gpu-arch-unsupported-by-torch."""
    if "torch" not in _named(facts) or facts.get("torch.version"):
        return None  # with the release shown, the regular rules judge it
    wheels = [v for v in kb.torch.variants() if v.cuda is not None and v.arch_list]
    releases = kb.torch.versions()
    if not wheels or not releases:
        return None
    for gpu, cc in _named_gpus(facts, kb):
        try:
            if any(arch.runs_on(list(v.arch_list or ()), cc) for v in wheels):
                continue
        except ValueError:
            continue
        name = gpu.get("name") or f"GPU {gpu.get('index', 0)}"
        return [Hit(
            f"{name} (compute capability {cc}, {arch.sm_name(cc)}) has no kernel in any CUDA wheel of the torch releases the KB lists "
            f"({releases[0]} ... {releases[-1]}); the report names PyTorch ({facts.source('report.frameworks_named')}) but not its release",
            evidence={"gpu": {**gpu, "cc": cc}, "torch_releases": [releases[0], releases[-1]]},
            fix=FixRef(recipe="torch-source", options={"arch_list": cc}, commands=(_TORCH_RELEASE,),
                       note=f"no official torch wheel the KB knows runs on compute capability {cc}: use a newer GPU, or build torch from source "
                            f"with TORCH_CUDA_ARCH_LIST={cc} and a CUDA toolkit that still compiles for {arch.sm_name(cc)}"),
            severity=Severity.WARNING,
        )]
    return None


RULES = (gpu_below_framework_floor, gpu_below_every_torch_wheel)
