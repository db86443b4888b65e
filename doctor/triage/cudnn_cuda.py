"""A cuDNN built for another CUDA than the one in use, read from a report (cudnn-cuda-mismatch,
whose regular rule in fwdoctor.rules.libs reads the host's installs and documents it).

Each cuDNN build is for one CUDA release, and its name says which: NVIDIA's archives
("cudnn-10.2-linux-x64-v7.6.5.32.tgz", "cudnn-linux-x86_64-8.9.7.29_cuda12-archive.tar.xz"),
NVIDIA's Debian packages ("libcudnn8 8.1.1.33-1+cuda11.2") and System76's ("system76-cudnn-10.2",
beside system76-cuda-11.2). A cuDNN copied or linked out of one CUDA release's folder
("cp /usr/local/cuda-10.0/lib64/libcudnn.so.7 /usr/local/lib/") is the build that release came
with. The CUDA in use is what the report shows the program running: Paddle's "Runtime API
Version: 11.2", TensorFlow's dlerror line "LD_LIBRARY_PATH: /usr/lib/cuda-11.2/lib", one nvcc,
torch's CUDA. Where their majors differ, the cuDNN cannot serve the program (it needs the
libcudart/libcublas of its own CUDA major): TensorFlow skips the GPU, Paddle fails in
cudnnGetVersion (PaddlePaddle/Paddle#50591), a build links the wrong CUDA (system76/cuda#17).

A cuDNN only named by its version ("cudnn 8.1"), or a libcudnn file found in a folder with no
copy, is not read: several CUDA releases with their own cuDNN side by side are healthy.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, Rule, rule, sh
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines
from fwdoctor.versions import major as version_major

if TYPE_CHECKING:
    from fwdoctor.kb import KB

_MAX_LINE = 2000  # a longer line (a minified blob) holds no install command worth reading

# cuDNN builds named with their CUDA. (?<![\w.-]) and bounded runs keep each search linear.
_BUILDS = (
    # NVIDIA's archives before cuDNN 8.3: cudnn-<CUDA>-<os>-x64-v<cuDNN>
    re.compile(r"(?<![\w.-])(?P<name>cudnn-(?P<cuda>\d{1,2}\.\d{1,2})-(?:linux|windows\d{0,2})-x64-v(?P<version>\d{1,2}\.\d{1,3}(?:\.\d{1,4}){0,2}))",
               re.IGNORECASE),
    # NVIDIA's archives from cuDNN 8.3: cudnn-<os>-<arch>-<cuDNN>_cuda<major>-archive
    re.compile(r"(?<![\w.-])(?P<name>cudnn-(?:linux|windows)-[a-z0-9_]{1,12}-(?P<version>\d{1,2}\.\d{1,3}\.\d{1,4}(?:\.\d{1,4})?)_cuda(?P<cuda>\d{1,2})-archive)",
               re.IGNORECASE),
    # NVIDIA's Debian packages: libcudnn8 8.1.1.33-1+cuda11.2, libcudnn8=8.1.1.33-1+cuda11.2, libcudnn8_8.1.1.33-1+cuda11.2_amd64.deb
    re.compile(r"(?<![\w.-])(?P<name>libcudnn(?P<major>\d{1,2})(?:-dev|-samples)?(?: {1,40}|=|_)(?P<version>\d{1,2}\.\d{1,3}\.\d{1,4}(?:\.\d{1,4})?)-\d{1,3}\+cuda(?P<cuda>\d{1,2}\.\d{1,2}))"),
    # System76's packages (system76/cuda): system76-cudnn-<CUDA>
    re.compile(r"(?<![\w.-])(?P<name>system76-cudnn-(?P<cuda>\d{1,2}\.\d{1,2}))(?![\w.])"),
)
# A cuDNN library copied or linked out of one CUDA release's folder (cp, ln -s, mv, copy): the
# command's first operand (its source), matched whole, so the search stays linear in the line.
_COPY_VERB = re.compile(r"(?:^|[\s;&|>`'\"(])(?:cp|ln|mv|copy|xcopy)(?= )", re.IGNORECASE)
_CUDNN_IN_CUDA_DIR = re.compile(r"[\w./\\:~-]{0,200}?[/\\]cuda[-_/\\]?v?(?P<cuda>\d{1,2}\.\d{1,2})[/\\][\w./\\-]{0,120}?"
                                r"(?:lib)?cudnn[\w.]{0,40}?\.(?:so(?:\.\d{1,2}){0,4}|dll)", re.IGNORECASE)
_MAX_OPERAND = 300
# The CUDA the program runs with: Paddle's banner, TensorFlow's LD_LIBRARY_PATH (its dlerror lines)
_RUNTIME = re.compile(r"Runtime API Version: (?P<cuda>\d{1,2}\.\d{1,2})")
_LD_PATH = re.compile(r"\bLD_LIBRARY_PATH ?[:=] ?(?P<value>[^\s;]{1,2000})")
_CUDA_DIR = re.compile(r"/cuda-(?P<cuda>\d{1,2}\.\d{1,2})(?=/|$|:)")


def find(lines: Lines) -> list[Fragment]:
    """report.cudnn_builds: [{"name", "cuda", "version"?, "line"}], the cuDNN builds the report
    names with their CUDA; report.cuda_runtime: [{"cuda", "how", "line"}], the CUDA releases a
    program is shown running with."""
    builds: list[dict[str, Any]] = []
    runtime: list[dict[str, Any]] = []
    for i, text in enumerate(lines.norm):
        if not text or len(text) > _MAX_LINE:
            continue
        low = text.lower()
        if "cudnn" in low:
            for pattern in _BUILDS:
                for m in pattern.finditer(text):
                    entry = {"name": m["name"], "cuda": m["cuda"], "line": i + 1}
                    if m.groupdict().get("version"):
                        entry["version"] = m["version"]
                    builds.append(entry)
            copied = _copied_from_cuda_dir(text)
            if copied:
                builds.append({"name": copied[0], "cuda": copied[1], "line": i + 1, "copied": True})
        m = _RUNTIME.search(text)
        if m:
            runtime.append({"cuda": m["cuda"], "how": "the framework's CUDA runtime", "line": i + 1})
        for path in _LD_PATH.finditer(text):
            releases = {c["cuda"] for c in _CUDA_DIR.finditer(path["value"])}
            if len(releases) == 1:
                runtime.append({"cuda": releases.pop(), "how": "LD_LIBRARY_PATH", "line": i + 1})
    out: list[Fragment] = []
    for key, rows in (("report.cudnn_builds", builds), ("report.cuda_runtime", runtime)):
        if rows:
            frag = Fragment("cuDNN and CUDA releases", rows[0]["line"], rows[-1]["line"])
            frag.add(key, rows)
            out.append(frag)
    return out


def _copied_from_cuda_dir(text: str) -> tuple[str, str] | None:
    """(source path, CUDA release) of a cp/ln/mv/copy whose source is a cuDNN library inside a
    CUDA release's folder ("sudo cp /usr/local/cuda-10.0/lib64/libcudnn.so.7 /usr/local/lib/")."""
    for verb in _COPY_VERB.finditer(text):
        operands = [w.strip("'\"`") for w in text[verb.end():].split(maxsplit=8)[:8]]
        source = next((w for w in operands if w and not w.startswith(("-", "/-"))), "")
        if len(source) <= _MAX_OPERAND:
            found = _CUDNN_IN_CUDA_DIR.fullmatch(source)
            if found:
                return source, found["cuda"]
    return None


def _major(release: Any) -> int | None:
    return version_major(str(release)) if release is not None else None


def _in_use(facts: Facts) -> tuple[int, str] | None:
    """The one CUDA major the report shows a program running with, and where; None when it
    shows none, or several."""
    shown: list[tuple[Any, str]] = []
    for row in facts.get("report.cuda_runtime") or []:
        if isinstance(row, dict):
            shown.append((row.get("cuda"), f"CUDA {row.get('cuda')} ({row.get('how')}, report line {row.get('line')})"))
    for item in facts.get("frameworks.installed") or []:
        if isinstance(item, dict) and item.get("gpu_build") is not False and item.get("cuda"):
            shown.append((item["cuda"], f"CUDA {item['cuda']} ({item.get('framework')}'s build, {facts.source('frameworks.installed')})"))
    if facts.get("torch.cuda"):
        shown.append((facts["torch.cuda"], f"CUDA {facts['torch.cuda']} (torch's build, {facts.source('torch.cuda')})"))
    toolkits = {str(t.get("version")) for t in facts.get("cuda.toolkits") or [] if isinstance(t, dict) and t.get("version")}
    if len(toolkits) == 1:  # several toolkits: which one the program runs is not shown
        version = toolkits.pop()
        shown.append((version, f"CUDA {version} (the toolkit, {facts.source('cuda.toolkits')})"))
    seen: dict[int, str] = {}
    for release, where in shown:
        major = _major(release)
        if major is not None:
            seen.setdefault(major, where)
    if len(seen) != 1:
        return None
    return next(iter(seen.items()))


@rule("cudnn-cuda-mismatch", needs=("report.cudnn_builds",),
      optional=("report.cuda_runtime", "frameworks.installed", "torch.cuda", "cuda.toolkits"))
def cudnn_build_for_other_cuda(facts: Facts, kb: KB) -> Hit | None:
    """A cuDNN the report names as built for one CUDA (an archive, a Debian or System76 package,
    a copy out of a CUDA release's folder) where the program runs another CUDA major
    (see cudnn-cuda-mismatch)."""
    shown = _in_use(facts)
    if shown is None:
        return None
    major, where = shown
    builds = [b for b in facts.get("report.cudnn_builds") or [] if isinstance(b, dict)]
    if any(_major(b.get("cuda")) == major for b in builds):
        return None  # a cuDNN for the CUDA in use is named too: which one loads is not shown
    other = [b for b in builds if _major(b.get("cuda")) is not None]
    if not other:
        return None
    first = other[0]
    how = "copied out of the folder of CUDA" if first.get("copied") else "built for CUDA"
    return Hit(
        f"the cuDNN of report line {first['line']} ({first['name']}) is {how} {first['cuda']}, but the program runs {where}: "
        f"a cuDNN needs the CUDA libraries of its own major and does not load (or fails at its first call) under CUDA {major}",
        evidence={"report.cudnn_builds": other, "cuda_major_in_use": major, "in_use": where},
        fix=FixRef(commands=(f"ldconfig -p | grep {sh('libcudnn')}   # every cuDNN the loader finds, and from which folder",),
                   note=f"remove that cuDNN from the loader path and install the cuDNN built for CUDA {major} "
                        f"(NVIDIA's archive or package whose name ends in cuda{major}.x; pip: nvidia-cudnn-cu{major})"),
    )


RULES: tuple[Rule, ...] = (cudnn_build_for_other_cuda,)
