"""How does `fwdoctor fleet report` scale with the number of nodes?

Builds a synthetic fleet from real-shaped facts (tests/data/fleet-report/facts-h100x8-r580.json,
the facts of an 8 x H100 host; or --facts FILE, e.g. `fwdoctor facts > host.json` here)
with a few odd nodes (one on driver 550, one on another NCCL, one with a GPU missing, one
with a slow all-reduce), then times whole `fwdoctor fleet report DIR --format F --out FILE` processes for 100,
1,000 and 10,000 nodes (text, json, html) and prints wall and CPU time, peak RSS of the
process (plus its largest child's: a large fleet is read in two worker processes) and the ratio to one `fwdoctor check --facts FILE` (issue 30's target: 10,000
nodes in under 10 s and 200 MiB, TARGET_S and TARGET_MIB below). The reading is streamed whatever the format; the JSON document itself (every node's row)
is built whole before it is written, so its size, not the reading, grows with the fleet.

Each node is one facts file plus one smoke document (`kind: smoke`, GPU kernel and
all-reduce results) unless --facts-only. The smoke figures are made up (no GPU records
real ones here): GEMM ~700 TFLOP/s fp16 per H100, busbw ~180 GB/s over 16 ranks.

    python benchmarks/fleet_report.py [--nodes 100,1000,10000] [--formats text,json,html] [--facts FILE] [--facts-only]
        [--distinct] [--runs N] [--keep DIR] [--compare DIR]

Each figure is the median of --runs runs (wall and CPU seconds; peak RSS is the largest);
with --compare DIR (a copy of an older tree) every run is paired with one of that tree,
alternately, and the two reports are compared byte for byte. The target of issue 30 item
4 (10,000 nodes in under 10 s and 200 MiB) is printed with the 10,000-node figures.

A file that is another but for its host name is neither parsed nor judged again
(fwdoctor.fleet.documents.Twins, report.JudgeCache), and the generated nodes are alike but
for their names and a few odd ones: the best case. --distinct gives every node its own GPU
UUIDs and stamp, as a real fleet's facts differ: each node's facts are then read fact by
fact (only gpus.list is parsed again: fleet.facttext) and judged rule by rule, where only
the rules that read the stamp or a GPU whole run again (fleet.judging.RuleCache: a rule
that reads some fields of each GPU is keyed by those fields, so UUIDs do not split it;
in the shipped rules, driver-branch-eol reads the stamp, and gpu-arch-unsupported-by-torch
and -by-framework copy each GPU whole). Print both.

The fleet generator (`write_fleet`) is also what tests/test_fleet_report.py and
tests/test_fleet_html.py build their 1,000-node fleets with.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "fleet-report"
FACTS = DATA / "facts-h100x8-r580.json"
KERNEL_CPU = DATA / "smoke-kernel-cpu.json"
SMOKE_ALL = DATA / "smoke-all-gloo-cpu.json"
STAMP = "2026-12-01T10:00:00Z"

# The odd nodes of a synthetic fleet (by index; names are node-%04d).
ODD_DRIVER, ODD_NCCL, ODD_GPU, ODD_BUSBW = 417, 100, 200, 300
ODD_DRIVER_VERSION, ODD_DRIVER_CUDA = "550.163.01", "12.4"
ODD_NCCL_VERSION = "2.27.3"
BUSBW, SLOW_BUSBW, GEMM = 180.0, 30.0, 700.0


def node_name(index: int) -> str:
    return f"node-{index:04d}"


def _with_host(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return {**doc, "host": {"name": name, "source": "/etc/hostname"}, "collected_at": STAMP}


def odd_facts(base: dict[str, Any], index: int) -> dict[str, Any]:
    """The base facts changed the way the odd node `index` differs from the rest."""
    doc = copy.deepcopy(base)
    facts = doc["facts"]
    if index == ODD_DRIVER:
        facts["driver.version"]["value"] = ODD_DRIVER_VERSION
        facts["driver.cuda_version"]["value"] = ODD_DRIVER_CUDA
        for lib in facts["driver.userspace_libs"]["value"]:  # a whole driver 550 install, not a half upgrade
            lib["path"] = lib["path"].replace(lib["version"], ODD_DRIVER_VERSION)
            lib["version"] = ODD_DRIVER_VERSION
    elif index == ODD_NCCL:
        for item in facts["nccl.installs"]["value"]:
            item["header_version"] = item["library_version"] = ODD_NCCL_VERSION
            item["package"] = f"nvidia-nccl-cu13 {ODD_NCCL_VERSION}"
        facts["torch.requires"]["value"]["nvidia-nccl-cu13"] = f"=={ODD_NCCL_VERSION}"
    elif index == ODD_GPU:
        facts["gpus.list"]["value"] = facts["gpus.list"]["value"][:-1]
    return doc


def smoke_doc(index: int, kernel_cpu: dict[str, Any], allreduce: dict[str, Any]) -> dict[str, Any]:
    """A `smoke --json` document: 8 GPU kernel results and one 2-node NCCL all-reduce."""
    cpu = kernel_cpu["results"][0]
    gpus = 7 if index == ODD_GPU else 8
    kernel = []
    for gpu in range(gpus):
        fp16 = GEMM + (index * 7 + gpu) % 11 - 5
        details = {**cpu["details"], "index": gpu, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0",
                   "tflops": {"fp32": 51.2, "fp16": fp16}, "gemm_tflops": fp16,
                   "gemm": {"dtype": "fp16", "n": 4096, "iters": 700, "seconds": 0.14}}
        details.pop("threads", None)
        details.pop("mkldnn", None)
        kernel.append({**cpu, "test": f"kernel gpu{gpu}", "details": details,
                       "message": f"GPU {gpu} NVIDIA H100 80GB HBM3 (cc 9.0): checks within tolerance"})
    value = SLOW_BUSBW if index == ODD_BUSBW else BUSBW + index % 7 - 3
    ar = copy.deepcopy(allreduce)
    ar["details"].update({"backend": "nccl", "world_size": 16, "nnodes": 2, "nproc_per_node": 8, "device": "cuda",
                          "avg_busbw_gbps": value})
    ar["message"] = f"nccl, 16 ranks (2 nodes): average busbw {value:.4g} GB/s"
    return {"schema_version": 1, "kind": "smoke", "fwdoctor": kernel_cpu.get("fwdoctor", "0.1.0"), "exit_code": 0,
            "python": kernel_cpu.get("python"), "results": [*kernel, ar]}


def write_fleet(folder: Path, nodes: int, facts_file: Path = FACTS, smoke: bool = True, distinct: bool = False) -> None:
    """`nodes` nodes into `folder`: node-NNNN.facts.json (+ node-NNNN.smoke.json).

    distinct: every node's facts differ as real ones do (its own GPU UUIDs, collected a
    second apart), so no two nodes' facts are alike: the worst case for `fleet report`,
    which judges identical facts once (issue 30)."""
    folder.mkdir(parents=True, exist_ok=True)
    base = json.loads(facts_file.read_text())
    kernel_cpu = json.loads(KERNEL_CPU.read_text())
    allreduce = json.loads(SMOKE_ALL.read_text())["allreduce"][0]
    uuids = [g["uuid"] for g in base["facts"].get("gpus.list", {}).get("value") or [] if isinstance(g, dict) and g.get("uuid")]
    # One serialisation for the common case; the odd nodes get their own.
    marker = "@@NODE@@"
    common = json.dumps(_with_host(base, marker), indent=1)
    for index in range(nodes):
        name = node_name(index)
        if index in (ODD_DRIVER, ODD_NCCL, ODD_GPU):
            text = json.dumps(_with_host(odd_facts(base, index), name), indent=1)
        else:
            text = common.replace(marker, name)
        if distinct:
            text = text.replace(STAMP, f"2026-12-01T{10 + index // 3600:02d}:{index // 60 % 60:02d}:{index % 60:02d}Z")
            for uuid in uuids:
                text = text.replace(uuid, f"{uuid[:-8]}{index:08d}")
        (folder / f"{name}.facts.json").write_text(text)
        if smoke:
            (folder / f"{name}.smoke.json").write_text(json.dumps(_with_host(smoke_doc(index, kernel_cpu, allreduce), name)))


# ----------------------------------------------------------------------------- measuring
# Issue 30 item 4: 10,000 nodes reported in under TARGET_S seconds and TARGET_MIB of peak
# RSS (the process's ru_maxrss plus its largest worker's). The targets live here, not in timed tests: a test
# that times itself fails on a busy CI runner for no fault of the code.
TARGET_NODES, TARGET_S, TARGET_MIB = 10_000, 10.0, 200.0

# Runs the CLI in this interpreter and reports its peak RSS (ru_maxrss, KiB on Linux) and
# CPU seconds (user + system, so a busy machine's waiting is not counted as work), its
# children's added: the workers that read a large fleet (fwdoctor.fleet.documents). The
# RSS is the process's peak plus its largest child's, an upper bound: pages a forked
# worker shares with the process are counted twice.
_WRAPPER = r"""
import resource, sys
from fwdoctor.cli import main
code = 0
try:
    main.main(args=sys.argv[1:], prog_name="fwdoctor", standalone_mode=True)
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 1
usage = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the report's reading workers (fleet.documents)
sys.stderr.write("MAXRSS_KIB=%d\nCPU_S=%.3f\n" % (usage.ru_maxrss + kids.ru_maxrss,
                 usage.ru_utime + usage.ru_stime + kids.ru_utime + kids.ru_stime))
sys.exit(code)
"""


def run(args: list[str], python_path: Path | None = None) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, peak RSS KiB, exit code) of one fwdoctor process;
    `python_path`: a folder holding another `fwdoctor/` package to run instead."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if python_path is not None:
        env["PYTHONPATH"] = str(python_path)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _WRAPPER, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=3600, env=env)
    wall = time.perf_counter() - start
    found = dict(line.split("=", 1) for line in done.stderr.splitlines() if line.startswith(("MAXRSS_KIB=", "CPU_S=")))
    return wall, float(found.get("CPU_S", "nan")), int(found.get("MAXRSS_KIB", "-1")), done.returncode


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="100,1000,10000")
    parser.add_argument("--facts", type=Path, default=FACTS, help="a facts file to clone (default: the committed fixture)")
    parser.add_argument("--facts-only", action="store_true", help="no smoke documents")
    parser.add_argument("--runs", type=int, default=3, help="runs of each measurement (medians are printed)")
    parser.add_argument("--formats", default="text,json,html", help="report formats to time (written with --out)")
    parser.add_argument("--distinct", action="store_true",
                        help="no two nodes' facts alike (own GPU UUIDs and stamps): the worst case for judging identical facts once")
    parser.add_argument("--keep", type=Path, help="build the fleets under this folder and keep them")
    parser.add_argument("--compare", type=Path, metavar="DIR",
                        help="a folder holding another fwdoctor/ package (a copy of an older tree, recipes/ as "
                             "fwdoctor/recipes): each run of this tree is paired with one of that, alternately")
    options = parser.parse_args()
    sizes = [int(n) for n in options.nodes.split(",")]
    work = options.keep or Path(tempfile.mkdtemp(prefix="fwdoctor-fleet-bench-"))
    trees: list[tuple[str, Path | None]] = [("this", None)] + ([("compare", options.compare)] if options.compare else [])
    print(f"target: {TARGET_NODES} nodes in < {TARGET_S:g} s wall and < {TARGET_MIB:g} MiB peak RSS; "
          f"{os.cpu_count()} CPUs, {load()}")
    try:
        base = [run(["check", "--facts", str(options.facts), "--json"]) for _ in range(options.runs)]
        one = statistics.median(w for w, _, _, _ in base)
        print(f"baseline: one `fwdoctor check --facts` {one:.3f} s, peak RSS {max(r for _, _, r, _ in base) / 1024:.1f} MiB")
        print(f"{'nodes':>7} {'documents':>9} {'format':>8} {'tree':>8} {'wall s':>8} {'CPU s':>7} {'x check':>8} "
              f"{'ms/node':>8} {'peak RSS MiB':>13} {'exit':>4}  load (1 min)")
        for nodes in sizes:
            folder = work / f"fleet-{nodes}{'-distinct' if options.distinct else ''}"
            if not folder.exists():
                write_fleet(folder, nodes, options.facts, smoke=not options.facts_only, distinct=options.distinct)
            docs = sum(1 for _ in folder.iterdir())
            for fmt in options.formats.split(","):
                # Paired: each round runs every tree once, so a burst of load from another
                # process falls on both sides of the comparison.
                runs: dict[str, list[tuple[float, float, int, int]]] = {name: [] for name, _ in trees}
                loads: list[float] = []
                for _ in range(options.runs):
                    for name, path in trees:
                        runs[name].append(run(["fleet", "report", str(folder), "--format", fmt,
                                               "--out", str(work / f"report-{nodes}-{name}.{fmt}")], path))
                        loads.append(os.getloadavg()[0])
                for name, _ in trees:
                    wall = statistics.median(w for w, _, _, _ in runs[name])
                    cpu = statistics.median(c for _, c, _, _ in runs[name])
                    rss = max(r for _, _, r, _ in runs[name]) / 1024
                    codes = sorted({c for _, _, _, c in runs[name]})
                    verdict = ""
                    if nodes == TARGET_NODES and name == "this":
                        verdict = "  target " + ("met" if wall < TARGET_S and rss < TARGET_MIB else "MISSED")
                    print(f"{nodes:>7} {docs:>9} {fmt:>8} {name:>8} {wall:>8.2f} {cpu:>7.2f} {wall / one:>8.1f} "
                          f"{wall / nodes * 1000:>8.2f} {rss:>13.1f} {','.join(map(str, codes)):>4}  "
                          f"{statistics.median(loads):.2f}{verdict}")
                if options.compare:
                    same = (work / f"report-{nodes}-this.{fmt}").read_bytes() == (work / f"report-{nodes}-compare.{fmt}").read_bytes()
                    print(f"{'':>7} {'':>9} {fmt:>8} {'':>8} reports {'identical' if same else 'DIFFER'}")
                sys.stdout.flush()
        print(f"done; {load()}")
    finally:
        if not options.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
