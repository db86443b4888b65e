"""A library that calls NCCL finding an NCCL function missing, read from a report (issue 26,
the nccl-fabric group):

    ImportError: .../torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister

(the loader's words; errors.yaml row `nccl-undefined-symbol`). torch, cupy, nccl-tests and the
like are linked against the NCCL they were built with; an ncclXxx they call that the
libnccl.so.2 loaded first lacks means an older NCCL got into the process ahead of theirs.
Its confirmed ways in: a system libnccl (an NGC container's, libnccl2, one built by hand)
found first through LD_LIBRARY_PATH or loaded by another package imported earlier
(rapidsai/cugraph#4465: cupy loaded the container's 2.16.2 before torch's 2.20.5;
pytorch/pytorch#119932: "another package that also provides the NCCL library, but the
versions are incompatible"), which is nccl-shadowed; or NVIDIA's NCCL wheels of two CUDA
majors side by side (nvidia-nccl-cu11 2.14.3 beside torch's nvidia-nccl-cu12 2.27.3,
rwth-i6/returnn#1802; "i found cu11 and cu12 related packages ... remove the cu11 related
package", VichyTong/CodeJudge#2), which is nccl-cuda-mismatch, judged so only where the
report lists both wheels (nccl.wheels, read here from `pip list`, `pip freeze`, collect_env's
"[pip3] nvidia-nccl-cu12==2.27.3" and `conda list`'s pypi rows).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule, sh
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines
from fwdoctor.versions import major as major_of

if TYPE_CHECKING:
    from fwdoctor.kb import KB

KINDS = frozenset({"nccl-undefined-symbol"})

# "nvidia-nccl-cu12==2.27.3" (freeze, collect_env's "[pip3]"/"[conda]"), "nvidia-nccl-cu12  2.20.5"
# (pip list), "nvidia-nccl-cu12  2.20.5  pypi_0  pypi" (conda list)
_WHEEL = re.compile(r"^\s*(?:\[(?:pip3?|conda)\]\s{0,8})?(?P<package>nvidia[-_]nccl[-_]cu(?P<cuda>\d{2}))"
                    r"(?:\s{0,4}==\s{0,4}|\s{1,60})(?P<version>\d{1,2}\.\d{1,3}\.\d{1,3}(?:\.post\d{1,3})?)(?:\s|$)", re.IGNORECASE)


def find(lines: Lines) -> list[Fragment]:
    """nccl.wheels: [{"package", "version", "cuda" (the major, "12"), "line"}], each once."""
    wheels: list[dict[str, Any]] = []
    for i, text in enumerate(lines.norm):
        if "nccl" not in text.lower():
            continue
        found = _WHEEL.match(text)
        if not found:
            continue
        entry = {"package": found["package"].lower().replace("_", "-"), "version": found["version"], "cuda": found["cuda"], "line": i + 1}
        if not any(w["package"] == entry["package"] and w["version"] == entry["version"] for w in wheels):
            wheels.append(entry)
    if not wheels:
        return []
    frag = Fragment("pip list", wheels[0]["line"], wheels[-1]["line"])
    frag.add("nccl.wheels", wheels)
    return [frag]


def _other_major_wheels(facts: Facts) -> list[dict[str, Any]]:
    """The NCCL wheels that are of another CUDA major than the rest (or than torch's CUDA):
    empty where the report lists wheels of one major only, or none."""
    wheels = [w for w in facts.get("nccl.wheels") or [] if isinstance(w, dict)]
    majors = {str(w["cuda"]) for w in wheels}
    torch_cuda = facts.get("torch.cuda")
    torch_major = major_of(torch_cuda) if isinstance(torch_cuda, str) else None
    if torch_major is not None and any(major_of(m) != torch_major for m in majors):
        return [w for w in wheels if major_of(str(w["cuda"])) != torch_major]
    if len(majors) < 2:
        return []
    return wheels


@rule("nccl-cuda-mismatch", needs=("report.errors", "nccl.wheels"), optional=("torch.cuda",))
def undefined_symbol_wheels_of_two_cudas(facts: Facts, kb: KB) -> Hit | None:
    """The loader's "undefined symbol: ncclXxx" where the report lists NVIDIA's NCCL wheels of
    two CUDA majors (nvidia-nccl-cu11 beside nvidia-nccl-cu12), or one of another major than
    torch's CUDA: the other major's libnccl.so.2 was loaded (see nccl-cuda-mismatch)."""
    said = report_errors(facts, *KINDS)
    other = _other_major_wheels(facts)
    if not said or not other:
        return None
    listed = ", ".join(f"{w['package']} {w['version']} (report line {w['line']})" for w in facts.get("nccl.wheels") or [])
    torch_cuda = facts.get("torch.cuda")
    torch_major = major_of(torch_cuda) if isinstance(torch_cuda, str) else None
    if torch_major is not None:
        remove = f"python -m pip uninstall -y {' '.join(sh(p) for p in sorted({w['package'] for w in other}))}   # torch is built for CUDA {torch_major}"
    else:
        remove = "python -m pip uninstall -y <the nvidia-nccl-cuNN of the CUDA major torch was not built for>   # python -c 'import torch; print(torch.version.cuda)'"
    return Hit(
        f"an NCCL function ({said[0].get('symbol')}) is missing from the libnccl.so.2 that was loaded, and the report lists NCCL "
        f"wheels of two CUDA majors ({listed}): NCCL is built per CUDA major, and the other major's older library was loaded: {report_line(said[0])}",
        evidence={"report.errors": said, "nccl.wheels": facts.get("nccl.wheels")},
        fix=FixRef(commands=("python -m pip list 2>/dev/null | grep -i -E 'nvidia-.*-cu[0-9]+'   # the NVIDIA wheels and their CUDA majors",
                             remove,
                             "python -m pip install --force-reinstall --no-deps torch==<your version>   # if torch's own wheel was overwritten"),
                   note="one environment holds NVIDIA's CUDA wheels of one major (nvidia-*-cu12 or nvidia-*-cu11), the one torch was built for"),
    )


@rule("nccl-shadowed", needs=("report.errors",), optional=("nccl.wheels", "torch.cuda", "nccl.cuda_majors_said"))
def undefined_symbol_older_nccl(facts: Facts, kb: KB) -> Hit | None:
    """The loader's "undefined symbol: ncclXxx" (see nccl-shadowed): the libnccl.so.2 loaded
    first is older than the one the library naming it was built against (LD_LIBRARY_PATH, a
    system or container libnccl, another package that loads its own NCCL first). Where the
    report lists NCCL wheels of two CUDA majors, undefined_symbol_wheels_of_two_cudas says it (or
    fwdoctor.triage.nccl_cuda_prose, where it says so in words)."""
    said = report_errors(facts, *KINDS)
    if not said or _other_major_wheels(facts) or (facts.known("nccl.cuda_majors_said") and not facts.known("nccl.wheels")):
        return None
    symbol = said[0].get("symbol") or "an nccl function"
    return Hit(
        f"the libnccl.so.2 loaded first lacks {symbol}, which the library that calls it was built against: an older NCCL "
        f"(a system or container libnccl found through LD_LIBRARY_PATH, or one another package loaded first) shadows "
        f"the one it ships with: {report_line(said[0])}",
        evidence={"report.errors": said},
        fix=FixRef(commands=("echo $LD_LIBRARY_PATH $LD_PRELOAD   # folders that may hold another libnccl.so.2",
                             "ldconfig -p | grep libnccl; python -m pip list 2>/dev/null | grep -i nccl   # the NCCLs installed"),
                   note="let torch load its own NCCL (the nvidia-nccl wheel it pins): drop other libnccl folders from LD_LIBRARY_PATH / "
                        "LD_PRELOAD, import torch before packages that load a system NCCL, or install an NCCL at least as new"),
    )


RULES: tuple[Rule, ...] = (undefined_symbol_wheels_of_two_cudas, undefined_symbol_older_nccl)
