"""Mutation score of the rules, selection and the triage readers (issue 32, item 6).

mutmut (dev extras) changes one thing at a time in the code (a `<` to `<=`, a string, a
constant) and runs the fast tests that cover it; a mutant the tests do not fail "survived":
behaviour nothing checks. The score is killed / (killed + survived + timeout), and the
survivors are listed so each can be either killed by a new test or called equivalent.

mutmut names a mutant by its file's path and expects the tests to import that path, but
this repository's `doctor/` folder is the package `fwdoctor` (and `recipes/` is
`fwdoctor.recipes`). So --run first stages the committed tree (HEAD, as a clean checkout
has it) with folders of those names in build/mutants/ (ignored by git; the working tree is
never mutated), with pyproject.toml's [tool.mutmut], and runs `mutmut run` there.

    python benchmarks/mutation_score.py --run            # stage, mutate all, print (slow: hours on 2 cores)
    python benchmarks/mutation_score.py --run --only 'fwdoctor.triage.nvcc.*'   # one module
    python benchmarks/mutation_score.py                  # print the last run's score and survivors

`make mutants` runs the first; it is not part of CI (too slow).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAGE = REPO / "build" / "mutants"
# mutmut's exit codes per mutant (mutmut.stats.status_by_exit_code).
KILLED = {1, 3}
SURVIVED = {0}
TIMEOUT = {36, 24, -24, 152, 255}


def stage(into: Path, commit: str = "HEAD") -> None:
    """The committed tree (`git archive`: what a clean checkout holds, symlinks kept), with
    doctor/ as fwdoctor/ and recipes/ as fwdoctor/recipes/, as the wheel lays them out."""
    import io
    import tarfile

    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=REPO, capture_output=True, check=True, timeout=300).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = []
        for member in tar.getmembers():
            if member.name.startswith("doctor/") or member.name == "doctor":
                member.name = "fwdoctor" + member.name[len("doctor"):]
            elif member.name.startswith("recipes/") or member.name == "recipes":
                member.name = "fwdoctor/recipes" + member.name[len("recipes"):]
            members.append(member)
        tar.extractall(into, members=members, filter="tar")
    # Tests that read doctor/ by its repository path (FACTS.md, the KB files) find it too.
    (into / "doctor").symlink_to("fwdoctor")


def run(into: Path, only: str | None) -> int:
    stage(into)
    # mutmut copies tests/ into mutants/ with shutil.copytree, which follows symlinks by
    # default: a fixture root's links (libcudnn.so.9 -> libcudnn.so.9.1.0) would become
    # files and the root tests fail before any mutant runs. Its CLI is run with copytree
    # keeping links.
    launcher = ("import shutil, sys\n"
                "keep = shutil.copytree\n"
                "shutil.copytree = lambda src, dst, symlinks=True, *a, **k: keep(src, dst, True, *a, **k)\n"
                "from mutmut.__main__ import cli\n"
                "sys.argv[0] = 'mutmut'\n"
                "cli()\n")
    argv = [sys.executable, "-c", launcher, "run", *([only] if only else [])]
    print("$ cd", into, "&& mutmut run", only or "", flush=True)
    # The editable install maps fwdoctor to the repository; mutmut puts mutants/ first on
    # sys.path, where the staged fwdoctor/ is found before the editable finder is asked.
    env = {k: v for k, v in os.environ.items() if k not in ("FWDOCTOR_KB", "PYTHONPATH")}
    return subprocess.run(argv, cwd=into, env=env).returncode


def results(into: Path) -> dict[str, int | None]:
    """{mutant name: exit code} from mutmut's per-file .meta files."""
    out: dict[str, int | None] = {}
    for meta in sorted((into / "mutants").rglob("*.meta")):
        out.update(json.loads(meta.read_text())["exit_code_by_key"])
    return out


def report(codes: dict[str, int | None], only: str | None = None) -> int:
    if only:
        import fnmatch

        codes = {k: v for k, v in codes.items() if fnmatch.fnmatch(k, only)}
    if not codes:
        print(f"no mutmut results under {STAGE / 'mutants'}: run with --run first")
        return 2
    killed = sum(1 for c in codes.values() if c in KILLED)
    survived = sorted(k for k, c in codes.items() if c in SURVIVED)
    timeout = sum(1 for c in codes.values() if c in TIMEOUT)
    judged = killed + len(survived) + timeout
    other = Counter("not checked" if c is None else "no tests" if c in (5, 33) else "skipped" if c == 34 else str(c)
                    for c in codes.values() if c not in KILLED | SURVIVED | TIMEOUT)
    by_module = Counter(k.rsplit(".", 1)[0].split(".x_")[0].split(".xǁ")[0] for k in survived)
    print(f"mutants: {len(codes)}; killed {killed}, survived {len(survived)}, timeout {timeout}"
          + "".join(f", {n} {what}" for what, n in sorted(other.items())))
    if judged:
        print(f"mutation score: {100 * (killed + timeout) / judged:.1f}% ({killed + timeout}/{judged})")
    if survived:
        print("survivors by module:")
        for module, n in by_module.most_common():
            print(f"  {module}: {n}")
        print("survivors (`mutmut show NAME` in build/mutants shows the change):")
        for name in survived:
            print(f"  {name}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="stage build/mutants and run mutmut first")
    parser.add_argument("--only", help="mutant names to run and count (a glob, e.g. 'fwdoctor.triage.nvcc.*')")
    args = parser.parse_args(argv)
    if args.run:
        code = run(STAGE, args.only)
        if code != 0:
            print(f"mutmut exited {code}")
    return report(results(STAGE), args.only)


if __name__ == "__main__":
    sys.exit(main())
