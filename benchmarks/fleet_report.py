"""How does `fwdoctor fleet report` scale with the number of nodes?

Builds a synthetic fleet from real-shaped facts (tests/data/fleet-report/facts-h100x8-r580.json,
the facts of an 8 x H100 host; or --facts FILE, e.g. `fwdoctor facts > host.json` here)
with a few odd nodes (one on driver 550, one on another NCCL, one with a GPU missing, one
with a slow all-reduce), then times whole `fwdoctor fleet report DIR --format F --out FILE` processes for 100,
1,000 and 10,000 nodes (text, json, html) and prints wall time, peak RSS of the process
and the ratio to one `fwdoctor check --facts FILE` (the target: 1,000 nodes <= 20x that).
The reading is streamed whatever the format; the JSON document itself (every node's row)
is built whole before it is written, so its size, not the reading, grows with the fleet.

Each node is one facts file plus one smoke document (`kind: smoke`, GPU kernel and
all-reduce results) unless --facts-only. The smoke figures are made up (no GPU records
real ones here): GEMM ~700 TFLOP/s fp16 per H100, busbw ~180 GB/s over 16 ranks.

    python benchmarks/fleet_report.py [--nodes 100,1000,10000] [--formats text,json,html] [--facts FILE] [--facts-only] [--keep DIR]

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


def write_fleet(folder: Path, nodes: int, facts_file: Path = FACTS, smoke: bool = True) -> None:
    """`nodes` nodes into `folder`: node-NNNN.facts.json (+ node-NNNN.smoke.json)."""
    folder.mkdir(parents=True, exist_ok=True)
    base = json.loads(facts_file.read_text())
    kernel_cpu = json.loads(KERNEL_CPU.read_text())
    allreduce = json.loads(SMOKE_ALL.read_text())["allreduce"][0]
    # One serialisation for the common case; the odd nodes get their own.
    marker = "@@NODE@@"
    common = json.dumps(_with_host(base, marker), indent=1)
    for index in range(nodes):
        name = node_name(index)
        if index in (ODD_DRIVER, ODD_NCCL, ODD_GPU):
            text = json.dumps(_with_host(odd_facts(base, index), name), indent=1)
        else:
            text = common.replace(marker, name)
        (folder / f"{name}.facts.json").write_text(text)
        if smoke:
            (folder / f"{name}.smoke.json").write_text(json.dumps(_with_host(smoke_doc(index, kernel_cpu, allreduce), name)))


# ----------------------------------------------------------------------------- measuring
# Runs the CLI in this interpreter and reports its own peak RSS (ru_maxrss, KiB on Linux).
_WRAPPER = r"""
import resource, sys
from fwdoctor.cli import main
code = 0
try:
    main.main(args=sys.argv[1:], prog_name="fwdoctor", standalone_mode=True)
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 1
sys.stderr.write("MAXRSS_KIB=%d\n" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(code)
"""


def run(args: list[str]) -> tuple[float, int, int]:
    """(wall seconds, peak RSS KiB, exit code) of one fwdoctor process."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _WRAPPER, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=3600, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    wall = time.perf_counter() - start
    rss = next((int(line.split("=")[1]) for line in done.stderr.splitlines() if line.startswith("MAXRSS_KIB=")), -1)
    return wall, rss, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="100,1000,10000")
    parser.add_argument("--facts", type=Path, default=FACTS, help="a facts file to clone (default: the committed fixture)")
    parser.add_argument("--facts-only", action="store_true", help="no smoke documents")
    parser.add_argument("--runs", type=int, default=3, help="runs of the baseline (median)")
    parser.add_argument("--formats", default="text,json,html", help="report formats to time (written with --out)")
    parser.add_argument("--keep", type=Path, help="build the fleets under this folder and keep them")
    options = parser.parse_args()
    sizes = [int(n) for n in options.nodes.split(",")]
    work = options.keep or Path(tempfile.mkdtemp(prefix="fwdoctor-fleet-bench-"))
    try:
        base = [run(["check", "--facts", str(options.facts), "--json"]) for _ in range(options.runs)]
        one = statistics.median(w for w, _, _ in base)
        print(f"baseline: one `fwdoctor check --facts` {one:.3f} s, peak RSS {max(r for _, r, _ in base) / 1024:.1f} MiB")
        print(f"{'nodes':>7} {'documents':>9} {'format':>8} {'wall s':>8} {'x check':>8} {'ms/node':>8} {'peak RSS MiB':>13} {'exit':>4}")
        for nodes in sizes:
            folder = work / f"fleet-{nodes}"
            if not folder.exists():
                write_fleet(folder, nodes, options.facts, smoke=not options.facts_only)
            docs = sum(1 for _ in folder.iterdir())
            for fmt in options.formats.split(","):
                wall, rss, code = run(["fleet", "report", str(folder), "--format", fmt, "--out", str(work / f"report-{nodes}.{fmt}")])
                print(f"{nodes:>7} {docs:>9} {fmt:>8} {wall:>8.2f} {wall / one:>8.1f} {wall / nodes * 1000:>8.2f} {rss / 1024:>13.1f} {code:>4}")
            sys.stdout.flush()
    finally:
        if not options.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
