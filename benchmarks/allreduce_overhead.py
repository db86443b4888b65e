"""Does `fwdoctor smoke allreduce` measure what a bare torch.distributed loop measures?

Runs, on the same gloo setup (torchrun, N CPU ranks, same sizes, warm-up and iteration
counts), first fwdoctor's sweep (fwdoctor.smoke.allreduce.run, which also checks every
element in a separate, untimed all-reduce), then a bare loop of dist.all_reduce calls
timed the same way, and prints both busbw figures per size and the ratio
fwdoctor / bare (target: close to 1.0; the run-to-run noise of gloo on a shared CPU is
itself tens of percent, so read the average, not a single size).

    python benchmarks/allreduce_overhead.py [--python PY] [--nproc 2] [--max-bytes 16M] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fwdoctor.smoke import allreduce as ar  # noqa: E402
from fwdoctor.smoke import bandwidth as bw  # noqa: E402
from fwdoctor.runner import stream  # noqa: E402

BARE = r'''
import json, os, sys, time
import torch, torch.distributed as dist
sizes = [int(s) for s in sys.argv[1].split(",")]
warmup, iters, out = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
buf = torch.zeros(max(max(1, s // 4) for s in sizes), dtype=torch.float32)
rows = []
for size in sizes:
    view = buf[: max(1, size // 4)]
    for _ in range(warmup):
        dist.all_reduce(view)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(view)
    elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(elapsed)
    rows.append({"bytes": view.numel() * 4, "time_s": elapsed.item() / world})
if rank == 0:
    with open(out, "w") as handle:
        json.dump({"world_size": world, "rows": rows}, handle)
dist.destroy_process_group()
'''


def bare_run(python: str, nproc: int, sizes: list[int], warmup: int, iters: int, timeout: float) -> dict:
    workdir = tempfile.mkdtemp(prefix="fwdoctor-bench-")
    try:
        script = os.path.join(workdir, "bare.py")
        Path(script).write_text(BARE)
        out = os.path.join(workdir, "out.json")
        argv = [python, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1", "--nproc-per-node", str(nproc), "--max-restarts", "0",
                script, ",".join(map(str, sizes)), str(warmup), str(iters), out]
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        launched = stream(argv, timeout=timeout, env=env)
        if not launched.ok:
            raise SystemExit(f"bare loop failed: {launched.stderr_tail[-2000:]}")
        return json.loads(Path(out).read_text())
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_py = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "python")
    parser.add_argument("--python", default=default_py if os.path.exists(default_py) else sys.executable)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--min-bytes", default="8")
    parser.add_argument("--max-bytes", default="16M")
    parser.add_argument("--factor", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=2, help="alternate fwdoctor and bare runs this many times")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    sizes = bw.sweep_sizes(bw.parse_bytes(args.min_bytes), bw.parse_bytes(args.max_bytes), args.factor)
    opts = ar.AllreduceOptions(python=args.python, backend="gloo", nproc=args.nproc, min_bytes=sizes[0], max_bytes=sizes[-1],
                               factor=args.factor, warmup=args.warmup, iters=args.iters, timeout=args.timeout)
    ours: dict[int, list[float]] = {s: [] for s in sizes}
    bare: dict[int, list[float]] = {s: [] for s in sizes}
    for _ in range(args.repeat):
        result = ar.run(opts)
        if result.status != "pass":
            print(f"fwdoctor run failed: {result.message} {result.error}", file=sys.stderr)
            return 1
        for row in result.details["rows"]:
            ours[_size_key(row["bytes"], sizes)].append(row["busbw_gbps"])
        data = bare_run(args.python, args.nproc, sizes, args.warmup, args.iters, args.timeout)
        for row in data["rows"]:
            bare[_size_key(row["bytes"], sizes)].append(bw.busbw_gbps(row["bytes"], row["time_s"], data["world_size"]))
    print(f"gloo, {args.nproc} ranks, warm-up {args.warmup}, iterations {args.iters}, best of {args.repeat} runs each; busbw in GB/s (1e9)")
    print(f"{'size':>10} {'fwdoctor':>12} {'bare loop':>12} {'ratio':>7}")
    ratios = []
    for s in sizes:
        a, b = max(ours[s]), max(bare[s])
        ratio = a / b if b else float("nan")
        ratios.append(ratio)
        print(f"{bw.human_bytes(s):>10} {a:>12.4g} {b:>12.4g} {ratio:>7.3f}")
    avg_ours = bw.average([max(v) for v in ours.values()])
    avg_bare = bw.average([max(v) for v in bare.values()])
    print(f"{'average':>10} {avg_ours:>12.4g} {avg_bare:>12.4g} {avg_ours / avg_bare if avg_bare else float('nan'):>7.3f}")
    finite = sorted(r for r in ratios if r == r and r > 0)
    if finite:
        # One noisy size (a busy neighbour on a shared CPU) moves the average; not the median.
        print(f"median per-size ratio: {statistics.median(finite):.3f} over {len(finite)} sizes")
    return 0


def _size_key(nbytes: int, sizes: list[int]) -> int:
    # The workers round a size down to whole float32 elements; map it back to the sweep size.
    for s in sizes:
        if max(1, s // 4) * 4 == nbytes:
            return s
    raise KeyError(nbytes)


if __name__ == "__main__":
    sys.exit(main())
