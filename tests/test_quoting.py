"""One quoting layer per target (fwdoctor.quoting), and every emitter going through it.

Property tests (Hypothesis) feed arbitrary text (quotes, $(), backticks, ;, newlines, NUL,
non-UTF-8 bytes as surrogateescape) through each emitter and check: the output parses
(`bash -n`; hadolint on a Dockerfile sample) and running it under `env -i` in a temporary
folder never runs the embedded payload (a `touch` of a marker file). The examples of
issue 11 are end-to-end tests through the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fwdoctor import quoting
from fwdoctor.recipes.plan import FileWrite, Plan, Step
from fwdoctor.smoke import emit
from fwdoctor.smoke.allreduce import AllreduceOptions

REPO = Path(__file__).resolve().parent.parent
ROOTS = Path(__file__).resolve().parent / "roots"
BASH = shutil.which("bash") or "/bin/bash"
HADOLINT = REPO / ".venv" / "bin" / "hadolint"
MARK = "/tmp/fwdoctor-quoting-pwned"  # the payload's marker; absolute so any cwd hits it

PAYLOADS = [f"$(touch {MARK})", f"`touch {MARK}`", f"; touch {MARK}", f"\ntouch {MARK}\n", f"' ; touch {MARK} ; '",
            f"\" ; touch {MARK} ; \"", f"$'\\n'touch {MARK}", f"\r\ntouch {MARK}", f"a\\\ntouch {MARK}", "\udcff\udc80",
            f"#\ntouch {MARK}", f"EOF\ntouch {MARK}\nFWDOCTOR_EOF\ntouch {MARK}"]
hostile = st.one_of(
    st.sampled_from(PAYLOADS),
    st.lists(st.sampled_from(list("ab $`'\"\\;|&()<>{}*?#~=\n\r\t!-") + ["\udcff", "é", f"touch {MARK}", "\x00"]), max_size=30).map("".join),
    st.text(max_size=20).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF and not 0xDC80 <= ord(c) <= 0xDCFF for c in s)),
)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def _no_marker():
    Path(MARK).unlink(missing_ok=True)
    yield
    assert not Path(MARK).exists(), "an embedded payload ran"


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def parses(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([BASH, "-n"], input=_bytes(script), capture_output=True, timeout=30)


def run_sandboxed(script: str, tmp: Path, shell: str = BASH) -> subprocess.CompletedProcess:
    """Run `script` with an empty environment in `tmp`; the caller checks the marker."""
    return subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", shell, "-c", script], input=b"", capture_output=True,
                          cwd=tmp, timeout=30, **({"text": False}))


def _bash_word_value(word: str, tmp: Path) -> bytes:
    """What bash makes of one quoted word: printf it back."""
    done = subprocess.run([BASH, "-c", _bytes(f"printf %s {word}")], capture_output=True, cwd=tmp, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return done.stdout


# --------------------------------------------------------------------------- the layer
@SETTINGS
@given(hostile)
def test_a_shell_word_is_one_line_one_word_and_means_exactly_its_value(tmp_path_factory, value):
    tmp = tmp_path_factory.mktemp("w")
    if "\x00" in value:
        with pytest.raises(quoting.QuotingError, match="NUL"):
            quoting.shell_word(value, "--x")
        return
    word = quoting.shell_word(value)
    assert "\n" not in word and "\r" not in word
    word.encode("utf-8")  # printable to a UTF-8 terminal: no lone surrogate left
    assert _bash_word_value(word, tmp) == _bytes(value)


@SETTINGS
@given(hostile)
def test_a_script_word_is_posix_and_means_exactly_its_value(tmp_path_factory, value):
    tmp = tmp_path_factory.mktemp("s")
    if "\x00" in value:
        with pytest.raises(quoting.QuotingError):
            quoting.script_word(value)
        return
    word = quoting.script_word(value)
    word.encode("utf-8")
    done = subprocess.run(["sh", "-c", f"printf %s {word}"], capture_output=True, cwd=tmp, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert done.stdout == _bytes(value)


def test_nul_is_refused_everywhere_with_the_input_named():
    for fn in (quoting.shell_word, quoting.script_word, quoting.dockerfile_value, quoting.dockerfile_string, quoting.lock_line):
        with pytest.raises(quoting.QuotingError, match="--base-image"):
            fn("a\x00b", "--base-image")


def test_a_comment_stays_one_line():
    assert quoting.comment("cuda\ntouch x\r\udcff") == "cuda\\x0atouch x\\x0d\\xff"


# --------------------------------------------------------------------------- emitters
@SETTINGS
@given(hostile)
def test_a_plan_script_parses_and_never_runs_a_payload(tmp_path_factory, value):
    tmp = tmp_path_factory.mktemp("p")
    plan = Plan(recipe="env", title=value, notes=(value,), env={"FWD_X": value},
                files=(FileWrite(path=str(tmp / "out.txt"), content=value, why=value),),
                steps=(Step(argv=("printf", "%s", value), why=value, env={"FWD_Y": value}, cwd=str(tmp),
                            skip_if=("false", value)),))
    try:
        script = plan.to_shell()
    except quoting.QuotingError:
        assert "\x00" in value or any(0xDC80 <= ord(c) <= 0xDCFF for c in value)  # a NUL, or a file body that is not text
        return
    assert parses(script).returncode == 0, script
    lines = script.splitlines()
    assert lines[1].startswith("# fwdoctor plan: env: ") and lines[2] == "set -eu"  # the title stayed in its comment
    run_sandboxed(script, tmp, shell="sh")


@SETTINGS
@given(hostile, hostile)
def test_an_emitted_torchrun_and_slurm_script_parses_and_never_runs_a_payload(tmp_path_factory, endpoint, rdzv_id):
    tmp = tmp_path_factory.mktemp("e")
    opts = AllreduceOptions(python=rdzv_id or "python3", rdzv_endpoint=f"{endpoint}:29500", rdzv_id=rdzv_id)
    for make in (emit.torchrun_script, emit.slurm_script):
        try:
            script = make(opts, True)
        except ValueError:
            assert "\x00" in endpoint + rdzv_id
            continue
        assert parses(script).returncode == 0, script
        # No fwdoctor/srun on the sandbox's PATH: the script fails at exec, after every expansion.
        run_sandboxed(script.replace("set -eu", "set -eu; NODE_RANK=0", 1), tmp)


def test_the_torchrun_script_of_an_endpoint_with_a_newline_parses(cli):
    # Issue 11: `--emit torchrun` output that failed `bash -n` (the endpoint in its comments).
    result = cli("smoke", "allreduce", "--emit", "torchrun", "--nnodes", "2", "--rdzv-endpoint", f"node0\n) touch {MARK}; (:29500")
    assert result.exit_code == 0, result.output
    assert parses(result.output).returncode == 0, result.output


# --------------------------------------------------------------------------- check's fix commands
def hostile_toolkit_root(tmp_path: Path) -> tuple[Path, str]:
    """tests/roots/toolkit-torch-mismatch with its CUDA 13.0 folder renamed to a payload."""
    root = tmp_path / "root"
    shutil.copytree(ROOTS / "toolkit-torch-mismatch", root, symlinks=True)
    name = "cuda-13.0$(touch pwned)"  # a folder name has no "/": the payload touches ./pwned
    (root / "usr/local/cuda-13.0").rename(root / "usr/local" / name)
    (root / "usr/local/cuda").unlink()
    (root / "usr/local/cuda").symlink_to(f"/usr/local/{name}")
    return root, name


def test_a_toolkit_folder_named_like_a_command_gives_quoted_fix_commands(cli, tmp_path):
    root, name = hostile_toolkit_root(tmp_path)
    result = cli("check", "--json", "--root", str(root), "--env-file", str(ROOTS / "toolkit-torch-mismatch" / "fixture.env"))
    report = json.loads(result.output)
    commands = [c for f in report["findings"] if f.get("fix") for c in f["fix"].get("commands") or []]
    hostile = [c for c in commands if name in c or "touch" in c]
    assert hostile, commands  # the fix names the renamed folder
    for command in commands:
        assert parses(command).returncode == 0, command
        run_sandboxed(command, tmp_path)
    assert not (tmp_path / "pwned").exists()
    assert f"export CUDA_HOME='/usr/local/{name}'" in commands
    text = cli("check", "--root", str(root), "--env-file", str(ROOTS / "toolkit-torch-mismatch" / "fixture.env")).output
    assert f"export CUDA_HOME=/usr/local/{name}" not in text
    assert f"export CUDA_HOME='/usr/local/{name}'" in text


# --------------------------------------------------------------------------- Dockerfiles
def test_a_base_image_with_a_newline_is_refused_naming_it(cli, use_test_kb, tmp_path, monkeypatch):
    from test_lock_check import locked_cpu_stack

    stack = locked_cpu_stack(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = cli("docker", "generate", str(stack.relative_to(tmp_path)), "--base-image", "ubuntu:24.04\nRUN touch /pwned", "--out", "Dockerfile")
    assert result.exit_code == 2, result.output
    assert "--base-image" in result.output and "RUN touch" not in (tmp_path / "Dockerfile").read_text() if (tmp_path / "Dockerfile").exists() else True
    assert not (tmp_path / "Dockerfile").exists()


def test_a_stack_file_path_with_a_newline_is_refused_naming_it(cli, use_test_kb, tmp_path, monkeypatch):
    from test_lock_check import locked_cpu_stack

    stack = locked_cpu_stack(tmp_path)
    odd = stack.parent / "cpu\nRUN touch pwned.yaml"
    stack.rename(odd)
    monkeypatch.chdir(tmp_path)
    result = cli("docker", "generate", str(odd.relative_to(tmp_path)), "--out", "Dockerfile")
    assert result.exit_code == 2, result.output
    assert "stack file" in result.output
    assert not (tmp_path / "Dockerfile").exists()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile)
@example("\\\\")  # found by hypothesis: `ARG BASE_IMAGE=\\` ended in Dockerfile's escape, joining the next line
def test_a_dockerfile_from_hostile_values_is_refused_or_lints(tmp_path_factory, value):
    from fwdoctor.kb import KB
    from conftest import TEST_KB_DIR
    from fwdoctor.recipes import dockerfile, lockfile
    from fwdoctor.recipes import stack as stack_mod
    from test_lock_check import _pins_from_golden

    tmp = tmp_path_factory.mktemp("d")
    (tmp / "s.yaml").write_text((REPO / "stacks" / "cpu-py311.yaml").read_text())
    resolved = stack_mod.load_and_resolve(tmp / "s.yaml", KB(TEST_KB_DIR))
    lock_text = lockfile.render_lock(resolved, _pins_from_golden(), "stacks/cpu-py311.yaml")
    for args in ((value, "lockfiles/x", None), ("s.yaml", value, None), ("s.yaml", "lockfiles/x", value)):
        try:
            text = dockerfile.render(resolved, lock_text, *args)
        except quoting.QuotingError:
            continue
        path = tmp / "Dockerfile"
        path.write_bytes(_bytes(text))
        done = subprocess.run([str(HADOLINT), "--no-fail", "--format", "json", str(path)], capture_output=True, timeout=60)
        problems = [p for p in json.loads(done.stdout or b"[]") if p.get("code", "").startswith("DL1")]  # DL1000: parse error
        assert done.returncode == 0 and not problems, (text, done.stdout, done.stderr)
        instructions = [l.split()[0] for l in text.splitlines() if l and not l.startswith((" ", "#"))]
        assert set(instructions) <= {"ARG", "FROM", "ENV", "RUN", "COPY", "LABEL", "USER", "CMD", "HEALTHCHECK", "ENTRYPOINT"}
        assert "pwned" not in " ".join(l for l in text.splitlines() if l.startswith("RUN"))


# --------------------------------------------------------------------------- lock headers
@SETTINGS
@given(hostile)
def test_a_lock_header_never_gains_a_line(tmp_path_factory, value):
    from fwdoctor.kb import KB
    from conftest import TEST_KB_DIR
    from fwdoctor.recipes import lockfile
    from fwdoctor.recipes import stack as stack_mod
    from test_lock_check import _pins_from_golden

    tmp = tmp_path_factory.mktemp("l")
    (tmp / "s.yaml").write_text((REPO / "stacks" / "cpu-py311.yaml").read_text())
    resolved = stack_mod.load_and_resolve(tmp / "s.yaml", KB(TEST_KB_DIR))
    pins = _pins_from_golden()
    plain = lockfile.render_lock(resolved, pins, "stacks/cpu-py311.yaml")
    try:
        text = lockfile.render_lock(resolved, pins, value)
    except quoting.QuotingError:
        assert any(c in value for c in "\n\r\x00") or quoting._UNSAFE.search(value)
        return
    assert len(text.splitlines()) == len(plain.splitlines())
    assert lockfile.read_pins(text) == lockfile.read_pins(plain)
