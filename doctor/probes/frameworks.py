"""JAX, TensorFlow and PaddlePaddle as installed, read from files only (like probes/torch.py):
each distribution's dist-info METADATA (version, Requires-Dist with its extras), TensorFlow's
tensorflow/python/platform/build_info.py (the CUDA/cuDNN/GPU targets it was built for) and
Paddle's paddle/version/__init__.py (cuda_version, cudnn_version, compiled_cuda_archs), plus
every nvidia-* wheel in the environment. Nothing is imported (--deep does that, in a child).

Shell equivalent:
    ls "$SITE" | grep -E '^(jax|jaxlib|jax_cuda1[23]_(plugin|pjrt)|tensorflow|tensorflow_cpu|paddlepaddle(_gpu)?|nvidia_.*)-.*\\.dist-info$'
    cat "$SITE/tensorflow/python/platform/build_info.py" "$SITE/paddle/version/__init__.py"
"""

from __future__ import annotations

import ast
import posixpath
import re
from typing import Any, Callable, Iterable

from fwdoctor.host import Host, UnreadableError
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import Read, probe
from fwdoctor.probes.torch import _EXTRA_MARKER, _REQUIREMENT, import_dirs

# A dist-info folder: NAME-VERSION.dist-info, NAME normalised with underscores (PEP 427).
_DIST = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)\.dist-info$")
_EXTRA = re.compile(r"""\bextra\s*==\s*['"]([^'"]+)['"]""")
_PLUGIN = re.compile(r"^jax-cuda(\d+)-plugin$")
# Which distributions make up each framework (normalised names, PEP 503 with dashes).
MEMBERS = {
    "jax": ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-cuda13-plugin", "jax-cuda13-pjrt"),
    "tensorflow": ("tensorflow", "tensorflow-cpu"),
    "paddle": ("paddlepaddle", "paddlepaddle-gpu"),
}
TF_BUILD_INFO = "tensorflow/python/platform/build_info.py"
PADDLE_VERSION = "paddle/version/__init__.py"
READS = (
    Read("**/jax*.dist-info/METADATA", limit=256 * 1024),
    Read("**/tensorflow*.dist-info/METADATA", limit=256 * 1024),
    Read("**/paddlepaddle*.dist-info/METADATA", limit=256 * 1024),
    Read(f"**/{TF_BUILD_INFO}", limit=64 * 1024),
    Read(f"**/{PADDLE_VERSION}", limit=64 * 1024),
)
KEYS = ("frameworks.installed", "frameworks.nvidia_wheels")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@probe("frameworks", provides=KEYS)
def frameworks_install(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    dirs = import_dirs(host, facts)
    if dirs is None:
        for key in KEYS:
            yield Fact.unknown(key, f"no interpreter to inspect ({facts.why('python.site_packages')})")
        return
    dists = find_dists(host, dirs)
    where = " ".join(dirs) or "no site dirs"
    nvidia = {name: d["version"] for name, d in dists.items() if name.startswith("nvidia-")}
    yield Fact("frameworks.nvidia_wheels", nvidia, source=where)
    # Which installed nvidia-* wheels show that a framework's CUDA extra was installed: not
    # those torch pulls in itself (the same names since CUDA 13), or torch + jax[cuda13-local]
    # reads as a broken jax[cuda13] missing its compiler wheels.
    evidence = nvidia
    if any(name in dists for name in _EXTRA_HOLDERS):
        from_torch = pulled_in_by_torch(host, dists)
        evidence = {name: v for name, v in nvidia.items() if name not in from_torch}
    installed: list[dict[str, Any]] = []
    for framework, names in MEMBERS.items():
        present = {n: dists[n] for n in names if n in dists}
        if not present:
            continue
        metas: dict[str, dict[str, Any]] = {}
        for name, dist in present.items():
            try:
                text = host.read_text(posixpath.join(dist["path"], "METADATA"), limit=256 * 1024)
            except UnreadableError as exc:
                yield ProbeFailure("frameworks", f"cannot read {exc.path}: {exc.reason}")
                text = None
            metas[name] = parse_metadata(text or "")
        build = {"jax": _jax, "tensorflow": _tensorflow, "paddle": _paddle}[framework]
        try:
            record = build(host, present, metas, evidence)
            if framework == "jax":
                record = _conda_cuda_jaxlib(record, facts.get("conda.packages"))
        except UnreadableError as exc:
            yield ProbeFailure("frameworks", f"cannot read {exc.path}: {exc.reason}")
            continue
        installed.append(record)
    yield Fact("frameworks.installed", installed, source=where)


# --------------------------------------------------------------------------- locating
def find_dists(host: Host, dirs: list[str]) -> dict[str, dict[str, str]]:
    """{normalised name: {"version", "path" (the dist-info), "dir"}} for the frameworks' and
    nvidia-* distributions, the first in import order winning (what `import` would load)."""
    wanted = {n for names in MEMBERS.values() for n in names} | {"torch", "cuda-toolkit"}
    return first_dists(host, dirs, lambda name: name in wanted or name.startswith("nvidia-"))


def first_dists(host: Host, dirs: list[str], wanted: Callable[[str], bool]) -> dict[str, dict[str, str]]:
    """{normalised name: {"version", "path" (the dist-info), "dir"}} of the `wanted`
    distributions installed in `dirs`, the first in import order winning (the one `import`
    loads)."""
    out: dict[str, dict[str, str]] = {}
    for directory in dirs:
        for entry in host.listdir(directory):
            match = _DIST.match(entry)
            if not match:
                continue
            name = normalise(match.group("name"))
            if name in out or not wanted(name):
                continue
            out[name] = {"version": match.group("version"), "path": posixpath.join(directory, entry), "dir": directory}
    return out


# --------------------------------------------------------------------------- parsers
def parse_metadata(text: str) -> dict[str, Any]:
    """{"version", "requires_python", "requires": [(name, specifier, extra or None)]} from a
    METADATA file's headers. Unlike the torch probe this keeps requirements of extras: a
    framework's nvidia-* wheels come from one (`jax[cuda13]` -> plugin[with-cuda],
    `tensorflow[and-cuda]`)."""
    out: dict[str, Any] = {"version": None, "requires_python": None, "requires": []}
    for line in text.splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "version" and out["version"] is None:
            out["version"] = value
        elif key == "requires-python":
            out["requires_python"] = value
        elif key == "requires-dist":
            match = _REQUIREMENT.match(value)
            if match is None:
                continue
            marker = match.group("marker") or ""
            extra = _EXTRA.search(marker) if _EXTRA_MARKER.search(marker) else None
            spec = ",".join(sorted(s.strip() for s in match.group("spec").strip().strip("()").split(",") if s.strip()))
            out["requires"].append((normalise(match.group("name")), spec, extra.group(1) if extra else None))
    return out


def parse_build_info(text: str) -> dict[str, Any]:
    """TensorFlow's generated build_info.py: `build_info = collections.OrderedDict([(k, v),
    ...])`, read without executing it. {} when the shape is not that."""
    match = re.search(r"OrderedDict\((\[.*\])\)", text, re.S)
    if not match:
        return {}
    try:
        pairs = ast.literal_eval(match.group(1))
    except (ValueError, SyntaxError):
        return {}
    return {str(k): v for k, v in pairs} if isinstance(pairs, list) else {}


_ASSIGN = re.compile(r"^(\w+)\s*=\s*(.+?)\s*$", re.M)


def parse_paddle_version(text: str) -> dict[str, Any]:
    """The literal assignments of paddle/version/__init__.py (full_version, cuda_version,
    cudnn_version, nccl_version, compiled_cuda_archs, ...). 'False' means "not built with"."""
    out: dict[str, Any] = {}
    for name, value in _ASSIGN.findall(text):
        try:
            out[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            continue
    return out


def _cuda_requires(meta: dict[str, Any], extra: str) -> dict[str, str]:
    return {name: spec for name, spec, ex in meta["requires"] if ex == extra and name.startswith("nvidia-")}


def _in_force(requires: dict[str, str], evidence: dict[str, str]) -> bool:
    """Were the CUDA extra's wheels installed (jax[cuda13], tensorflow[and-cuda])? Yes when
    any of them is among `evidence` (the installed nvidia-* wheels torch does not pull in):
    a `-local` install uses the system's CUDA and brings none."""
    return any(name in evidence for name in requires)


# The frameworks whose CUDA wheels come from an extra (jax's plugin: with-cuda; tensorflow: and-cuda).
_EXTRA_HOLDERS = ("jax-cuda12-plugin", "jax-cuda13-plugin", "tensorflow")
# torch's CUDA 13 wheels (2.14.1: tests/data/frameworks): `Requires-Dist: cuda-toolkit[cublas,cudart,...]==13.0.3`.
_TOOLKIT_EXTRAS = re.compile(r"^Requires-Dist:\s*cuda[-_.]toolkit\s*\[([^\]]*)\][^;\n]*(;[^\n]*)?$", re.M | re.I)


def pulled_in_by_torch(host: Host, dists: dict[str, dict[str, str]]) -> set[str]:
    """The nvidia-* wheels the installed torch requires: its own Requires-Dist, and those of
    the cuda-toolkit metapackage's extras it names (the wheel's METADATA, e.g. `extra ==
    'cublas'` -> nvidia-cublas, nvidia-cuda-nvrtc). Empty without torch; unreadable files
    count as requiring nothing (the extra is then judged on every wheel, as before)."""
    if "torch" not in dists:
        return set()
    try:
        text = host.read_text(posixpath.join(dists["torch"]["path"], "METADATA"), limit=1024 * 1024) or ""
    except UnreadableError:
        return set()
    meta = parse_metadata(text)
    names = {name for name, _spec, extra in meta["requires"] if extra is None and name.startswith("nvidia-")}
    extras = {e.strip().lower() for m in _TOOLKIT_EXTRAS.finditer(text) if not (m.group(2) and _EXTRA_MARKER.search(m.group(2))) for e in m.group(1).split(",")}
    if extras and "cuda-toolkit" in dists:
        try:
            toolkit = parse_metadata(host.read_text(posixpath.join(dists["cuda-toolkit"]["path"], "METADATA"), limit=1024 * 1024) or "")
        except UnreadableError:
            return names
        names |= {name for name, _spec, extra in toolkit["requires"] if extra in extras and name.startswith("nvidia-")}
    return names


def _conda_cuda_jaxlib(record: dict[str, Any], conda_packages: Any) -> dict[str, Any]:
    """A conda-forge CUDA jaxlib carries its CUDA backend inside jaxlib itself (build string
    cuda12py312h..._201; no jax-cudaNN-plugin dist, which is how pip installs it), so a jaxlib
    whose conda record, of the same version, has a CUDA label is a GPU build of that CUDA."""
    if record["gpu_build"] or not isinstance(conda_packages, dict):
        return record
    conda = conda_packages.get("jaxlib")
    version = record["packages"].get("jaxlib")
    if not isinstance(conda, dict) or version is None or conda.get("version") != version:
        return record
    from fwdoctor.versions import conda_cuda_label as cuda_label

    label = cuda_label(str(conda.get("build")))
    if label is None:
        return record
    return {**record, "gpu_build": True, "cuda": label.split(".")[0], "conda_build": conda.get("build")}


def _jax(host: Host, present: dict, metas: dict, nvidia: dict[str, str]) -> dict[str, Any]:
    packages = {n: d["version"] for n, d in present.items()}
    version = packages.get("jax") or packages.get("jaxlib")
    plugins = sorted(n for n in present if _PLUGIN.match(n))
    plugin = plugins[-1] if plugins else None
    cuda = _PLUGIN.match(plugin).group(1) if plugin else None
    requires: dict[str, str] = {}
    requires_from = None
    if plugin:
        extra_reqs = _cuda_requires(metas[plugin], "with-cuda")
        if _in_force(extra_reqs, nvidia):
            requires, requires_from = extra_reqs, f"{plugin} {packages[plugin]} [with-cuda]"
    # The pairing jax itself declares: its jaxlib range, and plugin == jax for each cudaNN extra.
    pairing: dict[str, str] = {}
    jax_meta = metas.get("jax")
    if jax_meta:
        for name, spec, extra in jax_meta["requires"]:
            if name == "jaxlib" and extra is None:
                pairing["jaxlib"] = spec
            elif plugin and name == plugin and extra == f"cuda{cuda}":
                pairing[plugin] = spec
    if plugin:
        pjrt = f"jax-cuda{cuda}-pjrt"
        for name, spec, extra in metas[plugin]["requires"]:
            if name == pjrt and extra is None:
                pairing[pjrt] = spec
    return {
        "framework": "jax",
        "version": version,
        "packages": packages,
        "gpu_build": plugin is not None,
        "cuda": cuda,
        "cudnn": None,
        "arch_list": None,
        "requires": requires,
        "requires_from": requires_from,
        "pairing": pairing,
        "location": posixpath.join(present.get("jax", present.get("jaxlib"))["dir"], "jax" if "jax" in present else "jaxlib"),
    }


def _tensorflow(host: Host, present: dict, metas: dict, nvidia: dict[str, str]) -> dict[str, Any]:
    name = "tensorflow" if "tensorflow" in present else "tensorflow-cpu"
    dist = present[name]
    info = parse_build_info(host.read_text(posixpath.join(dist["dir"], TF_BUILD_INFO), limit=64 * 1024) or "")
    extra_reqs = _cuda_requires(metas[name], "and-cuda")
    in_force = _in_force(extra_reqs, nvidia)
    gpu = info.get("is_cuda_build") if "is_cuda_build" in info else None
    caps = info.get("cuda_compute_capabilities")
    return {
        "framework": "tensorflow",
        "version": dist["version"],
        "packages": {n: d["version"] for n, d in present.items()},
        "gpu_build": gpu,
        "cuda": str(info["cuda_version"]) if info.get("cuda_version") else None,
        "cudnn": str(info["cudnn_version"]) if info.get("cudnn_version") else None,
        "arch_list": [str(c) for c in caps] if isinstance(caps, list) else None,
        "requires": extra_reqs if in_force else {},
        "requires_from": f"{name} {dist['version']} [and-cuda]" if in_force else None,
        "cuda_extra": extra_reqs,
        "pairing": {},
        "location": posixpath.join(dist["dir"], "tensorflow"),
        "build_info": f"{dist['dir']}/{TF_BUILD_INFO}" if info else None,
    }


def _paddle(host: Host, present: dict, metas: dict, nvidia: dict[str, str]) -> dict[str, Any]:
    name = "paddlepaddle-gpu" if "paddlepaddle-gpu" in present else "paddlepaddle"
    dist = present[name]
    info = parse_paddle_version(host.read_text(posixpath.join(dist["dir"], PADDLE_VERSION), limit=64 * 1024) or "")

    def built(key: str) -> str | None:
        value = info.get(key)
        return None if value in (None, "False", "None", "0", False, "") else str(value)

    archs = info.get("compiled_cuda_archs")
    # Newer GPU wheels (Paddle's own index) declare nvidia-* wheels without an extra.
    requires = {n: s for n, s, ex in metas[name]["requires"] if ex is None and n.startswith("nvidia-")}
    return {
        "framework": "paddle",
        "version": dist["version"],
        "packages": {n: d["version"] for n, d in present.items()},
        "gpu_build": (built("cuda_version") is not None) if info else None,
        "cuda": built("cuda_version"),
        "cudnn": built("cudnn_version"),
        "arch_list": [f"sm_{a}" for a in archs] if isinstance(archs, list) and archs else None,
        "requires": requires,
        "requires_from": f"{name} {dist['version']}" if requires else None,
        "pairing": {},
        "location": posixpath.join(dist["dir"], "paddle"),
    }


# --------------------------------------------------------------------------- libdevice
# XLA (JAX's and TensorFlow's GPU compiler) links CUDA's libdevice into kernels that call math
# routines. It takes the first of its CUDA roots with an nvvm/libdevice folder and falls back
# to "." ("libdevice not found at ./libdevice.10.bc"). The roots, from XLA's source:
# xla/tsl/platform/cuda_root_path.h puts --xla_gpu_cuda_data_dir first; cuda_root_path.cc
# (CandidateCudaRoots) then gives /usr/local/cuda, /opt/cuda and, relative to the library
# that runs XLA, ../nvidia/cuda_nvcc and ../../nvidia/cuda_nvcc (../nvidia/cu13 for a CUDA 13
# build), the wheel's own cuda/ copy, and ../../../.. (the conda or venv prefix). jax sets the
# data dir itself (jax/_src/compiler.py) to jax._src.lib.cuda_path: $CUDA_ROOT, else the
# nvidia.cu13 / nvidia.cuda_nvcc package (jax/_src/lib/__init__.py). Older releases searched
# less (TensorFlow 2.11: the build's CUDA path and /usr/local/cuda only), so a root counted
# here may not be searched by them: an old release can still miss a libdevice found here.
LIBDEVICE = "nvvm/libdevice/libdevice.10.bc"
# The libdevice copy a framework's own wheel may carry (XLA: "the copy of libdevice.10.bc that
# we include within the Python wheel"; jaxlib's CUDA wheels had jaxlib/cuda/nvvm/libdevice).
_XLA_BUNDLED = {"jax": ("jaxlib/cuda", "jax_plugins/xla_cuda12/cuda", "jax_plugins/xla_cuda13/cuda"), "tensorflow": ("tensorflow/cuda", "tensorflow/python/cuda")}
_SITE = re.compile(r"^(?P<prefix>.+)/lib(?:64)?/python\d+(?:\.\d+)?/(?:site|dist)-packages/?$")


def xla_data_dir(xla_flags: str | None) -> str | None:
    """The --xla_gpu_cuda_data_dir=DIR of an XLA_FLAGS value (the last one wins), or None."""
    found = None
    for word in (xla_flags or "").split():
        name, sep, value = word.partition("=")
        if sep and name == "--xla_gpu_cuda_data_dir":
            found = value.strip("'\"") or None
    return found


def libdevice_roots(env: dict[str, str], dirs: list[str], prefixes: list[str], frameworks: Iterable[str] = ("jax", "tensorflow")) -> list[tuple[str, str]]:
    """(root, why) of every folder some XLA release looks in for nvvm/libdevice, XLA's order first."""
    roots: list[tuple[str, str]] = []
    data_dir = xla_data_dir(env.get("XLA_FLAGS"))
    if data_dir:
        roots.append((data_dir, "XLA_FLAGS --xla_gpu_cuda_data_dir"))
    if env.get("CUDA_ROOT"):
        roots.append((env["CUDA_ROOT"], "CUDA_ROOT (jax's cuda_path)"))
    for directory in dirs:
        for sub in ("nvidia/cu13", "nvidia/cuda_nvcc"):
            roots.append((posixpath.join(directory, sub), "pip nvidia-cuda-nvcc/nvidia-nvvm wheel"))
        for sub in (s for f in frameworks for s in _XLA_BUNDLED.get(f, ())):
            roots.append((posixpath.join(directory, sub), "the framework wheel's own copy"))
    roots += [("/usr/local/cuda", "XLA's default"), ("/opt/cuda", "XLA's default")]
    for prefix in prefixes:
        roots.append((prefix, "the environment's prefix (conda's cuda-nvcc/cuda-nvvm packages)"))
    out: list[tuple[str, str]] = []
    for root, why in roots:
        root = posixpath.normpath(root)
        if all(r != root for r, _ in out):
            out.append((root, why))
    return out


@probe("xla-libdevice", provides=("frameworks.libdevice",))
def xla_libdevice(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    key = "frameworks.libdevice"
    if not facts.known("frameworks.installed"):
        yield Fact.unknown(key, f"frameworks not known ({facts.why('frameworks.installed')})")
        return
    xla = [f for f in facts["frameworks.installed"] or [] if f.get("framework") in ("jax", "tensorflow") and f.get("gpu_build")]
    if not xla:
        yield Fact(key, None, source="no GPU build of JAX or TensorFlow")
        return
    dirs = import_dirs(host, facts) or []
    if any(re.match(r"^[A-Za-z]:[\\/]", d) for d in dirs):
        # Native Windows: XLA's roots there are the build's CUDA path (C:\Program Files\...), not modelled.
        yield Fact.unknown(key, "a Windows interpreter: XLA's CUDA roots there are not modelled")
        return
    # The env's prefix: XLA's ../../../.. from PREFIX/lib/pythonX.Y/site-packages/<package>.
    prefixes: list[str] = []
    for directory in dirs:
        match = _SITE.match(directory)
        if match and match.group("prefix") not in prefixes:
            prefixes.append(match.group("prefix"))
    if isinstance(facts.get("conda.prefix"), str) and facts["conda.prefix"] not in prefixes:
        prefixes.append(facts["conda.prefix"])
    searched = []
    for root, why in libdevice_roots(dict(host.env), dirs, prefixes, sorted({f["framework"] for f in xla})):
        path = posixpath.join(root, LIBDEVICE)
        searched.append({"root": root, "why": why, "libdevice": path if host.is_file(path) else None})
    # Copies XLA does not find where they are: another toolkit's, Debian's, conda's flat lib/ one.
    elsewhere = []
    for root in sorted(host.glob("/usr/local", "cuda-*")) + ["/usr/lib/cuda", "/usr/lib/nvidia-cuda-toolkit"]:
        for rel, data_dir in ((LIBDEVICE, root), ("libdevice/libdevice.10.bc", None)):
            path = posixpath.join(root, rel)
            if host.is_file(path) and all(s["root"] != root for s in searched):
                elsewhere.append({"path": path, "data_dir": data_dir})
    for prefix in prefixes:
        path = posixpath.join(prefix, "lib", "libdevice.10.bc")
        if host.is_file(path):
            elsewhere.append({"path": path, "data_dir": None})
    found = next((s["libdevice"] for s in searched if s["libdevice"]), None)
    yield Fact(key, {"found": found, "searched": searched, "elsewhere": elsewhere, "xla_flags_data_dir": xla_data_dir(host.env.get("XLA_FLAGS"))},
               source=f"{LIBDEVICE} under XLA's CUDA roots")


PROBES = (frameworks_install, xla_libdevice)
