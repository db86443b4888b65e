"""The PyTorch source a build starts from: the version to build and, with --source, the
checkout that holds it.

Shell equivalent:
    test -f SRC/setup.py && cat SRC/version.txt      # "2.9.1a0" (a checkout names its next release)

Reads the seed facts `request.build.torch` (--version) and `request.build.source`
(--source); with no --version the checkout's version.txt names the release.
"""

from __future__ import annotations

import posixpath
from typing import Iterable

from packaging.version import InvalidVersion, Version

from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Probe, probe

NAME = "build-source"


def torch_release(text: str) -> str | None:
    """'2.9.1' / '2.10.0a0' (a checkout's version.txt) / 'v2.9.1' -> the release '2.9.1',
    '2.10.0'; None when it is no version."""
    try:
        return Version(text.strip()).base_version
    except InvalidVersion:
        return None


@probe(NAME, provides=("build.source", "build.torch"))
def build_source(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    source = facts.get("request.build.source")
    from_file: str | None = None
    if source:
        if not host.is_file(posixpath.join(source, "setup.py")):
            reason = f"--source {source}: no setup.py there (expected a PyTorch checkout)"
            yield Fact.unknown("build.source", reason)
            yield Fact.unknown("build.torch", reason)
            return
        text = host.read_text(posixpath.join(source, "version.txt"), limit=4096)
        from_file = text.strip() if text else None
        yield Fact("build.source", {"path": source, "version_txt": from_file}, source=f"{source}/setup.py")
    else:
        yield Fact("build.source", None, source="no --source: the plan clones PyTorch")

    asked = facts.get("request.build.torch")
    text, where = (asked, "--version") if asked else (from_file, f"{source}/version.txt")
    if not text:
        yield Fact.unknown("build.torch", "--version is required (or --source DIR with a version.txt)")
        return
    version = torch_release(str(text))
    if version is None:
        flag = "--version" if asked else f"--source {source}: version.txt"
        yield Fact.unknown("build.torch", f"{flag} {text}: not a version (expected e.g. 2.9.1)")
        return
    yield Fact("build.torch", version, source=where)


PROBES: tuple[Probe, ...] = (build_source,)
