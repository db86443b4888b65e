"""Hostile and careless text (issue 11): stack and KB files are read only when regular;
repeated YAML keys are refused, not silently resolved to the last; a folder name that is not
UTF-8 gives valid UTF-8 JSON; a package name taken from an inspected host never reaches pip
as an option."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import REPO

FWDOCTOR = [sys.executable, "-m", "fwdoctor"]


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FWDOCTOR, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env={**os.environ, **env})


def test_a_stack_file_with_a_repeated_key_is_refused_naming_it(tmp_path):
    stack = tmp_path / "dup.yaml"
    stack.write_text('name: dup\npython: "3.11"\ntorch: "2.13.0"\ntorch: "2.9.1"\ncuda: cpu\nos: debian12\n')
    result = _run(["stack", "resolve", str(stack)], tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{stack}: line 4: not valid YAML: found duplicate key 'torch' (first at line 3)" in result.stderr


def test_a_kb_file_with_a_repeated_key_is_refused_naming_it(tmp_path):
    kb = tmp_path / "kb"
    shutil.copytree(REPO / "tests" / "kb", kb)
    text = (kb / "cuda.yaml").read_text()
    (kb / "cuda.yaml").write_text(text.replace("sources:\n", "sources:\n  S-DUP: a\n  S-DUP: b\n", 1))
    result = _run(["select", "torch", "--kb", str(kb), "--driver", "580.95.05", "--gpu", "9.0", "--python", "3.12"], tmp_path,
                  FWDOCTOR_NO_CACHE="1")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "found duplicate key 'S-DUP'" in result.stderr and "cuda.yaml" in result.stderr


def test_a_folder_name_that_is_not_utf8_gives_valid_utf8_json(tmp_path):
    root = tmp_path / "root"
    toolkit = os.path.join(os.fsencode(root), b"usr/local/cuda-13.0\xff")
    os.makedirs(os.path.join(toolkit, b"bin"))
    with open(os.path.join(toolkit, b"version.json"), "w") as handle:
        handle.write('{"cuda": {"version": "13.0.88"}}')
    for command in (["check", "--root", str(root), "--json"], ["facts", "--root", str(root)]):
        result = _run(command, tmp_path)
        assert result.returncode in (0, 1), result.stderr
        document = json.loads(result.stdout)
        # Strict UTF-8 all the way down: a lone surrogate ("\udcff") would fail to encode.
        json.dumps(document, ensure_ascii=False).encode("utf-8")
        assert "/usr/local/cuda-13.0\\xff" in result.stdout.replace("\\\\", "\\")


def test_package_names_from_the_host_reach_pip_after_the_end_of_options():
    from fwdoctor.kb import KB
    from fwdoctor.model import Fact, Facts
    from fwdoctor.recipes import env as env_recipe

    facts = Facts([Fact("python.executable", "/venv/bin/python", source="test")])
    plan = env_recipe.plan(facts, KB.load(REPO / "tests" / "kb"), {"pip_uninstall": ["-rnothing"], "pip_install": ["--index-url=http://evil/"]})
    argvs = [step.argv for step in plan.steps if "pip" in step.argv]
    assert ("/venv/bin/python", "-m", "pip", "uninstall", "-y", "--", "-rnothing") in argvs
    assert ("/venv/bin/python", "-m", "pip", "install", "--", "--index-url=http://evil/") in argvs


def test_a_stack_file_or_kb_file_that_is_a_fifo_or_a_device_is_refused_unopened(tmp_path):
    fifo = tmp_path / "stack.yaml"
    os.mkfifo(fifo)
    for target in (str(fifo), "/dev/zero"):
        result = _run(["stack", "resolve", target], tmp_path)
        assert result.returncode == 2 and f"stack file {target}: not a regular file" in result.stderr, result.stderr
    kb = tmp_path / "kb"
    shutil.copytree(REPO / "tests" / "kb", kb)
    (kb / "cuda.yaml").unlink()
    os.mkfifo(kb / "cuda.yaml")
    result = _run(["select", "torch", "--kb", str(kb), "--driver", "580.95.05", "--gpu", "9.0", "--python", "3.12"], tmp_path,
                  FWDOCTOR_NO_CACHE="1")
    assert result.returncode == 2 and f"knowledge-base file {kb / 'cuda.yaml'}: not a regular file (a FIFO)" in result.stderr
