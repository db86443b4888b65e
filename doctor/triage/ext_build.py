"""An extension's setup.py refusing the nvcc it found, read from a report (issue 26, the
build-ext group):

    RuntimeError: FlashAttention is only supported on CUDA 11.6 and above.  Note: make sure
    nvcc has a supported version by running nvcc -V.

(errors.yaml row `project-cuda-floor`). flash-attn, mamba-ssm, causal-conv1d and the many
setup.py files copied from them run `CUDA_HOME/bin/nvcc -V` (get_cuda_bare_metal_version) and
stop below their floor, whatever torch was built for: the text itself says CUDA_HOME's nvcc
is older than the floor. Two findings follow from it:

- ext-cuda-unsupported-by-project: the project does not build with that nvcc (always);
- torch-toolkit-mismatch, where the report shows torch's CUDA at or above the floor: CUDA_HOME's
  nvcc is below the floor and torch's CUDA is not, so they differ (Dao-AILab/flash-attention#825:
  nvcc 10.1 beside torch 2.3.1+cu121). The regular rule needs CUDA_HOME's release, which the
  text gives only as "below the floor"; it runs only where that rule could not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule, sh
from fwdoctor.versions import major_minor, parse_version

if TYPE_CHECKING:
    from fwdoctor.kb import KB

KINDS = frozenset({"project-cuda-floor"})


def _floor(error: dict[str, Any]) -> Version | None:
    try:
        return Version(str(error.get("min_cuda")))
    except InvalidVersion:
        return None


def _shown_below(facts: Facts, floor: Version) -> list[dict[str, Any]]:
    """The toolkits the report shows (`nvcc -V`) whose release is below the floor: the nvcc
    the project judged is one of them."""
    out = []
    for tk in facts.get("cuda.toolkits") or []:
        if not isinstance(tk, dict):
            continue
        release = parse_version(major_minor(tk.get("version")))
        if release is not None and release < floor:
            out.append(tk)
    return out


def _said(facts: Facts) -> tuple[dict[str, Any], Version] | None:
    for error in report_errors(facts, *KINDS):
        floor = _floor(error)
        if floor is not None:
            return error, floor
    return None


def _nvcc_shown(below: list[dict[str, Any]]) -> str:
    if not below:
        return ""
    return " (the report's nvcc -V: " + ", ".join(f"release {major_minor(tk.get('version'))}" for tk in below) + ")"


@rule("ext-cuda-unsupported-by-project", needs=("report.errors",), optional=("cuda.toolkits", "torch.cuda"))
def project_refuses_nvcc(facts: Facts, kb: KB) -> Hit | None:
    """An extension's setup.py saying "... is only supported on CUDA 11.6 and above" (see
    ext-cuda-unsupported-by-project): the nvcc in CUDA_HOME is older than its floor."""
    found = _said(facts)
    if found is None:
        return None
    error, floor = found
    below = _shown_below(facts, floor)
    torch_cuda = major_minor(facts.get("torch.cuda"))
    target = torch_cuda if torch_cuda and parse_version(torch_cuda) is not None and parse_version(torch_cuda) >= floor else None
    if target:
        commands = ("echo $CUDA_HOME; $CUDA_HOME/bin/nvcc -V   # the nvcc setup.py judged",
                    f"export CUDA_HOME={sh(f'/usr/local/cuda-{target}')}   # a toolkit of torch's CUDA ({target})")
        note = f"point CUDA_HOME (and PATH) at a toolkit of torch's CUDA {target}, or install one (recipe cuda-toolkit)"
    else:
        commands = ("echo $CUDA_HOME; $CUDA_HOME/bin/nvcc -V   # the nvcc setup.py judged",
                    "python -c \"import torch; print(torch.version.cuda)\"   # the CUDA torch was built for")
        note = f"point CUDA_HOME at a toolkit >= {floor} of torch's CUDA major, or install one (recipe cuda-toolkit)"
    return Hit(
        f"the nvcc in CUDA_HOME is older than CUDA {floor}, the oldest this project's setup.py builds with{_nvcc_shown(below)}: {report_line(error)}",
        evidence={"report.errors": [error], "min_cuda": str(floor), "cuda.toolkits": below},
        fix=FixRef(recipe="cuda-toolkit", commands=commands, note=note),
    )


@rule("torch-toolkit-mismatch", needs=("report.errors", "torch.cuda"), optional=("cuda.toolkits", "torch.version"))
def project_floor_below_torch(facts: Facts, kb: KB) -> Hit | None:
    """A setup.py's "only supported on CUDA X and above" beside a torch built for CUDA X or
    newer (see torch-toolkit-mismatch): CUDA_HOME's nvcc, below X, cannot be torch's CUDA."""
    found = _said(facts)
    torch_cuda = major_minor(facts.get("torch.cuda"))
    want = parse_version(torch_cuda)
    if found is None or want is None:
        return None
    error, floor = found
    if want < floor:
        return None  # torch's CUDA is below the floor too: the nvcc may well be torch's own
    below = _shown_below(facts, floor)
    shown_majors = {parse_version(major_minor(tk.get("version"))).major for tk in below}  # type: ignore[union-attr]
    # Below a floor of an older major than torch's, every release is of another major; else
    # the nvcc shown says which (one release below the floor of torch's major is a minor skew).
    major_differs = floor.major < want.major or (bool(shown_majors) and want.major not in shown_majors)
    who = f"torch {facts.get('torch.version')}" if facts.get("torch.version") else "torch"
    return Hit(
        f"{who} is built for CUDA {torch_cuda}, but the nvcc in CUDA_HOME is older than CUDA {floor}{_nvcc_shown(below)}, "
        f"as the project's setup.py says: {report_line(error)}",
        evidence={"torch.cuda": facts.get("torch.cuda"), "report.errors": [error], "cuda.toolkits": below},
        fix=FixRef(recipe="env", commands=(f"ls -d /usr/local/cuda-{sh(torch_cuda)}   # a toolkit of torch's CUDA, if installed",
                                           f"export CUDA_HOME={sh(f'/usr/local/cuda-{torch_cuda}')} PATH={sh(f'/usr/local/cuda-{torch_cuda}/bin')}:\"$PATH\""),
                   note=f"build with a toolkit of torch's CUDA {torch_cuda} (install it with recipe cuda-toolkit if absent)"),
        severity=None if major_differs else Severity.WARNING,
    )


RULES: tuple[Rule, ...] = (project_refuses_nvcc, project_floor_below_torch)
