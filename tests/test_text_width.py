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
