"""A CUDA library of NVIDIA's pip wheels shadowed by another CUDA's copy, read from a report
(issue 26, the torch group; jax and vLLM alike):

    ImportError: .../site-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12:
        undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12

(the loader's words; errors.yaml row `cuda-lib-symbol-of-other-release`). Since torch 2.1 the
CUDA builds on PyPI load the nvidia-* wheels (nvidia-cusparse-cu12, nvidia-nvjitlink-cu12 ...)
from site-packages/nvidia/*/lib; a folder of a system CUDA on LD_LIBRARY_PATH is searched
first, so its older libnvJitLink.so.12 is loaded and the wheel's libcusparse finds no
__nvJitLinkComplete_12_4 in it. The `_12_4` of such a symbol names the CUDA release whose
libnvJitLink first has it. Confirmed in public: pytorch/pytorch#152783 (removing
/usr/local/cuda-12.4 from LD_LIBRARY_PATH fixed __nvJitLinkCreate_12_8; ngimel: "your
LD_LIBRARY_PATH makes us find wrong libraries"), pytorch/pytorch#141063 (malfet: "When other
toolkit (say CUDA-12.3) is installed and LD_LIBRARY_PATH points to there, import torch will
fail with ... __nvJitLinkComplete_12_4"), infiniflow/ragflow#4466 (ldd: "libnvJitLink.so.12 =>
/usr/local/cuda-12.1/lib64/libnvJitLink.so.12" beside LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64).

Read here: the LD_LIBRARY_PATH values a report shows (`export`, `env`, `echo $LD_LIBRARY_PATH`
and the line after it, Python's os.environ, LD_DEBUG's "search path=... (LD_LIBRARY_PATH)"),
`ldd` lines ("libnvJitLink.so.12 => /path"), and the nvidia-* wheels of CUDA's libraries in
pip list / freeze / collect_env. The judgement:
  - the library lacking the symbol resolved (ldd) or would resolve (a CUDA toolkit folder first
    on LD_LIBRARY_PATH) outside the wheels, from a CUDA older than the symbol's release or of
    no release shown: framework-libs-shadowed, an error;
  - no such folder shown, but the wheel of that library is older than the symbol's release
    (pip resolved an nvidia-nvjitlink-cu12 older than nvidia-cusparse-cu12 needs):
    framework-nvidia-wheel-mismatch, a warning (the text does not show which copy loaded);
  - neither shown: framework-libs-shadowed as a warning naming the two commands that settle it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule, sh
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

if TYPE_CHECKING:
    from fwdoctor.kb import KB

KINDS = frozenset({"cuda-lib-symbol-of-other-release"})

_MAX_FOLDERS = 64  # LD_LIBRARY_PATH entries kept per report: no real one has more
_MAX_VALUE = 4000

# LD_LIBRARY_PATH=..., export LD_LIBRARY_PATH=..., "LD_LIBRARY_PATH: ..." (TensorFlow's dlerror),
# os.environ['LD_LIBRARY_PATH'] = f"/opt/conda/lib:{...}", ENV LD_LIBRARY_PATH ... (Dockerfile)
_ASSIGNED = re.compile(r"\bLD_LIBRARY_PATH\b['\"]?\]?\s{0,3}(?:=|:|\s)\s{0,3}f?['\"]?(?P<value>[^\s'\";]{1,4000})")
_ECHO = re.compile(r"\becho\s+[\"']?\$\{?LD_LIBRARY_PATH\}?[\"']?\s*$")
# LD_DEBUG=libs: "search path=/a:/b\t\t(LD_LIBRARY_PATH)" (tabs are blanks after normalising)
_LD_DEBUG = re.compile(r"search path=(?P<value>\S{1,4000})\s+\(LD_LIBRARY_PATH\)")
# ldd: "\tlibnvJitLink.so.12 => /usr/local/cuda-12.1/lib64/libnvJitLink.so.12 (0x000070ddad800000)"
_LDD = re.compile(r"^\s*(?P<soname>lib[\w+-]{1,60}\.so(?:\.\d{1,4}){0,4})\s+=>\s+(?P<path>/\S{1,400})")
# The nvidia-* wheels of CUDA's own libraries: "nvidia-nvjitlink-cu12==12.1.105" (freeze, collect_env's
# "[pip3]"), "nvidia-nvjitlink-cu12    12.4.127" (pip list), "... pypi_0 pypi" (conda list)
_WHEEL = re.compile(r"^\s*(?:\[(?:pip3?|conda)\]\s{0,8})?(?P<package>nvidia[-_](?:nvjitlink|cusparse|cublas|cufft|curand|cusolver|cuda[-_]runtime|cuda[-_]nvrtc|cuda[-_]cupti)[-_]cu\d{2})"
                    r"(?:\s{0,4}==\s{0,4}|\s{1,60})(?P<version>\d{1,2}\.\d{1,3}(?:\.\d{1,4}){0,2})(?:\s|$)", re.IGNORECASE)

# A folder of a CUDA toolkit (not of a wheel): /usr/local/cuda-12.1/lib64, /usr/local/cuda/targets/
# x86_64-linux/lib, the HPC SDK's .../cuda/12.4/lib64 and math_libs/12.4/lib64.
_TOOLKIT = re.compile(r"(?:^|/)(?:cuda(?:-\d{1,2}(?:\.\d{1,2})?)?|hpc_sdk|math_libs|cudatoolkit[\w.-]{0,40})(?:/|$)", re.IGNORECASE)
_TOOLKIT_RELEASE = re.compile(r"(?:cuda|math_libs)[-_/]?(\d{1,2}\.\d{1,2})(?![\d.]*\d)", re.IGNORECASE)
# The CUDA release a versioned entry point belongs to: __nvJitLinkComplete_12_4 -> 12.4
_SYMBOL_RELEASE = re.compile(r"_(\d{2})_(\d{1,2})$")
# The wheel that holds each library, and whether that wheel's version is the CUDA release
# (nvidia-nvjitlink-cu12 12.4.127 is CUDA 12.4's; nvidia-cusparse-cu12 12.3.1.170 is not numbered so).
_WHEEL_OF = {"libnvJitLink": ("nvidia-nvjitlink", True), "libcudart": ("nvidia-cuda-runtime", True), "libnvrtc": ("nvidia-cuda-nvrtc", True),
             "libcupti": ("nvidia-cuda-cupti", True), "libcusparse": ("nvidia-cusparse", False), "libcublas": ("nvidia-cublas", False),
             "libcublasLt": ("nvidia-cublas", False), "libcufft": ("nvidia-cufft", False), "libcurand": ("nvidia-curand", False),
             "libcusolver": ("nvidia-cusolver", False)}


def is_wheel_folder(path: str) -> bool:
    """site-packages/nvidia/<lib>/lib (also dist-packages, and torch/lib/../../nvidia/...)."""
    return bool(re.search(r"[/\\](?:site|dist)-packages[/\\](?:torch[/\\]lib[/\\]\.\.[/\\]\.\.[/\\])?nvidia[/\\]", path))


def toolkit_release(path: str) -> str | None:
    """"12.1" for /usr/local/cuda-12.1/lib64 or .../hpc_sdk/Linux_x86_64/24.5/cuda/12.4/lib64."""
    found = _TOOLKIT_RELEASE.findall(path)
    return found[-1] if found else None


def _entries(value: str) -> list[str]:
    return [e.rstrip("/") or "/" for e in value[:_MAX_VALUE].split(":") if e.startswith("/")]


def find(lines: Lines) -> list[Fragment]:
    """cuda.ld_path_said: [{"entries": [...], "line"}] per LD_LIBRARY_PATH value shown;
    cuda.ldd_said: [{"soname", "path", "line"}]; cuda.lib_wheels_said: [{"package", "version", "line"}]."""
    values: list[dict[str, Any]] = []
    ldd: list[dict[str, Any]] = []
    wheels: list[dict[str, Any]] = []
    norm = lines.norm
    for i, text in enumerate(norm):
        if "LD_LIBRARY_PATH" in text:
            found = _LD_DEBUG.search(text) or _ASSIGNED.search(text)
            if found and _entries(found["value"]):
                values.append({"entries": _entries(found["value"])[:_MAX_FOLDERS], "line": i + 1})
            elif _ECHO.search(text):
                after = next((j for j in range(i + 1, min(len(norm), i + 3)) if norm[j].strip()), None)
                if after is not None and _entries(norm[after].strip()):
                    values.append({"entries": _entries(norm[after].strip())[:_MAX_FOLDERS], "line": after + 1})
            continue
        if "=>" in text:
            found = _LDD.match(text)
            if found:
                ldd.append({"soname": found["soname"], "path": found["path"], "line": i + 1})
            continue
        if "nvidia" in text.lower():
            found = _WHEEL.match(text)
            if found:
                entry = {"package": found["package"].lower().replace("_", "-"), "version": found["version"], "line": i + 1}
                if not any(w["package"] == entry["package"] for w in wheels):
                    wheels.append(entry)
    frags = []
    for key, rows, kind in (("cuda.ld_path_said", values, "LD_LIBRARY_PATH"), ("cuda.ldd_said", ldd, "ldd"), ("cuda.lib_wheels_said", wheels, "pip list")):
        if rows:
            frag = Fragment(kind, rows[0]["line"], rows[-1]["line"])
            frag.add(key, rows)
            frags.append(frag)
    return frags


def _release_needed(symbol: str) -> str | None:
    found = _SYMBOL_RELEASE.search(symbol)
    return f"{int(found.group(1))}.{int(found.group(2))}" if found else None


def _older(have: str | None, needed: str | None) -> bool | None:
    """have < needed, None when either is unknown."""
    from packaging.version import InvalidVersion, Version

    if have is None or needed is None:
        return None
    try:
        return Version(have) < Version(needed)
    except InvalidVersion:
        return None


def _stem(soname: str) -> str:
    return soname.split(".so", 1)[0]


def _shadowing_folder(facts: Facts, soname: str) -> tuple[dict[str, Any] | None, bool]:
    """The folder outside the wheels the report shows `soname` loading from (ldd), or the first
    CUDA toolkit folder of an LD_LIBRARY_PATH shown, with how the report shows it; and whether
    some LD_LIBRARY_PATH shown puts the wheel's folder first (then the text is not conclusive)."""
    for row in facts.get("cuda.ldd_said") or []:
        if isinstance(row, dict) and row.get("soname") == soname and not is_wheel_folder(str(row.get("path"))):
            return {"folder": str(row["path"]).rsplit("/", 1)[0], "how": f"ldd ({soname} =>)", "line": row.get("line")}, False
    wheel_first = False
    found = None
    for value in facts.get("cuda.ld_path_said") or []:
        if not isinstance(value, dict):
            continue
        for entry in value.get("entries") or []:
            if is_wheel_folder(entry):
                wheel_first = True
                break
            if _TOOLKIT.search(entry):
                found = found or {"folder": entry, "how": "LD_LIBRARY_PATH", "line": value.get("line")}
                break
    return found, wheel_first



def _which_loads(library: str, soname: str) -> str:
    """The command that shows which copy of `soname` the loader takes: `ldd` on the library
    the error names when its path fits one copyable line of an 80-column report, else the
    loader's own trace of importing torch (the same answer, no path to paste)."""
    if library and len(library) <= 50:
        return f"ldd {sh(library)} | grep {sh(_stem(soname))}   # which {soname} loads"
    return f"LD_DEBUG=libs python -c 'import torch' 2>&1 | grep {sh(soname)}   # which {soname} loads"

@rule("framework-libs-shadowed", needs=("report.errors",), optional=("cuda.ld_path_said", "cuda.ldd_said", "cuda.lib_wheels_said", "conda.cuda_packages"))
def cuda_lib_symbol_shadowed(facts: Facts, kb: KB) -> Hit | None:
    """The loader's "undefined symbol: X, version libY.so.N" for a CUDA library (see
    framework-libs-shadowed): an error where the report shows libY loading from a CUDA toolkit
    folder (ldd, or first on LD_LIBRARY_PATH) older than the symbol's release; a warning naming
    the commands that settle it where the report shows no folder and no wheel explains it."""
    said = report_errors(facts, *KINDS)
    if not said:
        return None
    error = said[0]
    soname, symbol = str(error.get("soname")), str(error.get("symbol"))
    needed = _release_needed(symbol)
    folder, wheel_first = _shadowing_folder(facts, soname)
    wheel, tracks = _WHEEL_OF.get(_stem(soname), ("nvidia-*", False))
    need = f" (CUDA {needed}'s entry point)" if needed else ""
    check = (f"env -u LD_LIBRARY_PATH python -c 'import torch'   # works: a folder on LD_LIBRARY_PATH holds another {soname}",
             _which_loads(str(error.get("library") or ""), soname))
    if folder is not None and not wheel_first:
        release = toolkit_release(folder["folder"])
        # ldd shows the copy that loaded: conclusive. A toolkit on LD_LIBRARY_PATH newer than the
        # symbol's release has it (versioned entry points stay), so that one is not the copy
        # lacking it; the same minor is kept: CUDA 12.1's lib64 gave __nvJitLinkAddData_12_1
        # (infiniflow/ragflow#4466, ldd beside LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64).
        if folder["how"] == "LD_LIBRARY_PATH" and _older(needed, release):
            folder = None
        else:
            of = f"CUDA {release}'s " if release else "a system CUDA's "
            return Hit(
                f"{of}{soname} in {folder['folder']} ({folder['how']}, report line {folder['line']}) is loaded instead of the {wheel} wheel's, "
                f"and it lacks {symbol}{need}: {report_line(error)}",
                evidence={"report.errors": said, "folder": folder, "needed": needed, "release": release},
                fix=FixRef(commands=(f"env -u LD_LIBRARY_PATH python -c 'import torch'   # or drop {sh(folder['folder'])} from LD_LIBRARY_PATH",
                                     check[1]),
                           note=f"let the framework load its own {wheel} wheel: take the system CUDA folder out of LD_LIBRARY_PATH (or put "
                                f"site-packages/nvidia/{_stem(soname).lower().removeprefix('lib')}/lib before it) for this process"),
            )
    if wheel_first or facts.known("conda.cuda_packages"):
        return None  # the wheel's folder comes first, or the conda plan shows the libraries (conda-cuda-libs-mismatch)
    if tracks and _wheel_older(facts, wheel, needed):
        return None  # the wheel itself is older: wheel_older_than_symbol says so
    return Hit(
        f"the {soname} loaded lacks {symbol}{need}, which the library naming it was built against: another {soname} (a system CUDA on "
        f"LD_LIBRARY_PATH or in /etc/ld.so.conf, a conda package) may be loaded before the {wheel} wheel's; the report does not show which: {report_line(error)}",
        evidence={"report.errors": said, "needed": needed},
        fix=FixRef(commands=check, note=f"run without LD_LIBRARY_PATH; if that works, remove the folder holding the other {soname} from it"),
        severity=Severity.WARNING,
    )


def _wheel_older(facts: Facts, wheel: str, needed: str | None) -> dict[str, Any] | None:
    for row in facts.get("cuda.lib_wheels_said") or []:
        if isinstance(row, dict) and str(row.get("package", "")).startswith(wheel + "-cu"):
            release = ".".join(str(row.get("version")).split(".")[:2])
            if _older(release, needed):
                return row
    return None


@rule("framework-nvidia-wheel-mismatch", needs=("report.errors", "cuda.lib_wheels_said"), optional=("cuda.ld_path_said", "cuda.ldd_said"))
def wheel_older_than_symbol(facts: Facts, kb: KB) -> Hit | None:
    """The loader's "undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12"
    where the report lists an nvidia-nvjitlink-cu12 older than the symbol's release and shows no
    other copy on the loader path (see framework-nvidia-wheel-mismatch): pip resolved an
    nvJitLink older than the nvidia-cusparse wheel needs (NVIDIA/cuvs#1794). A warning: the
    text does not show which copy the loader took."""
    said = report_errors(facts, *KINDS)
    if not said:
        return None
    error = said[0]
    soname, symbol = str(error.get("soname")), str(error.get("symbol"))
    wheel, tracks = _WHEEL_OF.get(_stem(soname), ("", False))
    needed = _release_needed(symbol)
    folder, wheel_first = _shadowing_folder(facts, soname)
    row = _wheel_older(facts, wheel, needed) if tracks else None
    if row is None or (folder is not None and not wheel_first):
        return None
    return Hit(
        f"{row['package']} {row['version']} (report line {row['line']}) is older than CUDA {needed}, whose {symbol} the library loading it "
        f"asks for: {report_line(error)}",
        evidence={"report.errors": said, "wheel": row, "needed": needed},
        fix=FixRef(commands=(f"python -m pip install -U {sh(row['package'] + '>=' + str(needed))}",
                             f"python -m pip list 2>/dev/null | grep -i -E 'torch|nvidia-'   # the wheels beside it"),
                   note="install the nvJitLink release the other nvidia-* wheels need (at least the symbol's CUDA release)"),
        severity=Severity.WARNING,
    )


RULES: tuple[Rule, ...] = (cuda_lib_symbol_shadowed, wheel_older_than_symbol)
