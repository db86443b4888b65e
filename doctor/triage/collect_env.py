"""`python -m torch.utils.collect_env` (every version since 1.0), vLLM's collect_env (the
same lines plus its own, "Key : value" padded in newer releases), and the OpenMMLab /
detectron2 collect_env ("CUDA_HOME: ...", "NVCC: ...", "GPU 0,1: name").

What each line means (torch/utils/collect_env.py):
- "CUDA used to build PyTorch" is torch.version.cuda -> torch.cuda ("None": a CPU build).
- "CUDA runtime version" is `nvcc --version` of the nvcc on PATH, NOT torch's CUDA and not
  necessarily the toolkit extensions build with -> one entry of cuda.toolkits only.
- "Nvidia driver version" is nvidia-smi's -> driver.version.
- OpenMMLab's "NVCC" is $CUDA_HOME/bin/nvcc: with "CUDA_HOME" shown it is cuda.active.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import VERSION, Fragment, cuda_from_local, first_version, gpu_entry, is_value, toolkit_entry
from fwdoctor.triage.text import Lines

# normalised key -> role
KEYS = {
    "pytorch version": "torch",
    "is debug build": "other",
    "cuda used to build pytorch": "torch_cuda",
    "rocm used to build pytorch": "rocm",
    "os": "os",
    "gcc version": "gcc",
    "clang version": "other",
    "cmake version": "other",
    "libc version": "libc",
    "python version": "python",
    "python platform": "other",
    "is cuda available": "cuda_available",
    "cuda runtime version": "nvcc_path",
    "cuda_module_loading set to": "other",
    "gpu models and configuration": "gpus",
    "nvidia driver version": "driver",
    "cuda driver version": "driver",  # SGLang's check_env
    "cudnn version": "other",
    "hip runtime version": "other",
    "miopen runtime version": "other",
    "is xnnpack available": "other",
    "vllm version": "vllm",
    "vllm build flags": "vllm",
    "neuron sdk version": "vllm",
    # OpenMMLab / detectron2
    "sys.platform": "mm",
    "cuda available": "cuda_available",
    "cuda_home": "cuda_home",
    "nvcc": "mm_nvcc",
    "pytorch": "torch",
    "python": "python",
    "gcc": "gcc",
    "numpy": "mm",
    "torchvision": "mm",
    "mmcv": "mm",
    "mmcv compiler": "mm",
    "mmcv cuda compiler": "mm_nvcc_build",
    "detectron2 cuda compiler": "mm_nvcc_build",
    "detectron2 compiler": "mm",
    "pytorch debug build": "other",
}
# "Key: value": the key is what comes before the first ':' (split there first, then match
# the key; a lazy key followed by "\s*:" tried each end against a run of blanks: n^2).
_KV_KEY = re.compile(r"^\s*(?:[-*]\s+)?([A-Za-z][A-Za-z0-9 ()/_.?-]*)")
_SPACED = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.]*(?: [A-Za-z][A-Za-z0-9_]*)*)\s{2,}(\S.*)$")
# The name is greedy and stripped after: a lazy "(.+?)\s*$" re-ran "\s*" over every blank
# of a run inside the name (n^2).
_GPU = re.compile(r"^\s*GPU ([\d,]+)\s*:?\s+(.+)$")
# (?<!\s): start at the first blank of a run, not at each (n^2 on a run of blanks); [^()]:
# an unclosed "(UUID" stops at the next "(", not at the end of the line, each time.
_UUID = re.compile(r"(?<!\s)\s*\((?:UUID|S/N)[^()]*\)")
_ARCH_SUFFIX = re.compile(r"(?<!\s)\s*\((x86_64|aarch64|arm64|AMD64)\)\s*$")
_MM_ARCH = re.compile(r"\(arch=(\d+\.\d+)\)")


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().strip("`").lower())


def _pair(line: str) -> tuple[str, str] | None:
    head, colon, value = line.partition(":")
    match = _KV_KEY.fullmatch(head.rstrip()) if colon else None
    if match and _key(match.group(1)) in KEYS:
        return _key(match.group(1)), value.strip()
    match = _SPACED.match(line)  # detectron2's table: "PyTorch     1.9.0+cu111 @/path"
    if match and _key(match.group(1)) in KEYS:
        return _key(match.group(1)), match.group(2).strip()
    return None


def _gpu_lines(lines: Lines, start: int, first: str) -> tuple[list[dict[str, Any]], int]:
    """GPUs on the "GPU models" line and the "GPU n: name" lines after it; (gpus, last line)."""
    gpus: list[dict[str, Any]] = []
    last = start
    candidates = [(start, first)] if first else []
    i = start  # 1-based number of the next line
    while i < len(lines):
        nxt = lines.norm[i]
        if not _GPU.match(nxt):
            break
        candidates.append((i + 1, nxt))
        i += 1
    for number, text in candidates:
        match = _GPU.match(text)
        if match:
            name = _UUID.sub("", match.group(2).strip()).strip()
            for index in (int(x) for x in match.group(1).split(",") if x.strip().isdigit()):
                gpus.append(gpu_entry(index, name))
            last = number
        elif is_value(text) and number == start:
            # A hand-filled template line: "GeForce RTX 2070, driver 450.102.04"
            name = re.sub(r",\s*(?:driver|nvidia driver)\b.*$", "", _UUID.sub("", text), flags=re.IGNORECASE).strip()
            gpus.append(gpu_entry(0, name))
    return gpus, last


def _os(value: str) -> dict[str, Any] | None:
    pretty = _ARCH_SUFFIX.sub("", value).strip()
    match = re.match(r"(Ubuntu|Debian GNU/Linux|CentOS Linux|Rocky Linux|Red Hat Enterprise Linux|Fedora Linux|Amazon Linux)\D*?(\d+(?:\.\d+)?)", pretty)
    if not match:
        return {"id": None, "version_id": None, "pretty": pretty} if pretty else None
    ident = {"Ubuntu": "ubuntu", "Debian GNU/Linux": "debian", "CentOS Linux": "centos", "Rocky Linux": "rocky",
             "Red Hat Enterprise Linux": "rhel", "Fedora Linux": "fedora", "Amazon Linux": "amzn"}[match.group(1)]
    return {"id": ident, "version_id": match.group(2), "pretty": pretty}


def find(lines: Lines) -> list[Fragment]:
    hits: list[tuple[int, str, str]] = []  # (line number, key, value)
    for i, text in enumerate(lines.norm):
        pair = _pair(text)
        if pair:
            hits.append((i + 1, *pair))
    clusters: list[list[tuple[int, str, str]]] = []
    for hit in hits:
        if clusters and hit[0] - clusters[-1][-1][0] <= 12:
            clusters[-1].append(hit)
        else:
            clusters.append([hit])
    out = []
    for cluster in clusters:
        keys = {key for _, key, _ in cluster}
        strong = keys & {"pytorch version", "cuda used to build pytorch", "cuda runtime version", "nvidia driver version",
                         "gpu models and configuration", "cuda_home", "nvcc", "sys.platform", "vllm version"}
        if len(keys) < 3 or not strong:
            continue
        fragment = _fragment(lines, cluster, keys)
        if fragment.facts:
            out.append(fragment)
    return out


def _fragment(lines: Lines, cluster: list[tuple[int, str, str]], keys: set[str]) -> Fragment:
    if keys & {"vllm version", "vllm build flags"} or any("vLLM" in lines.norm[n - 1] for n, _, _ in cluster[:1]):
        kind = "vllm collect_env"
    elif keys & {"cuda_home", "nvcc", "sys.platform", "mmcv", "detectron2 compiler"} and "pytorch version" not in keys:
        kind = "openmmlab env"
    else:
        kind = "collect_env"
    frag = Fragment(kind, cluster[0][0], cluster[-1][0])
    values = {key: (number, value) for number, key, value in cluster}
    rocm = values.get("rocm used to build pytorch", (0, ""))[1]
    cuda_home: str | None = None
    for number, key, value in cluster:
        role = KEYS[key]
        if role == "torch" and is_value(value):
            version = value.split()[0].split("@")[0].strip()
            if re.match(r"\d", version):
                frag.add("torch.installed", True, number)
                frag.add("torch.version", version, number)
                settled, cuda = cuda_from_local(version)
                if settled and "cuda used to build pytorch" not in keys:
                    frag.add("torch.cuda", cuda, number)  # "2.4.0+cu121" says it where no line does
        elif role == "torch_cuda":
            if value.strip().lower() == "none":
                frag.add("torch.cuda", None, number)  # torch.version.cuda is None: a CPU build
            elif value.strip().lower() == "could not collect" and _torch_shown(values) and not is_value(rocm):
                # collect_env prints torch.version.cuda's None as "None" only where the host shows
                # no GPU, driver or CUDA runtime; else replace_nones makes it "Could not collect"
                # (pytorch/pytorch@00adac86:torch/utils/collect_env.py, pretty_str): a CPU build
                # beside a GPU (issue 26, part A: Windows reports, whose pip default is CPU-only)
                frag.add("torch.cuda", None, number)
            elif re.fullmatch(VERSION, value.strip()):
                frag.add("torch.cuda", ".".join(value.strip().split(".")[:2]), number)
            elif value.strip().upper() == "N/A" and not is_value(rocm):
                frag.notes.append(f"line {number}: CUDA used to build PyTorch is N/A")
        elif role == "os" and is_value(value):
            parsed = _os(value)
            if parsed:
                frag.add("system.os", parsed, number)
        elif role == "gcc" and is_value(value):
            version = _last_version(value)
            if version:
                frag.add("compilers.gcc_default", {"path": "gcc (as the report shows it)", "version": version}, number)
        elif role == "libc" and is_value(value):
            match = re.search(r"glibc[- ](\d+\.\d+)", value)
            if match:
                frag.add("system.glibc", match.group(1), number)
        elif role == "python" and is_value(value):
            version = first_version(value)
            if version:
                frag.add("python.version", version, number)
        elif role == "nvcc_path" and is_value(value):
            version = first_version(value)
            if version:
                frag.add("cuda.toolkits", [toolkit_entry(version, "nvcc on PATH")], number)
                frag.notes.append(f"line {number}: 'CUDA runtime version' is the nvcc on PATH ({version}), not torch's CUDA")
        elif role == "gpus":
            gpus, last = _gpu_lines(lines, number, value)
            if gpus:
                frag.add("gpus.list", gpus, number, last)
                frag.end = max(frag.end, last)
        elif role == "driver" and is_value(value):
            version = first_version(value)
            if version:
                frag.add("driver.version", version, number)
                frag.add("driver.loaded", True, number)
        elif role == "cuda_home" and is_value(value) and value.startswith(("/", "C:", "c:")):
            cuda_home = value.split()[0]
        elif role == "cuda_available":
            frag.notes.append(f"line {number}: CUDA available: {value}")
    # OpenMMLab / detectron2: NVCC is CUDA_HOME's nvcc, the toolkit extensions build with.
    nvcc = values.get("nvcc")
    if nvcc and is_value(nvcc[1]):
        match = re.search(r"release (\d+\.\d+)(?:, V(" + VERSION + "))?", nvcc[1])
        if match:
            version = match.group(2) or match.group(1)
            root = cuda_home or "(CUDA_HOME, not shown)"
            frag.add("cuda.toolkits", [toolkit_entry(version, "CUDA_HOME", root=root, nvcc=f"{root}/bin/nvcc")], nvcc[0])
            if cuda_home:
                frag.add("cuda.active", {"root": cuda_home, "version": version, "why": "CUDA_HOME"}, values["cuda_home"][0], nvcc[0])
    # detectron2 prints each GPU's capability: "GPU 0,1  GeForce RTX 3090 (arch=8.6)".
    for number, text in ((n, lines.norm[n - 1]) for n in range(frag.start, min(frag.end + 8, len(lines)) + 1)):
        match = _GPU.match(text)
        if match and kind == "openmmlab env" and not any(f.key == "gpus.list" for f in frag.facts):
            arch = _MM_ARCH.search(match.group(2))
            name = _MM_ARCH.sub("", _UUID.sub("", match.group(2).strip())).strip()
            gpus = [gpu_entry(int(x), name, cc=arch.group(1) if arch else None) for x in match.group(1).split(",") if x.strip().isdigit()]
            frag.add("gpus.list", gpus, number)
            frag.end = max(frag.end, number)
    return frag


def _torch_shown(values: dict[str, tuple[int, str]]) -> bool:
    """Whether the dump shows a torch version (torch imported; "N/A" where it did not)."""
    shown = values.get("pytorch version", (0, ""))[1].strip()
    return bool(re.match(r"\d", shown))


def _last_version(text: str) -> str | None:
    found = re.findall(VERSION, text)
    return found[-1] if found else None
