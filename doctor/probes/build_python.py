"""The interpreter a source build runs and installs the wheel into (--python): does it run,
which Python is it, is it a virtual or conda environment, does it have pip.

On a live host the interpreter is run once, with a timeout (a venv whose base Python was
removed still has its files, but does not start). Under --root nothing runs: the python
probe's static reading (pyvenv.cfg, conda-meta, the lib/pythonX.Y layout) answers.
Shell equivalent:
    PY -c 'import sys, importlib.util; print(sys.prefix, sys.base_prefix, importlib.util.find_spec("pip"))'
"""

from __future__ import annotations

import json
import posixpath
from typing import Any, Iterable

from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes import python as python_probe
from fwdoctor.probes.base import Probe, probe

NAME = "build-python"
_ASK = (
    "import json, sys, importlib.util; "
    "print(json.dumps({'executable': sys.executable, 'version': '.'.join(map(str, sys.version_info[:3])), "
    "'prefix': sys.prefix, 'base_prefix': sys.base_prefix, 'has_pip': importlib.util.find_spec('pip') is not None}))"
)


def conda_env(host: Host, prefix: str | None) -> bool:
    """A conda environment other than the base install (which holds bin/conda itself)."""
    return bool(prefix) and host.is_dir(posixpath.join(str(prefix), "conda-meta")) and not host.is_file(posixpath.join(str(prefix), "bin", "conda"))


def asked(host: Host, exe: str) -> dict[str, Any]:
    """Run the interpreter once and read its answer."""
    result = host.run([exe, "-c", _ASK])
    if result is None:  # a root folder: nothing runs there (the caller reads files instead)
        return {"executable": exe, "error": "nothing runs inside --root"}
    if not result.ok:
        return {"executable": exe, "error": f"cannot run it: {result.describe_failure()}"}
    try:
        data = json.loads(result.stdout.strip().splitlines()[-1])
        prefix, base = str(data["prefix"]), str(data["base_prefix"])
    except (ValueError, IndexError, KeyError, TypeError):
        return {"executable": exe, "error": "it did not answer a version probe (not a Python interpreter?)"}
    return {"executable": exe, "version": data.get("version"), "prefix": prefix, "base_prefix": base,
            "isolated": prefix != base or conda_env(host, prefix), "has_pip": bool(data.get("has_pip")), "error": ""}


def read(host: Host, exe: str) -> dict[str, Any]:
    """What the files say (a root folder, where nothing runs)."""
    if not host.is_file(exe):
        return {"executable": exe, "error": "no such file"}
    interp = python_probe.describe(host, exe)
    has_pip = any("pip" in python_probe.distributions(host, site) for site in interp.site_packages) if interp.site_packages else None
    isolated = interp.kind == "venv" or (interp.kind == "conda" and conda_env(host, interp.prefix))
    return {"executable": exe, "version": interp.version, "prefix": interp.prefix, "base_prefix": None,
            "isolated": isolated, "has_pip": has_pip, "error": ""}


@probe(NAME, provides=("build.python",))
def build_python(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    requested = facts.get("request.build.python")
    if not requested:
        yield Fact.unknown("build.python", "no --python requested")
        return
    # The path is kept as given: a venv's bin/python is a symlink, and resolving it would
    # escape the venv.
    exe = requested if "/" in requested else (host.which(requested) or requested)
    value = asked(host, exe) if host.live else read(host, exe)
    yield Fact("build.python", value, source=f"{exe} -c 'import sys'" if host.live else f"{exe} (files only)")


PROBES: tuple[Probe, ...] = (build_python,)
