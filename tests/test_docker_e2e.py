"""End to end with a real Docker engine: lock a CPU stack against a local index, generate
its Dockerfile on the debootstrapped base image, build it, and validate it.

Needs what .ci/setup-docker.sh provides: a running engine and the image
fwdoctor-e2e-base:bookworm (Debian 12 minbase + python3/python3-venv). The torch wheel is
the real download.pytorch.org CPU wheel in /opt/wheels; its pure-Python dependencies are
fetched once from pypi.org into /var/tmp/fwdoctor-e2e-wheels. pip inside the build reaches
the local index over 127.0.0.1 (`--network host`). Skips with the reason when anything is
missing, unless FWDOCTOR_REQUIRE_DOCKER=1 (CI), where a skip would hide a broken setup.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BASE_IMAGE = os.environ.get("FWDOCTOR_E2E_BASE", "fwdoctor-e2e-base:bookworm")
TORCH_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
WHEEL_CACHE = Path(os.environ.get("FWDOCTOR_E2E_WHEELS", "/var/tmp/fwdoctor-e2e-wheels"))
STACK = REPO / "stacks" / "cpu-py311.yaml"
REQUIRE = os.environ.get("FWDOCTOR_REQUIRE_DOCKER") == "1"

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _unavailable(reason: str) -> None:
    if REQUIRE:
        pytest.fail(f"FWDOCTOR_REQUIRE_DOCKER=1 but {reason} (run .ci/setup-docker.sh)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def engine():
    try:
        import docker
    except ImportError:
        _unavailable("the docker SDK is not installed")
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:
        _unavailable(f"no Docker engine reachable: {str(exc).splitlines()[0][:120]}")
    try:
        client.images.get(BASE_IMAGE)
    except Exception:
        _unavailable(f"base image {BASE_IMAGE} missing")
    if not TORCH_WHEEL.is_file():
        _unavailable(f"{TORCH_WHEEL} missing")
    return client


def _lock_pins(lock: Path) -> dict[str, str]:
    from fwdoctor.recipes.lockfile import read_pins

    return read_pins(lock.read_text())


@pytest.fixture(scope="module")
def wheelhouse(engine) -> Path:
    """The committed CPU lock's wheels: torch from /opt/wheels, the rest from pypi.org."""
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    pins = _lock_pins(REPO / "lockfiles" / "cpu-py311" / "requirements.lock")
    wanted = [f"{name}=={version}" for name, version in sorted(pins.items()) if name != "torch"]
    have = {p.name.split("-")[0].lower().replace("_", "-") for p in WHEEL_CACHE.glob("*.whl")}
    if not all(w.split("==")[0] in have for w in wanted):
        argv = [sys.executable, "-m", "pip", "--isolated", "download", "--no-deps", "--only-binary=:all:",
                "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
                "--index-url", "https://pypi.org/simple", "-d", str(WHEEL_CACHE), *wanted]
        cert = os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"
        if os.path.isfile(cert):
            argv += ["--cert", cert]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            _unavailable(f"cannot fetch the lock's wheels from pypi.org: {done.stderr.strip().splitlines()[-1:]}")
    target = WHEEL_CACHE / TORCH_WHEEL.name
    if not target.exists():
        shutil.copy(TORCH_WHEEL, target)
    return WHEEL_CACHE


def write_simple_index(wheels: Path, root: Path) -> None:
    """A PEP 503 index over `wheels`: root/simple/<name>/index.html with #sha256 links."""
    by_name: dict[str, list[Path]] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        name = wheel.name.split("-")[0].lower().replace("_", "-").replace(".", "-")
        by_name.setdefault(name, []).append(wheel)
    (root / "files").mkdir(parents=True, exist_ok=True)
    for name, files in by_name.items():
        page = root / "simple" / name
        page.mkdir(parents=True, exist_ok=True)
        links = []
        for wheel in files:
            link = root / "files" / wheel.name
            if not link.exists():
                link.symlink_to(wheel)
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            links.append(f'<a href="../../files/{wheel.name}#sha256={digest}">{wheel.name}</a><br>')
        (page / "index.html").write_text("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")
    (root / "simple" / "index.html").write_text("".join(f'<a href="{n}/">{n}</a>\n' for n in sorted(by_name)))


@pytest.fixture(scope="module")
def local_index(wheelhouse, tmp_path_factory):
    root = tmp_path_factory.mktemp("index")
    write_simple_index(wheelhouse, root)
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest output readable
        pass


@pytest.fixture(scope="module")
def built(engine, local_index, tmp_path_factory):
    """Lock, generate and build in a scratch build context; returns (tag, lock sha256, output)."""
    from click.testing import CliRunner

    from fwdoctor.cli import main

    context = tmp_path_factory.mktemp("context")
    for part in ("doctor", "recipes"):
        shutil.copytree(REPO / part, context / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    lock_dir = context / "lockfiles" / "cpu-py311"
    runner = CliRunner()
    lock = runner.invoke(main, ["lock", str(STACK), "--out", str(lock_dir), "--index-url", local_index, "--extra-index-url", local_index])
    assert lock.exit_code == 0, lock.output
    # The local index holds exactly the committed lock's files: the same pins come out.
    assert _lock_pins(lock_dir / "requirements.lock") == _lock_pins(REPO / "lockfiles" / "cpu-py311" / "requirements.lock")
    build = runner.invoke(main, [
        "docker", "build", str(STACK), "--base-image", BASE_IMAGE, "--lock-dir", str(lock_dir), "--context", str(context),
        "--network", "host", "--build-arg", f"PIP_INDEX_URL={local_index}", "--build-arg", "PIP_EXTRA_INDEX_URL=",
        "--ca", "/etc/ssl/certs/ca-certificates.crt",
    ])
    digest = hashlib.sha256((lock_dir / "requirements.lock").read_bytes()).hexdigest()
    return f"cpu-py311:{digest[:12]}", digest, build


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
    from fwdoctor.image import export

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
