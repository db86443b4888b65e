"""`fwdoctor stack resolve`, `fwdoctor lock`, `fwdoctor docker generate|build`.

Parse, call, render. Exit codes: 0 done; 1 the stack is impossible, a lock is stale, a
build or its validation failed, or a part could not be produced (conda without
conda-lock); 2 bad input (malformed stack file, missing lock, broken KB).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import click

from fwdoctor import extras
from fwdoctor.cli.common import EXIT_FINDINGS, fail, findings_exit, kb_option, load_kb
from fwdoctor.cli.output import emit_json, note
from fwdoctor.image.inspected import ImageError
from fwdoctor.quoting import QuotingError
from fwdoctor.recipes import docker_build as db
from fwdoctor.recipes import dockerfile, lockfile, wheelpack
from fwdoctor.recipes import stack as stack_mod
from fwdoctor.recipes.scripts import read as read_script


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
    Exit 1 with the reason when it cannot: no wheel for that Python, no kernels
    for a target GPU, a CUDA the fleet's oldest driver cannot run, no base image
    for that CUDA/OS. Exit 2 when the file itself is malformed.
    """
    resolved = _resolve(stack_file, kb_dir)
    if as_json:
        emit_json("stack", resolved.to_data())
    else:
        click.echo(resolved.to_yaml(), nl=False)
    if resolved.conda:  # a mixed stack: say which part brings what
        torch_from = "conda" if resolved.torch_from_conda else "pip"
        note(f"fwdoctor: conda part: {len(resolved.conda)} specs from {', '.join(resolved.conda_channels)} for {', '.join(resolved.conda_platforms)} "
             f"(Python {resolved.python}); pip part: {len(resolved.requirements)} requirements; torch {resolved.torch_local} from {torch_from}")
    for remark in resolved.notes:
        note(f"fwdoctor: note: {remark}")


def _conda_extra(resolved, what: str, solve: bool) -> None:
    """Before any work: a conda stack reads and writes conda-lock.yml with conda-lock, and
    solves with py-rattler where no conda/mamba/micromamba executable exists. Without them,
    one line naming what to install (pip and pipx), not an internal error mid-way."""
    if not resolved.conda:
        return
    from fwdoctor.recipes import conda_lock

    modules = ("conda_lock",) if not solve or conda_lock.find_solver_executable() is not None else ("conda_lock", "rattler")
    message = extras.needs(what, "conda", modules)
    if message:
        fail(message)


# ----------------------------------------------------------------------------- lock
@click.command("lock")
@click.argument("stack_file", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Lock folder (default: lockfiles/<stack name>).")
@click.option("--check", "check_only", is_flag=True, help="Only check that the existing lock still matches the stack (exit 1 if not).")
@click.option("--verify", "verify", is_flag=True, help="--check, then compare every sha256 with the hashes the lock's indexes publish (where reachable; exit 1 on a mismatch).")
@click.option("--index-url", help="Resolve torch from this index instead of the stack's (a mirror; a local index for tests).")
@click.option("--extra-index-url", "extra_index_urls", multiple=True, help="Replace the stack's extra indexes (repeatable).")
@click.option("--find-links", "find_links", multiple=True, help="Also take wheels from this folder or URL (repeatable).")
@click.option("--cert", type=click.Path(dir_okay=False), default=lambda: os.environ.get("PIP_CERT") or None, help="CA bundle for HTTPS indexes (default: $PIP_CERT).")
@click.option("--record-stack-indexes", is_flag=True, help="The given --index-url/--extra-index-url/--find-links mirror the stack's own indexes (same files; the hashes pin them): resolve through them, but name the stack's indexes in the lock.")
@kb_option
@click.option("--json", "as_json", is_flag=True, help="What was written (or, with --check, what is stale) as JSON.")
def lock_command(stack_file, out_dir, check_only, verify, index_url, extra_index_urls, find_links, cert, record_stack_indexes, kb_dir, as_json) -> None:
    """Write a hash-pinned pip lock for STACK_FILE (lockfiles/<stack>/requirements.lock).

    \b
    The lock is resolved for the stack's Python and Linux platform, not this
    machine's, and is byte-for-byte reproducible. It names the indexes it was
    resolved against, so it installs with no other flag:
      pip install --require-hashes -r requirements.lock
    pylock.toml (PEP 751) holds the same resolution. Needs pip >= 23.3 beside
    fwdoctor. Stacks with conda packages also get conda-lock.yml (conda-lock's
    format; solved by conda-lock with conda/mamba/micromamba where one exists,
    else by py-rattler), with environment.yml and virtual-packages.yml. --check
    re-solves the conda part and compares it record by record, and hashes the
    package files of a local channel.
    """
    resolved = _resolve(stack_file, kb_dir)
    _conda_extra(resolved, f"`fwdoctor lock{' --check' if check_only or verify else ''}` of a conda stack ({stack_file})", solve=True)
    target = Path(out_dir) if out_dir else Path("lockfiles") / resolved.name
    if check_only or verify:
        unverified: list[str] = []
        problems = lockfile.check(resolved, target, conda_solve=True, conda_verify_all=verify, unverified=unverified,
                                  progress=lambda line: note(f"fwdoctor: {line}"))
        if verify and not problems and lockfile.read_hashed_pins((target / lockfile.LOCK_NAME).read_text(encoding="utf-8")):
            mismatched, pip_unverified = lockfile.verify((target / lockfile.LOCK_NAME).read_text(encoding="utf-8"), base=target)
            problems += [f"{target / lockfile.LOCK_NAME}: {p}" for p in mismatched]
            unverified += pip_unverified
        else:
            pip_unverified = []
        for line in unverified:
            note(f"fwdoctor: not verified: {line}")
        if as_json:
            emit_json("lock-check", {"stack": stack_file, "lock": str(target / lockfile.LOCK_NAME), "fresh": not problems, "problems": problems,
                                     **({"conda_lock": str(target / lockfile.CONDA_LOCK_NAME)} if resolved.conda else {}),
                                     **({"not_verified": unverified} if verify or unverified else {})})
            sys.exit(EXIT_FINDINGS if problems else 0)
        if problems:
            for problem in problems:
                click.echo(f"stale: {problem}")
            click.echo(f"fix: fwdoctor lock {stack_file}")
            sys.exit(EXIT_FINDINGS)
        click.echo(f"{target / lockfile.LOCK_NAME}: matches {stack_file}"
                   + (f" (hashes not verified for {len(pip_unverified)} pin{'s' if len(pip_unverified) > 1 else ''}: index unreachable, see the notes)" if pip_unverified else ""))
        if resolved.conda:
            click.echo(f"{target / lockfile.CONDA_LOCK_NAME}: matches {stack_file}" + (" (not re-solved: see the notes)" if unverified else ""))
        return
    try:
        result = lockfile.lock(resolved, stack_file, target, index_url, list(extra_index_urls) or None, list(find_links), cert,
                               record_stack_indexes=record_stack_indexes, progress=lambda line: note(f"fwdoctor: {line}"))
    except lockfile.LockError as exc:
        findings_exit(f"lock failed: {exc}")
    except OSError as exc:
        fail(f"cannot write {target}: {exc.strerror or exc}")
    if as_json:
        emit_json("lock", {"stack": stack_file, "directory": str(result.directory), "written": list(result.written), "pip": result.pip,
                           "sources": result.sources.lines() if result.sources else [],
                           "pins": [{"name": p.name, "version": p.version} for p in result.pins],
                           "lock_sha256": result.lock_sha256, "conda_error": result.conda_error or None,
                           "conda_solver": result.conda_solver or None})
    else:
        for path in result.written:
            click.echo(f"wrote {path}")
        click.echo(f"{len(result.pins)} distributions pinned; lock sha256 {result.lock_sha256}")
        if result.conda_solver:
            click.echo(f"conda packages solved by {result.conda_solver}")
    if result.conda_error:
        findings_exit(f"conda part not locked: {result.conda_error}")


# ----------------------------------------------------------------------------- docker
@click.group("docker")
def docker_group() -> None:
    """Dockerfiles for locked stacks: generate, build, validate."""


def _dockerfile_text(resolved, stack_file: str, lock_dir: str | None, base_image: str | None, context: str) -> tuple[str, str, str | None, str]:
    """(Dockerfile, the pip lock's sha256, the conda lock's sha256 or None, the pip lock's text)."""
    lock_path = Path(lock_dir) if lock_dir else Path("lockfiles") / resolved.name
    try:
        lock_text = (lock_path / lockfile.LOCK_NAME).read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"{lock_path / lockfile.LOCK_NAME}: {exc.strerror or exc}; run `fwdoctor lock {stack_file}` first")
    conda_text = None
    if resolved.conda:
        try:
            conda_text = (lock_path / lockfile.CONDA_LOCK_NAME).read_text(encoding="utf-8")
        except OSError as exc:
            fail(f"{lock_path / lockfile.CONDA_LOCK_NAME}: {exc.strerror or exc}; stack {resolved.name} has conda packages: run `fwdoctor lock {stack_file}` first")
    problems = lockfile.check(resolved, lock_path)
    if problems:
        findings_exit(f"the lock is stale ({problems[0]}); run `fwdoctor lock {stack_file}`")
    rel = os.path.relpath(lock_path.resolve(), Path(context).resolve())
    if rel.startswith(".."):
        fail(f"--lock-dir {lock_path} is outside the build context {context}")
    try:
        placed = stack_mod.copy_in_context(resolved.copy, stack_file, context)  # src: relative to the stack file
    except stack_mod.StackError as exc:
        fail(str(exc))
    for item, written in zip(placed, resolved.copy):
        if not (Path(context) / item.src).exists():
            fail(f"{stack_file}: copy src {written.src!r} does not exist in the build context {context} ({Path(context) / item.src})")
    resolved = replace(resolved, copy=placed)
    try:
        text = dockerfile.render(resolved, lock_text, stack_file, rel.replace(os.sep, "/"), base_image, conda_lock_text=conda_text)
    except (QuotingError, dockerfile.DockerfileError) as exc:
        fail(f"cannot write a Dockerfile: {exc}")
    return text, lockfile.lock_digest(lock_text), (lockfile.lock_digest(conda_text) if conda_text is not None else None), lock_text


def _write_tool(context: str, requirement: str | None, conda_lock_for: str | None = None) -> str:
    """fwdoctor's folder in the build context: the running fwdoctor as a wheel with its hashed
    requirements line, or only `requirement` (a pinned, hashed published fwdoctor). For a
    conda stack (`conda_lock_for`: its pip lock's text) also the conda installer script and
    its hashed requirements."""
    folder = Path(context) / dockerfile.TOOL_CONTEXT_DIR
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if conda_lock_for is not None:
            (folder / dockerfile.CONDA_INSTALLER_SCRIPT).write_text(read_script(dockerfile.CONDA_INSTALLER_SCRIPT), encoding="utf-8")
            (folder / dockerfile.CONDA_INSTALLER_REQUIREMENTS).write_text(dockerfile.conda_installer_requirements(conda_lock_for), encoding="utf-8")
        if requirement:
            if "--hash=sha256:" not in requirement:
                fail(f"--fwdoctor-requirement {requirement!r}: needs a --hash=sha256:... (the image installs with --require-hashes)")
            for old in folder.glob("fwdoctor-*.whl"):
                old.unlink()
            line = requirement.strip() + "\n"
        else:
            wheel = wheelpack.write(folder)
            line = dockerfile.tool_requirement_line(wheel.path.name, wheel.sha256)
            note(f"fwdoctor: wrote {wheel.path} (sha256 {wheel.sha256[:12]})")
        (folder / dockerfile.TOOL_REQUIREMENTS).write_text(line, encoding="utf-8")
    except wheelpack.WheelError as exc:
        fail(f"cannot put fwdoctor into the image: {exc}")
    except QuotingError as exc:
        fail(f"cannot write {folder / dockerfile.CONDA_INSTALLER_REQUIREMENTS}: {exc}")
    except OSError as exc:
        fail(f"cannot write {folder}: {exc.strerror or exc}")
    return str(folder)


@docker_group.command("generate")
@click.argument("stack_file", type=click.Path(dir_okay=False))
@click.option("--base-image", help="FROM this image instead of the KB's (it must provide python3 as the stack's OS does).")
@click.option("--lock-dir", type=click.Path(file_okay=False), help="Lock folder (default: lockfiles/<stack name>).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Dockerfile path (default: dockerfiles/<stack name>/Dockerfile); '-' prints it.")
@click.option("--context", default=".", show_default=True, type=click.Path(file_okay=False), help="The build context (your project folder) the Dockerfile's COPY paths are relative to.")
@click.option("--fwdoctor-requirement", metavar="'fwdoctor==X --hash=sha256:H'", help="Install this pinned, hashed fwdoctor from the lock's index instead of a wheel of the running one.")
@kb_option
@click.option("--json", "as_json", is_flag=True, help="Where it was written, its sha256 and the lock it installs, as JSON.")
def docker_generate(stack_file, base_image, lock_dir, out_file, context, fwdoctor_requirement, kb_dir, as_json) -> None:
    """Write a two-stage Dockerfile installing STACK_FILE's lock with --require-hashes.

    \b
    Also writes CONTEXT/.fwdoctor/: a wheel of this fwdoctor and the hashed
    requirements line the image installs it from (fwdoctor check/smoke run inside
    the image).
    A stack with conda packages gets /opt/conda made from its conda-lock.yml
    exactly (every file's sha256/md5 checked; py-rattler links them), then the pip
    lock into that environment's python; .fwdoctor/ then also holds the installer
    script and its hash-pinned requirements (docs/conda.md).
    """
    resolved = _resolve(stack_file, kb_dir)
    _conda_extra(resolved, f"`fwdoctor docker generate` of a conda stack ({stack_file})", solve=False)
    text, lock_digest, conda_digest, lock_text = _dockerfile_text(resolved, stack_file, lock_dir, base_image, context)
    if as_json and out_file == "-":
        fail("--json and --out - both want stdout: write the Dockerfile to a file with --out PATH")
    tool_dir = _write_tool(context, fwdoctor_requirement, lock_text if conda_digest is not None else None)
    if out_file == "-":
        click.echo(text, nl=False)
        return
    target = Path(out_file) if out_file else Path("dockerfiles") / resolved.name / "Dockerfile"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {target}: {exc.strerror or exc}")
    if as_json:
        emit_json("dockerfile", {"stack": stack_file, "path": str(target), "sha256": hashlib.sha256(text.encode()).hexdigest(),
                                 "lock_sha256": lock_digest, "conda_lock_sha256": conda_digest, "fwdoctor_dir": tool_dir})
        return
    click.echo(f"wrote {target}")


@docker_group.command("build")
@click.argument("stack_file", type=click.Path(dir_okay=False))
@click.option("--base-image", help="FROM this image instead of the KB's.")
@click.option("--lock-dir", type=click.Path(file_okay=False), help="Lock folder (default: lockfiles/<stack name>).")
@click.option("--context", default=".", show_default=True, type=click.Path(file_okay=False), help="Build context (your project folder).")
@click.option("--fwdoctor-requirement", metavar="'fwdoctor==X --hash=sha256:H'", help="Install this pinned, hashed fwdoctor instead of a wheel of the running one.")
@click.option("--ca", type=click.Path(dir_okay=False), help="Proxy CA bundle, passed as the build secret `ca` (not stored in the image).")
@click.option("--build-arg", "build_args", multiple=True, metavar="KEY=VALUE", help="Passed to docker build (repeatable); the lock names its own indexes: to build through a mirror, lock against it.")
@click.option("--network", help="Build network mode, e.g. host (to reach a local index).")
@click.option("--no-validate", is_flag=True, help="Skip the checks after the build.")
@kb_option
def docker_build(stack_file, base_image, lock_dir, context, fwdoctor_requirement, ca, build_args, network, no_validate, kb_dir) -> None:
    """Build STACK_FILE's image, tag it <stack>:<lock hash>, then validate it.

    \b
    (For a stack with conda packages the tag's hash covers both locks.)

    \b
    Validation: labels and non-root user, `fwdoctor check --image`, and `fwdoctor
    smoke kernel` in a container (--gpus all when this host has GPUs). Any failure
    exits 1.
    """
    resolved = _resolve(stack_file, kb_dir)
    text, digest, conda_digest, lock_text = _dockerfile_text(resolved, stack_file, lock_dir, base_image, context)
    args: dict[str, str] = {}
    for item in build_args:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"--build-arg {item!r}: expected KEY=VALUE")
        args[key] = value
    # A conda stack's tag names both locks (dockerfile.image_digest).
    image = digest if conda_digest is None else dockerfile.image_digest_of(digest, conda_digest)
    tags = [f"{resolved.name}:{image[:12]}", f"{resolved.name}:latest"]
    _write_tool(context, fwdoctor_requirement, lock_text if conda_digest is not None else None)
    with tempfile.TemporaryDirectory(prefix="fwdoctor-build-") as tmp:
        dockerfile_path = os.path.join(tmp, "Dockerfile")
        Path(dockerfile_path).write_text(text, encoding="utf-8")
        try:
            db.build(dockerfile_path, context, tags, click.echo, ca, args, network)
        except db.BuildError as exc:
            findings_exit(str(exc))
    click.echo(f"built {tags[0]}")
    if no_validate:
        return
    try:
        result = db.validate(tags[0], resolved.name, digest, click.echo, conda_lock_sha256=conda_digest)
    except ImageError as exc:
        findings_exit(f"validation of {tags[0]} could not run: {exc}")
    for item in result.passed:
        click.echo(f"ok: {item}")
    for item in result.problems:
        click.echo(f"FAILED: {item}")
    if not result.ok:
        findings_exit(f"{tags[0]} failed validation")
    click.echo(f"{tags[0]} validated")

