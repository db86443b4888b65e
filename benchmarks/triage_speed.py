"""How fast is `fwdoctor triage FILE`, and is it linear in the report's size? (issue 30, item 3)

The typical report is what people paste into an issue: torch's collect_env, an nvidia-smi
table and a traceback. It is put together from three public reports of the corpora (their
front matter dropped; the files are named below), about 4 KB. Printed:

  - whole `fwdoctor triage FILE` processes (wall clock and CPU, medians of paired rounds),
    with fwdoctor installed as users install it (benchmarks/check_speed.py: the wheel in a
    fresh venv), at 1x, 4x and 16x the report (the report repeated);
  - the same in process, without the interpreter's start and the imports (the reading and
    judging alone), whose 16x/1x ratio says whether the work is linear in the text: 16 is
    linear, more means something grows faster than the text;
  - the median whole-process time over every report of the corpora, and the load average.
Target (issue 30): a typical report in at most 0.15 s, and linear. Measured, never asserted
by a test (tests/test_import_budget.py audits what triage imports instead).

    python benchmarks/triage_speed.py [--runs N] [--in-place] [--baseline COMMIT]
--in-place runs this checkout through the dev venv instead of an installed wheel.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from check_speed import compile_bytecode, user_install  # noqa: E402

# One report each with the three parts (tests/data/triage*/; each file's front matter names
# its public source).
PARTS = (
    "tests/data/triage-field/torch/healthy-vllm-gpt-oss-batch-invariance-h100.md",  # collect_env
    "tests/data/triage/01-driver-too-old-fooocus-11040.md",  # nvidia-smi table
    "tests/data/triage/06-driver-too-old-fastfcn-9000.md",  # a traceback
)
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)


def typical_report() -> str:
    return "\n\n".join(FRONT_MATTER.sub("", (REPO / part).read_text(encoding="utf-8")) for part in PARTS)


def corpus() -> list[Path]:
    return sorted([*REPO.glob("tests/data/triage/*.md"), *REPO.glob("tests/data/triage-field/*/*.md")])


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
    # A timer, not Popen.wait(timeout=...), whose polling sleeps would add to the figure.
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    proc.wait()
    wall = time.perf_counter() - start
    watchdog.cancel()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} exited {proc.returncode}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


IN_PROCESS = """
import statistics, sys, time
from fwdoctor.cli.triage import triage_text
data = open(sys.argv[1], "rb").read()
triage_text(data, "warm")  # imports, the KB
times = []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    triage_text(data, "report")
    times.append(time.perf_counter() - start)
print(statistics.median(times))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--in-place", action="store_true", help="run fwdoctor from this checkout through the dev venv")
    parser.add_argument("--baseline", metavar="COMMIT", help="also time COMMIT's wheel on the typical report, paired in the same rounds")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fwdoctor-triage-bench-"))
    try:
        if args.in_place:
            compile_bytecode()
            python = sys.executable
        else:
            python = user_install(work)
        report = typical_report()
        sizes = (1, 4, 16)
        files = {}
        for n in sizes:
            files[n] = work / f"report-{n}x.md"
            files[n].write_text("\n\n".join([report] * n), encoding="utf-8")
        argv = {n: [python, "-m", "fwdoctor", "triage", str(path)] for n, path in files.items()}
        run_once(argv[1])  # the KB's JSON cache, as any earlier run leaves it
        baseline = None
        if args.baseline:
            baseline = [user_install(work / "baseline", args.baseline), *argv[1][1:]]
            run_once(baseline)
        print(f"fwdoctor: {'this checkout, dev venv' if args.in_place else 'wheel in a fresh venv'} ({python})")
        print(f"typical report: {len(report.encode())} bytes ({', '.join(Path(p).name for p in PARTS)})")
        print(f"runs: {args.runs}   load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        walls: dict[int, list[float]] = {n: [] for n in sizes}
        cpus: dict[int, list[float]] = {n: [] for n in sizes}
        old_walls: list[float] = []
        old_cpus: list[float] = []
        for _ in range(args.runs):  # paired: each round runs every size once
            for n in sizes:
                wall, cpu = run_once(argv[n])
                walls[n].append(wall)
                cpus[n].append(cpu)
            if baseline is not None:
                wall, cpu = run_once(baseline)
                old_walls.append(wall)
                old_cpus.append(cpu)
        for n in sizes:
            print(f"triage {n:>2}x ({files[n].stat().st_size:>7} bytes)  median {statistics.median(walls[n]):6.3f} s"
                  f"  (cpu {statistics.median(cpus[n]):6.3f} s)   runs {' '.join(f'{t:.3f}' for t in walls[n])}")
        typical = statistics.median(walls[1])
        print(f"typical report, whole process: {typical:.3f} s   (target <= 0.15 s: {'met' if typical <= 0.15 else 'NOT met'})")
        if baseline is not None:
            print(f"baseline {args.baseline[:10]}, typical report: median {statistics.median(old_walls):.3f} s; "
                  f"this one is {statistics.median(o / n for o, n in zip(old_walls, walls[1])):.2f}x faster paired; "
                  f"CPU {statistics.median(old_cpus):.3f} s -> {statistics.median(cpus[1]):.3f} s, "
                  f"{statistics.median(o / n for o, n in zip(old_cpus, cpus[1])):.2f}x less paired")
        inner: dict[int, float] = {}
        for n in sizes:
            out = subprocess.run([python, "-c", IN_PROCESS, str(files[n]), str(max(args.runs, 5))], capture_output=True,
                                 text=True, timeout=600, cwd="/", check=True).stdout
            inner[n] = float(out.strip().splitlines()[-1])
        print("in process (reading and judging, no start-up): "
              + "   ".join(f"{n}x {inner[n] * 1000:.1f} ms" for n in sizes))
        print(f"linearity: 4x/1x = {inner[4] / inner[1]:.1f} (linear: 4), 16x/1x = {inner[16] / inner[1]:.1f} (linear: 16)")
        corpus_walls = [run_once([python, "-m", "fwdoctor", "triage", str(path)])[0] for path in corpus()]
        print(f"every corpus report ({len(corpus_walls)}), one run each: median {statistics.median(corpus_walls):.3f} s, "
              f"max {max(corpus_walls):.3f} s")
        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
