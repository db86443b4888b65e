#!/usr/bin/env python3
"""Unpack an extension's source for `fwdoctor build ext` and keep only the asked arches.

    ext_prepare.py --from SDIST|FOLDER|DIR_WITH_ONE_SDIST --to SRC [--gencode 9.0,8.0]

Copies a source folder, or unpacks an sdist (.tar.gz / .zip, its one top folder stripped),
into SRC (made fresh). With --gencode, rewrites setup.py's fixed
`cc_flag.append("arch=compute_XY,code=sm_XY")` entries (each after its
`cc_flag.append("-gencode")`): the ones not asked become `pass`, so the build compiles
exactly the asked arches (torch's cpp_extension adds none of its own when setup.py passes
-gencode). Exits 1 naming what is wrong: no such entry for an asked arch, no entry at all.
Runs in the target interpreter with the standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tarfile
import zipfile

ENTRY = re.compile(r"""^(\s*)cc_flag\.append\(\s*["']arch=compute_(\d+)[a-z]?,code=sm_(\d+)[a-z]?["']\s*\)\s*$""")
GENCODE = re.compile(r"""^(\s*)cc_flag\.append\(\s*["']-gencode["']\s*\)\s*$""")


def keep_arches(text: str, ccs: list[str]) -> tuple[str, list[str]]:
    """setup.py's text with only the asked arches' gencode entries; and the arches kept."""
    want = {cc.replace(".", "") for cc in ccs}
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    for i, line in enumerate(lines):
        m = ENTRY.match(line)
        if not m:
            continue
        if m.group(2) in want:
            kept.append(m.group(2))
            continue
        end = "\n" if line.endswith("\n") else ""
        lines[i] = f"{m.group(1)}pass{end}"
        if i and GENCODE.match(lines[i - 1]):
            prev = lines[i - 1]
            lines[i - 1] = f"{GENCODE.match(prev).group(1)}pass\n"
    return "".join(lines), sorted(set(kept))


def unpack(source: str, dest: str) -> None:
    if os.path.isdir(source) and not any(n.endswith((".tar.gz", ".zip")) for n in os.listdir(source)):
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
        return
    if os.path.isdir(source):
        found = sorted(n for n in os.listdir(source) if n.endswith((".tar.gz", ".zip")))
        if len(found) != 1:
            sys.exit(f"ext_prepare: expected one sdist in {source}, found {found or 'none'}")
        source = os.path.join(source, found[0])
    tmp = dest + ".unpack"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    if source.endswith(".zip"):
        with zipfile.ZipFile(source) as zf:
            zf.extractall(tmp)
    else:
        with tarfile.open(source) as tf:
            tf.extractall(tmp, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(tmp)
    tops = os.listdir(tmp)
    shutil.move(os.path.join(tmp, tops[0]) if len(tops) == 1 else tmp, dest)
    shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--from", dest="source", required=True)
    ap.add_argument("--to", dest="dest", required=True)
    ap.add_argument("--gencode", default="")
    args = ap.parse_args(argv)
    shutil.rmtree(args.dest, ignore_errors=True)
    unpack(args.source, args.dest)
    if args.gencode:
        setup_py = os.path.join(args.dest, "setup.py")
        with open(setup_py, encoding="utf-8") as f:
            text = f.read()
        ccs = [c for c in args.gencode.split(",") if c]
        new, kept = keep_arches(text, ccs)
        missing = sorted({c.replace(".", "") for c in ccs} - set(kept))
        if missing:
            print(f"ext_prepare: {setup_py} has no -gencode entry for sm_{', sm_'.join(missing)}", file=sys.stderr)
            return 1
        with open(setup_py, "w", encoding="utf-8") as f:
            f.write(new)
        print(f"ext_prepare: {setup_py}: -gencode kept for sm_{', sm_'.join(kept)} only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
