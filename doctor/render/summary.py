"""Versions at a glance: one line per layer of the stack, the way nvidia-smi's header and
torch's collect_env open, so a reader sees what is installed before what is wrong.

    driver   580.95.05 (open kernel module), supports CUDA up to 13.0
    GPUs     8 x NVIDIA H100 80GB HBM3 (cc 9.0, 81559 MiB)
    toolkit  CUDA 13.0.88 at /usr/local/cuda-13.0 (nvcc first on PATH)
    torch    2.14.1+cu130 (CUDA 13.0) at /venv/lib/python3.11/site-packages/torch
    cuDNN    9.24.0 (pip nvidia-cudnn-cu13 9.24.0.43)
    NCCL     2.30.7 (pip nvidia-nccl-cu13 2.30.7)
    Python   3.11.7 at /venv/bin/python ($VIRTUAL_ENV/bin/python, the active environment)

Pure: Facts in, (layer, text) pairs out. A fact that is unknown shows its reason; one that
was never collected (an old facts file) says so. Nothing here judges.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fwdoctor.model import Facts

LAYERS: tuple[str, ...] = ("driver", "GPUs", "toolkit", "torch", "cuDNN", "NCCL", "Python")


def _unknown(facts: Facts, key: str, none: str = "none") -> str | None:
    """The text for a fact with no value to show (never collected, unknown, or observed as
    absent: null with the observation as its source), or None when there is one."""
    if key not in facts:
        return "not collected"
    if not facts.known(key):
        return f"unknown ({facts.why(key)})"
    if facts[key] is None:
        source = facts.source(key)
        return f"{none} ({source})" if source and none not in source else none
    return None


def _driver(facts: Facts) -> str:
    missing = _unknown(facts, "driver.version", none="none loaded")
    if missing:
        return missing
    text = str(facts["driver.version"])
    flavor = facts.get("driver.module_flavor")
    if flavor in ("open", "proprietary"):
        text += f" ({flavor} kernel module)"
    cuda = facts.get("driver.cuda_version")
    if cuda:
        text += f", supports CUDA up to {cuda}"
    return text


def _gpus(facts: Facts, kb_cc: dict[int, str]) -> str:
    missing = _unknown(facts, "gpus.list")
    if missing:
        return missing
    gpus = [g for g in facts["gpus.list"] or [] if isinstance(g, dict)]
    if not gpus:
        return "none"
    groups: Counter[str] = Counter()
    for i, gpu in enumerate(gpus):
        if gpu.get("cc"):
            details = [f"cc {gpu['cc']}"]
        else:  # a report's nvidia-smi table, an older driver: the KB's value for its name or PCI id
            details = [f"cc {kb_cc[i]} per the KB" if i in kb_cc else "cc unknown"]
        if isinstance(gpu.get("memory_mib"), int):
            details.append(f"{gpu['memory_mib']} MiB")
        groups[f"{gpu.get('name') or 'unnamed GPU'} ({', '.join(details)})"] += 1
    return "; ".join(f"{count} x {label}" for label, count in groups.items())


def _toolkit(facts: Facts) -> str:
    missing = _unknown(facts, "cuda.active", none="no active toolkit")
    if missing:
        return missing
    active = facts["cuda.active"]
    if not isinstance(active, dict):
        return "none active"
    text = f"CUDA {active.get('version') or '?'} at {active.get('root') or '?'}"
    return text + (f" ({active['why']})" if active.get("why") else "")


def _torch(facts: Facts) -> str:
    missing = _unknown(facts, "torch.version", none="not installed")
    if missing:
        return missing
    cuda = facts.get("torch.cuda")
    # Unknown is not None: a `pip list` line "torch 2.1.0" does not say which build it is.
    build = ("CUDA " + str(cuda) if cuda else "CPU build") if facts.known("torch.cuda") else "build unknown"
    text = f"{facts['torch.version']} ({build})"
    location = facts.get("torch.location")
    return text + (f" at {location}" if location else "")


def _frameworks(facts: Facts) -> list[tuple[str, str]]:
    """One line per JAX / TensorFlow / PaddlePaddle present (none when absent or unknown):
    its packages, and what it will run on as built."""
    items = facts.get("frameworks.installed") if facts.known("frameworks.installed") else None
    out = []
    for item in items or []:
        if not isinstance(item, dict):
            continue
        name = {"jax": "JAX", "tensorflow": "TF", "paddle": "Paddle"}.get(str(item.get("framework")), str(item.get("framework")))
        packages = ", ".join(f"{n} {v}" for n, v in (item.get("packages") or {}).items())
        if not item.get("gpu_build"):
            build = "CPU build" if item.get("gpu_build") is False else "build unknown"
        elif item.get("framework") == "jax":
            build = f"CUDA {item.get('cuda')} plugin" + ("" if item.get("requires") else ", system CUDA (-local)")
        else:
            build = f"CUDA {item.get('cuda') or '?'}" + (f", cuDNN {item['cudnn']}" if item.get("cudnn") else "")
        out.append((name, f"{item.get('version') or '?'} ({build}; {packages})"))
    return out


def _installs(facts: Facts, key: str) -> str:
    missing = _unknown(facts, key)
    if missing:
        return missing
    installs = [i for i in facts[key] or [] if isinstance(i, dict)]
    if not installs:
        return "none found"
    parts = []
    for item in installs:
        version = item.get("header_version") or item.get("library_version") or "?"
        where = item.get("package") or item.get("library") or item.get("prefix") or ""
        parts.append(f"{version} ({item.get('kind', '?')}{' ' + str(where) if where else ''})")
    return "; ".join(parts)


def _python(facts: Facts) -> str:
    missing = _unknown(facts, "python.executable")
    if missing:
        return missing
    version = facts.get("python.version") or "?"
    return f"{version} at {facts['python.executable']} ({facts.source('python.executable')})"


def summary(facts: Facts, kb_cc: dict[int, str] | None = None) -> list[tuple[str, str]]:
    """(layer, text) for every layer, in LAYERS order, with a line after torch for each
    other framework present. `kb_cc`: the compute capability the KB gives each GPU the facts
    list without one (Report.gpu_cc; by position in gpus.list)."""
    return [
        ("driver", _shown(_driver, facts)),
        ("GPUs", _shown(_gpus, facts, kb_cc or {})),
        ("toolkit", _shown(_toolkit, facts)),
        ("torch", _shown(_torch, facts)),
        *_shown(_frameworks, facts, many=True),
        ("cuDNN", _shown(_installs, facts, "cudnn.installs")),
        ("NCCL", _shown(_installs, facts, "nccl.installs")),
        ("Python", _shown(_python, facts)),
    ]


def _shown(layer: Any, facts: Facts, *args: Any, many: bool = False) -> Any:
    """One layer's text; a fact of an unexpected type (a hand-edited facts file) shows as
    such instead of costing the whole report."""
    try:
        return layer(facts, *args)
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
        text = f"unreadable (a fact has an unexpected type: {type(exc).__name__}: {exc})"
        return [("frameworks", text)] if many else text


def to_json(facts: Facts, kb_cc: dict[int, str] | None = None) -> list[dict[str, Any]]:
    return [{"layer": layer, "text": text} for layer, text in summary(facts, kb_cc)]
