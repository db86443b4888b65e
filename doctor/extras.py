"""Optional features (pyproject.toml's extras) and what to install for each.

One message for a missing extra, given before any work starts, for pip and pipx users
alike: a pipx install has its own venv, so `pip install 'fwdoctor[X]'` there means
`pipx inject fwdoctor PKG...` (or reinstalling with `pipx install 'fwdoctor[X]'`). An
"internal error" stays what it says: a bug in fwdoctor, never a missing extra.
"""

from __future__ import annotations

import importlib.util
from typing import Sequence

# extra -> ((import name, distribution), ...), as pyproject.toml's [project.optional-dependencies].
EXTRAS: dict[str, tuple[tuple[str, str], ...]] = {
    "conda": (("conda_lock", "conda-lock"), ("rattler", "py-rattler")),
    "docker": (("docker", "docker"),),
    "mcp": (("mcp", "mcp"),),
}


def install_hint(extra: str) -> str:
    """"pip install 'fwdoctor[conda]' (pipx: pipx inject fwdoctor conda-lock py-rattler)"."""
    distributions = " ".join(dist for _, dist in EXTRAS[extra])
    return f"pip install 'fwdoctor[{extra}]' (pipx: pipx inject fwdoctor {distributions})"


def missing(extra: str, modules: Sequence[str] | None = None) -> list[str]:
    """The distributions of `extra` (only those importing as `modules`, when given) that
    cannot be imported here."""
    gone = []
    for module, dist in EXTRAS[extra]:
        if modules is not None and module not in modules:
            continue
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a half-installed package
            found = False
        if not found:
            gone.append(dist)
    return gone


def needs(what: str, extra: str, modules: Sequence[str] | None = None) -> str | None:
    """The one-line message when `what` cannot run for lack of `extra`'s packages, else None:
    "`fwdoctor lock` of a conda stack needs conda-lock: pip install ... (pipx: ...)"."""
    gone = missing(extra, modules)
    if not gone:
        return None
    return f"{what} needs {' and '.join(gone)}, not installed: {install_hint(extra)}"
