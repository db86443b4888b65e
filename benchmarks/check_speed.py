"""How fast is `fwdoctor check` next to `python -m torch.utils.collect_env`?

Times, on the same torch venv, several runs each (wall clock, whole processes):
  - fwdoctor check --python VENV/bin/python --json           (static: reads files only)
  - the same with --no-cache                                  (every probe command runs)
  - fwdoctor check --python VENV/bin/python --json --deep    (imports torch in a child)
  - VENV/bin/python -m torch.utils.collect_env                (the yardstick)
  - VENV/bin/python -c 'import torch'                         (--deep's yardstick)
in paired rounds (each round runs every row once), and prints the medians, the load
average, and the median of each round's ratio. Targets (issue 30): static <= 0.2 s and
>= 15x faster than collect_env; --deep no slower than `import torch` plus 0.3 s.

fwdoctor runs installed as users install it: this checkout's wheel (`pip wheel .`) put
into a fresh venv's site-packages by pip (which byte-compiles it), its dependencies taken
from this venv's site-packages by a plain path in a .pth. The development venv is not
used for fwdoctor itself: its editable finder, coverage hook and setuptools' distutils
shim (.pth files site.py runs at every start) cost 30-60 ms a process on this machine,
which no user pays. `--in-place` measures this checkout through the dev venv instead
(byte-compiled first; with PYTHONDONTWRITEBYTECODE set it would measure the compiler).
The yardstick, collect_env, runs in the torch venv as it is.

    python benchmarks/check_speed.py [--venv PATH] [--runs N] [--profile] [--in-place] [--baseline COMMIT]
--profile also prints the top of a cProfile of one static check, in a child of the
measured interpreter. --baseline COMMIT adds that commit's wheel (git archive) to every
round, so before and after are paired under the same load.
"""

from __future__ import annotations

import argparse
import os
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


def user_install(work: Path, commit: str | None = None) -> str:
    """A fresh venv holding this checkout's wheel (or `commit`'s), installed by pip;
    returns its python."""
    tree, wheels, venv = work / "tree", work / "wheels", work / "venv"
    if commit is not None:
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=REPO, capture_output=True, timeout=120, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, timeout=120, check=True)
    else:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                                capture_output=True, text=True, timeout=60, check=True).stdout
        # Built from a copy of the checkout's files: setuptools' build/ in the source tree
        # keeps files deleted since an earlier build, and they would end up in the wheel.
        for name in filter(None, listed.split("\0")):
            source = REPO / name
            if source.is_file() and not source.is_symlink():
                (tree / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, tree / name)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "timeout": 600, "check": True}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(tree)], **quiet)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], **quiet)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    (wheel,) = wheels.glob("fwdoctor-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--disable-pip-version-check",
                    "--target", site, str(wheel)], **quiet)
    # click, packaging, PyYAML, nvidia-ml-py from this venv: a plain path line, so none of
    # this venv's own .pth files (editable finder, coverage) run.
    deps = subprocess.run([sys.executable, "-c", "import click, os; print(os.path.dirname(os.path.dirname(click.__file__)))"],
                          capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    Path(site, "fwdoctor-bench-deps.pth").write_text(deps + "\n")
    return str(python)


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
    parser.add_argument("--in-place", action="store_true", help="run fwdoctor from this checkout through the dev venv")
    parser.add_argument("--baseline", metavar="COMMIT", help="also time COMMIT's wheel (its own fresh venv), paired in the same rounds")
    args = parser.parse_args()
    venv = args.venv or find_venv()
    if venv is None:
        sys.exit("no venv with torch found; pass --venv")
    python = str(venv / "bin" / "python")
    work = Path(tempfile.mkdtemp(prefix="fwdoctor-bench-"))
    if args.in_place:
        compile_bytecode()
        runner = sys.executable
    else:
        runner = user_install(work)
    # fwdoctor runs from `runner` (installed as users install it), inspecting `python`.
    doctor = [runner, "-m", "fwdoctor", "check", "--python", python, "--json"]
    subprocess.run([python, "-c", "import torch"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)  # warm the page cache
    rows = [
        ("fwdoctor check (static)", doctor),
        ("fwdoctor check --no-cache (static)", [*doctor, "--no-cache"]),
        ("fwdoctor check --deep", [*doctor, "--deep"]),
        ("python -m torch.utils.collect_env", [python, "-m", "torch.utils.collect_env"]),
        ("python -c 'import torch'", [python, "-c", "import torch"]),
    ]
    if args.baseline:
        before = user_install(work / "baseline", args.baseline)
        rows.append((f"{args.baseline[:10]}: check (static)", [before, *doctor[1:]]))
        rows.append((f"{args.baseline[:10]}: check --deep", [before, *doctor[1:], "--deep"]))
        timed(rows[-2][1], 1)
    timed(doctor, 1)  # fills the probe and KB caches, as any earlier run on the host has
    print(f"fwdoctor: {'this checkout, dev venv' if args.in_place else 'wheel in a fresh venv'} ({runner})")
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
    static, uncached, deep, collect, torch_import = (per_row[n] for n, _ in rows[:5])

    def paired(yardstick: list[float], ours: list[float]) -> float:
        return statistics.median(y / o for y, o in zip(yardstick, ours))

    s_med, c_med = medians[rows[0][0]], medians[rows[3][0]]
    print(f"collect_env / static check : {paired(collect, static):5.1f}x paired   (target >= 15x: {'met' if paired(collect, static) >= 15 else 'NOT met'}; static target <= 0.2 s: {'met' if s_med <= 0.2 else 'NOT met'})")
    print(f"collect_env / static --no-cache : {paired(collect, uncached):5.1f}x paired")
    print(f"collect_env / --deep check : {paired(collect, deep):5.2f}x paired")
    over = statistics.median(d - t for d, t in zip(deep, torch_import))
    print(f"--deep minus import torch  : {over:+6.3f} s paired   (target <= +0.3 s: {'met' if over <= 0.3 else 'NOT met'})")
    if args.baseline:
        old_static, old_deep = per_row[rows[5][0]], per_row[rows[6][0]]
        print(f"baseline {args.baseline[:10]}: collect_env / static check {paired(collect, old_static):5.1f}x paired; "
              f"--deep minus import torch {statistics.median(d - t for d, t in zip(old_deep, torch_import)):+6.3f} s paired")
        # CPU seconds move far less with the neighbours' load than wall seconds do.
        old_cpu, new_cpu = cpu_row[rows[5][0]], cpu_row[rows[0][0]]
        print(f"static check CPU: baseline {statistics.median(old_cpu):.3f} s, this {statistics.median(new_cpu):.3f} s, "
              f"{paired(old_cpu, new_cpu):.2f}x less paired; wall {paired(old_static, static):.2f}x faster paired")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.profile:
        # In a child of the measured interpreter, so the profile sees its imports.
        code = ("import cProfile, pstats, sys\nfrom fwdoctor.cli import main\nprofiler = cProfile.Profile()\nprofiler.enable()\n"
                "try:\n    main(sys.argv[1:], standalone_mode=False)\nexcept SystemExit:\n    pass\nprofiler.disable()\n"
                "sys.stdout = sys.__stderr__\npstats.Stats(profiler).sort_stats('cumulative').print_stats(30)\n")
        subprocess.run([runner, "-c", code, "check", "--python", python, "--json"], stdout=subprocess.DEVNULL, timeout=600, cwd="/")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
