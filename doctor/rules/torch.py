"""PyTorch rules: driver-too-old-for-torch, gpu-arch-unsupported-by-torch,
torch-cpu-build-on-gpu-host, torch-not-installed.

Pure functions of (Facts, KB). Versions are compared with packaging.version; the driver
floors come from kb.cuda (minor-version compatibility), the wheel matrix from kb.torch.
Fixes point at the `torch-wheel` recipe with the exact wheel to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from packaging.version import InvalidVersion, Version

from fwdoctor import arch
from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule, sh
from fwdoctor.versions import parse_version

if TYPE_CHECKING:
    from fwdoctor.kb import KB
    from fwdoctor.kb.torch import TorchVariant

NO_KERNEL = "CUDA error: no kernel image is available for execution on the device"


# --------------------------------------------------------------------------- helpers
def _pip(facts: Facts) -> str:
    """`PYTHON -m pip` with the interpreter quoted: a venv folder named `v;touch X;x` in an
    inspected root is one word of the command a person pastes, never a command of its own."""
    python = facts.get("python.executable")
    return f"{sh(python)} -m pip" if python else "python3 -m pip"


# Facts that say the driver version is a Windows driver's: a Windows build (`ver`,
# systeminfo, collect_env, in a report) or WSL 2 (a report's platform.wsl, a live host's
# driver.wsl), where nvidia-smi and NVML show the Windows host's driver, or a report's
# nvidia-smi that says so itself (driver.windows: its TCC/WDDM column, nvidia-smi.exe, WSL 2's
# Linux nvidia-smi version beside the Windows driver's; fwdoctor.triage.nvidia_smi).
WINDOWS_KEYS = ("platform.windows_build", "platform.wsl", "driver.wsl", "driver.windows")


def windows_driver(facts: Facts) -> bool:
    """Whether driver.version is numbered as a Windows driver (10.2: 441.22, not 440.33)."""
    if isinstance(facts.get("platform.windows_build"), dict) or isinstance(facts.get("driver.windows"), dict):
        return True
    return any(isinstance(wsl, dict) and wsl.get("version") == 2 for wsl in (facts.get("platform.wsl"), facts.get("driver.wsl")))


def run_floor(kb: KB, cuda: str, windows: bool = False) -> str | None:
    """kb.cuda.run_floor, with Table 3's Windows column for a Windows driver where the KB has
    it (CUDA 10.x and older). Elsewhere (11.x on) the Linux minor-version floor, as before:
    the KB holds no Windows minor-version floors, and NVIDIA's are above the Linux ones
    (12.x: 528.33 vs 525.60.13), so this can miss a too-old Windows driver but not flag one
    that runs the build."""
    return (kb.cuda.run_floor(cuda, windows=True) if windows else None) or kb.cuda.run_floor(cuda)


def driver_runs(kb: KB, driver: str, cuda: str | None, windows: bool = False) -> bool | None:
    """Can `driver` run a wheel built for `cuda`? None when the KB has no floor for it.
    The floor is kb.cuda.run_floor: the major's minor-version-compatibility floor for 11.x
    on, that minor's own toolkit driver for 10.x and older (no minor-version compatibility);
    `windows`: `driver` is a Windows driver (run_floor above)."""
    if cuda is None:
        return True
    floor = run_floor(kb, cuda, windows)
    have = parse_version(driver)
    if floor is None or have is None:
        return None
    return have >= Version(floor)


def wheel_fix(facts: Facts, kb: KB, variant: TorchVariant, note: str) -> FixRef:
    """A torch-wheel fix naming exactly one wheel (options as recipes/torch_wheel.py reads
    them), with the pip command a person can run."""
    companions = [f"{name}=={version}" for name, version in (("torchvision", variant.torchvision), ("torchaudio", variant.torchaudio)) if version]
    if companions:
        note = f"{note}; if you use them, pin {' '.join(companions)} in the same command"
    return FixRef(
        recipe="torch-wheel",
        options={"torch": variant.torch, "variant": variant.variant, "python": facts.get("python.executable")},
        commands=(f"{_pip(facts)} install --force-reinstall {sh(f'torch=={variant.torch}')} --index-url {sh(variant.index_url)}",),
        note=note,
    )


def _recommended(kb: KB, facts: Facts, installed: str | None = None, cuda_only: bool = False) -> TorchVariant | None:
    """The wheel `fwdoctor select torch` picks for this host (one selection for check, fix,
    select and install); with `installed` ("2.9.1+cu130"), that release when one of its
    wheels fits, so the fix changes as little as it can; `cuda_only` for CUDA problems."""
    release = None
    if installed and installed != "?":
        try:
            release = Version(installed).public
        except InvalidVersion:
            release = None
    # Imported here: only a finding's fix asks it, and a healthy check never does (~4 ms).
    from fwdoctor import selection

    chosen = selection.recommend(kb, facts, prefer_release=release, cuda_only=cuda_only)
    return chosen.choice if chosen is not None else None


def torch_arch_list(facts: Facts, kb: KB) -> tuple[list[str], str]:
    """(arch list, where from): --deep's get_arch_list(), else the torch.arch_list fact, else
    the KB row of the installed official wheel. NotCheckable when none knows."""
    deep = facts.get("torch.deep")
    if isinstance(deep, dict) and deep.get("arch_list"):
        return list(deep["arch_list"]), "torch.cuda.get_arch_list()"
    if facts.known("torch.arch_list") and facts["torch.arch_list"]:
        return list(facts["torch.arch_list"]), facts.source("torch.arch_list") or "torch.arch_list"
    version = facts.get("torch.version")
    variant = kb.torch.variant_for(version) if version else None
    if variant is not None and variant.arch_list is not None:
        return [str(t) for t in arch.parse_targets(list(variant.arch_list))], f"KB torch.yaml {variant.local_version}"
    why = facts.why("torch.arch_list") if not facts.known("torch.arch_list") else f"no arch list for torch {version}"
    raise NotCheckable(f"arch list of torch {version or '?'} unknown ({why}); `fwdoctor check --deep` asks torch itself")


# --------------------------------------------------------------------------- rules
@rule("driver-too-old-for-torch", needs=("torch.cuda", "driver.version"), optional=("torch.version", "torch.deep", "python.version", "python.executable", "gpus.list", "pci.nvidia_gpus", *WINDOWS_KEYS))
def driver_too_old_for_torch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the NVIDIA driver version (/proc/driver/nvidia/version) with the lowest
        driver that can run the CUDA version the installed torch was built for
        (torch/version.py `cuda`). Within one CUDA major a driver at or above that major's
        floor runs every newer minor by minor-version compatibility (11.x: 450.80.02,
        12.x: 525.60.13, 13.x: 580.65.06); below the floor nothing of that major runs.
        Before CUDA 11 there was no minor-version compatibility: a CUDA 10.2 build needs
        the 10.2 toolkit's driver (440.33), a 9.2 one 396.26 (release notes Table 3); a
        Windows driver (a report from Windows or WSL 2) is held to Table 3's Windows column
        (10.2: 441.22).

    Why is this bad?
        torch imports, but CUDA never initialises: `torch.cuda.is_available()` is False
        with the warning "The NVIDIA driver on your system is too old (found version
        12020). Please update your GPU driver ... Alternatively, go to
        https://pytorch.org to install a PyTorch version that has been compiled with your
        version of the CUDA driver." and any `.cuda()` raises
        "RuntimeError: The NVIDIA driver on your system is too old".

    Example
        torch 2.14.1+cu130 (CUDA 13.0, needs driver >= 580.65.06) on a server whose driver
        is 550.127.05 (CUDA 12.4): invalid. The same server with torch 2.9.1+cu128 (CUDA
        12.8, 12.x floor 525.60.13): valid, by minor-version compatibility.

    Fix
        Install a torch wheel built for a CUDA this driver runs (the finding names it), or
        upgrade the driver to at least the floor:

            python -m pip install --force-reinstall torch==2.9.1 --index-url https://download.pytorch.org/whl/cu128
    """
    cuda = facts["torch.cuda"]
    driver = facts["driver.version"]
    if cuda is None or driver is None:
        return None  # a CPU build needs no driver; no driver at all is driver-missing/no-gpu
    windows = windows_driver(facts)
    runs = driver_runs(kb, driver, cuda, windows)
    if runs is None:
        raise NotCheckable(f"no driver floor in the KB for CUDA {cuda} (or driver {driver!r} is not a version)")
    if runs:
        return None
    floor = run_floor(kb, cuda, windows)
    capped = _gpus_capped_below(facts, kb, floor)
    if capped:
        # A driver upgrade is no fix where no driver that runs the GPU reaches the floor (a
        # GeForce 210 ends with R340, CUDA 10.0 needs 411.31): the GPU is the limit, and
        # gpu-arch-unsupported-by-torch says so (pytorch/pytorch#31876).
        raise NotCheckable(f"{capped} runs on no NVIDIA driver as new as {floor}, which CUDA {cuda} needs; "
                           "the GPU, not the driver, is what to change (see gpu-arch-unsupported-by-torch)")
    cuda_v = parse_version(cuda)
    major = cuda_v.major if cuda_v is not None else cuda
    # 11.x on: any driver of the major at the floor; 10.x and older: no minor-version
    # compatibility, so the floor is the toolkit's own driver (release notes Table 3).
    column = " Windows" if windows and kb.cuda.run_floor(cuda, windows=True) else ""
    why = f"CUDA {major}.x minor-version compatibility" if kb.cuda.has_minor_compat(cuda) else f"the CUDA {cuda} toolkit's{column} driver; CUDA {major} has no minor-version compatibility"
    version = facts.get("torch.version") or "?"
    evidence: dict[str, Any] = {"torch.version": version, "torch.cuda": cuda, "driver.version": driver, "driver_floor": floor}
    deep = facts.get("torch.deep")
    if isinstance(deep, dict) and deep.get("error"):
        evidence["torch.deep.error"] = deep["error"]
    best = _recommended(kb, facts, version, cuda_only=True)
    if best is not None and best.cuda is not None:
        note = f"install torch {best.local_version} (CUDA {best.cuda} runs on driver {driver}), or upgrade the driver to >= {floor}"
        fix = wheel_fix(facts, kb, best, note)
    else:
        fix = FixRef(note=f"upgrade the NVIDIA driver to >= {floor}; no official torch wheel in the KB runs on driver {driver}")
    return Hit(
        f"torch {version} is built for CUDA {cuda}, which needs NVIDIA driver >= {floor} ({why}); this host has {driver}",
        evidence=evidence,
        fix=fix,
    )


def _gpus_capped_below(facts: Facts, kb: KB, floor: str) -> str | None:
    """"GeForce 210 (last driver R340)" when every GPU the facts list is of a family whose
    newest driver is older than `floor`'s major; None when any GPU could run a driver that new,
    or no GPU's family is known. Pure."""
    from fwdoctor.kb.gpus import driver_branch

    floor_major = driver_branch(str(floor))
    gpus = [g for g in (facts.get("gpus.list") or []) if isinstance(g, dict)]
    if floor_major is None or not gpus:
        return None
    pci = facts.get("pci.nvidia_gpus") or []
    capped = []
    for gpu in gpus:
        cc = kb.gpus.cc_for_gpu(gpu, pci)
        newest = kb.gpus.newest_driver_major(str(cc), gpu.get("name")) if cc else None
        if newest is None or newest >= floor_major:
            return None
        capped.append(f"{gpu.get('name') or 'GPU ' + str(gpu.get('index', '?'))} (its newest driver: {newest}.xx)")
    return ", ".join(capped)


@rule(
    "gpu-arch-unsupported-by-torch",
    needs=("gpus.list", "torch.cuda"),
    optional=("torch.arch_list", "torch.deep", "torch.version", "driver.version", "pci.nvidia_gpus", "python.version", "python.executable"),
)
def gpu_arch_unsupported_by_torch(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        Judges each GPU (gpus.list, its compute capability) against the GPU architectures
        compiled into the installed torch: `torch.cuda.get_arch_list()` with --deep, else
        the official wheel's TORCH_CUDA_ARCH_LIST from the KB. A GPU of capability X.y runs
        a cubin sm_Xz with z <= y (same major) or JIT-compiles PTX compute_N with N <= X.y.

    Why is this bad?
        torch imports and sees the GPU, then the first kernel fails:
        "CUDA error: no kernel image is available for execution on the device", after the
        warning "NVIDIA ... with CUDA capability sm_XX is not compatible with the current
        PyTorch installation. The current PyTorch install supports CUDA capabilities
        sm_75 sm_80 ...".

    Example
        A Tesla V100 (7.0) with torch 2.14.1+cu130 (built for sm_75 ... sm_120): invalid,
        CUDA 13 wheels dropped Volta. The same GPU with torch 2.14.1+cu126 (5.0 ... 9.0):
        valid. An RTX 5090 (12.0) with torch 2.6.0+cu124 (up to sm_90, no PTX): invalid.

    Fix
        Install a wheel whose arch list covers every GPU (the finding names one), or build
        torch from source with TORCH_CUDA_ARCH_LIST set to your GPUs:

            python -m pip install --force-reinstall torch==2.14.1 --index-url https://download.pytorch.org/whl/cu126
    """
    if facts["torch.cuda"] is None:
        return None  # a CPU build: torch-cpu-build-on-gpu-host says so
    gpus = [g for g in facts["gpus.list"] or [] if isinstance(g, dict)]
    if not gpus:
        return None
    # A GPU's capability as reported, else from its name or PCI id via the GPU KB (the
    # proc files a root folder offers carry no capability).
    pci = facts.get("pci.nvidia_gpus") or []
    # (GPU, capability) pairs: a GPU is copied whole (with its cc) only into a finding's
    # evidence, so a fleet report reuses this rule's "fine" for nodes whose GPUs differ
    # only in fields it never reads (UUIDs; fwdoctor.fleet.judging.Fields).
    with_cc = [(gpu, cc) for gpu in gpus if (cc := kb.gpus.cc_for_gpu(gpu, pci))]
    if not with_cc:
        raise NotCheckable("no GPU's compute capability is known (gpus.list has no cc)")
    targets, origin = torch_arch_list(facts, kb)
    try:
        parsed = arch.parse_targets(targets)
    except ValueError as exc:
        raise NotCheckable(f"torch arch list from {origin} is unreadable: {exc}") from None
    # A GPU whose capability is unknown or unreadable is not judged; with no GPU failing,
    # the verdict is "not checked" (naming it), never "fine" (STYLE: an unknown never looks healthy).
    unknown = unjudged_gpus(gpus, with_cc)
    bad: dict[str, list[dict]] = {}
    for gpu, cc in with_cc:
        try:
            verdict = arch.runs_on(parsed, str(cc))
        except ValueError:
            unknown.append(f"{gpu.get('name') or 'GPU ' + str(gpu.get('index', '?'))} (compute capability {cc!r} is not a version)")
            continue
        if not verdict:
            bad.setdefault(str(cc), []).append({**gpu, "cc": cc})
    if not bad:
        if unknown:
            raise NotCheckable(f"compute capability unknown for {', '.join(unknown)}")
        return None
    version = facts.get("torch.version") or "?"
    every_cc = sorted({str(cc) for _, cc in with_cc}, key=arch.cc_key)
    best = _recommended(kb, facts, version, cuda_only=True)
    if best is not None and (best.cuda is None or best.arch_list is None):
        best = None
    hits = []
    for cc, group in sorted(bad.items(), key=lambda kv: arch.cc_key(kv[0])):
        names = ", ".join(f"{g.get('index', '?')}: {g.get('name') or 'GPU'}" for g in group)
        if best is not None:
            fix = wheel_fix(facts, kb, best, f"install torch {best.local_version}, built for {';'.join(best.arch_list or ())}")
        else:
            fix = FixRef(
                recipe="torch-source",
                options={"arch_list": ";".join(every_cc)},
                note=f"no official wheel in the KB covers compute capability {', '.join(every_cc)} on this driver; build torch with TORCH_CUDA_ARCH_LIST={';'.join(every_cc)}",
            )
        hits.append(
            Hit(
                f"GPU {names} (compute capability {cc}, {arch.sm_name(cc)}) has no kernel in torch {version}, built for {' '.join(targets)}: \"{NO_KERNEL}\"",
                evidence={"gpus": group, "torch.version": version, "arch_list": targets, "arch_list_from": origin},
                fix=fix,
            )
        )
    return hits


@rule("gpu-arch-unsupported-by-torch", needs=("gpus.list", "torch.version"), optional=("torch.cuda", "pci.nvidia_gpus"))
def gpu_below_every_wheel_of_release(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        Where torch's release is known and its CUDA build is not (a `pip list` line
        "torch 2.1.0", a report without collect_env), judges each GPU against every CUDA
        wheel of that release in the KB: a GPU none of them has kernels for fails whichever
        was installed. Where torch's CUDA is known, gpu_arch_unsupported_by_torch judges the
        exact wheel instead; a release the KB does not list is not judged.

    Why is this bad?
        torch imports and may even see the GPU; the first kernel fails with "CUDA error: no
        kernel image is available for execution on the device". Old GPUs are dropped from
        the official wheels release by release (compute capability 3.0 in 0.4.1,
        pytorch/pytorch#14681; 3.5 in 1.3, pytorch/pytorch#30376; Maxwell and Pascal in the
        CUDA 12.8 builds, kb/torch.yaml), so another wheel of the same release does not help.

    Example
        A Tesla K40 (3.5) with torch 2.1.0: its cu118 wheel starts at sm_37, its cu121
        wheel at sm_50. Invalid. An RTX 3090 (8.6) with torch 2.1.0: every wheel has sm_86.

    Fix
        Use a GPU the release supports, or build torch from source for the GPU with a CUDA
        toolkit that still compiles for it:

            TORCH_CUDA_ARCH_LIST=3.5 python setup.py develop   # CUDA 11.x still targets sm_35
    """
    if facts.known("torch.cuda"):
        return None  # the exact wheel is known: gpu_arch_unsupported_by_torch judges it
    version = facts["torch.version"]
    if not version:
        return None  # torch is not installed: torch-not-installed's business
    wheels = [v for v in kb.torch.variants_of(str(version)) if v.cuda is not None]
    if not wheels:
        raise NotCheckable(f"torch {version} is not in the KB's wheel table")
    if any(v.arch_list is None for v in wheels):
        raise NotCheckable(f"the arch list of a CUDA wheel of torch {version} is unconfirmed in the KB")
    pci = facts.get("pci.nvidia_gpus") or []
    gpus = [g for g in facts["gpus.list"] or [] if isinstance(g, dict)]
    with_cc = [(gpu, cc) for gpu in gpus if (cc := kb.gpus.cc_for_gpu(gpu, pci))]
    if not with_cc:
        raise NotCheckable("no GPU's compute capability is known (gpus.list has no cc)")
    lowest = min((t for v in wheels for t in arch.parse_targets(list(v.arch_list or ()))), key=lambda t: arch.cc_key(t.cc))
    unknown = unjudged_gpus(gpus, with_cc)
    hits = []
    for gpu, cc in with_cc:
        try:
            if any(arch.runs_on(list(v.arch_list or ()), str(cc)) for v in wheels):
                continue
        except ValueError:
            unknown.append(f"{gpu.get('name') or 'GPU ' + str(gpu.get('index', '?'))} (compute capability {cc!r} is not a version)")
            continue
        name = gpu.get("name") or "GPU"
        builds = ", ".join(v.variant for v in wheels)
        hits.append(Hit(
            f"GPU {gpu.get('index', '?')}: {name} (compute capability {cc}, {arch.sm_name(str(cc))}) has no kernel in any CUDA wheel of torch {version} "
            f"({builds}; the oldest architecture any of them is built for is {lowest.cc}): \"{NO_KERNEL}\"",
            evidence={"gpus": [{**gpu, "cc": cc}], "torch.version": version, "wheels": {v.variant: list(v.arch_list or ()) for v in wheels}},
            fix=FixRef(recipe="torch-source", options={"arch_list": str(cc)},
                       note=f"no official torch {version} wheel runs on compute capability {cc}: use a GPU the wheels support, "
                            f"or build torch from source with TORCH_CUDA_ARCH_LIST={cc} and a CUDA toolkit that still compiles for {arch.sm_name(str(cc))}"),
        ))
    if not hits and unknown:
        raise NotCheckable(f"compute capability unknown for {', '.join(unknown)}")
    return hits


def unjudged_gpus(gpus: list[dict[str, Any]], with_cc: list[tuple[dict[str, Any], Any]]) -> list[str]:
    """The GPUs of `gpus` left out of `with_cc` (no capability reported, none found by name or
    PCI id), by name: what a rule that judges GPUs by capability could not judge."""
    judged = {id(gpu) for gpu, _ in with_cc}
    return [str(g.get("name") or f"GPU {g.get('index', '?')}") for g in gpus if id(g) not in judged]


def _gpu_present(facts: Facts) -> bool | None:
    """True/False when some fact says; None when neither gpus.list nor the PCI scan is known."""
    answers = []
    for key in ("gpus.list", "pci.nvidia_gpus"):
        if facts.known(key):
            answers.append(bool(facts[key]))
    return any(answers) if answers else None


@rule(
    "torch-cpu-build-on-gpu-host",
    needs=("torch.installed", "torch.cuda", "driver.loaded"),
    optional=("gpus.list", "pci.nvidia_gpus", "torch.version", "driver.version", "python.version", "python.executable"),
)
def torch_cpu_build_on_gpu_host(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reports a torch without CUDA (torch/version.py `cuda = None`, e.g. 2.13.0+cpu or a
        macOS/ROCm-style build) installed on a host with an NVIDIA GPU and a loaded NVIDIA
        driver.

    Why is this bad?
        Everything runs, on the CPU: `torch.cuda.is_available()` is False and `.cuda()`
        raises "AssertionError: Torch not compiled with CUDA enabled". Usually it came from
        `--index-url .../whl/cpu`, a requirements file pinned to `+cpu`, or a conda
        `cpuonly` package.

    Example
        torch 2.13.0+cpu on a host with an H100 and driver 580.95.05: invalid.
        torch 2.13.0+cpu on a CPU-only CI runner: valid (nothing to use).

    Fix
        Reinstall the CUDA build of the same torch release that this driver runs:

            python -m pip install --force-reinstall torch==2.13.0 --index-url https://download.pytorch.org/whl/cu130
    """
    if not facts["torch.installed"] or facts["torch.cuda"] is not None:
        return None
    present = _gpu_present(facts)
    if present is None:
        raise NotCheckable("whether this host has an NVIDIA GPU is unknown (gpus.list and pci.nvidia_gpus unknown)")
    if not present or not facts["driver.loaded"]:
        return None
    version = facts.get("torch.version") or "?"
    driver = facts.get("driver.version")
    choice = _recommended(kb, facts, version, cuda_only=True)
    if choice is not None and choice.cuda is None:
        choice = None
    gpus = facts.get("gpus.list") or facts.get("pci.nvidia_gpus") or []
    fix = (
        wheel_fix(facts, kb, choice, f"install the CUDA build torch {choice.local_version}")
        if choice is not None
        else FixRef(recipe="torch-wheel", note="install a CUDA build of torch")
    )
    return Hit(
        f"torch {version} is a CPU-only build, but this host has {len(gpus)} NVIDIA GPU{'s' if len(gpus) != 1 else ''} and driver {driver or '(loaded)'}: nothing will run on the GPU",
        evidence={"torch.version": version, "torch.cuda": None, "torch.location": facts.get("torch.location"), "driver.version": driver},
        fix=fix,
    )


@rule("torch-not-installed", needs=("torch.installed",), optional=("python.executable", "python.site_packages", "driver.version", "python.version", "frameworks.installed"))
def torch_not_installed(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Looks for torch (a torch/ package or a torch-*.dist-info) in the inspected
        interpreter's import path: $PYTHONPATH, the user site, its site-packages.

    Why is this bad?
        Nothing is wrong with the host, but the torch checks (driver, GPU architectures,
        cuDNN/NCCL pairing) are skipped; if you expected torch here, you are probably
        looking at the wrong interpreter: "ModuleNotFoundError: No module named 'torch'".

    Example
        `fwdoctor check` run with the system python3 while torch lives in ~/venvs/train:
        pass `--python ~/venvs/train/bin/python` (or activate the venv) instead. An
        environment holding JAX, TensorFlow or PaddlePaddle instead is not reported.

    Fix
        Inspect the right interpreter, or install torch into this one:

            fwdoctor check --python /path/to/venv/bin/python
            python -m pip install torch
    """
    if facts["torch.installed"]:
        return None
    if facts.get("frameworks.installed"):
        return None  # a JAX/TensorFlow/Paddle environment: no torch is expected there
    python = facts.get("python.executable") or "this interpreter"
    choice = _recommended(kb, facts)
    commands = ["fwdoctor check --python /path/to/the/venv/bin/python"]
    fix = None
    if choice is not None:
        fix = wheel_fix(facts, kb, choice, f"inspect the interpreter that has torch, or install torch {choice.local_version}")
        fix = FixRef(recipe=fix.recipe, options=fix.options, commands=(*commands, *fix.commands), note=fix.note)
    return Hit(
        f"no torch in the environment of {python} (searched {', '.join(facts.get('python.site_packages') or []) or 'no site dirs'})",
        evidence={"python.executable": facts.get("python.executable"), "python.site_packages": facts.get("python.site_packages")},
        fix=fix or FixRef(commands=tuple(commands)),
    )


RULES: tuple[Rule, ...] = (
    driver_too_old_for_torch,
    gpu_arch_unsupported_by_torch,
    gpu_below_every_wheel_of_release,
    torch_cpu_build_on_gpu_host,
    torch_not_installed,
)
