#!/usr/bin/env python3
"""`make gpu-check`: every GPU-only path of fwdoctor in one run, one JSON and one Markdown report.

Steps, each a `fwdoctor` command in a child process with its own timeout, all within one
budget (default 540 s, so the whole run stays under 10 minutes on one GPU):

    check        fwdoctor check --deep                    facts, findings (NVLink, IB, fabric, health)
    kernel       fwdoctor smoke kernel                    every GPU: matmul, conv2d (cuDNN), AMP, GEMM TFLOP/s
    kernel-cpu   fwdoctor smoke kernel --cpu              the same worker on the CPU (runs everywhere)
    compile      fwdoctor smoke kernel --compile-only     nvcc for each GPU's arch, then runs the kernel on it
    allreduce    fwdoctor smoke allreduce                 NCCL across all GPUs, with NCCL's own transports
    image        fwdoctor check --image + smoke kernel in a container   when a Docker engine and a
                                                          fwdoctor-built image (or --image) are here

Without a GPU every GPU step is "skipped" with the reason, the CPU kernel check still runs,
and the exit status is 0: a clear "no GPU" report. Exit 1 when a step failed, 2 when this
script could not write its report.

    python tools/gpu_check.py [--python PY] [--out DIR] [--image TAG] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout: the editable install finds the rest

try:
    from fwdoctor import runner  # noqa: E402
except ImportError as exc:  # GPU_PYTHON=... without fwdoctor installed in it (make gpu-check)
    print(
        f"gpu_check: fwdoctor is not importable by {sys.executable} ({exc}).\n"
        "Install it there first; on a machine with no package index, carry the wheel built elsewhere "
        "(`python -m pip wheel --no-deps -w dist .`) and run:\n"
        f"  {sys.executable} -m pip install --no-index --no-deps --target /tmp/fwdoctor-site dist/fwdoctor-*.whl\n"
        f"  PYTHONPATH=/tmp/fwdoctor-site make gpu-check GPU_PYTHON={sys.executable}",
        file=sys.stderr,
    )
    sys.exit(2)

SCHEMA = "fwdoctor-gpu-check/1"
PASS, FAIL, SKIPPED = "pass", "fail", "skipped"
DEFAULT_BUDGET_S = 540.0
STEP_TIMEOUT_S = {"check": 180.0, "kernel": 300.0, "kernel-cpu": 180.0, "compile": 240.0, "allreduce": 300.0, "image": 300.0}


class Run:
    """The steps so far and the time left."""

    def __init__(self, python: str | None, budget: float) -> None:
        self.python = python
        self.deadline = time.monotonic() + budget
        self.steps: list[dict[str, Any]] = []

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def fwdoctor(self, name: str, args: list[str], with_python: bool = True) -> tuple[dict[str, Any], dict | None]:
        """Run `fwdoctor ARGS --json` as step `name`; the step record and the parsed JSON."""
        timeout = min(STEP_TIMEOUT_S[name], self.left())
        argv = [sys.executable, "-m", "fwdoctor", "-q", *args]
        if with_python and self.python:
            argv += ["--python", self.python]
        step: dict[str, Any] = {"name": name, "command": " ".join(argv[2:]), "status": FAIL, "why": "", "seconds": 0.0}
        if timeout < 10:
            step.update(status=SKIPPED, why=f"out of time: {max(0.0, self.left()):.0f} s of the budget left")
            return step, None
        started = time.monotonic()
        result = runner.run(argv, timeout=timeout, cwd=str(REPO))
        step["seconds"] = round(time.monotonic() - started, 1)
        step["exit_code"] = result.returncode
        data = None
        try:
            data = json.loads(result.stdout) if result.stdout.strip() else None
        except ValueError:
            data = None
        if data is None:
            step["why"] = result.describe_failure() if not result.ok else "no JSON on stdout"
            step["stderr_tail"] = result.stderr[-2000:]
        return step, data

    def add(self, step: dict[str, Any]) -> dict[str, Any]:
        self.steps.append(step)
        return step


def smoke_status(results: list[dict]) -> tuple[str, str]:
    """A step's status from its smoke results: any fail -> fail, all skipped -> skipped."""
    if any(r.get("status") == FAIL for r in results):
        bad = next(r for r in results if r.get("status") == FAIL)
        return FAIL, f"{bad.get('test')}: {bad.get('message')}"
    if results and all(r.get("status") == SKIPPED for r in results):
        return SKIPPED, results[0].get("message", "")
    return (PASS, "") if results else (FAIL, "no result")


def step_check(run: Run) -> tuple[dict, dict | None]:
    step, data = run.fwdoctor("check", ["check", "--deep", "--json"])
    if data is not None:
        findings = data.get("findings", [])
        step["status"] = FAIL if data.get("exit_code") else PASS
        step["why"] = "; ".join(f"{f['id']}: {f['message']}" for f in findings if f.get("severity") == "error")
        step["findings"] = [{"id": f["id"], "severity": f["severity"], "message": f["message"]} for f in findings]
        step["not_checked"] = len(data.get("not_checked", []))
    return run.add(step), data


def facts_value(check: dict | None, key: str) -> Any:
    fact = ((check or {}).get("facts") or {}).get(key)
    return fact.get("value") if isinstance(fact, dict) else None


def gpu_count(check: dict | None) -> tuple[int | None, str]:
    """GPUs torch can use, from check --deep (torch.deep.device_count), else the driver's
    list; None when check gave no answer at all."""
    deep = facts_value(check, "torch.deep") or {}
    if isinstance(deep.get("device_count"), int):
        return deep["device_count"], "torch.cuda.device_count() in the interpreter under test"
    listed = facts_value(check, "gpus.list")
    if isinstance(listed, list):
        return len(listed), "the driver's GPU list (torch did not answer)"
    return None, "check --deep gave no answer"


def step_smoke(run: Run, name: str, args: list[str], skip: str = "") -> dict:
    if skip:
        return run.add({"name": name, "command": "fwdoctor " + " ".join(args), "status": SKIPPED, "why": skip, "seconds": 0.0})
    step, data = run.fwdoctor(name, args, with_python=name != "compile")
    if data is not None:
        results = data.get("results", [])
        step["status"], step["why"] = smoke_status(results)
        step["results"] = results
    return run.add(step)


def step_image(run: Run, image: str | None, gpus: int) -> dict:
    """check --image and `fwdoctor smoke kernel` in a container of a fwdoctor-built image."""
    step: dict[str, Any] = {"name": "image", "command": "", "status": SKIPPED, "why": "", "seconds": 0.0}
    if run.left() < 10:
        step["why"] = f"out of time: {max(0.0, run.left()):.0f} s of the budget left"
        return run.add(step)
    try:
        from fwdoctor.image.local_engine import docker_client

        client = docker_client()
    except Exception as exc:  # no SDK, no engine, no permission: a skip that says which
        step["why"] = f"no Docker engine: {exc}"
        return run.add(step)
    try:
        tag = image or newest_fwdoctor_image(client)
    except Exception as exc:  # the engine went away between connecting and listing
        step["why"] = f"the Docker engine did not answer: {type(exc).__name__}: {exc}"
        return run.add(step)
    if tag is None:
        step["why"] = "no fwdoctor-built image here (`fwdoctor docker build STACK` first, or pass --image TAG)"
        return run.add(step)
    started = time.monotonic()
    check, data = run.fwdoctor("image", ["check", "--image", tag, "--json"], with_python=False)
    problems = []
    if data is None:
        problems.append(f"check --image {tag}: {check['why']}")
    elif data.get("exit_code"):
        problems.append(f"check --image {tag}: " + "; ".join(f["id"] for f in data.get("findings", []) if f.get("severity") == "error"))
    from recipes.docker_build import SMOKE_COMMAND, run_in_container

    try:
        status, output = run_in_container(client, tag, list(SMOKE_COMMAND), gpus > 0, timeout=max(10.0, min(STEP_TIMEOUT_S["image"], run.left())))
    except Exception as exc:  # an engine error mid-way is a failed validation, said as such
        status, output = -1, f"Docker API error: {type(exc).__name__}: {exc}"
    if status != 0:
        problems.append(f"{' '.join(SMOKE_COMMAND)} in a container exited {status}")
    step.update(command=f"fwdoctor check --image {tag}; {' '.join(SMOKE_COMMAND)} in a container{' --gpus all' if gpus else ''}",
                status=FAIL if problems else PASS, seconds=round(time.monotonic() - started, 1),
                why="; ".join(problems) or f"{tag}: no error finding; `{' '.join(SMOKE_COMMAND)}` in a container exited 0",
                image=tag, container_output=output[-3000:])
    return run.add(step)


def newest_fwdoctor_image(client: Any) -> str | None:
    images = client.images.list(filters={"label": "io.fwdoctor.stack"})
    tagged = [(img.attrs.get("Created", ""), img.tags[0]) for img in images if img.tags]
    return max(tagged)[1] if tagged else None


def figures(run: Run) -> dict[str, Any]:
    """The numbers worth quoting: per GPU errors and TFLOP/s, cuDNN, busbw, NCCL transports."""
    out: dict[str, Any] = {}
    for step in run.steps:
        for r in step.get("results") or []:
            d = r.get("details") or {}
            if r.get("test", "").startswith("kernel"):
                out[r["test"]] = {"status": r["status"], "max_rel_error": d.get("max_rel_error"), "tflops": d.get("tflops"),
                                  "conv_backends": sorted(set((d.get("conv_backends") or {}).values())), "cudnn": d.get("cudnn"),
                                  "amp": {c["name"]: {"losses": [c["losses"][0], c["losses"][-1]] if c.get("losses") else None,
                                                      "skipped_steps": c.get("skipped_steps"), "status": c["status"]}
                                          for c in d.get("checks") or [] if c.get("name", "").startswith("amp")}}
            elif r.get("test", "").startswith("compile"):
                out[r["test"]] = {"status": r["status"], "message": r.get("message")}
            elif r.get("test") == "allreduce":
                out["allreduce"] = {"status": r["status"], "avg_busbw_gbps": d.get("avg_busbw_gbps"), "world_size": d.get("world_size"),
                                    "nccl_version": (d.get("nccl") or {}).get("version") or d.get("nccl_version"),
                                    "transports": (d.get("nccl") or {}).get("transports"), "nccl": d.get("nccl_transport"),
                                    "transport_findings": [f["id"] for f in d.get("transport_findings") or []]}
    return out


def report(run: Run, gpus: int, why_gpus: str, check: dict | None, now: Callable[[], _dt.datetime] | None = None) -> dict[str, Any]:
    created = (now or (lambda: _dt.datetime.now(_dt.timezone.utc)))()
    failed = [s["name"] for s in run.steps if s["status"] == FAIL]
    listed = facts_value(check, "gpus.list") or []
    return {
        "schema": SCHEMA,
        "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": {"hostname": platform.node(), "gpu_count": gpus, "gpu_count_from": why_gpus,
                 "gpus": [{"index": g.get("index"), "name": g.get("name"), "cc": g.get("cc"), "nvlink": g.get("nvlink")} for g in listed],
                 "driver": facts_value(check, "driver.version"), "torch": (facts_value(check, "torch.deep") or {}).get("version")},
        "ok": not failed,
        "exit_code": 1 if failed else 0,
        "failed": failed,
        "skipped": {s["name"]: s["why"] for s in run.steps if s["status"] == SKIPPED},
        "seconds": round(sum(s.get("seconds", 0.0) for s in run.steps), 1),
        "figures": figures(run),
        "steps": run.steps,
    }


def markdown(data: dict[str, Any]) -> str:
    host = data["host"]
    verdict = "PASS" if data["ok"] else "FAIL"
    lines = [f"# fwdoctor gpu-check: {verdict}", "",
             f"{data['created']} on {host['hostname']}: {host['gpu_count']} GPU(s) ({host['gpu_count_from']}); driver {host['driver'] or 'none'}; torch {host['torch'] or '?'}; {data['seconds']} s in all.", ""]
    if host["gpu_count"] == 0 and host["gpu_count_from"] != "check --deep gave no answer":
        lines += ["**No GPU**: every GPU step was skipped (the reasons are below); the CPU kernel check ran.", ""]
    lines += ["| step | status | seconds | what happened |", "|---|---|---|---|"]
    for s in data["steps"]:
        what = (s.get("why") or "").replace("|", "\\|").replace("\n", " ")[:300]
        if not what and s.get("results"):
            what = "; ".join(str(r.get("message", "")) for r in s["results"]).replace("|", "\\|")[:300]
        lines.append(f"| {s['name']} | {s['status']} | {s.get('seconds', 0)} | {what} |")
    if data["figures"]:
        lines += ["", "## Figures", "", "```json", json.dumps(data["figures"], indent=2, default=str), "```"]
    findings = next((s.get("findings") for s in data["steps"] if s["name"] == "check"), None)
    if findings:
        lines += ["", "## check --deep findings", ""] + [f"- {f['severity']} `{f['id']}`: {f['message']}" for f in findings]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", help="interpreter under test (default: fwdoctor's choice: the active venv, else python3)")
    parser.add_argument("--out", default="gpu-check-report", help="folder for gpu-check.json and gpu-check.md")
    parser.add_argument("--image", help="validate this image (default: the newest fwdoctor-built image, when Docker is here)")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, help="seconds for all steps together")
    parser.add_argument("--no-image", action="store_true", help="skip the image validation")
    args = parser.parse_args(argv)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"gpu-check: cannot create {out}: {exc}", file=sys.stderr)
        return 2
    run = Run(args.python, args.budget)
    print("gpu-check: check --deep ...", file=sys.stderr)
    _, check = step_check(run)
    counted, why_gpus = gpu_count(check)
    gpus = counted or 0
    no_gpu = "" if gpus else (f"no GPU: {why_gpus} is 0" if counted == 0 else f"GPU count unknown: {why_gpus}")
    for name, cmd, skip in (
        ("kernel", ["smoke", "kernel", "--json"], no_gpu),
        ("kernel-cpu", ["smoke", "kernel", "--cpu", "--json"], ""),
        ("compile", ["smoke", "kernel", "--compile-only", "--json"], no_gpu and f"{no_gpu}: nothing to pick an architecture from and run the kernel on"),
        ("allreduce", ["smoke", "allreduce", "--quiet", "--max-bytes", "256M", "--json"], no_gpu and f"{no_gpu}: nothing to all-reduce over NCCL"),
    ):
        print(f"gpu-check: {name} ...", file=sys.stderr)
        step_smoke(run, name, cmd, skip)
    if args.no_image:
        run.add({"name": "image", "command": "", "status": SKIPPED, "why": "--no-image", "seconds": 0.0})
    else:
        print("gpu-check: image ...", file=sys.stderr)
        step_image(run, args.image, gpus)
    data = report(run, gpus, why_gpus, check)
    try:
        (out / "gpu-check.json").write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        (out / "gpu-check.md").write_text(markdown(data), encoding="utf-8")
    except OSError as exc:
        print(f"gpu-check: cannot write the report into {out}: {exc}", file=sys.stderr)
        return 2
    print(markdown(data))
    print(f"report: {out / 'gpu-check.json'}, {out / 'gpu-check.md'}", file=sys.stderr)
    return data["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
