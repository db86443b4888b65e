"""What a report says in words of the CUDA its NCCL was built for (issue 26, the nccl-fabric
group; nccl-cuda-mismatch). NCCL is built per CUDA major (libnccl2 "2.9.8-1+cuda10.2",
nvidia-nccl-cu11 / -cu12), and people who found the wrong one often write it rather than paste
the listing:

- NVIDIA's wheels of two CUDA majors in one environment -> nccl.cuda_majors_said:

      i found cu11 and cu12 related packages ... remove the cu11 related package   (VichyTong/CodeJudge#2)

  a line naming two different cuNN tags joined by "and"/"&"/"+"/"/" and the words packages,
  wheels, libraries or "related", with a word of finding or having them (found, have,
  installed, there are, both, mixed). "wheels for cu11 and cu12 are published" has no such word.

- NCCL's CUDA against the system's -> nccl.cuda_said:

      my nccl depends on a different CUDA version (11.0) than I have on my system(10.2)
                                                                       (NVIDIA/nccl-tests#6)

  a line naming NCCL with "built/compiled for|with|against", "depends on" or "is for" and a
  CUDA version, then "than"/"but"/"while" and the system's (system, installed, I have, local)
  CUDA version of another major.

Prose is what a person wrote, not what a tool printed: nccl.cuda_said is judged a warning
naming the listing that settles it; nccl.cuda_majors_said only beside the loader's own
"undefined symbol: ncclXxx" (fwdoctor.triage.nccl_symbols), where two majors are what the
confirmed reports found.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.nccl_symbols import KINDS as SYMBOL_KINDS
from fwdoctor.triage.text import Lines
from fwdoctor.versions import major as major_of

if TYPE_CHECKING:
    from fwdoctor.kb import KB

_MAX_LINE = 600  # prose sentences; a longer line is a log or a listing, not read here
_TWO_TAGS = re.compile(r"\bcu(?P<a>1\d|[89]\d?)\b[^\n]{0,12}?(?:\band\b|&|\+|/|,)\s{0,3}cu(?P<b>1\d|[89]\d?)\b(?P<rest>[^\n]{0,60})", re.IGNORECASE)
_PACKAGES = re.compile(r"\b(?:packages?|wheels?|libs|librar(?:y|ies)|related|versions)\b", re.IGNORECASE)
_HAVING = re.compile(r"\b(?:found|find|have|has|had|installed|there (?:are|were|is)|both|mixed|contains?|pulled|brought)\b", re.IGNORECASE)


def _version(name: str) -> str:
    """A CUDA version as prose writes it: "11.0", "(10.2)", "( 8 )"."""
    return r"\(?\s{0,2}(?P<" + name + r">\d{1,2}(?:\.\d{1,2})?)\s{0,2}\)?"


_NCCL_BUILT = re.compile(
    r"\bnccl\S{0,4}\b[^\n]{0,40}?\b(?:depends? on|built (?:for|with|against)|compiled (?:for|with|against)|is for|was for|linked (?:with|against))\b"
    r"[^\n]{0,40}?\bCUDA\b(?:[ -]?version)?\s{0,2}" + _version("nccl") +
    r"[^\n]{0,40}?\b(?:than|but|while|whereas|instead of)\b[^\n]{0,40}?\b(?:system|installed|I have|local|my CUDA)\b[^\n]{0,24}?" + _version("system"),
    re.IGNORECASE)


def find(lines: Lines) -> list[Fragment]:
    out: list[Fragment] = []
    majors = _majors_said(lines)
    if majors:
        frag = Fragment("prose", majors["line"], majors["line"])
        frag.add("nccl.cuda_majors_said", majors)
        out.append(frag)
    built = _built_said(lines)
    if built:
        frag = Fragment("prose", built["line"], built["line"])
        frag.add("nccl.cuda_said", built)
        out.append(frag)
    return out


def _majors_said(lines: Lines) -> dict[str, Any] | None:
    for i, text in enumerate(lines.norm):
        if len(text) > _MAX_LINE or "cu" not in text.lower():
            continue
        for found in _TWO_TAGS.finditer(text):
            if found["a"] == found["b"] or not _PACKAGES.search(found["rest"]):
                continue
            if _HAVING.search(text[: found.start()][-60:]) or _HAVING.search(found["rest"]):
                return {"majors": [found["a"], found["b"]], "line": i + 1, "text": text.strip()[:200]}
    return None


def _built_said(lines: Lines) -> dict[str, Any] | None:
    for i, text in enumerate(lines.norm):
        if len(text) > _MAX_LINE or "nccl" not in text.lower() or "cuda" not in text.lower():
            continue
        found = _NCCL_BUILT.search(text)
        if not found:
            continue
        nccl, system = major_of(found["nccl"]), major_of(found["system"])
        if nccl is not None and system is not None and nccl != system:
            return {"nccl_cuda": found["nccl"], "system_cuda": found["system"], "line": i + 1, "text": text.strip()[:200]}
    return None


@rule("nccl-cuda-mismatch", needs=("nccl.cuda_said",))
def nccl_cuda_said(facts: Facts, kb: KB) -> Hit | None:
    """The report says in words that its NCCL is built for one CUDA and the system has another
    of a different major (see nccl-cuda-mismatch): a warning, since no listing shows it."""
    said = facts.get("nccl.cuda_said")
    if not isinstance(said, dict):
        return None
    system = said["system_cuda"]
    return Hit(
        f"the report says its NCCL is built for CUDA {said['nccl_cuda']} while the system has CUDA {system} (report line {said['line']}: "
        f"\"{said['text']}\"): NCCL is built per CUDA major, and the wrong one fails at init or at the first collective (\"unhandled cuda error\")",
        evidence={"nccl.cuda_said": said},
        fix=FixRef(commands=("apt list --installed 2>/dev/null | grep -i nccl; python -m pip list 2>/dev/null | grep -i nccl   # the NCCL builds installed (+cudaX.Y, -cuNN)",
                             f"sudo apt-get install libnccl2=<version>+cuda{system} libnccl-dev=<version>+cuda{system}   # an NCCL for the system's CUDA"),
                   note="NCCL's packages and wheels are per CUDA major (libnccl2 X+cudaA.B, nvidia-nccl-cuNN)"),
        severity=Severity.WARNING,
    )


@rule("nccl-cuda-mismatch", needs=("report.errors", "nccl.cuda_majors_said"), optional=("nccl.wheels",))
def undefined_symbol_two_cudas_said(facts: Facts, kb: KB) -> Hit | None:
    """The loader's "undefined symbol: ncclXxx" (errors.yaml row nccl-undefined-symbol) where the
    report says in words that the environment holds NVIDIA packages of two CUDA majors and lists
    no wheels (see nccl-cuda-mismatch; fwdoctor.triage.nccl_symbols judges listed wheels and
    steps aside for this one)."""
    errors = report_errors(facts, *SYMBOL_KINDS)
    said = facts.get("nccl.cuda_majors_said")
    if not errors or not isinstance(said, dict) or facts.known("nccl.wheels"):
        return None
    error = errors[0]
    majors = " and ".join(f"cu{m}" for m in said["majors"])
    return Hit(
        f"an NCCL function ({error.get('symbol')}) is missing from the libnccl.so.2 that was loaded, and the report says the environment holds "
        f"{majors} packages (report line {said['line']}: \"{said['text']}\"): NCCL is built per CUDA major, and the other major's "
        f"older library was loaded: {report_line(error)}",
        evidence={"report.errors": [error], "nccl.cuda_majors_said": said},
        fix=FixRef(commands=("python -m pip list 2>/dev/null | grep -i -E 'nvidia-.*-cu[0-9]+'   # the NVIDIA wheels and their CUDA majors",
                             "python -c 'import torch; print(torch.version.cuda)'   # the CUDA major torch was built for",
                             "python -m pip uninstall -y <the nvidia-*-cuNN wheels of the other major>"),
                   note="one environment holds NVIDIA's CUDA wheels of one major (nvidia-*-cu12 or nvidia-*-cu11), the one torch was built for"),
    )


RULES: tuple[Rule, ...] = (nccl_cuda_said, undefined_symbol_two_cudas_said)
