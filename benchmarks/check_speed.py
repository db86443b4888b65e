"""How fast is `fwdoctor check` next to `python -m torch.utils.collect_env`?

Times, on the same torch venv, several runs each (wall clock, whole processes):
  - fwdoctor check --python VENV/bin/python --json           (static: reads files only)
  - fwdoctor check --python VENV/bin/python --json --deep    (imports torch in a child)
  - VENV/bin/python -m torch.utils.collect_env
and prints the medians and ratios. Targets: static >= 10x faster than collect_env and
under 0.3 s; --deep no slower than collect_env.

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
    times, cpu = [], []
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
        ("fwdoctor check --deep", [*doctor, "--deep"]),
        ("python -m torch.utils.collect_env", [python, "-m", "torch.utils.collect_env"]),
    ]
    medians = {}
    print(f"venv: {venv}   runs: {args.runs}   load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for name, argv in rows:
        median, times, cpu = timed(argv, args.runs)
        medians[name] = median
        print(f"{name:<36} median {median:7.3f} s  (cpu {cpu:6.3f} s)   runs {' '.join(f'{t:.3f}' for t in times)}")
    static, deep, collect = (medians[n] for n, _ in rows)
    print(f"collect_env / static check : {collect / static:5.1f}x   (target >= 10x: {'met' if collect >= 10 * static else 'NOT met'}; static target < 0.3 s: {'met' if static < 0.3 else 'NOT met'})")
    print(f"collect_env / --deep check : {collect / deep:5.2f}x   (target >= 1x: {'met' if deep <= collect else 'NOT met'})")
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
