"""The one CPU-torch image of a test run, shared by tests/test_docker_e2e.py and
tests/test_project_docker.py (issue 30: each built its own ~1 GB image, and on the vfs
store every build, container and export copies all of it).

The image is a user's project built as a user builds it: fwdoctor's wheel of this checkout
installed in a fresh venv (tests/wheel_helpers.py), an empty project folder outside this
repository with a stack of CPU torch 2.13.0 plus the project's own requirement (`six`), an
apt package (tini), a copied file, an entrypoint and a command; `fwdoctor lock` against a
package index on 127.0.0.1 (tests/localindex.py: the committed CPU lock's real wheels plus
`six`), then `fwdoctor docker build` on the CI base image, with its validation (`check
--image` and `smoke kernel` in a container). What the image is read for is read once:
`cpu_image_export` exports it to a folder one time for every test that looks at its files.

Loaded as a plugin (`pytest_plugins = ("cpu_image",)` in each file that uses it), so the
session fixtures are set up once per process. Under pytest-xdist both files are in the
"docker" group of tests/conftest.py, so one worker builds the image and runs them all; the
image is removed when the session ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

import localindex
from image_helpers import required_engine
from image_helpers import unavailable

pytest_plugins = ("wheel_helpers",)  # the wheel fixture: this checkout's wheel

BASE_IMAGE = os.environ.get("FWDOCTOR_E2E_BASE", "fwdoctor-e2e-base:bookworm")
EXTRA = ("six==1.17.0",)  # the project's own requirement, locked with the rest
TIMEOUT = 900
CA = "/etc/ssl/certs/ca-certificates.crt"

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


def clean_env(home: Path) -> dict[str, str]:
    """No pip configuration, no venv of ours: what a clean user shell has."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(home), PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = TIMEOUT, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if ok and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


@pytest.fixture(scope="session")
def cpu_index(tmp_path_factory) -> Iterator[str]:
    """The committed CPU lock's wheels plus `six`, served on 127.0.0.1 for the whole session."""
    try:
        wheels = localindex.wheelhouse(extra=EXTRA)
    except localindex.Unavailable as exc:
        unavailable(str(exc))
    with localindex.serve(wheels, tmp_path_factory.mktemp("index")) as url:
        yield url


@pytest.fixture(scope="session")
def fwdoctor_venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the built wheel (its dependencies from this machine's usual sources)."""
    venv = tmp_path_factory.mktemp("tool") / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    # The docker extra, as a user of `fwdoctor docker build` installs it: the build's validation
    # runs `fwdoctor check --image` in this venv, which reads the image through the Docker SDK.
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[docker]"], cwd=venv.parent)
    return venv


@pytest.fixture(scope="session")
def project(fwdoctor_venv, cpu_index, tmp_path_factory) -> dict[str, Any]:
    """An empty project folder with a stack file and its app, locked by the installed fwdoctor.
    When the venv's pip is older than 23.3, the refused first attempt is kept for the test
    that reads it, then pip is upgraded as the message asks."""
    root = tmp_path_factory.mktemp("my project")
    (root / "stack.yaml").write_text(STACK)
    (root / "app").mkdir()
    (root / "app" / "main.py").write_text(MAIN)
    fwdoctor = str(fwdoctor_venv / "bin" / "fwdoctor")
    python = str(fwdoctor_venv / "bin" / "python")
    env = clean_env(root)
    lock_argv = [fwdoctor, "lock", "stack.yaml", "--index-url", cpu_index, "--extra-index-url", cpu_index]

    from packaging.version import Version

    pip = run([python, "-m", "pip", "--version"], cwd=root, env=env).stdout.split()[1]
    refused = None
    if Version(pip) < Version("23.3"):
        refused = run(lock_argv, cwd=root, env=env, ok=False)
        refused.wrote_nothing = not (root / "lockfiles").exists()  # type: ignore[attr-defined]
        # The upgrade the message asks for, from this machine's usual pip sources.
        run([python, "-m", "pip", "install", "-q", "--upgrade", "pip>=23.3"], cwd=root)
    locked = run(lock_argv, cwd=root, env=env)
    return {"root": root, "fwdoctor": fwdoctor, "env": env, "pip": pip, "refused": refused, "locked": locked, "index": cpu_index}


@pytest.fixture(scope="session")
def generated(project) -> dict[str, Any]:
    """`fwdoctor docker generate stack.yaml --json` in the project: the Dockerfile and .fwdoctor/."""
    import json

    done = run([project["fwdoctor"], "docker", "generate", "stack.yaml", "--json"], cwd=project["root"], env=project["env"])
    return json.loads(done.stdout)


@pytest.fixture(scope="session")
def docker_engine() -> Any:
    """The Docker SDK client, with the base image; a skip (a failure under
    FWDOCTOR_REQUIRE_DOCKER=1) saying what is missing."""
    return required_engine()


@pytest.fixture(scope="session")
def cpu_image(project, generated, docker_engine) -> Iterator[dict[str, Any]]:
    """`fwdoctor docker build stack.yaml` by the installed fwdoctor, validation included, with
    the proxy CA passed as a secret; yields {tag, lock_sha256, build (the finished process)}.
    The build's result is not asserted here: the tests that read it say what failed."""
    root = project["root"]
    build = run([project["fwdoctor"], "docker", "build", "stack.yaml", "--base-image", BASE_IMAGE, "--network", "host", "--ca", CA],
                cwd=root, env=project["env"], ok=False)
    tag = f"my-app:{generated['lock_sha256'][:12]}"
    yield {"tag": tag, "lock_sha256": generated["lock_sha256"], "build": build, "output": build.stdout + build.stderr}
    for name in (tag, "my-app:latest"):  # ~1 GB each (more on the vfs store): never left behind
        try:
            docker_engine.images.remove(name, force=True)
        except Exception:  # noqa: BLE001 - already gone, or never built
            pass


@pytest.fixture(scope="session")
def built_cpu_image(cpu_image) -> dict[str, Any]:
    """The shared image, failing the asking test (with the build's log) when it did not build."""
    assert cpu_image["build"].returncode == 0, cpu_image["output"][-4000:]
    return cpu_image


@pytest.fixture(scope="session")
def cpu_image_export(built_cpu_image, docker_engine):
    """The image's filesystem and ENV, exported once for the session (each export is a
    container of the whole image: a full copy on the vfs store)."""
    from fwdoctor.image.local_engine import export

    return export(built_cpu_image["tag"], client=docker_engine)
