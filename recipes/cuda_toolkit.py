"""Recipe `cuda-toolkit`: install a CUDA toolkit (nvcc, headers, libraries) beside others.

    plan(facts, kb, {"version": "12.8", "method": "runfile"}) -> Plan

Methods:
- runfile: NVIDIA's .run installer, sha256-verified, run with `--silent --toolkit
  --toolkitpath=PREFIX --no-opengl-libs --no-man-page --override` (toolkit only: never the
  driver) into /usr/local/cuda-X.Y by default. /usr/local/cuda is left pointing where it
  pointed unless `link` is asked for.
- apt: NVIDIA's repository package cuda-toolkit-X-Y (repository setup in the plan).
- pip: NVIDIA's toolkit wheels (nvidia-cuda-nvcc, -runtime, -crt, -cccl, nvidia-nvvm)
  with `pip install --target PREFIX`: no root needed. From CUDA 13 these wheels share one
  folder, PREFIX/nvidia/cu13/{bin,include,lib,nvvm}, which nvcc uses as its toolkit root
  (checked on the 13.0.88 wheels); nvcc.profile links from lib64, so the plan adds
  lib64 -> lib. CUDA 12 wheels put each component in its own folder; not supported.

A toolkit whose programs the installed driver cannot run (below the major's minor-version
floor, kb.cuda.driver_floor) is refused unless `force`; the plan never touches the driver.
Every plan writes an env snippet to source, and verifies with `nvcc --version` plus a
compile for this host's GPU architectures.
"""

from __future__ import annotations

import os
import posixpath
import sys
from typing import TYPE_CHECKING, Any, Mapping

from packaging.version import InvalidVersion, Version

from fwdoctor.kb import cache
from fwdoctor.recipes.apply import file_step
from fwdoctor.recipes.plan import Plan, Step
from fwdoctor.recipes.scripts import read as read_script

if TYPE_CHECKING:
    from fwdoctor.kb import KB

RECIPE = "cuda-toolkit"
METHODS = ("runfile", "apt", "pip")
USR_LOCAL_CUDA = "/usr/local/cuda"

# The cuda-keyring package that configures NVIDIA's apt repository.
KEYRING_URL = "https://developer.download.nvidia.com/compute/cuda/repos/{repo}/{arch}/cuda-keyring_1.1-1_all.deb"

# argv[1:]: nvcc, "run" or "compile", then nvcc's arch flags. Compiles and links a kernel
# in a scratch folder (deleted afterwards); with "run" (a GPU host whose driver runs this
# CUDA) also runs it and fails unless the kernel launched.
_COMPILE = read_script("nvcc_verify.py")

# argv[1:]: nvcc path, expected "X.Y". Exit 0 when `nvcc --version` reports that release.
_CHECK_NVCC = read_script("nvcc_release.py")


class ToolkitOptionError(ValueError):
    pass


def plan(facts: Any, kb: KB, options: Mapping[str, Any]) -> Plan:
    """Registry entry. Options: version ("12.8", required), method (runfile|apt|pip, default
    runfile), prefix, link (bool: point /usr/local/cuda at it), force (bool), runfile_url +
    sha256 (a release not in the table, or a mirror), keyring_sha256 (apt), index_url (pip),
    python (pip: the interpreter that runs pip), download_dir, env_file, work_dir,
    fwdoctor_python (the interpreter that runs `python -m fwdoctor.recipes.download`)."""
    try:
        return _plan(facts, kb, options)
    except ToolkitOptionError as exc:
        return Plan(RECIPE, f"install CUDA toolkit {options.get('version') or '?'}", refused=str(exc))


def default_method(kb: KB, version: str) -> str:
    """The method when none is asked for: NVIDIA's runfile when the KB has its checksum;
    else, for CUDA 13+, the pip wheels (checksummed by pip, no root needed); else apt."""
    try:
        if kb.cuda.runfile(version) is not None:
            return "runfile"
        return "pip" if Version(version).major >= 13 else "apt"
    except (InvalidVersion, ValueError):
        return "runfile"  # _plan reports the bad version


def _plan(facts: Any, kb: KB, options: Mapping[str, Any]) -> Plan:
    version = str(options.get("version") or "")
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise ToolkitOptionError(f"CUDA version {version!r}: expected X.Y, e.g. 12.8") from None
    xy = f"{parsed.major}.{parsed.minor}"
    method = str(options.get("method") or ("runfile" if options.get("runfile_url") else default_method(kb, version)))
    if method not in METHODS:
        raise ToolkitOptionError(f"--method {method!r}: expected one of {', '.join(METHODS)}")
    force = bool(options.get("force"))
    title = f"install CUDA toolkit {xy} ({method})"
    gpus = _gpus(facts)
    notes: list[str] = []
    refusal = _driver_refusal(facts, kb, xy)
    cannot = _cannot_compile(kb, xy, gpus)
    if cannot:
        notes.append(f"CUDA {xy} cannot compile for: {', '.join(cannot)}")
    if refusal and not force:
        lines = [refusal, *notes]
        return Plan(RECIPE, title, refused="\n".join(lines))
    if refusal:
        notes.insert(0, f"--force: {refusal}")
    home = os.path.expanduser("~")
    # Downloads go below it: the user's cache folder ($XDG_CACHE_HOME, else ~/.cache).
    work_dir = str(options.get("work_dir") or posixpath.join(cache.cache_home() or posixpath.join(home, ".cache"), "fwdoctor"))
    env_file = str(options.get("env_file") or posixpath.join(home, ".config", "fwdoctor", f"cuda-{xy}.env.sh"))
    fw_python = str(options.get("fwdoctor_python") or sys.executable)
    if method == "pip":
        steps, root, more = _pip_steps(parsed, xy, options, home)
    elif method == "apt":
        steps, root, more = _apt_steps(facts, xy, options, fw_python, work_dir)
    else:
        steps, root, more = _runfile_steps(kb, xy, version, options, fw_python, work_dir)
    notes += more
    steps += _link_steps(facts, root, bool(options.get("link")), method)
    nvcc = posixpath.join(root, "bin", "nvcc")
    verify = (
        Step((fw_python, "-c", _CHECK_NVCC, nvcc, xy), why=f"nvcc --version reports release {xy}", timeout_s=120),
        Step(
            (fw_python, "-c", _COMPILE, nvcc, "run" if gpus and not refusal else "compile", *_gencode(kb, xy, gpus)),
            why="compile, link and run a kernel on this host's GPUs" if gpus and not refusal else "compile and link a kernel" + ("" if gpus else " (no GPU here: nvcc's default arch)"),
            timeout_s=600,
        ),
    )
    # A step, after the install: nothing is written before the download is verified.
    steps.append(file_step(fw_python, env_file, env_snippet(root, xy), why=f"environment for CUDA {xy}: source it (. {env_file}); no rc file is touched"))
    notes.append(f"to use it: . {env_file}")
    return Plan(RECIPE, title, steps=tuple(steps), verify=verify, notes=tuple(notes), clears=("toolkit-missing",))


# ----------------------------------------------------------------------------- checks
def _gpus(facts: Any) -> list[tuple[str, str]]:
    out = []
    for gpu in (facts.get("gpus.list") if facts is not None else None) or []:
        if gpu.get("cc"):
            out.append((str(gpu.get("name") or "GPU"), str(gpu["cc"])))
    return out


def _driver_refusal(facts: Any, kb: KB, xy: str) -> str:
    driver = facts.get("driver.version") if facts is not None else None
    if not driver:
        return ""
    floor = kb.cuda.driver_floor(xy)
    if floor is None:
        return ""
    if Version(driver) >= Version(floor):
        return ""
    newest = kb.cuda.newest_cuda_for_driver(driver)
    choice = f"install CUDA {newest} or older instead" if newest else "no CUDA release in the KB runs on it"
    return (
        f"driver {driver} cannot run CUDA {xy} programs (needs >= {floor}). "
        f"fwdoctor never installs or replaces the NVIDIA driver: upgrade it to >= {floor} yourself, {choice}, "
        f"or pass --force to install a compiler whose programs will not run here"
    )


def _cannot_compile(kb: KB, xy: str, gpus: list[tuple[str, str]]) -> list[str]:
    out = []
    for name, cc in gpus:
        if kb.cuda.nvcc_supports(xy, cc) is False:
            first_last = kb.cuda.arch_first_last(cc)
            span = f" (CUDA {first_last[0]}..{first_last[1] or 'now'})" if first_last else ""
            out.append(f"{name} sm_{cc.replace('.', '')}{span}")
    return out


def _gencode(kb: KB, xy: str, gpus: list[tuple[str, str]]) -> list[str]:
    flags: list[str] = []
    for _, cc in sorted(set(gpus), key=lambda g: g[1]):
        if kb.cuda.nvcc_supports(xy, cc) is False:
            continue
        sm = cc.replace(".", "")
        flag = f"arch=compute_{sm},code=sm_{sm}"
        if flag not in flags:
            flags += ["-gencode", flag]
    return flags


def env_snippet(root: str, xy: str) -> str:
    """A POSIX sh file to source: this toolkit first on PATH and LD_LIBRARY_PATH."""
    import shlex

    q = shlex.quote
    lib = posixpath.join(root, "lib64")
    return (
        f"# CUDA {xy} environment, written by fwdoctor. Source it: . FILE\n"
        f"export CUDA_HOME={q(root)}\n"
        f"export CUDA_PATH={q(root)}\n"
        f"export PATH={q(posixpath.join(root, 'bin'))}\"${{PATH:+:$PATH}}\"\n"
        f"export LD_LIBRARY_PATH={q(lib)}\"${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"\n"
    )


def _writable(path: str) -> bool:
    probe = path
    while probe and not os.path.exists(probe):
        parent = posixpath.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return os.access(probe or "/", os.W_OK)


def _q(text: str) -> str:
    import shlex

    return shlex.quote(text)


# ----------------------------------------------------------------------------- methods
def _runfile_steps(kb: KB, xy: str, version: str, options: Mapping[str, Any], fw_python: str, work_dir: str) -> tuple[list[Step], str, list[str]]:
    url = options.get("runfile_url")
    sha = options.get("sha256")
    if url and not sha:
        raise ToolkitOptionError("--runfile-url needs --sha256: fwdoctor runs no installer it cannot verify")
    if not url:
        # URL and sha256 per release live in the KB (kb/cuda.yaml `runfiles:`, from nixpkgs).
        known = kb.cuda.runfile(version)
        if known is None:
            raise ToolkitOptionError(
                f"no runfile checksum for CUDA {version} in fwdoctor's knowledge base: pass --runfile-url URL --sha256 HEX "
                f"(from NVIDIA's download page), or use --method apt/pip"
            )
        url, sha = known.url, sha or known.sha256
    prefix = str(options.get("prefix") or f"/usr/local/cuda-{xy}")
    download_dir = str(options.get("download_dir") or posixpath.join(work_dir, "downloads"))
    runfile = posixpath.join(download_dir, posixpath.basename(str(url).split("?")[0]) or f"cuda_{xy}_linux.run")
    nvcc = posixpath.join(prefix, "bin", "nvcc")
    installed = (nvcc, "--version")
    root = not _writable(prefix)
    steps = [
        Step(
            (fw_python, "-m", "fwdoctor.recipes.download", "--sha256", str(sha), str(url), runfile),
            why=f"download the CUDA {xy} runfile; its sha256 is checked before it is kept",
            timeout_s=3600,
            skip_if=installed,
            undo=f"rm -f {_q(runfile)}",
        ),
        Step(
            ("sh", runfile, "--silent", "--toolkit", f"--toolkitpath={prefix}", "--no-opengl-libs", "--no-man-page", "--override"),
            why=f"install the toolkit only (no driver) into {prefix}",
            timeout_s=3600,
            skip_if=installed,
            needs_root=root,
            undo=f"rm -rf {_q(prefix)}",
        ),
    ]
    return steps, prefix, []


def _pip_steps(parsed: Version, xy: str, options: Mapping[str, Any], home: str) -> tuple[list[Step], str, list[str]]:
    if parsed.major < 13:
        raise ToolkitOptionError(
            f"--method pip: CUDA {xy} wheels (nvidia-*-cu12) put each component in its own folder, "
            "which nvcc cannot use as one toolkit; use --method runfile or apt (pip works from CUDA 13)"
        )
    prefix = str(options.get("prefix") or posixpath.join(home, ".local", f"cuda-{xy}"))
    root = posixpath.join(prefix, "nvidia", f"cu{parsed.major}")
    python = str(options.get("python") or "python3")
    pins = [f"{name}=={xy}.*" for name in ("nvidia-cuda-nvcc", "nvidia-cuda-runtime", "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-cccl")]
    argv = [python, "-m", "pip", "install", "--target", prefix]
    if options.get("index_url"):
        argv += ["--index-url", str(options["index_url"])]
    nvcc = posixpath.join(root, "bin", "nvcc")
    lib64 = posixpath.join(root, "lib64")
    steps = [
        Step(
            tuple(argv + pins),
            why=f"install NVIDIA's CUDA {xy} compiler wheels into {prefix} (no root needed; every component pinned to {xy})",
            timeout_s=1800,
            skip_if=(nvcc, "--version"),
            undo=f"rm -rf {_q(prefix)}",
        ),
        Step(
            ("ln", "-s", "lib", lib64),
            why="nvcc.profile links from lib64; the wheels ship lib",
            skip_if=("test", "-e", lib64),
            undo=f"rm -f {_q(lib64)}",
        ),
    ]
    return steps, root, [f"toolkit root (CUDA_HOME): {root}"]


def _apt_steps(facts: Any, xy: str, options: Mapping[str, Any], fw_python: str, work_dir: str) -> tuple[list[Step], str, list[str]]:
    osrel = (facts.get("system.os") if facts is not None else None) or {}
    distro, release = str(osrel.get("id") or ""), str(osrel.get("version_id") or "")
    if distro not in ("ubuntu", "debian") or not release:
        raise ToolkitOptionError(f"--method apt: NVIDIA's apt repository needs Ubuntu or Debian; this host is {osrel.get('pretty') or distro or 'unknown'}")
    prefix = f"/usr/local/cuda-{xy}"
    if options.get("prefix") and options["prefix"] != prefix:
        raise ToolkitOptionError(f"--method apt installs into {prefix} only; use --method runfile or pip for --prefix")
    machine = str((facts.get("system.arch") if facts is not None else None) or "x86_64")
    repo = f"{distro}{release.replace('.', '')}"
    repo_arch = {"x86_64": "x86_64", "aarch64": "sbsa"}.get(machine, machine)
    package = f"cuda-toolkit-{xy.replace('.', '-')}"
    steps: list[Step] = []
    keyring_sha = options.get("keyring_sha256")
    if keyring_sha:
        url = KEYRING_URL.format(repo=repo, arch=repo_arch)
        deb = posixpath.join(work_dir, "downloads", "cuda-keyring_1.1-1_all.deb")
        steps += [
            Step((fw_python, "-m", "fwdoctor.recipes.download", "--sha256", str(keyring_sha), url, deb), why="download NVIDIA's repository keyring (sha256 checked)", skip_if=("dpkg", "-s", "cuda-keyring")),
            Step(("dpkg", "-i", deb), why="configure NVIDIA's CUDA apt repository", needs_root=True, skip_if=("dpkg", "-s", "cuda-keyring"), undo="dpkg -r cuda-keyring"),
        ]
    else:
        steps.append(Step(("dpkg", "-s", "cuda-keyring"), why=f"NVIDIA's CUDA repository must be configured (cuda-keyring from {KEYRING_URL.format(repo=repo, arch=repo_arch)}); pass --keyring-sha256 to let fwdoctor set it up"))
    steps += [
        Step(("apt-get", "update"), why="refresh package lists", needs_root=True, timeout_s=600, skip_if=("dpkg", "-s", package)),
        Step(("apt-get", "install", "-y", "--no-install-recommends", package), why=f"install {package} into {prefix}", needs_root=True, timeout_s=3600, skip_if=("dpkg", "-s", package), undo=f"apt-get remove {package}"),
    ]
    return steps, prefix, [f"apt's cuda-toolkit-config-common manages {USR_LOCAL_CUDA} through update-alternatives"]


def _link_steps(facts: Any, root: str, link: bool, method: str) -> list[Step]:
    pointers = (facts.get("cuda.pointers") if facts is not None else None) or {}
    previous = pointers.get("usr_local_cuda")
    if link:
        undo = f"ln -sfn {_q(previous)} {USR_LOCAL_CUDA}" if previous else f"rm -f {USR_LOCAL_CUDA}"
        return [Step(("ln", "-sfn", root, USR_LOCAL_CUDA), why=f"point {USR_LOCAL_CUDA} at the new toolkit (asked for)", needs_root=not _writable(USR_LOCAL_CUDA), skip_if=("test", USR_LOCAL_CUDA, "-ef", root), undo=undo)]
    if previous and method != "pip":
        # The installer may repoint /usr/local/cuda; put it back where it was.
        return [Step(("ln", "-sfn", previous, USR_LOCAL_CUDA), why=f"keep {USR_LOCAL_CUDA} pointing at {previous}", needs_root=not _writable(USR_LOCAL_CUDA), skip_if=("test", USR_LOCAL_CUDA, "-ef", previous))]
    return []
