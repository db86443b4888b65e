"""conda asked for a CUDA pytorch, and the torch the report then shows is a CPU build.

    > mamba install pytorch torchvision torchaudio pytorch-cuda=11.8 -c pytorch-nightly -c nvidia
    ...
    PyTorch version: 2.1.0.dev20230905
    CUDA used to build PyTorch: Could not collect          (collect_env: torch.version.cuda is None)

conda does not fail when the channels hold no CUDA build of pytorch that fits the rest of
the request: a pytorch CPU build satisfies "pytorch" beside any pytorch-cuda or cudatoolkit
(the pytorch channel's CPU builds do not depend on them), so the solver takes it
(pytorch/pytorch#108607: the nightly's CUDA conda builds had failed, so mamba installed the
CPU one; pytorch/pytorch#69202: "pytorch=1.9.0=py3.8_cpu_0" beside cudatoolkit=11.3). The
rule in fwdoctor.triage.rules (conda_request_without_cuda_build) knows the release/CUDA pairs
the channel never built; this one reads the outcome the report shows, for any pair.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, Rule, rule, sh

if TYPE_CHECKING:
    from fwdoctor.kb import KB

# What asks conda for a CUDA pytorch beside "pytorch": the pytorch channel's pytorch-cuda
# metapackage, the older cudatoolkit, conda-forge's cuda-version, or a CUDA build string on
# pytorch itself ("pytorch=2.1=*cuda*", "pytorch::pytorch=1.13.0=py3.8_cuda11.6*").
_CUDA_PACKAGES = ("pytorch-cuda", "cudatoolkit", "cuda-version")
_CUDA_BUILD = re.compile(r"^(?:[\w.-]{1,80}::)?pytorch\s*={1,2}[^=\s]{1,40}=\S{0,60}cuda", re.IGNORECASE)


def _cuda_ask(request: dict[str, Any]) -> dict[str, Any] | None:
    """The spec of `request` that asks for CUDA, where the same request asks for pytorch."""
    specs = [s for s in request.get("specs") or [] if isinstance(s, dict)]
    if not any(s.get("name") == "pytorch" for s in specs):
        return None
    for spec in specs:
        if spec.get("name") in _CUDA_PACKAGES or (spec.get("name") == "pytorch" and _CUDA_BUILD.match(str(spec.get("spec")))):
            return spec
    return None


@rule("conda-cpu-pytorch-on-gpu-host", needs=("conda.requests", "torch.cuda"), optional=("torch.version", "conda.torch_build"))
def conda_solved_to_cpu_build(facts: Facts, kb: "KB") -> Hit | None:
    """A conda or mamba command (or environment file) in the report asks for pytorch with a
    CUDA package (pytorch-cuda=11.8, cudatoolkit=11.3, cuda-version, a *cuda* build string),
    and the torch the report shows is a CPU build (collect_env: torch.version.cuda is None):
    conda solved to pytorch's CPU build (see conda-cpu-pytorch-on-gpu-host). Not where the
    torch shown is a pip wheel ("2.1.0+cpu": a local tag conda's builds do not carry) or
    conda's own listing shows a CUDA build."""
    if facts["torch.cuda"] is not None:
        return None
    version = str(facts.get("torch.version") or "")
    if "+" in version:
        return None  # a pip wheel's local tag ("+cpu"): pip installed it, not conda
    build = facts.get("conda.torch_build")
    if isinstance(build, dict) and build.get("kind") == "cuda":
        return None
    asks = [(r, s) for r in facts["conda.requests"] or [] if isinstance(r, dict) for s in [_cuda_ask(r)] if s is not None]
    if not asks:
        return None
    request, spec = asks[-1]  # the last one asked: what the env the report then shows came from
    who = f"torch {version}" if version else "torch"
    flags = "".join(f" -c {sh(str(c).strip(chr(34) + chr(39)))}" for c in request.get("channels") or [])  # "-c pytorch" or none
    return Hit(
        f"conda was asked for pytorch with {spec.get('spec')} (report line {spec.get('line')}), but {who} is a CPU build "
        f"(torch.version.cuda is None, {facts.source('torch.cuda')}): the solver took pytorch's CPU build"
        + (f", which fits any {spec.get('name')}" if spec.get("name") != "pytorch" else ", or the torch shown is not the one asked for"),
        evidence={"conda.requests": request, "torch.cuda": None, "torch.version": version or None},
        fix=FixRef(commands=(f"conda search{flags} 'pytorch=*=*cuda*'   # the CUDA builds those channels hold",
                             f"conda install{flags} 'pytorch=*=*cuda*' {sh(str(spec.get('spec')))}   # ask for the CUDA build: the solver then says why none fits"),
                   note="a CPU build satisfies 'pytorch' beside any CUDA package; pin the build (*cuda*) so conda fails loudly instead, "
                        "or take a channel/release that has the CUDA build (a nightly's CUDA builds can be missing for a day)"),
    )


RULES: tuple[Rule, ...] = (conda_solved_to_cpu_build,)
