"""Issue 11, item 3: only regular files are read, and only so much.

Every example runs the real CLI in a subprocess with a deadline (a hang is a failure, not
a stuck test run). The inputs are made here: FIFOs, a symlink loop, /dev/zero, a huge
sparse file, deep JSON, wrong-typed facts; none of them needs a fixture from elsewhere.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from fwdoctor.host import Host, UnreadableError

DEADLINE_S = 60


MEMORY_LIMIT = 4 << 30  # address space: an unbounded read (/dev/zero) fails fast instead of eating the machine


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def fwdoctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fwdoctor", *args],
        capture_output=True, text=True, timeout=DEADLINE_S, stdin=subprocess.DEVNULL, preexec_fn=_limit_memory,
    )


def assert_clean_refusal(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Exit 2, one line naming the problem, never a traceback or an 'internal error'."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


@pytest.mark.parametrize("where", ["etc/os-release", "proc/driver/nvidia/version"])
def test_a_fifo_in_the_root_is_refused_not_opened(tmp_path: Path, where: str) -> None:
    target = tmp_path / where
    target.parent.mkdir(parents=True)
    os.mkfifo(target)
    proc = fwdoctor("check", "--root", str(tmp_path), "--json")  # hung forever before
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    reasons = [f["reason"] for f in report["probe_failures"]]
    assert any("/" + where in r and "not a regular file" in r for r in reasons), reasons
    shown = [f["message"] for f in report["findings"] if f["id"] == "probe-failed"]
    assert any("/" + where in m and "not a regular file" in m for m in shown), shown


def test_host_read_refuses_special_files_without_opening(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dev").mkdir()
    os.symlink("/dev/zero", tmp_path / "dev" / "zero")  # absolute: resolved inside the root
    host = Host.at_root(tmp_path)
    with pytest.raises(UnreadableError, match="not a regular file"):
        host.read_bytes("/fifo")  # would block in open() if it were opened
    with pytest.raises(UnreadableError, match="not a regular file"):
        host.open_binary("/fifo")
    with pytest.raises(UnreadableError, match="symbolic links"):
        host.read_bytes("/dev/zero")  # /dev/zero -> /dev/zero inside the root: a loop, not the host's device
    live = Host.live_host({})
    with pytest.raises(UnreadableError, match="not a regular file"):
        live.read_bytes("/dev/zero")


def test_host_read_is_capped(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"a" * 5000)
    host = Host.at_root(tmp_path)
    assert host.read_bytes("/big", limit=100) == b"a" * 100


def test_env_file_dev_zero_is_refused_as_not_regular() -> None:
    proc = fwdoctor("check", "--env-file", "/dev/zero", "--facts", "/nonexistent.json")
    # --facts wins the race to fail only if the env file were read after it; either way one
    # line names the input it refused:
    assert_clean_refusal(proc)
    (line,) = proc.stderr.splitlines()
    assert "--env-file /dev/zero: not a regular file" in line or "--facts /nonexistent.json: No such file" in line, line
    proc = fwdoctor("facts", "--env-file", "/dev/zero", "--root", "/")
    assert_clean_refusal(proc, "--env-file /dev/zero", "not a regular file")


def test_env_file_too_big_is_refused_by_size(tmp_path: Path) -> None:
    big = tmp_path / "big.env"
    with open(big, "wb") as handle:  # sparse: 2 GiB on paper, nothing on disk
        handle.truncate(2 << 30)
    proc = fwdoctor("facts", "--env-file", str(big), "--root", str(tmp_path))
    assert_clean_refusal(proc, f"--env-file {big}", "too big")


def test_env_file_fifo_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "env")
    proc = fwdoctor("facts", "--env-file", str(tmp_path / "env"), "--root", str(tmp_path))
    assert_clean_refusal(proc, "not a regular file")


def test_nul_in_env_value_is_a_message(tmp_path: Path) -> None:
    env = tmp_path / "nul.env"
    env.write_bytes(b"PATH=/usr/bin\nCUDA_HOME=/usr/local/cu\x00da\n")
    proc = fwdoctor("check", "--env-file", str(env))  # live: the env reaches subprocesses
    assert_clean_refusal(proc, f"{env}:2", "NUL")


def test_facts_file_fifo_and_size(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "facts.json")
    assert_clean_refusal(fwdoctor("check", "--facts", str(tmp_path / "facts.json")), "not a regular file")
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(2 << 30)
    assert_clean_refusal(fwdoctor("check", "--facts", str(big)), f"--facts {big}", "too big")


def test_deeply_nested_facts_json_is_a_message(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert_clean_refusal(fwdoctor("check", "--facts", str(deep)), f"--facts {deep}", "nested too deeply")
    # Deep, but within what json parses: a fact value nested 500 levels is refused too.
    value: object = 1
    for _ in range(500):
        value = [value]
    medium = tmp_path / "medium.json"
    medium.write_text(json.dumps({"facts": {"gpus.list": {"value": value}}}))
    assert_clean_refusal(fwdoctor("check", "--facts", str(medium)), "nested too deeply")


def test_root_symlink_loop_is_a_message(tmp_path: Path) -> None:
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    assert_clean_refusal(fwdoctor("check", "--root", str(tmp_path / "a")), "--root", "symbolic links")


def test_symlink_loop_inside_the_root_is_a_probe_failure(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    os.symlink("os-release", tmp_path / "etc" / "os-release")
    proc = fwdoctor("check", "--root", str(tmp_path), "--json")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    # What the user sees: the probe that read it failed, naming the file and the loop.
    assert report["probe_failures"] == [{"probe": "system", "reason": "cannot read /etc/os-release: too many levels of symbolic links"}]
    (finding,) = [f for f in report["findings"] if f["id"] == "probe-failed"]
    assert finding["message"] == "probe system could not finish: cannot read /etc/os-release: too many levels of symbolic links"


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_bad_timeout_is_a_usage_error(value: str) -> None:
    proc = fwdoctor("check", "--timeout", value, "--root", "/nonexistent")
    assert_clean_refusal(proc, "--timeout")


WRONG = ["x", 5, 1.5, True, None, [1], ["x"], {"a": 1}]
# Whole facts of real fixture roots (driver, GPU and torch known in one, a toolkit beside
# torch in the other), so most rules run: a facts file of one key would leave nearly every
# rule not checked for lack of input, and a rule that always raises would pass.
FACTS_ROOTS = [Path(__file__).resolve().parent / "roots" / name for name in ("torch-driver-too-old", "toolkit-torch-mismatch")]


@pytest.fixture(scope="module")
def saved_facts() -> list[dict]:
    documents = []
    for root in FACTS_ROOTS:
        proc = fwdoctor("facts", "--root", str(root), "--env-file", str(root / "fixture.env"))
        assert proc.returncode == 0, proc.stderr
        documents.append(json.loads(proc.stdout))
    return documents


@pytest.mark.parametrize("value", WRONG, ids=[json.dumps(v) for v in WRONG])
def test_wrong_typed_facts_never_crash_check(tmp_path: Path, value: object, saved_facts: list[dict], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every documented key in turn set to one wrong type in otherwise whole facts: check
    reports, never crashes, and a rule that could not read its facts says so. A rule may
    fail only because of the damaged fact: on the undamaged facts, under the test suite's
    switch (a rule that raises fails the test), every rule runs clean."""
    import re

    from fwdoctor.engine import applies, judge
    from fwdoctor.kb import KB
    from fwdoctor.model import Facts
    from fwdoctor.render import report as rep
    from fwdoctor.rules import KB_AREAS, RULES
    from fwdoctor.rules.base import RAISE_RULE_ERRORS_ENV
    from fwdoctor.sources import read_facts_file

    kb = KB.load(None, areas=KB_AREAS)
    def applying(facts: Facts, crashed: tuple[str, ...] = ()) -> int:
        # The source-build pre-flight applies to a build request only; a rule that crashed is
        # reported whatever it applies to.
        return sum(1 for r in RULES if applies(r, facts) or r.id in crashed)

    for document in saved_facts:  # the switch is on: a rule that raises on real facts fails here
        whole = judge(Facts.from_json(document), kb, RULES)
        assert whole.evaluated == applying(whole.facts) and whole.findings
    keys = re.findall(r"^\| `([a-z_]+\.[a-z_0-9]+)`", (Path(__file__).parents[1] / "doctor" / "FACTS.md").read_text(), re.M)
    assert len(keys) > 50
    monkeypatch.delenv(RAISE_RULE_ERRORS_ENV)  # what users get: a rule that raises is "not checked"
    for document in saved_facts:
        for key in keys:
            data = json.loads(json.dumps(document))
            data["facts"][key] = {"value": value, "source": "test"}
            path = tmp_path / "facts.json"
            path.write_text(json.dumps(data))
            crashed: list[str] = []
            report = judge(read_facts_file(str(path)), kb, RULES, on_rule_error=lambda rule, exc: crashed.append(rule.id))
            # A build rule that ran on a damaged build.* fact counts too.
            assert applying(report.facts, tuple(crashed)) <= report.evaluated <= len(RULES)
            rep.render_text(report, verbose=True)
            rep.render_markdown(report)
            shown = json.loads(rep.render_json(report))
            for skipped in report.not_checked:
                assert "internal error" not in skipped.reason, (key, skipped)
            for rule_id in crashed:  # the user sees which rule could not run, and why
                (row,) = [n for n in shown["not_checked"] if n["rule"] == rule_id]
                assert row["reason"].startswith("could not be evaluated: a fact has an unexpected type"), (key, row)


def test_wrong_typed_gpus_list_via_cli(tmp_path: Path) -> None:
    """Users get "not checked" for a rule that cannot read a wrong-typed fact: the test
    suite's switch (a rule that raises fails the test) is off here, as it is for users."""
    from fwdoctor.rules.base import RAISE_RULE_ERRORS_ENV

    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"facts": {"gpus.list": {"value": 5}, "driver.version": {"value": "580.95.05"}}}))
    env = {k: v for k, v in os.environ.items() if k != RAISE_RULE_ERRORS_ENV}
    proc = subprocess.run([sys.executable, "-m", "fwdoctor", "check", "--facts", str(path), "-v"], capture_output=True, text=True,
                          timeout=DEADLINE_S, stdin=subprocess.DEVNULL, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr + proc.stdout, proc.stdout
    assert "could not be evaluated: a fact has an unexpected type" in proc.stdout, proc.stdout
    gpus_row = next(line for line in proc.stdout.splitlines() if line.strip().startswith("GPUs"))
    assert "unreadable (a fact has an unexpected type" in gpus_row, gpus_row


def test_image_archive_that_is_a_fifo_or_device_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "image.tar")
    for path in (str(tmp_path / "image.tar"), "/dev/zero"):  # both hung before
        assert_clean_refusal(fwdoctor("check", "--image-archive", path), f"--image-archive {path}", "not a regular file")
