"""How fast is `fwdoctor check` next to `python -m torch.utils.collect_env`?

Times, on the same torch venv, several runs each (wall clock, whole processes):
  - fwdoctor check --python VENV/bin/python --json           (static: reads files only)
  - the same with --no-cache                                  (every probe command runs)
  - fwdoctor check --python VENV/bin/python --json --deep    (imports torch in a child)
  - VENV/bin/python -m torch.utils.collect_env                (the yardstick)
in paired rounds (each round runs every row once), and prints the medians, the load
average, and the median of each round's ratio. Targets (issue 30): static <= 0.2 s and
>= 15x faster than collect_env; --deep no slower than collect_env.

fwdoctor's modules are byte-compiled first, as `pip install` does for a user (torch's
already are): with PYTHONDONTWRITEBYTECODE set, an editable checkout would otherwise
compile every module from source on every run and measure the compiler.

    python benchmarks/check_speed.py [--venv PATH] [--runs N] [--profile]
--profile also prints the top of a cProfile of one in-process static check.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def find_venv() -> Path | None:
    for prefix in (Path(sys.prefix), REPO / ".venv", Path("/tmp/venv-torch")):
        if (prefix / "bin" / "python").exists() and list(prefix.glob("lib/python3*/site-packages/torch/version.py")):
            return prefix
    return None


def compile_bytecode() -> None:
    """Byte-compile fwdoctor's package folders (what pip does when it installs the wheel)."""
    import compileall

    import fwdoctor
    import fwdoctor.recipes

    for folder in (*fwdoctor.__path__, *fwdoctor.recipes.__path__):
        compileall.compile_dir(folder, quiet=1)


def timed(argv: list[str], runs: int) -> tuple[float, list[float], float]:
    """(median wall seconds, every run, median CPU seconds of the child and its children).
    CPU time is reported too because wall time on a busy machine measures the neighbours."""
    times: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
        # The 600 s limit is a timer, not Popen.wait(timeout=...): that one polls with
        # sleeps of up to 50 ms and would add up to 50 ms to every figure.
        watchdog = threading.Timer(600, proc.kill)
        watchdog.start()
        proc.wait()
        times.append(time.perf_counter() - start)
        watchdog.cancel()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        if proc.returncode not in (0, 1):
            sys.exit(f"{' '.join(argv)} exited {proc.returncode}")
    return statistics.median(times), times, statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    venv = args.venv or find_venv()
    if venv is None:
        sys.exit("no venv with torch found; pass --venv")
    python = str(venv / "bin" / "python")
    # fwdoctor itself runs from this interpreter (the repo's venv), inspecting `python`.
    doctor = [sys.executable, "-m", "fwdoctor", "check", "--python", python, "--json"]
    compile_bytecode()
    subprocess.run([python, "-c", "import torch"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)  # warm the page cache
    rows = [
        ("fwdoctor check (static)", doctor),
        ("fwdoctor check --no-cache (static)", [*doctor, "--no-cache"]),
        ("fwdoctor check --deep", [*doctor, "--deep"]),
        ("python -m torch.utils.collect_env", [python, "-m", "torch.utils.collect_env"]),
    ]
    timed(doctor, 1)  # fills the probe and KB caches, as any earlier run on the host has
    print(f"venv: {venv}   runs: {args.runs}   load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    # Paired: each round runs every row once, back to back, so a neighbour's burst of load
    # lands on all of them alike; the ratios are medians of each round's own ratio.
    per_row: dict[str, list[float]] = {name: [] for name, _ in rows}
    cpu_row: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(args.runs):
        for name, argv in rows:
            _, (wall,), cpu = timed(argv, 1)
            per_row[name].append(wall)
            cpu_row[name].append(cpu)
    medians = {name: statistics.median(times) for name, times in per_row.items()}
    for name, _ in rows:
        times = per_row[name]
        print(f"{name:<36} median {medians[name]:7.3f} s  (cpu {statistics.median(cpu_row[name]):6.3f} s)   runs {' '.join(f'{t:.3f}' for t in times)}")
    static, uncached, deep, collect = (per_row[n] for n, _ in rows)

    def paired(yardstick: list[float], ours: list[float]) -> float:
        return statistics.median(y / o for y, o in zip(yardstick, ours))

    s_med, c_med = medians[rows[0][0]], medians[rows[3][0]]
    print(f"collect_env / static check : {paired(collect, static):5.1f}x paired   (target >= 15x: {'met' if paired(collect, static) >= 15 else 'NOT met'}; static target <= 0.2 s: {'met' if s_med <= 0.2 else 'NOT met'})")
    print(f"collect_env / static --no-cache : {paired(collect, uncached):5.1f}x paired")
    print(f"collect_env / --deep check : {paired(collect, deep):5.2f}x paired   (target >= 1x: {'met' if medians[rows[2][0]] <= c_med else 'NOT met'})")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.profile:
        import cProfile
        import pstats

        from click.testing import CliRunner

        from fwdoctor.cli import main as cli

        profiler = cProfile.Profile()
        profiler.enable()
        CliRunner().invoke(cli, ["check", "--python", python, "--json"])
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
