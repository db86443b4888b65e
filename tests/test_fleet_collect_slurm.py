"""`fleet collect --slurm` against a real Slurm: slurmctld and slurmd on this machine
(started by .ci/setup-slurm.sh), a real srun, the fwdoctor of this test's venv on the node.

Skipped when no Slurm answers here, except under FWDOCTOR_STRICT=1 (CI), where
tests/conftest.py turns that skip into a failure: CI ran .ci/setup-slurm.sh first.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fwdoctor.fleet import collect as fc
from fwdoctor.fleet import documents

# A real slurmctld/slurmd/munge (.ci/setup-slurm.sh): not part of `make test-fast`.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
FWDOCTOR = Path(sys.executable).parent / "fwdoctor"  # the console script of this test's venv


def _slurm_problem() -> str | None:
    """Why Slurm cannot run a job here, or None when this host is an idle node."""
    if shutil.which("srun") is None or shutil.which("sinfo") is None:
        return "srun/sinfo not installed (run .ci/setup-slurm.sh)"
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 20s (run .ci/setup-slurm.sh)"
    states = dict(line.split()[:2] for line in out.stdout.splitlines() if len(line.split()) >= 2)
    if out.returncode != 0 or not states:
        return f"slurm is not up: sinfo: {(out.stderr.strip().splitlines() or ['no nodes'])[-1]} (run .ci/setup-slurm.sh)"
    if not any(state in ("idle", "mix", "alloc") for state in states.values()):
        return f"no slurm node is up: {states} (run .ci/setup-slurm.sh)"
    return None


@pytest.fixture(scope="module")
def slurm() -> None:
    problem = _slurm_problem()
    if problem:
        pytest.skip(problem)
    assert FWDOCTOR.is_file(), f"no fwdoctor console script beside {sys.executable}"


def _collect(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(FWDOCTOR), "fleet", "collect", "--slurm", "--timeout", "240", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


def _node_name() -> str:
    # The one node .ci/setup-slurm.sh configures is `hostname -s` (slurmd -C's NodeName).
    return socket.gethostname().split(".")[0]


def _schema_errors(document: dict, kind: str) -> list[str]:
    import jsonschema

    schema_dir = REPO / "doctor" / "schemas"
    schemas = {path.stem: json.loads(path.read_text()) for path in schema_dir.glob("*.json")}
    resources = []
    from referencing import Registry, Resource

    for schema in schemas.values():
        if "$id" in schema:
            resources.append((schema["$id"], Resource.from_contents(schema)))
    validator = jsonschema.Draft202012Validator(schemas[kind], registry=Registry().with_resources(resources))
    return [error.message for error in validator.iter_errors(document)]


def test_a_real_facts_file_is_gathered_through_srun_for_this_host(slurm, tmp_path):
    out = tmp_path / "facts"
    result = _collect("--out", str(out))  # --fwdoctor left out: this very script, by path
    assert result.returncode == 0, result.stderr
    assert f"-- {FWDOCTOR} facts" in result.stderr  # the srun argv, as shown in the progress
    path = out / f"{_node_name()}.json"
    assert result.stdout.split() == [str(path)]
    assert sorted(os.listdir(out)) == [path.name]
    document = json.loads(path.read_text())
    assert document["kind"] == "facts"
    assert document["host"]["name"] == socket.gethostname()
    assert document["facts"]["python.version"]["value"]  # the node really probed itself
    assert _schema_errors(document, "facts") == []
    parsed = documents.parse(path.read_bytes(), str(path), path.stem)  # what `fleet report` reads
    assert isinstance(parsed, documents.Document) and parsed.host_name == socket.gethostname()


def test_a_node_whose_fwdoctor_fails_is_named_with_its_stderr_and_exit_1(slurm, tmp_path):
    out = tmp_path / "facts"
    result = _collect("--out", str(out), "--fwdoctor", "/nonexistent/bin/fwdoctor")
    assert result.returncode == 1
    assert f"fwdoctor: node {_node_name()}: failed: exit status 2; no JSON document on stdout" in result.stderr
    assert "execve(): /nonexistent/bin/fwdoctor: No such file or directory" in result.stderr
    assert not out.exists() or os.listdir(out) == []


def test_two_tasks_with_long_one_line_documents_are_demultiplexed_exactly(slurm, tmp_path):
    # A stand-in fwdoctor that prints this host's real facts as one ~10 KB line: srun cuts
    # it into 1024-byte labelled pieces, and the two tasks' pieces interleave.
    facts = subprocess.run([str(FWDOCTOR), "facts"], capture_output=True, text=True, timeout=120, check=True).stdout
    document = json.loads(facts)
    document["facts"]["test.pad"] = {"value": "z" * 6000, "source": "this test"}
    saved = tmp_path / "facts.json"
    saved.write_text(json.dumps(document))
    stand_in = tmp_path / "fwdoctor"
    stand_in.write_text(f"#!{sys.executable}\nimport sys\nassert sys.argv[1:] == ['facts'], sys.argv\n"
                        f"sys.stdout.write(open({str(saved)!r}).read() + '\\n')\n")
    stand_in.chmod(0o755)
    out = tmp_path / "out"
    result = _collect("--out", str(out), "--fwdoctor", str(stand_in), "--", "--ntasks-per-node=2")
    assert result.returncode == 0, result.stderr
    node = _node_name()
    assert sorted(os.listdir(out)) == sorted([f"{node}.json", f"{node}-2.json"])
    for name in os.listdir(out):
        assert json.loads((out / name).read_text()) == document


def test_srun_options_after_the_double_dash_reach_srun(slurm, tmp_path):
    # A partition that does not exist: srun refuses, nothing runs, srun's reason is shown.
    result = _collect("--out", str(tmp_path / "out"), "--", "--partition=no-such-partition")
    assert result.returncode == 1
    assert "srun started no task" in result.stderr and "partition" in result.stderr.lower()


def test_a_nodes_stderr_reaches_the_terminal_with_control_characters_escaped(slurm, tmp_path):
    stand_in = tmp_path / "fwdoctor"
    stand_in.write_text(f"#!{sys.executable}\nimport sys\nsys.stderr.write('\\x1b[2Jwiped\\n')\nsys.exit(3)\n")
    stand_in.chmod(0o755)
    result = _collect("--out", str(tmp_path / "out"), "--fwdoctor", str(stand_in))
    assert result.returncode == 1
    assert "    \\x1b[2Jwiped\n" in result.stderr and "\x1b" not in result.stderr
    assert f"node {_node_name()}: failed: exit status 3" in result.stderr
