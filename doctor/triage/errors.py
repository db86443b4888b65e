"""Error and warning texts that state facts, from the program that printed them: an
interpreter of the signature rows of doctor/kb/errors.yaml (fwdoctor.kb.errors).

For each line, each row's pattern is searched on the line, on each cell of a markdown table's
row, else on the line joined with the next (a message wrapped by a terminal or a mail client,
counted once where the message starts; every row, whatever its `wrapped` says); its named groups, and what the row's named
hook adds, become one entry of `report.errors` ({"kind", "line", "end", "text", ...groups}),
which the triage rules (fwdoctor.triage.rules) read, and the row's `facts` become facts of
the report. A row with no finding carries a `note` (what a correct tool would say), kept in
the entry for the renderers. Adding the next error text is a row, not code; a hook is only
for what a linear regex cannot say (a look backwards, the next lines, arithmetic).

The rows are read once per process from the bundled doctor/kb/errors.yaml (not --kb: they
say how a program's text reads, not what is compatible), validated like every KB area.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from fwdoctor.kb.errors import ErrorsKB, Signature, fill
from fwdoctor.model import Fact
from fwdoctor.triage.base import Fragment, gpu_entry
from fwdoctor.triage.container_shm import shm_context
from fwdoctor.triage.text import Lines, unquoted
from fwdoctor.versions import parse_version

_MAX_NAME = 200  # a library's file name or path, or a GPU's name, is never longer
_SUPPORTS = re.compile(r"supports CUDA capabilities ((?:(?:sm|compute)_\d+\w?[\s.,]*)+)", re.IGNORECASE)


class Hit:
    """What a hook sees and may change: the match's values (`data`), extra facts with their
    lines, and the last line of the message (`end`)."""

    def __init__(self, match: re.Match[str], text: str, norm: tuple[str, ...], i: int, end: int) -> None:
        self.match, self.text, self.norm, self.i, self.end = match, text, norm, i, end
        self.data: dict[str, Any] = {k: v for k, v in match.groupdict().items() if v is not None}
        self.facts: list[tuple[str, Any, int]] = []


def _word_before(text: str, at: int, extra: str = "._") -> str:
    """The word ([alnum] and `extra`) that ends at `at`, at most _MAX_NAME long."""
    start = at
    while start > max(0, at - _MAX_NAME) and (text[start - 1].isalnum() or text[start - 1] in extra):
        start -= 1
    return text[start:at]


def driver_cuda_from_found(hit: Hit) -> bool:
    value = int(hit.data["found"])
    hit.data["driver_cuda"] = f"{value // 1000}.{(value % 1000) // 10}"
    hit.data["found"] = value
    return True


# What ends the text in front of a GPU's name: torch's "UserWarning:", and what a log or a
# table puts before a message ("12:34:56,789 - ", "[2024-09-03 12:34:56] ERROR ",
# "host:81234:81234 [3] ", "| error | "); after the last ':', '|' or ']' come only the rest of
# a time and a level word.
_LOG_HEAD = re.compile(r"[:|\]]")
_LOG_LEAD = re.compile(r"^(?:\d{1,9}(?:[.,]\d{1,9})?\s{0,4}(?:-\s{1,4})?)?(?:(?:ERROR|WARNING|WARN|INFO|DEBUG|CRITICAL)\b\s{0,4}:?\s{0,4})?")


def torch_gpu_and_arch_list(hit: Hit) -> bool:
    # The GPU's name is what precedes the message back to the last ':'. One pattern
    # "(?:^|[:\s])([^:\n]*?) with CUDA capability ..." started at every blank and ran its lazy
    # name to the end of the line: a 65 KB line of blanks took minutes.
    sm = hit.data.pop("sm")
    raw = _LOG_HEAD.split(hit.text[: hit.match.start()])[-1][-_MAX_NAME:]
    name = re.sub(r"^.*(?:UserWarning|Warning|warn\(|^\s*)\s*:?\s*", "", raw).strip(" :'\"")
    name = _LOG_LEAD.sub("", name)
    cc = f"{sm[:-1]}.{sm[-1]}"
    targets: list[str] = []
    for j in range(hit.i, min(len(hit.norm), hit.i + 4)):
        sup = _SUPPORTS.search(hit.norm[j])
        if sup:
            targets = re.findall(r"(?:sm|compute)_\d+\w?", sup.group(1))
            hit.end = j + 1
            break
    hit.data.update(cc=cc, gpu=name, supports=targets)
    if name:
        hit.facts.append(("gpus.list", [gpu_entry(0, name, cc=cc)], hit.i + 1))
    if targets:
        hit.facts.append(("torch.arch_list", targets, hit.end))
    return True


def cudnn_library(hit: Hit) -> bool:
    """The match stands only when the library named before ": undefined" is a libcudnn*.so
    ("libcudnn\\w*\\.so[\\w.]*" re-scanned the rest of the word at each "libcudnn")."""
    word = _word_before(hit.text, hit.match.start())
    at = word.find("libcudnn")
    while at >= 0:  # the first '.' after the name starts ".so"
        dot = word.find(".", at)
        if word.startswith(".so", dot):
            hit.data["library"] = word[at:]
            return True
        at = word.find("libcudnn", at + 1)
    return False


def loader_path(hit: Hit) -> bool:
    """The path (or file name) the loader names just before the match (": undefined symbol",
    ": version `X' not found"), as `library`, when there is one."""
    word = _word_before(hit.text, hit.match.start(), "._/+-~")
    if word and not _after_break(hit, hit.match.start() - len(word)):
        hit.data["library"] = word
    return True


def _after_break(hit: Hit, at: int) -> bool:
    """True when offset `at` is the start of a line that follows one broken at a terminal's
    width (see _TERMINAL_WIDTHS): a word starting there may have begun on that line."""
    return at == 0 and hit.text is hit.norm[hit.i] and hit.i > 0 and len(hit.norm[hit.i - 1]) in _TERMINAL_WIDTHS


def not_tensorrt(hit: Hit) -> bool:
    """The match stands unless the library is TensorRT's (libnvinfer*): TensorFlow 2.x tries
    it at start-up on every host and runs without it, so its absence is no fault."""
    return not str(hit.data.get("library", "")).startswith("libnvinfer")


# Where Paddle runs: its source paths as built (/paddle/paddle/fluid/..., paddle/phi/), its C++
# frames (paddle::operators::StackKernel<>::Compute()), its Python package in a traceback
# (site-packages/paddle/...), and Paddle v1's trainer and CUDA layer (paddle_trainer,
# paddle/cuda/src/hl_cuda_device.cc).
_PADDLE_FRAME = re.compile(r"/paddle/(?:fluid|phi)/|\bpaddle::|site-packages[/\\]paddle[/\\]|\bpaddle_trainer\b|\bhl_cuda_device\.cc\b")
_FRAME_LINES = 8  # a glog "Check failure stack trace" or a Python traceback: a few lines either side


def _paddle_frame(hit: Hit) -> str | None:
    """The first Paddle frame or path on the line or within _FRAME_LINES of it."""
    for j in range(max(0, hit.i - _FRAME_LINES), min(len(hit.norm), hit.i + 1 + _FRAME_LINES)):
        found = _PADDLE_FRAME.search(hit.norm[j])
        if found:
            return found.group(0)
    return None


def paddle_frame_near(hit: Hit) -> bool:
    """The match stands when a Paddle frame or path is on the line or near it: then the
    kernel with no image for this GPU was Paddle's own."""
    frame = _paddle_frame(hit)
    if frame:
        hit.data["frame"] = frame
    return frame is not None


def name_paddle_near(hit: Hit) -> bool:
    """Always stands; names Paddle as the program (`framework`) when its frames are near:
    the CUDA runtime's message alone does not say which framework's build it failed for."""
    if _paddle_frame(hit):
        hit.data["framework"] = "paddle"
    return True


def xformers_torch_differs(hit: Hit) -> bool:
    """xformers' "PyTorch A with CUDA N (you have B)": the match stands only when B is another
    torch than A (the same torch means another cause); `built_cuda` 1201 as "12.1"."""
    have = hit.data["have"]
    if hit.data["built"] == have:
        return False
    number = int(hit.data["built_cuda"])  # xformers writes CUDA 12.1 as 1201, 11.8 as 1108
    hit.data["built_cuda"] = f"{number // 100}.{number % 100}"
    local = have.partition("+")[2]  # the installed torch's build: "cpu", "cu121", "" (unknown)
    if local == "cpu":
        hit.facts.append(("torch.cuda", None, hit.i + 1))
    elif re.fullmatch(r"cu\d{3,4}", local):
        hit.facts.append(("torch.cuda", f"{local[2:-1]}.{local[-1]}", hit.i + 1))
    return True


def xformers_cuda_torch_differs(hit: Hit) -> bool:
    """xformers_torch_differs for an installed torch that is not a "+cpu" build (the row of a
    "+cpu" torch reads that one)."""
    return not hit.data["have"].endswith("+cpu") and xformers_torch_differs(hit)


def ptxas_really_older(hit: Hit) -> bool:
    """The match ("You are using ptxas X, which is older than Y") stands only when X is older
    than Y: TensorFlow 1.12's check compared the versions wrongly and called CUDA 10.0's ptxas
    10.0.145 "older than 9.2.88" (tensorflow/tensorflow#23874, fixed in commit 83ff640)."""
    ptxas, needed = parse_version(hit.data.get("ptxas")), parse_version(hit.data.get("needed"))
    return ptxas is not None and needed is not None and ptxas < needed


# Where JAX or TensorFlow runs: JAX's packages and its error type (jaxlib/cuda_prng_kernels.cc,
# jax._src, jaxlib.xla_extension.XlaRuntimeError, jax_plugins), TensorFlow's Python package and
# source paths (tensorflow.python..., tensorflow/core/..., tensorflow/compiler/mlir/...). XLA's own
# paths inside JAX's logs read external/org_tensorflow/tensorflow/compiler/xla: JAX is looked for first.
_JAX_FRAME = re.compile(r"\bjaxlib\b|\bjax[._/\\](?:_src|numpy|random|lax|interpreters)\b|\bXlaRuntimeError\b|\bjax_plugins\b")
_TF_FRAME = re.compile(r"\btensorflow[/\\.](?:python|core|compiler|stream_executor|tsl)\b|site-packages[/\\]tensorflow[/\\]")


def name_xla_framework_near(hit: Hit) -> bool:
    """Always stands; names the framework (`framework`: jax, tensorflow or paddle) whose frames
    or log paths are on the line or within _FRAME_LINES of it: the CUDA driver's own message
    does not say whose PTX it could not load."""
    near = [hit.norm[j] for j in range(max(0, hit.i - _FRAME_LINES), min(len(hit.norm), hit.i + 1 + _FRAME_LINES))]
    if any(_JAX_FRAME.search(text) for text in near):
        hit.data["framework"] = "jax"
    elif any(_TF_FRAME.search(text) for text in near):
        hit.data["framework"] = "tensorflow"
    elif _paddle_frame(hit):
        hit.data["framework"] = "paddle"
    return True


def xla_framework_near(hit: Hit) -> bool:
    """name_xla_framework_near that stands only where JAX's or TensorFlow's frames or log paths
    are near: a tool's own text that XLA is one of several callers of (ptxas run by Triton,
    by MLIR, by XLA) is XLA's only there."""
    name_xla_framework_near(hit)
    return hit.data.get("framework") in ("jax", "tensorflow")


def not_permission_denied(hit: Hit) -> bool:
    """The match stands unless NCCL said just before that shm_open was denied: then /dev/shm
    is not writable by the user (the row nccl-shm-open-denied), not too small."""
    for j in range(max(0, hit.i - 3), hit.i + 1):
        if "Permission denied" in hit.norm[j]:
            return False
    return True


# WSL2 named anywhere in the report: the name, Microsoft's long form, its driver folder, or
# the WSL2 kernel's release ("5.15.90.1-microsoft-standard-WSL2").
_WSL = re.compile(r"\bWSL ?2?\b|Windows Subsystem for Linux|/usr/lib/wsl/|microsoft-standard", re.IGNORECASE)


def wsl_named(hit: Hit) -> bool:
    """Always stands; records where the report says it runs on WSL2 (`wsl`: "line N: text"),
    when it does: a fact of the report, which the message alone does not state."""
    return _record_first(hit, _WSL, "wsl")


# nvidia-container-cli's own words name WSL on every host ("attempting to load dxcore to see if
# we are running under Windows Subsystem for Linux (WSL)", "... assuming a non-WSL environment"):
# they do not say the report is from WSL, so they are taken out before WSL is looked for.
_NVC_OWN = re.compile(r"running under Windows Subsystem for Linux \(WSL\)|non-WSL environment|WSL environment detected", re.IGNORECASE)


def wsl_named_elsewhere(hit: Hit) -> bool:
    """Stands only when the report names WSL in words other than nvidia-container-cli's own
    (recorded as `wsl`): its "dxcore initialization failed" is printed on every Linux host."""
    for j, text in enumerate(hit.norm):
        line = _NVC_OWN.sub(" ", text) if "WSL" in text.upper() else text
        found = _WSL.search(line)
        if found:
            hit.data["wsl"] = f"report line {j + 1}: {found.group(0)}"
            return True
    return False


# A plain file ("-r-xr-xr-x", not "lrwx...") named libcuda.so.1, without its folder: a row of
# `ls -l` run on the folder itself ("ls -l /usr/lib/wsl/lib/ | grep libcuda", "ls /usr/lib/wsl/lib -l").
_LS = re.compile(r"\bls\b")
_LIBCUDA_COPY = re.compile(r"^-[-r][-w][-x]\S{0,12} {1,8}\d{1,4} .{0,120} '?libcuda\.so\.1'?$")
_LISTING_LINES = 40  # lines from the command to the row: a whole folder's listing, a fence, a sentence


def libcuda_copy_listed(hit: Hit) -> bool:
    """The match (an `ls` of /usr/lib/wsl/lib) stands when its listing, before the next `ls`
    and within _LISTING_LINES lines, shows libcuda.so.1 as a plain file: WSL2's copy. Records
    the row (`row`: "report line N: text") and the library; the message ends there."""
    for j in range(hit.i + 1, min(len(hit.norm), hit.i + 1 + _LISTING_LINES)):
        line = hit.norm[j]
        if _LIBCUDA_COPY.search(line):
            hit.data["library"] = "libcuda.so.1"
            hit.data["row"] = f"report line {j + 1}: {line.strip()[:_MAX_NAME]}"
            hit.end = j + 1
            return True
        if _LS.search(line):
            return False
    return False


# Someone saying a suggested fix worked ("it worked!", "that fixed it", "worked for me"), and the
# same words negated ("it still doesn't work", "did not work"), which do not confirm it.
_WORKED = re.compile(r"\b(?:it|that|this)(?: one)? (?:worked|works now|fixed it|solved it|did the trick)\b|\bworked for me\b", re.IGNORECASE)
_NOT_WORKED = re.compile(r"(?:\bnot|n't|\bnever) (?:work|fix|solve)", re.IGNORECASE)
_CONFIRM_LINES = 15  # the suggestion, the reply's header, the reply


def worked_after(hit: Hit) -> bool:
    """The match (a suggested fix) stands when a line within _CONFIRM_LINES after it says it
    worked, with no negation on that line; records the words (`worked`: "report line N: text")."""
    for j in range(hit.i, min(len(hit.norm), hit.i + 1 + _CONFIRM_LINES)):
        text = hit.norm[j][hit.match.end():] if j == hit.i else hit.norm[j]
        found = _WORKED.search(text)
        if found and not _NOT_WORKED.search(text):
            hit.data["worked"] = f"report line {j + 1}: {found.group(0)}"
            return True
    return False


# A Mac's Apple silicon named anywhere in the report: "Apple M3 Pro", "apple m1 chip", "Apple
# silicon" (Lux-AI-Challenge/Lux-Design-S3#21 writes "an apple m3 pro chip").
_APPLE_SILICON = re.compile(r"\bApple (?:M[1-9]\b|silicon\b)", re.IGNORECASE)


def apple_silicon_named(hit: Hit) -> bool:
    """Always stands; records where the report names Apple silicon (`apple_silicon`: "report
    line N: text"), when it does: jaxlib's macOS hint says only that it may be one."""
    return _record_first(hit, _APPLE_SILICON, "apple_silicon")


def _record_first(hit: Hit, pattern: re.Pattern[str], key: str) -> bool:
    """Records the first report line `pattern` finds as hit.data[key] ("report line N:
    text"); always True (a hook that adds a fact, never one that drops the match)."""
    for j, line in enumerate(hit.norm):
        found = pattern.search(line)
        if found:
            hit.data[key] = f"report line {j + 1}: {found.group(0)}"
            break
    return True


# A framework whose prebuilt binaries use AVX, imported on the line or just before a SIGILL:
# ">>> import tensorflow as tf", "import paddle", "from jax import numpy".
_AVX_IMPORT = re.compile(r"\b(?:import|from) (tensorflow|paddle|jaxlib|jax)\b")
_IMPORT_LINES = 3  # the REPL's prompt line, or a traceback's last frame, sits right above


def framework_imported(hit: Hit) -> bool:
    """Always stands; names the framework (`framework`: tensorflow, paddle or jax) imported on
    the line or on the _IMPORT_LINES before it, when one is: the shell's "Illegal instruction"
    does not say which program died."""
    for j in range(hit.i, max(-1, hit.i - _IMPORT_LINES - 1), -1):
        found = _AVX_IMPORT.search(hit.norm[j])
        if found:
            hit.data["framework"] = "jax" if found.group(1) == "jaxlib" else found.group(1)
            break
    return True


# A container named anywhere in the report: its tools and orchestrators, or a compose log's
# "service_1  | " prefix (weaviate/weaviate#1736 shows only that): the same error text inside
# a container means it was started without the GPUs, on a host that its driver is missing.
# ASCII word boundaries: Chinese prose glues the word to its neighbours ("更新docker 解决",
# "docker部署时"), and to Python's Unicode \b a CJK character is a word character.
_CONTAINER = re.compile(r"\b(?:docker|podman|nvidia-docker|containers?|kubernetes|k8s|kubectl|compose)\b|^[\w.-]{1,60}[_-]\d{1,3} {1,20}\| ",
                        re.IGNORECASE | re.ASCII)


def container_named(hit: Hit) -> bool:
    """Always stands; records where the report says it runs in a container (`container`:
    "report line N: text"), when it does."""
    return _record_first(hit, _CONTAINER, "container")


# Where a report sets CUDA_VISIBLE_DEVICES: an env line, a command's prefix, a script's
# os.environ["CUDA_VISIBLE_DEVICES"] = "1"; the value is what follows '=' up to a quote or blank.
_VISIBLE = re.compile(r"CUDA_VISIBLE_DEVICES['\"]?\]? ?= ?['\"]?([\w,.-]{0,80})")


def visible_devices_named(hit: Hit) -> bool:
    """Always stands; records where the report sets CUDA_VISIBLE_DEVICES (`visible_devices`:
    "report line N: text") and to what (`visible_value`), when it does."""
    for j, line in enumerate(hit.norm):
        found = _VISIBLE.search(line)
        if found:
            hit.data["visible_devices"] = f"report line {j + 1}: {found.group(0)}"
            hit.data["visible_value"] = found.group(1)
            break
    return True


# issue 26 (containers): what decides between "no CDI spec names the device" and "the engine
# cannot read the spec there is" (NVIDIA/nvidia-container-toolkit#1860: toolkit 1.19.1 writes CDI
# spec v0.7.0, which podman before 5.1 refuses). podman's version as `podman --version`, apt,
# dpkg -l and rpm print it; the toolkit's as `nvidia-ctk --version`, apt, dpkg -l and rpm do;
# `nvidia-ctk cdi list`'s "Found N CDI devices" and the names under it (markdown links kept).
_PODMAN_VERSION = re.compile(r"\bpodman(?: version|/[\w.,-]{1,60},now|-(?=\d))[ :]{0,3}v?(\d{1,2}\.\d{1,3}(?:\.\d{1,3})?)|^ii {1,4}podman {1,40}(\d{1,2}\.\d{1,3}(?:\.\d{1,3})?)",
                             re.IGNORECASE)
_CTK_VERSION = re.compile(r"NVIDIA Container Toolkit CLI version (\d{1,2}\.\d{1,3}\.\d{1,3})"
                          r"|nvidia-container-toolkit(?:/[\w.,-]{1,60},now |-(?=\d)| is already the newest version \(|(?<=^ii  nvidia-container-toolkit) {1,40})"
                          r"(\d{1,2}\.\d{1,3}\.\d{1,3})")
_CDI_FOUND = re.compile(r"Found \d{1,4} CDI devices")
_CDI_LIST_LINES = 64


def cdi_engine_shown(hit: Hit) -> bool:
    """Always stands; records the podman (`podman`) and NVIDIA Container Toolkit (`toolkit`)
    versions the report shows, and where its `nvidia-ctk cdi list` lists the device the engine
    could not resolve (`listed`: "report line N: name")."""
    for key, pattern in (("podman", _PODMAN_VERSION), ("toolkit", _CTK_VERSION)):
        for line in hit.norm:
            found = pattern.search(line.strip())
            if found:
                hit.data[key] = next(g for g in found.groups() if g)
                break
    device = hit.data.get("device", "").split(",")[0]
    for j, line in enumerate(hit.norm):
        if not _CDI_FOUND.search(line):
            continue
        for k in range(j + 1, min(len(hit.norm), j + 1 + _CDI_LIST_LINES)):
            name = hit.norm[k].strip().strip("`")
            if name.startswith("[") and "](" in name:
                name = name[1:name.index("](")]
            if device and name == device:
                hit.data["listed"] = f"report line {k + 1}: {name}"
                return True
    return True


# issue 26 (containers): a compose GPU reservation with neither `count` nor `device_ids`.
# Docker Compose 2.0-2.29 sent it to the engine as Count 0, no GPU (docker/docs#20588,
# nv-morpheus/Morpheus#2099 with compose 2.29.7); compose-go 2.3.0 (Docker Compose 2.30.0) reads
# it as count: all, and compose 1.x passed it as all. A commented-out "# count: all" is no count.
_COMPOSE_VERSION = re.compile(r"\b[Dd]ocker[ -][Cc]ompose(?: version:?|/[\w.,-]{1,60},now|-plugin {1,40}| {1,4}v(?=\d))[ v]{0,3}(\d{1,2}\.\d{1,3}\.\d{1,3})")
_RESERVATION_LINES = 30  # reservations: devices: - driver/count/device_ids/capabilities/options, a few lines each


def compose_reservation_without_count(hit: Hit) -> bool:
    """The match (a compose file's "reservations:") stands when a device under it asks for a
    GPU (driver nvidia, or capabilities naming gpu) with neither count nor device_ids; records
    the device's first line (`request`) and Docker Compose's version where the report shows it
    (`compose`)."""
    base = len(hit.match.group("indent"))
    items: list[tuple[int, dict[str, str]]] = []
    devices_at: int | None = None
    key_at = -1
    last = ""
    for j in range(hit.i + 1, min(len(hit.norm), hit.i + 1 + _RESERVATION_LINES)):
        line = hit.norm[j]
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent <= base:
            break
        if devices_at is None:
            if text.startswith("devices:"):
                devices_at = indent
            continue
        if indent <= devices_at and not text.startswith("-"):
            break  # the next key under reservations (memory:)
        if text.startswith("-") and (not items or indent < key_at):
            items.append((j, {}))
            key_at, last = indent + 2, ""
            text = text[1:].strip()
        elif text.startswith("-") and last:  # a block list's value ("capabilities:" / "- gpu")
            items[-1][1][last] += " " + text[1:].strip()
            continue
        key, colon, value = text.partition(":")
        if colon and items:
            last = key.strip().strip("'\"")
            items[-1][1][last] = value.split("#")[0].strip()
    for j, keys in items:
        gpu = "nvidia" in keys.get("driver", "") or "gpu" in keys.get("capabilities", "")
        if gpu and "count" not in keys and "device_ids" not in keys:
            hit.data["request"] = f"report line {j + 1}: {hit.norm[j].strip()[:_MAX_NAME]}"
            for line in hit.norm:
                found = _COMPOSE_VERSION.search(line)
                if found:
                    hit.data["compose"] = found.group(1)
                    break
            return True
    return False


# The command that started a container ("docker run", "podman run", "docker compose up",
# "nerdctl run", "nvidia-docker run", "sudo docker run ..."), and what asks it for GPUs: Docker's
# --gpus, the NVIDIA runtime, a CDI device, NVIDIA_VISIBLE_DEVICES, or the nvidia-docker wrapper.
_START = re.compile(r"\b(?:nvidia-docker|docker|podman|nerdctl)(?:-compose| compose)? (?:container )?(?:run|create|start|up)\b")
_GPU_ASKED = re.compile(r"--gpus|--runtime[= ]{1,3}nvidia|nvidia\.com/gpu|NVIDIA_VISIBLE_DEVICES|\bnvidia-docker run\b")
_START_LINES = 80  # from the command to its output's banner: the image's pull and license text
# A GPU request in a compose file or a pod spec, which no command line shows: "runtime: nvidia",
# a device reservation's "driver: nvidia" / "capabilities: [gpu]", a "nvidia.com/gpu: 1" limit.
_GPU_ASKED_IN_CONFIG = re.compile(r"^\s{0,40}-?\s{0,4}(?:runtime: ?['\"]?nvidia|driver: ?['\"]?nvidia|capabilities: ?\[[^\]\n]{0,40}gpu|nvidia\.com/gpu: ?['\"]?\d)")


def started_without_gpu_request(hit: Hit) -> bool:
    """The match (an NVIDIA image's "The NVIDIA Driver was not detected") stands unless the
    container was asked for GPUs: by the command that started it, the nearest `docker run`/
    `podman run`/`compose up` within _START_LINES above it, or by a compose file or pod spec
    anywhere in the report. Then the runtime was asked and something else failed (old images
    printed it on WSL2 regardless). Records the banner as `container`."""
    hit.data["container"] = f"report line {hit.i + 1}: {hit.norm[hit.i].strip()[:_MAX_NAME]}"
    if any(_GPU_ASKED_IN_CONFIG.search(line) for line in hit.norm):
        return False
    for j in range(hit.i - 1, max(-1, hit.i - 1 - _START_LINES), -1):
        if _START.search(hit.norm[j]):
            return not _GPU_ASKED.search(hit.norm[j])
    return True


# issue 26 (containers): a container started without its GPUs, told by the command and what ran
# in it. What hands a container the driver and the GPUs: Docker's --gpus, the NVIDIA runtime, a
# CDI device, NVIDIA_VISIBLE_DEVICES (read by the NVIDIA runtime), the nvidia-docker wrapper,
# device nodes or --privileged given by hand (Jetson's older recipes), singularity's --nv/--nvccli;
# or, invisibly, a daemon whose default runtime is nvidia, which a report shows as docker info's
# "Default Runtime: nvidia" or daemon.json's "default-runtime".
_RUN_ASKED = re.compile(r"--gpus|--runtime[= ]{1,3}nvidia|nvidia\.com/gpu|NVIDIA_VISIBLE_DEVICES|\bnvidia-docker\b|--device[= ]{1,3}/dev/nv"
                        r"|--privileged|--nv\b|--nvccli")
_DEFAULT_RUNTIME_NVIDIA = re.compile(r"default-runtime['\"]? ?: ?['\"]?nvidia|Default Runtime: ?nvidia", re.IGNORECASE)
# What a process in a container without the GPUs prints: no driver, no libcuda.so.1, no device, no
# nvidia-smi, an NVIDIA image's entrypoint check; or torch.cuda.is_available() answering False.
_NO_GPU_SEEN = re.compile(r"Found no NVIDIA driver on your system|(?<![\w.])libcuda\.so\.1: cannot open shared object file|no CUDA-capable device"
                          r" is detected|No CUDA GPUs are available|nvidia-smi: (?:command )?not found|/dev/nvidia0 does not exist"
                          r"|CUDA_ERROR_NO_DEVICE|cudaErrorNoDevice|The NVIDIA Driver was not detected"
                          # issue 26 (containers): an application's own GPU probe ("No GPUs detected", "No NVIDIA GPU found")
                          r"|\bNo (?:NVIDIA |CUDA )?GPUs? (?:were |was )?(?:detected|found)\b", re.IGNORECASE)
_IS_AVAILABLE = re.compile(r"cuda\.is_available\(\)")
_ANSWER_FALSE = re.compile(r"^\s{0,8}(?:>>> |Out\[\d{1,5}\]: ?)?False\s{0,8}$|cuda\.is_available\(\)\W{1,12}(?:returns? |is |= ?|-> ?)?False\b")
_ANSWER_LINES = 4  # from `torch.cuda.is_available()` to its answer: a UserWarning and its source line between
_CONTINUED_LINES = 20  # a command continued with trailing backslashes


def _starts_container(found: re.Match[str] | None) -> bool:
    """Docker, podman and nerdctl start one with run/create; singularity and apptainer with exec, run, shell."""
    if found is None:
        return False
    return found.group("verb").lower() in ("run", "create") or found.group("engine").lower() in ("singularity", "apptainer")


def run_without_gpus_then_none(hit: Hit) -> bool:
    """The match (a `docker run`/`podman run`/`nerdctl run` or `singularity exec/run/shell`
    command) stands only when the command asks for no GPU (none of _RUN_ASKED on it or its
    backslash-continued lines), the report shows no other way the GPUs were asked for (a compose
    file or pod spec, a default runtime nvidia), and what ran in that container, before the next
    such command, found no GPU (_NO_GPU_SEEN, or cuda.is_available() answering False). Records
    the `engine`, the `command` and the `symptom` ("report line N: text")."""
    if any(_GPU_ASKED_IN_CONFIG.search(line) or _DEFAULT_RUNTIME_NVIDIA.search(line) for line in hit.norm):
        return False
    last = hit.i
    while True:
        if _RUN_ASKED.search(hit.norm[last]):
            return False
        if not hit.norm[last].rstrip().endswith("\\") or last + 1 >= len(hit.norm) or last - hit.i >= _CONTINUED_LINES:
            break
        last += 1
    if not _starts_container(hit.match):
        return False  # `docker exec`: into a container started elsewhere
    hit.data["engine"] = hit.match.group("engine").lower()
    hit.data["command"] = f"report line {hit.i + 1}: {hit.norm[hit.i].strip()[:_MAX_NAME]}"
    for k in range(last + 1, min(len(hit.norm), last + 1 + _START_LINES)):
        if _starts_container(hit.match.re.search(hit.norm[k])) or _START.search(hit.norm[k]):
            return False  # the next container's output, not this one's
        if _no_gpu_seen(hit, k):
            return True
    # An issue template's order: the output first, then "Steps to reproduce: docker run ...". Only
    # where this is the one container the report starts, so the output can be no other's.
    starts = [j for j, line in enumerate(hit.norm) if _starts_container(hit.match.re.search(line)) or _START.search(line)]
    if starts != [hit.i]:
        return False
    return any(_no_gpu_seen(hit, k) for k in range(hit.i))


def _no_gpu_seen(hit: Hit, k: int) -> bool:
    """Line k says no GPU was there (_NO_GPU_SEEN, or cuda.is_available() answering False on it or
    within _ANSWER_LINES after it); records it as the hit's `symptom`."""
    line = hit.norm[k]
    answered = None
    if _IS_AVAILABLE.search(line):
        answered = _ANSWER_FALSE.search(line) or next(
            (hit.norm[m] for m in range(k + 1, min(len(hit.norm), k + 1 + _ANSWER_LINES)) if _ANSWER_FALSE.match(hit.norm[m])), None)
    if answered is None and not _NO_GPU_SEEN.search(line):
        return False
    hit.data["symptom"] = f"report line {k + 1}: {line.strip()[:_MAX_NAME]}"
    return True


# issue 26 (containers): Windows under a container: WSL2 (as _WSL reads it), Docker Desktop, or
# Windows named as a word ("Windows 11", "on windows").
_WINDOWS = re.compile(r"\bWSL ?2?\b|Windows Subsystem for Linux|/usr/lib/wsl/|microsoft-standard|Docker Desktop|(?<![A-Za-z])windows(?![A-Za-z])",
                      re.IGNORECASE | re.ASCII)  # "在WSL2中": as _CONTAINER


# issue 26 (containers): the release `nvidia-container-cli -V` prints ("cli-version: 1.7.0",
# "lib-version: 1.11.0"), where the report shows it.
_CLI_VERSION = re.compile(r"^\s{0,8}(?:cli|lib)-version:\s{0,4}(\d{1,3}\.\d{1,3}\.\d{1,3})\b")


def container_cli_version_shown(hit: Hit) -> bool:
    """Always stands; records the libnvidia-container release the report's `nvidia-container-cli
    -V` shows (`cli_version`), when it shows one."""
    for line in hit.norm:
        found = _CLI_VERSION.match(line)
        if found:
            hit.data["cli_version"] = found.group(1)
            break
    return True


def container_on_windows_named(hit: Hit) -> bool:
    """Always stands; records where the report names a container (`container`) and where it
    names Windows, WSL2 or Docker Desktop (`windows`), each "report line N: text"."""
    _record_first(hit, _CONTAINER, "container")
    return _record_first(hit, _WINDOWS, "windows")


# issue 26 (containers): a Kubernetes node's extended resources as `kubectl describe node` prints
# them ("Capacity:" / "Allocatable:" and indented "  nvidia.com/gpu:     1" lines) or `kubectl get
# node -o yaml` ("capacity:" / nvidia.com/gpu: "16"). A block without the resource is a node whose
# device plugin never advertised a GPU; capacity above zero means it did (allocatable 0 beside it:
# the plugin marked the GPUs unhealthy, NVIDIA/k8s-device-plugin#58).
_NODE_BLOCK = re.compile(r"^(\s{0,20})(Capacity|Allocatable|capacity|allocatable):\s{0,4}$")
_NODE_GPU = re.compile(r"^\s{1,30}nvidia\.com/gpu:\s{0,30}[\"']?(\d{1,5})")
_NODE_BLOCK_LINES = 16
_UNHEALTHY = re.compile(r"[Mm]arking it unhealthy|Health:\s?Unhealthy")
# The plugin's own log once it advertised its GPUs to the kubelet.
_REGISTERED = re.compile(r"Registered device plugin (?:for '?nvidia\.com/gpu'? )?with (?:the )?[Kk]ubelet")


def k8s_node_gpus_shown(hit: Hit) -> bool:
    """Always stands; records what the report shows of the nodes' nvidia.com/gpu: `capacity`
    (the largest Capacity value, 0 where a node's Capacity/Allocatable blocks list no
    nvidia.com/gpu at all), `node` ("report line N: text"), `unhealthy` where the device
    plugin's log marks a GPU unhealthy, and `registered` where, with no node shown, the plugin's
    log says it registered nvidia.com/gpu with the kubelet."""
    best: int | None = None
    for j, line in enumerate(hit.norm):
        block = _NODE_BLOCK.match(line)
        if not block:
            continue
        if block.group(2).lower() == "allocatable" and best is not None:
            continue  # Capacity already said it for this node
        value = 0
        where = f"report line {j + 1}: {line.strip()} (no nvidia.com/gpu)"
        for k in range(j + 1, min(len(hit.norm), j + 1 + _NODE_BLOCK_LINES)):
            follow = hit.norm[k]
            if not follow.strip() or len(follow) - len(follow.lstrip()) <= len(block.group(1)):
                break
            gpu = _NODE_GPU.match(follow)
            if gpu:
                value = int(gpu.group(1))
                where = f"report line {k + 1}: {follow.strip()[:_MAX_NAME]}"
                break
        if block.group(2).lower() == "capacity" or best is None:
            if best is None or value > best:
                best = value
                hit.data["node"] = where
    if best is not None:
        hit.data["capacity"] = best
    if any(_UNHEALTHY.search(line) for line in hit.norm):
        hit.data["unhealthy"] = True
    if best is None and any(_REGISTERED.search(line) for line in hit.norm):
        hit.data["registered"] = True
    return True


# A container's driver capabilities: NVIDIA_DRIVER_CAPABILITIES's value (an env line, `-e`,
# compose, a Dockerfile ENV; the row's `caps` group) and a Docker device request's list (compose
# `capabilities: [gpu, utility]` or its block of "- item" lines, `--gpus 'all,capabilities=utility'`,
# docker inspect's "Capabilities":[["gpu","utility"]]). The match stands only when they grant
# driver capabilities without compute (fwdoctor.rules.visibility.capabilities_without_compute),
# recorded as `caps`; Docker's own "could not select device driver ... with capabilities" is no request.
_CAPS_LIST = re.compile(r"\[{1,2}([^\[\]\n]{0,200})\]")
_CAPS_ITEM = re.compile(r"^\s{0,40}-\s{0,4}['\"]?([A-Za-z0-9_]{1,20})['\"]?\s{0,40}(?:#.{0,200})?$")
_CAPS_BLOCK_LINES = 8  # a compose block list of capabilities has a few items
_CAPS_VALUE_END = re.compile(r"[\s'\"]")


def driver_caps_without_compute(hit: Hit) -> bool:
    """The match (NVIDIA_DRIVER_CAPABILITIES=`caps`) stands when its value grants no compute."""
    from fwdoctor.rules.visibility import capabilities_without_compute

    caps = capabilities_without_compute(str(hit.data.get("caps", "")).split(","))
    if caps is None:
        return False
    hit.data["caps"] = caps
    return True


def request_caps_without_compute(hit: Hit) -> bool:
    """The match ("capabilities:" / "capabilities=") stands when the list that follows, on the
    line or as a block of "- item" lines below, grants driver capabilities without compute."""
    from fwdoctor.rules.visibility import capabilities_without_compute

    if "could not select device driver" in hit.text:
        return False
    rest = hit.text[hit.match.end():hit.match.end() + 400].strip()  # a list is short: each match reads a bounded piece
    tokens: list[str] = []
    if rest.startswith("["):
        found = _CAPS_LIST.match(rest)
        if found is None and "]" not in rest and hit.i + 1 < len(hit.norm):  # a terminal wrapped the list
            found = _CAPS_LIST.match(rest + " " + hit.norm[hit.i + 1].strip()[:200])
            hit.end = hit.i + 2
        if found is None:
            return False
        tokens = found.group(1).split(",")
    elif not rest or rest.startswith("#"):
        for j in range(hit.i + 1, min(len(hit.norm), hit.i + 1 + _CAPS_BLOCK_LINES)):
            item = _CAPS_ITEM.match(hit.norm[j])
            if item is None:
                break
            tokens.append(item.group(1))
            hit.end = j + 1
    else:  # --gpus 'all,capabilities=utility,device=0': up to a blank or quote, and to the next field
        for token in _CAPS_VALUE_END.split(rest, maxsplit=1)[0].split(","):
            if "=" in token:
                break
            tokens.append(token)
    caps = capabilities_without_compute(tokens, request=True)
    if caps is None:
        return False
    hit.data["caps"] = caps
    return True


# nvidia-smi's header ("Driver Version: 470.57.02    CUDA Version: N/A") or a sentence about it:
# Paddle's and torch's environment summaries print "CUDA version: N/A" for a toolkit they did not find.
_SMI_NAMED = re.compile(r"nvidia-smi|Driver Version", re.IGNORECASE)


def nvidia_smi_cuda_na(hit: Hit) -> bool:
    """The match ("CUDA Version: N/A") stands when the line is nvidia-smi's header or names
    nvidia-smi; records where the report names a container (`container`), when it does."""
    return bool(_SMI_NAMED.search(hit.text)) and container_named(hit)


_HOME_BOUND = 600  # characters read back from /bin/nvcc: three toolkit folders fit many times
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


def nvcc_home_path_list(hit: Hit) -> bool:
    """Stands when the folder before "/bin/nvcc" (back to a blank or quote) holds a ':' that
    is no Windows drive's: the build ran CUDA_HOME/bin/nvcc with a CUDA_HOME written like a
    search path ("/usr/local/cuda:"); records it as `cuda_home`."""
    end = hit.match.start()
    start = end
    while start > max(0, end - _HOME_BOUND) and hit.text[start - 1] not in " \t'\"[=":
        start -= 1
    home = hit.text[start:end]
    if ":" not in home or "://" in home or _DRIVE.match(home):  # a URL's or a drive's colon separates nothing
        return False
    hit.data["cuda_home"] = home
    return True


# A CUDA build of jaxlib named anywhere in the report: conda's spec or `conda list` row
# ("jaxlib=*=*cuda*", "jaxlib   0.4.34   cuda120py312h...") or pip's old CUDA wheels
# ("jaxlib==0.4.26+cuda12.cudnn89", "jaxlib 0.4.13+cuda11.cudnn86").
_CUDA_JAXLIB = re.compile(r"\bjaxlib[ =]{1,30}[\w.*+=-]{0,40}(?:[*+]| {1,30})cuda", re.IGNORECASE)
# JAX's own lines when its CUDA plugin is installed but could not be used: the import or the
# initialize() raised, or the backend failed to start, or its CUDA library check failed
# ("Unable to load cuSPARSE. Is it installed?", "Outdated cuDNN installation found":
# jax_plugins/cuda/__init__.py, _version_check), also where the paste starts below the first line.
_CUDA_PLUGIN_FAILED = re.compile(r"Jax plugin configuration error|CUDA backend failed to initialize|Unable to initialize backend 'cuda'"
                                 r"|Unable to load (?:CUDA|NCCL|cu[A-Za-z]{2,8})\. Is it installed\?|Outdated (?:CUDA|NCCL|cu[A-Za-z]{2,8}) installation found")


def jax_no_cuda_build_shown(hit: Hit) -> bool:
    """The match ("a CUDA-enabled jaxlib is not installed") stands as "no CUDA build is
    installed" unless the report shows one that failed to load: a CUDA build of jaxlib named
    (conda-forge's cuda builds that did not load, conda-forge/jax-feedstock#162), or JAX's own
    plugin or backend failure (then a plugin is installed but broken, not missing). JAX prints
    the warning whenever an NVIDIA device node exists and no CUDA backend registered."""
    for line in hit.norm:
        found = _CUDA_JAXLIB.search(line) or _CUDA_PLUGIN_FAILED.search(line)
        if found:
            return False
    return True


# What a CUDA jaxlib logs when it ran and its GPU backend failed (TensorFlow's logging inside
# jaxlib, shown at TF_CPP_MIN_LOG_LEVEL=0): the fallback is then that failure, which its own rows
# read (jax-ml/jax#4569: libcudart opened; jax-ml/jax#15961: cuInit failed), not a CPU jaxlib.
_CUDA_TRIED = re.compile(r"dso_loader\.cc|(?:Successfully opened|Could not load) dynamic library|cuInit|cuda_diagnostics|cuda_driver\.cc"
                         r"|CUDA_ERROR_|cudaError|Unable to load (?:CUDA|cu[A-Za-z]{2,8})\b|lib(?:cuda|cudart|cudnn|cublas)\w{0,8}\.so")


def jax_cpu_fallback_unexplained(hit: Hit) -> bool:
    """The match (jax < 0.4.14's "No GPU/TPU found, falling back to CPU") stands as "this
    jaxlib has no CUDA backend" where the report names no CUDA build of jaxlib, no failure of
    JAX's CUDA plugin (jax_no_cuda_build_shown) and no line of a CUDA jaxlib that ran and
    failed (_CUDA_TRIED). Old pip jaxlib wheels from PyPI were CPU-only: the CUDA ones came from
    JAX's own index with a "+cuda" tag (gladiaio/gladia#927, google-research/long-range-arena#28)."""
    return jax_no_cuda_build_shown(hit) and not any(_CUDA_TRIED.search(line) for line in hit.norm)


# The exception a failing plugin import/initialize() ends in, within the next lines.
_PLUGIN_WINDOW = 30
_EXCEPTION_LINE = re.compile(r"^\s{0,8}(?:[A-Za-z_][\w.]{0,80}\.)?(?P<exc>[A-Za-z_]\w{0,60}(?:Error|Exception|Warning))\b:? ?(?P<msg>.{0,300})")
_JAX_API_MISSING = re.compile(r"module '(?:jax|jaxlib)[\w.]{0,80}' has no attribute|cannot import name '\w{1,100}' from '(?:jax|jaxlib)[\w.]{0,80}'")


def jax_plugin_api_skew(hit: Hit) -> bool:
    """The match ("Jax plugin configuration error") stands when the CUDA plugin failed on
    jax/jaxlib's own API, i.e. the plugin and jaxlib are of different releases: the exception
    below is an AttributeError/ImportError naming a jax or jaxlib module ("module
    'jaxlib.xla_client' has no attribute 'register_custom_type_id_handler'", "cannot import name
    'triton' from 'jax._src.lib'"), or, where the paste ends before the exception, the plugin's
    last frame calls into jaxlib's xla_client. Another exception (a TypeError from a third-party
    custom-call registration, an AssertionError of the plugin's CUDA version check) does not
    say which side is wrong, and the match does not stand."""
    calls_xla_client = False
    for j in range(hit.i + 1, min(len(hit.norm), hit.i + 1 + _PLUGIN_WINDOW)):
        line = hit.norm[j]
        if "xla_client." in line and "File " not in line:
            calls_xla_client = True
        if line.lstrip().startswith(("File ", "Traceback")) or "Error" not in line and "Exception" not in line:
            continue
        exc = _EXCEPTION_LINE.match(line)
        if exc is None:
            continue
        if exc.group("exc") in ("AttributeError", "ImportError", "ModuleNotFoundError") and _JAX_API_MISSING.search(line):
            hit.data["exception"] = line.strip()[:300]
            hit.end = j + 1
            return True
        return False
    return calls_xla_client


# What a PEP 517 build's own traceback says when the package's setup.py imports torch: the
# isolated build environment pip (or uv) made has none, whatever this environment holds.
_NO_TORCH = re.compile(r"No module named '(?P<module>torch(?:\.\w+)?)'")
_BUILD_STEP = re.compile(r"Getting requirements to build wheel did not run successfully|Preparing metadata \(pyproject\.toml\) did not run successfully|"
                         r"The build backend returned an error|_in_process\.py get_requires_for_build_wheel")
_BUILD_OUTPUT_LINES = 60  # pip's "[N lines of output]" of a failed build hook: a traceback of ~20-40 lines


def torch_missing_in_build(hit: Hit) -> bool:
    """The match (a build step failed) stands when its captured output, in the next
    _BUILD_OUTPUT_LINES lines, says "No module named 'torch'" (recorded as `module`). uv's hint
    ("depends on `torch`, but doesn't declare it as a build dependency") says it itself, and
    stands unless the failed step it follows was read already."""
    if "build dependency" in hit.match.group("step"):
        hit.data.update(module="torch", said=f"report line {hit.i + 1}")
        return not any(_BUILD_STEP.search(hit.norm[j]) for j in range(max(0, hit.i - _BUILD_OUTPUT_LINES), hit.i))
    for j in range(hit.i, min(len(hit.norm), hit.i + 1 + _BUILD_OUTPUT_LINES)):
        found = _NO_TORCH.search(hit.norm[j])
        if found:
            hit.data["module"] = found.group("module")
            hit.data["said"] = f"report line {j + 1}"
            return True
    return False


HOOKS: dict[str, Callable[[Hit], bool]] = {
    "jax_no_cuda_build_shown": jax_no_cuda_build_shown,
    "jax_cpu_fallback_unexplained": jax_cpu_fallback_unexplained,
    "jax_plugin_api_skew": jax_plugin_api_skew,
    "driver_cuda_from_found": driver_cuda_from_found,
    "torch_gpu_and_arch_list": torch_gpu_and_arch_list,
    "cudnn_library": cudnn_library,
    "loader_path": loader_path,
    "not_tensorrt": not_tensorrt,
    "paddle_frame_near": paddle_frame_near,
    "name_paddle_near": name_paddle_near,
    "name_xla_framework_near": name_xla_framework_near,
    "xla_framework_near": xla_framework_near,
    "ptxas_really_older": ptxas_really_older,
    "xformers_torch_differs": xformers_torch_differs,
    "xformers_cuda_torch_differs": xformers_cuda_torch_differs,
    "not_permission_denied": not_permission_denied,
    "wsl_named": wsl_named,
    "wsl_named_elsewhere": wsl_named_elsewhere,
    "libcuda_copy_listed": libcuda_copy_listed,
    "worked_after": worked_after,
    "container_named": container_named,
    "cdi_engine_shown": cdi_engine_shown,
    "compose_reservation_without_count": compose_reservation_without_count,
    "visible_devices_named": visible_devices_named,
    "started_without_gpu_request": started_without_gpu_request,
    "run_without_gpus_then_none": run_without_gpus_then_none,
    "k8s_node_gpus_shown": k8s_node_gpus_shown,
    "container_on_windows_named": container_on_windows_named,
    "container_cli_version_shown": container_cli_version_shown,
    "driver_caps_without_compute": driver_caps_without_compute,
    "request_caps_without_compute": request_caps_without_compute,
    "nvidia_smi_cuda_na": nvidia_smi_cuda_na,
    "nvcc_home_path_list": nvcc_home_path_list,
    "torch_missing_in_build": torch_missing_in_build,
    "apple_silicon_named": apple_silicon_named,
    "framework_imported": framework_imported,
    "shm_context": shm_context,  # issue 26 (containers): NCCL_DEBUG log, nodes, container
}


@lru_cache(maxsize=1)
def signatures() -> ErrorsKB:
    """The rows of the bundled errors.yaml, validated and compiled once."""
    from fwdoctor.kb import KB_DIR, cache

    # Built once per change of errors.yaml or of the code (fwdoctor.kb.cache.compiled).
    path = KB_DIR / "errors.yaml"
    return cache.compiled("errors-rows.yaml", (path,), lambda: _signatures(path))


def _signatures(path: Path) -> ErrorsKB:
    from fwdoctor.kb import Ctx, KBError, load_yaml
    from fwdoctor.kb import errors as kb_errors

    data = Ctx("errors.yaml").mapping(load_yaml(path))
    local = data.get("sources") or {}
    if not isinstance(local, dict) or not all(isinstance(v, str) and v.strip() for v in local.values()):
        raise KBError("errors.yaml: sources: expected a mapping of key -> citation string")
    return kb_errors.from_yaml(data, Ctx("errors.yaml", "", local), frozenset(HOOKS))


def _holds(sig: Signature, text: str, low: str) -> bool:
    """Whether `text` (`low`: the same, lower-cased) may hold a match of the row."""
    need, icase = sig.literal
    return not need or need in (low if icase else text)


def find(lines: Lines) -> list[Fragment]:
    out: list[Fragment] = []
    norm = lines.norm
    rows = signatures().signatures
    needs = [sig.literal for sig in rows]
    ahead: dict[int, bool] = {}  # row -> whether its pattern is found on the next line (asked by the join)
    for i, text in enumerate(norm):
        here, ahead = ahead, {}
        if not text:
            continue
        raw = unquoted(lines.raw[i].rstrip("\r\n"))
        low = text.lower()
        line = _Line(norm, i, text, _cells(text), len(raw), raw[-1:].isspace(), low)
        # the text a match of any row must lie in: this line, or it joined with the next
        after = norm[i + 1].strip() if i + 1 < len(norm) else ""
        head = text.rstrip()  # as _read joins them
        spans = (text, head + " " + after, head + after) if after else (text,)
        spans_low = tuple(span.lower() for span in spans)
        joinable = len(text) >= _WRAP_MIN
        for r, sig in enumerate(rows):
            need, icase = needs[r]
            within = (spans_low if icase else spans) if joinable or sig.wrapped else (spans_low[:1] if icase else spans[:1])
            if need and not any(need in span for span in within):
                continue  # the row's literal phrase is nowhere it could match: the usual case
            frag = _read(sig, line, here.get(r), lambda: ahead.setdefault(r, bool(sig.pattern.search(norm[i + 1]))))
            if frag is not None:
                out.append(frag)
    return out


# A markdown table's row ("| error | RuntimeError: ... |"): its cells are read one by one too,
# so a pattern anchored at a line's start or end, and a value at the end of the message, read
# the cell as the line it was pasted from. nvidia-smi's box lines are framed the same way;
# their cells are no error texts, and no row reads them.
_TABLE_ROW = re.compile(r"^\s{0,3}\|(.{1,4000})\|\s*$")


def _cells(text: str) -> tuple[str, ...]:
    framed = _TABLE_ROW.match(text)
    if framed is None:
        return ()
    return tuple(cell.strip() for cell in re.split(r"(?<!\\)\|", framed.group(1)) if cell.strip())


# Where a terminal wraps a line it breaks it at its width, mid-word; an e-mail client or a
# browser at a blank. A line exactly as long as a common terminal width is taken as broken
# there: joined with the next as it was (with a blank only where one sits at the break). Any
# other line is joined with a blank and, where it is long enough to have been broken at a
# narrower terminal's width, also without one: where both read the message and name a value
# differently ("2015" or "201 5"), the text does not settle it, and that value is left out
# (unknown), never guessed.
_TERMINAL_WIDTHS = frozenset({80, 100, 120, 132, 160, 200})
_HARD_WRAP_MIN = 60
# A line shorter than this was not broken by any client or terminal (they wrap at 72 columns
# or more, at the last blank before it): not joined, except for a row marked `wrapped`, whose
# message spans two lines as printed (a prompt and its answer). It keeps the join off most
# lines of a report, where trying every row on every joined pair tripled the reading time.
_WRAP_MIN = 40


_JOIN_SPAN = 1000  # characters each side of a break the join reads: a message and the words around it


@dataclass(frozen=True)
class _Line:
    """Line i as the rows read it: its table cells, and its width as written (without a quote
    marker) and whether it ends in a blank there."""

    norm: tuple[str, ...]
    i: int
    text: str
    cells: tuple[str, ...] = ()
    width: int = 0
    ends_blank: bool = False
    low: str = ""  # text, lower-cased once for every row's quick test (_holds)


def _read(sig: Signature, line: _Line, found: bool | None = None, next_found: Callable[[], bool] | None = None) -> Fragment | None:
    """The row's entry for line i: the row on the line itself, on each of its table cells,
    else on the line joined with the next (a message wrapped at the terminal's width, counted
    once: on the line where it starts, and only by a match that runs across the break).
    `found` False: the pattern is known not to be on the line (asked by the line before)."""
    norm, i, text, width = line.norm, line.i, line.text, line.width
    here = _holds(sig, text, line.low)  # without the row's literal phrase the line (and its cells) cannot match
    for where in (*line.cells, *([text] if found is not False else [])) if here else ():  # a table row's cells first: a value there ends at its cell
        hit = _hit(sig, norm, i, where, i + 1, None)
        if hit is not None:
            if where is text and width in _TERMINAL_WIDTHS and i + 1 < len(norm) and norm[i + 1].strip():
                _drop_values_at_break(hit, len(text))
            return _fragment(sig, text, hit)
    if i + 1 >= len(norm) or not norm[i + 1] or (len(text) < _WRAP_MIN and not sig.wrapped) or (next_found() if next_found else sig.pattern.search(norm[i + 1])):
        return None
    head, tail = norm[i].rstrip(), norm[i + 1].strip()
    blank = line.ends_blank or norm[i + 1][:1].isspace()  # the break fell on a blank
    if width in _TERMINAL_WIDTHS:
        joins = [" " if blank else ""]
    else:
        joins = [" ", ""] if len(head) >= _HARD_WRAP_MIN else [" "]
    if not blank and width in _TERMINAL_WIDTHS and len(head) >= _HARD_WRAP_MIN:
        joins.append(" ")  # tried only where the join as broken reads nothing
    head, tail = head[-_JOIN_SPAN:], tail[:_JOIN_SPAN]
    need, icase = sig.literal
    if need:  # the phrase, whole in the joined text or across the break, else no join can match
        h, t = (head.lower(), tail.lower()) if icase else (head, tail)
        joins = [j for j in joins if need in h[-len(need):] + j + t[:len(need)] or need in h or need in t]
    hits: list[Hit] = []
    for n, joiner in enumerate(joins):
        if hits and (width in _TERMINAL_WIDTHS or n >= 2):
            break
        hit = _hit(sig, norm, i, head + joiner + tail, i + 2, len(head))
        if hit is not None:
            hits.append(hit)
    if not hits:
        return None
    hit = hits[0]
    for other in hits[1:]:
        for key in [k for k in hit.data if k in other.data and other.data[k] != hit.data[k]]:
            del hit.data[key]
        hit.facts = [fact for fact in hit.facts if fact in other.facts]
    return _fragment(sig, text, hit)


def _drop_values_at_break(hit: Hit, end: int) -> None:
    """A value that runs to the end of a line broken at a terminal's width may go on at the
    start of the next line ("Network is" / "unreachable"): it is left out (unknown)."""
    for name in hit.match.re.groupindex:
        if hit.match.group(name) is not None and hit.match.end(name) >= end:
            hit.data.pop(name, None)


def _hit(sig: Signature, norm: tuple[str, ...], i: int, where: str, end: int, seam: int | None) -> Hit | None:
    """The first match of the row in `where` its hook keeps (with `seam`: only a match that
    starts before that offset and ends after it, i.e. runs across the joined lines)."""
    for match in sig.pattern.finditer(where):
        if seam is not None and not match.start() < seam < match.end():
            continue
        hit = Hit(match, where, norm, i, end)
        if not sig.hook or HOOKS[sig.hook](hit):
            return hit
    return None


def _fragment(sig: Signature, text: str, hit: Hit) -> Fragment:
    frag = _one(hit.i + 1, sig, text, hit)
    for key, template in sig.facts.items():
        try:
            frag.add(key, fill(template, hit.data))
        except KeyError:  # the text did not name that value: the fact stays unknown
            continue
    for key, value, line in hit.facts:
        frag.add(key, value, line)
    return frag


def _one(number: int, sig: Signature, text: str, hit: Hit) -> Fragment:
    """A fragment holding one `report.errors` entry (triage() gathers them into one list)."""
    last = hit.end or number
    frag = Fragment("error", number, last)
    frag.notes.append(sig.id)
    where = f"report line {number}" + (f"-{last}" if last != number else "")
    entry = {"kind": sig.id, "line": number, "end": last, "text": text.strip()[:300], **hit.data}
    if sig.note:
        entry["note"] = _note(sig.note, hit.data)
    frag.facts.append(Fact("report.errors", [entry], source=f"{where}: error"))
    return frag


def _note(note: str, data: dict[str, Any]) -> str:
    """The row's note with the values the text named ("{loaded}"); one it did not: "(not shown)"."""
    return re.sub(r"\{([A-Za-z_]\w*)\}", lambda m: str(data.get(m.group(1)) if data.get(m.group(1)) is not None else "(not shown)"), note)
