"""Recipe `env`: one consistent environment for the chosen toolkit and torch.

    plan(facts, kb, {"cuda_home": "/usr/local/cuda-12.8", "path": os.environ["PATH"]}) -> Plan

- CUDA_HOME/CUDA_PATH, PATH and LD_LIBRARY_PATH all name the same toolkit (other
  toolkits' bin and lib folders are dropped), with the active venv's bin first on PATH;
- LD_LIBRARY_PATH folders and LD_PRELOAD entries that put another libcudnn/libnccl ahead
  of torch's own are removed (cudnn-shadowed, nccl-shadowed);
- pip-installed nvidia-cudnn-cuNN / nvidia-nccl-cuNN wheels for another CUDA major than
  torch's, and not required by torch, are uninstalled (cudnn-cuda-mismatch).
The result goes to a file the user sources (and, on request, is sourced from the venv's
activate script). No shell rc file is ever edited.
"""

from __future__ import annotations

import os
import posixpath
import shlex
from typing import TYPE_CHECKING, Any, Mapping

from fwdoctor import versions
from fwdoctor.libraries import LIBRARIES
from fwdoctor.recipes.plan import FileWrite, Plan, Step
from fwdoctor.recipes.scripts import read as read_script

if TYPE_CHECKING:
    from fwdoctor.kb import KB

RECIPE = "env"
SYSTEM_PREFIXES = frozenset({"/", "/usr", "/usr/local", "/opt"})

_APPEND_LINE = read_script("append_line.py")

_NOT_INSTALLED = read_script("not_installed.py")


_HAS_VERSION = read_script("has_version.py")


def choose_toolkit(facts: Any, options: Mapping[str, Any]) -> str | None:
    """The toolkit root to use: --cuda-home, else one matching torch's CUDA (same
    major.minor, then same major), else the active one."""
    if options.get("cuda_home"):
        return str(options["cuda_home"]).rstrip("/") or "/"
    toolkits = facts.get("cuda.toolkits") or []
    match = versions.best_match(facts.get("torch.cuda"), toolkits, lambda tk: tk.get("version") or tk.get("nvcc_release"))
    if match is not None:
        return str(match["root"])
    active = facts.get("cuda.active") or {}
    return str(active["root"]) if active.get("root") else None


def env_values(facts: Any, options: Mapping[str, Any]) -> dict[str, str | None]:
    """The variables the env file sets (None: unset). Pure."""
    root = choose_toolkit(facts, options)
    # A distro toolkit rooted at /usr must not take /usr/bin off PATH with it.
    other_roots = [
        str(tk["root"])
        for tk in facts.get("cuda.toolkits") or []
        if tk.get("root") and str(tk["root"]) != root and _norm(str(tk["root"])) not in SYSTEM_PREFIXES
    ]
    shadow_dirs = _shadowing_dirs(facts)
    venv = facts.get("python.virtual_env")
    out: dict[str, str | None] = {}
    if root:
        out["CUDA_HOME"] = root
        out["CUDA_PATH"] = root
    path_in = options.get("path")
    if path_in is not None:
        prepend = [str(options["prepend_path"])] if options.get("prepend_path") else []
        front = _dedupe(prepend + ([posixpath.join(venv, "bin")] if venv else []) + ([posixpath.join(root, "bin")] if root else []))
        rest = [p for p in str(path_in).split(":") if p and p not in front and not _inside(p, other_roots)]
        out["PATH"] = ":".join(_dedupe(front + rest))
    drop_ld = {_norm(str(p)) for p in options.get("ld_library_path_remove") or []}
    drop_pre = {_norm(str(p)) for p in options.get("ld_preload_remove") or []}
    ld = [str(p) for p in facts.get("ld.library_path") or [] if _norm(str(p)) not in drop_ld]
    lib = posixpath.join(root, "lib64") if root else None
    kept = [p for p in ld if p != lib and not _inside(p, other_roots) and _norm(p) not in shadow_dirs]
    new_ld = _dedupe(([lib] if lib else []) + kept)
    out["LD_LIBRARY_PATH"] = ":".join(new_ld) if new_ld else None
    preload = [str(p) for p in facts.get("ld.preload") or []]
    if preload:
        preload = [p for p in preload if _norm(p) not in drop_pre]
        kept_pre = [p for p in preload if not (_torch_present(facts) and _is_cudnn_or_nccl(p))]
        out["LD_PRELOAD"] = ":".join(kept_pre) if kept_pre else None
    for key, value in sorted((options.get("set") or {}).items()):
        out[str(key)] = None if value is None else str(value)
    return out


def plan(facts: Any, kb: KB, options: Mapping[str, Any]) -> Plan:
    """Registry entry. Options: cuda_home, path (the PATH to rewrite; default: prepend),
    env_file (default ~/.config/fwdoctor/env.sh), activate (bool: source it from the venv's
    activate script), python (for uninstalls; default the inspected interpreter),
    uninstall_stray (default True)."""
    values = env_values(facts, options)
    env_file = str(options.get("env_file") or posixpath.join(os.path.expanduser("~"), ".config", "fwdoctor", "env.sh"))
    notes = [f"then run: . {env_file}"]
    if "CUDA_HOME" not in values:
        notes.insert(0, "no CUDA toolkit found or named (--cuda-home): CUDA variables left alone")
    steps: list[Step] = []
    python = str(options.get("python") or facts.get("python.executable") or "python3")
    if options.get("uninstall_stray", True):
        for name, why in stray_wheels(facts):
            steps.append(
                Step(
                    (python, "-m", "pip", "uninstall", "-y", "--", name),  # a name from the host is never an option
                    why=why,
                    skip_if=(python, "-c", _NOT_INSTALLED, name),
                    undo=f"{shlex.quote(python)} -m pip install {shlex.quote(name)}",
                )
            )
    pip_remove = [str(n) for n in (*(options.get("pip_uninstall") or ()), *(options.get("remove_user_packages") or ()))]
    for name in _dedupe(pip_remove):
        if any(step.argv[-1] == name for step in steps):
            continue
        steps.append(
            Step(
                (python, "-m", "pip", "uninstall", "-y", "--", name),  # a name from the host is never an option
                why=f"uninstall {name} (named by the finding)",
                skip_if=(python, "-c", _NOT_INSTALLED, name),
                undo=f"{shlex.quote(python)} -m pip install {shlex.quote(name)}",
            )
        )
    for req in options.get("pip_install") or ():
        name, _, version = str(req).partition("==")
        steps.append(
            Step(
                (python, "-m", "pip", "install", "--", str(req)),
                why=f"install {req}",
                skip_if=(python, "-c", _HAS_VERSION, name, version) if version else None,
                undo=f"{shlex.quote(python)} -m pip uninstall -y {shlex.quote(name)}",
            )
        )
    for package in options.get("apt_install") or ():
        steps.append(
            Step(
                ("apt-get", "install", "-y", "--no-install-recommends", str(package)),
                why=f"install {package}",
                needs_root=True,
                skip_if=("dpkg", "-s", str(package)),
                undo=f"apt-get remove {shlex.quote(str(package))}",
            )
        )
    venv = facts.get("python.virtual_env")
    if options.get("activate"):
        if not venv:
            return Plan(RECIPE, "consistent CUDA environment", refused="--activate: no virtual environment is active (VIRTUAL_ENV unset)")
        activate = posixpath.join(venv, "bin", "activate")
        line = f". {shlex.quote(env_file)}"
        steps.append(
            Step(
                (python, "-c", _APPEND_LINE, activate, line),
                why=f"source {env_file} from {activate}",
                skip_if=("grep", "-qxF", line, activate),
                undo=f"delete the fwdoctor lines at the end of {activate}",
            )
        )
    return Plan(
        recipe=RECIPE,
        title="consistent CUDA environment" + (f" for {values['CUDA_HOME']}" if values.get("CUDA_HOME") else ""),
        steps=tuple(steps),
        files=(FileWrite(env_file, render_env_file(values), why="the environment to source; no shell rc file is touched"),),
        notes=tuple(notes),
        clears=("cuda-path-inconsistent", "cudnn-shadowed", "nccl-shadowed", "cudnn-cuda-mismatch", "nccl-cuda-mismatch", "python-env-mismatch"),
    )


def render_env_file(values: Mapping[str, str | None]) -> str:
    q = shlex.quote
    lines = ["# written by fwdoctor (recipe env). Source it: . THIS_FILE"]
    for key, value in values.items():
        if key == "PATH" and value is None:
            continue
        if value is None:
            lines.append(f"unset {key}")
        else:
            lines.append(f"export {key}={q(value)}")
    if "PATH" not in values and values.get("CUDA_HOME"):
        lines.append(f"export PATH={q(posixpath.join(str(values['CUDA_HOME']), 'bin'))}\"${{PATH:+:$PATH}}\"")
    return "\n".join(lines) + "\n"


def stray_wheels(facts: Any) -> list[tuple[str, str]]:
    """(package, why) for pip nvidia-cudnn/nccl wheels built for another CUDA major than
    torch's and not among torch's own requirements."""
    torch_cuda = facts.get("torch.cuda")
    if not torch_cuda:
        return []
    major = versions.major(str(torch_cuda))
    if major is None:
        return []
    required = {str(k).lower() for k in (facts.get("torch.requires") or {})}
    out: list[tuple[str, str]] = []
    for lib in LIBRARIES:
        for inst in facts.get(lib.installs_key) or []:
            if inst.get("kind") != "pip" or not inst.get("package"):
                continue
            name = str(inst["package"]).split()[0]
            cm = inst.get("cuda_major")
            if cm is None or int(cm) == major or name.lower() in required:
                continue
            out.append((name, f"uninstall {name}: built for CUDA {cm}, torch uses CUDA {torch_cuda} and does not require it"))
    return sorted(set(out))


# ----------------------------------------------------------------------------- helpers
def _torch_present(facts: Any) -> bool:
    return bool(facts.get("torch.installed"))


def _shadowing_dirs(facts: Any) -> set[str]:
    """LD_LIBRARY_PATH folders whose libcudnn/libnccl would load before torch's own."""
    if not _torch_present(facts):
        return set()
    own = str(facts.get("torch.location") or "")
    site = posixpath.dirname(own) if own else ""
    out = set()
    for lib in LIBRARIES:
        first = facts.get(lib.ld_first_key)
        if not first or first.get("via") != "LD_LIBRARY_PATH" or not first.get("path"):
            continue
        directory = posixpath.dirname(str(first["path"]))
        if site and _inside(directory, [site]):
            continue  # torch's own wheel folder: not a shadow
        out.add(_norm(directory))
    return out


def _is_cudnn_or_nccl(path: str) -> bool:
    base = posixpath.basename(path)
    return any(lib.owns_file(base) for lib in LIBRARIES)


def _inside(path: str, roots: list[str]) -> bool:
    p = _norm(path)
    return any(p == _norm(r) or p.startswith(_norm(r).rstrip("/") + "/") for r in roots)


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _dedupe(items: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)
