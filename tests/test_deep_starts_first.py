"""`check --deep` starts its torch child before anything else (issue 30, item 2).

Importing torch takes seconds and everything else a check does a fraction of one, so the
child must be started first and the rest overlap with it. An order, read from an event
log (every child the runner starts, every static probe the engine runs), never a timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import fwdoctor.engine as engine
from fwdoctor import runner
from fwdoctor.cli import main


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fresh venv without torch: its torch child ends at once with ImportError."""
    venv = tmp_path_factory.mktemp("deep") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return str(venv / "bin" / "python")


def _is_torch_child(argv: tuple[str, ...]) -> bool:
    return len(argv) == 3 and argv[1] == "-c" and "import torch" in argv[2]


def _is_interpreter_query(argv: tuple[str, ...]) -> bool:
    return len(argv) > 1 and argv[1] == "-I"


def test_the_torch_child_is_spawned_before_the_interpreter_query_and_every_static_probe(
        bare_python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[str, object]] = []
    real_popen, real_run_probe = runner._popen, engine._run_probe

    def popen(args: tuple[str, ...], **kwargs: object):  # type: ignore[no-untyped-def]
        events.append(("spawn", args))
        return real_popen(args, **kwargs)

    def run_probe(item, host, facts):  # type: ignore[no-untyped-def]
        if not item.deep:
            events.append(("probe", item.name))
        return real_run_probe(item, host, facts)

    monkeypatch.setattr(runner, "_popen", popen)
    monkeypatch.setattr(engine, "_run_probe", run_probe)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # an empty probe cache: the query runs
    monkeypatch.delenv("FWDOCTOR_NO_CACHE", raising=False)
    result = CliRunner().invoke(main, ["check", "--python", bare_python, "--deep", "--json"])
    assert result.exit_code in (0, 1), result.output
    torch_children = [i for i, (kind, what) in enumerate(events) if kind == "spawn" and _is_torch_child(what)]  # type: ignore[arg-type]
    assert len(torch_children) == 1, events  # the probe collected the child started early, none of its own
    first = torch_children[0]
    queries = [i for i, (kind, what) in enumerate(events) if kind == "spawn" and _is_interpreter_query(what)]  # type: ignore[arg-type]
    probes = [i for i, (kind, _) in enumerate(events) if kind == "probe"]
    assert queries and probes
    assert first < min(queries) and first < min(probes), events[:5]
    # And the child's answer is the one the report holds.
    deep = json.loads(result.stdout)["facts"]["torch.deep"]
    assert deep.get("value", {}).get("imported") is False or "not installed" in deep.get("why", "")


AT_SPAWN = """
import json, sys
from fwdoctor import runner
real = runner._popen
seen = []
def popen(args, **kwargs):
    if len(args) == 3 and args[1] == "-c" and "import torch" in args[2] and not seen:
        seen.append(sorted(m for m in sys.modules if m.startswith("fwdoctor")))
    return real(args, **kwargs)
runner._popen = popen
from fwdoctor.cli import main
try:
    main(["check", "--python", sys.argv[2], "--deep", "--json"])
except SystemExit:
    pass
with open(sys.argv[1], "w") as handle:
    json.dump(seen, handle)
"""


def test_the_torch_child_starts_before_the_probes_and_the_engine_are_imported(bare_python: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "FWDOCTOR_NO_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    out = tmp_path / "modules.json"
    subprocess.run([sys.executable, "-c", AT_SPAWN, str(out), bare_python], env=env, cwd=tmp_path, timeout=300,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    (modules,) = json.loads(out.read_text())
    assert "fwdoctor.sources" in modules  # it was started by gather
    assert not [m for m in modules if m == "fwdoctor.engine" or m.startswith("fwdoctor.probes")]
