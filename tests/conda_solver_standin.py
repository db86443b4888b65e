"""A stand-in for micromamba's solver, for the tests of conda-lock's library path.

No conda, mamba or micromamba can be installed here (no conda channel is reachable), so the
path where fwdoctor drives conda-lock (conda_lock.conda_lock.make_lock_files) with a solver
executable cannot run with the real one. This script answers the only command conda-lock
sends a solver when locking from scratch, with micromamba's JSON shape:

    micromamba create --prefix P --dry-run --json [--override-channels] --channel C ... SPEC ...
      -> {"actions": {"FETCH": [repodata records + url/channel/fn], "LINK": [...], "PREFIX": P},
          "dry_run": true, "prefix": P, "success": true}

(conda_lock.conda_solver.solve_specs_for_arch builds that argv and reads "actions"/"FETCH").
The solve itself is py-rattler's, with the virtual packages conda-lock passes the way it
passes them to conda (CONDA_OVERRIDE_CUDA, CONDA_OVERRIDE_GLIBC, ... and a channel of
__-packages). Everything else conda-lock does (the spec parsing, the category walk, the
content hash, the writer) is conda-lock's own code. Run as: python -m tests.conda_solver_standin ARGS.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile

VERSION = "1.5.10"  # the micromamba version it answers to `--version` (conda-lock requires >= 0.17)


def _virtuals():
    import rattler

    found = {"__unix": ("0", "0"), "__linux": (os.environ.get("CONDA_OVERRIDE_LINUX") or "5.10", "0")}
    for var, name in (("CONDA_OVERRIDE_CUDA", "__cuda"), ("CONDA_OVERRIDE_GLIBC", "__glibc"), ("CONDA_OVERRIDE_ARCHSPEC", "__archspec")):
        value = os.environ.get(var, "")
        if value:
            version, _, build = value.partition(" ")
            found[name] = (version, build or "0")
    return [rattler.GenericVirtualPackage(rattler.PackageName(n), rattler.Version(v), rattler.BuildString(b)) for n, (v, b) in found.items()]


def _only_virtual(channel: str, subdir: str) -> bool:
    """Whether a channel is conda-lock's channel of virtual packages (a folder it makes with
    mkdtemp(prefix="conda-lock-fake-repodata-"), conda_lock.virtual_package._init_fake_repodata)."""
    return channel.startswith("file://") and os.path.basename(channel.rstrip("/")).startswith("conda-lock-fake-repodata-")


def create(args: list[str]) -> int:
    import rattler

    channels, specs, prefix = [], [], ""
    it = iter(args)
    for arg in it:
        if arg in ("--channel", "-c"):
            channels.append(next(it))
        elif arg in ("--prefix", "-p"):
            prefix = next(it)
        elif arg.startswith("-"):
            continue  # --dry-run, --json, --override-channels
        else:
            specs.append(arg)
    subdir = os.environ.get("CONDA_SUBDIR", "linux-64")
    # conda-lock's channel of virtual packages (file://.../fake-repodata) is for conda's
    # solver; rattler takes the same packages as virtual_packages.
    real = [c for c in channels if not _only_virtual(c, subdir)]
    with tempfile.TemporaryDirectory() as cache:
        try:
            records = asyncio.run(rattler.solve(real, [rattler.MatchSpec(s) for s in specs], gateway=rattler.Gateway(cache_dir=cache),
                                                platforms=[subdir, "noarch"], virtual_packages=_virtuals()))
        except Exception as exc:
            print(json.dumps({"success": False, "message": str(exc)}))
            return 1
    fetch, link = [], []
    for r in records:
        url = str(r.url)
        entry = {"name": r.name.normalized, "version": str(r.version), "build": str(r.build), "build_number": r.build_number,
                 "channel": url.rsplit("/", 2)[0], "subdir": r.subdir, "fn": url.rsplit("/", 1)[-1], "url": url,
                 "md5": r.md5.hex() if r.md5 else "", "depends": list(r.depends), "constrains": list(r.constrains),
                 "timestamp": 0}
        if r.sha256 is not None:
            entry["sha256"] = r.sha256.hex()
        fetch.append(entry)
        link.append({"name": entry["name"], "version": entry["version"], "build_string": entry["build"], "channel": entry["channel"],
                     "base_url": entry["channel"], "dist_name": entry["fn"].removesuffix(".conda").removesuffix(".tar.bz2"),
                     "platform": subdir})
    print(json.dumps({"actions": {"FETCH": fetch, "LINK": link, "PREFIX": prefix}, "dry_run": True, "prefix": prefix, "success": True}))
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        print(VERSION)
        return 0
    if argv[:1] == ["create"]:
        return create(argv[1:])
    if argv[:1] in (["info"], ["config"]):
        print(json.dumps({"pkgs_dirs": [os.environ.get("CONDA_PKGS_DIRS", tempfile.gettempdir())]}))
        return 0
    print(f"conda_solver_standin: unsupported command {argv!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without interpreter finalization: py-rattler's native runtime threads can crash
    # while Python tears down (a CI run got SIGSEGV after the whole answer was printed, and
    # conda-lock then discarded it). The answer is written; nothing else is left to do.
    os._exit(code)
