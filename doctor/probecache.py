"""Answers of version-style commands (`nvcc --version`, `gcc -dumpfullversion`), cached by
the program file's identity, as ccache and uv's interpreter cache do.

Why: those children cost a plain `fwdoctor check` tens of milliseconds each (issue 30),
and their answer is a pure function of the program file: it cannot change unless the file
does. An entry is keyed by the program's path and identity (device, inode, size, mtime_ns,
ctime_ns of the file the path leads to), the whole argv and the few variables that can
steer such a program (ENV_KEYS). A replaced file (new inode), a touched one (mtime,
ctime), a resized one, a re-pointed symlink or a removed one therefore never meets an old
entry: the key is computed from a fresh stat() on every call.

What is cached, and what never is:
- only answers a probe asks through `Host.run_version` (questions about the file itself);
  nothing that reads the live GPU, the driver or the kernel (nvidia-smi, the NVML child,
  dmesg, torch) goes through here;
- only ELF programs: a script's (`#!`) answer depends on whatever it runs, which its own
  identity does not cover (a ccache or conda wrapper);
- only successful answers (exit 0, no timeout): a failure is asked again next time;
- besides commands, only parses that are a pure function of one regular file's bytes (the
  dpkg database, `ProbeCache.parsed`), keyed by that file's identity and by the identity
  of the parser's own source file;
- nothing for a --root or --image host: nothing runs there at all (`Host.run` is None).

Best-effort and never fatal: an unwritable or read-only folder, a corrupt or foreign entry,
or a file that changed while it ran means the program simply runs. Entries are plain JSON
(never pickle) written to a temporary file and renamed, so concurrent writers each leave
a whole entry. `--no-cache` (global, or on check/facts) and FWDOCTOR_NO_CACHE=1 bypass it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Mapping, Sequence, TypeVar

from fwdoctor.kb.cache import cache_home, key_digest
from fwdoctor.kb.cache import identity as file_identity  # one definition of a file's identity
from fwdoctor.runner import CommandResult

# Bump when what an entry holds, or how a key is made, changes.
FORMAT = "1"
# Variables that can change what a compiler driver prints for the same file: its search
# paths (gcc: GCC_EXEC_PREFIX, COMPILER_PATH; nvcc: the NVCC_*_FLAGS it splices in) and
# the libraries the program loads.
ENV_KEYS = ("PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "GCC_EXEC_PREFIX", "COMPILER_PATH",
            "CUDA_HOME", "CUDA_PATH", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")
MAX_ENTRY_BYTES = 1024 * 1024  # a version banner is a few hundred bytes; more is not ours
MAX_ENTRIES = 256  # a host asks about a few dozen programs; the rest are programs since replaced
T = TypeVar("T")
ELF_MAGIC = b"\x7fELF"


def default_folder() -> Path | None:
    """<cache home>/fwdoctor/probes, or None when caching is off or there is no home."""
    if os.environ.get("FWDOCTOR_NO_CACHE"):
        return None
    base = cache_home()
    return None if base is None else Path(base) / "fwdoctor" / "probes"


def identity(path: str) -> list[int] | None:
    """(device, inode, size, mtime_ns, ctime_ns) of the ELF file `path` leads to; None when
    it is absent, not a regular file, unreadable or not an ELF program."""
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            if (st.st_mode & 0o170000) != 0o100000 or handle.read(4) != ELF_MAGIC:
                return None
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class ProbeCache:
    """Cached answers in `folder` (created on the first write)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def default(cls) -> "ProbeCache | None":
        folder = default_folder()
        return None if folder is None else cls(folder)

    def _key(self, argv: Sequence[str], ident: list[int], env: Mapping[str, str]) -> tuple[dict, Path]:
        material = {"format": FORMAT, "argv": list(argv), "identity": ident,
                    "env": {k: env[k] for k in ENV_KEYS if k in env}}
        # The name needs no cryptographic hash: _read uses an entry only when the whole key
        # stored in it equals this one (hashlib's import is ~3 ms of a check).
        digest = key_digest(json.dumps(material, sort_keys=True).encode())
        return material, self.folder / f"{digest}.json"

    def run(self, argv: Sequence[str], env: Mapping[str, str], compute: Callable[[], CommandResult | None]) -> CommandResult | None:
        """The cached answer of `argv` when its program file is unchanged, else `compute()`
        (stored when it succeeded and the file did not change meanwhile)."""
        args = [str(a) for a in argv]
        if not args or not os.path.isabs(args[0]):
            return compute()
        before = identity(args[0])
        if before is None:
            return compute()
        material, path = self._key(args, before, env)
        cached = _read(path, material)
        if cached is not None:
            return cached
        result = compute()
        if result is not None and result.ok and identity(args[0]) == before:
            _write(path, material, result)
        return result


    def parsed(self, path: str, parser: str, code: str, compute: Callable[[], T]) -> T:
        """`compute()`, a JSON value that is a pure function of the bytes of the regular file
        at `path` (a parse of the dpkg database), cached by that file's identity and by the
        identity of `code` (the parser's source file: an edited parser never meets its old
        answers), as command answers are. Exceptions of compute() propagate, uncached."""
        before, by = file_identity(path), file_identity(code)
        if before is None or by is None:
            return compute()
        material = {"format": FORMAT, "parsed": parser, "path": path, "identity": before, "code": [code, by]}
        digest = key_digest(json.dumps(material, sort_keys=True).encode())
        entry = self.folder / f"parsed-{digest}.json"
        try:
            with open(entry, "rb") as handle:
                data = json.loads(handle.read(MAX_ENTRY_BYTES + 1))
            if isinstance(data, dict) and data.get("key") == material and "value" in data:
                return data["value"]  # type: ignore[no-any-return]
        except (OSError, ValueError):
            pass
        value = compute()
        if file_identity(path) == before:
            _store(entry, {"key": material, "value": value})
        return value




def _read(path: Path, material: dict) -> CommandResult | None:
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(MAX_ENTRY_BYTES + 1))
        if not isinstance(data, dict) or data.get("key") != material:
            return None  # a collision, a foreign or hand-edited file: never trusted
        stdout, stderr = data["stdout"], data["stderr"]
        if not isinstance(stdout, str) or not isinstance(stderr, str):
            return None
        return CommandResult(tuple(material["argv"]), 0, stdout, stderr)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, material: dict, result: CommandResult) -> None:
    _store(path, {"key": material, "stdout": result.stdout, "stderr": result.stderr})


def _store(path: Path, entry: dict) -> None:
    try:
        text = json.dumps(entry)
    except (TypeError, ValueError):
        return
    if len(text) > MAX_ENTRY_BYTES:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # only to write an entry; a warm cache never loads it (~3 ms, shutil, bz2, lzma)

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)  # atomic: a concurrent reader sees the old entry or this one
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(path.parent)
    except OSError:
        return


def _prune(folder: Path) -> None:
    """Keep the MAX_ENTRIES most recently written entries: an upgraded program (a new inode,
    size or mtime) gets a new entry and its old one is never read again. Only on a write,
    so a warm run never lists the folder."""
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith(".")]
        if len(names) <= MAX_ENTRIES:
            return
        dated = []
        for name in names:
            try:
                dated.append((os.stat(folder / name).st_mtime_ns, name))
            except OSError:
                continue
        for _, name in sorted(dated, reverse=True)[MAX_ENTRIES:]:
            try:
                os.unlink(folder / name)
            except OSError:
                continue
    except OSError:
        return
