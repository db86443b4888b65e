"""End to end with a real Docker engine: a stack with conda packages goes from YAML to
conda-lock.yml to a built, validated image, and a tampered conda lock fails the build
naming the package.

The stack is stacks/cpu-py311.yaml on a conda base: `conda: {channels: [the local channel],
packages: [python=3.11, pip]}`, the pip part (torch 2.13.0+cpu and fwdoctor's tools) on top.
The conda channel is tests/condachannel.py's (real package files, indexed by py-rattler;
its python is a symlink to Debian 12's /usr/bin/python3.11, which the base image has) plus a
conda `pip` package made from pip's PyPI wheel, served on 127.0.0.1; the pip wheels (and the
conda installer's py-rattler and ruamel.yaml) come from the local index of
tests/localindex.py. Builds use `--network host` so both are reachable from the build, on
the base image of .ci/setup-docker.sh. `fwdoctor lock` locks the conda part with py-rattler's
solver (no conda/mamba/micromamba here). Skips with the reason when anything is missing,
unless FWDOCTOR_REQUIRE_DOCKER=1 (CI). Slow on purpose (~4 min on 2 cores on overlay2; on the
vfs store, which copies the whole image for every layer, container and export, ~15 min): the
only proof that a conda stack builds and validates for real. The image is read once, in
memory, for every test that looks inside it."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from conftest import require_module

import localindex
from image_helpers import required_engine
from image_helpers import unavailable as _unavailable

REPO = Path(__file__).resolve().parent.parent
BASE_IMAGE = os.environ.get("FWDOCTOR_E2E_BASE", "fwdoctor-e2e-base:bookworm")
NAME = "conda-cpu-e2e"
PIP_VERSION = "24.2"
# The conda installer's own wheels (recipes/dockerfile.py CONDA_INSTALLER_PINS) and the pip
# wheel the channel's conda `pip` package is made from, served beside the lock's wheels.
EXTRA_WHEELS = ("py-rattler==0.28.0", "ruamel-yaml==0.19.1", f"pip=={PIP_VERSION}")

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def engine():
    require_module("rattler", "pip install 'fwdoctor[conda]'")
    return required_engine()


@pytest.fixture(scope="module")
def served(engine, tmp_path_factory):
    """(pip index URL, conda channel URL), both on 127.0.0.1 for the module's builds."""
    from tests import condachannel as cc
    from test_dockerfile_conda import channel_with_pip

    try:
        wheels = localindex.wheelhouse(extra=EXTRA_WHEELS)
    except localindex.Unavailable as exc:
        _unavailable(str(exc))
    (pip_wheel,) = wheels.glob(f"pip-{PIP_VERSION}-*.whl")
    base = cc.build_gpu_channel(tmp_path_factory.mktemp("condachannel") / "base")
    channel = channel_with_pip(base, tmp_path_factory.mktemp("condachannel") / "ch", pip_wheel)
    with localindex.serve(wheels, tmp_path_factory.mktemp("index")) as index, cc.serve(channel) as conda_url:
        yield index, conda_url


@pytest.fixture(scope="module")
def built(engine, served, tmp_path_factory):
    """YAML -> `fwdoctor lock` -> `fwdoctor docker build` in a scratch build context; yields
    (tag, context, lock folder, build result) and removes the images afterwards."""
    from click.testing import CliRunner

    from fwdoctor.cli import main
    from fwdoctor.recipes import dockerfile
    from test_dockerfile_conda import conda_stack_file

    index, conda_url = served
    context = tmp_path_factory.mktemp("context")
    stack = conda_stack_file(context, conda_url, NAME)
    lock_dir = context / "lockfiles" / NAME
    runner = CliRunner()
    lock = runner.invoke(main, ["lock", str(stack), "--out", str(lock_dir), "--index-url", index, "--extra-index-url", index])
    assert lock.exit_code == 0, lock.output
    assert (lock_dir / "conda-lock.yml").is_file() and "torch==2.13.0+cpu" in (lock_dir / "requirements.lock").read_text()
    build = runner.invoke(main, [
        "docker", "build", str(stack), "--base-image", BASE_IMAGE, "--lock-dir", str(lock_dir), "--context", str(context),
        "--network", "host", "--ca", "/etc/ssl/certs/ca-certificates.crt",
    ])
    image = dockerfile.image_digest((lock_dir / "requirements.lock").read_text(), (lock_dir / "conda-lock.yml").read_text())
    tag = f"{NAME}:{image[:12]}"
    yield tag, context, lock_dir, build
    _remove_images(engine, tag, f"{NAME}:latest", f"{NAME}-tampered:1")


def _remove_images(engine, *tags: str) -> None:
    for tag in tags:
        try:
            engine.images.remove(tag, force=True)
        except Exception:  # noqa: BLE001 - already gone, or never built: nothing to free
            pass


def test_the_conda_stack_builds_and_passes_validation(built):
    tag, _, _, result = built
    assert result.exit_code == 0, result.output[-6000:]
    assert "conda_install: done: /opt/conda (" in result.output
    assert "ok: fwdoctor check --image: no error finding" in result.output
    assert f"{tag} validated" in result.output


def test_the_image_carries_both_locks_digests(built, engine):
    tag, _, lock_dir, result = built
    assert result.exit_code == 0, result.output[-2000:]
    labels = engine.images.get(tag).attrs["Config"]["Labels"]
    assert labels["io.fwdoctor.conda-lock.sha256"] == hashlib.sha256((lock_dir / "conda-lock.yml").read_bytes()).hexdigest()
    assert labels["io.fwdoctor.lock.sha256"] == hashlib.sha256((lock_dir / "requirements.lock").read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def inspected(built, engine):
    """The image read once, in memory, as `check --image` reads it (one export stream; the
    files the probes declare, conda-meta/*.json among them, keep their content, every other
    file its name): the tests below that look inside the image all read this one export."""
    tag, _, _, result = built
    assert result.exit_code == 0, result.output[-2000:]
    from fwdoctor.image.local_engine import inspect

    return inspect(tag, client=engine)


def test_the_environment_holds_exactly_the_locked_packages_with_conda_meta_records(inspected, built):
    from fwdoctor.recipes.conda_lock import read_conda_lock

    _, _, lock_dir, _ = built
    host = inspected.host()
    locked = {r.name: r for r in read_conda_lock(lock_dir / "conda-lock.yml")}
    records = {}
    for name in host.listdir("/opt/conda/conda-meta"):
        if name.endswith(".json"):
            record = json.loads(host.read_bytes(f"/opt/conda/conda-meta/{name}"))
            records[record["name"]] = record
    assert sorted(records) == sorted(locked)
    for name, record in records.items():
        assert (record["version"], record["build"], record["url"], record["sha256"], record["md5"]) == (
            locked[name].version, locked[name].build, locked[name].url, locked[name].sha256, locked[name].md5), name
    # The pip part is in the environment's site-packages; the installer and its venv are not in the image.
    site = "/opt/conda/lib/python3.11/site-packages"
    assert host.is_file(f"{site}/torch/version.py") and host.is_file(f"{site}/pip/__init__.py")
    assert not host.exists(f"{site}/rattler") and not host.exists("/tmp/conda-installer")
    assert not host.exists("/opt/venv")
    assert inspected.env["CONDA_PREFIX"] == "/opt/conda" and inspected.env["PATH"].startswith("/opt/conda/bin:")


def test_python_in_the_image_is_the_environments_with_the_pip_part_on_top(built, engine):
    from fwdoctor.recipes import docker_build as db

    tag, _, _, result = built
    assert result.exit_code == 0, result.output[-2000:]
    # -W ignore: torch warns on stderr that numpy is absent (the stack does not ask for it).
    status, output = db.run_in_container(engine, tag, ["python", "-W", "ignore", "-c", "import sys, torch; print(sys.prefix, torch.__version__)"], False)
    assert status == 0 and output.split() == ["/opt/conda", "2.13.0+cpu"], output


def test_check_judges_the_conda_environment_of_the_image(inspected, built):
    """The facts `check --image TAG` gathers (fwdoctor.sources: the in-memory read above,
    then every probe over it); the CLI's --image wiring is test_image_archive.py's."""
    from fwdoctor.engine import collect
    from fwdoctor.probes import PROBES
    from fwdoctor.recipes.conda_lock import read_conda_lock

    _, _, lock_dir, _ = built
    facts = collect(inspected.host(), PROBES).to_json()["facts"]
    assert facts["torch.version"]["value"] == "2.13.0+cpu"
    assert facts["python.version"]["value"].startswith("3.11.")
    # The conda-env probe (doctor/probes/conda.py) reads the records the installer wrote.
    assert facts["conda.prefix"]["value"] == "/opt/conda"
    packages = facts["conda.packages"]["value"]
    locked = {r.name: r for r in read_conda_lock(lock_dir / "conda-lock.yml")}
    assert sorted(packages) == sorted(locked)
    assert {name: (p["version"], p["build"]) for name, p in packages.items()} == {n: (r.version, r.build) for n, r in locked.items()}
    assert facts["conda.torch_build"]["value"] is None  # torch is pip's here, not conda's


def test_a_tampered_conda_lock_fails_the_build_naming_the_package(built, served):
    """The image's installer, not `lock --check`, refuses it: built from the recipe layer with a
    conda lock whose pip sha256 was changed (the CLI would stop at the stale lock first)."""
    import yaml

    from fwdoctor.recipes import docker_build as db
    from fwdoctor.recipes import dockerfile, stack as stack_mod
    from fwdoctor.kb import KB

    _, context, lock_dir, _ = built
    bad_dir = context / "lockfiles" / "tampered"
    bad_dir.mkdir()
    text = (lock_dir / "conda-lock.yml").read_text()
    data = yaml.safe_load(text)
    (pip,) = [p for p in data["package"] if p["name"] == "pip"]
    good = pip["hash"]["sha256"]
    bad = ("0" if good[0] != "0" else "1") + good[1:]
    (bad_dir / "conda-lock.yml").write_text(text.replace(good, bad))
    lock_text = (lock_dir / "requirements.lock").read_text()
    (bad_dir / "requirements.lock").write_text(lock_text)
    resolved = stack_mod.load_and_resolve(context / "stacks" / f"{NAME}.yaml", KB())
    dockerfile_path = context / "Dockerfile.tampered"
    dockerfile_path.write_text(dockerfile.render(resolved, lock_text, "stacks/x.yaml", "lockfiles/tampered", BASE_IMAGE,
                                                 conda_lock_text=(bad_dir / "conda-lock.yml").read_text()))
    lines: list[str] = []
    with pytest.raises(db.BuildError, match="docker build failed"):
        db.build(str(dockerfile_path), str(context), [f"{NAME}-tampered:1"], lines.append, network="host", ca="/etc/ssl/certs/ca-certificates.crt")
    failed = [line for line in lines if "conda_install: FAILED:" in line]
    assert failed and f"FAILED: pip {PIP_VERSION} " in failed[0] and "sha256 mismatch" in failed[0] and f"the lock says {bad}" in failed[0], lines[-30:]
