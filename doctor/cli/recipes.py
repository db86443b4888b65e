"""`fwdoctor fix`, `fwdoctor select torch`, `fwdoctor install torch|cuda-toolkit`.

Parse, call, render: the logic is in doctor/selection.py (fwdoctor.selection), the recipe modules and
recipes/apply.py. Every command prints its plan as a commented shell script by default
(a dry run); `--apply` runs it after a confirmation (`--yes`: none), logs every command and
its output to a file whose path it prints, and verifies.

Exit codes: 0 done / nothing to do, 1 refused, failed, declined or still broken,
2 fwdoctor itself failed (bad arguments).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from typing import Any, Sequence

import click
from packaging.version import InvalidVersion, Version

from fwdoctor import selection as sel
from fwdoctor.cli.common import EXIT_FINDINGS, facts_from, fail, kb_option, live_only, load_kb, source_options
from fwdoctor.cli.errors import say
from fwdoctor.cli.output import emit_json, note, waiting
from fwdoctor.engine import judge
from fwdoctor.findings import BY_ID, did_you_mean
from fwdoctor.host import EnvFileError, load_env_file
from fwdoctor.kb import KB
from fwdoctor.model import Facts
from fwdoctor.recipes import cuda_toolkit, framework_wheel, select_frameworks, torch_wheel
from fwdoctor.recipes import fix as fixes
from fwdoctor.recipes.apply import ApplyResult, apply_plan
from fwdoctor.recipes.plan import Plan
from fwdoctor.render.textfit import fit_script, fit_text
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


def _run(plan: Plan, do_apply: bool, yes: bool, log_path: str | None, collected: list[dict[str, Any]] | None = None) -> ApplyResult | None:
    """Print or apply one plan. Returns the ApplyResult (None for a dry run).
    With `collected` (--json) the plan and its outcome are appended there instead of
    printing the shell script; progress still goes to stderr (unless -q)."""
    entry: dict[str, Any] = {"plan": plan.to_json(), "applied": None}
    if collected is not None:
        collected.append(entry)
    else:
        click.echo(fit_script(plan.to_shell()), nl=False)  # 80 columns, the same script
    if plan.refused:
        say(f"fwdoctor: refused: {plan.refused.splitlines()[0]}")
        return None
    if not do_apply:
        note("# dry run: nothing was changed; add --apply to run this plan")
        return None

    def confirm(p: Plan) -> bool:
        return yes or click.confirm(f"Apply '{p.title}'?", default=False, err=True)

    result = apply_plan(plan, confirm=confirm, log_path=log_path, progress=note, waiting=waiting)
    entry["applied"] = _result_json(result)
    click.echo(result.summary(), err=True)
    return result


def _result_json(result: ApplyResult) -> dict[str, Any]:
    def outcomes(items: list) -> list[dict[str, Any]]:
        return [{"what": o.what, "status": o.status, "returncode": o.returncode} for o in items]

    return {"status": result.status, "ok": result.ok, "message": result.message, "log": result.log_path,
            "steps": outcomes(result.outcomes), "verify": outcomes(result.verify)}


def _finish_install(plan: Plan, do_apply: bool, yes: bool, log_path: str | None, as_json: bool) -> None:
    collected: list[dict[str, Any]] | None = [] if as_json else None
    result = _run(plan, do_apply, yes, log_path, collected)
    if collected is not None:
        emit_json("plan", collected[0])
    _exit_for(result, plan)


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
@click.option("--json", "as_json", is_flag=True, help="The plans (and with --apply their outcomes) as one JSON document instead of shell scripts.")
def fix(ids: tuple[str, ...], source: SourceRequest, do_apply: bool, yes: bool, log_path: str | None, kb_dir: str | None, as_json: bool) -> None:
    """Plan fixes for the current findings (all, or the finding ids named).

    \b
    Prints each plan as a commented shell script (dry run). With --apply: asks,
    runs it, logs everything, then checks again and exits 1 if a finding it should
    fix remains.
    Examples:
      fwdoctor fix
      fwdoctor fix driver-too-old-for-torch --apply
      fwdoctor fix --facts host.json          # what would be done there
    """
    if do_apply:
        live_only(source)
    planned = plan_fixes(ids, source, kb_dir)
    kb, facts, todo = planned.kb, planned.facts, planned.todo
    document: dict[str, Any] = {"plans": [], "manual": planned.manual_json(), "still_present": None,
                                "driver_first": todo.driver_first.to_json() if todo.driver_first else None}
    collected: list[dict[str, Any]] | None = document["plans"] if as_json else None

    def finish(code: int) -> None:
        if as_json:
            emit_json("plans", document)
        if code:
            sys.exit(code)

    if todo.empty:
        named = f" for {', '.join(ids)}" if ids else ""
        if as_json:
            return finish(0)
        click.echo(f"nothing to fix{named}: no current finding has a recipe")
        return
    for entry in document["manual"]:
        click.echo(f"# {entry['id']}: no recipe; by hand:", err=True)
        for command in entry["commands"]:
            click.echo(f"#   {command}", err=True)
    if todo.driver_first is not None:
        for line in todo.driver_first.lines():
            say(f"fwdoctor: {line}")
    plans: list[Plan] = []
    for group, plan in zip(todo.groups, planned.plans):
        note(f"# plan for: {', '.join(sorted(set(group.finding_ids)))}")
        result = _run(plan, do_apply, yes, log_path, collected)
        plans.append(plan)
        if result is not None and not result.ok:
            return finish(EXIT_FINDINGS)  # stop at the first failed plan; later ones may depend on it
    if any(plan.refused for plan in plans) or (todo.driver_first is not None and todo.driver_first.held):
        return finish(EXIT_FINDINGS)
    if not do_apply:
        return finish(0)
    # Check again, as a shell that sourced any env file we wrote would see the host.
    recheck = source.live(env_file=fixes.recheck_env(plans))
    # A plan that installed into a new venv (PEP 668) is checked there, not in the system Python.
    recheck = replace(recheck, python=next((p.target_python for p in plans if p.target_python), recheck.python))
    after = judge(facts_from(recheck), kb, RULES)
    targeted = {fid for group in todo.groups for fid in group.finding_ids}
    remaining = sorted({f.id for f in after.findings} & targeted)
    document["still_present"] = remaining
    if remaining:
        say(f"fwdoctor: still present after the fix: {', '.join(remaining)}")
        return finish(EXIT_FINDINGS)
    say(f"fixed: {', '.join(sorted(targeted))}")
    finish(0)


@dataclass(frozen=True)
class FixPlans:
    """What `fix` would do, planned and not applied: one plan per group of findings."""

    facts: Facts
    kb: KB
    todo: fixes.FixPlan
    plans: list[Plan]  # one per todo.groups, in its order

    def manual_json(self) -> list[dict[str, Any]]:
        """The findings with commands but no recipe: the user runs them by hand."""
        return [{"id": f.id, "commands": list(f.fix.commands) if f.fix else []} for f in self.todo.manual]


def plan_fixes(ids: Sequence[str], source: SourceRequest, kb_dir: str | None = None) -> FixPlans:
    """Every plan `fix` prints for `ids` (all current findings when empty), none applied
    (also the MCP server's `plan_fix` tool); DoctorError naming the input on failure."""
    for finding_id in ids:
        if finding_id not in BY_ID:
            fail(f"{finding_id}: unknown finding id{did_you_mean(finding_id)} (see `fwdoctor list`)")
    kb = load_kb(kb_dir)
    facts = facts_from(source)
    todo = fixes.hold_for_driver(fixes.group_findings(judge(facts, kb, RULES).findings, tuple(ids)), facts, kb)
    plans: list[Plan] = []
    for group in todo.groups:
        try:
            plans.append(fixes.plan_group(group, facts, kb, _host_path(source.env_file), source.python))
        except KeyError as exc:
            fail(f"{', '.join(group.finding_ids)}: {exc.args[0]}")
    return FixPlans(facts, kb, todo, plans)


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


def select_for(framework: str, source: SourceRequest, driver: str | None = None, gpus: Sequence[str] = (),
               torch_spec: str = "", cuda: str | None = None, kb_dir: str | None = None) -> Any:
    """The `select torch|jax|tensorflow` answer (also the MCP server's `select` tool): a
    selection whose to_json() is the command's --json body; DoctorError on bad input."""
    if framework == "torch":
        return _selection(source, driver, tuple(gpus), torch_spec, cuda, kb_dir)[3]
    return _framework_selection(framework, source, driver, tuple(gpus), kb_dir)[3]


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
      fwdoctor select torch --gpu "Tesla K80" --driver 470.82.01 \\
          --python 3.10 --json
    """
    _, _, _, selection = _selection(source, driver, gpus, torch_spec, cuda, kb_dir)
    if as_json:
        emit_json("selection", selection.to_json())
    else:
        click.echo(fit_text(sel.render_text(selection)), nl=False)
    if not selection.ok:
        sys.exit(EXIT_FINDINGS)


def _framework_selection(framework: str, source: SourceRequest, driver, gpus, kb_dir):
    kb = load_kb(kb_dir)
    interpreter, version = _split_python(source.python)
    facts = None
    if not (driver and gpus and version):  # flags alone describe another machine: no probing
        facts = facts_from(replace(source, python=interpreter))
    try:
        target = sel.target_from_facts(facts, kb, driver=driver, gpus=gpus, python=version)
    except sel.SelectError as exc:
        fail(str(exc))
    return kb, facts, target, select_frameworks.select_framework(kb, framework, target)


def _framework_select_cmd(framework: str):
    @select_group.command(framework)
    @source_options
    @click.option("--gpu", "gpus", multiple=True, metavar="CC|NAME", help="A GPU to run on (repeatable). Default: this host's.")
    @click.option("--driver", help="NVIDIA driver version to plan for (default: this host's).")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    @kb_option
    def command(source: SourceRequest, gpus, driver, as_json, kb_dir) -> None:
        _, _, _, selection = _framework_selection(framework, source, driver, gpus, kb_dir)
        if as_json:
            emit_json("selection", selection.to_json())
        else:
            click.echo(fit_text(select_frameworks.render_text(selection)), nl=False)
        if not selection.ok:
            sys.exit(EXIT_FINDINGS)

    command.__doc__ = f"""The newest {framework} release this machine runs (kb.frameworks), and why newer ones do not.

    \b
    --python takes an interpreter (inspect it) or a version X.Y (plan for it).
    Example: fwdoctor select {framework} --driver 535.104.05 --gpu 9.0 --python 3.11
    """
    return command


select_jax_cmd = _framework_select_cmd("jax")
select_tensorflow_cmd = _framework_select_cmd("tensorflow")


@select_group.command("grid")
@click.option("--driver", "drivers", multiple=True, metavar="VERSION", help=f"A driver version (repeatable). Default: {', '.join(sel.GRID_DRIVERS)}.")
@click.option("--gpu", "gpus", multiple=True, metavar="CC|NAME", help="A GPU (repeatable). Default: one part per architecture family, Tesla K80 to RTX 5090.")
@click.option("--python", "python", default="3.12", show_default=True, help="Target Python version X.Y.")
@click.option("--torch", "torch_spec", default="", help="Allowed torch versions, a specifier set.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown"]), default="text", show_default=True)
@kb_option
def select_grid_cmd(drivers, gpus, python, torch_spec, fmt, kb_dir) -> None:
    """Every `select torch` decision for drivers x GPUs, as one table.

    \b
    Each cell is the wheel a host with that driver and that single GPU gets, or
    why none: "no: R470 max" (the driver branch is newer than the GPU's last one),
    "no: R570+" (older than its first), "no wheel" (no official wheel fits). Reads
    only the KB.
    Examples:
      fwdoctor select grid
      fwdoctor select grid --driver 535.230.02 --gpu "Tesla K80" --gpu 8.6 \\
          --format markdown
    """
    kb = load_kb(kb_dir)
    try:
        rows = sel.decision_grid(kb, drivers or sel.GRID_DRIVERS, gpus or sel.GRID_GPUS, python, torch_spec)
    except sel.SelectError as exc:
        fail(str(exc))
    title = f"torch for Python {sel.python_minor(python)}{f', torch {torch_spec}' if torch_spec else ''}: drivers down, GPUs across"
    click.echo(f"{title}\n" if fmt == "markdown" else f"# {title}")
    click.echo(sel.render_grid(rows, fmt), nl=False)


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
@click.option("--venv", "venv", type=click.Path(file_okay=False), help="When the interpreter is externally managed (PEP 668): the venv to create or reuse [default: ./.venv].")
@click.option("--break-system-packages", is_flag=True, help="Install into an externally managed interpreter anyway (pip's flag of the same name).")
@_apply_options
@kb_option
@click.option("--json", "as_json", is_flag=True, help="The plan (and with --apply its outcome) as JSON instead of a shell script.")
def install_torch_cmd(source: SourceRequest, driver, gpus, torch_spec, cuda, installer, index_url, with_packages, no_deps, venv, break_system_packages, do_apply, yes, log_path, kb_dir, as_json) -> None:
    """Install the torch wheel `select torch` picks, pinned, into the target interpreter.

    \b
    --python names the interpreter to install into (default: the active venv/conda
    env, else python3 on PATH). A system Python marked EXTERNALLY-MANAGED (PEP
    668: Debian 12, Ubuntu 23.04+) is never installed into: the plan creates
    ./.venv (or --venv DIR) with it and installs there, unless
    --break-system-packages is given. Verifies afterwards: import torch,
    torch.version.cuda, is_available() on a GPU host.
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
        "venv": venv,
        "break_system_packages": break_system_packages,
    }
    if not options["python"]:
        fail("no target interpreter: pass --python /path/to/python")
    plan = torch_wheel.plan(facts, kb, options)
    _finish_install(plan, do_apply, yes, log_path, as_json)


def _framework_install_cmd(framework: str):
    @install_group.command(framework)
    @source_options
    @click.option("--gpu", "gpus", multiple=True, metavar="CC|NAME", help="A GPU to run on (repeatable). Default: this host's.")
    @click.option("--driver", help="NVIDIA driver version to plan for (default: this host's).")
    @click.option("--index-url", help="Install from this index instead (a mirror, a local index).")
    @_apply_options
    @kb_option
    @click.option("--json", "as_json", is_flag=True, help="The plan (and with --apply its outcome) as JSON instead of a shell script.")
    def command(source: SourceRequest, gpus, driver, index_url, do_apply, yes, log_path, kb_dir, as_json) -> None:
        if do_apply:
            live_only(source)
        interpreter, _ = _split_python(source.python)
        kb, facts, target, _ = _framework_selection(framework, source, driver, gpus, kb_dir)
        python = interpreter or (facts.get("python.executable") if facts is not None else None)
        plan = framework_wheel.plan(framework, target, kb, {"python": python, "index_url": index_url})
        _finish_install(plan, do_apply, yes, log_path, as_json)

    command.__doc__ = f"""Install the {framework} release `select {framework}` picks, with its CUDA wheels, pinned.

    \b
    Verifies afterwards: import it and list its devices.
    """
    return command


install_jax_cmd = _framework_install_cmd("jax")
install_tensorflow_cmd = _framework_install_cmd("tensorflow")


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
@click.option("--download-dir", type=click.Path(file_okay=False), help="Where downloads are kept (default: fwdoctor/downloads in $XDG_CACHE_HOME, else ~/.cache).")
@click.option("--env-out", type=click.Path(dir_okay=False), help="Where to write the env snippet (default: ~/.config/fwdoctor/cuda-X.Y.env.sh).")
@_apply_options
@kb_option
@click.option("--json", "as_json", is_flag=True, help="The plan (and with --apply its outcome) as JSON instead of a shell script.")
def install_cuda_toolkit_cmd(version, source: SourceRequest, method, prefix, link, force, runfile_url, sha256, keyring_sha256, index_url, download_dir, env_out, do_apply, yes, log_path, kb_dir, as_json) -> None:
    """Install CUDA toolkit VERSION (X.Y) beside the others; never the driver.

    \b
    Examples:
      fwdoctor install cuda-toolkit 12.8                # print the runfile plan
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
        # pip (--method pip) runs in the user's interpreter by the one policy; it only
        # needs pip, since the wheels go to --prefix with --target.
        "python": facts.get("python.executable"),
    }
    if options["method"] == "pip" and not options["python"]:
        fail("--method pip: no interpreter to run pip: pass --python /path/to/python")
    plan = cuda_toolkit.plan(facts, kb, options)
    _finish_install(plan, do_apply, yes, log_path, as_json)

