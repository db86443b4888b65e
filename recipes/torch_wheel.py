"""Recipe `torch-wheel`: install the official torch wheel that fits this machine.

    plan(facts, kb, {"python": "/venv/bin/python", "torch": ">=2.4", ...}) -> Plan

Selection is doctor/selection.py (fwdoctor.selection); this module turns the chosen wheel into pinned install
commands for the target interpreter (pip or uv), a skip check that makes a second apply a
no-op, and a verification that imports torch in that interpreter and checks the version,
torch.version.cuda and, where a GPU exists, torch.cuda.is_available().
"""

from __future__ import annotations

import os
import posixpath
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from fwdoctor import selection as sel
from fwdoctor.recipes.plan import Plan, Step
from fwdoctor.recipes.scripts import read as read_script

if TYPE_CHECKING:
    from fwdoctor.kb import KB
    from fwdoctor.kb.torch import TorchVariant

RECIPE = "torch-wheel"
INSTALL_TIMEOUT_S = 3600.0
VERIFY_TIMEOUT_S = 300.0

# argv[1:]: expected public version, expected CUDA ("none" for a CPU build), "gpu"/"nogpu".
# Exits 0 when the installed torch matches; prints what it found either way.
_CHECK = read_script("torch_check.py")

# The same check without the GPU part, for skip_if: "is exactly this wheel installed?"
_INSTALLED = _CHECK.split('if want_gpu == "gpu":')[0]


# Where a new environment goes when the target Python is externally managed: the project
# folder's .venv, the name uv, Poetry and VS Code look for first.
DEFAULT_VENV = ".venv"
VENV_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Target:
    """Where torch goes: `python` (after any venv step), the steps that create it, what the
    plan says about it, and extra installer flags (--break-system-packages)."""

    python: str
    steps: tuple[Step, ...] = ()
    notes: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    new_env: bool = False


def install_target(facts: Any, python: str, installer: str, options: Mapping[str, Any]) -> Target:
    """PEP 668: an externally managed interpreter (Debian 12, Ubuntu 23.04+ system Python)
    is never installed into. The plan creates (or reuses) a venv and installs there, unless
    the user asked for --break-system-packages."""
    marker = None
    if facts is not None and facts.get("python.executable") == python:
        marker = facts.get("python.externally_managed")
    if not marker:
        return Target(python)
    if options.get("break_system_packages"):
        note = f"{python} is externally managed ({marker}, PEP 668); installing into it anyway: --break-system-packages was given"
        return Target(python, notes=(note,), flags=("--break-system-packages",))
    venv = os.path.abspath(str(options.get("venv") or DEFAULT_VENV))
    venv_python = posixpath.join(venv, "bin", "python")
    if installer == "uv":
        create: tuple[str, ...] = ("uv", "venv", "--python", python, "--", venv)
    else:
        create = (python, "-m", "venv", "--", venv)
    step = Step(
        create,
        why=(f"{python} is externally managed ({marker}, PEP 668: pip refuses to install into it): "
             f"create a virtual environment at {venv} instead (on Debian/Ubuntu `python3 -m venv` needs the python3-venv package)"),
        timeout_s=VENV_TIMEOUT_S,
        skip_if=(venv_python, "-c", "import sys"),  # reuse an existing venv
        undo=f"rm -rf {shlex.quote(venv)}",
    )
    notes = (
        f"torch goes into the virtual environment {venv}, not into the externally managed {python}; "
        f"use it with `. {venv}/bin/activate` (or pass --venv DIR, or --break-system-packages to install into {python} anyway)",
    )
    return Target(venv_python, steps=(step,), notes=notes, new_env=True)


def install_argv(python: str, installer: str, packages: Sequence[str], index_url: str | None, no_deps: bool = False,
                 flags: Sequence[str] = ()) -> list[str]:
    if installer == "uv":
        argv = ["uv", "pip", "install", "--python", python]
    elif installer == "pip":
        argv = [python, "-m", "pip", "install"]
    else:
        raise ValueError(f"--installer {installer!r}: expected pip or uv")
    if index_url:
        argv += ["--index-url", index_url]
    if no_deps:
        argv.append("--no-deps")
    return argv + list(flags) + list(packages)


def plan_install(
    variant: TorchVariant,
    python: str,
    installer: str = "pip",
    index_url: str | None = None,
    with_packages: Sequence[str] = (),
    expect_gpu: bool = False,
    no_deps: bool = False,
    notes: Sequence[str] = (),
    where: Target | None = None,
) -> Plan:
    """The pinned install of one TorchVariant into `python` (an interpreter path).

    `index_url` replaces the variant's own index (a mirror, or a local index in tests).
    The PyPI default variant installs from PyPI unless an index is given; every other
    variant pins its local version (torch==2.14.1+cu126) on the PyTorch index.
    `where` (from `install_target()`) replaces `python` with a new venv's and adds its steps.
    """
    where = where or Target(python)
    python = where.python
    use_pypi = variant.pypi_default and index_url is None
    pin = variant.torch if use_pypi else variant.local_version
    packages = [f"torch=={pin}"]
    for name in with_packages:
        version = {"torchvision": variant.torchvision, "torchaudio": variant.torchaudio}.get(name)
        if version is None:
            raise ValueError(f"--with {name}: the KB has no {name} release matching torch {variant.torch}")
        packages.append(f"{name}=={version}")
    index = None if use_pypi else (index_url or variant.index_url)
    cuda = variant.cuda or "none"
    check = [python, "-c", _INSTALLED, variant.torch, cuda, "nogpu"]
    step = Step(
        tuple(install_argv(python, installer, packages, index, no_deps, where.flags)),
        why=f"install torch {variant.local_version} (CUDA {variant.cuda or 'none: CPU build'}) into {python}",
        timeout_s=INSTALL_TIMEOUT_S,
        skip_if=tuple(check),
        undo=" ".join(_undo(python, installer, packages)),
    )
    verify = Step(
        (python, "-c", _CHECK, variant.torch, cuda, "gpu" if expect_gpu and variant.cuda else "nogpu"),
        why="import torch in the target interpreter: version, CUDA" + (", is_available()" if expect_gpu and variant.cuda else ""),
        timeout_s=VERIFY_TIMEOUT_S,
    )
    return Plan(
        recipe=RECIPE,
        title=f"install torch {variant.local_version} into {python}",
        steps=(*where.steps, step),
        verify=(verify,),
        notes=(*where.notes, *notes),
        target_python=python if where.new_env else "",
        clears=("driver-too-old-for-torch", "gpu-arch-unsupported-by-torch", "torch-cpu-build-on-gpu-host", "torch-not-installed"),
    )


def _undo(python: str, installer: str, packages: Sequence[str]) -> list[str]:
    names = [p.split("==")[0] for p in packages]
    if installer == "uv":
        argv = ["uv", "pip", "uninstall", "--python", python, *names]
    else:
        argv = [python, "-m", "pip", "uninstall", "-y", *names]
    return [shlex.quote(a) for a in argv]


def plan(facts: Any, kb: KB, options: Mapping[str, Any]) -> Plan:
    """Registry entry. Options (all optional): python (interpreter path; default the
    inspected one), python_version ("3.11", for another machine), torch (SpecifierSet),
    cuda ("12.6"/"cpu"), driver, gpus (list of CC or names), installer (pip|uv),
    index_url, with (["torchvision", ...]), no_deps (bool), venv (where a new venv goes when
    the interpreter is externally managed; default ./.venv), break_system_packages (bool)."""
    python = options.get("python") or (facts.get("python.executable") if facts is not None else None) or "python3"
    installer = str(options.get("installer") or "pip")
    with_packages = tuple(options.get("with") or ())
    where = install_target(facts, python, installer, options)
    exact = _exact_row(kb, options)
    if exact is not None:
        # A finding's fix names one wheel (doctor/rules/torch.py judged it): install that.
        gpus = [g for g in (facts.get("gpus.list") if facts is not None else None) or []]
        return plan_install(
            exact,
            python,
            installer=installer,
            index_url=options.get("index_url"),
            with_packages=with_packages,
            expect_gpu=bool(gpus) and bool(facts.get("driver.version")),
            no_deps=bool(options.get("no_deps")),
            where=where,
        )
    try:
        target = sel.target_from_facts(
            facts,
            kb,
            driver=options.get("driver"),
            gpus=tuple(options.get("gpus") or ()),
            python=options.get("python_version"),
            torch_spec=_as_spec(str(options.get("torch") or "")),
            cuda=options.get("cuda"),
        )
    except sel.SelectError as exc:
        return Plan(RECIPE, "install torch", refused=str(exc))
    choice = sel.select_torch(kb, target)
    if choice.choice is None:
        lines = [choice.reason]
        lines += [f"closest: {r.line()}" for r in choice.closest]
        if target.driver and any("driver" in reason for r in choice.closest for reason in r.reasons):
            lines.append("fwdoctor never changes the NVIDIA driver: upgrade it yourself, or relax --torch/--cuda")
        return Plan(RECIPE, "install torch", refused="\n".join(lines))
    notes = [*choice.notes]
    notes += [f"rejected {r.line()}" for r in choice.rejected[:8]]
    return plan_install(
        choice.choice,
        python,
        installer=installer,
        index_url=options.get("index_url"),
        with_packages=with_packages,
        expect_gpu=bool(target.gpus) and target.driver is not None,
        no_deps=bool(options.get("no_deps")),
        notes=notes,
        where=where,
    )


def _as_spec(text: str) -> str:
    """A bare version ("2.14.1", as fixes give it) means exactly that release."""
    from packaging.version import InvalidVersion, Version

    try:
        Version(text)
    except InvalidVersion:
        return text
    return f"=={text}"


def _exact_row(kb: KB, options: Mapping[str, Any]) -> TorchVariant | None:
    torch, variant = options.get("torch"), options.get("variant")
    if not torch or not variant:
        return None
    return kb.torch.variant_for(f"{torch}+{variant}")
