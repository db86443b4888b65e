"""recipes/docker_build.py without an engine: choosing a BuildKit-capable CLI, the build
argv (secret, network, tags), streaming with a timeout, and what validation demands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fwdoctor import runner
from fwdoctor.recipes import docker_build as db


def fake_cli(tmp_path: Path, name: str, version: str, buildx: bool) -> str:
    """A stand-in docker CLI answering `buildx version` and `version --format`; the version
    strings are the real ones of this build host's /usr/bin/docker (20.10.24+dfsg1, Debian
    docker.io) and /usr/local/bin/docker (28.2.2)."""
    path = tmp_path / name
    path.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = buildx ]; then {"echo github.com/docker/buildx v0.13.1; exit 0" if buildx else "echo unknown command >&2; exit 1"}; fi\n'
        f'if [ "$1" = version ]; then echo {version}; exit 0; fi\n'
        "exit 3\n"
    )
    path.chmod(0o755)
    return str(path)


def test_a_cli_with_buildx_builds_with_buildx_and_loads_the_image(tmp_path):
    cli = fake_cli(tmp_path, "docker", "28.2.2", buildx=True)
    builder = db.find_builder([cli])
    assert builder.argv == (cli, "buildx", "build", "--load") and not builder.env


def test_a_pre_23_cli_without_buildx_uses_its_built_in_buildkit(tmp_path):
    new = fake_cli(tmp_path, "docker-new", "28.2.2", buildx=False)
    old = fake_cli(tmp_path, "docker-old", "20.10.24+dfsg1", buildx=False)
    builder = db.find_builder([new, old])
    assert builder.argv == (old, "build") and builder.env == {"DOCKER_BUILDKIT": "1"}


def test_no_buildkit_capable_cli_is_an_error_saying_what_to_install(tmp_path):
    new = fake_cli(tmp_path, "docker", "28.2.2", buildx=False)
    with pytest.raises(db.BuildError, match=r"28.2.2 \(no buildx plugin\).*install the buildx plugin"):
        db.find_builder([new])


def test_the_build_argv_passes_the_ca_as_a_secret_and_never_as_a_build_arg():
    builder = db.Builder(("docker", "build"), {"DOCKER_BUILDKIT": "1"})
    argv = db.build_argv(builder, "/tmp/Dockerfile", "/ctx", ["s:abc", "s:latest"], ca="/etc/ssl/ca.pem",
                         build_args={"PIP_INDEX_URL": "http://127.0.0.1:8080/simple"}, network="host")
    assert argv == ["docker", "build", "--progress=plain", "-f", "/tmp/Dockerfile", "-t", "s:abc", "-t", "s:latest",
                    "--build-arg", "PIP_INDEX_URL=http://127.0.0.1:8080/simple", "--secret", "id=ca,src=/etc/ssl/ca.pem",
                    "--network", "host", "/ctx"]


def test_build_output_is_streamed_line_by_line():
    lines: list[str] = []
    status = db.stream([sys.executable, "-c", "print('step 1'); print('step 2'); raise SystemExit(3)"], lines.append, timeout=60)
    assert status == 3 and lines == ["step 1", "step 2"]


def test_a_build_that_outlives_its_timeout_is_killed():
    with pytest.raises(db.BuildError, match="still running after 1s: killed"):
        db.stream([sys.executable, "-c", "import time\nwhile True: print('.', flush=True); time.sleep(0.2)"], lambda _l: None, timeout=1)


def test_a_missing_ca_file_fails_before_building():
    with pytest.raises(db.BuildError, match="--ca /nonexistent/ca.pem: no such file"):
        db.build("Dockerfile", ".", ["t:1"], print, ca="/nonexistent/ca.pem", builder=db.Builder(("true",)))


class FakeImages:
    def __init__(self, labels, user):
        self.attrs = {"Config": {"Labels": labels, "User": user}}

    def get(self, tag):
        return self


class FakeClient:
    def __init__(self, labels, user):
        self.images = FakeImages(labels, user)


@pytest.fixture
def passing_checks(monkeypatch):
    monkeypatch.setattr(runner, "run", lambda argv, **kw: runner.CommandResult(tuple(argv), 0, "No problems found.\n", ""))
    monkeypatch.setattr(db, "run_in_container", lambda client, tag, command, gpus: (0, "kernel: skipped (no GPU)\n"))


def test_validation_passes_with_matching_labels_a_non_root_user_and_passing_checks(passing_checks):
    client = FakeClient({"io.fwdoctor.stack": "s", "io.fwdoctor.lock.sha256": "f" * 64}, "10001:10001")
    result = db.validate("s:fff", "s", "f" * 64, lambda _l: None, client=client, gpus=False)
    assert result.ok and len(result.passed) == 4


def test_validation_fails_for_a_root_image_and_a_foreign_lock(passing_checks):
    client = FakeClient({"io.fwdoctor.stack": "s", "io.fwdoctor.lock.sha256": "0" * 64}, "")
    result = db.validate("s:fff", "s", "f" * 64, lambda _l: None, client=client, gpus=False)
    assert not result.ok
    assert any("label io.fwdoctor.lock.sha256" in p for p in result.problems)
    assert any("runs as root" in p for p in result.problems)


def test_the_image_check_runs_the_installed_fwdoctor_module(monkeypatch):
    """The check runs as `python -m fwdoctor`: the import package a wheel installs (the
    pre-wheel `-m doctor` found nothing outside this checkout)."""
    seen: list[tuple[str, ...]] = []

    def run(argv, **kw):
        seen.append(tuple(argv))
        return runner.CommandResult(tuple(argv), 0, "", "")

    monkeypatch.setattr(runner, "run", run)
    monkeypatch.setattr(db, "run_in_container", lambda client, tag, command, gpus: (0, ""))
    client = FakeClient({"io.fwdoctor.stack": "s", "io.fwdoctor.lock.sha256": "f" * 64}, "10001")
    db.validate("s:fff", "s", "f" * 64, lambda _l: None, client=client, gpus=False)
    (argv,) = seen
    assert argv[1:3] == ("-m", "fwdoctor") and argv[3:] == ("check", "--image", "s:fff")
    help_run = subprocess.run([*argv[:3], "--version"], capture_output=True, text=True, timeout=60, cwd="/")
    assert help_run.returncode == 0, help_run.stderr


def test_validation_fails_when_check_image_finds_errors_or_smoke_fails(monkeypatch):
    monkeypatch.setattr(runner, "run", lambda argv, **kw: runner.CommandResult(tuple(argv), 1, "error: torch-toolkit-mismatch\n", ""))
    monkeypatch.setattr(db, "run_in_container", lambda client, tag, command, gpus: (1, "FAIL"))
    client = FakeClient({"io.fwdoctor.stack": "s", "io.fwdoctor.lock.sha256": "f" * 64}, "10001")
    result = db.validate("s:fff", "s", "f" * 64, lambda _l: None, client=client, gpus=False)
    assert len(result.problems) == 2
    assert result.problems[0].startswith("fwdoctor check --image s:fff: ") and "exit status 1" in result.problems[0]
    assert result.problems[1] == "fwdoctor smoke kernel in a container exited 1"
