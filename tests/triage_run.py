"""What `fwdoctor triage` says of a text, for the tests of its readers and rules: in process
on a given KB (`severities`, `messages`), or through the CLI as users run it (`cli_findings`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from fwdoctor.model import Severity
from fwdoctor.triage.judge import run


def severities(text: str, kb: Any) -> dict[str, Severity]:
    """Each finding id triage raises on `text`, with its severity."""
    return {f.id: f.severity for f in run(text, kb).report.findings}


def messages(text: str, kb: Any) -> dict[str, str]:
    """Each finding id triage raises on `text`, with its message."""
    return {f.id: f.message for f in run(text, kb).report.findings}


def cli_findings(cli: Callable[..., Any], tmp_path: Path, text: str) -> dict[str, dict]:
    """`fwdoctor triage --json FILE` of `text` written as UTF-8 bytes: each finding by id."""
    path = tmp_path / "report.md"
    path.write_bytes(text.encode("utf-8"))
    doc = json.loads(cli("triage", "--json", str(path)).output)
    return {f["id"]: f for f in doc["findings"]}
