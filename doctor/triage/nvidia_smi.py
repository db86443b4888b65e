"""`nvidia-smi` as people paste it: the table (header "NVIDIA-SMI 535.104.05  Driver Version:
535.104.05  CUDA Version: 12.2" and one row per GPU), `nvidia-smi --version`, `nvidia-smi -L`,
`nvidia-smi --query-gpu=... --format=csv` (the query fwdoctor's own fixes ask for), and its
errors.

"CUDA Version" in this header is the newest CUDA the *driver* supports (NVML's
nvmlSystemGetCudaDriverVersion) -> driver.cuda_version; never the toolkit or torch's CUDA.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.smicsv import parse_smi_csv
from fwdoctor.triage.base import VERSION, Fragment, gpu_entry
from fwdoctor.triage.text import Lines

_SMI = re.compile(r"NVIDIA-SMI\s+(" + VERSION + r")")
_DRIVER = re.compile(r"Driver Version\s*:\s*(" + VERSION + r")", re.IGNORECASE)
_CUDA = re.compile(r"CUDA Version\s*:\s*(\d+\.\d+)", re.IGNORECASE)
# A GPU row, "|   0  NVIDIA H100 80GB HBM3   On  | 00000000:18:00.0 Off |  0 |", read cell by
# cell (_row): one pattern with a lazy name before "\s+(?:On|Off)" re-ran "\s+" over each
# blank of a run in the name (n^2).
_ROW_NAME = re.compile(r"^\s*(\d+)\s+(.*\S)\s+(?:On|Off|WDDM|TCC)\s*")
_ROW_BUS = re.compile(r"^\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)")
_LIST = re.compile(r"^\s*GPU (\d+): (.+?) \(UUID: GPU-")
_MISMATCH = re.compile(r"Failed to initialize NVML: (.*)$", re.IGNORECASE)
_NVML_LIB = re.compile(r"NVML library version:\s*(" + VERSION + r")")
_NO_DRIVER = re.compile(r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", re.IGNORECASE)
_NO_DEVICES = re.compile(r"^\s*No devices were found\s*$")
# `--format=csv`: a header of query names ("memory.total [MiB]" with its unit), one row per
# GPU. With `noheader` only a pasted command line names the columns.
_QUERY_FIELD = re.compile(r"^[a-z][a-z0-9_.]*(?: \[[^\]]{1,12}\])?$")
_QUERY_CMD = re.compile(r"--query-gpu[= ]([A-Za-z0-9_.,]+)")
_CSV_NAMES = {"name", "gpu_name"}
# Columns distinctive enough to mark a line of query names as nvidia-smi's header.
_CSV_KEYS = {*_CSV_NAMES, "compute_cap", "driver_version", "pci.bus_id", "index", "uuid", "gpu_uuid", "gpu_bus_id"}
# A Windows driver's nvidia-smi (issue 26): the table's driver-model column, "TCC/WDDM" in the
# header and WDDM or TCC in a GPU row (Windows' nvidia-smi, e.g. microsoft/WSL#9134, #11277:
# "|   0  NVIDIA T1200 Laptop GPU      WDDM  |"), `nvidia-smi -q`'s "Driver Model / Current : WDDM"
# (NVIDIA/nvidia-docker#1604), the command run as nvidia-smi.exe or from C:\Windows\System32
# (microsoft/WSL#6014), or WSL 2's nvidia-smi, whose own version is a Linux one while the
# driver it reports is the Windows host's ("NVIDIA-SMI 535.103  Driver Version: 537.13",
# microsoft/WSL#11277; "NVIDIA-SMI 545.46  Driver Version: 546.80", #11589; dmlc/xgboost#11471: "On
# WSL2, nvidia-smi returns a driver version of form 573.24, with two components instead of
# three"). Such a driver is numbered as a Windows driver (546.33 is no Linux branch): -> driver.windows.
_WIN_MODEL_HEAD = re.compile(r"\bTCC/WDDM\b")
_WIN_MODEL_ROW = re.compile(r"\s(WDDM|TCC)\s{1,8}\|")
_WIN_MODEL_Q = re.compile(r"^\s*Current\s*:\s*(WDDM|TCC)\s*$")
_WIN_SMI_CMD = re.compile(r"nvidia-smi\.exe\b|System32[\\/]nvidia-smi\b", re.IGNORECASE)
_WIN_DRIVER = re.compile(r"\d{3}\.\d{2}")  # Windows drivers have two parts (546.33)


def find(lines: Lines) -> list[Fragment]:
    out: list[Fragment] = []
    norm = lines.norm
    i = 0
    while i < len(norm):
        text = norm[i]
        if _SMI.search(text) or (re.match(r"^\s*DRIVER version\s*:", text, re.IGNORECASE)):
            frag, i = _table(lines, i)
            if frag.facts:
                out.append(frag)
            continue
        match = _MISMATCH.search(text)
        if match:
            frag = Fragment("nvidia-smi", i + 1, i + 1)
            frag.add("driver.nvml_error", f"Failed to initialize NVML: {match.group(1).strip()}", i + 1)
            if i + 1 < len(norm):
                lib = _NVML_LIB.search(norm[i + 1])
                if lib:  # nvidia-smi 550+ adds the library's own version
                    frag.add("driver.userspace_libs", [{"path": "libnvidia-ml (as nvidia-smi reports it)", "name": "libnvidia-ml", "version": lib.group(1)}], i + 2)
                    frag.end = i + 2
            out.append(frag)
        elif _NO_DRIVER.search(text):
            frag = Fragment("nvidia-smi", i + 1, i + 1)
            frag.add("driver.nvml_error", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", i + 1)
            out.append(frag)
        elif _NO_DEVICES.match(text):
            frag = Fragment("nvidia-smi", i + 1, i + 1)
            frag.add("gpus.list", [], i + 1)
            frag.notes.append("nvidia-smi: No devices were found")
            out.append(frag)
        elif _LIST.match(text):
            start = i
            gpus = []
            while i < len(norm) and _LIST.match(norm[i]):
                m = _LIST.match(norm[i])
                assert m is not None
                gpus.append(gpu_entry(int(m.group(1)), m.group(2)))
                i += 1
            frag = Fragment("nvidia-smi -L", start + 1, i)
            frag.add("gpus.list", gpus)
            out.append(frag)
            continue
        else:
            fields = _csv_header(text)
            if fields is None and "noheader" in text and (cmd := _QUERY_CMD.search(text)):
                fields = [f for f in cmd.group(1).lower().split(",") if f]
            if fields:
                frag, i = _csv(norm, i, fields)
                if frag is not None:
                    out.append(frag)
                continue
        i += 1
    return out


def _csv_header(text: str) -> list[str] | None:
    """The column names of a `--query-gpu ... --format=csv` header line, else None."""
    if "," not in text and "compute_cap" not in text:
        return None
    fields = [f.strip().lower() for f in text.split(",")]
    if not all(_QUERY_FIELD.match(f) for f in fields):
        return None
    bases = [f.split(" [")[0] for f in fields]
    if len(bases) == 1:
        return bases if bases[0] in ("compute_cap", "driver_version") else None
    return bases if _CSV_KEYS & set(bases) else None


def _csv(norm: list[str], i: int, fields: list[str]) -> tuple[Fragment | None, int]:
    """The rows under a CSV header (or a `noheader` command) at line i, read by the live
    probe's own parser (fwdoctor.smicsv): gpus.list and driver.version when every row states
    the same one."""
    j = i + 1
    while j < len(norm):
        cells = norm[j].split(",")
        if len(cells) != len(fields) or not cells[0].strip():
            break
        j += 1
    columns = ["name" if f in _CSV_NAMES else f for f in fields]
    rows = parse_smi_csv("\n".join(norm[i + 1 : j]), columns) if j > i + 1 else None
    if not rows:
        return None, max(j, i + 1)
    frag = Fragment("nvidia-smi", i + 1, j)
    if "name" in columns or "compute_cap" in columns:
        gpus = [{**{k: v for k, v in row.items() if k != "driver_version"}, "name": (row["name"] or "").strip(), "source": "report"} for row in rows]
        frag.add("gpus.list", gpus, i + 2, j)
    drivers = {row["driver_version"] for row in rows}
    if len(drivers) == 1 and (driver := drivers.pop()):
        frag.add("driver.version", driver, i + 2, j)
        frag.add("driver.loaded", True, i + 2, j)
        frag.add("driver.nvml_error", None, i + 2, j)  # the query answered: NVML initialised
    return (frag if frag.facts else None), j


def _table(lines: Lines, i: int) -> tuple[Fragment, int]:
    """The header near line i (wrapped pastes split it over up to 3 lines), then GPU rows."""
    norm = lines.norm
    frag = Fragment("nvidia-smi", i + 1, i + 1)
    window = range(max(0, i - 1), min(len(norm), i + 3))
    driver = cuda = None
    for j in window:
        driver = driver or _match(_DRIVER, norm[j], j)
        cuda = cuda or _match(_CUDA, norm[j], j)
    if driver:
        frag.add("driver.version", driver[0], driver[1] + 1)
        frag.add("driver.loaded", True, driver[1] + 1)
        frag.add("driver.nvml_error", None, driver[1] + 1)  # the table printed: NVML initialised
    if cuda:
        frag.add("driver.cuda_version", cuda[0], cuda[1] + 1)
    windows = _windows_driver(norm, i, driver[0] if driver else None)
    if windows:
        frag.add("driver.windows", windows, i + 1)
        if windows["wsl"]:  # only WSL 2's nvidia-smi shows the Windows host's driver beside its own version
            frag.add("platform.wsl", {"version": 2, "text": windows["text"]}, i + 1)
    # GPU rows follow within the next ~40 lines, until the processes table.
    gpus: list[dict[str, Any]] = []
    last = max(j for j in window) if window else i
    j = i + 1
    while j < min(len(norm), i + 60):
        text = norm[j]
        if re.search(r"\bProcesses\s*:", text) or _SMI.search(text):
            break
        row = _row(text)
        if row:
            name = re.sub(r"\.\.\.$", "", row[1].strip()).strip()
            gpus.append(gpu_entry(row[0], name, bus_id=row[2]))
            if windows and (model := _WIN_MODEL_ROW.search(text)):
                # each GPU's Windows driver model (WSL 2 reaches WDDM GPUs only: wsl-gpu-unsupported)
                windows.setdefault("models", {})[f"{row[0]} {name}"] = model.group(1)
            last = j
        j += 1
    if gpus:
        frag.add("gpus.list", gpus, i + 1, last + 1)
        if any(len(g["name"]) >= 18 for g in gpus):
            frag.notes.append("nvidia-smi truncates long GPU names; a truncated name may not identify the model")
    frag.end = max(frag.end, last + 1)
    return frag, max(j, i + 1)


def _windows_driver(norm: list[str], i: int, driver: str | None) -> dict[str, Any] | None:
    """What says the table at line i is a Windows driver's (_WIN_* above), else None."""
    for j in range(max(0, i - 3), min(len(norm), i + 60)):
        text = norm[j]
        if j > i and (_SMI.search(text) or re.search(r"\bProcesses\s*:", text)):
            break
        if j <= i and _WIN_SMI_CMD.search(text):
            return {"wsl": False, "text": _WIN_SMI_CMD.search(text).group(0), "line": j + 1}
        if j >= i and (m := _WIN_MODEL_HEAD.search(text) or _WIN_MODEL_ROW.search(text) or _WIN_MODEL_Q.match(text)):
            return {"wsl": False, "text": f"driver model {m.group(0).strip(' |')}", "line": j + 1}
    smi = _SMI.search(norm[i])
    if smi and driver and smi.group(1) != driver and _WIN_DRIVER.fullmatch(driver):
        return {"wsl": True, "text": f"NVIDIA-SMI {smi.group(1)} with Driver Version {driver} (WSL 2 shows the Windows host's driver)", "line": i + 1}
    return None


def _row(text: str) -> tuple[int, str, str] | None:
    """(index, name, bus id) of a GPU row of the table, else None. A table pasted indented
    (microsoft/WSL#9134 pastes Windows' nvidia-smi two blanks in) is read as well."""
    text = text.lstrip(" \t")
    if not text.startswith("|"):
        return None
    cells = text.split("|", 3)
    if len(cells) < 3:
        return None
    name, bus = _ROW_NAME.fullmatch(cells[1]), _ROW_BUS.match(cells[2])
    return (int(name.group(1)), name.group(2), bus.group(1)) if name and bus else None


def _match(pattern: re.Pattern[str], text: str, j: int) -> tuple[str, int] | None:
    m = pattern.search(text)
    return (m.group(1), j) if m else None
