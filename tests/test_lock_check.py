"""`fwdoctor lock --check`: the committed locks match their stacks; a changed stack is
stale (exit 1) with the reason; conda packages that cannot be solved fail that part clearly.

The committed lockfiles/ are checked fresh against the shipped KB (`make lockfiles` after a
KB update keeps that green); every other test locks in tmp_path against the frozen tests/kb."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import TEST_KB_DIR
from fwdoctor.kb import KB, KB_DIR
from fwdoctor.recipes import lockfile
from fwdoctor.recipes import stack as stack_mod

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden" / "docker"
STACKS = sorted(p.stem for p in (REPO / "stacks").glob("*.yaml"))


@pytest.mark.parametrize("name", STACKS)
def test_each_committed_lock_matches_its_stack(cli, name, monkeypatch):  # the shipped KB
    monkeypatch.chdir(REPO)
    result = cli("lock", "--check", f"stacks/{name}.yaml")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", STACKS)
def test_each_committed_lock_pins_every_distribution_with_a_sha256(name):
    text = (REPO / "lockfiles" / name / "requirements.lock").read_text()
    pins = lockfile.read_pins(text)
    conda_lock_file = REPO / "lockfiles" / name / lockfile.CONDA_LOCK_NAME
    if conda_lock_file.exists():  # a conda stack: torch is conda's pytorch, with its md5 and sha256
        from fwdoctor.recipes.conda_lock import read_conda_lock

        records = read_conda_lock(conda_lock_file)
        assert "pytorch" in {r.name for r in records} and "torch" not in pins
        assert all(len(r.sha256) == 64 and len(r.md5) == 32 for r in records)
    else:
        assert "torch" in pins
    hashes = [line for line in text.splitlines() if line.strip().startswith("--hash=sha256:")]
    assert len(hashes) == len(pins)


def copy_stack(tmp_path: Path, name: str, extra: str = "") -> Path:
    stack = tmp_path / "stacks" / f"{name}.yaml"
    stack.parent.mkdir(parents=True)
    stack.write_text((REPO / "stacks" / f"{name}.yaml").read_text() + extra)
    return stack


def locked_cpu_stack(tmp_path: Path) -> Path:
    """stacks/cpu-py311.yaml in tmp_path with the fresh lock the recorded pip report gives
    under tests/kb (the committed lock follows the shipped KB instead)."""
    stack = copy_stack(tmp_path, "cpu-py311")
    resolved = stack_mod.load_and_resolve(stack, KB(TEST_KB_DIR))
    lock = tmp_path / "lockfiles" / "cpu-py311" / lockfile.LOCK_NAME
    lock.parent.mkdir(parents=True)
    lock.write_text(lockfile.render_lock(resolved, _pins_from_golden(), "stacks/cpu-py311.yaml"))
    (lock.parent / lockfile.PYLOCK_NAME).write_text(lockfile.render_pylock(resolved, _pins_from_golden(), "stacks/cpu-py311.yaml"))
    assert lockfile.check(resolved, lock.parent) == []
    return stack


def test_a_lock_that_names_no_index_is_stale(cli, use_test_kb, tmp_path, monkeypatch):
    """A lock from before the index lines: `pip install -r` would take pip's configured index."""
    stack = locked_cpu_stack(tmp_path)
    lock = tmp_path / "lockfiles" / "cpu-py311" / "requirements.lock"
    lock.write_text("".join(l for l in lock.read_text().splitlines(keepends=True) if not l.startswith("--")))
    monkeypatch.chdir(tmp_path)
    result = cli("lock", "--check", str(stack))
    assert result.exit_code == 1 and "names no --index-url" in result.output


def test_a_lock_without_its_pylock_is_stale(cli, use_test_kb, tmp_path, monkeypatch):
    stack = locked_cpu_stack(tmp_path)
    (tmp_path / "lockfiles" / "cpu-py311" / lockfile.PYLOCK_NAME).unlink()
    monkeypatch.chdir(tmp_path)
    result = cli("lock", "--check", str(stack))
    assert result.exit_code == 1 and "pylock.toml: No such file or directory" in result.output


def test_a_stack_with_a_new_requirement_makes_its_lock_stale(cli, use_test_kb, tmp_path, monkeypatch):
    stack = locked_cpu_stack(tmp_path)
    with open(stack, "a") as handle:
        handle.write("requirements: ['numpy==2.3.4']\n")
    monkeypatch.chdir(tmp_path)
    result = cli("lock", "--check", str(stack))
    assert result.exit_code == 1
    assert "made from another version of stack cpu-py311" in result.output
    assert "numpy is required by the stack but not in the lock" in result.output


def test_a_lock_edited_by_hand_to_another_torch_is_stale(cli, use_test_kb, tmp_path, monkeypatch):
    stack = locked_cpu_stack(tmp_path)
    lock = tmp_path / "lockfiles" / "cpu-py311" / "requirements.lock"
    lock.write_text(lock.read_text().replace("torch==2.13.0+cpu", "torch==2.12.0+cpu"))
    monkeypatch.chdir(tmp_path)
    result = cli("lock", "--check", str(stack))
    assert result.exit_code == 1 and "torch==2.12.0+cpu in the lock does not satisfy torch==2.13.0+cpu" in result.output


def test_a_missing_lock_is_reported_as_stale(cli, use_test_kb, tmp_path, monkeypatch):
    stack = copy_stack(tmp_path, "cpu-py311")
    monkeypatch.chdir(tmp_path)
    result = cli("lock", "--check", str(stack))
    assert result.exit_code == 1 and "run `fwdoctor lock`" in result.output


def _pins_from_golden(*_args, **_kwargs):
    return lockfile.pins_from_report(json.loads((GOLDEN / "pip-report-cpu-py311.json").read_text()))


def test_lock_writes_the_same_bytes_twice(cli, use_test_kb, tmp_path, monkeypatch):
    monkeypatch.setattr(lockfile, "resolve_pins", _pins_from_golden)
    stack = copy_stack(tmp_path, "cpu-py311")
    monkeypatch.chdir(tmp_path)
    outputs = []
    for run in range(2):
        result = cli("lock", str(stack), "--out", f"out{run}")
        assert result.exit_code == 0, result.output
        outputs.append([(tmp_path / f"out{run}" / f).read_bytes() for f in (lockfile.LOCK_NAME, lockfile.PYLOCK_NAME, lockfile.RESOLVED_NAME)])
    assert outputs[0] == outputs[1]


def test_conda_packages_from_an_unreachable_channel_fail_that_part_and_say_why(cli, use_test_kb, tmp_path, monkeypatch):
    # No conda solver executable on PATH: py-rattler solves, and conda-forge cannot be reached
    # from the tests (a channel that is not there fails the same way anywhere).
    monkeypatch.setattr(lockfile, "resolve_pins", _pins_from_golden)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    for var in ("CONDA_EXE", "MAMBA_EXE", "CONDA_LOCK_CONDA_EXE"):
        monkeypatch.delenv(var, raising=False)
    stack = copy_stack(tmp_path, "cpu-py311", f"conda:\n  channels: ['{(tmp_path / 'no-channel').as_uri()}']\n  packages: ['libjpeg-turbo=3.0']\n")
    monkeypatch.chdir(tmp_path)
    result = cli("lock", str(stack), "--out", "out")
    assert result.exit_code == 1
    assert "conda part not locked: py-rattler could not solve linux-64" in result.output
    assert (tmp_path / "out" / lockfile.LOCK_NAME).exists()
    assert "libjpeg-turbo=3.0" in (tmp_path / "out" / lockfile.ENV_NAME).read_text()


def test_a_resolution_failure_exits_1_with_pips_reason(cli, use_test_kb, tmp_path, monkeypatch):
    def fail(*_a, **_k):
        raise lockfile.LockError("pip could not resolve stack cpu-py311: ERROR: No matching distribution found for torch==2.13.0+cpu")

    monkeypatch.setattr(lockfile, "resolve_pins", fail)
    stack = copy_stack(tmp_path, "cpu-py311")
    monkeypatch.chdir(tmp_path)
    result = cli("lock", str(stack), "--out", "out")
    assert result.exit_code == 1 and "No matching distribution found for torch==2.13.0+cpu" in result.output


@pytest.mark.parametrize("name", STACKS)
def test_each_committed_resolved_stack_is_what_the_kb_resolves_today(name):
    resolved = stack_mod.load_and_resolve(REPO / "stacks" / f"{name}.yaml", KB(KB_DIR))  # the shipped KB
    committed = (REPO / "lockfiles" / name / lockfile.RESOLVED_NAME).read_text()
    assert committed == resolved.to_yaml(), f"stale: run `make lockfiles` (lockfiles/{name}/{lockfile.RESOLVED_NAME})"
