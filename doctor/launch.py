"""The `fwdoctor` command and `python -m fwdoctor`: the CLI, started with the dataclass
code cache (fwdoctor.codecache) in place before any of fwdoctor's classes is defined."""

from __future__ import annotations

import sys


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
