"""conda environment rules: conda-cpu-pytorch-on-gpu-host, conda-pip-torch-over-conda,
conda-libstdcxx-too-old, conda-user-site-leak, conda-cuda-libs-mismatch,
conda-cuda-build-without-cuda.

Pure functions of the conda.* facts (probes/conda.py: the env's conda-meta records, the
GLIBCXX versions of its libstdc++ and of pip wheels' .so files) and the cudnn/nccl installs.
Fixes give the conda commands a person would type, with the env's prefix (`-p PREFIX`
works whether or not the env has a name).
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any, Iterable

from packaging.version import InvalidVersion, Version

from fwdoctor import versions
from fwdoctor.versions import conda_cuda_label as cuda_label
from fwdoctor.libraries import CUDNN, NCCL, Library
from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.quoting import comment
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule, sh

if TYPE_CHECKING:
    from fwdoctor.kb import KB


def _prefix(facts: Facts) -> str | None:
    value = facts.get("conda.prefix")
    return value if isinstance(value, str) and value else None


def _gpu_present(facts: Facts) -> bool | None:
    answers = [bool(facts[key]) for key in ("gpus.list", "pci.nvidia_gpus") if facts.known(key)]
    return any(answers) if answers else None


def _tag(value: str) -> Version:
    try:
        return Version(value)
    except InvalidVersion:
        return Version("0")


@rule("conda-cpu-pytorch-on-gpu-host", needs=("conda.torch_build", "driver.loaded"), optional=("conda.prefix", "gpus.list", "pci.nvidia_gpus", "driver.version", "driver.cuda_version", "conda.pip_over_conda"))
def conda_cpu_pytorch_on_gpu_host(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads the pytorch record in the conda env's conda-meta/ and reports a CPU build
        (build string `cpu_mkl_py311_...`, `cpu_generic_...`, the pytorch channel's
        `py3.8_cpu_0`) on a host with an NVIDIA GPU and a loaded driver.

    Why is this bad?
        Nothing runs on the GPU: `torch.cuda.is_available()` is False and `.cuda()` raises
        "AssertionError: Torch not compiled with CUDA enabled". conda picks the CPU build
        silently whenever its solver sees no `__cuda` virtual package: the env was solved on
        a login node or in a container build without a GPU, or from an environment.yml that
        pins only `pytorch>=2`. `conda update` keeps it, because the CPU build satisfies the
        spec. (A pip torch in the env is judged by torch-cpu-build-on-gpu-host.)

    Example
        conda-meta/pytorch-2.6.0-cpu_mkl_py312_h446997d_101.json on a host with an H100 and
        driver 580.95.05: invalid. pytorch-2.4.0-cuda118_py39hbf661d7_301.json there: valid.
        The CPU build on a CPU-only CI runner: valid.

    Fix
        Ask conda for a CUDA build of the same release (conda-forge names them
        `cuda<XY>_*`); where the solver runs without a GPU, tell it the driver's CUDA:

            conda install -p /opt/conda/envs/train -c conda-forge "pytorch=2.6.0=cuda*"
            CONDA_OVERRIDE_CUDA=12.6 conda install -p /opt/conda/envs/train -c conda-forge "pytorch=2.6.0=cuda*"
    """
    build = facts["conda.torch_build"]
    if not isinstance(build, dict) or build.get("kind") != "cpu":
        return None
    if any(isinstance(o, dict) and o.get("package") == "torch" for o in facts.get("conda.pip_over_conda") or []):
        return None  # pip's torch replaced it: conda-pip-torch-over-conda says so
    present = _gpu_present(facts)
    if present is None:
        raise NotCheckable("whether this host has an NVIDIA GPU is unknown (gpus.list and pci.nvidia_gpus unknown)")
    if not present or not facts["driver.loaded"]:
        return None
    prefix = _prefix(facts) or "$CONDA_PREFIX"
    gpus = facts.get("gpus.list") or facts.get("pci.nvidia_gpus") or []
    driver = facts.get("driver.version")
    cuda = facts.get("driver.cuda_version")
    spec = f"pytorch={build.get('version')}=cuda*"
    commands = [f"conda install -p {sh(prefix)} -c conda-forge {sh(spec)}"]
    if isinstance(cuda, str) and cuda:
        commands.append(f"CONDA_OVERRIDE_CUDA={sh(cuda)} conda install -p {sh(prefix)} -c conda-forge {sh(spec)}   # where the solver sees no GPU")
    return Hit(
        f"conda's pytorch {build.get('version')} in {prefix} is the CPU build {build.get('build')} ({build.get('channel') or 'unknown channel'}), "
        f"but this host has {len(gpus)} NVIDIA GPU{'s' if len(gpus) != 1 else ''} and driver {driver or '(loaded)'}: nothing will run on the GPU",
        evidence={"conda.torch_build": build, "driver.version": driver, "driver.cuda_version": cuda},
        fix=FixRef(recipe=None, options={"conda_install": [spec], "prefix": prefix}, commands=tuple(commands),
                   note="install conda-forge's CUDA build of the same pytorch release"),
    )


@rule("conda-pip-torch-over-conda", needs=("conda.pip_over_conda",), optional=("conda.prefix", "torch.version", "torch.cuda", "torch.location", "python.executable"))
def conda_pip_over_conda(facts: Facts, kb: KB) -> Iterable[Hit]:
    """What it does
        Finds packages that conda installed (a conda-meta record: pytorch, torchvision,
        torchaudio, triton, numpy) and that pip (or uv) then installed again into the same
        env: the dist-info in site-packages is not among the files the conda record lists,
        or its INSTALLER file says pip.

    Why is this bad?
        Both installers now think they own torch. `import torch` loads whatever files pip
        wrote last (pip's torch, with pip's CUDA and its own nvidia-* wheels), while
        `conda list` still shows conda's pytorch, and conda's cudnn/nccl in PREFIX/lib stay
        pinned to conda's build. The next `conda install`/`update` that touches pytorch
        deletes or overwrites pip's files and leaves a broken mix ("undefined symbol" from
        libtorch_cuda.so, "ModuleNotFoundError: No module named 'torch._C'"), and `conda
        env export` records a pytorch that is not the one running.

    Example
        conda-meta/pytorch-2.5.1-cuda126_py311_h..._300.json and
        site-packages/torch-2.14.1.dist-info with INSTALLER "pip": invalid. Only conda's
        torch-2.5.1.dist-info (listed in the record): valid.

    Fix
        Keep one installer per package. Either remove pip's copy and reinstall conda's, or
        take pytorch out of conda's hands and keep pip's:

            python -m pip uninstall -y torch && conda install -p /opt/conda/envs/train --force-reinstall pytorch
            conda remove -p /opt/conda/envs/train --force pytorch && python -m pip install --force-reinstall torch
    """
    items = [o for o in facts["conda.pip_over_conda"] or [] if isinstance(o, dict)]
    prefix = _prefix(facts) or "$CONDA_PREFIX"
    python = facts.get("python.executable") or "python"
    for item in items:
        package = str(item.get("package"))
        conda_name, conda_version = (str(item.get("conda", "")).split(" ") + ["", ""])[:2]
        installer = item.get("installer") or "another installer"
        loads = ""
        if package == "torch" and facts.get("torch.version"):
            cuda = facts.get("torch.cuda") if facts.known("torch.cuda") else "?"
            loads = f"; `import torch` loads torch {facts.get('torch.version')} (CUDA {cuda or 'none: CPU build'}) from the files {installer} wrote"
        yield Hit(
            f"{installer} installed {package} {item.get('dist_version')} ({item.get('dist_info')}) over conda's {item.get('conda')} in {prefix}{loads}; "
            f"conda still records {conda_name} as its own",
            evidence={"over": item, "torch.version": facts.get("torch.version"), "torch.location": facts.get("torch.location")},
            fix=FixRef(
                recipe=None,
                options={"pip_uninstall": [package], "conda_reinstall": [conda_name], "prefix": prefix},
                commands=(
                    f"{sh(python)} -m pip uninstall -y {sh(package)} && conda install -p {sh(prefix)} --force-reinstall {sh(conda_name + '=' + conda_version)}",
                    f"conda remove -p {sh(prefix)} --force {sh(conda_name)}   # or keep pip's: take it out of conda's records",
                ),
                note=f"keep one installer for {package}: reinstall conda's {conda_name}, or remove conda's record and keep pip's",
            ),
        )


@rule("conda-libstdcxx-too-old", needs=("conda.libstdcxx_glibcxx", "conda.wheel_glibcxx"), optional=("conda.prefix", "python.executable"))
def conda_libstdcxx_too_old(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the GLIBCXX_* symbol versions that conda's PREFIX/lib/libstdc++.so.6
        defines with those the shared objects of pip-installed wheels in the env need
        (their ELF version requirements, read as strings), and reports the wheels that
        need a newer one.

    Why is this bad?
        conda's python finds PREFIX/lib first (its RPATH is $ORIGIN/../lib), so every
        extension module in the process gets conda's libstdc++, not the system's. A wheel
        built with a newer GCC (a pip install that compiled from source with the system's
        g++ 12, a wheel built on a newer distribution) then fails to import:
        "ImportError: .../libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by
        .../_ext.cpython-311-x86_64-linux-gnu.so)".

    Example
        libstdcxx-ng 11.2.0 (GLIBCXX up to 3.4.29) and a pip wheel whose .so needs
        GLIBCXX_3.4.30: invalid. libstdcxx-ng 13.2.0 (up to 3.4.32) with it: valid.

    Fix
        Update conda's libstdc++ (conda-forge: libstdcxx and libgcc; older envs:
        libstdcxx-ng and libgcc-ng) to a GCC release that defines the version the wheel
        needs, or rebuild the wheel with conda's compilers (`conda install gxx`):

            conda install -p /opt/conda/envs/train -c conda-forge "libstdcxx-ng>=12" "libgcc-ng>=12"
    """
    std = facts["conda.libstdcxx_glibcxx"]
    needs = [n for n in facts["conda.wheel_glibcxx"] or [] if isinstance(n, dict) and isinstance(n.get("needs"), str)]
    if not isinstance(std, dict) or not needs:
        return None
    have = std.get("newest")
    if not isinstance(have, str):
        raise NotCheckable(f"{std.get('library')} shows no GLIBCXX_* version (not a libstdc++, or unreadable)")
    short = [n for n in needs if _tag(n["needs"]) > _tag(have)]
    if not short:
        return None
    short.sort(key=lambda n: _tag(n["needs"]), reverse=True)
    worst = short[0]
    prefix = _prefix(facts) or "$CONDA_PREFIX"
    package = std.get("package") or "conda's libstdc++"
    names = "libstdcxx-ng" if str(package).startswith("libstdcxx-ng") else "libstdcxx"
    gcc_names = ("libstdcxx-ng", "libgcc-ng") if names == "libstdcxx-ng" else ("libstdcxx", "libgcc")
    others = f" (and {len(short) - 1} more)" if len(short) > 1 else ""
    return Hit(
        f"{worst['file']} from pip's {worst['dist']} needs GLIBCXX_{worst['needs']}, but {std.get('library')} ({package}) defines up to GLIBCXX_{have}{others}: "
        f"importing it fails with \"version `GLIBCXX_{worst['needs']}' not found\"",
        evidence={"conda.libstdcxx_glibcxx": {k: v for k, v in std.items() if k != "tags"}, "wheels": short},
        fix=FixRef(
            recipe=None,
            options={"conda_update": list(gcc_names), "prefix": prefix, "needs": f"GLIBCXX_{worst['needs']}"},
            commands=(f"conda update -p {sh(prefix)} -c conda-forge {' '.join(gcc_names)}   # to a GCC release that defines GLIBCXX_{comment(str(worst['needs']))}",),
            note=f"update conda's {gcc_names[0]} so PREFIX/lib/libstdc++.so.6 defines GLIBCXX_{worst['needs']}",
        ),
    )


@rule("conda-user-site-leak", needs=("conda.user_site_only",), optional=("conda.prefix", "python.user_site", "python.executable"))
def conda_user_site_leak(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        In a conda env with PYTHONNOUSERSITE unset, lists GPU-relevant packages (torch,
        torchvision, torchaudio, triton, nvidia-*, cuda-*, numpy) found in the user site
        (~/.local/lib/pythonX.Y/site-packages) that the env itself does not have. (A package
        in both places is user-site-shadowing.)

    Why is this bad?
        conda envs, unlike venvs, read the user site: every env of the same Python minor
        imports a `pip install --user torch` from months ago, with its own CUDA and
        nvidia-* wheels, while `conda list` shows nothing. A numpy 1.x there breaks a
        conda numpy-2 build ("A module that was compiled using NumPy 1.x cannot be run in
        NumPy 2.x"), and `conda env export` misses what actually runs.

    Example
        CONDA_PREFIX=/opt/conda/envs/train (python 3.11) and
        ~/.local/lib/python3.11/site-packages/torch-2.1.0.dist-info, no torch in the env:
        invalid. The same with PYTHONNOUSERSITE=1 exported: valid.

    Fix
        Keep the user site out of conda envs (conda's own activation scripts can set it),
        or remove the user-site copies:

            conda env config vars set -p /opt/conda/envs/train PYTHONNOUSERSITE=1
            python -m pip uninstall -y torch   # with PYTHONNOUSERSITE unset: removes the ~/.local copy
    """
    leaks = [x for x in facts["conda.user_site_only"] or [] if isinstance(x, dict)]
    if not leaks:
        return None
    prefix = _prefix(facts) or "$CONDA_PREFIX"
    user_site = facts.get("python.user_site") or "~/.local"
    python = facts.get("python.executable") or "python"
    names = sorted({str(x.get("package")) for x in leaks})
    listed = ", ".join(f"{x.get('package')} {x.get('user_version')}" for x in leaks)
    return Hit(
        f"PYTHONNOUSERSITE is unset and {user_site} holds {listed}, which conda env {prefix} does not have: `import` there loads the user-site copies",
        evidence={"python.user_site": user_site, "leaks": leaks},
        fix=FixRef(
            recipe="env",
            options={"set": {"PYTHONNOUSERSITE": "1"}, "environment": prefix},
            commands=(f"conda env config vars set -p {sh(prefix)} PYTHONNOUSERSITE=1",
                      f"{sh(python)} -m pip uninstall -y {' '.join(sh(n) for n in names)}   # removes the user-site copies"),
            note="set PYTHONNOUSERSITE=1 for this conda env, or remove the user-site copies",
        ),
    )


def _conda_install(facts: Facts, lib: Library) -> dict[str, Any] | None:
    prefix = _prefix(facts)
    value = facts.get(lib.installs_key)
    for inst in value if isinstance(value, list) else []:
        if isinstance(inst, dict) and inst.get("kind") == "conda" and (prefix is None or posixpath.normpath(str(inst.get("prefix"))) == posixpath.normpath(prefix)):
            return inst
    return None


def _major(inst: dict[str, Any]) -> int | None:
    for key in ("library_version", "header_version"):
        major = versions.major(inst.get(key)) if isinstance(inst.get(key), str) else None
        if major is not None:
            return major
    package = inst.get("package")
    return versions.major(str(package).partition(" ")[2]) if isinstance(package, str) else None


@rule(
    "conda-cuda-libs-mismatch",
    needs=("conda.torch_build", "cudnn.installs", "nccl.installs"),
    optional=("conda.prefix", "conda.pip_over_conda", "cudnn.ld_first", "nccl.ld_first"),
)
def conda_cuda_libs_mismatch(facts: Facts, kb: KB) -> Iterable[Hit]:
    """What it does
        For conda's CUDA pytorch, checks the cuDNN and NCCL it loads: conda's own copies in
        PREFIX/lib (conda-meta cudnn/nccl records, whose `cuda-version` pin or build string
        names the CUDA major they were built for) against the CUDA in pytorch's build
        string; a copy that LD_PRELOAD or LD_LIBRARY_PATH puts first (searched before
        conda's RUNPATH) of another major; and a pip nvidia-* wheel of another major in
        the same env (warning).

    Why is this bad?
        conda's pytorch is linked against PREFIX/lib/libcudnn.so.<major> and libnccl.so.2.
        A cuDNN built for another CUDA major fails at the first convolution
        ("CUDNN_STATUS_NOT_INITIALIZED", "libcudnn_ops.so.9: cannot open shared object
        file"); a system or toolkit copy put first by LD_LIBRARY_PATH replaces conda's
        without conda knowing; a pip nvidia-cudnn wheel loaded by another package puts two
        cuDNN majors in one process.

    Example
        pytorch cuda118_py39h..._301 with conda's cudnn 9.3 built for CUDA 12
        (`cuda-version >=12,<13`): invalid. The same pytorch with cudnn 8.9.7.29 built for
        CUDA 11 (`cuda-version >=11.0,<12.0a0`): valid.

    Fix
        Let conda solve cuDNN/NCCL together with pytorch (never pin them apart), and keep
        other copies off the loader's path:

            conda install -p /opt/conda/envs/train -c conda-forge pytorch cudnn nccl "cuda-version=11.8"
            unset LD_LIBRARY_PATH   # or drop the entry that holds another libcudnn
    """
    build = facts["conda.torch_build"]
    if not isinstance(build, dict) or build.get("kind") != "cuda" or not build.get("cuda"):
        return
    if any(isinstance(o, dict) and o.get("package") == "torch" for o in facts.get("conda.pip_over_conda") or []):
        return  # pip's torch loads its own wheels: the libs rules judge it
    torch_major = versions.major(build["cuda"])
    prefix = _prefix(facts) or "$CONDA_PREFIX"
    for lib in (CUDNN, NCCL):
        own = _conda_install(facts, lib)
        if own is None:
            continue
        own_major = _major(own)
        if isinstance(own.get("cuda_major"), int) and own["cuda_major"] != torch_major:
            yield Hit(
                f"conda's {own.get('package') or lib.title} in {prefix}/lib is built for CUDA {own['cuda_major']}, but conda's pytorch {build.get('version')} "
                f"({build.get('build')}) is built for CUDA {build['cuda']} and loads it",
                evidence={"install": own, "conda.torch_build": build},
                fix=FixRef(recipe=None, options={"conda_install": ["pytorch", lib.conda_names[0], f"cuda-version={build['cuda']}"], "prefix": prefix},
                           commands=(f"conda install -p {sh(prefix)} -c conda-forge pytorch {sh(lib.conda_names[0])} {sh('cuda-version=' + build['cuda'])}",),
                           note=f"let conda solve {lib.conda_names[0]} for pytorch's CUDA {build['cuda']}"),
            )
        first = facts.get(lib.ld_first_key)
        if isinstance(first, dict) and isinstance(first.get("path"), str) and own.get("library") \
                and posixpath.dirname(str(first["path"])) != posixpath.dirname(str(own["library"])):
            first_major = versions.major(first.get("version")) if isinstance(first.get("version"), str) else None
            if first_major is not None and own_major is not None and first_major != own_major:
                yield Hit(
                    f"{first.get('via')} puts {first['path']} ({lib.title} {first.get('version')}) ahead of conda's {lib.title} {own.get('library_version') or own_major} "
                    f"in {prefix}/lib, which conda's pytorch {build.get('version')} is linked against",
                    evidence={"ld_first": first, "install": own},
                    fix=FixRef(recipe="env", options={"ld_preload_remove": [first["path"]]} if first.get("via") == "LD_PRELOAD" else {"ld_library_path_remove": [posixpath.dirname(str(first["path"]))]},
                               commands=("unset LD_PRELOAD" if first.get("via") == "LD_PRELOAD" else "unset LD_LIBRARY_PATH   # or drop the entry that holds it",),
                               note=f"keep other {lib.title} copies off the loader's path in this conda env"),
                )
        for inst in facts.get(lib.installs_key) or []:
            if not isinstance(inst, dict) or inst.get("kind") != "pip" or not str(inst.get("prefix", "")).startswith(prefix.rstrip("/") + "/"):
                continue
            pip_major = _major(inst)
            if pip_major is not None and own_major is not None and pip_major != own_major:
                name = str(inst.get("package") or "").partition(" ")[0] or f"the {lib.title} wheel"
                yield Hit(
                    f"pip's {inst.get('package') or lib.title} ({inst.get('prefix')}) is {lib.title} {pip_major}.x beside conda's {own.get('package') or lib.title} "
                    f"({lib.title} {own_major}.x, {prefix}/lib): conda's pytorch loads conda's, a pip package that loads the wheel puts both in one process",
                    evidence={"pip": inst, "conda": own},
                    severity=Severity.WARNING,
                    fix=FixRef(recipe=None, options={"pip_uninstall": [name]}, commands=(f"python -m pip uninstall -y {sh(name)}",),
                               note=f"keep one {lib.title} per env: conda's, which conda's pytorch is linked against"),
                )


def broken_cuda_build_fix(row: Any, prefix: str | None) -> FixRef:
    """Install a build of the same release from the first working build number on (a conda
    MatchSpec's key-value form: build and build_number are fields of a package record)."""
    spec = f'{row.package}[version="{row.version}",build="cuda*",build_number=">={row.fixed_build_number}"]'
    where = f"-p {sh(prefix)} " if prefix else ""
    check = ("python -c 'import tensorflow as tf; print(tf.test.is_built_with_cuda())'   # True"
             if row.framework == "tensorflow" else "python -c 'import jax; print(jax.devices())'   # a CudaDevice, not CpuDevice")
    return FixRef(recipe=None, options={"conda_install": [spec], "prefix": prefix or "$CONDA_PREFIX"},
                  commands=(f"conda install {where}-c conda-forge {sh(spec)}", check),
                  note=f"install build {row.fixed_build_number} or later of {row.package} {row.version} (or a later release), then check that it sees the GPU")


@rule("conda-cuda-build-without-cuda", needs=("conda.packages",),
      optional=("conda.prefix", "frameworks.installed", "conda.torch_build", "torch.installed", "torch.cuda", "torch.location", "conda.pip_over_conda"))
def conda_cuda_build_without_cuda(facts: Facts, kb: KB) -> Iterable[Hit]:
    """What it does
        Reads the conda env's records for a framework build whose build string says CUDA
        (conda-forge's `cuda120py311h5cbd639_1`, `cuda120py312h9b6c45b_200`,
        `cuda126_mkl_py312_...`) and reports the ones with no working CUDA in them: a build
        the KB lists as published broken (kb/conda.yaml cuda_label_broken: tensorflow 2.15.0
        builds 0 and 1, jaxlib 0.4.34 build 200), conda's tensorflow whose own build_info.py
        says `is_cuda_build` False, and conda's pytorch labelled CUDA whose torch/version.py
        says no CUDA.

    Why is this bad?
        The label is the only thing the user and the solver look at: `conda list` shows a
        CUDA build, `jaxlib=*=*cuda*` or `tensorflow=*=cuda*` was satisfied, and yet nothing
        runs on the GPU. TensorFlow's `tf.test.is_built_with_cuda()` is False and
        `tf.config.list_physical_devices('GPU')` is empty; JAX warns "An NVIDIA GPU may be
        present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to
        cpu."; torch raises "Torch not compiled with CUDA enabled". Reinstalling the same
        spec gets the same build, and the usual fixes (driver, CUDA toolkit, LD_LIBRARY_PATH)
        change nothing. (A build labelled cpu is conda-cpu-pytorch-on-gpu-host or
        framework-cpu-build-on-gpu-host.)

    Example
        conda-meta/tensorflow-base-2.15.0-cuda120py311h43b5e44_1.json (conda-forge): invalid,
        built with TF_NEED_CUDA=0. tensorflow-base-2.15.0-cuda120py311h..._2.json: valid.
        jaxlib-0.4.34-cuda120py312h9b6c45b_200.json: invalid; build 201: valid.

    Fix
        Install a build of the same release that was rebuilt with CUDA (a higher build
        number), or a later release, and check that it sees the GPU:

            conda install -p /opt/conda/envs/train -c conda-forge 'tensorflow[version="2.15.0",build="cuda*",build_number=">=2"]'
            python -c 'import tensorflow as tf; assert tf.test.is_built_with_cuda()'
    """
    packages = facts["conda.packages"]
    if not isinstance(packages, dict):
        return
    prefix = _prefix(facts)
    where = f" in {prefix}" if prefix else ""
    done: set[str] = set()
    for name, rec in sorted(packages.items()):
        if not isinstance(rec, dict):
            continue
        version, build, channel = str(rec.get("version")), str(rec.get("build")), rec.get("channel")
        row = kb.conda.broken_cuda_build(name, version, build, channel if isinstance(channel, str) else None)
        if row is None or row.framework in done:
            continue
        done.add(row.framework)
        label = cuda_label(build)
        yield Hit(
            f"conda's {name} {version} {build} ({channel or 'unknown channel'}){where} is labelled CUDA {label} but is a build published without working CUDA: "
            f"{row.content}; build {row.fixed_build_number} of {version} is the first that works",
            evidence={"package": {"name": name, **rec}, "broken": {"package": row.package, "version": row.version, "build_numbers": list(row.build_numbers),
                                                                     "fixed_build_number": row.fixed_build_number, "source": list(row.source)}},
            fix=broken_cuda_build_fix(row, prefix),
        )
    # TensorFlow's own build_info.py (probes/frameworks.py) against conda's label
    tf_rec = next(((n, packages[n]) for n in ("tensorflow-base", "tensorflow") if isinstance(packages.get(n), dict) and cuda_label(str(packages[n].get("build")))), None)
    if "tensorflow" not in done and tf_rec is not None:
        for item in facts.get("frameworks.installed") or []:
            if isinstance(item, dict) and item.get("framework") == "tensorflow" and item.get("gpu_build") is False and item.get("build_info"):
                name, rec = tf_rec
                done.add("tensorflow")
                yield Hit(
                    f"conda's {name} {rec.get('version')} {rec.get('build')}{where} is labelled CUDA {cuda_label(str(rec.get('build')))}, "
                    f"but its {item['build_info']} says is_cuda_build False: tf.test.is_built_with_cuda() is False and TensorFlow sees no GPU",
                    evidence={"package": {"name": name, **rec}, "framework": item},
                    fix=FixRef(recipe=None, options={"conda_install": [f"{name}=*=cuda*"], "prefix": prefix or "$CONDA_PREFIX"},
                               commands=(f"conda search -c conda-forge {sh(name + '=' + str(rec.get('version')) + '=cuda*')}   # the other builds of this release",
                                         f"conda install {'-p ' + sh(prefix) + ' ' if prefix else ''}-c conda-forge {sh(name + '=' + str(rec.get('version')) + '=cuda*_N')}   # N: a higher build number than {comment(str(rec.get('build')))}",
                                         "python -c 'import tensorflow as tf; assert tf.test.is_built_with_cuda()'"),
                               note="install another build (a higher build number) or release of the CUDA variant and check it; report the build to its feedstock"),
                )
                break
    # conda's pytorch labelled CUDA whose torch/version.py (the files that import) says no CUDA
    build = facts.get("conda.torch_build")
    if isinstance(build, dict) and build.get("kind") == "cuda" and facts.get("torch.installed") and facts.known("torch.cuda") and facts["torch.cuda"] is None:
        location = facts.get("torch.location")
        if any(isinstance(o, dict) and o.get("package") == "torch" for o in facts.get("conda.pip_over_conda") or []):
            return  # pip's torch replaced conda's files: conda-pip-torch-over-conda says so
        if not (prefix and isinstance(location, str) and location.startswith(prefix.rstrip("/") + "/")):
            return  # the torch that imports is not this env's
        yield Hit(
            f"conda's pytorch {build.get('version')} {build.get('build')}{where} is labelled CUDA {build.get('cuda')}, but its {location}/version.py says no CUDA (torch.version.cuda is None): "
            f"\"Torch not compiled with CUDA enabled\"",
            evidence={"conda.torch_build": build, "torch.location": location},
            fix=FixRef(recipe=None, options={"conda_install": [f"pytorch={build.get('version')}=cuda*"], "prefix": prefix},
                       commands=(f"conda install -p {sh(prefix)} -c conda-forge --force-reinstall {sh('pytorch=' + str(build.get('version')) + '=' + str(build.get('build')))}",
                                 "python -c 'import torch; print(torch.version.cuda, torch.cuda.is_available())'"),
                       note="reinstall conda's CUDA build so its files match its record, and check what torch reports"),
        )


RULES: tuple[Rule, ...] = (conda_cpu_pytorch_on_gpu_host, conda_pip_over_conda, conda_libstdcxx_too_old, conda_user_site_leak, conda_cuda_libs_mismatch,
                           conda_cuda_build_without_cuda)
