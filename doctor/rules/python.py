"""Python environment rules: python-env-mismatch, user-site-shadowing.

Pure functions of the python.* facts. Fixes point at the `env` recipe (environment
changes) and give the commands a person would type.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, Rule, rule, sh


if TYPE_CHECKING:
    from fwdoctor.kb import KB


def _norm(path: str | None) -> str | None:
    return posixpath.normpath(path) if path else None


def active_environment(facts: Facts) -> tuple[str, str] | None:
    """(variable, prefix) of the active environment. A venv created on top of an active
    conda env wins: its bin/ is the one put first on PATH."""
    for var, key in (("VIRTUAL_ENV", "python.virtual_env"), ("CONDA_PREFIX", "python.conda_prefix")):
        value = facts.get(key)
        if value:
            return var, _norm(value)  # type: ignore[return-value]
    return None


@rule("python-env-mismatch", needs=("python.path_commands", "python.virtual_env", "python.conda_prefix"))
def python_env_mismatch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        When a virtual environment ($VIRTUAL_ENV) or conda environment ($CONDA_PREFIX) is
        active, checks that the first `python`, `python3` and `pip` on PATH belong to it:
        the interpreter's prefix (the folder holding its pyvenv.cfg or conda-meta), or for
        pip the interpreter named on its `#!` line.

    Why is this bad?
        `pip install torch` lands in another interpreter than the one that runs your code,
        so the install "succeeds" and `import torch` still fails ("ModuleNotFoundError: No
        module named 'torch'"), or the old torch keeps loading. CMake's FindPython and
        `torch.utils.cpp_extension` builds pick up the wrong headers and site-packages too.
        Typical causes: a shell rc file that prepends ~/.local/bin or pyenv shims after
        activation, `sudo` resetting PATH, a stale `hash -r`.

    Example
        VIRTUAL_ENV=/opt/venvs/train but `python3` is /usr/bin/python3 (prefix /usr) and pip
        is ~/.local/bin/pip (#!/usr/bin/python3): invalid. VIRTUAL_ENV=/opt/venvs/train with
        /opt/venvs/train/bin first on PATH: valid.

    Fix
        Re-activate the environment (or put its bin/ first on PATH), and call pip through
        the interpreter so the two cannot disagree:

            source /opt/venvs/train/bin/activate && hash -r
            python -m pip install ...
    """
    active = active_environment(facts)
    if active is None:
        return None
    var, prefix = active
    commands = facts["python.path_commands"] or {}
    wrong: list[str] = []
    evidence: dict[str, Any] = {f"${var}": prefix}
    for name in ("python", "python3", "pip"):
        entry = commands.get(name)
        if not isinstance(entry, dict):
            continue
        where = _norm(entry.get("prefix"))
        path = entry.get("path") or "?"
        inside = _norm(posixpath.dirname(path)) == posixpath.join(prefix, "bin")
        if where == prefix or (where is None and inside):
            continue
        evidence[name] = entry
        if name == "pip":
            via = entry.get("interpreter") or "an unknown interpreter"
            wrong.append(f"pip is {path} (runs {via})")
        else:
            wrong.append(f"{name} is {path} (from {where or 'an unknown prefix'})")
    if not wrong:
        return None
    activate = (
        f"source {sh(posixpath.join(prefix, 'bin', 'activate'))} && hash -r"
        if var == "VIRTUAL_ENV"
        else f"conda activate {sh(prefix)} && hash -r"
    )
    return Hit(
        f"${var} is {prefix} but the first {'; '.join(wrong)}: installs and builds go to another interpreter",
        evidence=evidence,
        fix=FixRef(
            recipe="env",
            options={"prepend_path": posixpath.join(prefix, "bin"), "environment": prefix},
            commands=(activate, f"export PATH={sh(posixpath.join(prefix, 'bin'))}:\"$PATH\"", "python -m pip install ...   # pip through the interpreter"),
            note=f"put {posixpath.join(prefix, 'bin')} first on PATH and call pip as `python -m pip`",
        ),
    )


@rule("user-site-shadowing", needs=("python.user_site_shadows",), optional=("python.user_site", "python.executable"))
def user_site_shadowing(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Lists packages that matter for GPU work (torch, torchvision, torchaudio, triton,
        nvidia-*, cuda-*) installed both in the user site (~/.local/lib/pythonX.Y/
        site-packages, used by conda envs and system pythons, not by venvs) and in the
        interpreter's own site-packages.

    Why is this bad?
        The user site comes first on sys.path, so `import torch` loads the ~/.local copy,
        whatever `pip list` in the environment says. A `pip install --user torch` from
        months ago silently replaces the CUDA build you just installed; mixed nvidia-*
        wheels from two torch versions give errors such as "undefined symbol:
        ncclCommWindowRegister" or "libcudnn_graph.so.9: cannot open shared object file".

    Example
        ~/.local/lib/python3.11/site-packages/torch-2.1.0.dist-info beside
        /opt/conda/envs/train/lib/python3.11/site-packages/torch-2.14.1.dist-info: invalid.
        Only the environment's copy: valid.

    Fix
        Remove the user-site copies (pip uninstalls the first copy it finds, the user one),
        or stop this environment from reading the user site:

            python -m pip uninstall -y torch   # repeat until `python -m pip show torch` shows the env copy
            export PYTHONNOUSERSITE=1
    """
    shadows = [s for s in facts["python.user_site_shadows"] or [] if isinstance(s, dict)]
    if not shadows:
        return None
    python = facts.get("python.executable") or "python3"
    parts = []
    for s in shadows:
        user_v = f" {s['user_version']}" if s.get("user_version") else ""
        env_v = f" {s['env_version']}" if s.get("env_version") else ""
        parts.append(f"{s.get('package')}{user_v} (user site) shadows {s.get('package')}{env_v} ({posixpath.dirname(str(s.get('env', '')))})")
    return Hit(
        f"{'; '.join(parts)}: `import` loads the user-site copy",
        evidence={"python.user_site": facts.get("python.user_site"), "shadows": shadows},
        fix=FixRef(
            recipe="env",
            options={"set": {"PYTHONNOUSERSITE": "1"}, "remove_user_packages": sorted({str(s.get("package")) for s in shadows}), "python": python},
            commands=(f"{sh(python)} -m pip uninstall -y {' '.join(sh(n) for n in sorted({str(s.get('package')) for s in shadows}))}   # removes the user-site copies first", "export PYTHONNOUSERSITE=1"),
            note="remove the user-site copies, or set PYTHONNOUSERSITE=1 for this environment",
        ),
    )


RULES: tuple[Rule, ...] = (python_env_mismatch, user_site_shadowing)
