"""A GPU host without a GPU: a stand-in libnvidia-ml.so.1 (nvml_standin.c) and the kernel's
files (/proc/driver/nvidia, /sys, /dev, /proc/modules) of a scenario, mounted in a private
mount namespace around one command. Interface: `python -m tests.gpuhost SCENARIO.json --
COMMAND ARGS...`; scenarios in tests/gpuhost/scenarios/; format in README.md.
"""

from __future__ import annotations

from pathlib import Path

from .runner import Unavailable, exit_status, run, started, unavailable_reason
from .scenario import Scenario, ScenarioError, load, parse

SCENARIOS = Path(__file__).resolve().with_name("scenarios")

__all__ = ["SCENARIOS", "Scenario", "ScenarioError", "Unavailable", "load", "parse", "run", "started", "exit_status", "unavailable_reason"]
