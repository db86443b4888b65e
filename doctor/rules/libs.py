"""cuDNN and NCCL rules: built for the wrong CUDA, shadowed by LD_PRELOAD/LD_LIBRARY_PATH,
header and library out of step, several versions installed.

"torch's own" library is the pip wheel in the same site-packages as torch (torch.location).
The CUDA major a library must match is torch's (torch.cuda) for the wheels torch loads and
the active toolkit's (cuda.active) for the copies builds compile against. Both torch and
toolkit facts are optional inputs: when they are unknown the rule says what it compared
against instead, or reports "not checked".
"""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING, Any, Iterable

from fwdoctor import versions
from fwdoctor.kb.libs import NoData
from fwdoctor.libraries import CUDNN, NCCL, Library, deb_package_for_cuda
from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.quoting import comment
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule, sh
from fwdoctor.versions import major as major_of, same_release as same_version, short

if TYPE_CHECKING:
    from fwdoctor.kb import KB

TORCH_FACTS = ("torch.location", "torch.requires", "torch.cuda", "cuda.active", "ld.library_path", "ld.preload")


# ----------------------------------------------------------------------------- helpers
def installs(facts: Facts, lib: Library) -> list[dict[str, Any]]:
    value = facts[lib.installs_key]
    return [i for i in value if isinstance(i, dict)] if isinstance(value, list) else []


def package_parts(inst: dict[str, Any]) -> tuple[str, str] | None:
    """("nvidia-cudnn-cu13", "9.24.0.43") from the install's "package" field."""
    package = inst.get("package")
    if not isinstance(package, str) or " " not in package:
        return None
    name, _, version = package.partition(" ")
    return name, version


def install_version(inst: dict[str, Any]) -> str | None:
    """The most precise version an install shows: a full library version, else its
    header's, else its package's upstream version, else a bare library major."""
    library, header = inst.get("library_version"), inst.get("header_version")
    if isinstance(library, str) and library.count(".") >= 2:
        return library
    if isinstance(header, str) and header:
        return header
    parts = package_parts(inst)
    upstream = versions.deb_upstream_version(parts[1]) if parts else None
    if upstream:
        return upstream
    return library if isinstance(library, str) and library else None


def describe(inst: dict[str, Any]) -> str:
    """"nvidia-cudnn-cu13 9.24.0.43 (pip, /venv/.../nvidia/cudnn)"."""
    if inst.get("package"):
        return f"{inst.get('package')} ({inst.get('kind')}, {inst.get('prefix')})"
    return f"{inst.get('kind')} copy in {inst.get('prefix')}"


def torch_site(facts: Facts) -> str | None:
    location = facts["torch.location"]
    return posixpath.dirname(location.rstrip("/")) if isinstance(location, str) and location else None


def torch_absent(facts: Facts) -> bool:
    """torch is known not to be installed (torch.location is a real None)."""
    return facts.known("torch.location") and facts["torch.location"] is None


def torch_pin(facts: Facts, lib: Library, kb: KB) -> tuple[str, str] | None:
    """(package, version) torch's metadata pins for this library, e.g. nvidia-cudnn-cu13 ==9.24.0.43."""
    requires = facts["torch.requires"]
    if not isinstance(requires, dict):
        return None
    for name, spec in requires.items():
        row = kb.libs.pip_package(name) if isinstance(name, str) else None
        if row is not None and row.library == lib.name:
            match = re.search(r"==\s*([\w.]+)", spec) if isinstance(spec, str) else None
            return row.package, match.group(1) if match else ""
    return None


def own_install(facts: Facts, kb: KB, lib: Library) -> tuple[dict[str, Any] | None, str]:
    """torch's own install of the library and how it was chosen."""
    pips = [i for i in installs(facts, lib) if i.get("kind") == "pip"]
    site = torch_site(facts)
    if site is not None:
        pips = [i for i in pips if str(i.get("prefix", "")).startswith(site.rstrip("/") + "/")]
        how = f"the pip {lib.title} beside torch in {site}"
    elif torch_absent(facts):
        return None, "torch is not installed"
    else:
        how = f"the pip {lib.title} of the inspected environment (torch.location unknown: {facts.why('torch.location')})"
    pin = torch_pin(facts, lib, kb)
    if pin is not None:
        pinned = [i for i in pips if (package_parts(i) or ("",))[0] == pin[0]]
        pips = pinned or pips
    elif len(pips) > 1:
        # The cu12 and cu13 wheels share nvidia/<lib>/: the dist-info whose version the
        # files on disk carry is the one whose files torch actually loads.
        matching = [i for i in pips if same_version(_package_version(i), i.get("header_version") or i.get("library_version"))]
        pips = matching or pips
    return (pips[0], how) if pips else (None, f"no pip {lib.title} found for torch")


def _package_version(inst: dict[str, Any]) -> str | None:
    parts = package_parts(inst)
    return parts[1] if parts else None


def reference_cuda(facts: Facts, own: dict[str, Any] | None) -> tuple[int | None, str]:
    """The CUDA major torch runs with: torch.cuda, else (when torch.cuda is unknown) the
    CUDA major of torch's own wheel, which torch pins to its own CUDA."""
    value = facts["torch.cuda"]
    if isinstance(value, str) and major_of(value) is not None:
        return major_of(value), f"torch (built for CUDA {value})"
    if value is None and facts.known("torch.cuda"):
        return None, "torch is a CPU build"
    if own is not None and isinstance(own.get("cuda_major"), int):
        return own["cuda_major"], f"torch, whose own {own.get('package') or 'pip wheel'} is for CUDA {own['cuda_major']} (torch.cuda unknown)"
    return None, f"torch.cuda unknown ({facts.why('torch.cuda')})"


def toolkit_cuda(facts: Facts) -> tuple[int | None, str, str | None]:
    active = facts["cuda.active"]
    if isinstance(active, dict) and major_of(active.get("version")) is not None:
        return major_of(active.get("version")), f"builds with the active CUDA toolkit {active.get('version')} ({active.get('root')})", active.get("root")
    return None, "", None


def same_dir(a: str | None, b: str | None) -> bool:
    return bool(a and b) and posixpath.normpath(posixpath.dirname(a)) == posixpath.normpath(posixpath.dirname(b))  # type: ignore[arg-type]


def env_fix(facts: Facts, first: dict[str, Any], extra: Iterable[str] = ()) -> FixRef:
    """Take the shadowing library out of the loader's way: drop the LD_PRELOAD entry or the
    LD_LIBRARY_PATH folder (recipe `env`), with the equivalent shell lines."""
    path = str(first.get("path"))
    if first.get("via") == "LD_PRELOAD":
        preload = facts["ld.preload"] if isinstance(facts["ld.preload"], list) else [path]
        rest = [p for p in preload if p != path]
        command = f"export LD_PRELOAD={sh(':'.join(rest))}" if rest else "unset LD_PRELOAD"
        return FixRef("env", {"ld_preload_remove": [path]}, (command, *extra))
    folder = posixpath.dirname(path)
    entries = facts["ld.library_path"] if isinstance(facts["ld.library_path"], list) else [folder]
    rest = [e for e in entries if posixpath.normpath(e) != posixpath.normpath(folder)]
    command = f"export LD_LIBRARY_PATH={sh(':'.join(rest))}" if rest else "unset LD_LIBRARY_PATH"
    return FixRef("env", {"ld_library_path_remove": [folder]}, (command, *extra))


# ----------------------------------------------------------------------------- the checks
def _supported_majors(inst: dict[str, Any], kb: KB, lib: Library) -> tuple[tuple[int, ...] | None, str]:
    """The CUDA majors an install can serve and how we know, or (None, why not)."""
    if isinstance(inst.get("cuda_major"), int):
        return (inst["cuda_major"],), "built for"
    parts = package_parts(inst)
    if parts:
        major = kb.libs.cuda_major_of_pip_package(parts[0])
        if major is not None:
            return (major,), "built for"
    version = install_version(inst)
    if lib is CUDNN and version and version.count(".") >= 1:

        try:
            return kb.libs.cudnn_cuda_majors(version), "supports"
        except NoData as exc:
            return None, str(exc)
    return None, f"{describe(inst)}: the CUDA it was built for is not recorded"


def cuda_mismatch(facts: Facts, kb: KB, lib: Library) -> list[Hit]:
    own, own_how = own_install(facts, kb, lib)
    torch_major, torch_why = reference_cuda(facts, own)
    tk_major, tk_why, _ = toolkit_cuda(facts)
    first = facts[lib.ld_first_key] if isinstance(facts[lib.ld_first_key], dict) else None
    site = torch_site(facts)
    hits: list[Hit] = []
    unchecked: list[str] = []
    unreferenced: list[str] = []  # copies whose user's CUDA major is unknown
    compared = 0
    for inst in installs(facts, lib):
        # Who loads this copy: torch loads the pip wheels of its environment and whatever
        # the loader finds first; builds with the active toolkit compile against the rest.
        is_torch_side = (inst.get("kind") == "pip" and (site is None or str(inst.get("prefix", "")).startswith(site + "/"))
                         # conda's torch loads its env's PREFIX/lib copy (RPATH), not the toolkit's
                         or inst.get("kind") == "conda" and site is not None and site.startswith(str(inst.get("prefix", "")).rstrip("/") + "/"))
        is_first = first is not None and same_dir(first.get("path"), inst.get("library"))
        severity = None
        if is_torch_side:
            ref, why = torch_major, f"it is used by {torch_why}"
        elif is_first:
            ref, why = torch_major, f"{first.get('via')} puts it in front of {torch_why}"
            if first.get("via") == "LD_LIBRARY_PATH" and own is not None:
                severity = Severity.WARNING  # torch's RPATH still finds its own (see cudnn-shadowed)
        else:
            ref, why = tk_major, f"it is used by {tk_why}"
        if ref is None:
            # Nobody known to use it (a CPU torch, no torch, no active toolkit) is fine; a user
            # whose CUDA is unknown leaves this copy unjudged, not healthy.
            missing = _unknown_reference(facts, toolkit_side=not (is_torch_side or is_first))
            if missing:
                unreferenced.append(f"{describe(inst)}: {missing}")
            continue
        majors, how = _supported_majors(inst, kb, lib)
        if majors is None:
            unchecked.append(how)
            continue
        compared += 1
        if ref in majors:
            continue
        listed = " and ".join(str(m) for m in majors)
        built = f"built for CUDA {listed}" if how == "built for" else f"a release built only for CUDA {listed}"
        what = describe(inst) if inst.get("package") else f"{lib.title} {short(install_version(inst))} ({describe(inst)})"
        fix = env_fix(facts, first) if is_first and not is_torch_side else _mismatch_fix(facts, kb, lib, inst, ref)
        hits.append(Hit(
            f"{what} is {built}, but {why}",
            evidence={"install": inst, "cuda_major_expected": ref, "expected_from": why, "cuda_majors_of_install": list(majors)},
            fix=fix,
            severity=severity,
        ))
    if not hits and not compared:
        if unchecked:
            raise NotCheckable("; ".join(unchecked))
        if torch_major is None and tk_major is None and installs(facts, lib):
            active = "no active CUDA toolkit" if facts.known("cuda.active") else f"cuda.active unknown ({facts.why('cuda.active')})"
            raise NotCheckable(f"no CUDA major to compare with: {torch_why}; {active}")
    if not hits and (unchecked or unreferenced):  # one copy judged fine, another not judged
        raise NotCheckable("; ".join(unchecked + unreferenced))
    return hits


def _unknown_reference(facts: Facts, toolkit_side: bool) -> str | None:
    """Why the CUDA major a copy is held to is unknown, or None where nobody uses it: torch is a
    CPU build or absent (torch's side), no toolkit is active (the build side)."""
    if toolkit_side:
        if not facts.known("cuda.active"):
            return f"the CUDA of the toolkit builds use is unknown (cuda.active: {facts.why('cuda.active')})"
        active = facts["cuda.active"]
        return f"the active toolkit's CUDA version is unreadable ({active.get('version')!r})" if isinstance(active, dict) and active else None
    if torch_absent(facts) or (facts.known("torch.cuda") and facts["torch.cuda"] is None):
        return None
    return f"the CUDA torch was built for is unknown (torch.cuda: {facts.why('torch.cuda')})"


def _mismatch_fix(facts: Facts, kb: KB, lib: Library, inst: dict[str, Any], want: int) -> FixRef:
    parts = package_parts(inst)
    if inst.get("kind") == "pip" and parts:
        own, _ = own_install(facts, kb, lib)
        own_parts = package_parts(own) if own is not None else None
        if own_parts and own_parts[0] != parts[0] and own.get("cuda_major") == want:
            # The cu12 and cu13 wheels install the same files (nvidia/<lib>/lib/...), so
            # uninstalling the stale one deletes torch's copy too: reinstall it after.
            keep = f"{own_parts[0]}=={own_parts[1]}"
            return FixRef("env", {"pip_uninstall": [parts[0]], "pip_reinstall": [keep]},
                          (f"pip uninstall -y {sh(parts[0])}", f"pip install --force-reinstall --no-deps {sh(keep)}"),
                          note=f"{parts[0]} shares {inst.get('prefix')} with torch's {own_parts[0]}; reinstall that after the uninstall")
        right = kb.libs.pip_package_for(lib.name, want)
        pin = torch_pin(facts, lib, kb)
        requirement = f"{right}=={pin[1]}" if right and pin and pin[0] == right and pin[1] else right
        commands = (f"pip uninstall -y {sh(parts[0])}", *((f"pip install {sh(requirement)}",) if requirement else ()))
        return FixRef("env", {"pip_uninstall": [parts[0]], "pip_install": [requirement] if requirement else []}, commands,
                      note=f"the {parts[0]} wheel is for another CUDA major than the one torch uses")
    if inst.get("kind") == "dpkg" and parts:
        name = parts[0]
        target = deb_package_for_cuda(name, want)
        commands = (f"apt-cache madison {sh(target)}  # choose a build ending in +cuda{comment(str(want))}.x", f"apt-get install {sh(target)}")
        return FixRef("env", {"apt_install": [target]}, commands, note=f"install the {lib.title} package built for CUDA {want}")
    return FixRef("env", {}, (), note=f"replace {inst.get('prefix')} with a {lib.title} built for CUDA {want}, or remove it")


def shadowed(facts: Facts, kb: KB, lib: Library) -> Hit | None:
    first = facts[lib.ld_first_key]
    if not isinstance(first, dict):
        return None
    own, how = own_install(facts, kb, lib)
    if own is not None:
        expected, expected_from, own_lib = install_version(own), f"{how}: {describe(own)}", own.get("library")
    else:
        if torch_absent(facts):
            return None
        pin = torch_pin(facts, lib, kb)
        if pin is None or not pin[1]:
            raise NotCheckable(f"torch's own {lib.title} is unknown ({how}; torch.requires names no {lib.title} wheel)")
        expected, expected_from, own_lib = pin[1], f"torch's metadata pin {pin[0]}=={pin[1]}", None
    if own_lib and (same_dir(first.get("path"), own_lib) or posixpath.normpath(str(first.get("path"))) == posixpath.normpath(own_lib)):
        return None
    verdict = same_version(first.get("version"), expected)
    if verdict is True:
        return None
    evidence = {"ld_first": first, "expected_version": expected, "expected_from": expected_from}
    if lib is NCCL and first.get("version"):
        bugs = kb.libs.nccl_known_bugs(str(first.get("version")))
        if bugs:
            evidence["known_bugs_of_shadowing_version"] = [b.to_json() for b in bugs]
    seen = f"{first.get('version')}" if first.get("version") else "of unknown version"
    if verdict is False:
        message = f"{first.get('via')} puts {lib.title} {seen} ({first.get('path')}) ahead of torch's {lib.title} {short(expected)}"
        severity = None
    else:
        message = (f"{first.get('via')} puts {first.get('path')} ahead of torch's {lib.title} {short(expected)}; "
                   f"its exact version ({seen}) cannot be told from its name")
        severity = Severity.WARNING
    if first.get("via") == "LD_LIBRARY_PATH" and own is not None:
        # Measured with torch 2.14.1: libtorch_cuda.so's DT_RPATH ($ORIGIN/../../nvidia/
        # <lib>/lib) wins over LD_LIBRARY_PATH and torch preloads its wheels, so torch still
        # loads its own copy; extensions without that RPATH, and libraries loaded before
        # torch, take this one. LD_PRELOAD beats everything (undefined symbol at import).
        message += "; torch's wheel still loads its own through RPATH, other libraries in the process take this one"
        severity = Severity.WARNING
    return Hit(message, evidence, env_fix(facts, first), severity)


def header_library_mismatch(facts: Facts, kb: KB, lib: Library) -> list[Hit]:
    hits = []
    for inst in installs(facts, lib):
        header, library = inst.get("header_version"), inst.get("library_version")
        if same_version(header, library) is not False:
            continue
        parts = package_parts(inst)
        if inst.get("kind") == "pip" and parts:
            commands: tuple[str, ...] = (f"pip install --force-reinstall --no-deps {sh(f'{parts[0]}=={parts[1]}')}",)
        elif inst.get("kind") == "dpkg" and parts:
            commands = (f"apt-get install --reinstall {sh(parts[0])}",)
        else:
            commands = ()
        hits.append(Hit(
            f"{lib.title} at {inst.get('prefix')}: {posixpath.basename(str(inst.get('header') or lib.headers[0]))} says {header}, "
            f"{posixpath.basename(str(inst.get('library') or lib.soname))} is {library}",
            evidence={"install": inst},
            fix=FixRef(None, {}, commands, note=f"install {lib.title} headers and libraries from one release into {inst.get('prefix')}"),
        ))
    return hits


def multiple(facts: Facts, kb: KB, lib: Library) -> Hit | None:
    found = installs(facts, lib)
    by_version: dict[str, list[dict[str, Any]]] = {}
    for inst in found:
        by_version.setdefault(short(install_version(inst)), []).append(inst)
    if len(by_version) < 2:
        return None
    own, _ = own_install(facts, kb, lib)
    first = facts[lib.ld_first_key] if isinstance(facts[lib.ld_first_key], dict) else None
    _, _, tk_root = toolkit_cuda(facts)
    consumers: dict[str, str] = {}
    if first and (first.get("via") == "LD_PRELOAD" or own is None):
        consumers["torch"] = f"{first.get('path')} (via {first.get('via')})"
    elif own is not None and own.get("library"):
        consumers["torch"] = str(own.get("library"))
    if first and first.get("via") == "LD_LIBRARY_PATH" and own is not None:
        consumers["other libraries"] = f"{first.get('path')} (first on LD_LIBRARY_PATH)"
    build = next((i for i in found if tk_root and i.get("kind") == "toolkit" and i.get("prefix") == tk_root), None)
    build = build or next((i for i in found if i.get("kind") in ("dpkg", "system") and i.get("header")), None)
    if build is not None:
        consumers["builds"] = str(build.get("header"))
    listing = "; ".join(f"{version}: {', '.join(describe(i) for i in group)}" for version, group in by_version.items())
    who = ", ".join(f"{k} {'use' if k.endswith('libraries') else 'uses'} {v}" for k, v in consumers.items())
    evidence: dict[str, Any] = {"versions": {v: [i.get("prefix") for i in g] for v, g in by_version.items()}, "consumers": consumers}
    if lib is NCCL:
        bugs = {v: [b.id for b in kb.libs.nccl_known_bugs(v)] for v in by_version}
        evidence["known_bugs"] = {v: ids for v, ids in bugs.items() if ids}
    return Hit(f"{len(by_version)} {lib.title} versions installed ({listing})" + (f"; {who}" if who else ""), evidence)


# ----------------------------------------------------------------------------- cuDNN
@rule("cudnn-cuda-mismatch", needs=("cudnn.installs",), optional=("cudnn.ld_first", *TORCH_FACTS))
def cudnn_cuda_mismatch(facts: Facts, kb: KB) -> list[Hit]:
    """What it does:
    Compares the CUDA major each cuDNN was built for (the -cuNN wheel suffix, the
    +cudaX.Y of a Debian package, the archive name, or the KB's support matrix for its
    version) with the CUDA of whoever loads it: torch for the wheels beside it and for
    the copy LD_PRELOAD/LD_LIBRARY_PATH puts first, the active toolkit for the rest.

    Why is this bad?
    A cuDNN for CUDA 11 needs libcudart.so.11 and libcublas.so.11; beside a CUDA 12
    torch it fails to load ("Could not load library libcudnn_cnn_infer.so.8") or torch
    reports "cuDNN version incompatibility" and falls back or crashes at the first
    convolution. Extensions built against it link the wrong CUDA.

    Example:
    torch 2.5.1+cu124 with nvidia-cudnn-cu11 9.1.0.70 left beside it by an earlier
    `pip install torch==2.0.1+cu118`; or libcudnn8 8.9.7.29-1+cuda11.8 under a CUDA 12.4
    toolkit.

    Fix:
    Remove the wheel or package for the other CUDA and install the one for yours:
        pip uninstall -y nvidia-cudnn-cu11
        pip install nvidia-cudnn-cu12==<the version torch pins>
    (recipe `env`).
    """
    return cuda_mismatch(facts, kb, CUDNN)


@rule("cudnn-shadowed", needs=("cudnn.installs", "cudnn.ld_first"), optional=TORCH_FACTS)
def cudnn_shadowed(facts: Facts, kb: KB) -> Hit | None:
    """What it does:
    Finds the libcudnn a process loads first (LD_PRELOAD, then the first
    LD_LIBRARY_PATH folder holding the soname torch asks for) and compares it with the
    cuDNN torch ships with (the pip wheel beside torch, else the version torch pins).

    Why is this bad?
    The first libcudnn.so.9 loaded wins for the whole process. A different release
    gives "cuDNN version incompatibility: PyTorch was compiled against (9, 24, 0) but
    found runtime version (9, 1, 0)", undefined symbols ("libtorch_cuda.so: undefined
    symbol: cudnnSetConvolutionGroupCount, version libcudnn.so.9" with LD_PRELOAD), or
    silently slower kernels. It is an error through LD_PRELOAD, or when torch has no
    wheel of its own; a warning through LD_LIBRARY_PATH beside a pip torch, whose RPATH
    still finds its own copy while extensions and libraries loaded first do not, and
    when the file name shows only the major.

    Example:
    LD_LIBRARY_PATH=/usr/local/cuda-12.4/lib64 holding libcudnn.so.9 from cuDNN 9.1.0
    while torch ships nvidia-cudnn-cu12 9.5.1.17.

    Fix:
    Drop the entry that shadows torch's copy (recipe `env`):
        export LD_LIBRARY_PATH=<the other entries>
        unset LD_PRELOAD
    """
    return shadowed(facts, kb, CUDNN)


@rule("cudnn-header-library-mismatch", needs=("cudnn.installs",))
def cudnn_header_library_mismatch(facts: Facts, kb: KB) -> list[Hit]:
    """What it does:
    Compares, within each cuDNN install, the version in cudnn_version.h with the
    version in the libcudnn.so file name.

    Why is this bad?
    A build compiles against one release and runs against another: CMake's FindCUDNN
    and torch.utils.cpp_extension report the header's version while the loader picks
    the library, so the mismatch shows up later as undefined symbols or a cuDNN
    version check failing at run time.

    Example:
    /usr/local/cuda-12.4/include/cudnn_version.h says 9.1.0 but lib64 holds only
    libcudnn.so.8.9.7, left from an older tarball.

    Fix:
    Copy include/ and lib/ from the same cuDNN archive, or reinstall the package:
        apt-get install --reinstall libcudnn9-cuda-12
    """
    return header_library_mismatch(facts, kb, CUDNN)


@rule("multiple-cudnn", needs=("cudnn.installs",), optional=("cudnn.ld_first", *TORCH_FACTS))
def multiple_cudnn(facts: Facts, kb: KB) -> Hit | None:
    """What it does:
    Lists the cuDNN versions installed (pip, Debian packages, toolkit copies,
    tarballs, conda) when there is more than one, and says which one torch loads
    and which one a build with the active toolkit finds.

    Why is this bad?
    Nothing is broken by itself, but the next LD_LIBRARY_PATH change or build picks
    one of them without saying which; most cuDNN mix-ups start here.

    Example:
    nvidia-cudnn-cu13 9.24.0.43 in the venv and libcudnn9-cuda-12 9.1.0.70 in /usr.

    Fix:
    Keep one per CUDA major; remove the others you do not use, e.g.
        apt-get remove libcudnn8 libcudnn8-dev
    """
    return multiple(facts, kb, CUDNN)


def _gpu_ccs(facts: Facts, kb: KB) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """The GPUs grouped by compute capability, and the names of those whose CC is unknown."""
    by_cc: dict[str, list[dict[str, Any]]] = {}
    unknown: list[str] = []
    pci = facts.get("pci.nvidia_gpus") or []
    for gpu in facts["gpus.list"] or []:
        if not isinstance(gpu, dict):
            continue
        # NVML reports the CC; the /proc and PCI fallbacks do not, so look the model up.
        cc = gpu.get("cc") or kb.gpus.cc_for_gpu(gpu, pci)
        if cc:
            by_cc.setdefault(str(cc), []).append(gpu)
        else:
            unknown.append(str(gpu.get("name")))
    return by_cc, unknown


def _install_cuda_major(inst: dict[str, Any], kb: KB) -> int | None:
    if isinstance(inst.get("cuda_major"), int):
        return inst["cuda_major"]
    parts = package_parts(inst)
    return kb.libs.cuda_major_of_pip_package(parts[0]) if parts else None


def _cudnn_gpu_fix(facts: Facts, kb: KB, inst: dict[str, Any], major: int | None, cc: str, is_torchs: bool) -> FixRef:
    """The newest cuDNN of the install's CUDA major that still runs compute capability `cc`:
    torch's own pin when that one fits, else an upper bound on the release line."""
    from fwdoctor.kb.libs import upper_bound

    row = kb.libs.newest_cudnn_supporting(cc, major) if major is not None else None
    parts = package_parts(inst)
    if row is None:
        what = f"CUDA {major}" if major is not None else "its CUDA major"
        return FixRef(None, {}, (), note=f"no cuDNN release the KB knows for {what} supports compute capability {cc}")
    bound = upper_bound(row)
    if inst.get("kind") == "pip" and parts:
        pin = torch_pin(facts, CUDNN, kb)
        if is_torchs and pin and pin[0] == parts[0] and pin[1] and pin[1] != parts[1]:
            try:
                pinned_fits = kb.libs.cudnn_arch_row(pin[1], major).supports(cc)
            except NoData:
                pinned_fits = False
            if pinned_fits:
                keep = f"{pin[0]}=={pin[1]}"
                return FixRef("env", {"pip_install": [keep]}, (f"pip install {sh(keep)}",),
                              note=f"go back to the cuDNN torch pins ({pin[1]}), which still supports compute capability {cc}")
        requirement = f"{parts[0]}<{bound}"
        note = f"cuDNN releases before {bound} for CUDA {major} support compute capability {cc}"
        if is_torchs:
            note += ("; torch refuses a cuDNN older than the one it was built with (\"cuDNN version incompatibility\"), "
                     "so if torch pins a newer one, pick a torch build whose cuDNN runs this GPU (fwdoctor select torch)")
        return FixRef("env", {"pip_install": [requirement]}, (f"pip install {sh(requirement)}",), note=note)
    if inst.get("kind") == "conda":
        return FixRef(None, {}, (f'conda install "cudnn<{bound}"',), note=f"cuDNN releases before {bound} support compute capability {cc}")
    return FixRef(None, {}, (), note=f"install a cuDNN release before {bound} built for CUDA {major} in place of {inst.get('prefix')} "
                                      f"(its support matrix lists compute capability {cc})")


@rule("cudnn-gpu-unsupported", needs=("cudnn.installs", "gpus.list"), optional=("pci.nvidia_gpus", "cudnn.ld_first", *TORCH_FACTS))
def cudnn_gpu_unsupported(facts: Facts, kb: KB) -> list[Hit]:
    """What it does:
    Compares each GPU's compute capability with the GPUs each installed cuDNN (pip
    wheel, conda package, Debian package, toolkit or tarball copy) supports, as NVIDIA's
    cuDNN support matrix for that release and CUDA major lists them (libs.yaml
    cudnn_arch). It is an error for the cuDNN torch loads (its own wheel, or the copy
    LD_PRELOAD/LD_LIBRARY_PATH puts first) and a warning for the other copies.

    Why is this bad?
    A cuDNN without kernels for the GPU loads fine and fails at the first convolution:
    "CUDNN_STATUS_ARCH_MISMATCH", "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH" or "no
    kernel image is available". cuDNN 9.11 and newer for CUDA 12 (and every cuDNN for
    CUDA 13) start at compute capability 7.5, so `pip install -U nvidia-cudnn-cu12`
    breaks a V100 (7.0) or a GTX 1080 Ti (6.1) that ran with 9.10.

    Example:
    nvidia-cudnn-cu12 9.19.0.56 upgraded beside torch 2.10.0+cu128 (which pins
    9.10.2.21) on a Tesla V100-SXM2-32GB.

    Fix:
    Go back to the newest cuDNN that still supports the GPU (recipe `env`):
        pip install nvidia-cudnn-cu12==9.10.2.21      # torch's own pin, when it fits
        pip install "nvidia-cudnn-cu12<9.11"           # else the newest release before the cut
    """
    found = installs(facts, CUDNN)
    by_cc, no_cc = _gpu_ccs(facts, kb)
    if not found or not (by_cc or no_cc):
        return []
    if not by_cc:
        raise NotCheckable(f"no compute capability known for {', '.join(no_cc)}")
    own, _ = own_install(facts, kb, CUDNN) if not torch_absent(facts) else (None, "")
    first = facts["cudnn.ld_first"] if isinstance(facts["cudnn.ld_first"], dict) else None
    site = torch_site(facts)
    hits: list[Hit] = []
    unchecked: list[str] = []
    for inst in found:
        version = install_version(inst)
        major = _install_cuda_major(inst, kb)
        if not version or version.count(".") < 1:
            unchecked.append(f"{describe(inst)}: version unknown")
            continue
        try:
            row = kb.libs.cudnn_arch_row(version, major)
        except NoData as exc:
            unchecked.append(str(exc))
            continue
        # A conda torch loads the cuDNN of its own environment (the prefix holding torch).
        is_own = (own is not None and inst is own) or (
            inst.get("kind") == "conda" and site is not None and site.startswith(str(inst.get("prefix", "")).rstrip("/") + "/"))
        is_first = first is not None and same_dir(first.get("path"), inst.get("library"))
        for cc, group in by_cc.items():
            try:
                if row.supports(cc):
                    continue
            except ValueError:
                unchecked.append(f"compute capability {cc!r} is not a version")
                continue
            names = ", ".join(f"GPU {g.get('index')} {g.get('name')}" for g in group)
            what = describe(inst) if inst.get("package") else f"cuDNN {short(version)} ({describe(inst)})"
            for_cuda = f" for CUDA {major}" if major is not None else ""
            user = "torch loads it" if is_own else f"{first.get('via')} puts it first" if is_first and first else "programs that load it"
            hits.append(Hit(
                f"{what} supports compute capability {row.span()} (cuDNN {row.releases()}{for_cuda}); "
                f"{names} is {cc}, so cuDNN calls fail on it ({user})",
                evidence={"install": inst, "gpus": group, "cc": cc, "cudnn_version": version, "cuda_major": major,
                          "supported_min_cc": str(row.min_cc), "supported_max_cc": str(row.max_cc) if row.max_cc else None,
                          "kb_source": list(row.source)},
                fix=_cudnn_gpu_fix(facts, kb, inst, major, cc, is_own),
                severity=None if (is_own or is_first) else Severity.WARNING,
            ))
    if not hits and unchecked:
        raise NotCheckable("; ".join(unchecked))
    return hits


# ----------------------------------------------------------------------------- NCCL
@rule("nccl-cuda-mismatch", needs=("nccl.installs",), optional=("nccl.ld_first", *TORCH_FACTS))
def nccl_cuda_mismatch(facts: Facts, kb: KB) -> list[Hit]:
    """What it does:
    Compares the CUDA major each NCCL was built for (the "+cudaX.Y" inside libnccl,
    the -cuNN wheel suffix, the Debian package version) with the CUDA of whoever
    loads it: torch for the wheels beside it and for the copy the loader finds first,
    the active toolkit for the rest.

    Why is this bad?
    NCCL is built per CUDA major. One for another major fails to load or fails at the
    first collective: "NCCL error: unhandled cuda error" / "cudaErrorInsufficientDriver",
    or "undefined symbol" errors in libtorch_cuda.so.

    Example:
    nvidia-nccl-cu12 2.27.3 beside torch 2.14.1+cu130, which needs nvidia-nccl-cu13.

    Fix:
        pip uninstall -y nvidia-nccl-cu12
        pip install nvidia-nccl-cu13==<the version torch pins>
    (recipe `env`).
    """
    return cuda_mismatch(facts, kb, NCCL)


@rule("nccl-shadowed", needs=("nccl.installs", "nccl.ld_first"), optional=TORCH_FACTS)
def nccl_shadowed(facts: Facts, kb: KB) -> Hit | None:
    """What it does:
    Finds the libnccl.so.2 a process loads first (LD_PRELOAD, then LD_LIBRARY_PATH)
    and compares its version (read from the "NCCL version" string inside the file)
    with the NCCL torch ships with.

    Why is this bad?
    An older libnccl lacks symbols torch calls ("undefined symbol: ncclCommRegister")
    or brings bugs torch's copy fixed (hangs in ncclCommAbort, data corruption); a
    newer one may change defaults under you. The evidence lists documented bugs of the
    shadowing version.

    Example:
    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libnccl.so.2 (2.18.1, from libnccl2) in front
    of nvidia-nccl-cu12 2.21.5.

    Fix:
    Drop the entry (recipe `env`):
        unset LD_PRELOAD
        export LD_LIBRARY_PATH=<the other entries>
    """
    return shadowed(facts, kb, NCCL)


@rule("nccl-header-library-mismatch", needs=("nccl.installs",))
def nccl_header_library_mismatch(facts: Facts, kb: KB) -> list[Hit]:
    """What it does:
    Compares, within each NCCL install, the version in nccl.h with the version of
    libnccl (its embedded "NCCL version" string, else its file name).

    Why is this bad?
    Code compiled against the header's NCCL_VERSION_CODE takes paths the loaded
    library does not have: "undefined symbol" at load time, or features silently off.

    Example:
    /usr/include/nccl.h from libnccl-dev 2.21.5 with /usr/lib/x86_64-linux-gnu/
    libnccl.so.2.18.1 after a partial upgrade.

    Fix:
    Install headers and library from one release:
        apt-get install --reinstall libnccl2 libnccl-dev
    """
    return header_library_mismatch(facts, kb, NCCL)


@rule("multiple-nccl", needs=("nccl.installs",), optional=("nccl.ld_first", *TORCH_FACTS))
def multiple_nccl(facts: Facts, kb: KB) -> Hit | None:
    """What it does:
    Lists the NCCL versions installed when there is more than one, says which one
    torch loads and which one a build finds, and names documented NCCL bugs of each
    version (evidence "known_bugs").

    Why is this bad?
    Two libnccl.so.2 in one process abort with "Duplicate NCCL runtime found"
    (DeepEP), and which one loads depends on LD_LIBRARY_PATH order.

    Example:
    nvidia-nccl-cu13 2.30.7 in the venv and libnccl2 2.21.5-1+cuda12.4 in /usr.

    Fix:
    Keep the one torch ships with; remove the others you do not build against, e.g.
        apt-get remove libnccl2 libnccl-dev
    """
    return multiple(facts, kb, NCCL)


RULES: tuple[Rule, ...] = (
    cudnn_cuda_mismatch,
    cudnn_shadowed,
    cudnn_header_library_mismatch,
    multiple_cudnn,
    cudnn_gpu_unsupported,
    nccl_cuda_mismatch,
    nccl_shadowed,
    nccl_header_library_mismatch,
    multiple_nccl,
)
