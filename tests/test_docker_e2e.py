"""End to end with a real Docker engine: a pip stack of CPU torch goes from a lock to a built,
validated image on the debootstrapped base image, which is then read back without running it.

The image is the run's one CPU-torch image (tests/cpu_image.py, shared with
tests/test_project_docker.py): the committed stack stacks/cpu-py311.yaml (torch 2.13.0+cpu,
CPython 3.11, Debian 12) plus a project's own requirement, apt package, file and entrypoint,
built by the installed wheel with `fwdoctor docker build` and its validation. Here: the
committed stack's lock comes out again from a local index holding its wheels, and the built
image carries the labels, the user, the files and the ENV the stack promises.

Needs what .ci/setup-docker.sh provides: a running engine and the image
fwdoctor-e2e-base:bookworm (Debian 12 minbase + python3/python3-venv). The torch wheel is
the real download.pytorch.org CPU wheel in /opt/wheels; its pure-Python dependencies are
fetched once from pypi.org into /var/tmp/fwdoctor-e2e-wheels (tests/localindex.py). pip
inside the build reaches the local index the lock names over 127.0.0.1 (`--network host`);
no index argument is passed: the lock's own --index-url line is what pip uses. Skips with the
reason when anything is missing, unless FWDOCTOR_REQUIRE_DOCKER=1 (CI), where a skip would
hide a broken setup. Slow on purpose (measured at load ~9 on 2 cores: the shared build with
its validation 190 s on overlay2, 545 s on the vfs store; the one export of the ~1 GB image
27 s and 155 s): the only proof that a pip stack builds and validates on a real engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ("cpu_image",)  # the run's one CPU-torch image (tests/cpu_image.py)

REPO = Path(__file__).resolve().parent.parent
STACK = REPO / "stacks" / "cpu-py311.yaml"

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _lock_pins(lock: Path) -> dict[str, str]:
    from fwdoctor.recipes.lockfile import read_pins

    return read_pins(lock.read_text())


def test_the_committed_cpu_stack_locks_to_the_committed_pins_from_a_local_index(cpu_index, tmp_path, cli):
    """The local index holds the committed lock's files (and the project's `six`, which this
    stack does not ask for): locking the committed stack against it gives the same pins, so
    the shared image's torch and its dependencies are the committed stack's."""
    lock_dir = tmp_path / "lockfiles" / "cpu-py311"
    lock = cli("lock", str(STACK), "--out", str(lock_dir), "--index-url", cpu_index, "--extra-index-url", cpu_index)
    assert lock.exit_code == 0, lock.output
    assert _lock_pins(lock_dir / "requirements.lock") == _lock_pins(REPO / "lockfiles" / "cpu-py311" / "requirements.lock")


def test_the_cpu_stack_builds_and_passes_validation(cpu_image):
    output = cpu_image["output"]
    assert cpu_image["build"].returncode == 0, output[-4000:]
    assert "ok: fwdoctor check --image: no error finding" in output
    assert "passed in a container" in output  # fwdoctor smoke kernel, run inside the image
    assert f"{cpu_image['tag']} validated" in output


def test_the_built_image_carries_the_stack_and_lock_labels_and_a_non_root_user(built_cpu_image, docker_engine):
    config = docker_engine.images.get(built_cpu_image["tag"]).attrs["Config"]
    assert config["Labels"]["io.fwdoctor.stack"] == "my-app"
    assert config["Labels"]["io.fwdoctor.lock.sha256"] == built_cpu_image["lock_sha256"]
    assert config["Labels"]["io.fwdoctor.torch"] == "2.13.0+cpu"
    assert config["User"] == "10001:10001"


def test_the_exported_image_is_judged_as_a_root_folder_without_running_it(cpu_image_export, cli, tmp_path):
    exported = cpu_image_export
    env_file = tmp_path / "image.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in exported.env.items()))
    out = cli("facts", "--root", exported.root, "--env-file", str(env_file))
    facts = json.loads(out.output)["facts"]
    assert facts["torch.version"]["value"] == "2.13.0+cpu"
    assert facts["python.version"]["value"].startswith("3.11.")
    # Docker's export carries the container's /dev nodes (dev/full, dev/null, ...): refused.
    assert "dev/full: device node" in exported.skipped
    assert all(item.startswith("dev/") and item.endswith(": device node") for item in exported.skipped)


def test_the_proxy_ca_secret_does_not_reach_the_final_image(cpu_image_export):
    exported = cpu_image_export
    assert not (Path(exported.root) / "run" / "secrets" / "ca").exists()
    assert "PIP_CERT" not in exported.env
    assert "PIP_INDEX_URL" not in exported.env
    assert not any(Path(exported.root, "tmp").glob("requirements.lock"))


def test_fwdoctor_is_installed_in_the_image_from_its_wheel_not_copied_from_this_repository(cpu_image_export):
    import fwdoctor

    root = Path(cpu_image_export.root)
    site = root / "opt" / "venv" / "lib" / "python3.11" / "site-packages"
    info = site / f"fwdoctor-{fwdoctor.__version__}.dist-info"
    assert (info / "RECORD").is_file() and (site / "fwdoctor" / "recipes" / "lockfile.py").is_file()
    assert not (root / "opt" / "fwdoctor").exists()
    assert (root / "opt" / "venv" / "bin" / "fwdoctor").is_file()
