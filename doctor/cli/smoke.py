"""`fwdoctor smoke kernel|allreduce|all`: parse, call, render. The logic lives beside it.

Exit codes as everywhere: 0 nothing failed (a skip is not a failure, and says so),
1 a test failed or a gate (--min-busbw) was missed, 2 fwdoctor itself failed.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from typing import Any

import click

from fwdoctor import interpreter
from fwdoctor.cli.common import fail, facts_from, kb_option, load_kb, seconds, with_options
from fwdoctor.cli.output import emit_json, note, waiting
from fwdoctor.engine import judge
from fwdoctor.host import Host
from fwdoctor.render.report import to_json
from fwdoctor.rules import RULES
from fwdoctor.smoke import allreduce as ar
from fwdoctor.smoke import compile as nvcc_smoke
from fwdoctor.smoke import emit as emitter
from fwdoctor.smoke import kernel
from fwdoctor.smoke import transport
from fwdoctor.smoke.bandwidth import parse_bytes
from fwdoctor.smoke.result import exit_code, render_text
from fwdoctor.smoke.suite import SuiteResult, render_summary
from fwdoctor.sources import SourceRequest, live_provenance, utc_now


def _seconds(ctx: click.Context, param: click.Parameter, value: float) -> float:
    return seconds(value, "--timeout")


_PYTHON_KEY = "fwdoctor.smoke.python"


def _python(value: str | None, announce: bool = True) -> str:
    """The interpreter under test, by fwdoctor.interpreter's policy (--python, else the
    active venv/conda env, else python3 on PATH); exit 2 naming it when it cannot be used.
    `announce` says on stderr which one and why (stdout stays the report)."""
    try:
        choice = interpreter.resolve(Host.live_host(), value)
    except interpreter.InterpreterError as exc:
        fail(str(exc))
    if announce:
        note(f"fwdoctor: interpreter under test: {choice.describe()}")
    # The JSON report names it too (_emit reads it back from the command's context).
    click.get_current_context().meta[_PYTHON_KEY] = {"path": choice.path, "why": choice.why}
    return str(choice.path)


_STARTED_KEY = "fwdoctor.smoke.started"


_REPORT_FORMAT = click.option("--report-format", "fmt", type=click.Choice(["text", "json", "ctrf", "junit"]), default=None,
                              help="json as --json; ctrf (Common Test Report Format JSON) or junit (JUnit XML) for CI dashboards.")


def _emit(results: list, as_json: bool, extra_text: str = "", fmt: str | None = None) -> int:
    code = exit_code(results)
    if fmt in ("ctrf", "junit"):
        from fwdoctor.render import testreport

        started = click.get_current_context().meta.get(_STARTED_KEY)
        elapsed = _elapsed(started)
        status = {"pass": "passed", "fail": "failed", "skipped": "skipped", "skip": "skipped"}
        tests = [{"name": r.test, "status": status.get(r.status, "other"), "duration": 0,
                  "message": r.message if r.status != "fail" else (r.error or r.message)} for r in results]
        if fmt == "ctrf":
            click.echo(testreport.ctrf("fwdoctor smoke", tests, elapsed, extra={"exit_code": code}), nl=False)
        else:
            click.echo(testreport.junit("fwdoctor smoke", "fwdoctor.smoke", tests, elapsed), nl=False)
        return code
    if as_json or fmt == "json":
        meta = click.get_current_context().meta
        emit_json("smoke", {**live_provenance(meta.get(_STARTED_KEY)).to_json(),
                            "exit_code": code, "python": meta.get(_PYTHON_KEY),
                            "results": [r.to_json() for r in results]})
    else:
        click.echo(extra_text + render_text(results), nl=False)
    return code


@click.group("smoke")
def smoke() -> None:
    """Run real work on this host: GPU kernels, nvcc compiles, all-reduce.

    \b
    Examples:
      fwdoctor smoke kernel          # every GPU: matmul, elementwise, reduction,
                                     # conv2d (cuDNN), AMP steps
      fwdoctor smoke kernel --cpu    # the same on the CPU (oneDNN, bf16 autocast)
      fwdoctor smoke kernel --compile-only --arch 8.0 --arch 9.0
      fwdoctor smoke allreduce --min-busbw 100   # one rank per GPU over NCCL
      fwdoctor smoke allreduce --backend gloo --nproc 2 --max-bytes 1M
      fwdoctor smoke all --report smoke.json     # check --deep, kernel, allreduce
    """
    # The JSON's collected_at: when the test began, not when it ended minutes later.
    click.get_current_context().meta[_STARTED_KEY] = utc_now()


# ----------------------------------------------------------------------------- kernel
@smoke.command("kernel")
@click.option("--python", "python", help="Interpreter under test (default: the active venv/conda env, else python3 on PATH).")
@click.option("--device", "devices", type=int, multiple=True, metavar="N", help="Only this GPU index (repeatable).")
@click.option("--compile-only", is_flag=True, help="Compile a small CUDA kernel with the active nvcc instead (no torch).")
@click.option("--arch", "archs", multiple=True, metavar="CC", help="With --compile-only: target 7.5, sm_80, 9.0+PTX ... (repeatable; default: this host's GPUs).")
@click.option("--timeout", type=float, default=300.0, show_default=True, callback=_seconds, help="Seconds allowed for the whole kernel test.")
@click.option("--no-gemm", is_flag=True, help="Skip the GEMM TFLOP/s figure.")
@click.option("--cpu", is_flag=True, help="Run the same checks on the CPU (oneDNN conv2d, bf16 autocast) instead of GPUs.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@_REPORT_FORMAT
def kernel_cmd(python, devices, compile_only, archs, timeout, no_gemm, cpu, as_json, fmt) -> None:
    """Check kernels on every GPU against a CPU reference (or compile with nvcc).

    Runs in a child process of the interpreter under test, with a timeout. Without a GPU
    (and without --compile-only) nothing runs: the result says "skipped".
    """
    if archs and not compile_only:
        fail("--arch only applies with --compile-only")
    if timeout <= 0:
        fail("--timeout must be positive")
    if cpu and (compile_only or devices):
        fail("--cpu runs on the CPU: it takes neither --compile-only nor --device")
    sys.exit(_emit(kernel_results(python, devices, compile_only, archs, timeout, not no_gemm, cpu=cpu), as_json, fmt=fmt))


def kernel_results(python, devices, compile_only, archs, timeout, gemm=True, announce=True, cpu=False) -> list:
    if compile_only:
        try:
            return nvcc_smoke.run_compile_only(list(archs), dict(os.environ))
        except ValueError as exc:
            fail(f"--arch: {exc}")
    target = _python(python, announce)
    return waiting(f"fwdoctor: smoke kernel on the {'CPU' if cpu else 'GPUs'}", kernel.run, target, list(devices) or None, timeout,
                   Host.live_host(), gemm=gemm, cpu=cpu)


# ----------------------------------------------------------------------------- allreduce
def _bytes(ctx: Any, param: Any, value: Any) -> Any:
    if value is None or isinstance(value, int):
        return value
    try:
        return parse_bytes(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


_allreduce_options = [
    click.option("--python", "python", help="Interpreter under test (default: the active venv/conda env, else python3 on PATH)."),
    click.option("--backend", type=click.Choice(["nccl", "gloo"]), help="nccl (default when GPUs are visible) or gloo (CPU)."),
    click.option("--nproc", type=int, help="Processes per node (default: one per GPU; 2 with gloo)."),
    click.option("--min-bytes", default="8", show_default=True, callback=_bytes, help="Smallest size (8, 64K, 1M ...)."),
    click.option("--max-bytes", default="256M", show_default=True, callback=_bytes, help="Largest size."),
    click.option("--factor", type=int, default=2, show_default=True, help="Size multiplier between steps."),
    click.option("--min-busbw", type=float, metavar="GBPS", help="Exit 1 when the average busbw (GB/s, 1e9) is below this."),
]


@smoke.command("allreduce")
@with_options(_allreduce_options)
@click.option("--warmup", type=int, default=5, show_default=True, help="Untimed iterations per size.")
@click.option("--iters", type=int, default=20, show_default=True, help="Timed iterations per size.")
@click.option("--nnodes", type=int, default=1, show_default=True, help="Nodes taking part (each runs this command).")
@click.option("--node-rank", type=int, default=0, show_default=True, help="This node's index; node 0 hosts the rendezvous.")
@click.option("--rdzv-endpoint", metavar="HOST:PORT", help="Node 0's address for the c10d rendezvous (needed with --nnodes > 1).")
@click.option("--rdzv-id", default="fwdoctor-smoke", show_default=True, help="Same on every node of one run.")
@click.option("--timeout", type=float, default=600.0, show_default=True, callback=_seconds, help="Seconds for the whole run; a hang is killed.")
@click.option("--emit", type=click.Choice(["slurm", "torchrun"]), help="Print a multi-node job script instead of running.")
@click.option("--quiet", is_flag=True, help="No per-size progress on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@_REPORT_FORMAT
def allreduce_cmd(python, backend, nproc, min_bytes, max_bytes, factor, min_busbw, warmup, iters, nnodes, node_rank, rdzv_endpoint, rdzv_id, timeout, emit, quiet, as_json, fmt) -> None:
    """All-reduce sweep through torch.distributed: exact sums, algbw and busbw per size.

    busbw = algbw * 2(n-1)/n in GB/s (1e9 bytes), as nccl-tests reports it.
    """
    opts = ar.AllreduceOptions(
        python=_python(python) if not emit else (python or sys.executable),  # emit: a placeholder, passed on only when given
        backend=backend, nproc=nproc, nnodes=nnodes, node_rank=node_rank, rdzv_endpoint=rdzv_endpoint, rdzv_id=rdzv_id,
        min_bytes=min_bytes, max_bytes=max_bytes, factor=factor, warmup=warmup, iters=iters, timeout=timeout, min_busbw=min_busbw,
    )
    try:
        opts.validate(need_endpoint=emit != "slurm")
    except ValueError as exc:
        fail(str(exc))
    if emit:
        try:
            script = emitter.slurm_script(opts, bool(python)) if emit == "slurm" else emitter.torchrun_script(opts, bool(python))
        except ValueError as exc:
            fail(str(exc))
        click.echo(script, nl=False)
        return
    result = run_allreduce(opts, quiet)
    sys.exit(_emit([result], as_json, ar.render_table(result), fmt=fmt))


def run_allreduce(opts, quiet: bool = False, host_facts=None, kb=None):
    def progress(row: dict) -> None:
        click.echo(ar.progress_line(row), err=True)

    result = ar.run(opts, progress=None if quiet else progress)
    summary = result.details.get("nccl") or {}
    if summary.get("lines"):  # NCCL spoke: judge its transports against this host's fabric
        facts = host_facts if host_facts is not None else facts_from(SourceRequest(python=opts.python))
        judged = transport.judge_run(facts, summary, dict(os.environ if opts.env is None else opts.env), kb or load_kb(None, areas=()))
        ids = ", ".join(f["id"] for f in judged["findings"])
        result = replace(result, details={**result.details, "transport_findings": judged["findings"], "transport_not_checked": judged["not_checked"]},
                         message=f"{result.message}; findings: {ids}" if ids else result.message)
    return result


# ----------------------------------------------------------------------------- all
@smoke.command("all")
@with_options(_allreduce_options)
@click.option("--no-allreduce", is_flag=True, help="Skip the all-reduce step.")
@click.option("--cpu", is_flag=True, help="On the CPU: kernel --cpu and the all-reduce over gloo (runs anywhere).")
@click.option("--timeout", type=float, default=600.0, show_default=True, callback=_seconds, help="Seconds for each step (kernel, allreduce).")
@click.option("--report", "report_file", type=click.Path(dir_okay=False), help="Write the JSON report here (schema: doctor/smoke/suite.py).")
@kb_option
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report instead of the summary.")
def all_cmd(python, backend, nproc, min_bytes, max_bytes, factor, min_busbw, no_allreduce, cpu, timeout, report_file, kb_dir, as_json) -> None:
    """check --deep, then kernel, then allreduce: one summary, one JSON report.

    Exit 1 when check has an error finding or any test failed; skips do not fail.
    With --cpu every step runs on the CPU, as `smoke kernel --cpu` and
    `smoke allreduce --backend gloo` do.
    """
    if cpu and backend == "nccl":
        fail("--cpu runs on the CPU: its all-reduce is gloo's, not --backend nccl")
    backend = "gloo" if cpu else backend
    target = _python(python)
    opts = ar.AllreduceOptions(python=target, backend=backend, nproc=nproc, min_bytes=min_bytes, max_bytes=max_bytes, factor=factor, timeout=timeout, min_busbw=min_busbw)
    try:
        opts.validate()
    except ValueError as exc:
        fail(str(exc))
    if report_file:
        folder = os.path.dirname(os.path.abspath(report_file))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            fail(f"--report {report_file}: {folder} is not a writable folder")  # before minutes of tests
    kb = load_kb(kb_dir)
    click.echo("fwdoctor smoke all: check --deep ...", err=True)
    facts = waiting("fwdoctor: check --deep", facts_from, SourceRequest(deep=True, python=python))
    report = judge(facts, kb, RULES)
    suite = SuiteResult(python=target, check=to_json(report, checked_at=utc_now()), provenance=facts.provenance)
    click.echo("fwdoctor smoke all: kernel ...", err=True)
    suite.kernel = kernel_results(target, (), False, (), timeout, announce=False, cpu=cpu)
    if not no_allreduce:
        click.echo("fwdoctor smoke all: allreduce ...", err=True)
        suite.allreduce = [run_allreduce(opts, host_facts=facts, kb=kb)]
    data = suite.to_json()
    if report_file:
        try:
            with open(report_file, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2, default=str)
                handle.write("\n")
        except OSError as exc:
            fail(f"--report {report_file}: {exc.strerror or exc}")
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        click.echo(render_summary(suite), nl=False)
        if report_file:
            click.echo(f"report: {report_file}")
    sys.exit(suite.exit_code)


def _elapsed(started: str | None) -> float:
    """Seconds since the group began (its collected_at stamp), 0 when unknown."""
    from datetime import datetime, timezone

    try:
        begun = datetime.fromisoformat(str(started).replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, (datetime.now(timezone.utc) - begun).total_seconds())
