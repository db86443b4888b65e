"""--deep: import torch in the inspected interpreter (a child process with a timeout) and
record what torch itself says: is_available() and the warning that explains a False,
cuDNN and NCCL versions, the compiled arch list, device count, and the CUDA libraries the
process actually mapped (/proc/self/maps after touching cuDNN and NCCL).

The child script is doctor/probes/torch_child.py, passed as `python -c SOURCE` from `/`.
Shell equivalent:
    python -c 'import torch; print(torch.cuda.is_available(), torch.backends.cudnn.version(),
               torch.cuda.nccl.version(), torch.cuda.get_arch_list())'
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from fwdoctor.deepstart import CHILD, MIN_TIMEOUT_S, torch_child
from fwdoctor.host import Host
from fwdoctor.libraries import NCCL
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import probe

__all__ = ["CHILD", "MARKER", "MIN_TIMEOUT_S", "PROBES", "parse_child_output", "to_fact_value", "torch_deep"]

MARKER = "FWDOCTOR_JSON:"


@probe("torch_deep", provides=("torch.deep",), deep=True)
def torch_deep(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    if not host.live:
        yield Fact.unknown("torch.deep", "--deep runs nothing inside a root folder")
        return
    python = facts.get("python.executable")
    if not python:
        yield Fact.unknown("torch.deep", f"no interpreter to run ({facts.why('python.executable')})")
        return
    if facts.get("torch.installed") is False:
        yield Fact.unknown("torch.deep", "torch is not installed in the inspected environment")
        return
    try:
        # Usually started already, at the beginning of the command (fwdoctor.deepstart).
        child = torch_child(host, python)
    except OSError as exc:
        yield ProbeFailure("torch_deep", f"cannot read {CHILD}: {exc.strerror or exc}")
        return
    result = child.result()
    data, problem = parse_child_output(result.stdout)
    if data is None:
        why = result.describe_failure() if not result.ok else problem
        yield ProbeFailure("torch_deep", f"{python} -c <torch_child.py>: {why}")
        return
    deep = to_fact_value(data)
    yield Fact("torch.deep", deep, source=f"{python} -c <doctor/probes/torch_child.py>")
    if deep["import_error"]:
        yield ProbeFailure("torch_deep", f"`import torch` failed in {python}: {deep['import_error']}")
    # What torch itself reports beats the KB's arch list for an official wheel.
    # An empty list from a CUDA build means torch could not say (older torch returns [] when
    # no GPU is usable), so the KB's answer stays.
    if deep["arch_list"] and deep["imported"]:
        yield Fact("torch.arch_list", deep["arch_list"], source="torch.cuda.get_arch_list() (--deep)")


def parse_child_output(stdout: str) -> tuple[dict[str, Any] | None, str]:
    """The child's JSON, or (None, why). Anything else torch printed is ignored."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                data = json.loads(line[len(MARKER):])
            except ValueError as exc:
                return None, f"unreadable answer from the child: {exc}"
            if not isinstance(data, dict):
                return None, "unreadable answer from the child: not a JSON object"
            if "fatal" in data:
                return None, f"the child failed: {data['fatal']}"
            return data, ""
    return None, "the child printed no answer (crashed?)"


def to_fact_value(data: dict[str, Any]) -> dict[str, Any]:
    """The torch.deep shape of doctor/FACTS.md, plus the extra detail the child found."""

    def opt(key: str, kind: type) -> Any:
        value = data.get(key)
        return value if isinstance(value, kind) else None

    arch_list = data.get("arch_list")
    if not (isinstance(arch_list, list) and all(isinstance(a, str) for a in arch_list)):
        arch_list = None
    libs = data.get("loaded_libs")
    libs = [str(p) for p in libs] if isinstance(libs, list) else []
    devices = [d for d in data.get("devices") or [] if isinstance(d, dict)]
    error = opt("error", str) or opt("import_error", str)
    return {
        "imported": bool(data.get("imported")),
        "import_error": opt("import_error", str),
        "version": opt("version", str),
        "cuda": opt("cuda", str),
        "is_available": bool(data.get("is_available")),
        "error": error,
        "warnings": [str(w) for w in data.get("warnings") or []][:10],
        "cudnn_version": opt("cudnn_version", int),
        "cudnn_error": opt("cudnn_error", str),
        "nccl_version": nccl_version(opt("nccl_version", str)),
        "nccl_error": opt("nccl_error", str),
        "arch_list": arch_list,
        "loaded_libs": libs,
        "device_count": opt("device_count", int) or 0,
        "devices": devices,
    }


def nccl_version(reported: str | None) -> str | None:
    """"2.30.7" as torch.cuda.nccl.version() gives it (a tuple, joined by the child). Torch
    1.11 and older returned ncclGetVersion()'s NCCL_VERSION_CODE (2708 for 2.7.8), decoded
    here with fwdoctor.libraries; a code no release has stays as reported."""
    if reported is not None and reported.isdigit():
        return NCCL.version_code.decode(int(reported)) or reported
    return reported


PROBES = (torch_deep,)
