"""Per-product driver floors from NVIDIA's open-kernel-module README, at every driver tag.

A maintainer tool (not part of the installed CLI). NVIDIA/open-gpu-kernel-modules carries
one commit per driver release, tagged with the release (580.82.07), and its README.md has
a table "Compatible GPUs": `| NVIDIA B300 SXM6 AC | 3182 10DE 20E6 |`, product name and
PCI device id. Reading that table at every tag gives, for each product, the first release
of each driver branch that lists it. A driver older than the first listing does not know
the product's device id and leaves the GPU alone.

    git clone https://github.com/NVIDIA/open-gpu-kernel-modules /tmp/ogkm
    python tools/ogkm_floors.py /tmp/ogkm            # prints the `driver_floors` rows

Each table entry is matched to a row of doctor/kb/gpus.yaml by its PCI device id when the
row lists ids, else by name (rows without ids). The output is pasted into gpus.yaml;
tests/test_kb_driver_floors.py checks the rows the issue names against the tables.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

ROW = re.compile(r"^\|\s*(?P<name>.+?)\s*\|\s*(?P<dev>[0-9A-F]{4})(?:\s+[0-9A-F]{4}\s+[0-9A-F]{4})?\s*\|\s*$")
REMOTE = "NVIDIA/open-gpu-kernel-modules"


def table(readme: str) -> list[tuple[str, str]]:
    """(product name, "0x3182") for every row of the README's GPU table. Pure."""
    out = []
    for line in readme.splitlines():
        match = ROW.match(line)
        if match:
            out.append((match.group("name"), "0x" + match.group("dev").lower()))
    return out


def _git(clone: Path, *argv: str) -> str:
    return subprocess.run(["git", "-C", str(clone), *argv], capture_output=True, text=True, check=True, timeout=60).stdout


def tags(clone: Path) -> list[str]:
    """The release tags (NNN.NN[.NN]), oldest first."""
    names = [t for t in _git(clone, "tag").split() if re.fullmatch(r"\d{3}(?:\.\d+){1,2}", t)]
    return sorted(names, key=Version)


def floors(clone: Path) -> tuple[dict[str, dict[int, tuple[str, str]]], dict[str, str]]:
    """For each KB row name: {branch: (first release listing it, the table line)}, and the
    commit of each tag used."""
    from fwdoctor.kb import KB

    gpus = KB.load(REPO / "doctor" / "kb", areas=("gpus",)).gpus
    out: dict[str, dict[int, tuple[str, str]]] = {}
    commits: dict[str, str] = {}
    for tag in tags(clone):
        branch = int(tag.split(".")[0])
        readme = _git(clone, "show", f"{tag}:README.md")
        for name, dev in table(readme):
            model = gpus.model_for_pci_id(dev)
            if model is None:
                byname = gpus.model_for_name(name)
                model = byname if byname is not None and not byname.pci_ids else None
            if model is None:
                continue
            per_branch = out.setdefault(model.name, {})
            if branch not in per_branch:
                per_branch[branch] = (tag, f"{name} | {dev[2:].upper()}")
                commits.setdefault(tag, _git(clone, "rev-list", "-n1", tag).strip())
    return out, commits


def key(tag: str) -> str:
    return "S-OGKM-" + tag.replace(".", "-")


def render(found: dict[str, dict[int, tuple[str, str]]], commits: dict[str, str], oldest: str) -> str:
    from fwdoctor.kb import KB

    gpus = KB.load(REPO / "doctor" / "kb", areas=("gpus",)).gpus
    models = {m.name: m for m in gpus.models}
    lines = ["driver_floors:"]
    firsts = set()
    predate: list[str] = []
    for name, per_branch in found.items():
        releases = [per_branch[b][0] for b in sorted(per_branch)]
        first = releases[0]
        if first == oldest:
            predate.append(name)  # in the first table: the product predates the open modules
            continue
        firsts.add(first)
        listed = per_branch[min(per_branch)][1].replace('"', "")
        quoted = ", ".join(f'"{r}"' for r in releases)
        # The tables are the open modules' list. They lag the proprietary driver for GPUs
        # that driver also runs (RTX 4090: proprietary 520.56.06, open tables from 525.47.06;
        # Tesla T4 only from 575.51.02), so such a floor binds the open flavour alone. A GPU
        # that runs only on the open modules (Blackwell, Grace Hopper) has no other list.
        support = gpus.support_for(models[name].cc, name)
        applies = "" if support is not None and support.open_modules == "required" else ", modules: open"
        lines.append(f'  - {{gpu: "{name}", first: [{quoted}], listed: "{listed}"{applies}, source: [{key(first)}, S-OGKM-TAGS]}}')
    names = ", ".join(f'"{n}"' for n in predate)
    lines.append(f"driver_floors_predate: {{gpus: [{names}], source: [{key(oldest)}]}}")
    firsts.add(oldest)
    lines.append("sources:")
    for tag in sorted(firsts, key=Version):
        lines.append(f"  {key(tag)}: '{REMOTE}@{commits[tag]}:README.md (tag {tag}), table \"Compatible GPUs\": the first release whose table lists the product (the row''s `listed`)'")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("clone", type=Path, help="a git clone of NVIDIA/open-gpu-kernel-modules with its tags")
    args = parser.parse_args(argv)
    found, commits = floors(args.clone)
    oldest = next(t for t in tags(args.clone) if table(_git(args.clone, "show", f"{t}:README.md")))
    sys.stdout.write(render(found, commits, oldest))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
