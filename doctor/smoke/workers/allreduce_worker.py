"""One rank of `fwdoctor smoke allreduce`, started by torch.distributed.run (torchrun).

Runs in the interpreter under test with only the standard library and torch. For each
size: warm-up and timed all_reduce(SUM) on a scratch buffer, then one checked all_reduce
in which every rank contributes known small integers whose float32 sum is exact in any
order, and every element of the result is compared on every rank. This mirrors
nccl-tests, which times first and then validates a separate run
(NVIDIA/nccl-tests@03a204a1 src/common.cu, BenchTime); torch's all_reduce is in place, so
timed iterations cannot also be checked without a copy inside the timed loop.

The time per size is averaged over ranks (nccl-tests does the same: Allreduce(args,
&deltaSec, average)); wrong elements are summed over ranks. Bandwidths are computed by
the parent, not here.

Output: local rank 0 of every node writes the result JSON to --result; global rank 0
prints one `fwdoctor-progress {json}` line per size on stderr. Any failure is printed as
`fwdoctor-error: rank R: ...` and written to --result, and the exit status is 1.

Hidden test hooks (environment, used by fwdoctor's own tests only):
  FWDOCTOR_SMOKE_TEST_CORRUPT_RANK=R  rank R adds 1 to one element of its contribution
  FWDOCTOR_SMOKE_TEST_HANG_RANK=R     rank R sleeps forever before the first collective
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
import traceback
from datetime import timedelta

PATTERN = 64  # the contribution repeats every 64 elements; values 1..64
ELEMENT_BYTES = 4  # float32


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", required=True, choices=["nccl", "gloo"])
    parser.add_argument("--sizes", required=True, help="comma-separated byte counts")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--result", required=True)
    return parser.parse_args(argv)


def _env_int(name: str, default: int | None = None) -> int | None:
    value = os.environ.get(name, "")
    try:
        return int(value)
    except ValueError:
        return default


def _watchdog(seconds: float, rank: int) -> None:
    """Exit on our own if the parent's kill never arrives (the parent itself died)."""

    def fire() -> None:
        time.sleep(seconds)
        print(f"fwdoctor-error: rank {rank}: still running after {seconds:.0f} s; exiting", file=sys.stderr, flush=True)
        os._exit(124)

    threading.Thread(target=fire, daemon=True).start()


def _write(path: str, data: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def contribution_table(torch, rank: int, device):
    """Rank `rank`'s 64 values: ((j + 31*rank) mod 64) + 1, small integers (exact in float32)."""
    j = torch.arange(PATTERN, dtype=torch.int64)
    return ((j + 31 * rank) % PATTERN + 1).to(torch.float32).to(device)


def expected_table(torch, world: int, device):
    """The exact sum over all ranks; at most 64 * world, far below 2**24."""
    total = torch.zeros(PATTERN, dtype=torch.float64)
    for r in range(world):
        total += contribution_table(torch, r, "cpu").to(torch.float64)
    return total.to(torch.float32).to(device)


def fill(buf, table, count: int) -> None:
    whole, tail = divmod(count, PATTERN)
    if whole:
        buf[: whole * PATTERN].view(whole, PATTERN).copy_(table.expand(whole, PATTERN))
    if tail:
        buf[whole * PATTERN : count].copy_(table[:tail])


def count_wrong(buf, table, count: int) -> int:
    whole, tail = divmod(count, PATTERN)
    wrong = 0
    if whole:
        wrong += int((buf[: whole * PATTERN].view(whole, PATTERN) != table).sum().item())
    if tail:
        wrong += int((buf[whole * PATTERN : count] != table[:tail]).sum().item())
    return wrong


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    rank = _env_int("RANK", 0) or 0
    local_rank = _env_int("LOCAL_RANK", 0) or 0
    world = _env_int("WORLD_SIZE", 1) or 1
    _watchdog(args.timeout + 30.0, rank)
    info: dict = {"rank": rank, "world_size": world, "backend": args.backend, "hostname": socket.gethostname()}
    try:
        result = run(args, rank, local_rank, world, info)
    except BaseException as exc:  # report everything, including NCCL/gloo RuntimeErrors
        text = f"{type(exc).__name__}: {exc}".strip()
        print(f"fwdoctor-error: rank {rank}: {text}", file=sys.stderr, flush=True)
        traceback.print_exc(file=sys.stderr)
        if local_rank == 0:
            _write(args.result, {**info, "ok": False, "error": text})
        return 1
    if local_rank == 0:
        _write(args.result, result)
    return 0


def run(args: argparse.Namespace, rank: int, local_rank: int, world: int, info: dict) -> dict:
    import torch
    import torch.distributed as dist

    info["torch"] = torch.__version__
    info["nccl_env"] = {k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")}
    try:
        info["nccl_version"] = ".".join(str(p) for p in torch.cuda.nccl.version())
    except Exception:  # a CPU build of torch, or no libnccl
        info["nccl_version"] = None
    if args.backend == "nccl":
        if not torch.cuda.is_available():
            raise RuntimeError("backend nccl needs a GPU, but torch.cuda.is_available() is False in this rank")
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        info["device"] = f"cuda:{local_rank} {torch.cuda.get_device_name(device)}"
        sync = torch.cuda.synchronize
    else:
        device = torch.device("cpu")
        info["device"] = "cpu"

        def sync() -> None:
            return None

    kwargs = {"backend": args.backend, "timeout": timedelta(seconds=args.timeout)}
    if args.backend == "nccl":
        kwargs["device_id"] = device  # binds the communicator eagerly; avoids a guessed device
    dist.init_process_group(**kwargs)
    try:
        return sweep(args, torch, dist, device, sync, rank, world, info)
    finally:
        dist.destroy_process_group()


def sweep(args, torch, dist, device, sync, rank: int, world: int, info: dict) -> dict:
    if _env_int("FWDOCTOR_SMOKE_TEST_HANG_RANK") == rank:
        print(f"fwdoctor-test-hook: rank {rank} hangs", file=sys.stderr, flush=True)
        time.sleep(10**6)
    corrupt = _env_int("FWDOCTOR_SMOKE_TEST_CORRUPT_RANK") == rank
    sizes = [int(s) for s in args.sizes.split(",") if s]
    counts = [max(1, size // ELEMENT_BYTES) for size in sizes]
    buf = torch.zeros(max(counts), dtype=torch.float32, device=device)
    mine = contribution_table(torch, rank, device)
    expected = expected_table(torch, world, device)
    rows = []
    for count in counts:
        view = buf[:count]
        view.zero_()  # zeros stay zeros under SUM: the timed loop never overflows
        for _ in range(args.warmup):
            dist.all_reduce(view)
        sync()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.iters):
            dist.all_reduce(view)
        sync()
        elapsed = (time.perf_counter() - start) / max(1, args.iters)
        fill(view, mine, count)
        if corrupt:
            view[count // 2] += 1.0
        dist.all_reduce(view)
        sync()
        wrong = count_wrong(view, expected, count)
        stats = torch.tensor([elapsed, float(wrong)], dtype=torch.float64, device=device)
        dist.all_reduce(stats)
        row = {"bytes": count * ELEMENT_BYTES, "count": count, "time_s": stats[0].item() / world, "wrong": int(stats[1].item())}
        rows.append(row)
        if rank == 0:
            print("fwdoctor-progress " + json.dumps({**row, "world_size": world}), file=sys.stderr, flush=True)
    return {**info, "ok": True, "dtype": "float32", "op": "sum", "warmup": args.warmup, "iters": args.iters, "rows": rows}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
