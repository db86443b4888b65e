"""JAX, TensorFlow and PaddlePaddle rules: the torch rules generalised to every framework in
the environment (driver floor, GPU targets, CPU-only build, nvidia-* wheels, ptxas, jax's
package pairing, a GPU the framework does not use) and the cross-framework one: two
frameworks whose nvidia-* requirements cannot both hold.

Pure functions of (Facts, KB). The frameworks' own files say what they were built for
(frameworks.installed); kb.frameworks says what each release requires where the installed
files do not; driver floors come from kb.cuda (minor-version compatibility).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fwdoctor import arch
from fwdoctor.kb.frameworks import TITLES
from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule, sh
from fwdoctor.rules.torch import WINDOWS_KEYS, driver_runs, run_floor, unjudged_gpus, windows_driver
from fwdoctor.versions import major_minor, parse_version

if TYPE_CHECKING:
    from fwdoctor.kb import KB
    from fwdoctor.kb.frameworks import Build, FrameworkRelease


# --------------------------------------------------------------------------- helpers
def _python_minor(facts: Facts) -> str | None:
    version = facts.get("python.version")
    return major_minor(version, pad=False) if isinstance(version, str) else None


def _pip(facts: Facts) -> str:
    python = facts.get("python.executable")
    return f"{sh(python)} -m pip" if python else "python3 -m pip"


def _gpu_present(facts: Facts) -> bool | None:
    """True/False when gpus.list or the PCI scan says; None when neither is known."""
    answers = [bool(facts[key]) for key in ("gpus.list", "pci.nvidia_gpus") if facts.known(key)]
    return any(answers) if answers else None


def installed(facts: Facts) -> list[dict[str, Any]]:
    return [f for f in facts["frameworks.installed"] or [] if isinstance(f, dict) and f.get("framework")]


def label(item: dict[str, Any]) -> str:
    """"JAX 0.10.2 (jax-cuda13-plugin 0.10.2)", "TensorFlow 2.21.0"."""
    text = f"{TITLES.get(item['framework'], item['framework'])} {item.get('version') or '?'}"
    plugins = [f"{n} {v}" for n, v in (item.get("packages") or {}).items() if n.endswith("-plugin")]
    return text + (f" ({', '.join(plugins)})" if plugins else "")


def _release(kb: KB, item: dict[str, Any]) -> FrameworkRelease | None:
    return kb.frameworks.release(item["framework"], item.get("version"))


def _build(kb: KB, item: dict[str, Any]) -> Build | None:
    release = _release(kb, item)
    if release is None:
        return None
    if item["framework"] == "jax":
        return release.build(item.get("cuda"))
    return release.builds[0] if release.builds else None


def framework_cuda(kb: KB, item: dict[str, Any]) -> str | None:
    """The CUDA a GPU build needs: TensorFlow's and Paddle's build_info, JAX's plugin from
    the KB (its nvidia-cuda-runtime floor), else the plugin's major ("13.0")."""
    if not item.get("gpu_build"):
        return None
    if item["framework"] == "jax":
        build = _build(kb, item)
        if build is not None and build.cuda:
            return build.cuda
        return f"{item['cuda']}.0" if item.get("cuda") else None
    return str(item["cuda"]) if item.get("cuda") else None


def satisfies(version: str, spec: str) -> bool | None:
    try:
        return SpecifierSet(spec).contains(Version(version), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return None


def _bounds(spec: str) -> list[str]:
    out = []
    for clause in SpecifierSet(spec):
        if clause.operator in (">=", "==", "~=", "==="):
            out.append(clause.version.rstrip(".*"))
    return out


def common_version(a: str, b: str, also: Iterable[str] = ()) -> str | None:
    """The highest version named by either specifier (or `also`) that both allow: a real
    release each requirement mentions, so pip can install it. None when none does."""
    candidates = {*_bounds(a), *_bounds(b), *also}
    good = [c for c in candidates if satisfies(c, a) and satisfies(c, b)]
    return max(good, key=Version) if good else None


def _requirements(facts: Facts) -> list[tuple[str, dict[str, str]]]:
    """(who, {nvidia dist: spec}) for torch and every framework whose CUDA wheels are in use."""
    out: list[tuple[str, dict[str, str]]] = []
    if facts.get("torch.installed") and isinstance(facts.get("torch.requires"), dict):
        pins = {n: s for n, s in facts["torch.requires"].items() if n.startswith("nvidia-")}
        if pins:
            out.append((f"torch {facts.get('torch.version') or '?'}", pins))
    for item in installed(facts):
        if item.get("requires"):
            out.append((label(item), dict(item["requires"])))
    return out


def install_fix(facts: Facts, kb: KB, framework: str, cuda_major: str | None, version: str | None, note: str) -> FixRef:
    """The pip command that installs `framework` `version` with its CUDA wheels."""
    pip = _pip(facts)
    pin = f"=={version}" if version else ""
    if framework == "jax":
        extra = f"[cuda{cuda_major}]" if cuda_major else ""
        commands: tuple[str, ...] = (f"{pip} install -U {sh(f'jax{extra}{pin}')}",)
    elif framework == "tensorflow":
        commands = (f"{pip} uninstall -y tensorflow-cpu", f"{pip} install {sh(f'tensorflow[and-cuda]{pin}')}")
    else:
        commands = (f"{pip} uninstall -y paddlepaddle", f"{pip} install {sh(f'paddlepaddle-gpu{pin}')}")
    return FixRef(commands=commands, note=note)


def newest_runnable(kb: KB, facts: Facts, framework: str, driver: str | None) -> tuple[FrameworkRelease, Build] | None:
    """The newest KB release of `framework` with a GPU build this driver and Python run."""
    python = _python_minor(facts)
    best = None
    for release in kb.frameworks.releases(framework):
        for build in release.gpu_builds():
            if python and build.pythons and python not in build.pythons:
                continue
            if driver and driver_runs(kb, driver, build.cuda) is not True:
                continue
            key = (Version(release.version), Version(build.cuda or "0"))
            if best is None or key > best[0]:
                best = (key, release, build)
    return (best[1], best[2]) if best else None


def _major(cuda: str | None) -> str | None:
    v = parse_version(cuda) if cuda else None
    return str(v.major) if v is not None else None


# --------------------------------------------------------------------------- rules
@rule("driver-too-old-for-framework", needs=("frameworks.installed", "driver.version"), optional=("python.version", "python.executable", "frameworks.deep", *WINDOWS_KEYS))
def driver_too_old_for_framework(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        For each GPU build of JAX, TensorFlow or PaddlePaddle in the environment, compares
        the NVIDIA driver with the lowest driver that runs the CUDA the build needs: the
        CUDA TensorFlow's build_info.py and Paddle's version file name, or the CUDA runtime
        floor of the JAX plugin (jax-cuda12-plugin: 12.1, jax-cuda13-plugin: 13.0). Within
        a CUDA major the floor is that major's minor-version-compatibility driver (12.x:
        525.60.13, 13.x: 580.65.06), the figure JAX's and TensorFlow's install pages give.

    Why is this bad?
        The framework imports, sees no GPU and runs everything on the CPU: `jax.devices()`
        lists only CPU devices ("Unknown backend: 'gpu' requested, but no platforms that are
        instances of gpu are present"), `tf.config.list_physical_devices('GPU')` is empty
        and TensorFlow logs "failed call to cuInit".

    Example
        jax 0.10.2 with jax-cuda13-plugin (CUDA 13, driver >= 580.65.06) on a driver
        550.127.05: invalid. The same host with `jax[cuda12]` 0.10.2 (CUDA 12.x, 525.60.13):
        valid. TensorFlow 2.21.0 (CUDA 12.5.1) on driver 535.104.05: valid.

    Fix
        Install the build for a CUDA this driver runs (the finding names it), or upgrade the
        driver to at least the floor:

            python -m pip install -U "jax[cuda12]==0.10.2"
    """
    driver = facts["driver.version"]
    if driver is None:
        return None
    hits, unknown = [], []
    windows = windows_driver(facts)  # a Windows driver meets Table 3's Windows column
    for item in installed(facts):
        cuda = framework_cuda(kb, item)
        if cuda is None:
            if item.get("gpu_build"):  # a GPU build whose CUDA nobody showed is unknown, not healthy
                unknown.append(f"{label(item)}: the CUDA its build needs is not shown")
            elif item.get("gpu_build") is None and not cpu_only(kb, item) and not _runs_if_gpu_build(kb, item, driver, windows):
                # a report that names the release only (TensorFlow's issue template): a CPU
                # build needs no driver, a GPU build might need a newer one
                unknown.append(f"{label(item)}: whether it is a GPU build (and for which CUDA) is not shown")
            continue
        runs = driver_runs(kb, driver, cuda, windows)
        if runs is None:
            unknown.append(f"{label(item)}: no driver floor in the KB for CUDA {cuda}")
            continue
        if runs:
            continue
        floor = run_floor(kb, cuda, windows)
        best = newest_runnable(kb, facts, item["framework"], driver)
        if best is not None:
            release, build = best
            fix = install_fix(facts, kb, item["framework"], _major(build.cuda), release.version, f"install {TITLES[item['framework']]} {release.version} for CUDA {build.cuda} (runs on driver {driver}), or upgrade the driver to >= {floor}")
        else:
            fix = FixRef(note=f"upgrade the NVIDIA driver to >= {floor}")
        hits.append(
            Hit(
                f"{label(item)} needs CUDA {cuda}, which needs NVIDIA driver >= {floor}; this host has {driver}: it will run on the CPU only",
                evidence={"framework": item["framework"], "version": item.get("version"), "cuda": cuda, "driver.version": driver, "driver_floor": floor},
                fix=fix,
            )
        )
    if unknown and not hits:
        raise NotCheckable("; ".join(unknown))
    return hits


def _runs_if_gpu_build(kb: KB, item: dict[str, Any], driver: str, windows: bool) -> bool:
    """Whether `driver` runs `item` even if it is a GPU build: its CUDA is shown and meets the floor."""
    return bool(item.get("cuda")) and driver_runs(kb, driver, str(item["cuda"]), windows) is True


@rule("gpu-arch-unsupported-by-framework", needs=("frameworks.installed", "gpus.list"), optional=("pci.nvidia_gpus", "driver.version", "python.version", "python.executable"))
def gpu_arch_unsupported_by_framework(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        Judges each GPU's compute capability against the GPU targets a framework's wheel
        ships, where the framework publishes them: TensorFlow's build_info.py
        `cuda_compute_capabilities` (2.21.0: sm_60 sm_70 sm_80 sm_89 compute_90) and
        Paddle 3's `compiled_cuda_archs`. A GPU of capability X.y runs sm_Xz with z <= y or
        JIT-compiles compute_N with N <= X.y. JAX publishes no list: not checked.

    Why is this bad?
        TensorFlow lists the GPU, then kernels fail: "Status: device kernel image is
        invalid" (TensorFlow's pip page), or JIT-compiles PTX for minutes at start-up.

    Example
        TensorFlow 2.21.0 on a Tesla P4 (6.1, covered by sm_60): valid. On a Tesla K80
        (3.7): invalid, no sm_3x target and the PTX is compute_90.

    Fix
        Use a GPU the wheel targets, an older release built for it, or build from source
        with the GPU's capability (TensorFlow: TF_CUDA_COMPUTE_CAPABILITIES).
    """
    gpus = [g for g in facts["gpus.list"] or [] if isinstance(g, dict)]
    if not gpus:
        return None
    pci = facts.get("pci.nvidia_gpus") or []
    # (GPU, capability) pairs; a GPU is copied whole only into a finding (see
    # gpu_arch_unsupported_by_torch: a fleet reuses "fine" across GPU UUIDs).
    with_cc = [(g, cc) for g in gpus if (cc := kb.gpus.cc_for_gpu(g, pci))]
    hits, unknown = [], []
    judged = False
    # A build not known to be CPU-only (gpu_build None: a report naming the release only) is
    # judged too: covered, it is fine either way; not covered, it is unknown, not an error.
    for item in [i for i in installed(facts) if i.get("gpu_build") or (i.get("gpu_build") is None and not cpu_only(kb, i))]:
        targets = item.get("arch_list")
        build = _build(kb, item)
        if not targets and build is not None and build.arch_list:
            targets = list(build.arch_list)
        if not targets:
            unknown.append(f"{label(item)} publishes no GPU target list")
            continue
        if not with_cc:
            raise NotCheckable("no GPU's compute capability is known (gpus.list has no cc)")
        try:
            parsed = arch.parse_targets(list(targets))
        except ValueError as exc:
            unknown.append(f"{label(item)}'s GPU target list is unreadable ({exc})")
            continue
        judged = True
        for found, cc in with_cc:
            try:
                if arch.runs_on(parsed, str(cc)):
                    continue
            except ValueError:
                unknown.append(f"{found.get('name') or 'a GPU'}: compute capability {cc!r} is not a version")
                continue
            if item.get("gpu_build") is None:
                unknown.append(f"{label(item)}: whether it is a GPU build is not shown (its GPU build has no kernel for compute capability {cc})")
                continue
            gpu = {**found, "cc": cc}
            hits.append(
                Hit(
                    f"GPU {gpu.get('index', '?')}: {gpu.get('name') or 'GPU'} (compute capability {gpu['cc']}) has no kernel in {label(item)}, built for {' '.join(targets)}",
                    evidence={"framework": item["framework"], "gpu": gpu, "arch_list": list(targets)},
                    fix=FixRef(note=f"build {TITLES[item['framework']]} from source for compute capability {gpu['cc']}, or run it on a GPU it targets"),
                )
            )
    if judged:  # a GPU whose capability is unknown was judged against no build
        unknown += [f"{name}: compute capability unknown" for name in unjudged_gpus(gpus, with_cc)]
    if unknown and not hits:
        raise NotCheckable("; ".join(unknown))
    return hits


def cpu_only(kb: KB, item: dict[str, Any]) -> bool:
    """Whether an installed framework is a CPU-only build: its packages say so (gpu_build
    False), or it runs where its release has no GPU build (TensorFlow >= 2.11 on native
    Windows: frameworks.yaml `platforms`, the last GPU release there per platform)."""
    if item.get("gpu_build") is False:
        return True
    if item.get("native_windows") and item.get("framework"):
        return kb.frameworks.cpu_only_on(str(item["framework"]), "windows", item.get("version")) is True
    return False


def cpu_only_why(kb: KB, item: dict[str, Any]) -> str:
    """Why `item` is CPU-only, in words (the KB's last GPU release where it is the platform)."""
    limit = kb.frameworks.gpu_last(str(item.get("framework")), "windows") if item.get("native_windows") else None
    if limit is not None and item.get("gpu_build") is not False:
        if limit.gpu_last is None:
            return f"{TITLES.get(limit.framework, limit.framework)} has no GPU build for native Windows"
        return f"{TITLES.get(limit.framework, limit.framework)} {limit.gpu_last} was the last release with GPU support on native Windows"
    return str(item.get("why") or "no GPU support")


def native_windows_fix(framework: str) -> FixRef:
    """The fix for `framework`'s CPU-only build on native Windows: TensorFlow's (2.10, or WSL2);
    for JAX, which never had a native-Windows GPU build (its installation page's platform table),
    WSL2's Linux build."""
    if framework == "tensorflow":
        return windows_tensorflow_fix()
    inside = "python3 -m pip install -U 'jax[cuda12]'" if framework == "jax" else f"install {TITLES.get(framework, framework)}'s Linux GPU build"
    return FixRef(commands=(f"wsl --install   # then, inside WSL2: {inside}",),
                  note=f"{TITLES.get(framework, framework)} publishes no GPU build for native Windows; use WSL2 (or Linux)")


def windows_tensorflow_fix() -> FixRef:
    """TensorFlow >= 2.11 has no native-Windows GPU build: WSL2, or TensorFlow 2.10 (TensorFlow
    2.11.1's release notes: "TensorFlow 2.10 was the last TensorFlow release that supported GPU on
    native-Windows", https://github.com/tensorflow/tensorflow/releases/tag/v2.11.1)."""
    return FixRef(commands=("wsl --install   # then, inside WSL2: python3 -m pip install 'tensorflow[and-cuda]'",
                            "python -m pip install 'tensorflow<2.11'   # or stay native: 2.10 was the last native-Windows GPU release"),
                  note="TensorFlow 2.11 and later have no GPU support on native Windows (TensorFlow 2.11.1 release notes)")


@rule("framework-cpu-build-on-gpu-host", needs=("frameworks.installed", "driver.loaded"), optional=("gpus.list", "pci.nvidia_gpus", "driver.version", "python.version", "python.executable"))
def framework_cpu_build_on_gpu_host(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        Reports JAX without a CUDA plugin (jax + jaxlib only), tensorflow-cpu (or a
        TensorFlow whose build_info says is_cuda_build False) and paddlepaddle (the CPU
        wheel) on a host with an NVIDIA GPU and a loaded driver.

    Why is this bad?
        Everything runs on the CPU, silently: `jax.devices()` is `[CpuDevice(id=0)]`,
        `tf.config.list_physical_devices('GPU')` is `[]`,
        `paddle.device.is_compiled_with_cuda()` is False.

    Example
        jax 0.10.2 + jaxlib 0.10.2 on a host with an H100 and driver 580.95.05: invalid.
        The same on a CPU-only CI runner: valid.

    Fix
        Install the CUDA build this driver runs (the finding names it):

            python -m pip install -U "jax[cuda13]==0.10.2"
            python -m pip uninstall -y tensorflow-cpu && python -m pip install "tensorflow[and-cuda]==2.21.0"
    """
    cpu = [i for i in installed(facts) if cpu_only(kb, i)]
    if not cpu:
        return None
    present = _gpu_present(facts)
    if present is None:
        raise NotCheckable("whether this host has an NVIDIA GPU is unknown (gpus.list and pci.nvidia_gpus unknown)")
    if not present or not facts["driver.loaded"]:
        return None
    driver = facts.get("driver.version")
    hits = []
    for item in cpu:
        framework = item["framework"]
        best = newest_runnable(kb, facts, framework, driver)
        # Prefer the installed release's own GPU build when the driver runs it.
        release = _release(kb, item)
        same = [b for b in release.gpu_builds() if not driver or driver_runs(kb, driver, b.cuda) is True] if release else []
        if same:
            build = max(same, key=lambda b: Version(b.cuda or "0"))
            best = (release, build)  # type: ignore[assignment]
        if item.get("native_windows"):  # TensorFlow >= 2.11, JAX on native Windows (triage's readers): no CUDA build to install
            fix = native_windows_fix(framework)
        elif best is not None:
            fix = install_fix(facts, kb, framework, _major(best[1].cuda), best[0].version, f"install the CUDA {best[1].cuda} build of {TITLES[framework]} {best[0].version}")
        else:
            fix = install_fix(facts, kb, framework, None, None, f"install a CUDA build of {TITLES[framework]}")
        hits.append(
            Hit(
                f"{label(item)} is a CPU-only build ({', '.join(item.get('packages') or {})}), but this host has an NVIDIA GPU and driver {driver or '(loaded)'}: nothing will run on the GPU",
                evidence={"framework": framework, "version": item.get("version"), "packages": item.get("packages"), "driver.version": driver},
                fix=fix,
            )
        )
    return hits


@rule("framework-nvidia-wheel-mismatch", needs=("frameworks.installed", "frameworks.nvidia_wheels"), optional=("torch.installed", "torch.requires", "torch.version", "cudnn.installs", "gpus.list", "pci.nvidia_gpus", "python.executable"))
def framework_nvidia_wheel_mismatch(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        For each framework installed with its CUDA wheels (`jax[cuda13]` = the plugin's
        `with-cuda` extra, `tensorflow[and-cuda]`), checks every nvidia-* wheel that extra
        requires against the installed one (Requires-Dist verbatim from the wheel). Also a
        TensorFlow GPU build with neither its nvidia-cudnn wheel nor a system cuDNN of the
        major it was built with. A version another framework in the environment requires is
        left to frameworks-nvidia-conflict.

    Why is this bad?
        The framework loads the wrong library or none: TensorFlow logs "Loaded runtime
        CuDNN library: 8.6.0 but source was compiled with: 8.9.4" or "Could not load dynamic
        library 'libcudnn.so.8'" then "Cannot dlopen some GPU libraries" and uses the CPU;
        JAX refuses a cuDNN or NCCL older than its floor at start-up.

    Example
        jax 0.10.2 + jax-cuda13-plugin[with-cuda] with nvidia-cudnn-cu13 9.8.0.87
        (requires >=9.12.0.46,<10.0): invalid. With 9.24.0.43: valid.

    Fix
        Reinstall the framework with its extra so pip puts the required versions back:

            python -m pip install -U "jax[cuda13]==0.10.2"
    """
    have = facts["frameworks.nvidia_wheels"] or {}
    others = _requirements(facts)
    hits = []
    for item in installed(facts):
        requires = item.get("requires") or {}
        who = label(item)
        for dist, spec in sorted(requires.items()):
            version = have.get(dist)
            if version is not None and satisfies(version, spec) is not False:
                continue
            # Held at this version by another framework: that is the cross-framework finding.
            if version is not None and any(o != who and dist in req and satisfies(version, req[dist]) for o, req in others):
                continue
            state = f"{dist} {version} is installed" if version else f"{dist} is not installed"
            hits.append(
                Hit(
                    f"{who} requires {dist}{spec or ''} ({item.get('requires_from')}); {state}",
                    evidence={"framework": item["framework"], "package": dist, "requires": spec, "installed": version},
                    fix=FixRef(commands=(f"{_pip(facts)} install {sh(f'{dist}{spec}')}",), note=f"put back the {dist} {who} requires"),
                )
            )
        # TensorFlow finds cuDNN in the nvidia-* wheels or the system; with neither it drops the GPU.
        if item["framework"] == "tensorflow" and item.get("gpu_build") and not requires and _gpu_present(facts) and facts.known("cudnn.installs"):
            wanted = _major(item.get("cudnn"))
            found = [c for c in facts["cudnn.installs"] or [] if isinstance(c, dict) and _major(c.get("library_version") or c.get("header_version")) == wanted]
            if wanted and not found:
                hits.append(
                    Hit(
                        f"{who} was built with cuDNN {item.get('cudnn')} (CUDA {item.get('cuda')}), but neither its nvidia-cudnn wheel nor a system cuDNN {wanted} is installed: \"Cannot dlopen some GPU libraries\", TensorFlow runs on the CPU",
                        evidence={"framework": "tensorflow", "cudnn": item.get("cudnn"), "cudnn.installs": facts["cudnn.installs"]},
                        fix=install_fix(facts, kb, "tensorflow", None, item.get("version"), "install TensorFlow with its CUDA wheels"),
                    )
                )
    return hits


@rule("frameworks-nvidia-conflict", needs=("frameworks.installed", "frameworks.nvidia_wheels"), optional=("torch.installed", "torch.requires", "torch.version", "python.executable"))
def frameworks_nvidia_conflict(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        Looks at every pair of frameworks in one environment (torch, JAX, TensorFlow,
        Paddle) that require the same nvidia-* wheel (torch's Requires-Dist pins, the CUDA
        extras of the others) and reports each wheel whose installed version satisfies one
        and breaks the other, or whose two requirements no version satisfies. It names the
        installed version, which framework it breaks, and a version both accept when the
        requirements name one.

    Why is this bad?
        pip keeps one version of each wheel per environment: whichever framework was
        installed last wins, and the other loads a cuDNN or NCCL it was not built for
        (JAX refuses it at start-up; torch fails in its first convolution or collective).
        `pip check` reports it as "has requirement ..., but you have ...".

    Example
        torch 2.14.1+cu130 (nvidia-cudnn-cu13==9.24.0.43) with jax-cuda13-plugin 0.10.2
        (>=9.12.0.46,<10.0) and nvidia-cudnn-cu13 9.28.1.4 installed: invalid, torch is
        broken; 9.24.0.43 satisfies both. TensorFlow 2.19.1 (nvidia-cudnn-cu12==9.3.0.75)
        with jax-cuda12-plugin 0.9.2 (>=9.8,<10.0): invalid whatever is installed.

    Fix
        Install the version both accept when one exists, else give each framework its own
        virtual environment:

            python -m pip install nvidia-cudnn-cu13==9.24.0.43
            python -m venv ~/venvs/jax && ~/venvs/jax/bin/pip install "jax[cuda13]"
    """
    have = facts["frameworks.nvidia_wheels"] or {}
    reqs = _requirements(facts)
    hits = []
    for i, (a, ra) in enumerate(reqs):
        for b, rb in reqs[i + 1:]:
            for dist in sorted(set(ra) & set(rb)):
                sa, sb = ra[dist], rb[dist]
                version = have.get(dist)
                ok_a = satisfies(version, sa) if version else None
                ok_b = satisfies(version, sb) if version else None
                both = common_version(sa, sb, [version] if version else [])
                if ok_a and ok_b:
                    continue
                if both is not None and version is None:
                    continue  # nothing installed: framework-nvidia-wheel-mismatch says so
                if both is not None and not (ok_a or ok_b):
                    continue  # breaks both, fixable for both: a plain mismatch
                if version is None:
                    state = f"{dist} (not installed): {a} requires {sa}, {b} requires {sb}"
                elif ok_a and not ok_b:
                    state = f"{dist} {version} (installed) satisfies {a} ({sa}) but breaks {b} ({sb})"
                elif ok_b and not ok_a:
                    state = f"{dist} {version} (installed) satisfies {b} ({sb}) but breaks {a} ({sa})"
                else:
                    state = f"{dist} {version} (installed) breaks both {a} ({sa}) and {b} ({sb})"
                if both is not None:
                    note = f"{dist}=={both} satisfies both {a} and {b}"
                    commands: tuple[str, ...] = (f"{_pip(facts)} install {sh(f'{dist}=={both}')}",)
                else:
                    note = f"no {dist} satisfies both {a} ({sa}) and {b} ({sb}): give each its own virtual environment"
                    commands = ("python -m venv /path/to/second-venv", "/path/to/second-venv/bin/pip install <the second framework>")
                hits.append(
                    Hit(
                        f"{state}; " + (f"{dist}=={both} satisfies both" if both else "no version satisfies both: use separate virtual environments"),
                        evidence={"package": dist, "installed": version, a: sa, b: sb, "satisfies_both": both},
                        fix=FixRef(commands=commands, note=note),
                    )
                )
    return hits


def _ptxas(facts: Facts, item: dict[str, Any]) -> tuple[str | None, str]:
    """(version, where) of the ptxas XLA will use: the nvidia-cuda-nvcc wheel of the plugin's
    CUDA major first (the plugin looks there), else the active CUDA toolkit (JAX: "JAX uses
    PATH to find ptxas")."""
    have = facts.get("frameworks.nvidia_wheels") or {}
    major = item.get("cuda") if item["framework"] == "jax" else _major(item.get("cuda"))
    for dist in (f"nvidia-cuda-nvcc-cu{major}", "nvidia-cuda-nvcc"):
        if dist in have and (dist.endswith(f"cu{major}") or str(major) == _major(have[dist])):
            return have[dist], f"pip {dist} {have[dist]}"
    active = facts.get("cuda.active")
    if isinstance(active, dict) and active.get("version"):
        return str(active["version"]), f"CUDA toolkit {active['version']} at {active.get('root')} ({active.get('why')})"
    return None, "no nvidia-cuda-nvcc wheel and no CUDA toolkit"


@rule("ptxas-too-old-for-xla", needs=("frameworks.installed", "frameworks.nvidia_wheels", "cuda.active"), optional=("python.executable",))
def ptxas_too_old_for_xla(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        For a GPU build of JAX or TensorFlow (both compile through XLA), finds the ptxas
        XLA will run: the nvidia-cuda-nvcc wheel of its CUDA major, else the active CUDA
        toolkit's (on PATH), and compares it with the lowest ptxas the release requires
        (its own nvidia-cuda-nvcc requirement: jax-cuda12-plugin >=12.6.85, TensorFlow
        2.21.0 >=12.5.82).

    Why is this bad?
        XLA compiles every kernel with ptxas at run time: with none it cannot compile
        ("Couldn't find a suitable version of ptxas"), an older one rejects the PTX XLA
        emits or miscompiles, and jit-compiled functions fail on the GPU.

    Example
        jax 0.10.2 with jax[cuda12-local] and only CUDA toolkit 12.2 on PATH (needs >= 12.6):
        invalid. With nvidia-cuda-nvcc-cu12 12.8.93 installed: valid.

    Fix
        Install the ptxas the release requires into the environment:

            python -m pip install "nvidia-cuda-nvcc-cu12>=12.6.85"
    """
    hits, unknown = [], []
    for item in installed(facts):
        if item["framework"] not in ("jax", "tensorflow") or not item.get("gpu_build"):
            continue
        build = _build(kb, item)
        floor = build.ptxas_min if build is not None else None
        if floor is None:
            unknown.append(f"no ptxas requirement for {label(item)} in the KB")
            continue
        version, where = _ptxas(facts, item)
        if version is not None and satisfies(version, f">={floor}"):
            continue
        dist = next((d for d in (build.requires if build else {}) if d.startswith("nvidia-cuda-nvcc")), "nvidia-cuda-nvcc")
        state = f"XLA would use ptxas {version} ({where})" if version else f"XLA finds no ptxas ({where})"
        hits.append(
            Hit(
                f"{label(item)} needs ptxas >= {floor}; {state}: jit-compiled functions cannot run on the GPU",
                evidence={"framework": item["framework"], "ptxas_min": floor, "ptxas": version, "from": where},
                fix=FixRef(commands=(f"{_pip(facts)} install {sh(f'{dist}>={floor}')}",), note=f"install {dist} >= {floor} into the environment"),
            )
        )
    if unknown and not hits:
        raise NotCheckable("; ".join(unknown))
    return hits


@rule("xla-libdevice-missing", needs=("frameworks.installed", "frameworks.libdevice"), optional=("python.executable", "conda.prefix"))
def xla_libdevice_missing(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        For a GPU build of JAX or TensorFlow (both compile through XLA), looks for CUDA's
        libdevice (nvvm/libdevice/libdevice.10.bc) in every folder XLA searches
        (frameworks.libdevice): XLA_FLAGS' --xla_gpu_cuda_data_dir, $CUDA_ROOT (jax), the
        pip nvidia/cuda_nvcc or nvidia/cu13 folder, the copy in the framework's own wheel,
        /usr/local/cuda, /opt/cuda and the environment's prefix. Reports when none has it.

    Why is this bad?
        XLA links libdevice into every GPU kernel that calls a math routine (exp, tanh, pow,
        ...). Without it XLA warns "Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice"
        and the first such jit-compiled function fails with "INTERNAL: libdevice not found
        at ./libdevice.10.bc". It happens where the CUDA XLA finds has no nvvm: a conda env
        without cuda-nvcc, a pip install without nvidia-cuda-nvcc-cu12 (jax[cuda12-local],
        tensorflow without [and-cuda]), a CUDA "runtime" container image, or an XLA_FLAGS
        data dir that points at a folder without nvvm/. Older releases searched fewer folders
        (TensorFlow 2.11: its build's CUDA path, /usr/local/cuda and "."), so a libdevice only
        in the pip wheel or the conda prefix can still be missed by them: not reported.

    Example
        tensorflow 2.19.1 (a CUDA build) with its nvidia-* wheels but no nvidia-cuda-nvcc-cu12
        and no /usr/local/cuda: invalid. With nvidia-cuda-nvcc-cu12 installed
        (site-packages/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc): valid.

    Fix
        Install the CUDA compiler wheel the framework's CUDA extra names, or point XLA at a
        CUDA toolkit that has nvvm/libdevice:

            python -m pip install "nvidia-cuda-nvcc-cu12"
            export XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda-12.4
    """
    info = facts["frameworks.libdevice"]
    if not isinstance(info, dict) or info.get("found"):
        return None
    searched = [s["root"] for s in info.get("searched") or []]
    elsewhere = info.get("elsewhere") or []
    data_dir = info.get("xla_flags_data_dir")
    hits = []
    for item in installed(facts):
        if item["framework"] not in ("jax", "tensorflow") or not item.get("gpu_build"):
            continue
        pointed = next((e["data_dir"] for e in elsewhere if e.get("data_dir")), None)
        flat = next((e["path"] for e in elsewhere if not e.get("data_dir")), None)
        if pointed:
            commands: tuple[str, ...] = (f"export XLA_FLAGS=--xla_gpu_cuda_data_dir={sh(pointed)}",)
            note = f"{pointed} has nvvm/libdevice/libdevice.10.bc, but XLA does not look there unless told"
        elif flat and flat.endswith("/lib/libdevice.10.bc"):
            lib = flat[: -len("/libdevice.10.bc")]
            commands = (f"mkdir -p {sh(lib + '/nvvm/libdevice')}", f"cp {sh(flat)} {sh(lib + '/nvvm/libdevice/')}",
                        f"export XLA_FLAGS=--xla_gpu_cuda_data_dir={sh(lib)}")
            note = f"{flat} is where conda's cudatoolkit puts libdevice; XLA wants it under <root>/nvvm/libdevice (tensorflow.org/install/pip's conda steps)"
        elif item["framework"] == "jax" and item.get("cuda"):
            major = item["cuda"]
            dists = "nvidia-cuda-nvcc nvidia-nvvm" if str(major) == "13" else f"nvidia-cuda-nvcc-cu{major}"
            commands = (f"{_pip(facts)} install -U {dists}",)
            note = f"the CUDA {major} compiler wheels hold ptxas and libdevice (jax's {f'cuda{major}'} extra installs them; the -local extra expects a CUDA toolkit)"
        elif item["framework"] == "tensorflow" and item.get("cuda_extra"):
            commands = (f"{_pip(facts)} install {sh('tensorflow[and-cuda]==' + str(item.get('version')))}",)
            note = "tensorflow[and-cuda] installs nvidia-cuda-nvcc-cu12, which holds libdevice"
        else:
            commands = ("conda install -c nvidia cuda-nvcc   # or a CUDA toolkit with nvvm (not a runtime-only image)",
                        "export XLA_FLAGS=--xla_gpu_cuda_data_dir=\"$CONDA_PREFIX\"   # the folder that holds nvvm/libdevice")
            note = "install a CUDA compiler package (it brings nvvm/libdevice) and point XLA at it"
        if data_dir:
            note += f"; XLA_FLAGS points at {data_dir}, which has no nvvm/libdevice/libdevice.10.bc"
        hits.append(
            Hit(
                f"{label(item)} compiles GPU kernels with XLA, which finds no nvvm/libdevice/libdevice.10.bc in the {len(searched)} folders it searches "
                f"({', '.join(searched[:3])}{', ...' if len(searched) > 3 else ''}): jit-compiled math fails with \"libdevice not found at ./libdevice.10.bc\"",
                evidence={"framework": item["framework"], "searched": searched, "elsewhere": elsewhere, "xla_flags_data_dir": data_dir},
                fix=FixRef(commands=commands, note=note),
            )
        )
    return hits


@rule("framework-packages-mismatched", needs=("frameworks.installed",), optional=("python.executable",))
def framework_packages_mismatched(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        Checks the pairing JAX's own wheels declare: jax's Requires-Dist range on jaxlib,
        jax's `cudaNN` extra pinning jax-cudaNN-plugin to the jax version, and the plugin's
        pin on jax-cudaNN-pjrt.

    Why is this bad?
        jax refuses to import with a jaxlib outside its range ("RuntimeError: jaxlib
        version ... is newer than and incompatible with jax version ..."), and a plugin of
        another release fails to load: JAX then runs on the CPU.

    Example
        jax 0.10.2 with jaxlib 0.9.2 (jax requires >=0.10.1,<=0.10.2): invalid.
        jax 0.10.2, jaxlib 0.10.2, jax-cuda13-plugin 0.10.2, jax-cuda13-pjrt 0.10.2: valid.

    Fix
        Reinstall them as one set:

            python -m pip install -U "jax[cuda13]==0.10.2"
    """
    hits = []
    for item in installed(facts):
        packages = item.get("packages") or {}
        for dist, spec in sorted((item.get("pairing") or {}).items()):
            version = packages.get(dist)
            if version is None or satisfies(version, spec) is not False:
                continue
            cuda = item.get("cuda")
            hits.append(
                Hit(
                    f"{label(item)}: {dist} {version} is outside the {spec} that {item['framework']} {item.get('version')} declares",
                    evidence={"framework": item["framework"], "package": dist, "installed": version, "requires": spec, "packages": packages},
                    fix=install_fix(facts, kb, item["framework"], cuda, item.get("version"), "reinstall the framework's packages as one set"),
                )
            )
    return hits


@rule("framework-gpu-unused", needs=("frameworks.installed", "frameworks.deep", "driver.loaded"), optional=("gpus.list", "pci.nvidia_gpus"))
def framework_gpu_unused(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        With --deep: a GPU build of JAX, TensorFlow or Paddle, on a host with an NVIDIA GPU
        and a loaded driver, that lists no GPU device, or whose first GPU op failed. The
        framework's own error text and the library lines it logged are quoted verbatim.

    Why is this bad?
        The script runs, slowly, on the CPU, or dies at the first GPU op. The cause is in
        the quoted text: a driver too old, a libcudnn it cannot load, a ptxas error.

    Example
        jax-cuda13-plugin installed, `jax.devices()` gives only CpuDevice(id=0) and
        "Unable to initialize backend 'cuda'": invalid.

    Fix
        Read the quoted error; the other findings in this report usually name the cause.
    """
    deep = facts["frameworks.deep"] or {}
    present = _gpu_present(facts)
    if not present or not facts["driver.loaded"]:
        return None
    hits = []
    for item in installed(facts):
        data = deep.get(item["framework"])
        if not item.get("gpu_build") or not isinstance(data, dict) or not data.get("imported"):
            continue
        error = data.get("op_error") or (data.get("gpu_error") if not data.get("gpu_count") else None)
        if data.get("gpu_count") and not data.get("op_error"):
            continue
        what = "its first GPU op failed" if data.get("gpu_count") else "it sees no GPU"
        hits.append(
            Hit(
                f"{label(item)} is a GPU build but {what}" + (f": \"{error}\"" if error else ""),
                evidence={"framework": item["framework"], "devices": data.get("devices"), "error": error, "log": data.get("log") or []},
            )
        )
    return hits


@rule("framework-libs-shadowed", needs=("frameworks.installed", "cudnn.ld_first", "nccl.ld_first"), optional=())
def framework_libs_shadowed(facts: Facts, kb: KB) -> Iterable[Hit] | None:
    """What it does
        Reports an LD_LIBRARY_PATH or LD_PRELOAD libcudnn/libnccl (cudnn.ld_first,
        nccl.ld_first) whose version is outside what a framework installed with its CUDA
        wheels requires (nvidia-cudnn-cuNN, nvidia-nccl-cuNN). In a pasted report it also
        reads the loader's "undefined symbol: __nvJitLinkComplete_12_4, version
        libnvJitLink.so.12" for any CUDA library of the nvidia-* wheels (nvJitLink,
        cuSPARSE, cuBLAS ...) beside the folder it came from (ldd, or a CUDA toolkit first
        on LD_LIBRARY_PATH): an error; with no folder shown, a warning naming the check.

    Why is this bad?
        The dynamic loader takes the LD_LIBRARY_PATH copy before the framework's own wheels:
        JAX's install page says to unset LD_LIBRARY_PATH for this reason; TensorFlow logs
        "Loaded runtime CuDNN library: X but source was compiled with: Y"; torch's pip
        builds fail at import when a system CUDA's older libnvJitLink.so.12 is loaded for
        the wheel's libcusparse.so.12 (pytorch/pytorch#141063, #152783). The `_12_4` of
        such a symbol names the CUDA release whose library first has it.

    Example
        LD_LIBRARY_PATH=/usr/local/cuda/lib64 holding libcudnn 8.9.7 with jax[cuda12] 0.10.2
        (nvidia-cudnn-cu12 >=9.8,<10.0): invalid. With LD_LIBRARY_PATH unset: valid.
        LD_LIBRARY_PATH=/usr/local/cuda-12.3/lib64 under a torch 2.5 cu124 wheel ("undefined
        symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12"): invalid.

    Fix
        Unset LD_LIBRARY_PATH (and LD_PRELOAD) for the framework's process, or drop the
        folder that holds the other library from it.
    """
    hits = []
    for key, lib in (("cudnn.ld_first", "cudnn"), ("nccl.ld_first", "nccl")):
        first = facts[key]
        if not isinstance(first, dict) or not first.get("version"):
            continue
        for item in installed(facts):
            for dist, spec in (item.get("requires") or {}).items():
                if not dist.startswith(f"nvidia-{lib}-") or satisfies(str(first["version"]), spec) is not False:
                    continue
                hits.append(
                    Hit(
                        f"{first.get('via')} loads lib{lib} {first['version']} ({first.get('path')}) before the {dist}{spec} that {label(item)} requires",
                        evidence={"framework": item["framework"], key: first, "requires": {dist: spec}},
                        fix=FixRef(commands=("unset LD_LIBRARY_PATH LD_PRELOAD",), note=f"let {TITLES[item['framework']]} load its own {dist}"),
                    )
                )
    return hits


RULES: tuple[Rule, ...] = (
    driver_too_old_for_framework,
    gpu_arch_unsupported_by_framework,
    framework_cpu_build_on_gpu_host,
    framework_nvidia_wheel_mismatch,
    frameworks_nvidia_conflict,
    ptxas_too_old_for_xla,
    xla_libdevice_missing,
    framework_packages_mismatched,
    framework_gpu_unused,
    framework_libs_shadowed,
)
