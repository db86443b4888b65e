"""`fwdoctor fix`, `fwdoctor select torch`, `fwdoctor install torch|cuda-toolkit`.

Parse, call, render: the logic is in recipes/select.py, the recipe modules and
recipes/apply.py. Every command prints its plan as a commented shell script by default
(a dry run); `--apply` runs it after a confirmation (`--yes`: none), logs every command and
its output to a file whose path it prints, and verifies.

Exit codes: 0 done / nothing to do, 1 refused, failed, declined or still broken,
2 fwdoctor itself failed (bad arguments).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from typing import Any

import click
from packaging.version import InvalidVersion, Version

from fwdoctor.cli.common import EXIT_FINDINGS, facts_from, fail, kb_option, live_only, load_kb, source_options
from fwdoctor.engine import judge
from fwdoctor.findings import BY_ID
from fwdoctor.host import EnvFileError, load_env_file
from fwdoctor.recipes import cuda_toolkit, torch_wheel
from fwdoctor.recipes import fix as fixes
from fwdoctor.recipes import select as sel
from fwdoctor.recipes.apply import ApplyResult, apply_plan
from fwdoctor.recipes.plan import Plan
from fwdoctor.rules import RULES
from fwdoctor.sources import SourceRequest


def _apply_options(func):
    func = click.option("--log", "log_path", type=click.Path(dir_okay=False), help="Log file for --apply (default: a new file under ~/.local/state/fwdoctor/logs).")(func)
    func = click.option("--yes", "-y", is_flag=True, help="Apply without asking (unattended).")(func)
    func = click.option("--apply", "do_apply", is_flag=True, help="Run the plan (default: print it as a shell script and change nothing).")(func)
    return func


# ----------------------------------------------------------------------------- helpers
def _host_path(env_file: str | None) -> str:
    if env_file:
        try:
            return load_env_file(env_file).get("PATH", "")
        except EnvFileError as exc:
            fail(str(exc))
    return os.environ.get("PATH", "")


def _run(plan: Plan, do_apply: bool, yes: bool, log_path: str | None) -> ApplyResult | None:
    """Print or apply one plan. Returns the ApplyResult (None for a dry run)."""
    click.echo(plan.to_shell(), nl=False)
    if plan.refused:
        click.echo(f"fwdoctor: refused: {plan.refused.splitlines()[0]}", err=True)
        return None
    if not do_apply:
        click.echo("# dry run: nothing was changed; add --apply to run this plan", err=True)
        return None

    def confirm(p: Plan) -> bool:
        return yes or click.confirm(f"Apply '{p.title}'?", default=False, err=True)

    result = apply_plan(plan, confirm=confirm, log_path=log_path, progress=lambda line: click.echo(line, err=True))
    click.echo(result.summary(), err=True)
    return result


def _exit_for(result: ApplyResult | None, plan: Plan) -> None:
    if plan.refused or (result is not None and not result.ok):
        sys.exit(EXIT_FINDINGS)


def _split_python(python: str | None) -> tuple[str | None, str | None]:
    """`--python 3.11` names a version (answers for another machine); anything else names
    the interpreter to inspect/install into."""
    if python is None:
        return None, None
    try:
        Version(python)
        return None, python
    except InvalidVersion:
        return python, None


# ----------------------------------------------------------------------------- fix
@click.command("fix")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@source_options
@_apply_options
@kb_option
def fix(ids: tuple[str, ...], source: SourceRequest, do_apply: bool, yes: bool, log_path: str | None, kb_dir: str | None) -> None:
    """Plan fixes for the current findings (all, or the finding ids named).

    \b
    Prints each plan as a commented shell script (dry run). With --apply: asks, runs it,
    logs everything, then checks again and exits 1 if a finding it should fix remains.
    Examples:
      fwdoctor fix
      fwdoctor fix driver-too-old-for-torch --apply
      fwdoctor fix --facts host.json          # what would be done there
    """
    for finding_id in ids:
        if finding_id not in BY_ID:
            fail(f"{finding_id}: unknown finding id (see `fwdoctor list`)")
    if do_apply:
        live_only(source)
    kb = load_kb(kb_dir)
    facts = facts_from(source)
    todo = fixes.group_findings(judge(facts, kb, RULES).findings, ids)
    if todo.empty:
        named = f" for {', '.join(ids)}" if ids else ""
        click.echo(f"nothing to fix{named}: no current finding has a recipe")
        return
    for finding in todo.manual:
        click.echo(f"# {finding.id}: no recipe; by hand:", err=True)
        for command in finding.fix.commands if finding.fix else ():
            click.echo(f"#   {command}", err=True)
    plans: list[Plan] = []
    for group in todo.groups:
        try:
            plan = fixes.plan_group(group, facts, kb, _host_path(source.env_file), source.python)
        except KeyError as exc:
            fail(f"{', '.join(group.finding_ids)}: {exc.args[0]}")
        click.echo(f"# plan for: {', '.join(sorted(set(group.finding_ids)))}", err=True)
        result = _run(plan, do_apply, yes, log_path)
        plans.append(plan)
        if result is not None and not result.ok:
            sys.exit(EXIT_FINDINGS)  # stop at the first failed plan; later ones may depend on it
    if any(plan.refused for plan in plans):
        sys.exit(EXIT_FINDINGS)
    if not do_apply:
        return
    # Check again, as a shell that sourced any env file we wrote would see the host.
    recheck = source.live(env_file=fixes.recheck_env(plans))
    after = judge(facts_from(recheck), kb, RULES)
    targeted = {fid for group in todo.groups for fid in group.finding_ids}
    remaining = sorted({f.id for f in after.findings} & targeted)
    if remaining:
        click.echo(f"fwdoctor: still present after the fix: {', '.join(remaining)}", err=True)
        sys.exit(EXIT_FINDINGS)
    click.echo(f"fixed: {', '.join(sorted(targeted))}", err=True)


# ----------------------------------------------------------------------------- select
@click.group("select")
def select_group() -> None:
    """Pick versions that fit this host, or another one described by flags."""


def _target_options(func):
    func = click.option("--cuda", help="Insist on this CUDA version (e.g. 12.6), or 'cpu'.")(func)
    func = click.option("--torch", "torch_spec", default="", help="Allowed torch versions, a specifier set: '>=2.4,<2.9', '==2.8.*'.")(func)
    func = click.option("--gpu", "gpus", multiple=True, metavar="CC|NAME", help="A GPU to run on: compute capability (8.6) or name (repeatable). Default: this host's.")(func)
    func = click.option("--driver", help="NVIDIA driver version to plan for (default: this host's).")(func)
    return func


def _selection(source: SourceRequest, driver, gpus, torch_spec, cuda, kb_dir):
    kb = load_kb(kb_dir)
    interpreter, version = _split_python(source.python)
    facts = None
    if not (driver and gpus and version):  # flags alone describe another machine: no probing
        facts = facts_from(replace(source, python=interpreter))
    try:
        target = sel.target_from_facts(facts, kb, driver=driver, gpus=gpus, python=version, torch_spec=torch_spec, cuda=cuda)
    except sel.SelectError as exc:
        fail(str(exc))
    return kb, facts, target, sel.select_torch(kb, target)


@select_group.command("torch")
@source_options
@_target_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@kb_option
def select_torch_cmd(source: SourceRequest, driver, gpus, torch_spec, cuda, as_json, kb_dir) -> None:
    """The newest official torch wheel this machine runs, and why newer ones do not.

    \b
    --python takes an interpreter (inspect it) or a version X.Y (plan for it).
    Examples:
      fwdoctor select torch
      fwdoctor select torch --driver 535.104.05 --gpu 9.0 --python 3.11
      fwdoctor select torch --gpu "Tesla K80" --driver 470.82.01 --python 3.10 --json
    """
    _, _, _, selection = _selection(source, driver, gpus, torch_spec, cuda, kb_dir)
    if as_json:
        click.echo(json.dumps(selection.to_json(), indent=2))
    else:
        click.echo(sel.render_text(selection), nl=False)
    if not selection.ok:
        sys.exit(EXIT_FINDINGS)


# ----------------------------------------------------------------------------- install
@click.group("install")
def install_group() -> None:
    """Install torch or a CUDA toolkit: plan (dry run), or --apply."""


@install_group.command("torch")
@source_options
@_target_options
@click.option("--installer", type=click.Choice(["pip", "uv"]), default="pip", show_default=True)
@click.option("--index-url", help="Install from this index instead (a mirror, a local index).")
@click.option("--with", "with_packages", multiple=True, type=click.Choice(["torchvision", "torchaudio"]), help="Also install the matching package (repeatable).")
@click.option("--no-deps", is_flag=True, help="Pass --no-deps to the installer (an offline index holding only torch).")
@_apply_options
@kb_option
def install_torch_cmd(source: SourceRequest, driver, gpus, torch_spec, cuda, installer, index_url, with_packages, no_deps, do_apply, yes, log_path, kb_dir) -> None:
    """Install the torch wheel `select torch` picks, pinned, into the target interpreter.

    \b
    --python names the interpreter to install into (default: the inspected one).
    Verifies afterwards: import torch, torch.version.cuda, is_available() on a GPU host.
    """
    if do_apply:
        live_only(source)
    interpreter, _ = _split_python(source.python)
    kb, facts, target, selection = _selection(source, driver, gpus, torch_spec, cuda, kb_dir)
    options: dict[str, Any] = {
        "python": interpreter or (facts.get("python.executable") if facts is not None else None),
        "python_version": target.python,
        "driver": driver,
        "gpus": list(gpus),
        "torch": torch_spec,
        "cuda": cuda,
        "installer": installer,
        "index_url": index_url,
        "with": list(with_packages),
        "no_deps": no_deps,
    }
    if not options["python"]:
        fail("no target interpreter: pass --python /path/to/python")
    plan = torch_wheel.plan(facts, kb, options)
    _exit_for(_run(plan, do_apply, yes, log_path), plan)


@install_group.command("cuda-toolkit")
@click.argument("version")
@source_options
@click.option("--method", type=click.Choice(["runfile", "apt", "pip"]), default=None, help="Default: runfile when fwdoctor knows its checksum, else pip for CUDA 13+, else apt.")
@click.option("--prefix", help="Install here (default: /usr/local/cuda-X.Y; pip: ~/.local/cuda-X.Y).")
@click.option("--link", is_flag=True, help="Also point /usr/local/cuda at it (default: leave it).")
@click.option("--force", is_flag=True, help="Install even if the driver cannot run this CUDA's programs.")
@click.option("--runfile-url", help="Runfile to use instead of the known one (needs --sha256).")
@click.option("--sha256", help="Expected sha256 of the runfile.")
@click.option("--keyring-sha256", help="apt: expected sha256 of NVIDIA's cuda-keyring .deb (lets the plan set up the repository).")
@click.option("--index-url", help="pip: install the wheels from this index.")
@click.option("--download-dir", type=click.Path(file_okay=False), help="Where downloads are kept (default: ~/.cache/fwdoctor/downloads).")
@click.option("--env-out", type=click.Path(dir_okay=False), help="Where to write the env snippet (default: ~/.config/fwdoctor/cuda-X.Y.env.sh).")
@_apply_options
@kb_option
def install_cuda_toolkit_cmd(version, source: SourceRequest, method, prefix, link, force, runfile_url, sha256, keyring_sha256, index_url, download_dir, env_out, do_apply, yes, log_path, kb_dir) -> None:
    """Install CUDA toolkit VERSION (X.Y) beside the others; never the driver.

    \b
    Examples:
      fwdoctor install cuda-toolkit 12.8                      # print the runfile plan
      fwdoctor install cuda-toolkit 13.0 --method pip --apply # no root needed
    """
    if do_apply:
        live_only(source)
    kb = load_kb(kb_dir)
    facts = facts_from(source)
    options = {
        "version": version,
        "method": method,
        "prefix": prefix,
        "link": link,
        "force": force,
        "runfile_url": runfile_url,
        "sha256": sha256,
        "keyring_sha256": keyring_sha256,
        "index_url": index_url,
        "download_dir": download_dir,
        "env_file": env_out,
        "python": source.python or sys.executable,
    }
    plan = cuda_toolkit.plan(facts, kb, options)
    _exit_for(_run(plan, do_apply, yes, log_path), plan)

