"""`fwdoctor docker generate`: a two-stage Dockerfile for a resolved, locked stack.

Pure: `render(stack, lock_text, ...)` returns the text; the CLI writes it to
dockerfiles/<stack>/Dockerfile. The build context is the user's project folder: the
Dockerfile copies the lock, fwdoctor's folder in the context (TOOL_CONTEXT_DIR: a wheel of
the fwdoctor that generated it and a one-line hashed requirements file naming it, written
by the CLI) and the stack's `copy:` items. Choices, and why:
- build stage creates a venv from the lock with --require-hashes --no-deps: exactly the
  locked files, nothing resolved at build time; the runtime stage copies only the venv, so
  pip caches, apt lists and the proxy CA never reach the final image;
- fwdoctor enters the venv as a hashed requirement too (its wheel's sha256 lives in the
  context's requirements file, not here, so this file does not change with every fwdoctor
  build); its own dependencies are pinned in the lock;
- the proxy CA is a BuildKit secret (`--secret id=ca,src=ca.pem`), mounted for one RUN only
  and exported as PIP_CERT there;
- the lock names its indexes (--index-url lines), so the build needs no index argument; to
  build through a mirror, lock against the mirror;
- nvidia/cuda `base` images: torch wheels bring cuDNN/NCCL/cuBLAS from pip, so `runtime`
  or `cudnn-*` would only add a second, unused copy;
- a non-root user; OCI labels carry the stack name and the lock's sha256;
- the GPU health check (`fwdoctor smoke kernel`) only when the stack asks (`healthcheck:
  true`): on a CPU host or a CPU image it can only fail or skip.

Stacks with conda packages (`conda:`) get a conda environment at CONDA_PREFIX in place of
the venv, built from the lock folder's conda-lock.yml exactly (`render_conda_build`):
- the build stage runs recipes/scripts/conda_install.py (copied into TOOL_CONTEXT_DIR by the
  CLI) under the OS's python3, in a throwaway venv holding py-rattler (the linker) and
  ruamel.yaml (the lock reader), both hash-pinned (CONDA_INSTALLER_PINS, written to
  TOOL_CONTEXT_DIR/CONDA_INSTALLER_REQUIREMENTS with the pip lock's index lines). It fetches
  every package the lock names from the lock's own URL, refuses any whose sha256/md5
  differs (naming it), and links them with rattler, which writes conda-meta/;
- rattler's installer is the one used whatever the base image holds: micromamba or
  conda-lock would need a base image that brings them, and one installer keeps every
  image's environment made the same, tested way;
- the pip lock then goes into the conda env's python (`python -m pip install
  --require-hashes`), so the lock must hold python and pip: `render` refuses otherwise;
- the runtime stage copies only the prefix (not rattler, its venv or the downloads) and
  sets CONDA_PREFIX, as `conda activate` would, so `fwdoctor check` inside judges that env.
"""

from __future__ import annotations

import posixpath

import hashlib
from typing import Any, Callable

import yaml

from fwdoctor import yamlload
from fwdoctor.quoting import dockerfile_json, dockerfile_string, dockerfile_text, dockerfile_value, lock_line, shell_word
from fwdoctor.recipes.lockfile import CONDA_LOCK_NAME, LOCK_NAME, Sources, lock_digest
from fwdoctor.recipes.stack import ResolvedStack

APP_UID = 10001
VENV = "/opt/venv"
TOOL_CONTEXT_DIR = ".fwdoctor"  # in the build context: fwdoctor's wheel + requirements.txt
TOOL_REQUIREMENTS = "requirements.txt"
TOOL_IMAGE_DIR = "/tmp/fwdoctor"  # where the build stage sees it (absolute: the
# requirements line names the wheel by this path, pip reads it from any working folder)
DEFAULT_COMMAND = ("fwdoctor", "check", "--deep")

# --- conda stacks (see the module docstring)
CONDA_PREFIX = "/opt/conda"
CONDA_PLATFORM = "linux-64"  # the KB's base images are linux/amd64
CONDA_INSTALLER_SCRIPT = "conda_install.py"  # recipes/scripts/<this>, copied into TOOL_CONTEXT_DIR
CONDA_INSTALLER_REQUIREMENTS = "conda-installer.txt"  # in TOOL_CONTEXT_DIR
CONDA_INSTALLER_VENV = "/tmp/conda-installer"  # build stage only
DEFAULT_INDEX = "https://pypi.org/simple"
# The installer's own requirements, hash-pinned: one wheel per machine for py-rattler
# (cp310-abi3: any CPython >= 3.10, the OS python3 of Debian 12 / Ubuntu 22.04 / 24.04) and
# ruamel.yaml's pure-Python wheel (no required dependencies; `pure=True` needs no C part).
# Hashes as pypi.org publishes them: https://pypi.org/simple/py-rattler/ and
# https://pypi.org/simple/ruamel-yaml/ (PEP 691 JSON, read 2026-12-01); the x86_64 wheel and
# the ruamel.yaml wheel were downloaded and their sha256 recomputed the same day.
CONDA_INSTALLER_PINS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("py-rattler", "0.28.0", (
        "4f4ab1d34d5394e7ce130a86e59009c95ace4f5757d9c3af04de1351bcea47eb",  # cp310-abi3-manylinux_2_17_x86_64
        "61b24202374188e72130f1b3dc63b455befaafc3e49e5481a38b6a6c8828c1e0",  # cp310-abi3-manylinux_2_28_aarch64
    )),
    ("ruamel.yaml", "0.19.1", (
        "27592957fedf6e0b62f281e96effd28043345e0e66001f97683aa9a40c667c93",  # py3-none-any
    )),
)


class DockerfileError(ValueError):
    """The stack and its locks cannot make a Dockerfile; the message says which file and why."""


def render(
    stack: ResolvedStack,
    lock_text: str,
    stack_file: str,
    lock_dir: str,
    base_image: str | None = None,
    conda_lock_text: str | None = None,
) -> str:
    """The Dockerfile. `lock_dir` is the lock folder relative to the build context;
    `conda_lock_text` its conda-lock.yml, required for a stack with conda packages.

    Every value from outside passes fwdoctor.quoting: a newline in --base-image, the stack
    file's path or the lock folder would start an instruction of its own, so QuotingError
    (naming the input) is raised instead. DockerfileError: a conda stack without a usable
    conda lock (see `conda_lock_packages`)."""
    base = dockerfile_value(base_image, "--base-image") if base_image else dockerfile_value(stack.base_image, "the stack's base image")
    # Only in comments, as a word of a command to paste: one line, shell-quoted.
    stack_file = shell_word(dockerfile_text(stack_file, "the stack file path"))
    conda: dict[str, str] | None = None
    if stack.conda:
        if conda_lock_text is None:
            raise DockerfileError(f"stack {stack.name} has conda packages: its {CONDA_LOCK_NAME} is needed (run `fwdoctor lock`)")
        conda = conda_lock_packages(conda_lock_text)
        for needed, why in (("python", "the environment's interpreter"), ("pip", "it installs the pip lock into the environment")):
            if needed not in conda:
                raise DockerfileError(f"{CONDA_LOCK_NAME} of stack {stack.name} holds no {needed} for {CONDA_PLATFORM} ({why}): add {needed} to the stack's conda packages and lock again")
    digest = lock_digest(lock_text)
    image = image_digest(lock_text, conda_lock_text if conda is not None else None)
    lock_path = dockerfile_value(posixpath.join(lock_dir, LOCK_NAME), "the lock folder (--lock-dir)")
    is_cuda = stack.cuda is not None
    out: list[str] = []
    add = out.append
    # No `# syntax=` line: it makes BuildKit pull docker/dockerfile from Docker Hub, which
    # offline and mirrored builders cannot; the built-in frontend has RUN --mount=type=secret.
    add(f"# Generated by `fwdoctor docker generate {stack_file}`: edit the stack, not this file.")
    add(f"# Stack {stack.name}: torch {stack.torch_local}, CPython {stack.python}, base {base}.")
    if conda is not None:
        add(f"# Conda environment at {CONDA_PREFIX} from {dockerfile_text(posixpath.join(lock_dir, CONDA_LOCK_NAME), 'the lock folder (--lock-dir)')}: "
            f"{len(conda)} packages, python {dockerfile_text(conda['python'], 'the locked python version')}; the pip lock goes on top.")
    add("#")
    add(f"# Build from the project folder (the build context; `{TOOL_CONTEXT_DIR}/` holds fwdoctor's wheel) with BuildKit:")
    add(f"#   fwdoctor docker build {stack_file}")
    add(f"#   DOCKER_BUILDKIT=1 docker build -f dockerfiles/{stack.name}/Dockerfile -t {stack.name}:{image[:12]} .")
    add("# Behind a TLS-intercepting proxy, pass its CA as a secret (never baked into the image):")
    add("#   ... --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt")
    if is_cuda:
        add("# Run: docker run --gpus all --ipc=host --ulimit memlock=-1 IMAGE")
        add("#   NCCL puts its buffers in /dev/shm: Docker's default 64 MiB fails multi-GPU jobs with")
        add("#   \"Error while creating shared memory segment\" or a Bus error; use --ipc=host or")
        add("#   --shm-size=16g (fwdoctor finding shm-too-small). Set NCCL_DEBUG=INFO to debug.")
    else:
        add("# Run: docker run --rm IMAGE   (DataLoader workers need --shm-size=2g or --ipc=host)")
    add("")
    add(f"ARG BASE_IMAGE={base}")
    add("")
    add("FROM ${BASE_IMAGE} AS build")
    add("ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_DEFAULT_TIMEOUT=120")
    if conda is not None:
        if not stack.python_from_base:
            _apt(add, "python3 python3-venv ca-certificates", "the conda installer (py-rattler) runs on the OS's python3")
        render_conda_build(add, dockerfile_value(posixpath.join(lock_dir, CONDA_LOCK_NAME), "the lock folder (--lock-dir)"), lock_path)
    else:
        _venv_build(add, stack, lock_path)
    add("")
    add("FROM ${BASE_IMAGE} AS runtime")
    add("ARG BASE_IMAGE")
    # Each value quoted (\\, " and $ escaped) but base.name, which is meant to expand.
    labels = [
        ("org.opencontainers.image.title", dockerfile_string(stack.name, "the stack name")),
        ("org.opencontainers.image.description", dockerfile_string(f"fwdoctor stack {stack.name}: torch {stack.torch_local}, CPython {stack.python}", "the stack")),
        ("org.opencontainers.image.version", dockerfile_string(image[:12])),
        ("org.opencontainers.image.base.name", '"${BASE_IMAGE}"'),
        ("io.fwdoctor.stack", dockerfile_string(stack.name, "the stack name")),
        ("io.fwdoctor.lock.sha256", dockerfile_string(digest)),
        ("io.fwdoctor.torch", dockerfile_string(stack.torch_local, "the torch version")),
    ]
    if conda is not None:
        labels.append(("io.fwdoctor.conda-lock.sha256", dockerfile_string(lock_digest(conda_lock_text or ""))))
    add("LABEL " + " \\\n      ".join(f"{key}={value}" for key, value in labels))
    # A conda environment brings its own python; a venv needs the OS's.
    packages = ([] if stack.python_from_base or conda is not None else ["python3"]) + list(stack.apt)
    if packages:
        why = "the venv's interpreter" if not stack.python_from_base and conda is None else ""
        if stack.apt:
            why = (why + " and " if why else "") + "the stack's apt packages"
        _apt(add, " ".join(packages), why)
    add(f"RUN useradd --create-home --uid {APP_UID} --user-group --shell /bin/sh app")
    if conda is not None:
        add(f"COPY --from=build {CONDA_PREFIX} {CONDA_PREFIX}")
    else:
        add(f"COPY --from=build {VENV} {VENV}")
    if stack.copy:
        add("# The project's files (the stack's `copy:`), owned by root: the app user reads, not rewrites, them.")
    for item in stack.copy:
        add(f"COPY {dockerfile_json([item.src, item.dest], 'a copy: item of the stack')}")
    if conda is not None:
        # What `conda activate` sets that matters here (its activate.d scripts do not run).
        add(f"ENV PATH={CONDA_PREFIX}/bin:$PATH CONDA_PREFIX={CONDA_PREFIX} PYTHONUNBUFFERED=1")
    else:
        add(f"ENV PATH={VENV}/bin:$PATH VIRTUAL_ENV={VENV} PYTHONUNBUFFERED=1")
    add(f"USER {APP_UID}:{APP_UID}")
    if stack.healthcheck:
        add("# Unhealthy when the GPU cannot run a kernel (broken driver mount, Xid, wrong arch).")
        add('HEALTHCHECK --interval=10m --timeout=2m --start-period=1m CMD ["fwdoctor", "smoke", "kernel"]')
    if stack.entrypoint is not None:
        add(f"ENTRYPOINT {dockerfile_json(stack.entrypoint, 'the stack entrypoint')}")
    if stack.command is None:
        add("# Default: judge the image from inside (torch imported in a child process).")
    add(f"CMD {dockerfile_json(stack.command or DEFAULT_COMMAND, 'the stack command')}")
    return "\n".join(out) + "\n"


def _venv_build(add: Callable[[str], None], stack: ResolvedStack, lock_path: str) -> None:
    if not stack.python_from_base:
        _apt(add, "python3 python3-venv ca-certificates", "the venv is built on the OS's python3")
    add(f"COPY {lock_path} /tmp/requirements.lock")
    add(f"COPY {TOOL_CONTEXT_DIR} {TOOL_IMAGE_DIR}")
    add("# One step (each layer is a full copy on some storage drivers): the venv from the lock")
    add("# (its --index-url lines say where each file comes from), then fwdoctor's hashed wheel")
    add("# (its dependencies are in the lock). The CA secret is mounted for this step only;")
    add("# PIP_CERT points pip at it.")
    add("RUN --mount=type=secret,id=ca \\")
    add("    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \\")
    add(f" && python3 -m venv {VENV} \\")
    add(f" && {VENV}/bin/pip install --require-hashes --no-deps --only-binary=:all: -r /tmp/requirements.lock \\")
    add(f" && {VENV}/bin/pip install --require-hashes --no-deps --only-binary=:all: -r {TOOL_IMAGE_DIR}/{TOOL_REQUIREMENTS} \\")
    add(f" && {VENV}/bin/pip check \\")
    add(f" && {VENV}/bin/fwdoctor --version")


def render_conda_build(add: Callable[[str], None], conda_lock_path: str, lock_path: str) -> None:
    """The build stage's steps for a conda stack (after FROM, ENV and the OS's python3)."""
    python = f"{CONDA_PREFIX}/bin/python"
    add(f"COPY {conda_lock_path} /tmp/conda-lock.yml")
    add(f"COPY {lock_path} /tmp/requirements.lock")
    add(f"COPY {TOOL_CONTEXT_DIR} {TOOL_IMAGE_DIR}")
    add("# One step (each layer is a full copy on some storage drivers):")
    add("# 1. the conda installer's hash-pinned requirements (py-rattler, ruamel.yaml) in a throwaway venv;")
    add(f"# 2. {CONDA_PREFIX} from the conda lock: every package fetched from the lock's URL and refused")
    add("#    unless its sha256 and md5 match the lock (the failing package is named), then linked")
    add("#    by rattler, which writes conda-meta/;")
    add("# 3. the pip lock into the environment's python, then fwdoctor's hashed wheel.")
    add("# The CA secret is mounted for this step only; PIP_CERT and SSL_CERT_FILE point at it.")
    add("RUN --mount=type=secret,id=ca \\")
    add("    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca SSL_CERT_FILE=/run/secrets/ca; fi \\")
    add(f" && python3 -m venv {CONDA_INSTALLER_VENV} \\")
    add(f" && {CONDA_INSTALLER_VENV}/bin/pip install --require-hashes --no-deps --only-binary=:all: -r {TOOL_IMAGE_DIR}/{CONDA_INSTALLER_REQUIREMENTS} \\")
    add(f" && {CONDA_INSTALLER_VENV}/bin/python {TOOL_IMAGE_DIR}/{CONDA_INSTALLER_SCRIPT} /tmp/conda-lock.yml {CONDA_PREFIX} \\")
    add(f" && rm -rf {CONDA_INSTALLER_VENV} \\")
    add(f" && {python} -m pip install --require-hashes --no-deps --only-binary=:all: -r /tmp/requirements.lock \\")
    add(f" && {python} -m pip install --require-hashes --no-deps --only-binary=:all: -r {TOOL_IMAGE_DIR}/{TOOL_REQUIREMENTS} \\")
    add(f" && {python} -m pip check \\")
    add(f" && {CONDA_PREFIX}/bin/fwdoctor --version")


def image_digest(lock_text: str, conda_lock_text: str | None = None) -> str:
    """What names the image (its tag and version label): the pip lock's sha256, or for a
    conda stack the sha256 of both locks' digests (a conda relock alone changes it too)."""
    if conda_lock_text is None:
        return lock_digest(lock_text)
    return image_digest_of(lock_digest(lock_text), lock_digest(conda_lock_text))


def image_digest_of(lock_sha256: str, conda_lock_sha256: str) -> str:
    return hashlib.sha256(f"{lock_sha256}\n{conda_lock_sha256}\n".encode()).hexdigest()


def conda_lock_packages(text: str, platform: str = CONDA_PLATFORM) -> dict[str, str]:
    """name -> version of the conda packages a conda-lock.yml installs on `platform` (its
    `main` category, as `conda-lock install` does). DockerfileError when it is not conda-lock's
    unified format (version 1), lacks the platform, or a package has no sha256 (the image
    would refuse it: say so before the build)."""
    try:
        data: Any = yamlload.load(text)
    except yaml.YAMLError as exc:
        raise DockerfileError(f"{CONDA_LOCK_NAME}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("package"), list):
        raise DockerfileError(f"{CONDA_LOCK_NAME}: not a conda-lock unified lockfile (version: 1 with a package list)")
    platforms = (data.get("metadata") or {}).get("platforms") or []
    if platform not in platforms:
        raise DockerfileError(f"{CONDA_LOCK_NAME}: no packages for {platform}, the images' platform (it has {', '.join(map(str, platforms)) or 'none'})")
    found: dict[str, str] = {}
    for entry in data["package"]:
        if not isinstance(entry, dict) or entry.get("platform") != platform or entry.get("manager") != "conda":
            continue
        if entry.get("category", "main") != "main" and "main" not in (entry.get("categories") or ()):
            continue
        name, version = str(entry.get("name")), str(entry.get("version"))
        if not (entry.get("hash") or {}).get("sha256"):
            raise DockerfileError(f"{CONDA_LOCK_NAME}: {name} {version} has no sha256: the image installs only files it can verify")
        found[name] = version
    return found


def conda_installer_requirements(lock_text: str) -> str:
    """TOOL_CONTEXT_DIR/CONDA_INSTALLER_REQUIREMENTS: the pip lock's index lines (where it
    says pip's files come from; pypi.org when it names none), then CONDA_INSTALLER_PINS."""
    sources = Sources.read(lock_text)
    lines = sources.lines() if sources is not None else [f"--index-url {DEFAULT_INDEX}"]
    lines += ["--only-binary=:all:", "--require-hashes"]
    for name, version, hashes in CONDA_INSTALLER_PINS:
        lines.append(f"{name}=={version} \\")
        lines += [f"    --hash=sha256:{h}" + (" \\" if i < len(hashes) - 1 else "") for i, h in enumerate(hashes)]
    return "\n".join(lock_line(line, "an index line of the pip lock") for line in lines) + "\n"


def tool_requirement_line(wheel_name: str, sha256: str) -> str:
    """The line of TOOL_CONTEXT_DIR/requirements.txt for a wheel in that folder."""
    return f"{TOOL_IMAGE_DIR}/{wheel_name} --hash=sha256:{sha256}\n"


def _apt(add, packages: str, why: str) -> None:
    # DL3008 (pin apt versions): the Ubuntu archive drops superseded versions, so pins break
    # rebuilds; the base tag fixes the OS release and the pip lock pins what matters.
    add(f"# {why}")
    add("# hadolint ignore=DL3008")
    add("RUN apt-get update \\")
    add(f" && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {packages} \\")
    add(" && rm -rf /var/lib/apt/lists/*")
