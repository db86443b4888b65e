"""python -m tests.gpuhost SCENARIO.json -- COMMAND ARGS...

Runs COMMAND in a private mount namespace where the NVIDIA driver of SCENARIO.json is
"installed" (see README.md, "A GPU host without a GPU"), and exits with its status.
Needs root. Exit 125 when the fake host cannot be set up; 127 when COMMAND is not found.
"""

from __future__ import annotations

import sys

from .build import BuildError
from .runner import Unavailable, run
from .scenario import ScenarioError, load

USAGE = "usage: python -m tests.gpuhost [--keep] SCENARIO.json -- COMMAND ARGS...\n"


def main(argv: list[str]) -> int:
    keep = False
    if argv[:1] == ["--keep"]:
        keep, argv = True, argv[1:]
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write(USAGE)
        return 2
    try:
        scenario = load(argv[0])
        return run(scenario, argv[2:], keep_world=keep)
    except (ScenarioError, BuildError, Unavailable) as exc:
        sys.stderr.write(f"gpuhost: {exc}\n")
        return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
