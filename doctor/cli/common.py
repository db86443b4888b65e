"""What every command shares: the source and KB options, loading the KB, options helpers.

The exit codes and the one-line error live in fwdoctor.cli.errors (re-exported here).
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

import click

from fwdoctor.cli.output import note, settings
from fwdoctor.cli.errors import EXIT_DOCTOR, EXIT_FINDINGS, EXIT_OK, DoctorError, fail, findings_exit
from fwdoctor.kb import KB, KBError

if TYPE_CHECKING:
    from fwdoctor.model import Facts
    from fwdoctor.sources import SourceRequest

# fwdoctor.sources (the host, the runner, the probe cache) is imported when a command reads
# a source: `triage` and `explain` share this module and read none (issue 30).

__all__ = [
    "EXIT_DOCTOR", "EXIT_FINDINGS", "EXIT_OK", "DoctorError", "fail", "findings_exit",
    "facts_from", "kb_option", "live_only", "load_kb", "source_options", "with_options",
]

F = TypeVar("F", bound=Callable[..., Any])


def with_options(options: list[Callable[[F], F]]) -> Callable[[F], F]:
    """Apply click options in the order listed (the order `--help` shows)."""

    def wrap(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return wrap


# ----------------------------------------------------------------------------- KB
def kb_option(func: F) -> F:
    return click.option("--kb", "kb_dir", type=click.Path(file_okay=False), help="Use another knowledge-base folder (default: $FWDOCTOR_KB if set, else the bundled one).")(func)


def load_kb(kb_dir: str | None, areas: Sequence[str] | None = None) -> KB:
    """The KB with `areas` (default: all) validated now; exit 2 naming the bad row."""
    try:
        return KB.load(kb_dir, areas=areas)
    except KBError as exc:
        fail(f"knowledge base: {exc}")


# ----------------------------------------------------------------------------- sources
MAX_SECONDS = 7 * 24 * 3600.0  # past a week a "timeout" is a typo, and time.monotonic() + inf breaks waits


def seconds(value: float, flag: str) -> float:
    """A duration option's value: finite, above zero, at most a week; else a usage error (exit 2)."""
    if not math.isfinite(value) or value <= 0 or value > MAX_SECONDS:
        raise click.BadParameter(f"{value!r} is not a number of seconds (above 0, at most {MAX_SECONDS:g})", param_hint=f"'{flag}'")
    return value


_SOURCE_OPTIONS = [
    click.option("--root", type=click.Path(file_okay=False), help="Inspect DIR as if it were / (a container rootfs, a copied tree). Nothing inside it runs."),
    click.option("--env-file", type=click.Path(dir_okay=False), help="KEY=VALUE lines used as the environment (PATH, LD_LIBRARY_PATH, CUDA_HOME, VIRTUAL_ENV...). No shell expansion."),
    click.option("--facts", "facts_file", type=click.Path(dir_okay=False), help="Re-judge facts saved by `fwdoctor facts` (from another machine, or with a newer KB)."),
    click.option("--image", help="Judge a Docker image's filesystem and ENV without running it (needs a Docker engine), against this host's driver and GPUs."),
    click.option("--image-archive", type=click.Path(), help="Judge a `docker save` tarball or an OCI image layout (file or folder) the same way, with no Docker engine."),
    click.option("--against-host", is_flag=True, help="With --root: take the driver and GPUs from this host (the machine the rootfs will run on), as --image does."),
    click.option("--deep", is_flag=True, help="Also import torch in the target interpreter (child process, with a timeout)."),
    click.option("--python", help="The interpreter whose environment to inspect (default: the active venv/conda env, else python3 on PATH)."),
    click.option("--timeout", type=float, default=10.0, show_default=True, callback=lambda ctx, param, value: seconds(value, "--timeout"), help="Seconds allowed for each command the probes run."),
    click.option("--no-cache", is_flag=True, help="Reuse nothing cached: run every probe command again and parse the knowledge base anew (also: fwdoctor --no-cache)."),
]
_SOURCE_NAMES = ("root", "env_file", "facts_file", "image", "image_archive", "against_host", "deep", "python", "timeout", "no_cache")


def source_options(func: F) -> F:
    """Add the source flags; the command receives them as one `source: SourceRequest`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from fwdoctor.sources import SourceRequest

        kwargs["source"] = SourceRequest(**{name: kwargs.pop(name) for name in _SOURCE_NAMES})
        if settings().no_cache:  # the global `fwdoctor --no-cache COMMAND`
            kwargs["source"] = replace(kwargs["source"], no_cache=True)
        elif kwargs["source"].no_cache:  # `check --no-cache`: the KB is parsed anew too
            from fwdoctor.kb import cache

            cache.bypass(True)
        return func(*args, **kwargs)

    return with_options(_SOURCE_OPTIONS)(wrapper)  # type: ignore[return-value]


def facts_from(source: SourceRequest) -> Facts:
    """The facts `source` names; exit 2 with the reason when they cannot be had."""
    from fwdoctor.sources import SourceError, gather

    try:
        # A remark ("--deep ignored ..."), not an error: -q silences it (issue 29).
        return gather(source, notice=lambda text: note(f"fwdoctor: {text}"))
    except SourceError as exc:
        fail(str(exc))


def live_only(source: SourceRequest) -> None:
    """--apply changes this host: refuse any other source of facts."""
    for flag in source.chosen():
        fail(f"--apply changes this host; it cannot be combined with {flag}")
