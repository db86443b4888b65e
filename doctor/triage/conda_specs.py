"""What a report asks of conda, and the CUDA libraries conda's plan or `conda list` shows.

    channels:                                  conda install pytorch==1.13 pytorch-cuda=11.7 -c pytorch -c nvidia
      - pytorch
    dependencies:                              + libcusparse   12.0.0.76  0  nvidia/linux-64  Cached   (mamba's plan)
      - pytorch::pytorch=2.0.1                   libcusparse   nvidia/linux-64::libcusparse-12.0.0.76-0  (conda's plan)
      - pytorch::pytorch-cuda=11.8

conda.requests: one entry per environment file or conda/mamba install command, with its
lines, channels and specs ({name, channel, spec, line}); a `- pip:` sublist is pip's, not
conda's, and is left out. A command continued with a trailing backslash is read whole.

conda.cuda_packages: CUDA libraries in a plan or list row whose version names the CUDA
major they belong to. NVIDIA's component tables (CUDA Toolkit release notes, "CUDA Toolkit
Major Component Versions") give cuBLAS the CUDA major as its own (11.x in CUDA 11, 12.x in
CUDA 12, 13.x in CUDA 13) and the cuda-* packages the CUDA version itself; cuSPARSE is 11.x
in CUDA 11 and 12.0-12.5 in CUDA 12 (12.6 came with CUDA 13, see doctor/kb/frameworks.yaml's
nvidia-cusparse pin), so a newer cuSPARSE is not read. cuFFT, cuRAND and cuSOLVER number
themselves apart from CUDA and are not read.

conda.cuda_conflict: the CUDA requirements in conda's UnsatisfiableError listing, and what the
same listing pins. conda prints the package that needs a CUDA package with its range, and the
spec it clashes with:

    Package cudatoolkit conflicts for:                     (conda >= 4.7)
    pytorch=1.3.1 -> cudatoolkit[version='>=10.1,<10.2']
    cudatoolkit=10.0
      - cudatoolkit 10.1*                                  (conda 4.6)
      - pytorch 1.0.1* -> cudatoolkit >=10.0.130,<10.1.0a0

mamba, micromamba and conda's libmamba solver say instead that no __cuda satisfies a build
(an entry with `missing`: the solver saw no driver's __cuda, or an older one), wherever it stands:

    - nothing provides __cuda needed by tensorflow-2.7.0-cuda102py310hcf4adbc_0
    ├─ xgboost ==1.7.6 cuda120py310h379b205_0 is uninstallable because it requires
    │  └─ __cuda  , which is missing on the system;

and libsolv names the build's __cuda range and the __cuda it had (a requirement with its pin):

    - package cudatoolkit-11.0.3-h15472ef_6 has constraint __cuda >=11.0 conflicting with __cuda-10.2-0
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines, command

# the command starts the line (after a prompt), a notebook's "!", a Dockerfile's RUN or "&&",
# or a markdown code span in a sentence ("When I try `conda install pytorch==1.9.1 ...
# cudatoolkit=11.3 -c pytorch`, it ...": Public-BOTs/GaussianPretrain#4, pytorch/pytorch#69202),
# read up to the span's closing backtick: "... from conda install command." in prose is not one
_COMMAND = re.compile(r"(?:^\s*|&&\s*|;\s*|^\s*!\s*|^\s*RUN\s+|(?P<span>`))(?:sudo\s+)?(?:[\w./~-]{0,200}/)?(?:conda|mamba|micromamba)\s+(?:install|create)\s")
# flags of conda install/create that take a value
_VALUE_FLAGS = frozenset({"-c", "--channel", "-n", "--name", "-p", "--prefix", "--file", "-f", "--solver", "--repodata-fn"})
_SPEC = re.compile(r"^(?:(?P<channel>[\w./-]{1,80})::)?(?P<name>[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,80}[A-Za-z0-9_])?)(?P<constraint>[\[=<>!~ ].{0,120})?$")
_ITEM = re.compile(r"^(?P<indent>\s*)-\s+(?P<value>\S.*)$")  # the value's trailing blanks: normalize() strips them
_VERSION = re.compile(r"\d{1,4}(?:\.\d{1,6}){1,4}")
_MAX_WORDS = 80


def find(lines: Lines) -> list[Fragment]:
    requests = _environment_files(lines) + _commands(lines)
    out: list[Fragment] = []
    if requests:  # one fact for all of them: a merge keeps one value per key
        start, end = min(r["line"] for r in requests), max(r["end"] for r in requests)
        frag = Fragment("conda request", start, end)
        frag.add("conda.requests", requests)
        out.append(frag)
    conflict = _cuda_conflict(lines)
    if conflict:
        numbers = [e["line"] for e in conflict["requires"] + conflict["pins"]]
        frag = Fragment("conda conflict", min(numbers), max(numbers))
        frag.add("conda.cuda_conflict", conflict)
        out.append(frag)
    packages = _cuda_packages(lines)
    if packages:
        numbers = [p["line"] for p in packages]
        frag = Fragment("conda list", min(numbers), max(numbers))
        frag.add("conda.cuda_packages", packages)
        out.append(frag)
    return out


def _spec(word: str, line: int) -> dict[str, Any] | None:
    word = word.strip().strip("\"'")
    match = _SPEC.match(word)
    if not match or word.startswith("-"):
        return None
    return {"name": match.group("name").lower(), "channel": match.group("channel"), "spec": word, "line": line}


def _environment_files(lines: Lines) -> list[dict[str, Any]]:
    """`dependencies:` blocks (with the `channels:` block before them)."""
    out: list[dict[str, Any]] = []
    norm = lines.norm
    i = 0
    while i < len(norm):
        if norm[i].strip() != "dependencies:":
            i += 1
            continue
        start = i + 1
        channels = _channels_before(norm, i)
        specs: list[dict[str, Any]] = []
        pip_indent: int | None = None
        j = i + 1
        while j < len(norm):
            text = norm[j]
            item = _ITEM.match(text)
            if not text.strip():
                j += 1
                continue
            if item is None:
                break
            indent = len(item.group("indent"))
            if pip_indent is not None and indent > pip_indent:
                j += 1
                continue  # pip's own requirements
            pip_indent = None
            value = item.group("value").split("#", 1)[0].strip()
            if value.rstrip(":") == "pip" and value.endswith(":"):
                pip_indent = indent
            else:
                found = _spec(value, j + 1)
                if found:
                    specs.append(found)
            j += 1
        if specs:
            out.append({"from": "environment file", "line": start, "end": j, "channels": channels, "specs": specs})
        i = j
    return out


def _channels_before(norm: tuple[str, ...], end: int) -> list[str]:
    """The `channels:` list above a `dependencies:` line, in order."""
    for k in range(end - 1, max(-1, end - 40), -1):
        if norm[k].strip() == "channels:":
            names = []
            for text in norm[k + 1:end]:
                item = _ITEM.match(text)
                if item:
                    names.append(item.group("value").split("#", 1)[0].strip())
            return names
    return []


def _commands(lines: Lines) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    norm = lines.norm
    i = 0
    while i < len(norm):
        text = command(norm[i]) or norm[i]
        first = i
        while text.endswith("\\") and i + 1 < len(norm):  # a command continued on the next line
            i += 1
            text = text[:-1] + " " + norm[i].strip()
        i += 1
        found = _COMMAND.search(text)
        if not found:
            continue
        rest = text[found.end():]
        if found.group("span"):
            rest = rest.partition("`")[0]  # the code span ends the command
        words = rest.split()[:_MAX_WORDS]
        channels: list[str] = []
        specs: list[dict[str, Any]] = []
        skip, last = False, ""
        for word in words:
            if skip:
                channels += [word] if last in ("-c", "--channel") else []
                skip = False
                continue
            if word in _VALUE_FLAGS:
                last, skip = word, True
                continue
            if word.startswith("--channel=") or word.startswith("-c="):
                channels.append(word.split("=", 1)[1])
                continue
            if word.startswith(("-", "&", "|", ";")) or word in ("install", "create"):
                if word.startswith(("&", "|", ";")):
                    break
                continue
            spec = _spec(word, first + 1)
            if spec:
                specs.append(spec)
        if specs:
            out.append({"from": "command", "line": first + 1, "end": i, "channels": channels, "specs": specs})
    return out


# name -> how its version gives the CUDA major
_SAME_MAJOR = ("libcublas", "libcublas-dev", "cuda-cudart", "cuda-cudart-dev", "cuda-nvrtc", "cuda-nvrtc-dev", "cuda-runtime",
               "cuda-libraries", "cuda-libraries-dev", "cuda-nvcc", "cuda-cupti", "cuda-nvtx", "cuda-version", "cuda-toolkit")
_CUSPARSE = ("libcusparse", "libcusparse-dev")


def cuda_major_of(name: str, version: str) -> int | None:
    """The CUDA major a conda CUDA library's version belongs to, where its numbering says it."""
    parts = [int(p) for p in version.split(".")[:2] if p.isdigit()]
    if len(parts) < 2:
        return None
    if name in _SAME_MAJOR:
        return parts[0]
    if name in _CUSPARSE:
        if parts[0] == 11:
            return 11
        if parts[0] == 12 and parts[1] <= 5:
            return 12
    return None


def _cuda_packages(lines: Lines) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for i, text in enumerate(lines.norm):
        words = text.split()
        if words[:1] in (["+"], ["-"]):
            words = words[1:]  # mamba's plan marks what it adds or removes
        if not words or words[0].lower() not in _SAME_MAJOR + _CUSPARSE or len(words) > 7:
            continue
        name = words[0].lower()
        if len(words) >= 2 and "::" in words[1]:  # conda's plan: "nvidia/linux-64::libcusparse-12.0.0.76-0"
            channel, _, rest = words[1].rpartition("::")
            parts = rest.rsplit("-", 2)
            if len(parts) != 3 or parts[0].lower() != name:
                continue
            version = parts[1]
        elif len(words) >= 3:
            version, channel = words[1], (words[3] if len(words) > 3 else None)
        else:
            continue
        if not _VERSION.fullmatch(version):
            continue
        major = cuda_major_of(name, version)
        if major is not None and name not in found:
            found[name] = {"name": name, "version": version, "channel": channel, "cuda_major": major, "line": i + 1}
    return list(found.values())


# The CUDA packages whose range a conda build pins (cudatoolkit: the pytorch channel's
# CONDA_CUDATOOLKIT_CONSTRAINT in pytorch/builder's conda/pytorch-nightly/meta.yaml;
# cuda-version: conda-forge's; __cuda: the driver, as conda's virtual package).
_CUDA_DEPS = "cudatoolkit|cuda-version|__cuda"
_CONFLICT_START = re.compile(r"UnsatisfiableError|conflicts for:|found to be in conflict|incompatible with each other|incompatible with your system")
# "pytorch=1.3.1 -> cudatoolkit[version='>=10.1,<10.2']", "- pytorch 1.0.1* -> cudatoolkit >=10.0.130,<10.1.0a0",
# "torchvision -> pytorch==1.3.1 -> cudatoolkit[...]" (a chain: the last package before the CUDA one needs it)
_REQUIRES = re.compile(
    r"^\s*(?:-\s+)?(?:[\w.-]{1,80}(?:[= ]{1,2}[\w.*]{1,40})?(?:\[[^\]]{0,80}\])?\s{0,3}->\s{0,3}){0,4}?"
    r"(?P<package>[A-Za-z0-9_][\w.-]{0,80})(?:={1,2}| )?(?P<version>\d[\w.*]{0,40})?(?:\[[^\]]{0,80}\])?\s{0,3}->\s{0,3}"
    r"(?P<dep>" + _CUDA_DEPS + r")(?:\[version='(?P<range1>[^']{1,60})'\]|\s{1,3}(?P<range2>[<>=!~]{0,2}\d[^\s]{0,60}))?\s*$")
# the listing's own pin: "cudatoolkit=10.0", "  - cudatoolkit 10.1*", "feature:/linux-64::__cuda==11.4=0"
_PIN = re.compile(r"^\s*(?:-\s+)?(?:feature:[|@]{0,2}/[\w-]{1,40}::)?(?P<dep>" + _CUDA_DEPS + r")(?:={1,2}| )(?P<version>\d{1,4}(?:\.\d{1,6}){0,3})(?:\.?\*|=\S{0,40})?\s*$")
_LISTING_LINES = 60
# libsolv's (mamba, micromamba, conda-libmamba-solver 23.x) own sentence that no installed or
# virtual package satisfies a build's __cuda requirement: the solver saw no __cuda (no driver
# answered where it ran: a login node, a `docker build`, a CPU-only machine) or an older one.
#   - nothing provides __cuda needed by tensorflow-2.7.0-cuda102py310hcf4adbc_0
#   - nothing provides __cuda >=9.0 needed by cudatoolkit-9.0-0
_NOTHING_PROVIDES = re.compile(r"nothing provides (?P<dep>__cuda)(?:\s{1,3}(?P<range>[<>=!~]{0,2}\d[\w.,<>=!*|]{0,60}))? needed by (?P<what>[\w.+!-]{1,200})")
# libmamba's tree (conda-libmamba-solver 23.x-24.x, mamba 1.x): a package that "is not installable
# (uninstallable) because it requires" or ", which requires" on one line, then
#   └─ __cuda, which is missing on the system.      (or "__cuda >=12 , which ...")
# An option's "would require" is one way out of several, not the conflict, and is not read.
# libmamba 2 (mamba/micromamba 2.x, conda >= 25 with libmamba) writes a spec as "name version
# build", "any" as "=*" and the build as a glob: "└─ __cuda =* *, which is missing on the system."
# (the same rendering for __glibc and __win: trianglesplatting2/triangle-splatting2#9,
# "__win =* *, which is missing on the system"), "__cuda >=12 *, which ...".
# Quoted in a sentence, or pasted where the tree's glyphs were lost, the line stands without
# "└─": "my hunch ... is this tiny line `__cuda =* *, which is missing on the system;`"
# (conda-forge/pytorch-cpu-feedstock#364, micromamba on a login node), "*** is not installable
# because it requires __cuda, which is missing on the system" (a setup script's note).
_MISSING = re.compile(r"(?P<glyph>[└├]─)?\s{0,3}(?<![\w.-])(?P<dep>__cuda)(?:\s{1,3}(?P<range>[<>=!~]{0,2}\d[\w.,<>=!*|]{0,60}))?(?:\s{1,3}=\*)?(?:\s{1,3}\*)?"
                      r"\s{0,3}, which is missing on the system")
# the glyph-less line's own requirer: "X 1.2 cuda* is not installable because it requires __cuda, ..."
# (name, version and build glob right before it: "pytorch =2.5.1 cuda120* is not installable ...")
_REQUIRER_INLINE = re.compile(r"(?<![\w.*-])(?P<package>[A-Za-z0-9_][\w.-]{0,80})(?:\s{1,3}=?=?(?P<version>\d[\w.*]{0,40}))?(?:\s{1,3}[\w.*]{1,60})?"
                              r"\s{1,3}(?:is not installable|is uninstallable) because it requires\s{0,3}__cuda")
# (libmamba 2 writes the first package of its tree after "└─ ", pasted notes often without it:
# "pytorch =2.5.1 cuda120* is not installable because it requires")
_REQUIRER = re.compile(r"(?:[└├]─|^)\s{0,3}(?P<package>[A-Za-z0-9_][\w.-]{0,80})(?:\s{1,3}=?=?(?P<version>\d[\w.*]{0,40}))?[^\n]{0,120}?"
                       r"(?:(?:is not installable|is uninstallable) because it requires|, which requires)\s*$")


# libsolv's (mamba, micromamba, conda-libmamba-solver) sentence that a build's __cuda constraint
# excludes the __cuda the solver has, which it names (the driver's CUDA, as conda info shows it):
#   - package cudatoolkit-11.0.3-h15472ef_6 has constraint __cuda >=11.0 conflicting with __cuda-10.2-0
#   - package cuda-version-12.0-hffde075_0 has constraint __cuda >=12 conflicting with __cuda-11.8-0
# (https://github.com/mamba-org/mamba/issues/969; https://github.com/MPI-Dortmund/tomotwin-cryoet/issues/3,
# fixed by a driver for CUDA 11.8; RAPIDS' troubleshooting, https://github.com/rapidsai/docs/pull/488)
_CONSTRAINT = re.compile(r"package (?P<what>[\w.+!-]{1,200}) has constraint (?P<dep>__cuda)\s{1,3}(?P<range>[<>=!~]{0,2}\d[\w.,<>=!*|]{0,60})"
                         r" conflicting with __cuda-(?P<have>\d{1,4}(?:\.\d{1,6}){0,3})-")


def _solver_constraint(text: str, i: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A build's __cuda range and the __cuda the solver had, from libsolv's "has constraint"."""
    found = _CONSTRAINT.search(text)
    if found is None:
        return None
    # name-version-build, or name-version ("cuda-version-12.0"): the version is the first part that starts with a digit
    parts = found.group("what").split("-")
    at = next((k for k in range(1, len(parts)) if parts[k][:1].isdigit()), None)
    package, version = ("-".join(parts[:at]), parts[at]) if at is not None else (found.group("what"), None)
    return ({"package": package, "version": version, "dep": "__cuda", "range": found.group("range"), "line": i + 1},
            {"dep": "__cuda", "version": found.group("have"), "line": i + 1})


def _solver_missing(norm: tuple[str, ...], i: int, text: str) -> dict[str, Any] | None:
    """A __cuda requirement the solver says nothing satisfies (libsolv's or libmamba's wording)."""
    found = _NOTHING_PROVIDES.search(text)
    if found:
        parts = found.group("what").rsplit("-", 2)
        package, version = (parts[0], parts[1]) if len(parts) == 3 else (found.group("what"), None)
        return {"package": package, "version": version, "dep": "__cuda", "range": found.group("range"), "line": i + 1, "missing": True}
    found = _MISSING.search(text)
    if found is None:
        return None
    above = next((norm[j] for j in range(i - 1, max(-1, i - 3), -1) if norm[j].strip()), "")
    parent = _REQUIRER.search(above)
    if parent is None and found.group("glyph") is None and "would require" not in above:
        # without the tree: the requirer on the same line, or none named (the solver's own
        # words still say no __cuda was there); an option's "would require" above is not read
        inline = _REQUIRER_INLINE.search(text)
        if inline is None:
            return {"package": None, "version": None, "dep": "__cuda", "range": found.group("range"), "line": i + 1, "missing": True}
        parent = inline
    if parent is None:
        return None  # under an option's "would require", or no package above
    version = (parent.group("version") or "").rstrip("*").rstrip(".") or None  # "2.9.*" -> "2.9"
    return {"package": parent.group("package"), "version": version, "dep": "__cuda", "range": found.group("range"), "line": i + 1, "missing": True}


def _cuda_conflict(lines: Lines) -> dict[str, Any] | None:
    requires: list[dict[str, Any]] = []
    pins: list[dict[str, Any]] = []
    inside = -1  # the last line index of the listing being read
    system = False  # conda's classic "incompatible with your system" listing, which names the virtual packages it has
    for i, text in enumerate(lines.norm):
        if _CONFLICT_START.search(text):
            inside = i + _LISTING_LINES
            system = system or "incompatible with your system" in text
        if "has constraint __cuda" in text:
            constraint = _solver_constraint(text, i)
            if constraint is not None:
                requires.append(constraint[0])
                pins.append(constraint[1])
                continue
        if "__cuda" in text and ("nothing provides" in text or "missing on the system" in text):
            missing = _solver_missing(lines.norm, i, text)
            if missing is not None:
                requires.append(missing)
                continue
        if i > inside or "cuda" not in text:
            continue
        found = _REQUIRES.match(text)
        if found:
            requires.append({"package": found.group("package"), "version": (found.group("version") or "").rstrip("*") or None,
                             "dep": found.group("dep"), "range": found.group("range1") or found.group("range2"), "line": i + 1})
            continue
        pin = _PIN.match(text)
        if pin:
            pins.append({"dep": pin.group("dep"), "version": pin.group("version"), "line": i + 1})
    if not requires:
        return None
    # conda's classic listing names the __cuda it has as a pin ("feature:/linux-64::__cuda==11.4=0");
    # one whose packages need __cuda ("pytorch==2[build=*cuda*] -> __cuda", openmm/openmm-torch#118,
    # on a cluster's login node) and names no __cuda of the system had none: no driver answered.
    if system and not any(p["dep"] == "__cuda" for p in pins):
        for need in requires:
            if need["dep"] == "__cuda" and "missing" not in need:
                need["missing"] = True
    return {"requires": requires, "pins": pins}
