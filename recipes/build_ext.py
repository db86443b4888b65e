"""Recipe `extension-build`: build a CUDA extension (flash-attn, causal-conv1d, mamba-ssm, a
source folder) as a wheel against the torch installed in the target interpreter, and prove it.

The same flow as `build torch` (recipes/torch_source.py):
- `gather(options, kb)`: the command line becomes seed facts (`request.ext.*`, and the
  `request.build.*` ones the shared probes read), and the probes of
  doctor/probes/build_ext.py read the host into Facts.
- `make_plan(facts, kb)`: the rules of doctor/rules/build_ext.py judge them; an error refuses
  the build, otherwise an `ExtPlan` is made from the facts and the findings' decisions
  (the g++ for CUDAHOSTCXX). Pure: `to_plan().to_shell()` is the dry run.
- `execute(plan)`: fetch and unpack through recipes/apply.py, `pip wheel` streamed with the
  build's own [N/M] compile steps as progress and every line in the log, then the proof
  (`prove`): the wheel installed and imported in the target interpreter, the kernels in its
  shared objects (their .nv_fatbin, read by fwdoctor.fatbin) exactly the arches asked, no undefined symbol against
  the installed torch's libraries, and one call on a GPU where there is one.
"""

from __future__ import annotations

import glob
import os
import posixpath
import re
import time
import zipfile
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from fwdoctor import fatbin, runner
from fwdoctor.engine import Report, collect, judge
from fwdoctor.host import Host
from fwdoctor.interpreter import choose
from fwdoctor.kb import KB
from fwdoctor.model import Fact, Facts, Severity
from fwdoctor.probes.build_ext import EXT_PROBES, TORCH_TIMEOUT_S
from fwdoctor.quoting import comment, shell_line
from fwdoctor.recipes.apply import apply_plan
from fwdoctor.recipes.plan import FileWrite, Plan, Step
from fwdoctor.recipes.scripts import read as read_script
from fwdoctor.recipes.torch_source import stream
from fwdoctor.rules import build_ext as ext_rules
from fwdoctor.selection import SelectError, resolve_gpu

RECIPE = "extension-build"
BUILD_TIMEOUT_S = 6 * 3600.0  # flash-attn for several arches on few cores takes hours
PIP_TIMEOUT_S = 1800.0
PROBE_TIMEOUT_S = 30.0
PREPARE_SCRIPT = read_script("ext_prepare.py")
INPUTS: tuple[str, ...] = ("ext.source", "build.toolkit", "build.arch", "build.python", "ext.torch")
# cuobjdump --list-elf: "ELF file    1: causal_conv1d_cuda.1.sm_90.cubin"
_ELF = re.compile(r"\bsm_(\d+)([a-z]?)\.cubin\b")
_UNDEFINED = re.compile(r"^undefined symbol:\s*(\S+)")
_NOT_FOUND = re.compile(r"^\s*(\S+)\s*=>\s*not found")


class InputError(ValueError):
    """An option that cannot be used as given (no interpreter, no GPU for the default arch)."""


@dataclass(frozen=True)
class Options:
    """The command line of `fwdoctor build ext`, unvalidated."""

    spec: str
    python: str | None = None
    arch: str | None = None
    gpus: tuple[str, ...] = ()
    jobs: str = "auto"
    workdir: str | None = None


# =========================================================================== facts
def _jobs(text: str) -> int | None:
    if text == "auto":
        return None
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"--jobs {text}: expected a positive number or 'auto'")
    return int(text)


def arch_request(opts: Options, kb: KB) -> tuple[str, str]:
    """(TORCH_CUDA_ARCH_LIST text or "auto", where from): --arch, else --gpu, else this host's GPUs."""
    if opts.arch:
        return opts.arch, "--arch"
    if opts.gpus:
        try:
            ccs = sorted({resolve_gpu(kb, g).cc for g in opts.gpus}, key=lambda c: tuple(int(x) for x in c.split(".")))
        except SelectError as exc:
            raise InputError(str(exc)) from None
        return ";".join(ccs), "--gpu " + ", ".join(opts.gpus)
    return "auto", "this host's GPUs"


def _spec(spec: str) -> str:
    """A path (an sdist, a folder) made absolute; a requirement as given."""
    looks_like_path = "/" in spec or spec.endswith((".tar.gz", ".zip")) or os.path.isdir(spec)
    return os.path.abspath(spec) if looks_like_path else spec.strip()


def seed(opts: Options, kb: KB, host: Host) -> list[Fact]:
    """The request as seed facts. Raises InputError for an unusable option."""
    if any(ord(ch) < 0x20 for ch in opts.spec) or opts.spec.startswith("-"):
        raise InputError(f"SPEC {opts.spec!r}: starts with '-' or holds a control character")
    chosen = choose(host, opts.python)
    if chosen.path is None:
        raise InputError(chosen.why)
    arch, where = arch_request(opts, kb)
    return [
        Fact("request.ext.spec", _spec(opts.spec), source="SPEC"),
        Fact("request.ext.jobs", _jobs(opts.jobs), source="--jobs"),
        Fact("request.ext.arch_from", where, source=where),
        Fact("request.build.arch", arch, source=where),
        Fact("request.build.python", chosen.path, source=chosen.why),
        Fact("request.build.workdir", os.path.abspath(opts.workdir) if opts.workdir else None, source="--workdir"),
    ]


def gather(opts: Options, kb: KB, env: Mapping[str, str] | None = None, host: Host | None = None) -> Facts:
    host = host or Host.live_host(env, command_timeout=PROBE_TIMEOUT_S)
    return collect(host, EXT_PROBES, seed=seed(opts, kb, host))


def check_inputs(facts: Facts) -> None:
    for key in INPUTS:
        if not facts.known(key):
            raise InputError(facts.why(key))


# =========================================================================== plan
@dataclass(frozen=True)
class ExtPlan:
    """The build as data: prepare (fetch, unpack, keep the asked arches), build, then the proof."""

    name: str
    version: str | None
    python: str
    workdir: str
    src: str
    dist: str
    log: str
    archs: tuple[str, ...]
    env: Mapping[str, str]
    prepare: tuple[Step, ...]
    build: Step
    files: tuple[FileWrite, ...]
    notes: tuple[str, ...]
    import_name: str | None
    modules: tuple[str, ...]
    torch_lib: str | None
    gpu_present: bool = False
    smoke: str | None = None
    decisions: Mapping[str, Any] = field(default_factory=dict)

    def to_plan(self) -> Plan:
        title = f"build {self.name} {self.version or ''} against the installed torch for {', '.join('sm_' + a.replace('.', '') for a in self.archs)}"
        arches = ", ".join("sm_" + a.replace(".", "") for a in self.archs)
        verify = [Step((self.python, "-m", "pip", "install", "--force-reinstall", "--no-deps", "--no-index", "--find-links", self.dist, self.name),
                       why="install the wheel just built (from the dist folder only)")]
        modules = [m for m in (self.import_name, *self.modules) if m]
        if modules:
            verify.append(Step((self.python, "-c", "import torch, " + ", ".join(modules)), cwd=self.workdir,
                               why="it imports against the installed torch"))
        notes = (*self.notes, f"the proof after the build: each .so of the wheel holds exactly {arches} (its .nv_fatbin, as cuobjdump --list-elf lists it), "
                              f"`ldd -r` finds no undefined symbol with {self.torch_lib} on LD_LIBRARY_PATH, the import works"
                              + ("; one call on the GPU" if self.gpu_present and self.smoke else ""))
        return Plan(recipe=RECIPE, title=" ".join(title.split()), steps=(*self.prepare, self.build), files=self.files,
                    env=dict(self.env), verify=tuple(verify), notes=notes)


def default_workdir(name: str, version: str | None) -> str:
    return os.path.join("fwdoctor-build", f"ext-{name}-{version or 'latest'}")


def make_plan(facts: Facts, kb: KB) -> tuple[Report, ExtPlan | None]:
    """The pre-flight, and the plan when it found no error. Raises InputError when an input
    fact is unknown."""
    check_inputs(facts)
    report = judge(facts, kb, ext_rules.RULES)
    if report.has_errors:
        return report, None
    return report, ext_plan(facts, kb, report)


def ext_plan(facts: Facts, kb: KB, report: Report) -> ExtPlan:
    source, torch, toolkit = facts["ext.source"], facts["ext.torch"], facts["build.toolkit"]
    py = str(facts["build.python"].get("executable") or facts["request.build.python"])
    name, version = str(source["name"]), source.get("version")
    row = ext_rules.project_row(facts, kb)
    workdir = facts.get("request.build.workdir") or os.path.abspath(default_workdir(name, version))
    src, dist, log, sdists = f"{workdir}/src", f"{workdir}/dist", f"{workdir}/build.log", f"{workdir}/sdist"
    archs = tuple(ext_rules.requested_ccs(facts))
    jobs, jobs_why = ext_rules.jobs_for(facts, kb)
    script = f"{workdir}/ext_prepare.py"

    env: dict[str, str] = {
        "CUDA_HOME": str(toolkit["root"]),
        "PATH": ":".join(dict.fromkeys(p for p in [posixpath.dirname(py), f"{toolkit['root']}/bin", *str(facts.get("build.path") or "/usr/bin:/bin").split(":")] if p)),
        "TORCH_CUDA_ARCH_LIST": ";".join(archs),
        "MAX_JOBS": str(jobs),
    }
    notes = [
        f"torch {torch.get('version')} (CUDA {torch.get('cuda')}, C++11 ABI {torch.get('cxx11_abi')}, {torch.get('python')}) in {py}; "
        f"its arch list {' '.join(torch.get('arch_list') or []) or 'unknown'}",
        f"nvcc {toolkit.get('release')} at {toolkit.get('nvcc')} (from {toolkit.get('from', 'CUDA_HOME')})",
        f"arch {';'.join(archs)} from {facts['build.arch'].get('from')}; MAX_JOBS={jobs} ({jobs_why})",
        "pip wheel --no-build-isolation --no-deps: the torch installed in the target is the torch compiled against "
        "(an isolated build would fetch another torch: undefined symbols at import)",
    ]
    using = next((f.evidence.get("using") for f in report.findings if f.id == "host-compiler-unsupported" and f.severity is Severity.INFO), None)
    if using:
        # torch's cpp_extension passes $CC to nvcc as -ccbin (torch/utils/cpp_extension.py,
        # unix_cuda_flags); CUDAHOSTCXX is CMake's name for the same choice.
        env.update({"CUDAHOSTCXX": str(using), "CC": str(using), "CXX": str(using)})
        notes.append(f"host compiler {using}: torch passes $CC to nvcc as -ccbin")
    prepare_args = [py, script, "--from", sdists if source["kind"] == "requirement" else str(source["path"]), "--to", src]
    if row is not None:
        env.update(row.force_build)
        if row.arch_choice == "gencode-in-setup":
            prepare_args += ["--gencode", ",".join(archs)]
            notes.append(f"{row.name}'s setup.py fixes its -gencode list ({', '.join(row.archs_for(str(toolkit['release'])))}) and torch then ignores "
                         f"TORCH_CUDA_ARCH_LIST: {src}/setup.py is rewritten to keep {', '.join(archs)} only")
        if row.arch_choice == "arch-env" and row.arch_env:
            env[row.arch_env] = row.arch_env_value(archs)
            notes.append(f"{row.name}'s setup.py reads its arch list from {row.arch_env}, not TORCH_CUDA_ARCH_LIST: {row.arch_env}={env[row.arch_env]}")
        notes.extend(f"{row.name}: {n}" for n in row.notes)
        if row.nvcc_threads:
            notes.append(f"{row.name} runs each nvcc with --threads {row.nvcc_threads}: {row.gib_per_job:g} GiB per job is the peak of that")
    else:
        notes.append(f"no KB row for {name}: the arch list is left to its setup.py and TORCH_CUDA_ARCH_LIST, and the proof compares the kernels built")

    prepare: list[Step] = []
    # Without build isolation, setup.py's own imports (setuptools, wheel: `from wheel.bdist_wheel
    # import bdist_wheel` in the Dao-AILab projects) come from the target environment.
    missing = [m for m, present in (torch.get("build_requires") or {}).items() if not present]
    if missing:
        prepare.append(Step((py, "-m", "pip", "install", *missing), why=f"{', '.join(missing)}: imported by setup.py, missing from {py} "
                            "(--no-build-isolation takes them from there)", timeout_s=PIP_TIMEOUT_S))
        notes.append(f"the plan installs {', '.join(missing)} into {py}: setup.py imports them and the build is not isolated")
    if source["kind"] == "requirement":
        req = f"{name}=={version}" if version else name
        prepare.append(Step((py, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--no-build-isolation", "-d", sdists, req),
                            why=f"the {req} sdist from the index (its metadata step imports torch: no isolation)", timeout_s=PIP_TIMEOUT_S,
                            undo=f"rm -rf {sdists}"))
    prepare.append(Step(tuple(prepare_args), why=f"the source in {src}" + (" with only the asked -gencode entries" if "--gencode" in prepare_args else ""),
                        timeout_s=600.0))
    build = Step((py, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-v", "-w", dist, src),
                 why=f"compile the wheel into {dist} (log: {log})", cwd=workdir, timeout_s=BUILD_TIMEOUT_S,
                 # pip's output to a pipe is block-buffered: the [N/M] steps would come in bursts.
                 env={"PYTHONUNBUFFERED": "1"})
    files = (FileWrite(script, PREPARE_SCRIPT, mode=0o755, why="unpacks the source and keeps only the asked -gencode entries"),)
    return ExtPlan(name=name, version=version, python=py, workdir=workdir, src=src, dist=dist, log=log, archs=archs, env=env,
                   prepare=tuple(prepare), build=build, files=files, notes=tuple(notes),
                   import_name=row.import_name if row else None, modules=row.modules if row else (),
                   torch_lib=torch.get("lib_dir"),
                   gpu_present=bool(facts.get("gpus.list")), smoke=row.smoke if row else None,
                   decisions={"jobs": jobs, "host_cxx": using})


# =========================================================================== the proof
def parse_list_elf(text: str) -> list[str]:
    """cuobjdump --list-elf output -> the arches of its cubins ("9.0", "10.0a"), sorted, unique."""
    found = {f"{int(m.group(1)) // 10}.{int(m.group(1)) % 10}{m.group(2)}" for m in _ELF.finditer(text or "")}
    return sorted(found, key=lambda cc: (int(cc.split(".")[0]), cc))


def parse_ldd_r(text: str) -> tuple[list[str], list[str]]:
    """`ldd -r` output -> (undefined symbols other than the interpreter's own Py*, libraries not found)."""
    undefined, missing = [], []
    for line in (text or "").splitlines():
        m = _UNDEFINED.match(line.strip())
        if m:
            sym = m.group(1)
            if not sym.startswith(("Py", "_Py")):  # libpython's: resolved by the interpreter that loads it
                undefined.append(sym)
            continue
        m = _NOT_FOUND.match(line)
        if m:
            missing.append(m.group(1))
    return undefined, missing


@dataclass
class Proof:
    ok: bool
    lines: list[str]


def shared_objects(wheel: str, dest: str) -> list[str]:
    """The .so members of `wheel`, extracted under `dest`."""
    out = []
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.filename.endswith(".so") and not info.filename.startswith("/") and ".." not in info.filename.split("/"):
                out.append(zf.extract(info, dest))
    return out


def prove(ep: ExtPlan, wheel: str, env: Mapping[str, str]) -> Proof:
    """The wheel's kernels, its symbols against the installed torch, its import; a GPU call where one exists."""
    lines: list[str] = []
    ok = True
    want = sorted(ep.archs, key=lambda cc: (int(cc.split(".")[0]), cc))
    sos = shared_objects(wheel, f"{ep.workdir}/proof")
    if not sos:
        return Proof(False, [f"no shared object in {wheel}: nothing was compiled"])
    # torch/lib, then the nvidia-* wheels' lib folders torch itself loads from (its RPATH):
    # at import these are already loaded, so ldd must see the same copies (libcudart.so.13).
    wheels = sorted(glob.glob(os.path.join(os.path.dirname(os.path.dirname(ep.torch_lib)), "nvidia", "*", "lib"))) if ep.torch_lib else []
    ld = {**env, "LD_LIBRARY_PATH": ":".join(filter(None, [ep.torch_lib, *wheels, env.get("LD_LIBRARY_PATH")]))}
    for so in sos:
        name = os.path.basename(so)
        try:
            got, ptx = fatbin.arches(so), fatbin.arches(so, "ptx")
        except (OSError, fatbin.FatbinError) as exc:
            ok = False
            lines.append(f"kernels  {name}: cannot read its .nv_fatbin: {exc}")
        else:
            shown = ", ".join("sm_" + g.replace(".", "") for g in got) or "none"
            extra = f" and PTX for {', '.join('compute_' + p.replace('.', '') for p in ptx)}" if ptx else ""
            if got != want or ptx:
                ok = False
                lines.append(f"kernels  {name}: {shown}{extra}; asked {', '.join('sm_' + a.replace('.', '') for a in want)}")
            else:
                lines.append(f"kernels  {name}: {shown} (exactly the asked arches; no PTX)")
        res = runner.run(["ldd", "-r", so], timeout=60.0, env=ld)
        undefined, missing = parse_ldd_r(res.stdout + "\n" + res.stderr)
        if undefined or missing:
            ok = False
            lines.append(f"symbols  {name}: " + "; ".join(filter(None, [f"undefined {', '.join(undefined[:5])}" if undefined else "",
                                                                         f"not found {', '.join(missing)}" if missing else ""])))
        else:
            lines.append(f"symbols  {name}: no undefined symbol against {ep.torch_lib} (ldd -r)")
    modules = [m for m in (ep.import_name, *ep.modules) if m]
    if modules:
        code = "import torch\n" + "".join(f"import {m}\n" for m in modules) + f"print({modules[-1]}.__file__)"
        res = runner.run([ep.python, "-c", code], timeout=TORCH_TIMEOUT_S, env=dict(env), cwd=ep.workdir)
        if res.ok:
            lines.append(f"import   {', '.join(modules)} in {ep.python}: ok ({res.stdout.strip().splitlines()[-1]})")
        else:
            ok = False
            lines.append(f"import   {', '.join(modules)} in {ep.python}: failed: {(res.stderr or res.stdout).strip().splitlines()[-1:] or res.describe_failure()}")
    if ep.gpu_present and ep.smoke:
        res = runner.run([ep.python, "-c", ep.smoke], timeout=TORCH_TIMEOUT_S, env=dict(env), cwd=ep.workdir)
        ok = ok and res.ok
        lines.append(f"gpu call {'ok' if res.ok else 'failed: ' + res.describe_failure()}")
    elif not ep.gpu_present:
        lines.append("gpu call not made: no GPU on this host")
    return Proof(ok, lines)


# =========================================================================== execute
@dataclass
class ExtResult:
    ok: bool
    stage: str  # "prepare", "build", "install", "proof", "done"
    message: str
    log_path: str
    wheel: str | None = None
    seconds: float = 0.0
    proof: list[str] = field(default_factory=list)


ProgressFn = Callable[[str], None]


def summarize_failure(log_text: str) -> list[str]:
    """The build's failure in the words `fwdoctor triage` uses: each error signature that
    matches the end of the log ("cuda-version-mismatch: The detected CUDA version ...")."""
    from fwdoctor.triage.errors import find
    from fwdoctor.triage.text import Lines

    out: list[str] = []
    for frag in find(Lines.of(log_text)):
        for fact in frag.facts:
            if fact.key == "report.errors":
                out += [f"{e.get('kind')}: {e.get('text')}" for e in fact.value]
    return list(dict.fromkeys(out))[:5]


def _log_end(path: str, limit: int = 256 * 1024) -> str:
    """The last `limit` bytes of the log (an nvcc error is near the end; the log can be large)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def execute(ep: ExtPlan, progress: ProgressFn | None = None, base_env: Mapping[str, str] | None = None) -> ExtResult:
    say = progress or (lambda line: None)
    os.makedirs(ep.workdir, exist_ok=True)
    base = dict(os.environ if base_env is None else base_env)
    start = time.monotonic()
    prep = Plan(recipe=RECIPE, title="prepare", steps=ep.prepare, files=ep.files, env=dict(ep.env))
    result = apply_plan(prep, confirm=None, log_path=ep.log, progress=say, env=base)
    if not result.ok:
        return ExtResult(False, "prepare", result.summary(), ep.log)
    env = {**base, **ep.env, **ep.build.env}
    say(f"build: {shell_line(ep.build.argv)} (log {comment(ep.log)})")
    status = stream(ep.build.argv, env=env, cwd=ep.build.cwd, timeout=ep.build.timeout_s, log_path=ep.log,
                    on_progress=lambda done, total: say(f"build: [{done}/{total}] compile steps"))
    seconds = time.monotonic() - start
    if not status.ok:
        signatures = summarize_failure(_log_end(ep.log))
        summary = ("\n".join(f"  {s}" for s in signatures) + "\n") if signatures else ""
        return ExtResult(False, "build", f"build failed after {seconds:.0f} s: {status.reason}\n{summary}last lines:\n{status.tail}\nwhole log: {ep.log}",
                         ep.log, seconds=seconds)
    wheels = sorted(glob.glob(f"{ep.dist}/*.whl"), key=os.path.getmtime)
    if not wheels:
        return ExtResult(False, "build", f"pip wheel ended without a wheel in {ep.dist}; log: {ep.log}", ep.log, seconds=seconds)
    wheel = wheels[-1]
    inst = runner.run([ep.python, "-m", "pip", "install", "--force-reinstall", "--no-deps", wheel], timeout=PIP_TIMEOUT_S, env=env)
    if not inst.ok:
        return ExtResult(False, "install", f"pip install {wheel}: {inst.describe_failure()}", ep.log, wheel, seconds)
    proof = prove(ep, wheel, env)
    for line in proof.lines:
        say(f"proof: {line}")
    verdict = "built and proven" if proof.ok else "built, but the proof failed"
    return ExtResult(proof.ok, "done" if proof.ok else "proof", f"{verdict} in {seconds:.0f} s: {wheel} (log: {ep.log})", ep.log, wheel, seconds, proof.lines)


def run_plan(opts: Options, kb: KB, env: Mapping[str, str] | None = None, host: Host | None = None) -> tuple[Report, ExtPlan | None]:
    """gather + make_plan: what the command calls."""
    return make_plan(gather(opts, kb, env, host), kb)

