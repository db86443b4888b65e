"""Windows CUDA toolkits and the variables that point at them, as Windows reports paste them
(issue 26): NVIDIA's Windows installer puts each toolkit in <drive>:\\...\\CUDA\\vX.Y (default
C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8), sets CUDA_PATH_VX_Y for each and
CUDA_PATH for the last installed, and prepends its bin and libnvvp to PATH; a second toolkit
leaves the first's entries in place, so PATH can find one nvcc while CUDA_PATH names another.

    C:\\> set                        (cmd; the same `Name=value` lines in ComfyUI's environment dump)
    CUDA_PATH=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7
    CUDA_PATH_V11_7=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7
    CUDA_PATH_V11_8=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8
    Path=D:\\miniconda\\condabin;C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7\\bin;...

    PS> Get-ChildItem env:           (its Name/Value table: "CUDA_PATH_V12_1   C:\\Program ...")
    C:\\> where nvcc                 (every nvcc.exe on PATH, in PATH's order)
    C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.1\\bin\\nvcc.exe

-> cuda.toolkits (each CUDA_PATH_VX_Y and each nvcc.exe `where` lists: root and version) and
cuda.pointers (CUDA_PATH, CUDA_HOME, and the toolkit of the first CUDA bin folder on PATH as
path_nvcc), so multiple-toolkits, cuda-path-inconsistent and
cuda-home-invalid judge a Windows report as they judge `env` on Linux. A PATH entry alone
adds no toolkit (an uninstalled toolkit's entry stays behind), and a value PowerShell cut
short ("...") is not read. Roots are kept with '\\' separators; CUDA_PATH and a PATH entry
name the same toolkit when they differ only in case, slashes or a trailing '\\'.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.triage.base import Fragment, toolkit_entry
from fwdoctor.triage.text import Lines, command

_NAMES = re.compile(r"(?i:CUDA_PATH(?:_V(?P<maj>\d{1,2})_(?P<min>\d{1,2}))?|CUDA_HOME|PATH)")
# cmd's `set` and dumps: "NAME=value" from the line's start. PowerShell's env: table: the name,
# two or more blanks, the value.
_ASSIGN = re.compile(r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]{0,63})=(?P<value>.*)$")
_PS_ROW = re.compile(r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]{0,63}) {2,}(?P<value>[A-Za-z]:[\\/].*)$")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_VFOLDER = re.compile(r"v(\d{1,2}\.\d{1,2})", re.IGNORECASE)
_WHERE_CMD = re.compile(r"^(?:where(?:\.exe)?|Get-Command|gcm)\s+nvcc\b", re.IGNORECASE)
# cmd's prompt, the current folder then '>' ("C:\Users\me>where nvcc", "(base) D:\work>echo %CUDA_PATH%")
_CMD_PROMPT = re.compile(r"^\s*(?:\([^)\n]{1,60}\)\s*)?(?:[A-Za-z]:\\[^>\n]{0,200})?>(.*)$")
_MAX_ENTRIES = 200  # a real PATH has a few dozen


def _parts(path: str) -> list[str]:
    """A Windows path's components ('\\\\' from JSON or CMake logs, '/' and '\\' alike)."""
    return [p for p in re.split(r"[\\/]+", path.strip().strip("\"'").rstrip("\\/")) if p]


def toolkit_root(path: str, below: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(root, version) when `path` is a Windows CUDA toolkit folder <drive>:\\...\\CUDA\\vX.Y
    followed by `below` ("bin", or "bin", "nvcc.exe"), else None."""
    if not _DRIVE.match(path.strip().strip("\"'")) or path.rstrip().endswith("..."):
        return None
    parts = _parts(path)
    n = len(below)
    if len(parts) < n + 3 or [p.lower() for p in parts[len(parts) - n:]] != list(below):
        return None
    folder, parent = parts[len(parts) - n - 1], parts[len(parts) - n - 2]
    version = _VFOLDER.fullmatch(folder)
    if parent.lower() != "cuda" or not version:
        return None
    return "\\".join(parts[: len(parts) - n]), version.group(1)


def _path_root(entries: list[str]) -> str | None:
    """The toolkit of the first CUDA bin folder in a PATH list."""
    for entry in entries[:_MAX_ENTRIES]:
        found = toolkit_root(entry, ("bin",))
        if found:
            return found[0]
    return None


def _path_list(value: str) -> list[str] | None:
    """A PATH value's entries when it is a ';' list of Windows folders, else None."""
    entries = [e for e in value.strip().strip("\"'").split(";") if e.strip()]
    if not entries or not all(_DRIVE.match(e.strip()) or e.strip().startswith("%") for e in entries[:3]):
        return None
    return entries


def find(lines: Lines) -> list[Fragment]:
    toolkits: dict[str, tuple[dict[str, Any], int]] = {}  # by lower-case root
    pointers: dict[str, str] = {}
    numbers: list[int] = []
    spelled: dict[str, str] = {}  # lower-case root -> the first spelling seen

    def root_of(root: str) -> str:
        return spelled.setdefault(root.lower(), root)

    def add_toolkit(root: str, version: str, via: str, number: int) -> None:
        root = root_of(root)
        if root.lower() not in toolkits:
            toolkits[root.lower()] = (toolkit_entry(version, via, root=root, nvcc=root + "\\bin\\nvcc.exe"), number)
            numbers.append(number)

    norm = lines.norm
    where_run = 0
    for i, text in enumerate(norm):
        number = i + 1
        stripped = text.strip()
        cmd = command(text) or ((m := _CMD_PROMPT.match(text)) and m.group(1).strip()) or ""
        if _WHERE_CMD.match(cmd or stripped):
            where_run = 2  # the next lines are `where`'s answer, in PATH's order
            continue
        found = toolkit_root(stripped, ("bin", "nvcc.exe")) if stripped.lower().endswith("nvcc.exe") else None
        if found:
            add_toolkit(found[0], found[1], "where nvcc" if where_run else "nvcc.exe path", number)
            if where_run == 2 and "path_nvcc" not in pointers:
                pointers["path_nvcc"] = root_of(found[0])
            where_run = 1 if where_run else 0
            continue
        where_run = 0
        m = _ASSIGN.match(text) or _PS_ROW.match(text)
        if m:
            name, value = m.group("name"), m.group("value").strip()
            names = _NAMES.fullmatch(name)
            if not names:
                continue
            upper = name.upper()
            if upper == "PATH":
                entries = _path_list(value)
                if entries and (root := _path_root(entries)) and "path_nvcc" not in pointers:
                    pointers["path_nvcc"] = root_of(root)
                    numbers.append(number)
            elif upper in ("CUDA_PATH", "CUDA_HOME") and _DRIVE.match(value.strip("\"'")) and not value.endswith("..."):
                key = "cuda_path" if upper == "CUDA_PATH" else "cuda_home"
                if ";" in value:  # a list: the bug itself (cuda-home-invalid), kept whole
                    pointers.setdefault(key, value.strip("\"'"))
                else:
                    found = toolkit_root(value)
                    pointers.setdefault(key, root_of(found[0]) if found else "\\".join(_parts(value)))
                numbers.append(number)
            elif names.group("maj") is not None:
                found = toolkit_root(value)
                if found:
                    add_toolkit(found[0], f"{int(names.group('maj'))}.{int(names.group('min'))}", upper, number)
            continue
    if not numbers:
        return []
    frag = Fragment("windows env", min(numbers), max(numbers))
    if toolkits:
        frag.add("cuda.toolkits", [entry for entry, _ in toolkits.values()])
    if pointers:
        frag.add("cuda.pointers", {"path_nvcc": None, "cuda_home": None, "cuda_path": None, "usr_local_cuda": None, "ld_cudart": None, **pointers})
    return [frag] if frag.facts else []
