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
    docs = [r.doc for r in RULES if r.id == kind.id and r.doc]
    if not docs:
        return header + "\n(no rule implements this id yet)\n"
    return header + "\n" + docs[0] + "\n"
