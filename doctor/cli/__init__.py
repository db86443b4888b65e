"""The `fwdoctor` command line: one thin layer over the core and the recipes.

Every command is registered from `COMMANDS`, a plain table in workflow order (the order
`fwdoctor --help` lists them). A command's module is imported when that command runs,
so `fwdoctor check` does not pay for importing the recipes, the smoke tests or the
build driver. Dependencies point one way: fwdoctor.cli -> fwdoctor.recipes -> the core.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from typing import Any

import click

from fwdoctor import __version__
from fwdoctor.cli import output
from fwdoctor.cli.errors import EXIT_DOCTOR, EXIT_FINDINGS, EXIT_OK, EXIT_PIPE_CLOSED, DoctorError, fail

__all__ = ["COMMANDS", "EXIT_DOCTOR", "EXIT_FINDINGS", "EXIT_OK", "DoctorError", "fail", "main"]

# (command name, module under fwdoctor.cli, attribute): the whole command line.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("check", "check", "check"),
    ("facts", "check", "facts"),
    ("triage", "triage", "triage"),
    ("explain", "catalog", "explain"),
    ("list", "catalog", "list_findings"),
    ("fix", "recipes", "fix"),
    ("select", "recipes", "select_group"),
    ("install", "recipes", "install_group"),
    ("smoke", "smoke", "smoke"),
    ("gate", "gate", "gate"),
    ("stack", "stack", "stack_group"),
    ("lock", "stack", "lock_command"),
    ("docker", "stack", "docker_group"),
    ("build", "build", "build_group"),
    ("fleet", "fleet", "fleet_group"),
    ("mcp", "mcp", "mcp"),
)


class TableGroup(click.Group):
    """A group whose commands come from a table of (name, module under fwdoctor.cli,
    attribute), listed in its order; a command's module is imported when it runs."""

    table: tuple[tuple[str, str, str], ...] = ()

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, _, _ in self.table]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = next(((module, attr) for name, module, attr in self.table if name == cmd_name), None)
        if where is None:
            return None
        module = importlib.import_module(f"fwdoctor.cli.{where[0]}")
        command: click.Command = getattr(module, where[1])
        return command


# The root's own options (main's below), also accepted after the command as users type them
# (`fwdoctor check -q`, `fwdoctor explain ID --no-cache`), unless that command has an
# option of the same name (build --debug; check's own --no-cache means the same).
GLOBAL_FLAGS = ("-q", "--quiet", "--debug", "--no-cache")
GLOBAL_VALUED = ("--color",)


class Group(TableGroup):
    """The top-level commands (COMMANDS); nothing escapes as a traceback."""

    table = COMMANDS

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self._hoist_globals(ctx, list(args)))

    def _hoist_globals(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Move -q/--debug/--no-cache/--color X found after the command (before any `--`) in front of it."""
        at = 0
        while at < len(args) and args[at].startswith("-") and args[at] != "--":
            at += 2 if args[at] in GLOBAL_VALUED else 1
        if at >= len(args) or args[at] == "--":
            return args
        own = self._chain_options(ctx, args[at:])
        head, rest, moved = args[:at + 1], args[at + 1:], []
        kept: list[str] = []
        index = 0
        while index < len(rest):
            token = rest[index]
            if token == "--":
                kept += rest[index:]
                break
            name = token.split("=", 1)[0]
            if name in own:
                kept.append(token)
            elif token in GLOBAL_FLAGS:
                moved.append(token)
            elif name in GLOBAL_VALUED and "=" in token:
                moved.append(token)
            elif token in GLOBAL_VALUED and index + 1 < len(rest):
                moved += rest[index:index + 2]
                index += 1
            else:
                kept.append(token)
            index += 1
        return moved + head + kept if moved else args

    def _chain_options(self, ctx: click.Context, args: list[str]) -> set[str]:
        """The option names of the command args[0] names and of its subcommands named after it."""
        names: set[str] = set()
        command: click.Command | None = self.get_command(ctx, args[0]) if args[0] in self.list_commands(ctx) else None
        rest = args[1:]
        while command is not None:
            for param in command.params:
                names.update(getattr(param, "opts", ()))
                names.update(getattr(param, "secondary_opts", ()))
            if not isinstance(command, click.Group):
                break
            following = next((a for a in rest if a in command.list_commands(ctx)), None)
            if following is None:
                break
            rest = rest[rest.index(following) + 1:]
            command = command.get_command(ctx, following)
        return names

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name = click.utils.make_str(args[0]) if args else ""
        if args and not name.startswith("-") and name not in self.list_commands(ctx):
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint} `fwdoctor --help` lists them.")
        return super().resolve_command(ctx, args)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        # Ctrl-C while click parses the line: exit 130 like any other interruption, not
        # click's "Aborted!" with 1, the code for "error findings".
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:
            raise _interrupted() from None

    def invoke(self, ctx: click.Context) -> Any:
        # SIGINT/SIGTERM/SIGHUP end every process this command started, then exit
        # 128+signal with one line (doctor/children.py: ending_tree_on_signals).
        # fwdoctor.children, not the runner: a command that starts no child (triage,
        # explain) need not import subprocess for its handlers (issue 30).
        from fwdoctor import children

        with children.ending_tree_on_signals() as stop:
            try:
                value = self._invoke(ctx)
            except KeyboardInterrupt:
                if stop.signum is None:  # before the handlers were in place (a command module importing)
                    raise _interrupted() from None
                value = None
            except BaseException:
                if stop.signum is None:
                    raise
                value = None
            if stop.signum is not None:
                children.end_all_children()
                click.echo(f"fwdoctor: stopped by {stop.name}; every process it started was ended", err=True)
                raise click.exceptions.Exit(stop.exit_code)
            return value

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except BrokenPipeError:  # `fwdoctor list | head -1`: the reader has all it wanted
            raise _pipe_closed() from None
        except Exception as exc:  # last resort: a bug, reported in one line
            if output.settings().debug:
                traceback.print_exc()  # --debug: the whole story, then the one line
            raise DoctorError(f"internal error: {type(exc).__name__}: {exc} (please report this; --debug shows the traceback)") from exc


def _pipe_closed() -> click.exceptions.Exit:
    """Exit 141 (128 + SIGPIPE, what a shell shows for `git log | head`) without a word,
    and with standard output on /dev/null so that Python's last flush has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's capture): nothing to quiet
        pass
    return click.exceptions.Exit(EXIT_PIPE_CLOSED)


def _interrupted() -> click.exceptions.Exit:
    click.echo("fwdoctor: interrupted", err=True)
    return click.exceptions.Exit(130)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """--version: fwdoctor's version, then the day its knowledge base was last refreshed
    (the KB in effect: $FWDOCTOR_KB or the bundled one)."""
    if not value or ctx.resilient_parsing:
        return
    from fwdoctor.kb import default_kb_dir, kb_refreshed

    date = kb_refreshed()
    click.echo(f"fwdoctor, version {__version__}")
    click.echo(f"knowledge base: {default_kb_dir()}, refreshed {date}" if date else f"knowledge base: {default_kb_dir()}, date unknown (no `refreshed:` in its sources.yaml)")
    ctx.exit()


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 80})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and the date of the knowledge base, then exit.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour in text reports; auto: only on a terminal, and never when NO_COLOR is set.")
@click.option("-q", "--quiet", is_flag=True, help="No progress or remarks on stderr (errors still show).")
@click.option("--debug", is_flag=True, envvar="FWDOCTOR_DEBUG", help="Show the traceback behind an internal error (or set FWDOCTOR_DEBUG=1).")
@click.option("--no-cache", is_flag=True, help="Reuse nothing cached: run every probe command again (answers are cached by each program file's identity) and parse the knowledge base anew.")
@click.pass_context
def main(ctx: click.Context, color: str, quiet: bool, debug: bool, no_cache: bool) -> None:
    """fwdoctor: diagnose and fix deep-learning GPU servers.

    \b
    The workflow, in the order the commands are listed below:
      fwdoctor check             inspect this host: problems, evidence, fixes
      fwdoctor explain ID        what a finding means and how to fix it
      fwdoctor fix               plan (or --apply) the fixes for the findings
      fwdoctor select torch      the newest torch wheel this host runs, and why
      fwdoctor smoke all         prove it: GPU kernels, nvcc, all-reduce
      fwdoctor lock / docker     freeze a stack: hashed lock, Dockerfile, image
      fwdoctor build torch       a PyTorch source build, explicit CUDA/NCCL/Python
      fwdoctor fleet report DIR  many nodes' facts: what differs, node by node
      fwdoctor mcp               the read-only answers above, for an assistant

    Exit codes: 0 healthy, 1 error findings (or a refused/failed action), 2 fwdoctor
    itself failed (bad input), always with a one-line reason.

    \b
    Every command that reports takes --json: one document on stdout whose
    "schema_version" and "kind" say what it is.
    Shell completion (bash; zsh and fish alike with zsh_source / fish_source):
      eval "$(_FWDOCTOR_COMPLETE=bash_source fwdoctor)"     # in ~/.bashrc
    """
    output.configure(ctx, color, quiet, debug, no_cache)
