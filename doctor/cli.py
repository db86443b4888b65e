"""The `fwdoctor` command line. Parse, call, render; no logic lives here.

Exit codes: 0 no error findings, 1 error findings (or a failed gate), 2 the doctor itself
failed (bad arguments, unreadable env file, broken KB), always with a one-line reason.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click

from doctor import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_DOCTOR = 0, 1, 2


class DoctorError(click.ClickException):
    """The doctor itself failed: one line on stderr, exit 2."""

    exit_code = EXIT_DOCTOR

    def show(self, file: Any = None) -> None:
        click.echo(f"fwdoctor: error: {self.format_message()}", err=True)


def fail(message: str) -> NoReturn:
    raise DoctorError(message)


class Group(click.Group):
    """Click's usage errors exit 2 already; make sure nothing else escapes as a traceback."""

    _ext_loaded = False

    def _load_ext(self) -> None:
        # Feature commands (smoke, fix, select, install, stack, lock, docker, build) are
        # added on first use: they import doctor.cli themselves, so importing them at
        # module load would be circular, and `fwdoctor check` need not pay for them.
        if not Group._ext_loaded:
            Group._ext_loaded = True
            from doctor.cli_ext import COMMANDS

            for command in COMMANDS:
                self.add_command(command)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None:
            self._load_ext()
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_ext()
        return super().list_commands(ctx)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:  # last resort: a bug, reported in one line
            raise DoctorError(f"internal error: {type(exc).__name__}: {exc} (please report this)") from exc


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="fwdoctor")
def main() -> None:
    """fwdoctor: diagnose and fix deep-learning GPU servers.

    \b
    Start here:
      fwdoctor check                 inspect this host, report problems and fixes
      fwdoctor check --deep          also import torch (in a child process) for ground truth
      fwdoctor explain ID            what a finding means and how to fix it
      fwdoctor check --root DIR      judge a container rootfs or a copied tree as if it were /

    Exit codes: 0 healthy, 1 error findings, 2 fwdoctor itself failed.
    """


# ----------------------------------------------------------------------------- inputs
def load_kb(kb_dir: str | None):
    from doctor.kb import KB, KBError

    try:
        return KB.load(kb_dir)
    except KBError as exc:
        fail(f"knowledge base: {exc}")


def gather_facts(
    root: str | None,
    env_file: str | None,
    facts_file: str | None,
    image: str | None,
    deep: bool,
    python: str | None,
    timeout: float,
    against_host: bool = False,
):
    """Facts from exactly one source: a saved file, an image, a root folder, or this host."""
    from doctor.engine import collect
    from doctor.host import EnvFileError, Host, load_env_file
    from doctor.model import Fact, Facts
    from doctor.probes import PROBES

    chosen = [name for name, value in (("--root", root), ("--facts", facts_file), ("--image", image)) if value]
    if len(chosen) > 1:
        fail(f"{' and '.join(chosen)} cannot be combined: pick one source of facts")
    if facts_file:
        try:
            with open(facts_file, encoding="utf-8") as handle:
                data = json.load(handle)
            return Facts.from_json(data)
        except OSError as exc:
            fail(f"--facts {facts_file}: {exc.strerror or exc}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            fail(f"--facts {facts_file}: not JSON: {exc}")
        except ValueError as exc:
            fail(f"--facts {facts_file}: {exc}")
    env = None
    if env_file:
        try:
            env = load_env_file(env_file)
        except EnvFileError as exc:
            fail(str(exc))
    extra: list[Fact] = []
    if python:
        extra.append(Fact("request.python", python, source="--python"))
    if image:
        from doctor import image as image_mod

        try:
            exported = image_mod.export(image)
        except image_mod.ImageError as exc:
            fail(f"--image {image}: {exc}")
        root, env = exported.root, {**exported.env, **(env or {})}
    if root:
        try:
            host = Host.at_root(root, env)
        except (NotADirectoryError, OSError) as exc:
            fail(str(exc))
        if deep:
            click.echo("fwdoctor: --deep ignored with --root/--image: nothing inside a root folder is executed", err=True)
            deep = False
    else:
        host = Host.live_host(env, command_timeout=timeout)
    facts = collect(host, PROBES, deep=deep, seed=extra)
    if image or (root and against_host):
        # An image runs on this host: its driver and GPUs are this host's, not the image's.
        from doctor.engine import overlay_host
        from doctor.probes import driver as driver_probes
        from doctor.probes import gpus as gpu_probes

        live = Host.live_host(None, command_timeout=timeout)
        facts = overlay_host(facts, collect(live, (*driver_probes.PROBES, *gpu_probes.PROBES)))
    return facts


_source_options = [
    click.option("--root", type=click.Path(file_okay=False), help="Inspect DIR as if it were / (a container rootfs, a copied tree). Nothing inside it runs."),
    click.option("--env-file", type=click.Path(dir_okay=False), help="KEY=VALUE lines used as the environment (PATH, LD_LIBRARY_PATH, CUDA_HOME, VIRTUAL_ENV...). No shell expansion."),
    click.option("--facts", "facts_file", type=click.Path(dir_okay=False), help="Re-judge facts saved by `fwdoctor facts` (from another machine, or with a newer KB)."),
    click.option("--image", help="Judge a Docker image's filesystem and ENV without running it (needs a Docker engine), against this host's driver and GPUs."),
    click.option("--against-host", is_flag=True, help="With --root: take the driver and GPUs from this host (the machine the rootfs will run on), as --image does."),
    click.option("--deep", is_flag=True, help="Also import torch in the target interpreter (child process, with a timeout)."),
    click.option("--python", help="The interpreter whose environment to inspect (default: the active venv/conda env, else python3 on PATH)."),
    click.option("--timeout", type=float, default=10.0, show_default=True, help="Seconds allowed for each command the probes run."),
]


def source_options(func):
    for option in reversed(_source_options):
        func = option(func)
    return func


# ----------------------------------------------------------------------------- commands
@main.command()
@source_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (same as --format json).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True, help="markdown strips UUIDs and home paths, for pasting into a bug report.")
@click.option("-v", "--verbose", is_flag=True, help="Show the evidence behind each finding and the checks that could not run.")
@click.option("--only", multiple=True, metavar="ID", help="Only evaluate these finding ids (repeatable).")
@click.option("--kb", "kb_dir", type=click.Path(file_okay=False), help="Use another knowledge-base folder (default: the bundled one).")
def check(root, env_file, facts_file, image, against_host, deep, python, timeout, as_json, fmt, verbose, only, kb_dir) -> None:
    """Inspect the host and report problems, each with evidence and a fix.

    \b
    Examples:
      fwdoctor check
      fwdoctor check --deep -v
      fwdoctor check --root /srv/rootfs --env-file image.env --json
      fwdoctor facts > host.json; fwdoctor check --facts host.json
    """
    from doctor import report as rep
    from doctor.engine import judge
    from doctor.findings import BY_ID
    from doctor.rules import RULES

    for finding_id in only:
        if finding_id not in BY_ID:
            fail(f"--only {finding_id}: unknown finding id (see `fwdoctor list`)")
    from concurrent.futures import ThreadPoolExecutor

    # The KB parses while the probes read the host (and, with --deep, while torch imports
    # in its child): neither waits for the other.
    with ThreadPoolExecutor(max_workers=1) as pool:
        kb_future = pool.submit(load_kb, kb_dir)
        facts = gather_facts(root, env_file, facts_file, image, deep, python, timeout, against_host)
        kb = kb_future.result()
    report = judge(facts, kb, RULES, only=only or None)
    fmt = "json" if as_json else fmt
    if fmt == "json":
        click.echo(rep.render_json(report), nl=False)
    elif fmt == "markdown":
        click.echo(rep.render_markdown(report), nl=False)
    else:
        click.echo(rep.render_text(report, verbose=verbose, color=sys.stdout.isatty()), nl=False)
    sys.exit(report.exit_code)


@main.command()
@source_options
def facts(root, env_file, facts_file, image, against_host, deep, python, timeout) -> None:
    """Print the facts about the host as JSON (save them; re-judge with `check --facts`)."""
    collected = gather_facts(root, env_file, facts_file, image, deep, python, timeout, against_host)
    click.echo(json.dumps({"fwdoctor": __version__, **collected.to_json()}, indent=2, default=str))


@main.command("list")
@click.option("--json", "as_json", is_flag=True)
def list_findings(as_json: bool) -> None:
    """List every finding id with its code, default severity and area."""
    from doctor.findings import FINDING_KINDS

    if as_json:
        click.echo(json.dumps([{"id": k.id, "code": k.code, "severity": k.severity.value, "area": k.area, "title": k.title} for k in FINDING_KINDS], indent=2))
        return
    for k in FINDING_KINDS:
        click.echo(f"{k.code}  {k.severity.value:<7}  {k.id:<32} {k.title}")


@main.command()
@click.argument("finding_id")
def explain(finding_id: str) -> None:
    """Explain a finding: what it checks, the error users see, and the fix.

    FINDING_ID is an id (`driver-too-old-for-torch`) or a code (`FWD104`).
    """
    from doctor.explain import explanation

    try:
        click.echo(explanation(finding_id))
    except KeyError as exc:
        fail(str(exc.args[0]))
