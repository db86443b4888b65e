"""The fields of TensorFlow's and JAX's GitHub issue templates.

TensorFlow's issue form (2022-) renders each field as a heading and its answer below it; the
older markdown template as a bullet "- key (hint): value":

    ### TensorFlow version              - TensorFlow version (use command below): 2.4.1
                                        - OS Platform and Distribution (e.g., Linux Ubuntu 16.04): Windows 10
    2.11.0                              - CUDA/cuDNN version: 11.0 / 8.0
                                        - GPU model and memory: RTX 3070 8GB
    ### OS platform and distribution

    Windows 11

JAX's form asks "What jax/jaxlib version are you using?" and "Which accelerator(s) are you
using?" (CPU/GPU/TPU).

Facts: python.version; report.framework (whose form it is: "tensorflow", "jax"); report.gpu_expected (the answer that says the user means to run on
an NVIDIA GPU: a CUDA/cuDNN version, a GPU model, "GPU" as the accelerator), read by the
triage rule for framework-cpu-build-on-gpu-host; and TensorFlow on native Windows
(frameworks.installed: its version, `native_windows`, the build unknown). Whether that
release has a GPU build there is knowledge, not text: frameworks.yaml's `platforms` row
(2.10 was the last; fwdoctor.rules.frameworks.cpu_only) says, in the rules.
A version elsewhere says nothing about its build: frameworks.installed stays unknown.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor import versions
from fwdoctor.triage.base import Fragment, first_version, is_value
from fwdoctor.triage.text import Lines

# normalised field -> role. A key is lower-cased, its "(hint)" dropped, blanks collapsed.
FIELDS = {
    "tensorflow version": "tf_version",
    "os platform and distribution": "os",
    "python version": "python",
    "cuda/cudnn version": "cuda",
    "gpu model and memory": "gpu",
    "what jax/jaxlib version are you using?": "jax_version",
    "which accelerator are you using?": "accelerator",  # "accelerator(s)", its "(s)" dropped with the hints
    "additional system info": "jax_system",
    "tensorflow installed from": "tf_from",  # "(source or binary)"
    "installed using virtualenv? pip? conda?": "installer",
}
_HINT = re.compile(r"\([^()]{0,120}\)")
_MAX_KEY = 120  # the longest field name is 45 characters; a longer "heading" is prose
_MAX_GAP = 6  # lines between a heading and its answer (blank lines, a "_No response_")
_WINDOWS = re.compile(r"\bwin(?:dows)?\s?(?:7|8|10|11|server)?\b", re.IGNORECASE)
_NOT_NATIVE = re.compile(r"\bwsl|subsystem for linux|docker|linux|ubuntu", re.IGNORECASE)


def _key(text: str) -> str | None:
    text = text.strip().strip("*`_ ").strip()
    if not text or len(text) > _MAX_KEY:
        return None
    key = " ".join(_HINT.sub(" ", text.lower()).split())
    return key if key in FIELDS else None


def _answers(lines: Lines) -> list[tuple[int, str, str]]:
    """(line, field, value) of every template field the report fills."""
    out: list[tuple[int, str, str]] = []
    norm = lines.norm
    pending: tuple[int, str] | None = None  # a "### field" heading whose answer is below
    for i, text in enumerate(norm):
        stripped = text.strip()
        if stripped.startswith("#"):
            key = _key(stripped.lstrip("#"))
            pending = (i, key) if key else None
            continue
        if pending is not None and stripped:
            if i - pending[0] <= _MAX_GAP and stripped != "_No response_":
                out.append((i + 1, pending[1], stripped))
            pending = None
            continue
        if stripped[:1] in "-*" and ":" in stripped:
            head, _, value = stripped.lstrip("-* ").partition(":")
            key = _key(head)
            if key and value.strip():
                out.append((i + 1, key, value.strip()))
    return out


def native_windows(text: str) -> bool:
    """Whether an OS answer names native Windows ("Windows 11", "win10"), not WSL or a Linux VM."""
    return bool(_WINDOWS.search(text)) and not _NOT_NATIVE.search(text)


def find(lines: Lines) -> list[Fragment]:
    answers = _answers(lines)
    if not answers:
        return []
    values = {FIELDS[key]: (number, value) for number, key, value in answers}
    frag = Fragment("issue template", answers[0][0], answers[-1][0])
    if "python" in values and is_value(values["python"][1]):
        version = first_version(values["python"][1])
        if version:
            frag.add("python.version", version, values["python"][0])
    expected = _gpu_expected(values)
    if expected:
        frag.add("report.gpu_expected", expected[1], expected[0])
    # The TensorFlow release and the CUDA the person says is installed (issue 26: a release
    # before 2.14 needs the system CUDA it was built for; fwdoctor.triage.rules compares them).
    if "tf_version" in values and is_value(values["tf_version"][1]):
        version = first_version(values["tf_version"][1])
        if version:
            frag.add("report.tf_version", version, values["tf_version"][0])
    # Whose build it is: the tested configurations are those of Google's PyPI wheels, not a
    # source build, conda's packages (which bring their own cudatoolkit) or nvidia-tensorflow.
    how = [values[role] for role in ("tf_from", "installer") if role in values and is_value(values[role][1])]
    if how:
        frag.add("report.tf_installed_from", "; ".join(v for _, v in how), how[0][0])
    if "cuda" in values:
        stated = stated_cuda(values["cuda"][1])
        if stated:
            frag.add("report.cuda_stated", stated, values["cuda"][0])
    # Whose issue form it is: the program a "CUDA driver version is insufficient" in it comes from.
    for role, framework in (("tf_version", "tensorflow"), ("jax_version", "jax")):
        if role in values and first_version(values[role][1]):
            frag.add("report.framework", framework, values[role][0])
            break
    tf = values.get("tf_version")
    os_answer = values.get("os")
    if tf and os_answer and native_windows(os_answer[1]):
        version = first_version(tf[1])
        if version:
            frag.add("frameworks.installed", [tensorflow_on_windows(version)], tf[0], os_answer[0])
            frag.notes.append(f"line {tf[0]}: TensorFlow {version} on native Windows ({os_answer[1]})")
    return [frag] if frag.facts else []


_CUDA_NAMED = re.compile(r"\bcuda\D{0,12}?(\d{1,2}\.\d{1,2})", re.IGNORECASE)
_CUDNN_FIRST = re.compile(r"^\W{0,4}cudnn", re.IGNORECASE)


def stated_cuda(answer: str) -> str | None:
    """The CUDA major.minor a "CUDA/cuDNN version" answer names: the version after the word
    CUDA where it says so ("CUDA 10.1, cuDNN 7.6", "cudnn 7.6 / cuda 10.1"), else the first
    version unless the answer starts with cuDNN ("10.2.89-5", "11.0 / 8.0" -> 11.0 and 11.0)."""
    if not is_value(answer):
        return None
    named = _CUDA_NAMED.search(answer)
    if named:
        return named.group(1)
    if _CUDNN_FIRST.match(answer):
        return None
    version = first_version(answer)
    return versions.short(version, 2) if version else None


def _gpu_expected(values: dict[str, tuple[int, str]]) -> tuple[int, str] | None:
    """(line, what the report says) when an answer says the user means to use an NVIDIA GPU."""
    if "cuda" in values and first_version(values["cuda"][1]):
        return values["cuda"][0], f"CUDA/cuDNN version: {values['cuda'][1]}"
    if "gpu" in values and is_value(values["gpu"][1]) and values["gpu"][1].strip().lower() not in ("no", "none", "cpu", "no gpu"):
        return values["gpu"][0], f"GPU model and memory: {values['gpu'][1]}"
    if "accelerator" in values and re.search(r"\bGPU\b", values["accelerator"][1]):
        return values["accelerator"][0], f"accelerator: {values['accelerator'][1]}"
    return None


def tensorflow_on_windows(version: str) -> dict[str, Any]:
    """A frameworks.installed entry for TensorFlow `version` on native Windows; whether it is a
    GPU build there the KB says (gpu_build stays unknown here)."""
    return {"framework": "tensorflow", "version": version, "packages": {"tensorflow": version}, "gpu_build": None,
            "cuda": None, "cudnn": None, "arch_list": None, "requires": {}, "requires_from": None, "pairing": {}, "location": None,
            "native_windows": True, "why": f"TensorFlow {version} on native Windows"}
