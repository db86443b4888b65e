"""Where the facts come from: this host, a root folder, an image, or a saved facts file.

Every command that judges or plans (check, facts, fix, select, install, smoke all) asks
for facts the same way: a `SourceRequest` says which source and how, `gather()` returns
the Facts or raises `SourceError` with a one-line reason naming the input. Nothing here
knows about the command line; the CLI turns a SourceError into exit 2.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from fwdoctor import interpreter
from fwdoctor.host import EnvFileError, Host, load_env_file, read_regular_file
from fwdoctor.model import TIMESTAMP_FORMAT, Fact, Facts, Provenance
from fwdoctor.probecache import ProbeCache

# The engine and the probes (every probe module, ~50 ms of imports) are imported where they
# run, not here: `check --deep` starts its torch child before paying for them (issue 30).


# A facts file from a big host is well under 1 MiB; the cap keeps a wrong file (a disk
# image, /dev/zero) from being read whole into memory.
MAX_FACTS_FILE_BYTES = 64 * 1024 * 1024


class SourceError(Exception):
    """The requested source cannot be read; the message names the input."""


@dataclass(frozen=True)
class SourceRequest:
    """One source of facts and how to read it (the CLI's --root/--facts/--image/... flags)."""

    root: str | None = None
    env_file: str | None = None
    facts_file: str | None = None
    image: str | None = None
    image_archive: str | None = None
    against_host: bool = False
    deep: bool = False
    python: str | None = None
    timeout: float = 10.0
    no_cache: bool = False  # --no-cache: run every probe command, read no cached answer

    @property
    def is_live(self) -> bool:
        """True when the facts describe this host (nothing else was named)."""
        return not (self.root or self.facts_file or self.image or self.image_archive)

    def live(self, env_file: str | None = None) -> "SourceRequest":
        """The same request about this host (a re-check after a fix)."""
        return replace(self, root=None, facts_file=None, image=None, image_archive=None, against_host=False, env_file=env_file or self.env_file)

    def chosen(self) -> list[str]:
        return [name for name, value in (("--root", self.root), ("--facts", self.facts_file), ("--image", self.image), ("--image-archive", self.image_archive)) if value]


def gather(request: SourceRequest, notice: Callable[[str], None] | None = None) -> Facts:
    """Facts from exactly one source. `notice` receives remarks for the user (an ignored
    --deep). Raises SourceError."""
    chosen = request.chosen()
    if len(chosen) > 1:
        raise SourceError(f"{' and '.join(chosen)} cannot be combined: pick one source of facts")
    if request.facts_file:
        return read_facts_file(request.facts_file)
    collected_at = utc_now()
    env = None
    if request.env_file:
        try:
            env = load_env_file(request.env_file)
        except EnvFileError as exc:
            raise SourceError(str(exc)) from None
    seed: list[Fact] = []
    if request.python:
        seed.append(Fact("request.python", request.python, source="--python"))
    root, deep = request.root, request.deep
    image_host = None
    if request.image or request.image_archive:
        # Imported here: tarfile, the Docker SDK and the image tree are the images' alone.
        from fwdoctor.image import archive, local_engine
        from fwdoctor.image.inspected import ImageError

        flag, name = ("--image", request.image) if request.image else ("--image-archive", request.image_archive)
        try:
            # Read into memory (the files the probes read, the names of the rest): nothing
            # is unpacked to disk, whatever the image's size.
            inspected = local_engine.inspect(request.image) if request.image else archive.load(str(name))
        except ImageError as exc:
            raise SourceError(f"{flag} {name}: {exc}") from None
        image_host = inspected.host(env)
    if image_host is not None:
        host = image_host
        if deep and notice is not None:
            notice("--deep ignored with --root/--image: nothing inside a root folder is executed")
        deep = False
    elif root:
        try:
            host = Host.at_root(root, env)
        except (NotADirectoryError, OSError) as exc:
            raise SourceError(str(exc)) from None
        if deep and notice is not None:
            notice("--deep ignored with --root/--image: nothing inside a root folder is executed")
        deep = False
    else:
        # Version answers cached by each program file's identity (fwdoctor/probecache.py);
        # a root or an image runs nothing, so there is nothing to cache there.
        host = Host.live_host(env, command_timeout=request.timeout, probe_cache=None if request.no_cache else ProbeCache.default())
    # --timeout bounds each probe too (engine.probe_deadline), on roots and images alike.
    host.command_timeout = request.timeout
    early = None
    if deep and host.live:
        # `import torch` takes seconds: it starts first, in the interpreter the python probe
        # will choose, and the imports, the interpreter query and every static probe below
        # run while it imports (fwdoctor.deepstart).
        from fwdoctor import deepstart

        early = deepstart.start_early(host, interpreter.choose(host, request.python).path)
    if request.python:
        # A --python that is not there (or does not run) must stop the command, not turn
        # every Python fact into "unknown" under an exit status of 0.
        try:
            interpreter.resolve(host, request.python)
        except interpreter.InterpreterError as exc:
            if early is not None:
                early.cancel()
            where = f" inside {root}" if root else ""
            raise SourceError(f"{exc}{where}") from None
    from fwdoctor.engine import collect, overlay_host
    from fwdoctor.probes import PROBES

    facts = collect(host, PROBES, deep=deep, seed=seed)
    if request.image or request.image_archive or (root and request.against_host):
        facts = overlay_host(facts, host_facts(request.timeout))
    facts.provenance = provenance_of(facts, collected_at)
    return facts


def utc_now() -> str:
    """This moment in UTC as every document writes it: "2026-12-01T17:50:23Z"."""
    return _dt.datetime.now(_dt.timezone.utc).strftime(TIMESTAMP_FORMAT)


def provenance_of(facts: Facts, collected_at: str | None) -> Provenance:
    """Whose facts: the name and its source from `system.hostname` (the live host's
    gethostname(), or the root's or image's /etc/hostname)."""
    fact = facts.fact("system.hostname")
    if fact is None:
        return Provenance(None, "not probed", collected_at)
    if not fact.is_known:
        return Provenance(None, f"unknown: {fact.why}", collected_at)
    name = fact.value if isinstance(fact.value, str) else None
    return Provenance(name, fact.source, collected_at)


def live_provenance(collected_at: str | None = None) -> Provenance:
    """This host's name, now (or at `collected_at`): what a smoke result says it ran on."""
    from fwdoctor.probes import system as system_probes

    facts = Facts([system_probes.hostname_fact(Host.live_host())])
    return provenance_of(facts, collected_at or utc_now())


def host_facts(timeout: float = 10.0, probes: Sequence | None = None) -> Facts:
    """This host's driver and GPUs (default `probes`): what an image or rootfs runs against."""
    from fwdoctor.engine import collect
    from fwdoctor.probes import driver as driver_probes
    from fwdoctor.probes import gpus as gpu_probes

    chosen = (*driver_probes.PROBES, *gpu_probes.PROBES) if probes is None else probes
    return collect(Host.live_host(None, command_timeout=timeout), chosen)


def read_facts_file(path: str) -> Facts:
    """Facts saved by `fwdoctor facts`. Raises SourceError naming the file."""
    try:
        data = json.loads(read_regular_file(path, MAX_FACTS_FILE_BYTES, "--facts").decode("utf-8"))
        facts = Facts.from_json(data)
    except UnicodeDecodeError:
        raise SourceError(f"--facts {path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise SourceError(f"--facts {path}: not JSON: {exc}") from None
    except RecursionError:
        raise SourceError(f"--facts {path}: nested too deeply to be facts from `fwdoctor facts`") from None
    except ValueError as exc:
        msg = str(exc)
        raise SourceError(msg if msg.startswith("--facts ") else f"--facts {path}: {msg}") from None
    if facts.provenance is None:
        # A file from before facts said whose they are: the name only if a system.hostname
        # fact has it, the time unknown (a file's mtime is when it was copied, not collected).
        known = facts.get("system.hostname")
        facts.provenance = Provenance(known if isinstance(known, str) else None, f"facts file {path} (no host recorded)", None)
    return facts
