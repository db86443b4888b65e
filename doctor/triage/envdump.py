"""Environment variables as `env`, `printenv` or `export` lines print them:

    LD_LIBRARY_PATH=/usr/lcoal/cuda-10.1/lib64:
    PATH=/home/xxx/.local/bin:/usr/local/cuda-10.1/bin:/usr/local/sbin:/usr/bin
    export NCCL_P2P_DISABLE=1

Only a whole line "NAME=value" (after an optional `export `, quotes stripped) counts, never
one inside prose, and only the names the rules read: the CUDA pointers (cuda.pointers: the
toolkit root of the first PATH entry that is a CUDA toolkit's bin, of CUDA_HOME and
CUDA_PATH, and of the first LD_LIBRARY_PATH entry that is a CUDA toolkit's lib64) and NCCL's
variables (nccl.env), and CUDA_VISIBLE_DEVICES (gpus.visible_devices, judged against an
nvidia-smi GPU list elsewhere in the report). CUDA_HOME and CUDA_PATH are kept whole (a ':' in
them is itself the bug, cuda-home-invalid). A toolkit root is a folder
named cuda or cuda-X.Y (NVIDIA's installers' /usr/local/cuda-12.4, and its /usr/local/cuda
link); Windows values (C:\\...) are not read. Names are at most 64 characters, values are
split on ':' once each: linear in the line.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Z_][A-Z0-9_]{0,63})=(.*)$")
_ROOT = re.compile(r"cuda(?:-\d{1,2}\.\d{1,2})?")
_NCCL = re.compile(r"NCCL_[A-Z0-9_]{1,60}")
_MAX_ENTRIES = 200  # entries of one PATH-like value read; a real PATH has a few dozen
# torch.utils.cpp_extension's own word on the CUDA_HOME it will build with, printed (logged from
# torch 2.x) by _find_cuda_home wherever torch sees no GPU: the build machine, a docker build,
# a login node. It names the value torch took, a path list included (pytorch/pytorch
# torch/utils/cpp_extension.py: "No CUDA runtime is found, using CUDA_HOME='%s'").
_CPP_EXT_HOME = re.compile(r"No CUDA runtime is found, using CUDA_HOME='(?P<home>[^']{1,400})'")


def _toolkit_root(entry: str, below: tuple[str, ...]) -> str | None:
    """The toolkit root of `entry` when it is <root>/<below...> and root's name is cuda or
    cuda-X.Y ("/usr/local/cuda-10.1/lib64" -> "/usr/local/cuda-10.1"), else None."""
    parts = entry.rstrip("/").split("/")
    n = len(below)
    if len(parts) <= n + 1 or tuple(parts[-n:]) != below or not _ROOT.fullmatch(parts[-n - 1]):
        return None
    return "/".join(parts[: -n]) or None


def _first_root(value: str, below: tuple[tuple[str, ...], ...]) -> str | None:
    for entry in value.split(":")[:_MAX_ENTRIES]:
        if not entry.startswith("/"):
            continue
        for tail in below:
            root = _toolkit_root(entry, tail)
            if root:
                return root
    return None


def find(lines: Lines) -> list[Fragment]:
    pointers: dict[str, Any] = {}
    nccl: dict[str, str] = {}
    numbers: list[int] = []
    notes: list[str] = []
    visible: str | None = None
    for i, text in enumerate(lines.norm):
        if "=" not in text:
            continue
        said = _CPP_EXT_HOME.search(text) if "No CUDA runtime" in text else None
        if said and said.group("home").startswith(("/", ":")):
            pointers.setdefault("cuda_home", said.group("home").rstrip("/") or said.group("home")[:1])
            numbers.append(i + 1)
            continue
        match = _ASSIGN.match(text)
        if not match:
            continue
        name, value = match.group(1), match.group(2).strip().strip("'\"")
        if name == "PATH":
            root = _first_root(value, (("bin",),))
            if root:
                pointers["path_nvcc"] = root
                numbers.append(i + 1)
        elif name in ("CUDA_HOME", "CUDA_PATH") and value.startswith(("/", ":")):
            # Kept whole: a ':' in it is the bug (cuda-home-invalid), not a list to pick from.
            pointers["cuda_home" if name == "CUDA_HOME" else "cuda_path"] = value[:400].rstrip("/") or value[:1]
            numbers.append(i + 1)
        elif name == "LD_LIBRARY_PATH":
            root = _first_root(value, (("lib64",), ("lib",), ("targets", "x86_64-linux", "lib"), ("targets", "sbsa-linux", "lib")))
            if root:
                pointers["ld_cudart"] = root
                numbers.append(i + 1)
        elif _NCCL.fullmatch(name):
            nccl[name] = value[:200]
            numbers.append(i + 1)
        elif name == "CUDA_VISIBLE_DEVICES":
            visible = value[:200]
            numbers.append(i + 1)
    if not numbers:
        return []
    frag = Fragment("env", min(numbers), max(numbers))
    frag.notes.extend(notes)
    if pointers:
        frag.add("cuda.pointers", {"path_nvcc": None, "cuda_home": None, "cuda_path": None, "usr_local_cuda": None, "ld_cudart": None, **pointers})
    if nccl:
        frag.add("nccl.env", nccl)
    if visible is not None:
        frag.add("gpus.visible_devices", visible)
    return [frag]
