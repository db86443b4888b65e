"""`fwdoctor smoke allreduce`: a checked, timed all-reduce sweep through torch.distributed.

fwdoctor starts torch.distributed.run (torchrun) in the interpreter under test; torchrun
starts one worker per GPU (NCCL) or `--nproc` workers on CPUs (gloo), and on several nodes
meets the other nodes' torchruns through a c10d rendezvous at --rdzv-endpoint. Each
worker (workers/allreduce_worker.py) sweeps the sizes and checks every element; local
rank 0 writes the result file that this module turns into a `SmokeResult`, computing
algbw/busbw with doctor/smoke/bandwidth.py. The whole run has one timeout; a hang is
killed, every process of it, and reported with what to try.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

from fwdoctor import runner
from fwdoctor.smoke import bandwidth as bw
from fwdoctor.smoke import nccl_log
from fwdoctor.smoke.result import FAIL, PASS, SKIPPED, SmokeResult, failed
from fwdoctor.smoke.workers import worker_path

DEFAULT_MIN_BYTES = 8
DEFAULT_MAX_BYTES = 256 * 1024**2
DEFAULT_FACTOR = 2
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_RDZV_ID = "fwdoctor-smoke"
# Each rank's NCCL_DEBUG output goes to its own file: NCCL expands %h (host) and %p (pid)
# in NCCL_DEBUG_FILE (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/logging.html).
NCCL_LOG_PATTERN = "nccl-%h-%p.log"
# INIT carries the "Channel .. via P2P/SHM/NET" lines (transport/p2p.cc logs them with
# NCCL_INIT|NCCL_P2P), the version, rings and trees; ENV the "... set by environment to"
# lines; NET the "NET/IB : Using [0]mlx5_0:1/IB" device lists.
NCCL_DEBUG_SUBSYS = "INIT,ENV,NET"

HANG_HINTS = {
    "nccl": (
        "rerun with NCCL_DEBUG=INFO to see the transport each rank picked and where it stops",
        "try NCCL_P2P_DISABLE=1 (broken PCIe peer-to-peer / IOMMU / ACS)",
        "check /dev/shm: NCCL needs room there (docker run --shm-size=16g or --ipc=host)",
        "on several nodes, set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on",
    ),
    "gloo": (
        "set GLOO_SOCKET_IFNAME to the interface the ranks reach each other on",
        "check that every node can reach the rendezvous endpoint (firewall, hostname resolution)",
    ),
}


@dataclass(frozen=True)
class AllreduceOptions:
    python: str = sys.executable
    backend: str | None = None  # None: nccl when the target sees GPUs, else skipped
    nproc: int | None = None  # per node; None: one per GPU (nccl) or 2 (gloo)
    nnodes: int = 1
    node_rank: int = 0
    rdzv_endpoint: str | None = None
    rdzv_id: str = DEFAULT_RDZV_ID
    min_bytes: int = DEFAULT_MIN_BYTES
    max_bytes: int = DEFAULT_MAX_BYTES
    factor: int = DEFAULT_FACTOR
    warmup: int = 5  # nccl-tests' defaults: -w 5 -n 20
    iters: int = 20
    timeout: float = DEFAULT_TIMEOUT_S
    min_busbw: float | None = None
    env: Mapping[str, str] | None = None  # the workers' environment (default: ours)

    def validate(self, need_endpoint: bool = True) -> list[int]:
        """The sweep sizes; raises ValueError naming the bad option.

        `need_endpoint=False` for --emit slurm, where the job finds node 0 itself."""
        sizes = bw.sweep_sizes(self.min_bytes, self.max_bytes, self.factor)
        if self.backend not in (None, "nccl", "gloo"):
            raise ValueError(f"--backend {self.backend}: expected nccl or gloo")
        if self.nproc is not None and self.nproc < 1:
            raise ValueError(f"--nproc must be at least 1, got {self.nproc}")
        if self.nnodes < 1:
            raise ValueError(f"--nnodes must be at least 1, got {self.nnodes}")
        if not 0 <= self.node_rank < self.nnodes:
            raise ValueError(f"--node-rank {self.node_rank} is outside 0..{self.nnodes - 1}")
        if self.nnodes > 1 and not self.rdzv_endpoint and need_endpoint:
            raise ValueError("--nnodes > 1 needs --rdzv-endpoint HOST:PORT (node 0's address)")
        if self.rdzv_endpoint:
            host, sep, port = self.rdzv_endpoint.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"--rdzv-endpoint {self.rdzv_endpoint}: expected HOST:PORT")
        if self.warmup < 0 or self.iters < 1:
            raise ValueError("--warmup must be >= 0 and --iters >= 1")
        if self.timeout <= 0:
            raise ValueError("--timeout must be positive")
        return sizes


@dataclass
class Plan:
    """What will be launched: resolved backend and process count, or why nothing runs."""

    backend: str | None
    nproc: int
    skip_reason: str = ""
    gpu_count: int | None = None
    notes: list[str] = field(default_factory=list)


def gpu_count(python: str, timeout: float = 60.0) -> tuple[int | None, str]:
    """torch.cuda.device_count() in the target interpreter: (count, "") or (None, why)."""
    code = "import torch, sys; sys.stdout.write(str(torch.cuda.device_count()))"
    result = runner.run([python, "-c", code], timeout=timeout)
    if result.error:
        return None, f"{python}: {result.error}"
    if not result.ok:
        return None, result.describe_failure()
    text = result.stdout.strip()
    return (int(text), "") if text.isdigit() else (None, f"unexpected answer from {python}: {text[:100]!r}")


def plan(opts: AllreduceOptions, count_gpus: Callable[[str], tuple[int | None, str]] = gpu_count) -> Plan:
    if opts.backend == "gloo":
        return Plan("gloo", opts.nproc or 2)
    count, why = count_gpus(opts.python)
    if count is None:
        return Plan(opts.backend, 0, skip_reason=f"could not ask torch for the GPU count: {why}")
    if count == 0:
        if opts.backend == "nccl":
            return Plan("nccl", 0, skip_reason="backend nccl needs GPUs, and torch sees none", gpu_count=0)
        return Plan(None, 0, skip_reason="no GPU visible to torch: nothing to all-reduce over NCCL (use --backend gloo --nproc N to test CPU collectives)", gpu_count=0)
    nproc = opts.nproc or count
    p = Plan("nccl", nproc, gpu_count=count)
    if nproc > count:
        p.notes.append(f"--nproc {nproc} is more than the {count} GPUs torch sees: ranks will share GPUs")
    return p


def launcher_argv(opts: AllreduceOptions, backend: str, nproc: int, sizes: list[int], result_path: str) -> list[str]:
    """The torchrun command line (also what --emit prints beside the fwdoctor one)."""
    argv = [opts.python, "-m", "torch.distributed.run", "--nnodes", str(opts.nnodes), "--nproc-per-node", str(nproc), "--max-restarts", "0"]
    if opts.nnodes == 1 and not opts.rdzv_endpoint:
        argv.append("--standalone")  # a c10d store on a free local port
    else:
        argv += ["--rdzv-backend", "c10d", "--rdzv-endpoint", str(opts.rdzv_endpoint), "--rdzv-id", opts.rdzv_id]
        conf = [f"join_timeout={int(opts.timeout)}"]
        if opts.node_rank > 0:
            # Only node 0 hosts the rendezvous store. Without this, every agent whose
            # address matches the endpoint (all of them on 127.0.0.1) races to host it.
            conf.append("is_host=0")
        argv += ["--rdzv-conf", ",".join(conf)]
    argv += [
        worker_path("allreduce_worker"),
        "--backend", backend,
        "--sizes", ",".join(str(s) for s in sizes),
        "--warmup", str(opts.warmup),
        "--iters", str(opts.iters),
        "--timeout", str(opts.timeout),
        "--result", result_path,
    ]
    return argv


def run(opts: AllreduceOptions, progress: Callable[[dict], None] | None = None, planned: Plan | None = None) -> SmokeResult:
    """Plan, launch, interpret. Never raises for the run's own failures."""
    sizes = opts.validate()
    p = planned or plan(opts)
    if p.skip_reason:
        status = FAIL if p.backend == "nccl" or p.gpu_count is None else SKIPPED
        return SmokeResult("allreduce", status, p.skip_reason, details={"backend": p.backend})
    assert p.backend is not None
    workdir = tempfile.mkdtemp(prefix="fwdoctor-allreduce-")
    try:
        result_path = os.path.join(workdir, "result.json")
        argv = launcher_argv(opts, p.backend, p.nproc, sizes, result_path)
        env = dict(os.environ if opts.env is None else opts.env)
        env.setdefault("OMP_NUM_THREADS", "1")  # what torchrun would set, without its banner
        if p.backend == "nccl":
            env = nccl_debug_env(env, workdir)

        def on_line(line: str) -> None:
            if progress is not None and line.startswith("fwdoctor-progress "):
                try:
                    progress(json.loads(line[len("fwdoctor-progress "):]))
                except ValueError:
                    pass

        launched = runner.stream(argv, timeout=opts.timeout, env=env, on_stderr_line=on_line)
        data = _read_result(result_path)
        logs = read_rank_logs(workdir) if p.backend == "nccl" else []
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = interpret(opts, p, launched, data)
    return with_nccl_log(result, logs) if p.backend == "nccl" else result


def nccl_debug_env(env: Mapping[str, str], workdir: str) -> dict[str, str]:
    """The workers' environment with NCCL's INFO log on, one file per rank in `workdir`.

    NCCL_DEBUG becomes INFO whatever it was (the report needs the INFO lines); a
    NCCL_DEBUG_SUBSYS the user chose is kept (ours is the minimum that names transports)."""
    out = dict(env)
    out["NCCL_DEBUG"] = "INFO"
    out.setdefault("NCCL_DEBUG_SUBSYS", NCCL_DEBUG_SUBSYS)
    out["NCCL_DEBUG_FILE"] = os.path.join(workdir, NCCL_LOG_PATTERN)
    return out


def read_rank_logs(workdir: str, limit: int = 8 * 1024 * 1024) -> list[str]:
    """The text of every rank's NCCL_DEBUG_FILE in `workdir` (sorted by name), each cut at `limit`."""
    texts = []
    try:
        names = sorted(n for n in os.listdir(workdir) if n.startswith("nccl-") and n.endswith(".log"))
    except OSError:
        return []
    for name in names:
        try:
            with open(os.path.join(workdir, name), encoding="utf-8", errors="replace") as handle:
                texts.append(handle.read(limit))
        except OSError:
            continue
    return texts


def with_nccl_log(result: SmokeResult, logs: list[str]) -> SmokeResult:
    """`result` with what NCCL's own log says: details["nccl"] (nccl_log.summarize) and, on
    a pass, its one-line description in the message. No log is said, never guessed."""
    summary = nccl_log.summarize(logs)
    summary["rank_logs"] = len(logs)
    text = nccl_log.describe(summary) if logs else "no NCCL_DEBUG output captured (no rank wrote its NCCL_DEBUG_FILE)"
    details = {**result.details, "nccl": summary, "nccl_transport": text}
    message = f"{result.message}; {text}" if result.status == PASS else result.message
    return replace(result, message=message, details=details)


def _read_result(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _error_text(launched: runner.StreamResult) -> str:
    """The stderr tail with the workers' own `fwdoctor-error:` lines last (the best summary)."""
    own = [line for line in launched.stderr_tail.splitlines() if line.startswith("fwdoctor-error:")]
    return "\n".join([launched.stderr_tail, *own])


def interpret(opts: AllreduceOptions, p: Plan, launched: runner.StreamResult, data: dict | None) -> SmokeResult:
    backend = p.backend or "?"
    base = {"backend": backend, "nproc_per_node": p.nproc, "nnodes": opts.nnodes, "node_rank": opts.node_rank, "timeout_s": opts.timeout}
    hints = HANG_HINTS.get(backend, ())
    if launched.error:
        return failed("allreduce", f"could not start {launched.argv[0]}: {launched.error}", launched.error, base)
    if launched.timed_out:
        message = f"no result within {opts.timeout:g} s: the all-reduce hung and was killed ({len(launched.killed)} processes)"
        text = _error_text(launched)
        res = failed("allreduce", message, text, {**base, "killed_pids": list(launched.killed)}, hint="; ".join(hints))
        return res
    if data is None:
        text = _error_text(launched)
        return failed("allreduce", f"the launcher exited with status {launched.returncode} and no result", text or f"exit status {launched.returncode}", base, hint="" if text else "; ".join(hints))
    if not data.get("ok"):
        return failed("allreduce", f"rank {data.get('rank', '?')} failed: {data.get('error', '?')}", f"{_error_text(launched)}\n{data.get('error', '')}", {**base, **_meta(data)})
    if p.notes:
        base["notes"] = list(p.notes)
    return judge(opts, backend, data, base)


def _meta(data: Mapping) -> dict:
    keys = ("world_size", "torch", "nccl_version", "nccl_env", "device", "hostname", "dtype", "op", "warmup", "iters")
    return {k: data.get(k) for k in keys if k in data}


def rows_with_bandwidth(rows: list[dict], world: int) -> list[dict]:
    out = []
    for row in rows:
        nbytes, seconds = int(row["bytes"]), float(row["time_s"])
        out.append({
            "bytes": nbytes,
            "count": int(row.get("count", nbytes // 4)),
            "time_us": round(seconds * 1e6, 3),
            # Unrounded: small sizes over gloo are well below 0.0001 GB/s.
            "algbw_gbps": bw.algbw_gbps(nbytes, seconds),
            "busbw_gbps": bw.busbw_gbps(nbytes, seconds, world),
            "wrong": int(row.get("wrong", 0)),
        })
    return out


def judge(opts: AllreduceOptions, backend: str, data: Mapping, base: dict) -> SmokeResult:
    world = int(data.get("world_size") or 1)
    try:
        rows = rows_with_bandwidth(list(data.get("rows") or []), world)
    except (KeyError, TypeError, ValueError) as exc:
        return failed("allreduce", f"unreadable result from the workers: {exc}", str(exc), base)
    avg = bw.average([r["busbw_gbps"] for r in rows])
    wrong = sum(r["wrong"] for r in rows)
    details = {**base, **_meta(data), "rows": rows, "avg_busbw_gbps": avg, "wrong_total": wrong, "min_busbw_gbps": opts.min_busbw}
    span = f"{bw.human_bytes(rows[0]['bytes'])}..{bw.human_bytes(rows[-1]['bytes'])}" if rows else "no sizes"
    where = f"{world} ranks ({opts.nnodes} node{'s' if opts.nnodes > 1 else ''})"
    if world == 1:
        where += ", busbw 0 by definition with one rank"  # 2(n-1)/n = 0: nothing crosses a bus
    if wrong:
        bad = [bw.human_bytes(r["bytes"]) for r in rows if r["wrong"]]
        return SmokeResult("allreduce", FAIL, f"{backend}, {where}: {wrong} wrong elements (sizes {', '.join(bad)}); the sums must be exact", details=details,
                           error=f"{wrong} wrong elements", hint="a corrupting transport or GPU: rerun with NCCL_DEBUG=INFO and NCCL_P2P_DISABLE=1 / NCCL_SHM_DISABLE=1 to isolate it" if backend == "nccl" else "")
    if opts.min_busbw is not None and avg < opts.min_busbw:
        return SmokeResult("allreduce", FAIL, f"{backend}, {where}: average busbw {avg:.4g} GB/s is below --min-busbw {opts.min_busbw:g} ({span})", details=details,
                           error=f"average busbw {avg:.4g} GB/s < {opts.min_busbw:g} GB/s",
                           hint="NCCL_DEBUG=INFO shows the transport (NET/Socket instead of IB, P2P disabled) and the rings/trees chosen" if backend == "nccl" else "")
    return SmokeResult("allreduce", PASS, f"{backend}, {where}: {len(rows)} sizes {span} exact; average busbw {avg:.4g} GB/s", details=details)


def render_table(result: SmokeResult) -> str:
    """The nccl-tests-like table for a result that has rows (empty string otherwise)."""
    d = result.details
    rows = d.get("rows")
    if not rows:
        return ""
    nccl = d.get("nccl_version") or "none"
    used = "" if d.get("backend") == "nccl" else f" (loaded by torch, not used by {d.get('backend')})"
    env = " ".join(f"{k}={v}" for k, v in (d.get("nccl_env") or {}).items()) or "(none set)"
    lines = [
        f"# backend {d.get('backend')}, {d.get('world_size')} ranks, torch {d.get('torch')}, NCCL {nccl}{used}",
        f"# NCCL environment: {env}",
        *([f"# NCCL chose: {d['nccl_transport']}"] if d.get("nccl_transport") else []),
        f"# {d.get('dtype', 'float32')} {d.get('op', 'sum')}, warm-up {d.get('warmup')}, timed iterations {d.get('iters')}; GB/s are 1e9 bytes/s",
        f"#{'size(B)':>12} {'count':>11} {'time(us)':>11} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12} {'#wrong':>7}",
    ]
    for r in rows:
        lines.append(f" {r['bytes']:>12} {r['count']:>11} {r['time_us']:>11.1f} {r['algbw_gbps']:>12.4g} {r['busbw_gbps']:>12.4g} {r['wrong']:>7}")
    lines.append(f"# average busbw: {d.get('avg_busbw_gbps'):.4g} GB/s")
    return "\n".join(lines) + "\n"


def progress_line(row: dict) -> str:
    """One line per size on stderr while a sweep runs (rows as the worker prints them)."""
    world = row.get("world_size")
    nbytes, seconds = int(row.get("bytes", 0)), float(row.get("time_s", 0.0))
    text = f"allreduce {bw.human_bytes(nbytes):>10}: {seconds * 1e6:10.1f} us  algbw {bw.algbw_gbps(nbytes, seconds):8.3f} GB/s"
    if world:
        text += f"  busbw {bw.busbw_gbps(nbytes, seconds, world):8.3f} GB/s"
    return text + f"  wrong {row.get('wrong', 0)}"
