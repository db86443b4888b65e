"""`fwdoctor stack resolve`, `fwdoctor lock`, `fwdoctor docker generate|build`.

Parse, call, render. Exit codes: 0 done; 1 the stack is impossible, a lock is stale, a
build or its validation failed, or a part could not be produced (conda without
conda-lock); 2 bad input (malformed stack file, missing lock, broken KB).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import click

from fwdoctor.cli.common import EXIT_FINDINGS, fail, findings_exit, kb_option, load_kb
from fwdoctor.image import ImageError
from fwdoctor.recipes import docker_build as db
from fwdoctor.recipes import dockerfile, lockfile
from fwdoctor.recipes import stack as stack_mod


def _resolve(stack_file: str, kb_dir: str | None = None) -> stack_mod.ResolvedStack:
    kb = load_kb(kb_dir)
    try:
        spec = stack_mod.load(stack_file)
    except stack_mod.StackError as exc:
        fail(str(exc))
    try:
        return stack_mod.resolve(spec, kb)
    except stack_mod.StackImpossible as exc:
        findings_exit(f"impossible stack: {exc}")




# ----------------------------------------------------------------------------- stack
@click.group("stack")
def stack_group() -> None:
    """Stack files (stacks/*.yaml): what an image holds, checked against the KB."""


@stack_group.command("resolve")
@click.argument("stack_file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="JSON instead of YAML.")
@kb_option
def stack_resolve(stack_file: str, as_json: bool, kb_dir: str | None) -> None:
    """Fill STACK_FILE's missing fields from the KB and say whether it can be built.

    \b
    Exit 1 with the reason when it cannot: no wheel for that Python, no kernels for a
    target GPU, a CUDA the fleet's oldest driver cannot run, no base image for that
    CUDA/OS. Exit 2 when the file itself is malformed.
    """
    resolved = _resolve(stack_file, kb_dir)
    if as_json:
        click.echo(json.dumps(resolved.to_data(), indent=2))
    else:
        click.echo(resolved.to_yaml(), nl=False)
    for note in resolved.notes:
        click.echo(f"fwdoctor: note: {note}", err=True)


# ----------------------------------------------------------------------------- lock
@click.command("lock")
@click.argument("stack_file", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Lock folder (default: lockfiles/<stack name>).")
@click.option("--check", "check_only", is_flag=True, help="Only check that the existing lock still matches the stack (exit 1 if not).")
@click.option("--index-url", help="Resolve torch from this index instead of the stack's (a mirror; a local index for tests).")
@click.option("--extra-index-url", "extra_index_urls", multiple=True, help="Replace the stack's extra indexes (repeatable).")
@click.option("--find-links", "find_links", multiple=True, help="Also take wheels from this folder or URL (repeatable).")
@click.option("--cert", type=click.Path(dir_okay=False), default=lambda: os.environ.get("PIP_CERT") or None, help="CA bundle for HTTPS indexes (default: $PIP_CERT).")
@kb_option
def lock_command(stack_file, out_dir, check_only, index_url, extra_index_urls, find_links, cert, kb_dir) -> None:
    """Write a hash-pinned pip lock for STACK_FILE (lockfiles/<stack>/requirements.lock).

    \b
    The lock is resolved for the stack's Python and Linux platform, not this machine's,
    and is byte-for-byte reproducible. Install it with:
      pip install --require-hashes --no-deps --only-binary=:all: -r requirements.lock
    Stacks with conda packages also get environment.yml, locked by conda-lock when present.
    """
    resolved = _resolve(stack_file, kb_dir)
    target = Path(out_dir) if out_dir else Path("lockfiles") / resolved.name
    if check_only:
        problems = lockfile.check(resolved, target)
        if problems:
            for problem in problems:
                click.echo(f"stale: {problem}")
            click.echo(f"fix: fwdoctor lock {stack_file}")
            sys.exit(EXIT_FINDINGS)
        click.echo(f"{target / lockfile.LOCK_NAME}: matches {stack_file}")
        return
    try:
        result = lockfile.lock(resolved, stack_file, target, index_url, list(extra_index_urls) or None, list(find_links), cert)
    except lockfile.LockError as exc:
        findings_exit(f"lock failed: {exc}")
    except OSError as exc:
        fail(f"cannot write {target}: {exc.strerror or exc}")
    for path in result.written:
        click.echo(f"wrote {path}")
    click.echo(f"{len(result.pins)} distributions pinned; lock sha256 {result.lock_sha256}")
    if result.conda_error:
        findings_exit(f"conda part not locked: {result.conda_error}")


# ----------------------------------------------------------------------------- docker
@click.group("docker")
def docker_group() -> None:
    """Dockerfiles for locked stacks: generate, build, validate."""


def _dockerfile_text(resolved, stack_file: str, lock_dir: str | None, base_image: str | None, context: str) -> tuple[str, str]:
    lock_path = Path(lock_dir) if lock_dir else Path("lockfiles") / resolved.name
    try:
        lock_text = (lock_path / lockfile.LOCK_NAME).read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"{lock_path / lockfile.LOCK_NAME}: {exc.strerror or exc}; run `fwdoctor lock {stack_file}` first")
    problems = lockfile.check(resolved, lock_path)
    if problems:
        findings_exit(f"the lock is stale ({problems[0]}); run `fwdoctor lock {stack_file}`")
    rel = os.path.relpath(lock_path.resolve(), Path(context).resolve())
    if rel.startswith(".."):
        fail(f"--lock-dir {lock_path} is outside the build context {context}")
    text = dockerfile.render(resolved, lock_text, stack_file, rel.replace(os.sep, "/"), base_image)
    return text, lockfile.lock_digest(lock_text)


@docker_group.command("generate")
@click.argument("stack_file", type=click.Path(dir_okay=False))
@click.option("--base-image", help="FROM this image instead of the KB's (it must provide python3 as the stack's OS does).")
@click.option("--lock-dir", type=click.Path(file_okay=False), help="Lock folder (default: lockfiles/<stack name>).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Dockerfile path (default: dockerfiles/<stack name>/Dockerfile); '-' prints it.")
@click.option("--context", default=".", show_default=True, type=click.Path(file_okay=False), help="The build context the Dockerfile's COPY paths are relative to.")
@kb_option
def docker_generate(stack_file, base_image, lock_dir, out_file, context, kb_dir) -> None:
    """Write a two-stage Dockerfile installing STACK_FILE's lock with --require-hashes."""
    resolved = _resolve(stack_file, kb_dir)
    text, _ = _dockerfile_text(resolved, stack_file, lock_dir, base_image, context)
    if out_file == "-":
        click.echo(text, nl=False)
        return
    target = Path(out_file) if out_file else Path("dockerfiles") / resolved.name / "Dockerfile"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {target}: {exc.strerror or exc}")
    click.echo(f"wrote {target}")


@docker_group.command("build")
@click.argument("stack_file", type=click.Path(dir_okay=False))
@click.option("--base-image", help="FROM this image instead of the KB's.")
@click.option("--lock-dir", type=click.Path(file_okay=False), help="Lock folder (default: lockfiles/<stack name>).")
@click.option("--context", default=".", show_default=True, type=click.Path(file_okay=False), help="Build context (the repository root).")
@click.option("--ca", type=click.Path(dir_okay=False), help="Proxy CA bundle, passed as the build secret `ca` (not stored in the image).")
@click.option("--build-arg", "build_args", multiple=True, metavar="KEY=VALUE", help="e.g. PIP_INDEX_URL=http://mirror/simple (repeatable).")
@click.option("--network", help="Build network mode, e.g. host (to reach a local index).")
@click.option("--no-validate", is_flag=True, help="Skip the checks after the build.")
@kb_option
def docker_build(stack_file, base_image, lock_dir, context, ca, build_args, network, no_validate, kb_dir) -> None:
    """Build STACK_FILE's image, tag it <stack>:<lock hash>, then validate it.

    \b
    Validation: labels and non-root user, `fwdoctor check --image`, and `fwdoctor smoke
    kernel` in a container (--gpus all when this host has GPUs). Any failure exits 1.
    """
    resolved = _resolve(stack_file, kb_dir)
    text, digest = _dockerfile_text(resolved, stack_file, lock_dir, base_image, context)
    args: dict[str, str] = {}
    for item in build_args:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"--build-arg {item!r}: expected KEY=VALUE")
        args[key] = value
    tags = [f"{resolved.name}:{digest[:12]}", f"{resolved.name}:latest"]
    with tempfile.TemporaryDirectory(prefix="fwdoctor-build-") as tmp:
        dockerfile = os.path.join(tmp, "Dockerfile")
        Path(dockerfile).write_text(text, encoding="utf-8")
        try:
            db.build(dockerfile, context, tags, click.echo, ca, args, network)
        except db.BuildError as exc:
            findings_exit(str(exc))
    click.echo(f"built {tags[0]}")
    if no_validate:
        return
    try:
        result = db.validate(tags[0], resolved.name, digest, click.echo)
    except ImageError as exc:
        findings_exit(f"validation of {tags[0]} could not run: {exc}")
    for item in result.passed:
        click.echo(f"ok: {item}")
    for item in result.problems:
        click.echo(f"FAILED: {item}")
    if not result.ok:
        findings_exit(f"{tags[0]} failed validation")
    click.echo(f"{tags[0]} validated")

