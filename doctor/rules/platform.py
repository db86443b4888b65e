"""What prebuilt binaries ask of the machine: cpu-lacks-avx, glibc-too-old, python-arch-mismatch,
glibc-execstack-refused.

RULES judge the platform.* and system.glibc facts of a live host or a --root (probes/platform.py).
REPORT_RULES are their report-side twins, which `fwdoctor triage` runs where the regular rule
could not (it said "not checked"): they read the rows of doctor/kb/errors.yaml that matched the
pasted text and quote the line. python-arch-mismatch has only its report-side rule: whether an
x86_64 Python runs under Rosetta is a macOS question (sysctl.proc_translated), and no probe of
this Linux doctor asks it. glibc-execstack-refused has only its report-side rule too, for now: a
live twin would read each installed .so's PT_GNU_STACK program header (a bounded read of the
ELF header and its program headers), which no probe does yet; `readelf -lW LIB | grep
GNU_STACK` settles it by hand (RWE: the library asks for an executable stack).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from packaging.version import Version

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, NotCheckable, Rule, report_errors, report_line, rule, sh
from fwdoctor.versions import parse_version

if TYPE_CHECKING:
    from fwdoctor.kb import KB

# Which frameworks' prebuilt x86 wheels need AVX, from which release: doctor/kb/frameworks.yaml,
# each framework's `cpu_features` rows (with their sources), read through kb.frameworks.
_NAMES = {"jax": "jaxlib", "tensorflow": "TensorFlow", "paddle": "Paddle"}
_FIX = ("grep -o -w -m1 avx /proc/cpuinfo   # prints nothing on a CPU without AVX",)


def _cpu_name(facts: Facts) -> str:
    cpu = facts.get("platform.cpu")
    model = cpu.get("model") if isinstance(cpu, dict) else None
    return f"this CPU ({model})" if model else "this CPU"


def _needs_avx(kb: KB, entry: dict[str, Any]) -> bool:
    framework = str(entry.get("framework"))
    return framework in _NAMES and kb.frameworks.needs_cpu_feature(framework, entry.get("version"), "avx")


@rule("cpu-lacks-avx", needs=("platform.cpu", "frameworks.installed"))
def cpu_lacks_avx(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads the x86 CPU's flags (/proc/cpuinfo; in a report, lscpu's "Flags:" line) and,
        when AVX is not among them, names the installed frameworks whose prebuilt binaries use
        it: TensorFlow >= 1.6, jaxlib, Paddle's default wheels. In a report it also reads
        jaxlib's own CPU check and a framework killed by SIGILL on import.

    Why is this bad?
        A binary compiled with AVX instructions dies at the first one on a CPU without them.
        TensorFlow and Paddle end in "Illegal instruction (core dumped)" on `import` (on
        Windows "DLL load failed: A dynamic link library (DLL) initialization routine
        failed"); jaxlib checks first and raises "This version of jaxlib was built using AVX
        instructions, which your CPU and/or operating system do not support". Reinstalling
        the same wheel never helps. CPUs without AVX: Intel before Sandy Bridge (Westmere
        Xeons such as the X5690), Pentium/Celeron/Atom lines until Tiger Lake, AMD before
        Bulldozer (the A4-3300M); a VM whose CPU model hides AVX also looks like one.

    Example
            >>> import tensorflow as tf
            Illegal instruction (core dumped)

        with `grep -o -w -m1 avx /proc/cpuinfo` printing nothing: invalid. The same CPU with
        no framework installed, or a CPU whose flags include avx: valid.

    Fix
        Run on a machine whose CPU has AVX, or install a build made without it: Paddle's
        "noavx" wheels (paddlepaddle.org.cn's noavx index), TensorFlow <= 1.5 or a source
        build (`bazel build` without `-mavx`), jaxlib built from source on that CPU.
    """
    cpu = facts["platform.cpu"]
    if not isinstance(cpu, dict):
        return None  # not an x86 CPU: AVX is an x86 extension
    flags = cpu.get("flags")
    if not isinstance(flags, list):
        raise NotCheckable("the CPU's flags are not shown (`grep -m1 ^flags /proc/cpuinfo`, or lscpu's Flags line)")
    if "avx" in flags:
        return None
    users = [e for e in facts["frameworks.installed"] or [] if isinstance(e, dict) and _needs_avx(kb, e)]
    if not users:
        # torch has no cpu_features row: ATen picks its CPU kernels by capability at run time,
        # and no source was found that its wheels need AVX to import
        return None
    names = ", ".join(f"{_NAMES[e['framework']]} {e.get('version') or ''}".rstrip() for e in users)
    return Hit(
        f"{_cpu_name(facts)} has no AVX ({facts.source('platform.cpu')}); the prebuilt {names} installed here "
        f"{'uses' if len(users) == 1 else 'use'} AVX and cannot import on it",
        evidence={"platform.cpu": cpu, "frameworks": [e.get("framework") for e in users]},
        fix=FixRef(commands=_FIX, note="run on a CPU with AVX, or install a build without it (Paddle's noavx wheels, TensorFlow <= 1.5, jaxlib built from source)"),
    )


@rule("glibc-too-old", needs=("system.glibc", "platform.wheel_glibc"))
def glibc_too_old(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Compares the system's glibc (`ldd --version`) with the glibc each installed torch,
        jaxlib, TensorFlow and Paddle wheel was built for: its manylinux tag (PEP 600:
        manylinux_2_28 runs on glibc >= 2.28; manylinux2014 is 2.17). In a report it reads the
        loader's "version `GLIBC_2.xx' not found (required by ...)".

    Why is this bad?
        A binary linked against newer glibc symbols cannot load on an older glibc: `import`
        fails with "/lib64/libm.so.6: version `GLIBC_2.23' not found (required by
        .../xla_extension.so)". pip on that machine would not choose such a wheel, so it comes
        from elsewhere: an environment copied or shared from a newer machine, `pip install
        --platform`, a wheel whose tag claims an older glibc than it needs (jaxlib 0.1.x on
        CentOS 7, jax-ml/jax#854), or a binary built on the newer machine.

    Example
        glibc 2.17 (CentOS 7) with jaxlib tagged manylinux_2_27_x86_64: invalid; glibc 2.35
        (Ubuntu 22.04) with the same wheel: valid.

    Fix
        Reinstall the package with pip on this machine (it picks a wheel built for this
        glibc, where one exists), run in a container or on a distribution with a newer glibc,
        or build the package from source here.
    """
    system = facts["system.glibc"]
    have = parse_version(system)
    if have is None:
        return None  # musl, or no glibc: manylinux wheels are not for it at all
    wheels = facts["platform.wheel_glibc"]
    newer = [w for w in wheels if isinstance(w, dict) and (parse_version(w.get("glibc")) or have) > have] if isinstance(wheels, list) else []
    if not newer:
        return None
    names = "; ".join(f"{w['dist']} {w['version']} ({w['tag']}) needs glibc >= {w['glibc']}" for w in newer)
    return Hit(
        f"the system's glibc is {system} ({facts.source('system.glibc')}): {names}",
        evidence={"system.glibc": system, "wheels": newer},
        fix=FixRef(commands=(f"python -m pip install --force-reinstall --no-cache-dir {' '.join(sorted({w['dist'] for w in newer}))}   # a wheel for this glibc, where one exists",
                             "ldd --version   # this system's glibc"),
                   note="reinstall with pip on this machine (it picks a wheel built for this glibc, where one exists), run in a container or on a distribution with a newer glibc, or build from source here"),
    )


# ----------------------------------------------------------------------------- report-side twins
@rule("cpu-lacks-avx", needs=("report.errors",), optional=("platform.cpu", "report.frameworks_named"))
def cpu_lacks_avx_said(facts: Facts, kb: KB) -> Hit | None:
    """jaxlib's CPU check ("built using AVX instructions, which your CPU ... do not support"),
    or TensorFlow/Paddle/jaxlib killed by SIGILL right after its import (see cpu-lacks-avx), or
    a bare SIGILL where the report's own CPU flags lack AVX and it names one such framework.
    jaxlib's macOS build says the same of an x86 Python under Rosetta: that is
    python-arch-mismatch's."""
    if report_errors(facts, "x86-python-on-apple-silicon"):
        return None
    guard = report_errors(facts, "jaxlib-cpu-lacks-avx")
    if guard:
        isa = guard[0].get("isa") or "AVX"
        message = f"jaxlib's CPU check says {_cpu_name(facts)} lacks {isa}, which this jaxlib was built with: {report_line(guard[0])}"
        said = guard
    else:
        cpu = facts.get("platform.cpu")
        if isinstance(cpu, dict) and "avx" in (cpu.get("flags") or ()):
            return None  # the report's own flags show AVX: the SIGILL has another cause
        said = [e for e in report_errors(facts, "illegal-instruction") if e.get("framework") in _NAMES and kb.frameworks.cpu_feature(str(e["framework"]), "avx")]
        if not said and isinstance(cpu, dict) and cpu.get("flags") is not None:
            # the report's own flags show no AVX: the SIGILL is the framework's where the
            # report names one AVX-built framework and no other (fwdoctor.triage.framework_named)
            named = facts.get("report.frameworks_named")
            if isinstance(named, list) and len(named) == 1 and named[0] in _NAMES and kb.frameworks.cpu_feature(str(named[0]), "avx"):
                said = [dict(e, framework=named[0]) for e in report_errors(facts, "illegal-instruction")]
        if not said:
            return None
        name = _NAMES[said[0]["framework"]]
        message = (f"{name} died of an illegal instruction on import ({report_line(said[0])}): its prebuilt binaries use AVX, "
                   f"which {_cpu_name(facts)} most likely lacks")
    return Hit(message, evidence={"report.errors": said},
               fix=FixRef(commands=_FIX, note="run on a CPU with AVX, or install a build without it (Paddle's noavx wheels, TensorFlow <= 1.5, jaxlib built from source)"))


@rule("glibc-too-old", needs=("report.errors",), optional=("system.glibc",))
def glibc_too_old_said(facts: Facts, kb: KB) -> Hit | None:
    """The loader's "version `GLIBC_2.xx' not found (required by ...)" (see glibc-too-old)."""
    said = report_errors(facts, "glibc-version-not-found")
    if not said:
        return None
    error = said[0]
    system = facts.get("system.glibc")
    have = f" ({system}, {facts.source('system.glibc')})" if system else ""
    return Hit(
        f"the system's glibc{have} is older than {error.get('required_by') or 'a library'} needs ({error['needed']}): {report_line(error)}",
        evidence={"report.errors": said, "system.glibc": system},
        fix=FixRef(commands=("ldd --version   # this system's glibc",),
                   note="run it on a newer distribution or in a container with one, install a release built for this glibc, or build it from source here"),
    )


# glibc 2.41's release notes (https://lists.gnu.org/archive/html/info-gnu/2025-01/msg00014.html):
# "dlopen and dlmopen no longer make the stack executable if a shared library requires it ...
# Instead, loading such objects will fail." Before 2.41 the same words end in ": Permission
# denied" where SELinux forbids execmem: another cause, not matched by the row.
EXECSTACK_REFUSED_SINCE = Version("2.41")


@rule("glibc-execstack-refused", needs=("report.errors",), optional=("system.glibc",))
def glibc_execstack_refused(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads the loader's "LIB: cannot enable executable stack as shared object requires:
        Invalid argument" in a report (the row execstack-refused of doctor/kb/errors.yaml) and
        names the library; where the report shows the system's glibc (conda's __glibc
        virtual package, collect_env's libc line) and it is older than 2.41, it stays silent.
        Judged from a report's text only, for now: no probe reads the PT_GNU_STACK program
        header of the installed libraries yet.

    Why is this bad?
        Since glibc 2.41, dlopen no longer makes the stack executable for a shared object
        whose GNU_STACK program header asks for one (RWE, or no GNU_STACK at all): loading it
        fails (glibc 2.41 NEWS; sourceware bug 32653). A Python extension or a library it
        bundles that was linked from assembly without a .note.GNU-stack section asks for an
        executable stack without needing one, so `import` fails after a distribution upgrade
        (Arch, Fedora 42, Debian 13): conda-forge's libtorch_cpu.so
        (conda-forge/pytorch-cpu-feedstock#350), ctranslate2 4.5.0's wheel
        (OpenNMT/CTranslate2#1849). glibc-too-old is the opposite case.

    Example
            ImportError: libctranslate2-bc15bf3f.so.4.5.0: cannot enable executable stack as shared object requires: Invalid argument

        on glibc 2.41: invalid. The same wheel on glibc 2.40, or a build linked with
        -z noexecstack on 2.41: valid.

    Fix
        Update the package to a build linked with `-Wl,-z,noexecstack` (conda-forge rebuilt
        its pytorch so, pytorch-cpu-feedstock#355). Meanwhile run the one program with
        `GLIBC_TUNABLES=glibc.rtld.execstack=2`, which lets glibc grant the executable stack
        again, or clear the flag on the library (`patchelf --clear-execstack LIB`, patchelf
        >= 0.18) where nothing in it needs an executable stack.
    """
    said = report_errors(facts, "execstack-refused")
    if not said:
        return None
    system = facts.get("system.glibc")
    have = parse_version(system) if system else None
    if have is not None and have < EXECSTACK_REFUSED_SINCE:
        return None  # an older glibc refused for another reason (an SELinux execmem denial says "Permission denied")
    library = said[0].get("library") or "a library"
    where = f"the system's glibc is {system} ({facts.source('system.glibc')})" if system else "the system's glibc is 2.41 or newer"
    return Hit(
        f"{where} and refuses to load {library}, which asks for an executable stack: {report_line(said[0])}",
        evidence={"report.errors": said, "system.glibc": system},
        fix=FixRef(commands=(f"readelf -lW {sh(library)} | grep GNU_STACK   # RWE: the library asks for an executable stack",
                             "GLIBC_TUNABLES=glibc.rtld.execstack=2 python -c 'import ...'   # meanwhile, for this one program",
                             "ldd --version   # this system's glibc"),
                   note="update the package to a build linked with -Wl,-z,noexecstack; meanwhile GLIBC_TUNABLES=glibc.rtld.execstack=2 for that program, "
                        "or patchelf --clear-execstack on the library where nothing in it needs an executable stack"),
    )


@rule("python-arch-mismatch", needs=("report.errors",))
def python_arch_mismatch(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads jaxlib's macOS hint ("This error is frequently encountered on macOS when running
        an x86 Python installation on ARM hardware") in a report, and where the report names
        the Mac's Apple silicon chip, quotes it. Judged from a report's text only: whether a
        Python runs translated is a macOS question (`sysctl -n sysctl.proc_translated` prints
        1 under Rosetta), which no probe of this Linux doctor asks.

    Why is this bad?
        An x86_64 Python on a Mac with Apple silicon runs under Rosetta 2, and pip installs
        x86_64 wheels into it. Rosetta does not run AVX instructions (Apple's "About the
        Rosetta translation environment", developer.apple.com/documentation/apple-silicon),
        so x86 jaxlib and TensorFlow wheels refuse to load ("This version of jaxlib was built using AVX
        instructions, which your CPU and/or operating system do not support"); everything
        runs slower, and arm64-only wheels (Metal plugins) cannot be installed at all.

    Example
            This version of jaxlib was built using AVX instructions, which your CPU and/or operating system do not support. This error is frequently encountered on macOS when running an x86 Python installation on ARM hardware.

        on an Apple M3 Pro: invalid. `python -c 'import platform; print(platform.machine())'`
        printing arm64: valid.

    Fix
        Install an arm64 Python (python.org's universal2 installer, Homebrew under
        /opt/homebrew, conda's osx-arm64 Miniforge, or start it with `arch -arm64`) and
        reinstall the packages in it.
    """
    said = report_errors(facts, "x86-python-on-apple-silicon")
    if not said:
        return None
    chip = said[0].get("apple_silicon")
    where = f" (the report names the chip: {chip})" if chip else ""
    return Hit(
        f"an x86_64 Python runs under Rosetta on Apple silicon{where}, so x86 wheels find no AVX: {report_line(said[0])}",
        evidence={"report.errors": said},
        fix=FixRef(commands=("python -c 'import platform; print(platform.machine())'   # x86_64 under Rosetta, arm64 natively",
                             "arch -arm64 python3 -m pip install --force-reinstall jax jaxlib   # with an arm64 Python"),
                   note="install an arm64 Python (python.org universal2, Homebrew in /opt/homebrew, Miniforge osx-arm64) and reinstall the packages in it"),
    )


RULES: tuple[Rule, ...] = (cpu_lacks_avx, glibc_too_old)
REPORT_RULES: tuple[Rule, ...] = (cpu_lacks_avx_said, glibc_too_old_said, python_arch_mismatch, glibc_execstack_refused)
