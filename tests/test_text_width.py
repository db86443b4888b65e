"""Text reports fit 80 columns by default (issue 29, item 5): `check` on
every fixture root, `select torch|jax` on every host of the select grid, and `list`; long
prose wraps under its indent, commands wrap with backslashes and still parse to the same
words, and --json keeps every value whole."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from fwdoctor.kb import KB_DIR
from fwdoctor.render.textfit import WIDTH, fit, fit_text

from test_select_grid import DRIVERS, GPUS

ROOTS = sorted(p.name for p in (Path(__file__).resolve().parent / "roots").iterdir() if p.is_dir())


def _widest(text: str) -> tuple[int, str]:
    return max(((len(line), line) for line in text.splitlines()), default=(0, ""))


@pytest.mark.usefixtures("use_test_kb")
@pytest.mark.parametrize("root", ROOTS)
def test_check_fits_80_columns_on_every_fixture_root(cli, root):
    where = str(Path(__file__).resolve().parent / "roots" / root)
    result = cli("check", "--root", where)
    assert result.exit_code in (0, 1, 2), result.output
    width, line = _widest(result.stdout)
    assert width <= WIDTH, line
    # -v prints every line whole (the evidence, the reasons), as --json holds every value.
    verbose = cli("check", "--root", where, "-v").stdout
    assert " ".join(result.stdout.split()) in " ".join(verbose.split()) or _widest(verbose)[0] >= width


@pytest.mark.parametrize("framework", ["torch", "jax"])
@pytest.mark.parametrize("branch", sorted(DRIVERS))
@pytest.mark.parametrize("gpu", sorted(GPUS))
def test_select_fits_80_columns_on_every_host_of_the_grid(cli, framework, gpu, branch):
    for python in ("3.10", "3.12"):
        result = cli("select", framework, "--driver", DRIVERS[branch], "--gpu", gpu, "--python", python, "--kb", str(KB_DIR))
        width, line = _widest(result.stdout)
        assert width <= WIDTH, line


def test_select_grid_folds_into_blocks_that_fit_and_keep_every_cell(cli):
    from fwdoctor import selection as sel
    from fwdoctor.kb import KB

    text = cli("select", "grid", "--kb", str(KB_DIR)).stdout
    assert _widest(text)[0] <= WIDTH
    blocks = text.split("\n\n")
    assert len(blocks) > 1  # the default grid is wider than 80 columns: it was folded
    # Every block repeats the driver column, and every (driver, GPU) answer is in one.
    rows = sel.decision_grid(KB.load(KB_DIR), sel.GRID_DRIVERS, sel.GRID_GPUS, "3.12")
    seen: dict[tuple[str, str], str] = {}
    for block in blocks:
        lines = [line for line in block.splitlines() if not line.startswith("#")]
        assert lines[0].startswith("driver  ")
        starts = [lines[0].index(f"{c.gpu.name} (sm_") for c in rows[0] if f"{c.gpu.name} (sm_" in lines[0]]
        names = [c.gpu.name for c in rows[0] if f"{c.gpu.name} (sm_" in lines[0]]
        for line in lines[1:]:
            driver = line.split()[0]
            for name, start, end in zip(names, starts, [*starts[1:], None]):
                seen[(driver, name)] = line[start:end].strip()
    assert seen == {(c.driver, c.gpu.name): c.text for row in rows for c in row}


def test_list_fits_80_columns_and_json_keeps_the_titles_whole(cli):
    text = cli("list").stdout
    assert _widest(text)[0] <= WIDTH
    titles = [f["title"] for f in json.loads(cli("list", "--json").stdout)["findings"]]
    joined = " ".join(text.split())
    assert all(" ".join(t.split()) in joined for t in titles)


@pytest.mark.parametrize(
    "command",
    [
        "        $ sudo systemctl stop nvidia-persistenced; sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; sudo modprobe nvidia",
        "        $ pip install 'torch==2.14.1' 'a b c d e f g h i j k' --index-url https://download.pytorch.org/whl/cu126 --extra-index-url https://pypi.org/simple",
        "  install:     pip install torch==2.14.1 torchvision==0.29.1 --index-url https://download.pytorch.org/whl/cu126",
    ],
)
def test_a_wrapped_command_is_still_the_same_command(command):
    lines = fit(command)
    assert len(lines) > 1 and all(len(line) <= WIDTH for line in lines)
    assert all(line.endswith(" \\") for line in lines[:-1])
    pasted = "\n".join(lines).replace(" \\\n", " ")
    body = command.split("install:", 1)[-1]
    assert shlex.split(pasted.split("install:", 1)[-1]) == shlex.split(body)


def test_a_comment_is_never_continued_by_a_backslash():
    lines = fit("        $ sudo apt-get install nvidia-fabricmanager-BRANCH   # the driver's exact version, as nvidia-smi reports it")
    assert not any(line.rstrip().endswith("\\") and "#" in line for line in lines)
    assert lines[0].strip().startswith("$ sudo apt-get") and all(len(line) <= WIDTH for line in lines)


def test_prose_wraps_under_its_indent_and_nothing_is_lost():
    text = "  error some-id: " + " ".join(f"word{i}" for i in range(60)) + " /a/very/long/path/" + "x" * 100 + "\n"
    fitted = fit_text(text)
    assert fitted.endswith("\n") and all(len(line) <= WIDTH for line in fitted.splitlines())
    assert "".join(fitted.split()) == "".join(text.split())
    assert all(line.startswith("      ") for line in fitted.splitlines()[1:])


def _commands():
    """Every command path of the CLI: ["check"], ["fleet", "report"], ..."""
    import click

    from fwdoctor.cli import main

    def walk(command, path):
        yield path
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                yield from walk(command.get_command(ctx, name), [*path, name])

    return list(walk(main, []))


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p) or "fwdoctor")
def test_every_help_fits_80_columns(path):
    from click.testing import CliRunner

    from fwdoctor.cli import main

    result = CliRunner().invoke(main, [*path, "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    width, line = _widest(result.output)
    assert width <= WIDTH, line


def test_every_explanation_fits_80_columns_and_keeps_every_word(cli):
    ids = [f["id"] for f in json.loads(cli("list", "--json").stdout)["findings"]]
    for finding_id in ids:
        text = cli("explain", finding_id).stdout
        # Over 80 only where one shell word is longer than the line (it cannot be split
        # and still run): nvidia-smi's --query-gpu=a,b,c,... list.
        over = [line for line in text.splitlines() if len(line) > WIDTH]
        assert all(len(line.rstrip(" \\").split()) == 1 for line in over), (finding_id, over)
        whole = json.loads(cli("explain", finding_id, "--json").stdout)["explanation"]
        # Re-filled, never cut: the same words in the same order (a wrapped command's
        # backslash continuation aside).
        assert text.replace(" \\\n", " ").split() == whole.split(), finding_id


@pytest.mark.usefixtures("use_test_kb")
@pytest.mark.parametrize("root", ROOTS)
def test_gate_fits_80_columns_on_every_fixture_root(cli, root):
    where = str(Path(__file__).resolve().parent / "roots" / root)
    result = cli("gate", "--root", where)
    width, line = _widest(result.stdout)
    assert width <= WIDTH, line


FIELD = sorted((Path(__file__).resolve().parent / "data" / "triage-field").glob("*/*.md"))


def test_triage_fits_80_columns_on_every_field_report(cli):
    assert len(FIELD) > 50
    for report in FIELD:
        result = cli("triage", str(report))
        width, line = _widest(result.stdout)
        assert width <= WIDTH, (report.name, line)


@pytest.mark.usefixtures("use_test_kb")
@pytest.mark.parametrize("root", ROOTS)
def test_fix_plans_fit_80_columns_and_stay_valid_sh(cli, root):
    import subprocess

    where = str(Path(__file__).resolve().parent / "roots" / root)
    plans = cli("fix", "--root", where).stdout
    # Over 80 only where one shell word is longer than the line (a PATH value, a URL).
    over = [line for line in plans.splitlines() if len(line) > WIDTH]
    assert all(len(line.rstrip(" \\").split()) == 1 or line.split()[0] == "export" and len(line.split()) == 2 for line in over), over
    for script in plans.split("#!/bin/sh")[1:]:
        checked = subprocess.run(["sh", "-n"], input="#!/bin/sh" + script, capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0, checked.stderr


def test_a_fitted_script_runs_exactly_as_the_original(tmp_path):
    import subprocess

    from fwdoctor.render.textfit import fit_script

    program = 'import sys\nprint("a long line of python that the shell reads verbatim, inside quotes: " + " ".join(sys.argv[1:]))\n'
    script = "\n".join([
        "#!/bin/sh",
        "# " + "a comment that runs well past eighty columns and must go on as further comment lines " * 2,
        "printf '%s\\n' " + " ".join(f"word{i}" for i in range(40)) + " 'a quoted phrase that is long'",
        "cat <<'EOF'",
        "heredoc body " * 12,
        "EOF",
        f"python3 -c '{program}' " + " ".join(f"arg{i}" for i in range(30)),
        "test -e /nonexistent-fwdoctor >/dev/null 2>&1 || printf '%s\\n' " + " ".join(f"fallback{i}" for i in range(20)),
        "",
    ])
    fitted = fit_script(script)
    assert fitted != script
    for line in fitted.splitlines():
        assert len(line) <= WIDTH or line in script.splitlines(), line
    assert "heredoc body " * 12 in fitted.splitlines()  # a heredoc line is never touched
    runs = [subprocess.run(["sh", "-c", text], capture_output=True, text=True, timeout=30) for text in (script, fitted)]
    assert runs[0].returncode == runs[1].returncode == 0, runs[1].stderr
    assert runs[0].stdout == runs[1].stdout and "arg29" in runs[0].stdout and "fallback19" in runs[0].stdout


def _stderr_of(args: list[str], terminal: bool) -> str:
    """`python -m fwdoctor ARGS`'s stderr on a pseudo-terminal (as a person sees it) or on a
    pipe (as a script reads it), the terminal's CRs taken out."""
    import sys

    from test_progress_tty import _run

    _, stderr, _ = _run([sys.executable, "-m", "fwdoctor", *args], on_pty=terminal, timeout=60)
    return stderr.replace("\r\n", "\n")


def test_a_long_remark_is_folded_on_a_terminal_and_whole_through_a_pipe(tmp_path):
    """stderr remarks (errors, refusals, notes) fit 80 columns where a person reads them,
    and stay one line per remark where a script greps them; unwrap joins the folded form
    back into exactly the piped one."""
    from fwdoctor.render.textfit import unwrap

    missing = tmp_path / "a-folder-whose-name-is-long" / "and-another-one-below-it" / "missing"
    args = ["check", "--root", str(missing)]
    piped = _stderr_of(args, terminal=False)
    folded = _stderr_of(args, terminal=True)
    message = [line for line in piped.splitlines() if line.startswith("fwdoctor: error:")]
    assert len(message) == 1 and str(missing) in message[0], piped
    assert len(message[0]) > WIDTH  # else this test proves nothing
    # A line over the width is one word (the path, whole, to be copied), nothing else.
    assert all(len(line) <= WIDTH or len(line.split()) == 1 for line in folded.splitlines()), folded
    assert f"{missing}:" in folded.split()
    assert len(folded.splitlines()) > len(piped.splitlines())
    assert unwrap(folded) == piped
