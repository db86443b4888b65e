"""`fwdoctor docker build`: build a stack's image, tag it, and prove it works.

Building needs BuildKit (the Dockerfile mounts the proxy CA as a build secret), which the
Docker SDK does not speak (docker/docker-py#2174, #2230: secrets travel over BuildKit's
own gRPC session, not the /build endpoint). So the build itself runs the docker CLI with
BuildKit, streaming its progress line by line; everything after the build (labels, user,
export for `check --image`, the smoke container) goes through the SDK.

Validation, all required for success:
  1. labels: io.fwdoctor.stack and io.fwdoctor.lock.sha256 match the stack and its lock (and
     io.fwdoctor.conda-lock.sha256 its conda-lock.yml, for a stack with conda packages);
  2. the image's user is not root;
  3. `fwdoctor check --image TAG` (the image's filesystem judged through --root) has no
     error finding;
  4. `fwdoctor smoke kernel` passes (or skips for want of a GPU) inside a container, run
     with every GPU (`--gpus all`) when this host has one, in place of the image's own
     ENTRYPOINT/CMD (a project's app or init must not wrap it).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from packaging.version import InvalidVersion, Version

from fwdoctor import runner
from fwdoctor.host import Host
from fwdoctor.image.local_engine import api_message, docker_client
from fwdoctor.smoke.kernel import driver_gpu_evidence

BUILD_TIMEOUT_S = 3600.0
CHECK_TIMEOUT_S = 900.0
SMOKE_TIMEOUT_S = 600.0
SMOKE_COMMAND = ("fwdoctor", "smoke", "kernel")

Echo = Callable[[str], None]


class BuildError(RuntimeError):
    """The build or its validation failed; the message says which step and why."""


@dataclass(frozen=True)
class Builder:
    """How to run a BuildKit build here: argv prefix and the environment it needs."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    how: str = ""


@dataclass
class Validation:
    tag: str
    problems: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


# --------------------------------------------------------------------------- building
def find_builder(candidates: Sequence[str] | None = None) -> Builder:
    """A docker CLI that can run BuildKit builds: `docker buildx`, or a CLI older than 23.0
    whose `DOCKER_BUILDKIT=1 docker build` has BuildKit built in. Raises BuildError."""
    import shutil

    paths = list(candidates) if candidates is not None else [p for p in (shutil.which("docker"), "/usr/bin/docker") if p]
    tried: list[str] = []
    for cli in dict.fromkeys(paths):
        if not os.access(cli, os.X_OK):
            continue
        if runner.run([cli, "buildx", "version"], timeout=30).ok:
            return Builder((cli, "buildx", "build", "--load"), {}, f"{cli} buildx")
        result = runner.run([cli, "version", "--format", "{{.Client.Version}}"], timeout=30)
        version = (result.stdout or "").strip().splitlines()[0] if result.stdout.strip() else ""
        try:
            if version and Version(version.split("+")[0].split("-")[0]) < Version("23"):
                return Builder((cli, "build"), {"DOCKER_BUILDKIT": "1"}, f"{cli} {version} (DOCKER_BUILDKIT=1)")
        except InvalidVersion:
            pass
        tried.append(f"{cli} {version or '?'} (no buildx plugin)")
    detail = "; ".join(tried) or "no docker CLI found"
    raise BuildError(f"no BuildKit-capable docker CLI ({detail}): install the buildx plugin (docker-buildx)")


def build_argv(
    builder: Builder,
    dockerfile: str,
    context: str,
    tags: Sequence[str],
    ca: str | None = None,
    build_args: Mapping[str, str] | None = None,
    network: str | None = None,
) -> list[str]:
    argv = [*builder.argv, "--progress=plain", "-f", dockerfile]
    for tag in tags:
        argv += ["-t", tag]
    for key, value in sorted((build_args or {}).items()):
        argv += ["--build-arg", f"{key}={value}"]
    if ca:
        argv += ["--secret", f"id=ca,src={ca}"]
    if network:
        argv += ["--network", network]
    # The context is the one positional value: "./" keeps a folder named "-x" a path.
    argv.append(f"./{context}" if context.startswith("-") else context)
    return argv


def stream(argv: Sequence[str], echo: Echo, timeout: float, env: Mapping[str, str] | None = None) -> int:
    """Run `argv`, passing each output line to `echo` as it comes. Returns the exit status;
    raises BuildError on timeout (the whole process tree is killed) or when it cannot start."""
    result = runner.stream(argv, timeout=timeout, env=runner.command_env(None, env), on_stderr_line=echo, merge_stderr=True)
    if result.error:
        raise BuildError(f"cannot run {argv[0]}: {result.error}")
    if result.timed_out:
        raise BuildError(f"build still running after {timeout:.0f}s: killed")
    assert result.returncode is not None
    return result.returncode


def build(
    dockerfile: str,
    context: str,
    tags: Sequence[str],
    echo: Echo,
    ca: str | None = None,
    build_args: Mapping[str, str] | None = None,
    network: str | None = None,
    builder: Builder | None = None,
    timeout: float = BUILD_TIMEOUT_S,
) -> None:
    if ca and not os.path.isfile(ca):
        raise BuildError(f"--ca {ca}: no such file")
    builder = builder or find_builder()
    echo(f"building with {builder.how}")
    argv = build_argv(builder, dockerfile, context, tags, ca, build_args, network)
    status = stream(argv, echo, timeout, builder.env)
    if status != 0:
        raise BuildError(f"docker build failed (exit status {status}); the build log is above")


# --------------------------------------------------------------------------- validating
def host_has_gpu() -> bool:
    """The driver has a GPU here (a bare PCI device is not enough for `--gpus all`)."""
    return driver_gpu_evidence(Host.live_host()) is not None


def validate(
    tag: str,
    stack_name: str,
    lock_sha256: str,
    echo: Echo,
    client: Any = None,
    gpus: bool | None = None,
    conda_lock_sha256: str | None = None,
) -> Validation:
    """Check the built image (see the module docstring). Never raises for a failed check."""
    result = Validation(tag)
    client = client or docker_client()
    image = client.images.get(tag)
    config = image.attrs.get("Config") or {}
    labels = config.get("Labels") or {}
    expected = [("io.fwdoctor.stack", stack_name), ("io.fwdoctor.lock.sha256", lock_sha256)]
    if conda_lock_sha256 is not None:
        expected.append(("io.fwdoctor.conda-lock.sha256", conda_lock_sha256))
    for key, want in expected:
        if labels.get(key) != want:
            result.problems.append(f"label {key} is {labels.get(key)!r}, expected {want!r}")
    if not result.problems:
        result.passed.append("labels name the stack and its lock")
    user = str(config.get("User") or "")
    if user.split(":")[0] in ("", "root", "0"):
        result.problems.append(f"the image runs as root (User={user!r})")
    else:
        result.passed.append(f"runs as user {user}")

    echo(f"fwdoctor check --image {tag}")
    check = runner.run([sys.executable, "-m", "fwdoctor", "check", "--image", tag], timeout=CHECK_TIMEOUT_S)
    for line in (check.stdout + check.stderr).splitlines():
        echo(f"  {line}")
    if check.returncode == 0:
        result.passed.append("fwdoctor check --image: no error finding")
    else:
        result.problems.append(f"fwdoctor check --image {tag}: {check.describe_failure()}")

    use_gpus = host_has_gpu() if gpus is None else gpus
    echo(f"{' '.join(SMOKE_COMMAND)} in a container{' with --gpus all' if use_gpus else ' (no GPU on this host)'}")
    status, output = run_in_container(client, tag, list(SMOKE_COMMAND), use_gpus)
    for line in output.splitlines():
        echo(f"  {line}")
    if status == 0:
        result.passed.append(f"{' '.join(SMOKE_COMMAND)} passed in a container")
    else:
        result.problems.append(f"{' '.join(SMOKE_COMMAND)} in a container exited {status}")
    return result


def run_in_container(client: Any, tag: str, command: list[str], gpus: bool, timeout: float = SMOKE_TIMEOUT_S) -> tuple[int, str]:
    """Run `command` in a fresh container of `tag`; (exit status, output). -1 on errors."""
    import docker.errors
    from docker.types import DeviceRequest

    # The command replaces the image's ENTRYPOINT too: a stack's own entrypoint (an app, or
    # an init like tini) must not wrap or swallow it.
    kwargs: dict[str, Any] = {"network_disabled": True, "shm_size": "1g", "entrypoint": command[:1]}
    if gpus:
        kwargs["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    try:
        container = client.containers.create(tag, command[1:], **kwargs)
    except docker.errors.APIError as exc:
        return -1, f"cannot create a container: {api_message(exc)}"
    try:
        try:
            container.start()
        except docker.errors.APIError as exc:
            return -1, f"cannot start the container: {api_message(exc)}"
        try:
            status = int(container.wait(timeout=timeout).get("StatusCode", -1))
        except Exception:
            container.kill()
            return -1, f"no result within {timeout:.0f}s: killed"
        output = container.logs(stdout=True, stderr=True).decode("utf-8", errors="replace")
        return status, output
    finally:
        try:
            container.remove(force=True)
        except Exception:
            pass
