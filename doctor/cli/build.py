"""`fwdoctor build ...`: build frameworks from source against chosen libraries.

    fwdoctor build torch --version 2.9.1 --cuda 12.8 --nccl 2.27.5 --cudnn 9.10.2.21 \\
        --arch "8.0;9.0+PTX" --python ~/venvs/t/bin/python            # prints the plan
    ... --apply                                                         # runs it
    ... --cmake-only --source ~/src/pytorch --apply                     # configure only

Exit codes: 0 planned/built, 1 the pre-flight refused (findings printed) or the build
failed, 2 unusable options.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from fwdoctor.cli.common import DoctorError
from fwdoctor.cli.errors import say
from fwdoctor.cli.output import emit_json
from fwdoctor.kb import KB, KBError
from fwdoctor.model import Severity
from fwdoctor.recipes import stack as stack_mod
from fwdoctor.recipes import torch_source as ts
from fwdoctor.render.textfit import fit_script

MARK = {Severity.ERROR: "error", Severity.WARNING: "warn ", Severity.INFO: "info "}


@click.group("build")
def build_group() -> None:
    """Build a framework from source with a chosen CUDA, cuDNN, NCCL and Python."""


@build_group.command("torch")
@click.option("--version", "version", metavar="X.Y.Z", help="The PyTorch release to build (tag vX.Y.Z). Default with --source: its version.txt.")
@click.option("--cuda", required=True, metavar="VERSION|PATH", help="An installed CUDA toolkit: its version (12.8) or its root (/usr/local/cuda-12.8).")
@click.option("--nccl", default="bundled", show_default=True, metavar="VERSION|PATH|bundled",
              help="NCCL: a version (fetched as nvidia-nccl-cuXX into the build prefix), an install's path, or bundled (third_party/nccl).")
@click.option("--cudnn", default="bundled", show_default=True, metavar="VERSION|PATH|bundled|none",
              help="cuDNN: a version (nvidia-cudnn-cuXX), an install's path, bundled (whatever CMake finds) or none.")
@click.option("--arch", required=True, metavar='auto|"8.0;9.0+PTX"', help="TORCH_CUDA_ARCH_LIST; auto: this host's GPUs.")
@click.option("--python", "python", required=True, metavar="PATH", help="The interpreter that builds and receives the wheel (a venv's bin/python).")
@click.option("--source", type=click.Path(file_okay=False), help="An existing PyTorch checkout (submodules included) instead of cloning.")
@click.option("--git", metavar="URL", help="Clone from this URL instead of https://github.com/pytorch/pytorch.git.")
@click.option("--workdir", type=click.Path(file_okay=False), help="Where the checkout, build prefix, wheel and log go (default ./fwdoctor-build/torch-VER-cuXY).")
@click.option("--jobs", default="auto", show_default=True, help="MAX_JOBS; auto: cores, capped by available RAM.")
@click.option("--ccache", is_flag=True, help="Use ccache as the C, C++ and CUDA compiler launcher.")
@click.option("--debug", is_flag=True, help="DEBUG=1: -O0 -g.")
@click.option("--cmake-only", is_flag=True, help="Configure the source tree with CMake and stop (no compiling).")
@click.option("--docker", "docker_image", metavar="STACK|IMAGE", help="Plan the same build inside a CUDA devel image: a stack file (stacks/*.yaml: its CUDA and OS pick the nvidia/cuda devel tag) or an image name (printed only; needs Docker).")
@click.option("--dry-run/--apply", "dry_run", default=True, help="Print the plan (default) or run it.")
@click.option("--json", "as_json", is_flag=True, help="Print the pre-flight findings and the plan as JSON.")
def torch_command(version, cuda, nccl, cudnn, arch, python, source, git, workdir, jobs, ccache, debug, cmake_only, docker_image, dry_run, as_json) -> None:
    """Build a PyTorch wheel from source with exactly the chosen CUDA, NCCL, cuDNN and Python.

    \b
    Before anything runs, a pre-flight checks the host compiler against nvcc's
    host_config.h, every target arch against nvcc, the CUDA major of NCCL/cuDNN,
    the Python environment, cmake/ninja, free disk and RAM; errors stop it (exit
    1).
    \b
    Examples:
      fwdoctor build torch --version 2.9.1 --cuda 12.8 --nccl 2.27.5 \\
          --cudnn 9.10.2.21 --arch "8.0;9.0+PTX" --python ~/venvs/t/bin/python
      fwdoctor build torch --source ~/pytorch --cuda 13.0 --arch auto \\
          --python .venv/bin/python --cmake-only --apply
    """
    # Only the build area must load; a broken area elsewhere (cuda.yaml) costs only the
    # KB arch check, which then falls back to nvcc --list-gpu-arch or "not checked".
    kb = KB()
    try:
        kb.build
    except KBError as exc:
        raise DoctorError(f"knowledge base: {exc}") from None
    opts = ts.Options(version=version, cuda=cuda, nccl=nccl, cudnn=cudnn, arch=arch, python=python, source=source, git=git,
                      workdir=workdir, jobs=jobs, ccache=ccache, debug=debug, cmake_only=cmake_only)
    try:
        if docker_image:
            docker_image = _devel_image(docker_image, kb)
            report, bp = ts.docker_plan(opts, docker_image, kb)
        else:
            report, bp = ts.make_plan(ts.gather(opts), kb)
    except ts.InputError as exc:
        raise DoctorError(str(exc)) from None

    _show_preflight(report, bp, as_json)
    if as_json:
        return
    if dry_run or docker_image:
        click.echo(fit_script(bp.to_plan().to_shell()), nl=False)  # 80 columns, the same script
        if docker_image and not dry_run:
            say("fwdoctor: --docker plans are printed, not run: run the script above on a host with Docker and the NVIDIA container toolkit")
        return
    result = ts.execute(bp, progress=lambda line: say(f"fwdoctor: {line}"))
    click.echo(result.message)
    sys.exit(0 if result.ok else 1)


def _devel_image(spec: str, kb) -> str:
    """--docker takes an image, or a stack file whose CUDA and OS name the devel image: the
    same nvidia/cuda release the stack's runtime image is built from, in its devel flavor."""
    if not spec.endswith((".yaml", ".yml")):
        return spec

    try:
        resolved = stack_mod.load_and_resolve(spec, kb)
    except (OSError, KBError, stack_mod.StackError, stack_mod.StackImpossible) as exc:
        raise DoctorError(f"--docker {spec}: {exc}") from None
    if resolved.cuda is None:
        raise DoctorError(f"--docker {spec}: a CPU stack has no CUDA devel image to build torch with CUDA in")
    try:
        return kb.docker.cuda_reference(resolved.cuda, resolved.os, "devel")
    except LookupError as exc:
        raise DoctorError(f"--docker {spec}: {exc}") from None


@build_group.command("ext")
@click.argument("spec", metavar="SPEC")
@click.option("--python", "python", metavar="PATH", help="The interpreter whose torch the extension is built against and installed into (default: $VIRTUAL_ENV, $CONDA_PREFIX, python3 on PATH).")
@click.option("--arch", metavar='"9.0"|"8.0;9.0"', help="The arches to compile kernels for (default: this host's GPUs).")
@click.option("--gpu", "gpus", multiple=True, metavar="CC|NAME", help="Build for this GPU instead of the host's: a compute capability (9.0) or a name (repeatable).")
@click.option("--jobs", default="auto", show_default=True, help="MAX_JOBS; auto: cores, capped by available memory per compile job.")
@click.option("--workdir", type=click.Path(file_okay=False), help="Where the source, wheel and log go (default ./fwdoctor-build/ext-NAME-VERSION).")
@click.option("--dry-run/--apply", "dry_run", default=True, help="Print the plan (default) or run it.")
@click.option("--json", "as_json", is_flag=True, help="Print the pre-flight findings and the plan as JSON.")
def ext_command(spec, python, arch, gpus, jobs, workdir, dry_run, as_json) -> None:
    """Build a CUDA extension (flash-attn, causal-conv1d, mamba-ssm, a source folder) against the installed torch.

    \b
    SPEC is a requirement (causal-conv1d==1.7.0), an sdist file or a source
    folder. Before anything runs, a pre-flight checks the nvcc against torch's
    CUDA, the host compiler against nvcc, each arch against nvcc and the project,
    Python.h, ninja, disk and memory per job, and names the prebuilt wheel that
    would fit. --apply builds with pip wheel --no-build-isolation and proves the
    wheel: import, kernels, symbols.
    \b
    Examples:
      fwdoctor build ext causal-conv1d==1.7.0 --arch 9.0
      fwdoctor build ext flash-attn==2.8.3 --gpu H100 \\
          --python ~/venvs/t/bin/python --apply
    """
    from fwdoctor.recipes import build_ext as bx

    kb = KB()
    try:
        kb.extensions
    except KBError as exc:
        raise DoctorError(f"knowledge base: {exc}") from None
    opts = bx.Options(spec=spec, python=python, arch=arch, gpus=tuple(gpus), jobs=jobs, workdir=workdir)
    try:
        report, ep = bx.run_plan(opts, kb)
    except bx.InputError as exc:
        raise DoctorError(str(exc)) from None
    _show_preflight(report, ep, as_json)
    if as_json:
        return
    if dry_run:
        click.echo(fit_script(ep.to_plan().to_shell()), nl=False)  # 80 columns, the same script
        return
    result = bx.execute(ep, progress=lambda line: say(f"fwdoctor: {line}"))
    click.echo(result.message)
    sys.exit(0 if result.ok else 1)


def _show_preflight(report: Any, plan: Any, as_json: bool) -> None:
    """The pre-flight's findings (stderr) or the JSON document (findings and plan); exit 1
    when the findings left no plan to run. `build torch` and `build ext` alike."""
    if as_json:
        emit_json("build", {"findings": [f.to_json() for f in report.findings], "plan": plan.to_plan().to_json() if plan else None})
    else:
        for finding in report.findings:
            say(f"{MARK[finding.severity]} {finding.id}: {finding.message}")
            if finding.fix and finding.fix.note:
                say(f"      fix: {finding.fix.note}")
            for command in finding.fix.commands if finding.fix else ():
                click.echo(f"        $ {command}", err=True)
    if plan is None:
        errors = sum(1 for f in report.findings if f.severity is Severity.ERROR)
        say(f"fwdoctor: build refused: {errors} pre-flight error(s); nothing was run")
        sys.exit(1)
