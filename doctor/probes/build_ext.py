"""The probes of the extension-build pre-flight (`fwdoctor build ext SPEC`): the torch an
extension would be compiled against, the nvcc that would compile it, and what SPEC names.

Like doctor/probes/build.py these are not part of PROBES: they import torch in the target
interpreter and run nvcc, which a plain `fwdoctor check` must not pay for, and they only
answer once a build was requested (`request.ext.spec`). Shell equivalents:
    PY -c 'import torch; print(torch.__version__, torch.version.cuda, torch._C._GLIBCXX_USE_CXX11_ABI, torch.cuda.get_arch_list())'
    PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])'; ls "$INCLUDE/Python.h"
    ${CUDA_HOME:-$(dirname $(dirname $(command -v nvcc)))}/bin/nvcc --version

The toolkit is the one torch's cpp_extension would pick (torch/utils/cpp_extension.py
_find_cuda_home): $CUDA_HOME (or $CUDA_PATH), else the nvcc on PATH, else /usr/local/cuda.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any, Iterable

from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes import build_arch, build_python, build_resources, build_tools, build_toolkit, gpus
from fwdoctor.probes.base import Probe, probe

# Importing torch on a loaded machine (a cold page cache, NFS) takes tens of seconds.
TORCH_TIMEOUT_S = 180.0

# Runs in the target interpreter: one JSON line whatever happens. get_arch_list() reads the
# arch flags torch was compiled with; it needs no GPU or driver.
_ASK_TORCH = r"""
import json, sys, sysconfig, os
out = {"python": "cp%d%d" % sys.version_info[:2], "include": sysconfig.get_paths().get("include")}
out["python_h"] = bool(out["include"]) and os.path.isfile(os.path.join(out["include"], "Python.h"))
import importlib.util
out["build_requires"] = {m: importlib.util.find_spec(m) is not None for m in ("setuptools", "wheel", "packaging")}
try:
    import torch
    out.update(version=torch.__version__, cuda=torch.version.cuda, hip=getattr(torch.version, "hip", None),
               cxx11_abi=bool(torch._C._GLIBCXX_USE_CXX11_ABI), arch_list=torch.cuda.get_arch_list(),
               lib_dir=os.path.join(os.path.dirname(torch.__file__), "lib"), error="")
except Exception as exc:
    out["error"] = "import torch failed: %s: %s" % (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
print(json.dumps(out))
"""

# SPEC forms: a requirement "name==1.2.3" / "name", an sdist "name-1.2.3.tar.gz", a folder.
_REQ = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==\s*([0-9][A-Za-z0-9.+!-]*))?$")
_SDIST = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*?)-([0-9][A-Za-z0-9.+!]*)\.(?:tar\.gz|zip)$")
_PKG_INFO = re.compile(r"^(Name|Version):\s*(\S+)\s*$", re.M)


def parse_torch_answer(text: str) -> dict[str, Any]:
    """The last JSON line the interpreter printed; {"error": ...} when there is none."""
    for line in reversed((text or "").strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return {"error": "the interpreter printed no answer"}


def parse_spec(spec: str) -> dict[str, Any] | None:
    """A requirement or sdist file name -> {"kind", "name", "version"}; None for neither."""
    text = spec.strip()
    base = posixpath.basename(text)
    m = _SDIST.match(base)
    if m and ("/" in text or text.endswith((".tar.gz", ".zip"))):
        return {"kind": "sdist", "name": m.group(1), "version": m.group(2)}
    m = _REQ.match(text)
    if m and "/" not in text:
        return {"kind": "requirement", "name": m.group(1), "version": m.group(2)}
    return None


def parse_pkg_info(text: str) -> tuple[str | None, str | None]:
    found = dict(_PKG_INFO.findall(text or ""))
    return found.get("Name"), found.get("Version")


@probe("ext-source", provides=("ext.source",))
def ext_source(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    spec = facts.get("request.ext.spec")
    if not spec:
        yield Fact.unknown("ext.source", "no extension requested")
        return
    if "/" in spec and host.is_dir(spec):
        name, version = parse_pkg_info(host.read_text(posixpath.join(spec, "PKG-INFO")) or "")
        if not host.is_file(posixpath.join(spec, "setup.py")):
            yield Fact.unknown("ext.source", f"{spec}: a folder without setup.py (torch extensions are built by their setup.py)")
            return
        yield Fact("ext.source", {"kind": "folder", "path": spec, "name": name or posixpath.basename(spec.rstrip("/")), "version": version},
                   source=f"{spec}/PKG-INFO")
        return
    parsed = parse_spec(spec)
    if parsed is None:
        yield Fact.unknown("ext.source", f"{spec}: expected a requirement (causal-conv1d==1.7.0), an sdist (NAME-VERSION.tar.gz) or a source folder")
        return
    if parsed["kind"] == "sdist":
        if not host.is_file(spec):
            yield Fact.unknown("ext.source", f"{spec}: no such file")
            return
        parsed["path"] = spec
    yield Fact("ext.source", parsed, source="SPEC")


def toolkit_root(host: Host) -> tuple[str | None, str]:
    """(root, why) of the toolkit torch's cpp_extension would use: $CUDA_HOME, $CUDA_PATH,
    else the folder above the nvcc on PATH, else /usr/local/cuda."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = host.env.get(var)
        if value:
            return value.rstrip("/") or "/", f"${var}"
    nvcc = host.which("nvcc")
    if nvcc:
        root = posixpath.dirname(posixpath.dirname(nvcc))
        if build_toolkit.has_cuda_headers(host, root):
            return root, f"nvcc on PATH ({nvcc})"
        # A wrapper such as /usr/local/bin/nvcc: torch alone would take CUDA_HOME=/usr/local
        # and miss the headers; the plan sets CUDA_HOME, so the default toolkit can be used.
        if build_toolkit.has_cuda_headers(host, "/usr/local/cuda"):
            return "/usr/local/cuda", (f"/usr/local/cuda: nvcc on PATH ({nvcc}) is outside any toolkit, so torch alone would take "
                                       f"CUDA_HOME={root} and miss its headers; the plan sets CUDA_HOME")
        return None, f"nvcc on PATH ({nvcc}) is outside any toolkit ({root} has no include/cuda_runtime.h)"
    if build_toolkit.has_cuda_headers(host, "/usr/local/cuda"):
        return "/usr/local/cuda", "/usr/local/cuda (no CUDA_HOME, no nvcc on PATH)"
    return None, "no $CUDA_HOME, no nvcc on PATH and no /usr/local/cuda"


@probe("ext-toolkit", provides=("build.toolkit",))
def ext_toolkit(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    if not facts.get("request.ext.spec"):
        yield Fact.unknown("build.toolkit", "no extension requested")
        return
    root, why = toolkit_root(host)
    if root is None:
        yield Fact.unknown("build.toolkit", f"no CUDA toolkit: {why}; set CUDA_HOME to the toolkit's root")
        return
    nvcc = posixpath.join(root, "bin", "nvcc")
    if not host.is_executable(nvcc):
        yield Fact.unknown("build.toolkit", f"{why}: no executable {nvcc}")
        return
    try:
        value = build_toolkit.describe(host, root, nvcc)
    except build_toolkit.NotAToolkit as exc:
        yield Fact.unknown("build.toolkit", f"{why}: {exc}")
        return
    yield Fact("build.toolkit", {**value, "from": why}, source=why)


@probe("ext-torch", provides=("ext.torch",))
def ext_torch(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    python = (facts.get("build.python") or {}).get("executable") or facts.get("request.build.python")
    if not facts.get("request.ext.spec") or not python:
        yield Fact.unknown("ext.torch", "no extension requested" if python else "no target interpreter")
        return
    if not host.live:
        yield Fact.unknown("ext.torch", "torch's C++ ABI flag and arch list need `import torch`, and nothing runs inside --root")
        return
    result = host.run([python, "-c", _ASK_TORCH], timeout=TORCH_TIMEOUT_S)
    if result is None or not result.ok:
        yield Fact.unknown("ext.torch", f"{python} -c 'import torch': {result.describe_failure() if result is not None else 'did not run'}")
        return
    yield Fact("ext.torch", parse_torch_answer(result.stdout), source=f"{python} -c 'import torch'")


# The order matters: the GPUs before --arch auto, the interpreter before torch and ninja.
EXT_PROBES: tuple[Probe, ...] = (
    *gpus.PROBES,
    ext_source,
    ext_toolkit,
    *build_arch.PROBES,
    *build_python.PROBES,
    ext_torch,
    *build_tools.PROBES,
    *build_resources.PROBES,
)

# The seed facts `build ext` sets (recipes/build_ext.py makes them from the command line).
REQUEST_KEYS: tuple[str, ...] = ("request.ext.spec", "request.ext.jobs", "request.build.arch", "request.build.python", "request.build.workdir")
