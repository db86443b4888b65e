"""`fwdoctor smoke all`: check --deep, then kernels, then all-reduce; one summary, one report.

Docker and build recipes run this as their validation step and read the report file.

Report schema (`--report FILE`, and stdout with `--json`), version "fwdoctor-smoke/1":

    {
      "schema": "fwdoctor-smoke/1",
      "schema_version": 1, "kind": "smoke-suite",   # fwdoctor.schema's stamp
      "fwdoctor": "0.1.0",                 # version of the doctor that wrote it
      "host": {"name": "node-0417", "source": "gethostname()"},   # whose report (the check's facts')
      "collected_at": "2026-11-30T09:59:40Z",  # UTC, when the check's facts were collected
      "created": "2026-11-30T10:00:00Z",   # UTC, when the report was written
      "python": "/path/to/python",         # the interpreter under test
      "ok": true,                          # exit_code == 0
      "exit_code": 0,                      # 0: no error finding, no failed test; 1 otherwise
      "summary": {"check": "pass"|"fail", "kernel": S, "allreduce": S},
                                           # S: "pass" | "fail" | "skipped" (all parts skipped)
      "check": {...},                      # exactly `fwdoctor check --deep --json`:
                                           #   exit_code, facts, probe_failures, findings, not_checked
      "kernel": [RESULT, ...],             # one per GPU, or per --arch with compile_only
      "allreduce": [RESULT, ...]           # one (empty when --no-allreduce)
    }

    RESULT = {
      "test": "kernel gpu0" | "compile sm_80" | "allreduce" | "kernel",
      "status": "pass" | "fail" | "skipped",   # a skip never counts as a pass; it says why
      "message": str,                          # one line with the observed values
      "error": str,                            # the real error text, verbatim
      "diagnosis": str | null,                 # a finding id (`fwdoctor explain ID`)
      "hint": str,                             # what to try
      "details": {...}                         # kernel: name, cc, checks[] (matmul_*, conv2d_<dtype>_<nchw|nhwc>
                                               #   with backend, amp_<dtype> with losses), tflops{},
                                               #   gemm_tflops (the headline GEMM figure), gemm
                                               #   {n, dtype, iters, seconds},
                                               #   max_rel_error, conv_backends, cudnn {version,
                                               #   library}; allreduce: backend, nccl (the
                                               #   NCCL_DEBUG summary: version, peers, transports,
                                               #   rings, trees), nccl_transport, transport_findings,
                                               #   world_size, nccl_version, nccl_env,
                                               #   rows[{bytes, count, time_us, algbw_gbps,
                                               #   busbw_gbps, wrong}], avg_busbw_gbps,
                                               #   wrong_total
    }
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Callable

from fwdoctor.model import Provenance
from fwdoctor.render.escape import terminal_lines
from fwdoctor.schema import stamp
from fwdoctor.smoke.result import FAIL, PASS, SKIPPED, SmokeResult

SCHEMA = "fwdoctor-smoke/1"


@dataclass
class SuiteResult:
    python: str
    check: dict[str, Any]  # fwdoctor.render.report.to_json(report)
    kernel: list[SmokeResult] = field(default_factory=list)
    allreduce: list[SmokeResult] = field(default_factory=list)
    provenance: Provenance | None = None  # the check's facts': whose report, collected when

    @property
    def check_failed(self) -> bool:
        return int(self.check.get("exit_code", 0)) != 0

    @property
    def exit_code(self) -> int:
        failed = any(r.status == FAIL for r in [*self.kernel, *self.allreduce])
        return 1 if failed or self.check_failed else 0

    def summary(self) -> dict[str, str]:
        return {"check": FAIL if self.check_failed else PASS, "kernel": part_status(self.kernel), "allreduce": part_status(self.allreduce)}

    def to_json(self, now: Callable[[], _dt.datetime] | None = None) -> dict[str, Any]:
        created = (now or (lambda: _dt.datetime.now(_dt.timezone.utc)))()
        return stamp("smoke-suite", {
            **(self.provenance.to_json() if self.provenance is not None else {}),
            "schema": SCHEMA,
            "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "python": self.python,
            "ok": self.exit_code == 0,
            "exit_code": self.exit_code,
            "summary": self.summary(),
            "check": self.check,
            "kernel": [r.to_json() for r in self.kernel],
            "allreduce": [r.to_json() for r in self.allreduce],
        })


def part_status(results: list[SmokeResult]) -> str:
    if any(r.status == FAIL for r in results):
        return FAIL
    if results and all(r.status == SKIPPED for r in results):
        return SKIPPED
    return PASS if results else SKIPPED


def render_summary(suite: SuiteResult) -> str:
    counts = {"error": 0, "warning": 0, "info": 0}
    for finding in suite.check.get("findings", []):
        counts[finding.get("severity", "info")] = counts.get(finding.get("severity", "info"), 0) + 1
    s = suite.summary()
    verdict = "PASS" if suite.exit_code == 0 else "FAIL"
    lines = [
        f"fwdoctor smoke all: {verdict}",
        f"  check --deep : {s['check']:<7} {counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info",
    ]
    for name, results in (("kernel", suite.kernel), ("allreduce", suite.allreduce)):
        lines.append(f"  {name:<12} : {s[name]:<7} " + ("; ".join(f"{r.test}: {r.message}" for r in results) or "not run"))
    errors = [f for f in suite.check.get("findings", []) if f.get("severity") == "error"]
    for finding in errors:
        lines.append(f"    error {finding.get('id')}: {finding.get('message')}")
    return terminal_lines(lines) + "\n"  # smoke and check texts shown inert (fwdoctor.render.escape)
