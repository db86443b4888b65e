"""Error and warning texts that state facts, from the program that printed them.

- torch: "The NVIDIA driver on your system is too old (found version 11040)": the driver's
  CUDA as cudaDriverGetVersion returns it, 1000*major + 10*minor -> driver.cuda_version 11.4.
- torch: "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the
  current PyTorch installation. The current PyTorch install supports CUDA capabilities
  sm_50 ... sm_90." -> that GPU (cc 12.0) and torch's arch list.
- torch.utils.cpp_extension: "The detected CUDA version (11.8) mismatches the version that
  was used to compile PyTorch (12.1)" -> cuda.active 11.8 (CUDA_HOME's) and torch.cuda 12.1.
- torch: "Torch not compiled with CUDA enabled" -> torch.cuda is None (a CPU build).
- nvcc: "unsupported GNU version! gcc versions later than 11 are not supported!" and
  "nvcc fatal : Unsupported gpu architecture 'compute_89'".
- the dynamic loader: "libcudnn_cnn_infer.so.8: undefined symbol: ..." (two cuDNNs mixed).
- "CUDA driver version is insufficient for CUDA runtime version", "no kernel image is
  available for execution on the device": recorded, they name no version.

Every match is also one entry of `report.errors` ({"kind", "line", "text", ...}), which the
triage rules (fwdoctor.triage.rules) read.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.model import Fact
from fwdoctor.triage.base import Fragment, gpu_entry
from fwdoctor.triage.text import Lines

_FOUND = re.compile(r"driver on your system is too old \(found version (\d{4,5})\)", re.IGNORECASE)
# The message is found first; the GPU's name is then what precedes it back to the last ':'
# (_sm). One pattern "(?:^|[:\s])([^:\n]*?) with CUDA capability ..." started at every
# blank and ran its lazy name to the end of the line: a 65 KB line of blanks took minutes.
_SM = re.compile(r" with CUDA capability sm_(\d+)\w? is not compatible with the current PyTorch installation", re.IGNORECASE)
_SUPPORTS = re.compile(r"supports CUDA capabilities ((?:(?:sm|compute)_\d+\w?[\s.,]*)+)", re.IGNORECASE)
_DETECTED = re.compile(r"detected CUDA version \((\d+\.\d+)\) mismatches the version that was used to compile\s+PyTorch \((\d+\.\d+)\)", re.IGNORECASE)
_GNU = re.compile(r"unsupported GNU version!? gcc versions later than (\d+) are not supported", re.IGNORECASE)
_ARCH = re.compile(r"Unsupported gpu architecture '((?:compute|sm)_\d+\w?)'", re.IGNORECASE)
# The loader's message is found first, then the library named just before it (_cudnn_sym):
# "libcudnn\w*\.so[\w.]*: undefined" re-scanned the rest of the word at each "libcudnn".
_UNDEFINED = re.compile(r": undefined symbol: (\S+)")
_MAX_NAME = 200  # a library's file name or a GPU's name is never longer
_NOT_COMPILED = re.compile(r"Torch not compiled with CUDA enabled")
_INSUFFICIENT = re.compile(r"CUDA driver version is insufficient for CUDA runtime version", re.IGNORECASE)
_NO_KERNEL = re.compile(r"no kernel image is available for execution on the device", re.IGNORECASE)


def _sm(text: str) -> tuple[str, str] | None:
    """(the text naming the GPU, its sm digits) of torch's sm-incompatible warning."""
    match = _SM.search(text)
    if not match:
        return None
    return text[: match.start()].rsplit(":", 1)[-1][-_MAX_NAME:], match.group(1)


def _cudnn_sym(text: str) -> tuple[str, str] | None:
    """(library, symbol) of "libcudnn_x.so.8: undefined symbol: S", else None."""
    for match in _UNDEFINED.finditer(text):
        start = match.start()  # the word ([\w.]) before ": undefined", at most _MAX_NAME long
        while start > max(0, match.start() - _MAX_NAME) and (text[start - 1].isalnum() or text[start - 1] in "._"):
            start -= 1
        word = text[start: match.start()]
        at = word.find("libcudnn")
        while at >= 0:  # "libcudnn\w*\.so[\w.]*": the first '.' after the name starts ".so"
            dot = word.find(".", at)
            if word.startswith(".so", dot):
                return word[at:], match.group(1)
            at = word.find("libcudnn", at + 1)
    return None


def _cc(sm: str) -> str:
    return f"{sm[:-1]}.{sm[-1]}"


def find(lines: Lines) -> list[Fragment]:
    out: list[Fragment] = []
    norm = lines.norm
    for i, text in enumerate(norm):
        number = i + 1
        match = _wrapped(_FOUND, norm, i)
        if match:
            value = int(match.group(1))
            cuda = f"{value // 1000}.{(value % 1000) // 10}"
            frag = _one("error", number, "driver-too-old", text, end=_end(_FOUND, norm, i), driver_cuda=cuda, found=value)
            frag.add("driver.cuda_version", cuda)
            out.append(frag)
        sm = _sm(text)
        if sm:
            name = re.sub(r"^.*(?:UserWarning|Warning|warn\(|^\s*)\s*:?\s*", "", sm[0]).strip(" :'\"")
            cc = _cc(sm[1])
            targets: list[str] = []
            end = number
            for j in range(i, min(len(norm), i + 4)):
                sup = _SUPPORTS.search(norm[j])
                if sup:
                    targets = re.findall(r"(?:sm|compute)_\d+\w?", sup.group(1))
                    end = j + 1
                    break
            frag = _one("error", number, "sm-incompatible", text, end=end, cc=cc, gpu=name, supports=targets)
            if name:
                frag.add("gpus.list", [gpu_entry(0, name, cc=cc)], number)
            if targets:
                frag.add("torch.arch_list", targets, end)
            out.append(frag)
        match = _wrapped(_DETECTED, norm, i)
        if match:
            frag = _one("error", number, "cuda-version-mismatch", text, end=_end(_DETECTED, norm, i), detected=match.group(1), torch=match.group(2))
            frag.add("cuda.active", {"root": "CUDA_HOME's toolkit", "version": match.group(1), "why": "as torch.utils.cpp_extension reports it"})
            frag.add("torch.cuda", match.group(2))
            out.append(frag)
        match = _GNU.search(text)
        if match:
            out.append(_one("error", number, "unsupported-gnu", text, gcc_max=match.group(1)))
        match = _ARCH.search(text)
        if match:
            out.append(_one("error", number, "unsupported-gpu-arch", text, arch=match.group(1)))
        cudnn = _cudnn_sym(text)
        if cudnn:
            out.append(_one("error", number, "cudnn-undefined-symbol", text, library=cudnn[0], symbol=cudnn[1]))
        if _NOT_COMPILED.search(text):
            frag = _one("error", number, "torch-not-compiled-with-cuda", text)
            frag.add("torch.installed", True)
            frag.add("torch.cuda", None)
            out.append(frag)
        if _INSUFFICIENT.search(text):
            out.append(_one("error", number, "driver-insufficient", text))
        if _NO_KERNEL.search(text):
            out.append(_one("error", number, "no-kernel-image", text))
        if re.search(r"Failed to initialize NVML: Driver/library version mismatch|NVMLError_LibRmVersionMismatch", text, re.IGNORECASE):
            out.append(_one("error", number, "nvml-mismatch", text))
        if re.search(r"API mismatch: the client", text):
            out.append(_one("error", number, "nvrm-api-mismatch", text))
    return out


def _wrapped(pattern: re.Pattern[str], norm: tuple[str, ...], i: int) -> re.Match[str] | None:
    """`pattern` on line i, or on line i joined with the next one (a message wrapped at the
    terminal's width), counted once: on the line where it starts."""
    match = pattern.search(norm[i])
    if match or i + 1 >= len(norm):
        return match
    if pattern.search(norm[i + 1]):
        return None
    return pattern.search(norm[i].rstrip() + " " + norm[i + 1].strip())


def _end(pattern: re.Pattern[str], norm: tuple[str, ...], i: int) -> int:
    """The 1-based last line of a message found by `_wrapped` at line i."""
    return i + 1 if pattern.search(norm[i]) else i + 2


def _one(kind: str, number: int, error: str, text: str, end: int | None = None, **data: Any) -> Fragment:
    """A fragment holding one `report.errors` entry (triage() gathers them into one list)."""
    last = end or number
    frag = Fragment(kind, number, last)
    frag.notes.append(error)
    where = f"report line {number}" + (f"-{last}" if last != number else "")
    entry = {"kind": error, "line": number, "end": last, "text": text.strip()[:300], **data}
    frag.facts.append(Fact("report.errors", [entry], source=f"{where}: error"))
    return frag
