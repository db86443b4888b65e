"""Paths in a stack are relative to the stack file (issue 29, item 6), as compose resolves a
build context and pip-compile a `-r` path against the file that names them: a `copy:` src
means the same file whatever the working folder, and one outside the build context is
refused with both paths named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import TEST_KB_DIR
from fwdoctor.kb import KB
from fwdoctor.recipes import lockfile
from fwdoctor.recipes import stack as stack_mod

GOLDEN = Path(__file__).resolve().parent / "golden" / "docker"
STACK = """\
name: my-app
python: "3.11"
torch: "2.13.0"
cuda: cpu
os: debian12
copy:
  - {src: app/, dest: /app/}
  - {src: config.yaml, dest: /etc/my-app.yaml}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """tmp/proj/deploy/stack.yaml beside deploy/app/ and deploy/config.yaml, locked in tmp/proj/lockfiles/."""
    proj = tmp_path / "proj"
    (proj / "deploy" / "app").mkdir(parents=True)
    (proj / "deploy" / "config.yaml").write_text("a: 1\n")
    (proj / "deploy" / "stack.yaml").write_text(STACK)
    resolved = stack_mod.resolve(stack_mod.load(proj / "deploy" / "stack.yaml"), KB.load(TEST_KB_DIR))
    pins = lockfile.pins_from_report(json.loads((GOLDEN / "pip-report-cpu-py311.json").read_text()))
    out = proj / "lockfiles" / "my-app"
    out.mkdir(parents=True)
    (out / lockfile.LOCK_NAME).write_text(lockfile.render_lock(resolved, pins, "deploy/stack.yaml"))
    (out / lockfile.PYLOCK_NAME).write_text(lockfile.render_pylock(resolved, pins, "deploy/stack.yaml"))
    return proj


def test_copy_sources_are_read_from_the_stack_files_folder(cli, use_test_kb, project, monkeypatch):
    monkeypatch.chdir(project)
    result = cli("docker", "generate", "deploy/stack.yaml", "--out", "-")
    assert result.exit_code == 0, result.output
    assert 'COPY ["deploy/app/", "/app/"]\nCOPY ["deploy/config.yaml", "/etc/my-app.yaml"]\n' in result.stdout


def test_the_same_stack_from_another_working_folder_copies_the_same_files(cli, use_test_kb, project, tmp_path, monkeypatch):
    monkeypatch.chdir(project)
    here = cli("docker", "generate", "deploy/stack.yaml", "--out", "-").stdout
    monkeypatch.chdir(tmp_path)
    there = cli("docker", "generate", str(project / "deploy" / "stack.yaml"), "--context", str(project),
                "--lock-dir", str(project / "lockfiles" / "my-app"), "--out", "-")
    assert there.exit_code == 0, there.output
    copies = [line for line in here.splitlines() if line.startswith("COPY [\"deploy/")]
    assert copies and copies == [line for line in there.stdout.splitlines() if line.startswith("COPY [\"deploy/")]


def test_a_copy_source_outside_the_build_context_is_refused(cli, use_test_kb, project, monkeypatch):
    monkeypatch.chdir(project)
    result = cli("docker", "generate", "deploy/stack.yaml", "--context", "lockfiles", "--out", "-")
    assert result.exit_code == 2
    assert f"copy src 'app/' is {project / 'deploy' / 'app'}, outside the build context {project / 'lockfiles'}" in result.output


def test_copy_in_context_keeps_a_folder_a_folder():
    items = (stack_mod.CopyItem("app/", "/app/"), stack_mod.CopyItem(".", "/srv/"), stack_mod.CopyItem("./", "/x/"))
    placed = stack_mod.copy_in_context(items, "/p/deploy/stack.yaml", "/p")
    assert [i.src for i in placed] == ["deploy/app/", "deploy", "deploy/"]
    assert [i.src for i in stack_mod.copy_in_context(items, "/p/stack.yaml", "/p")] == ["app/", ".", "./"]
