"""torchvision and torchaudio beside torch, as a report lists them: `pip list` rows, `pip freeze`
and collect_env's "[pip3] torchvision==0.16.0+cu118", pip's "Successfully installed torch-2.1.0
torchvision-0.16.0" and `pip show`'s "Name:"/"Version:" pairs.

Both are compiled torch extensions made per torch release and per CUDA (the wheel's local tag:
"+cu118", "+cpu"): each torchvision/torchaudio release pins one torch release (their Requires-Dist
torch==X; the pairs are doctor/kb/torch.yaml's `torchvision`/`torchaudio`). The rule here judges
the pair the report shows: a companion of another torch minor release than the KB pairs with the
torch shown, a "+cpu" companion beside a CUDA torch, or a companion for another CUDA major. A
version without a local tag says nothing of its CUDA; a nightly or source build ("0.17.0a0+git")
is not judged for its release.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, rule, sh
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines
from fwdoctor.versions import parse_version

if TYPE_CHECKING:
    from fwdoctor.kb import KB

COMPANIONS = ("torchvision", "torchaudio")
_NAMES = "torch|torchvision|torchaudio"
# A pip list / freeze / collect_env row: "torchvision  0.16.0+cu118", "torchvision==0.16.0+cu118",
# "[pip3] torchvision==0.16.0+cu118". pip list's third column (an editable install's path) is allowed.
_ROW = re.compile(rf"^\s*(?:\[pip3?\]\s*)?({_NAMES})(?:\s*==\s*|\s+)(\d[\w.+!-]{{0,60}})(?:\s+/\S{{0,300}})?\s*$", re.IGNORECASE)
# pip's closing line lists every distribution it installed as name-version
_INSTALLED = re.compile(r"Successfully installed\s")
_INSTALLED_ITEM = re.compile(rf"(?:^|\s)({_NAMES})-(\d[\w.+!]{{0,60}})(?=\s|$)", re.IGNORECASE)
_SHOW_NAME = re.compile(rf"^\s*Name:\s*({_NAMES})\s*$", re.IGNORECASE)
_SHOW_VERSION = re.compile(r"^\s*Version:\s*(\d[\w.+!-]{0,60})\s*$")


def find(lines: Lines) -> list[Fragment]:
    """One fragment holding `torch.companions`: each torch/torchvision/torchaudio the report lists
    ({"package", "version", "line"}), in the order shown; none when no companion is listed."""
    found: list[dict[str, Any]] = []
    norm = lines.norm
    for i, text in enumerate(norm):
        row = _ROW.match(text)
        if row:
            found.append({"package": row.group(1).lower(), "version": row.group(2), "line": i + 1})
            continue
        if _INSTALLED.search(text):
            found += [{"package": m.group(1).lower(), "version": m.group(2), "line": i + 1} for m in _INSTALLED_ITEM.finditer(text)]
            continue
        name = _SHOW_NAME.match(text)
        if name and i + 1 < len(norm):
            version = _SHOW_VERSION.match(norm[i + 1])
            if version:
                found.append({"package": name.group(1).lower(), "version": version.group(1), "line": i + 2})
    if not any(entry["package"] in COMPANIONS for entry in found):
        return []
    frag = Fragment("torch companions", found[0]["line"], found[-1]["line"])
    frag.add("torch.companions", found)
    return [frag]


def _local(version: str) -> str | None:
    """The wheel's local tag when it names a build: "cu118", "cpu"; else None."""
    match = re.search(r"\+(cu\d{2,3}|cpu)\b", version)
    return match.group(1) if match else None


def _cuda_major(tag: str) -> str:
    return tag[2:-1]  # "cu118" -> "11", "cu121" -> "12"


def _series(version: str) -> tuple[int, int] | None:
    """(major, minor) of a release; None for a nightly, a source build or no version."""
    parsed = parse_version(version)
    if parsed is None or parsed.is_prerelease or parsed.is_devrelease or (parsed.local and not _local(version)):
        return None
    return parsed.release[0], parsed.release[1] if len(parsed.release) > 1 else 0


_NEAR = 60  # lines: a torch listed this close to a companion is the one beside it (one listing)


def _torch_for(entry: dict[str, Any], companions: list[dict[str, Any]], fallback: str | None) -> str | None:
    """The torch beside `entry`: the nearest torch the listings show (a report may paste one
    listing before a reinstall and one after), else the report's torch.version."""
    near = [e for e in companions if e["package"] == "torch" and abs(e["line"] - entry["line"]) <= _NEAR]
    if near:
        return min(near, key=lambda e: abs(e["line"] - entry["line"]))["version"]
    return fallback


def companion_mismatches(companions: list[dict[str, Any]], fallback: str | None, kb: KB) -> list[tuple[dict[str, Any], str, str]]:
    """Each companion that cannot run beside its torch (the nearest one listed, else `fallback`,
    the report's torch.version): (entry, torch version, why). Pure."""
    out = []
    for entry in companions:
        package, version = entry["package"], entry["version"]
        torch_version = _torch_for(entry, companions, fallback)
        if package not in COMPANIONS or not torch_version:
            continue
        torch_tag = _local(torch_version)
        variant = kb.torch.variant_for(torch_version) if _series(torch_version) else None
        tag = _local(version)
        if tag == "cpu" and torch_tag and torch_tag != "cpu":
            out.append((entry, torch_version, f"{package} {version} is a CPU build beside torch {torch_version}: its ops have no CUDA kernels "
                                              f"(\"Could not run '{package}::...' with arguments from the 'CUDA' backend\")"))
            continue
        if tag and tag != "cpu" and torch_tag and torch_tag != "cpu" and _cuda_major(tag) != _cuda_major(torch_tag):
            out.append((entry, torch_version, f"{package} {version} is built for CUDA {_cuda_major(tag)}.x, torch {torch_version} for CUDA {_cuda_major(torch_tag)}.x "
                                              f"(\"Detected that PyTorch and {package} were compiled with different CUDA major versions\")"))
            continue
        paired = getattr(variant, package, None) if variant is not None else None
        have, want = _series(version), _series(paired) if paired else None
        if have and want and have != want:
            out.append((entry, torch_version, f"{package} {version} is of another release than torch {torch_version} pairs with "
                                              f"({package} {want[0]}.{want[1]}.x, doctor/kb/torch.yaml)"))
    return out


@rule("extension-built-for-other-torch", needs=("torch.companions",), optional=("torch.version",))
def companion_built_for_other_torch(facts: Facts, kb: KB) -> Hit | None:
    """torchvision/torchaudio listed beside a torch they were not built for: another torch minor
    release than doctor/kb/torch.yaml pairs with it, a "+cpu" companion beside a CUDA torch, or
    another CUDA major (see extension-built-for-other-torch)."""
    companions = [e for e in facts.get("torch.companions") or [] if isinstance(e, dict)]
    wrong = companion_mismatches(companions, facts.get("torch.version"), kb)
    if not wrong:
        return None
    entry, torch_version, why = wrong[0]
    variant = kb.torch.variant_for(torch_version)
    if variant is not None and (variant.torchvision or variant.torchaudio):
        commands: tuple[str, ...] = ("pip install --force-reinstall " + " ".join(sh(arg) for arg in variant.pip_args()),)
        note = f"install torch {variant.local_version} and its companions in one command, from one index"
    else:
        commands = ("pip install --force-reinstall torch torchvision torchaudio --index-url https://download.pytorch.org/whl/cuXY   # cuXY: torch's CUDA, or cpu",)
        note = "install torch, torchvision and torchaudio in one command from one index (https://pytorch.org/get-started/previous-versions/)"
    return Hit(f"{why}: report line {entry['line']}",
               evidence={"torch.companions": [w[0] for w in wrong], "torch.version": torch_version},
               fix=FixRef(commands=commands, note=note))


RULES = (companion_built_for_other_torch,)
