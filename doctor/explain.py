"""`fwdoctor explain ID`: a finding's documentation, from its rule's docstring.

Each rule's docstring has fixed sections (What it does / Why is this bad? / Example /
Fix), the way ruff documents its rules.
"""

from __future__ import annotations

from doctor.findings import BY_ID, FINDING_KINDS

PROBE_FAILED_DOC = """\
What it does
    Reports a probe that could not finish: a command that timed out (a hung nvidia-smi),
    exited with an error, printed output fwdoctor cannot parse, or a file it cannot read.

Why is this bad?
    The facts that probe would have supplied are unknown, so the checks that need them
    are listed as "not checked" instead of passing silently.

Fix
    Run the named command or read the named file by hand; `fwdoctor check -v` shows the
    reason. A hung nvidia-smi usually means a wedged driver: check `dmesg` for Xid errors.
"""


def _doc(what: str, why: str, fix: str) -> str:
    return f"What it does\n    {what}\n\nWhy is this bad?\n    {why}\n\nFix\n    {fix}\n"


# The source-build pre-flight's own findings (recipes/buildenv.py raises them).
BUILD_DOCS = {
    "build-input-missing": _doc(
        "Reports a tool or input the build cannot start without: g++, git (unless --source), ccache with --ccache, "
        "or an --nccl/--cudnn path with no include/ and lib/.",
        "The build would stop minutes or hours in, with a CMake or compiler error far from the cause.",
        "Install the named tool (the finding gives the command) or point the option at a real install.",
    ),
    "build-python-unusable": _doc(
        "Checks that --python runs, has pip, and is a virtual or conda environment.",
        "CMake and setup.py build against the interpreter they find; a wrong or broken one produces a wheel "
        "for the wrong Python (the classic: CMake picking /usr/bin/python3 instead of the venv).",
        "Pass --python /path/to/venv/bin/python of a working environment with pip.",
    ),
    "build-tool-installed": _doc(
        "Notes that cmake (too old for this torch) or ninja (absent) will be installed into the target environment.",
        "Nothing is wrong; the plan says so because it changes that environment.",
        "Nothing to do; install them yourself beforehand to avoid it.",
    ),
    "build-disk-low": _doc(
        "Compares free disk at the work folder with what a PyTorch build needs (source, objects, wheel).",
        "The build fails late with 'No space left on device'.",
        "Free space or pass --workdir on a larger disk.",
    ),
    "build-ram-low": _doc(
        "Compares available memory with what one nvcc/c++ job needs; MAX_JOBS is derived from it.",
        "Compiler processes are killed by the OOM killer ('c++: fatal error: Killed signal terminated program cc1plus').",
        "Add memory or swap, or build on a larger machine.",
    ),
    "build-no-wheel": _doc(
        "Checks that the NCCL or cuDNN version given by number exists as an nvidia-*-cuXX pip wheel for the toolkit's CUDA major.",
        "pip would fail to fetch it, or a wheel for another CUDA major would give undefined symbols at run time.",
        "Pick a version that exists for that CUDA major (`pip index versions nvidia-nccl-cu12`), or pass a path to an install.",
    ),
    "build-torch-unsupported": _doc(
        "Checks that the knowledge base knows how the requested torch version reads its build variables.",
        "Setting the wrong variables silently builds with bundled NCCL, no cuDNN, or the wrong Python.",
        "Use a version listed in doctor/kb/build.yaml, or add a row with its source.",
    ),
    "build-not-checked": _doc(
        "Reports a pre-flight check that could not be made (an unknown version, an unreadable header).",
        "An unknown is not a pass: the build may fail where the check would have caught it.",
        "Check the named item by hand before a long build.",
    ),
}


def explanation(finding_id: str) -> str:
    from doctor.rules import RULES

    wanted = finding_id.strip()
    by_code = {k.code.lower(): k for k in FINDING_KINDS}
    kind = BY_ID.get(wanted) or by_code.get(wanted.lower())
    if kind is None:
        raise KeyError(f"unknown finding id {finding_id!r}; `fwdoctor list` shows them all")
    header = f"{kind.id} ({kind.code}, default severity {kind.severity.value}, area {kind.area})\n{kind.title}\n"
    if kind.id == "probe-failed":
        return header + "\n" + PROBE_FAILED_DOC
    if kind.id in BUILD_DOCS:
        return header + "\n" + BUILD_DOCS[kind.id]
    docs = [r.doc for r in RULES if r.id == kind.id and r.doc]
    if not docs:
        return header + "\n(no rule implements this id yet)\n"
    return header + "\n" + docs[0] + "\n"
