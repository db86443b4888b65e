"""Hostile and careless input through the real CLI: random roots, facts files, env files and
stack files, each run in a child process with a deadline and a memory limit.

Each case starts from a real input (a fixture root under tests/roots, the facts `fwdoctor
facts` saves for one, a fixture env file, a committed stack) and damages it with a seeded
random generator (the seed is in the test id: a failure replays exactly): odd file names
(newline, $(...), quotes, bytes that are not UTF-8, 255-byte names), random bytes, empty and
truncated files, symlinks (loops, dangling, absolute), wrong JSON/YAML types, deep nesting.
Every case must end within its deadline, under RLIMIT_AS, with exit 0, 1 or 2 and no
traceback or "internal error" in its output, and say what it did: a refusal names the input,
a judged input gives a whole JSON report. Rules run under the test suite's switch
(FWDOCTOR_RAISE_RULE_ERRORS=1, tests/conftest.py): a rule that raises on a damaged root or
env file fails the case. A damaged facts file may hold a wrong-typed fact, which users get
as "not checked" (the switch is off for it); each rule that could not be evaluated there
must then judge the undamaged facts without raising, so the damage, not the rule, was the
cause. FIFOs and device files are left to
tests/test_hostile_reads.py (issue 11 item 3), which tests each read path with them.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fwdoctor.rules.base import RAISE_RULE_ERRORS_ENV

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ROOTS = HERE / "roots"
CASE_DEADLINE_S = 30  # one check of a small root takes ~1 s here; a hang is caught, not waited out
MEMORY_LIMIT = 2 << 30  # RLIMIT_AS of the child
SEEDS = range(10)  # per kind: 4 kinds x 10 seeds take ~20 s on 2 cores

pytestmark = pytest.mark.slow

ODD_NAMES = ["a\nb", "$(touch pwned)", "`touch pwned`", "x'y\"z", "sp ace", "-rf", "\udcff\udcfe", "é" * 60,
             "n" * 255, "...", " "]
BLOBS = [b"", b"\x00" * 64, b"\xff\xfe\xfd", b"NVRM version: NVIDIA UNIX x86_64 Kernel Module  999999999999999999.0.0\n",
         b'{"cuda": {"version": 13}}', b"VERSION_ID=\"\n", b"a" * 200_000, b"\n" * 10_000, "ünï\u2028cøde".encode(),
         b"#define CUDNN_MAJOR 9999999999999999999999\n", b"[[[[[[[[[[[[[[[[[[[[" * 100]


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_cli(*args: str, cwd: Path, raise_rule_errors: bool = True) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    if raise_rule_errors:  # a rule that raises is an "internal error" (exit 2), not "not checked"
        env[RAISE_RULE_ERRORS_ENV] = "1"
    try:
        return subprocess.run([sys.executable, "-m", "fwdoctor", *args], capture_output=True, cwd=cwd, env=env,
                              timeout=CASE_DEADLINE_S, preexec_fn=_limits)
    except subprocess.TimeoutExpired:
        pytest.fail(f"fwdoctor {' '.join(map(repr, args))} did not end within {CASE_DEADLINE_S} s")


def assert_handled(done: subprocess.CompletedProcess, what: str, refusal_names: str | None = None) -> None:
    """Ended in time with 0, 1 or 2, no traceback; a refusal (2) is one line that says what
    was refused (naming `refusal_names` when given)."""
    output = (done.stdout + done.stderr).decode("utf-8", "replace")
    assert done.returncode in (0, 1, 2), f"{what}: exit {done.returncode}\n{output[-3000:]}"
    assert "Traceback" not in output and "internal error" not in output, f"{what}:\n{output[-3000:]}"
    if done.returncode == 2:
        # The message is the last "fwdoctor: ..." of stderr (a file name may hold a newline).
        err = done.stderr.decode("utf-8", "replace")
        assert "fwdoctor: " in err, f"{what}: exit 2 without saying why:\n{output[-3000:]}"
        message = "fwdoctor: " + err.rsplit("fwdoctor: ", 1)[1]
        if refusal_names is not None:
            assert refusal_names in message, f"{what}: the refusal does not name {refusal_names!r}: {message}"


def assert_judged(done: subprocess.CompletedProcess, what: str) -> dict:
    """A judged run (exit 0 or 1) gives a whole JSON report whose exit code matches its findings."""
    report = json.loads(done.stdout)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert done.returncode == (1 if errors else 0), f"{what}: exit {done.returncode} with errors {[f['id'] for f in errors]}"
    for failure in report["probe_failures"]:  # each probe failure is shown to the user
        assert any(f["id"] == "probe-failed" and f["evidence"] == failure for f in report["findings"]), (what, failure)
    return report


def _name(rng: random.Random) -> str:
    return rng.choice(ODD_NAMES)


def _fs(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


def damage_root(root: Path, rng: random.Random) -> list[str]:
    """Damage a copy of a fixture root in place; returns what was done (for the failure message)."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    done: list[str] = []
    for path in rng.sample(files, min(len(files), 6)):
        action = rng.choice(["blob", "truncate", "rename", "loop", "dangling", "absolute", "dir"])
        rel = str(path.relative_to(root))
        if action == "blob":
            path.write_bytes(rng.choice(BLOBS))
        elif action == "truncate":
            data = path.read_bytes()
            path.write_bytes(data[: rng.randrange(len(data) + 1)])
        elif action == "rename":
            target = os.path.join(_fs(str(path.parent)), _fs(_name(rng)))
            if not os.path.lexists(target):
                os.rename(path, target)
        elif action == "loop":
            path.unlink()
            path.symlink_to(path.name)
        elif action == "dangling":
            path.unlink()
            path.symlink_to("/nonexistent/" + path.name)
        elif action == "absolute":
            path.unlink()
            path.symlink_to("/" + rel)  # resolved inside the root, where it may be itself
        else:
            path.unlink()
            path.mkdir()
        done.append(f"{action} {rel}")
    # An odd-named folder beside the toolkits (issue 11: names reach fix commands).
    local = root / "usr" / "local"
    if local.is_dir():
        odd = os.path.join(_fs(str(local)), _fs("cuda-13.0" + _name(rng)[:40]))
        if not os.path.exists(odd):
            shutil.copytree(ROOTS / "toolkit-torch-mismatch" / "usr" / "local" / "cuda-13.0", odd.decode("utf-8", "surrogateescape"))
    return done


@pytest.mark.parametrize("seed", SEEDS)
def test_a_damaged_root_is_judged_without_a_traceback(tmp_path, seed):
    rng = random.Random(seed)
    source = rng.choice(sorted(p for p in ROOTS.iterdir() if p.is_dir()))
    root = tmp_path / "root"
    shutil.copytree(source, root, symlinks=True)
    envs = sorted(source.glob("*.env"))
    done = damage_root(root, rng)
    args = ["check", "--json", "--root", str(root)] + (["--env-file", str(rng.choice(envs))] if envs else [])
    result = run_cli(*args, cwd=tmp_path)
    assert_handled(result, f"{source.name} seed {seed}: {done}")
    assert not (tmp_path / "pwned").exists()
    if result.returncode in (0, 1):
        assert_judged(result, f"{source.name} seed {seed}: {done}")  # the JSON report is whole, odd names and all


def _mutate(value, rng: random.Random, depth: int = 0):
    """A copy of a JSON value with random leaves replaced by other types, keys dropped, nesting added."""
    choice = rng.random()
    if choice < 0.08:
        return rng.choice([None, True, -1, 1e308, "", "\x00", "a\nb", "\udcff".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
                           [], {}, [[[]]], "9" * 400, {"value": None}])
    if choice < 0.1 and depth < 3:
        nested: object = "x"
        for _ in range(rng.choice([10, 300])):
            nested = [nested]
        return nested
    if isinstance(value, dict):
        return {k: _mutate(v, rng, depth + 1) for k, v in value.items() if rng.random() > 0.05}
    if isinstance(value, list):
        return [_mutate(v, rng, depth + 1) for v in value]
    return value


# Facts saved from two real roots, taken in turn by seed: driver, GPU and torch known in
# one, a toolkit beside torch in the other, so that most rules run on them.
FACTS_ROOTS = ("torch-driver-too-old", "toolkit-torch-mismatch")


@pytest.fixture(scope="module")
def saved_facts(tmp_path_factory) -> dict[str, dict]:
    documents = {}
    for name in FACTS_ROOTS:
        root = ROOTS / name
        done = run_cli("facts", "--root", str(root), "--env-file", str(root / "fixture.env"), cwd=tmp_path_factory.mktemp("facts"))
        assert done.returncode == 0, done.stderr
        documents[name] = json.loads(done.stdout)
    return documents


ODD_VALUES = [None, True, -1, 1e308, "", "a\nb", [], {}, [[[]]], "9" * 400, {"value": None}, ["x"], 1.5]


def _retype(document: dict, rng: random.Random) -> dict:
    """A copy of saved facts with a few facts' values replaced by wrong types: still a facts
    file `check` must judge (the damage of `_mutate` is mostly refused as a whole)."""
    copy = json.loads(json.dumps(document))
    for key in rng.sample(sorted(copy["facts"]), 5):
        copy["facts"][key]["value"] = rng.choice(ODD_VALUES)
    return copy


@pytest.mark.parametrize("seed", SEEDS)
def test_a_damaged_facts_file_is_judged_or_refused_without_a_traceback(tmp_path, saved_facts, seed):
    rng = random.Random(1000 + seed)
    undamaged = saved_facts[FACTS_ROOTS[seed % len(FACTS_ROOTS)]]
    data = _mutate(undamaged, rng)
    path = tmp_path / "facts.json"
    text = json.dumps(data)
    if seed % 3 == 2:  # a truncated or byte-damaged file
        raw = bytearray(text.encode())
        for _ in range(5):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        path.write_bytes(bytes(raw[: rng.randrange(len(raw))]))
    else:
        path.write_text(text)
    retyped = tmp_path / "retyped.json"
    retyped.write_text(json.dumps(_retype(undamaged, rng)))
    for facts_file in (path, retyped):
        result = run_cli("check", "--json", "--facts", str(facts_file), cwd=tmp_path, raise_rule_errors=False)
        assert_handled(result, f"facts seed {seed}: {facts_file.name}")
        if result.returncode == 2:  # refused: one line naming the file
            assert facts_file is path, result.stderr  # wrong-typed values are judged, not refused
            assert f"--facts {path}" in result.stderr.decode("utf-8", "replace"), result.stderr
            continue
        report = assert_judged(result, f"facts seed {seed}: {facts_file.name}")
        crashed = sorted(n["rule"] for n in report["not_checked"] if "could not be evaluated" in n["reason"])
        if crashed:
            # The same rules on the undamaged facts, with the switch on: a rule that raises
            # there has a bug the damage only hid.
            from fwdoctor.engine import judge
            from fwdoctor.kb import KB
            from fwdoctor.model import Facts
            from fwdoctor.rules import KB_AREAS, RULES

            judged = judge(Facts.from_json(undamaged), KB.load(None, areas=KB_AREAS), RULES, only=crashed)
            assert judged.evaluated == len(crashed)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_damaged_env_file_is_read_or_refused_without_a_traceback(tmp_path, seed):
    rng = random.Random(2000 + seed)
    lines = (ROOTS / "toolkit-torch-mismatch" / "fixture.env").read_bytes().splitlines()
    extra = [b"=", b"KEY", b"KEY==", b"\x00=\x00", b"LD_PRELOAD=" + b":" * 5000, b"PATH=" + _fs(_name(rng)),
             b"CUDA_HOME=" + _fs("/usr/local/" + _name(rng)), b"\xff\xfe=1", b"export X=1", b"X='unterminated",
             b"VIRTUAL_ENV=" + b"/a" * 3000, b"LD_LIBRARY_PATH=$(touch pwned)"]
    lines += rng.sample(extra, 4)
    rng.shuffle(lines)
    path = tmp_path / "fuzz.env"
    path.write_bytes(b"\n".join(lines) + rng.choice([b"", b"\n", b"\r\n"]))
    result = run_cli("check", "--json", "--root", str(ROOTS / "toolkit-torch-mismatch"), "--env-file", str(path), cwd=tmp_path)
    assert_handled(result, f"env seed {seed}: {lines}", refusal_names=str(path))
    assert not (tmp_path / "pwned").exists()
    if result.returncode in (0, 1):
        assert_judged(result, f"env seed {seed}: {lines}")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_damaged_stack_file_is_resolved_or_refused_without_a_traceback(tmp_path, seed):
    import yaml

    rng = random.Random(3000 + seed)
    source = rng.choice(sorted((REPO / "stacks").glob("*.yaml")))
    data = _mutate(yaml.safe_load(source.read_text()), rng)
    if isinstance(data, dict) and rng.random() < 0.5:
        data[rng.choice(["name", "apt", "copy", "command", "python", "torch"])] = rng.choice(
            ["x\nRUN touch pwned", ["tini\n"], [{"src": "a\nb", "dest": "/x"}], ["$(touch pwned)"], "3.11\n", 3.11])
    text = yaml.safe_dump(data, sort_keys=False) if seed % 3 else yaml.safe_dump(data) + "name: duplicate\n"
    name = "stack.yaml" if seed % 2 else _name(rng).replace("/", "_")[:60] + ".yaml"
    path = Path(os.path.join(_fs(str(tmp_path)), _fs(name)).decode("utf-8", "surrogateescape"))
    path.write_text(text)
    for args in (["stack", "resolve", str(path)], ["lock", "--check", str(path)]):
        assert_handled(run_cli(*args, cwd=tmp_path), f"{args[0]} seed {seed}: {text[:400]}")
    assert not (tmp_path / "pwned").exists()
