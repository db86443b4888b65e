"""End to end with a real Docker engine: lock a CPU stack against a local index, generate
its Dockerfile on the debootstrapped base image, build it, and validate it.

Needs what .ci/setup-docker.sh provides: a running engine and the image
fwdoctor-e2e-base:bookworm (Debian 12 minbase + python3/python3-venv). The torch wheel is
the real download.pytorch.org CPU wheel in /opt/wheels; its pure-Python dependencies are
fetched once from pypi.org into /var/tmp/fwdoctor-e2e-wheels (tests/localindex.py). pip
inside the build reaches the local index the lock names over 127.0.0.1 (`--network host`);
no index argument is passed: the lock's own --index-url line is what pip uses. Skips with the reason when anything is
missing, unless FWDOCTOR_REQUIRE_DOCKER=1 (CI), where a skip would hide a broken setup.
Slow on purpose (~3 min on 2 cores, most of it the vfs store copying the ~1 GB image): the
only proof that a committed pip stack builds and validates on a real engine.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import localindex
from image_helpers import required_engine
from image_helpers import unavailable as _unavailable

REPO = Path(__file__).resolve().parent.parent
BASE_IMAGE = os.environ.get("FWDOCTOR_E2E_BASE", "fwdoctor-e2e-base:bookworm")
STACK = REPO / "stacks" / "cpu-py311.yaml"

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def engine():
    return required_engine()


def _lock_pins(lock: Path) -> dict[str, str]:
    from fwdoctor.recipes.lockfile import read_pins

    return read_pins(lock.read_text())


@pytest.fixture(scope="module")
def local_index(engine, tmp_path_factory):
    """The committed CPU lock's wheels on 127.0.0.1 (tests/localindex.py)."""
    try:
        wheels = localindex.wheelhouse()
    except localindex.Unavailable as exc:
        _unavailable(str(exc))
    with localindex.serve(wheels, tmp_path_factory.mktemp("index")) as url:
        yield url


@pytest.fixture(scope="module")
def built(engine, local_index, tmp_path_factory):
    """Lock, generate and build in a scratch build context; yields (tag, lock sha256, output) and
    removes the image afterwards."""
    from click.testing import CliRunner

    from fwdoctor.cli import main

    # The build context holds only the lock: fwdoctor enters the image as a wheel of the
    # fwdoctor running this test (`docker build` writes it into context/.fwdoctor/).
    context = tmp_path_factory.mktemp("context")
    lock_dir = context / "lockfiles" / "cpu-py311"
    runner = CliRunner()
    lock = runner.invoke(main, ["lock", str(STACK), "--out", str(lock_dir), "--index-url", local_index, "--extra-index-url", local_index])
    assert lock.exit_code == 0, lock.output
    # The local index holds exactly the committed lock's files: the same pins come out.
    assert _lock_pins(lock_dir / "requirements.lock") == _lock_pins(REPO / "lockfiles" / "cpu-py311" / "requirements.lock")
    build = runner.invoke(main, [
        "docker", "build", str(STACK), "--base-image", BASE_IMAGE, "--lock-dir", str(lock_dir), "--context", str(context),
        "--network", "host", "--ca", "/etc/ssl/certs/ca-certificates.crt",
    ])
    digest = hashlib.sha256((lock_dir / "requirements.lock").read_bytes()).hexdigest()
    yield f"cpu-py311:{digest[:12]}", digest, build
    # Each build leaves a ~1 GB image (more on the vfs store): CI machines and laptops that
    # run the suite repeatedly must not fill up with them.
    _remove_images(engine, f"cpu-py311:{digest[:12]}", "cpu-py311:latest")


def _remove_images(engine, *tags: str) -> None:
    for tag in tags:
        try:
            engine.images.remove(tag, force=True)
        except Exception:  # noqa: BLE001 - already gone, or never built: nothing to free
            pass


def test_the_cpu_stack_builds_and_passes_validation(built):
    tag, _, result = built
    assert result.exit_code == 0, result.output[-4000:]
    assert f"{tag} validated" in result.output


def test_the_built_image_carries_the_stack_and_lock_labels_and_a_non_root_user(built, engine):
    tag, digest, result = built
    assert result.exit_code == 0, result.output[-2000:]
    config = engine.images.get(tag).attrs["Config"]
    assert config["Labels"]["io.fwdoctor.stack"] == "cpu-py311"
    assert config["Labels"]["io.fwdoctor.lock.sha256"] == digest
    assert config["User"] == "10001:10001"


@pytest.fixture(scope="module")
def exported(built, engine):
    """The built image's filesystem and ENV, exported once (each export copies the image)."""
    tag, _, result = built
    assert result.exit_code == 0, result.output[-2000:]
    from fwdoctor.image.local_engine import export

    return export(tag, client=engine)


def test_the_exported_image_is_judged_as_a_root_folder_without_running_it(exported, cli, tmp_path):
    env_file = tmp_path / "image.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in exported.env.items()))
    out = cli("facts", "--root", exported.root, "--env-file", str(env_file))
    facts = json.loads(out.output)["facts"]
    assert facts["torch.version"]["value"] == "2.13.0+cpu"
    assert facts["python.version"]["value"].startswith("3.11.")
    # Docker's export carries the container's /dev nodes (dev/full, dev/null, ...): refused.
    assert "dev/full: device node" in exported.skipped
    assert all(item.startswith("dev/") and item.endswith(": device node") for item in exported.skipped)


def test_the_proxy_ca_secret_does_not_reach_the_final_image(exported):
    assert not (Path(exported.root) / "run" / "secrets" / "ca").exists()
    assert "PIP_CERT" not in exported.env
    assert "PIP_INDEX_URL" not in exported.env
    assert not any(Path(exported.root, "tmp").glob("requirements.lock"))


def test_fwdoctor_is_installed_in_the_image_from_its_wheel_not_copied_from_this_repository(exported, built):
    import fwdoctor

    root = Path(exported.root)
    site = root / "opt" / "venv" / "lib" / "python3.11" / "site-packages"
    info = site / f"fwdoctor-{fwdoctor.__version__}.dist-info"
    assert (info / "RECORD").is_file() and (site / "fwdoctor" / "recipes" / "lockfile.py").is_file()
    assert not (root / "opt" / "fwdoctor").exists()
    assert (root / "opt" / "venv" / "bin" / "fwdoctor").is_file()
