"""`fwdoctor gate`: may jobs land on this node now? Parse, call fwdoctor.gate, render, act."""

from __future__ import annotations

import os
import re
import socket
import sys
import time
from dataclasses import replace

import click

from fwdoctor.cli.common import fail, kb_option
from fwdoctor.cli.output import note
from fwdoctor.findings import BY_ID, did_you_mean
from fwdoctor.gate import policy as gate_policy
from fwdoctor.gate import report, slurm
from fwdoctor.gate.run import run_gate

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min)?\s*$")


def _budget(ctx: click.Context, param: click.Parameter, value: str) -> float:
    m = _DURATION.match(value)
    if not m or float(m.group(1)) <= 0 or float(m.group(1)) > 3600:
        raise click.BadParameter(f"{value!r} is not a duration like 60s or 2m (above 0, at most an hour)", param_hint="'--budget'")
    return float(m.group(1)) * (60 if m.group(2) in ("m", "min") else 1)


def _node_name(value: str | None) -> str:
    # slurmd sets SLURMD_NODENAME for HealthCheckProgram, Prolog and Epilog; the node's own
    # short host name is what .ci/setup-slurm.sh (and most sites) name it otherwise.
    return value or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


@click.command()
@click.option("--root", type=click.Path(file_okay=False), help="Judge DIR as if it were / (no processes, no NVML).")
@click.option("--env-file", type=click.Path(dir_okay=False), help="KEY=VALUE lines used as the environment (with --root).")
@click.option("--facts", "facts_file", type=click.Path(dir_okay=False), help="Judge facts saved by `fwdoctor facts` instead of probing.")
@click.option("--deep", is_flag=True, help="Also import torch in the target interpreter (child process), as check --deep.")
@click.option("--smoke", type=click.Choice(["kernel"]), multiple=True, help="Also run a short smoke test within the budget.")
@click.option("--budget", "budget_s", default="60s", show_default=True, callback=_budget,
              help="The whole run's time limit (60s, 2m). Never exceeded: what did not finish is 'unknown'.")
@click.option("--policy", "policy_file", type=click.Path(dir_okay=False), help="The gate policy (YAML); default: --show-policy.")
@click.option("--show-policy", is_flag=True, help="Print the default policy (or --policy FILE, checked) and exit.")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False), help="Judge the node against its type's median in a `fleet baseline` file.")
@click.option("--slurm", "use_slurm", is_flag=True, help="Drain the node (or resume a node fwdoctor drained) with scontrol: HealthCheckProgram, Prolog, Epilog.")
@click.option("--node", "node", help="The Slurm node name (default: $SLURMD_NODENAME, else the short host name).")
@click.option("--log", "log_file", type=click.Path(dir_okay=False), help="Append the verdict and every action to FILE (timestamped).")
@click.option("--report-format", "fmt", type=click.Choice(["text", "json", "ctrf", "junit"]), default="text", show_default=True,
              help="text for people, json for scripts, ctrf (Common Test Report Format) or junit (JUnit XML) for CI dashboards.")
@click.option("--json", "as_json", is_flag=True, help="Same as --report-format json.")
@click.option("--ignore", "ignored", multiple=True, metavar="ID", help="Also ignore these finding ids (added to the policy's ignore list; repeatable).")
@click.option("--fail-on", "fail_on", type=click.Choice(["error", "warning"]), default="error", show_default=True,
              help="With --exit-codes fwdoctor: exit 1 on drain (error), or on warn too (warning).")
@click.option("--exit-codes", "scheme", type=click.Choice(["fwdoctor", "nagios", "npd"]), default="fwdoctor", show_default=True,
              help="fwdoctor: 0 may run jobs, 1 drain, 2 failed; nagios (NHC): 0 OK 1 WARNING 2 CRITICAL 3 UNKNOWN; "
                   "npd (Node Problem Detector custom plugin): 0 OK 1 problem 2 unknown, one line of at most 80 characters.")
@kb_option
def gate(root: str | None, env_file: str | None, facts_file: str | None, deep: bool, smoke: tuple[str, ...], budget_s: float,
         policy_file: str | None, show_policy: bool, baseline_file: str | None, use_slurm: bool, node: str | None,
         log_file: str | None, fmt: str, as_json: bool, ignored: tuple[str, ...], fail_on: str, scheme: str, kb_dir: str | None) -> None:
    """Judge this node for scheduling: check, hardware health, optional smoke, one verdict.

    \b
    Examples:
      fwdoctor gate                       # ok / warn / drain, exit 1 on drain
      fwdoctor gate --slurm --budget 45s  # HealthCheckProgram, Prolog
      fwdoctor gate --exit-codes npd      # a Node Problem Detector plugin
      fwdoctor gate --report-format junit > gate.xml
      fwdoctor gate --show-policy > policy.yaml
      fwdoctor gate --policy policy.yaml
      fwdoctor gate --baseline baseline.yaml --smoke kernel   # fleet baseline
    """
    try:
        policy = gate_policy.load(policy_file)
    except gate_policy.PolicyError as exc:
        fail(str(exc))
    for finding_id in ignored:
        if finding_id not in BY_ID:
            fail(f"--ignore {finding_id}: unknown finding id{did_you_mean(finding_id)} (see `fwdoctor list`)")
    if ignored:  # ignore wins over drain and warn, as in the policy file itself
        policy = replace(policy, ignore=policy.ignore + tuple(i for i in ignored if i not in policy.ignore))
    if show_policy:
        if policy_file is None:
            click.echo(gate_policy.DEFAULT, nl=False)
        else:
            with open(policy_file, encoding="utf-8") as handle:
                click.echo(handle.read(), nl=False)
        return
    if facts_file and (root or env_file or deep):
        fail("--facts judges saved facts: it takes no --root, --env-file or --deep")
    baseline = None
    if baseline_file:
        from fwdoctor.fleet.baseline import BaselineError, load_baseline

        try:
            baseline = load_baseline(baseline_file)
        except BaselineError as exc:
            fail(str(exc))
    source_args = [*(["--root", root] if root else []), *(["--env-file", env_file] if env_file else []), *(["--deep"] if deep else [])]
    from fwdoctor.kb import KBError
    from fwdoctor.sources import SourceError

    try:
        result = run_gate(policy, budget_s, source_args, facts_file, smoke, kb_dir=kb_dir, baseline=baseline)
    except (SourceError, KBError) as exc:
        fail(str(exc))
    if use_slurm:
        name = _node_name(node)
        try:
            result.actions += slurm.act(name, result.verdict, _cause_text(result))
        except slurm.SlurmError as exc:
            result.actions.append(f"slurm: {name}: could not act: {exc}")
            _log(log_file, result)
            _render(result, "json" if as_json else fmt, scheme)
            fail(f"slurm: {exc}")
    _log(log_file, result)
    _render(result, "json" if as_json else fmt, scheme)
    code = report.exit_code(result, scheme)
    if scheme == "fwdoctor" and fail_on == "warning" and result.verdict == "warn":
        code = 1
    sys.exit(code)


def _cause_text(result) -> str | None:
    cause = result.first_cause
    return None if cause is None else f"{cause.id}: {cause.message}"


def _render(result, fmt: str, scheme: str) -> None:
    if scheme == "npd" and fmt == "text":
        click.echo(report.one_line(result, report.NPD_MESSAGE_MAX))
    elif fmt == "json":
        from fwdoctor.cli.output import emit_json

        emit_json("gate", result.to_json())
    elif fmt == "ctrf":
        click.echo(report.render_ctrf(result), nl=False)
    elif fmt == "junit":
        click.echo(report.render_junit(result), nl=False)
    else:
        click.echo(report.render_text(result), nl=False)
    if fmt != "text":
        for action in result.actions:
            note(f"fwdoctor: {action}")


def _log(path: str | None, result) -> None:
    lines = [f"verdict {report.one_line(result)}", *result.actions]
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    text = "".join(f"{stamp} fwdoctor gate: {line}\n" for line in lines)
    if path is None:
        return
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        note(f"fwdoctor: --log {path}: {exc.strerror or exc}")
