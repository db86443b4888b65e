"""The `fwdoctor` command and `python -m fwdoctor`: the CLI, started with the dataclass
code cache (fwdoctor.codecache) in place before any of fwdoctor's classes is defined.

`run` is the process's entry point: it sets the process-wide policies (the collector's
threshold, the quick exit) that a library importing fwdoctor must never get, around `main`,
which tests and tools may call in their own interpreter.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading

from fwdoctor.cli.errors import EXIT_PIPE_CLOSED

# A run allocates mostly objects that live to its end (modules, classes, the KB's rows):
# at CPython's default threshold (700) a static check makes dozens of young-generation
# collections that free nothing, ~9 ms of a ~0.15 s run (benchmarks/check_speed.py). At
# this threshold a long command (a smoke test, the MCP server) still collects its cycles.
GC_YOUNG_THRESHOLD = 50_000


def main() -> None:
    from fwdoctor import codecache

    # `--no-cache` turns every cache off; it is looked for before click has parsed anything,
    # since the classes are defined while the CLI is imported.
    cache = None if "--no-cache" in sys.argv[1:] else codecache.install(codecache.default_path())
    try:
        from fwdoctor.cli import main as cli

        cli(prog_name="fwdoctor")
    finally:
        if cache is not None:
            cache.save()


def run() -> None:
    """`fwdoctor ARGS`: `main`, then the quickest exit that loses nothing."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)
    try:
        main()
    except SystemExit as done:
        if isinstance(done.code, (int, type(None))):  # a text code is printed by Python's exit
            _exit_now(done.code or 0)
        raise


def _exit_now(code: int) -> None:
    """End the process at once with `code` when nothing is left to do at exit; return when
    the interpreter's own shutdown must run.

    The interpreter's shutdown frees every module and the KB's objects one by one (~15 ms
    of a static check) for a process about to end. It is skipped only when it has nothing
    else to do: no atexit callback (logging's flush, weakref.finalize's temporary folders),
    no thread Python's exit would wait for (a non-daemon one), and both standard streams
    flushed. Files fwdoctor writes are closed where they are written (`with`), so none holds
    unwritten data here.
    """
    registered = getattr(atexit, "_ncallbacks", None)  # CPython's count; elsewhere: never the quick exit
    main = threading.main_thread()
    # Python's exit waits for threads that are not daemons; daemon threads (a probe left on a
    # stalled mount) end with the process either way.
    if registered is None or registered() != 0 or any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BrokenPipeError:  # the reader left before the last of the output: as the CLI does
        os._exit(EXIT_PIPE_CLOSED)
    except (OSError, ValueError):  # a stream closed or failing: Python's own exit reports it
        return
    os._exit(code)
