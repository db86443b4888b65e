"""The compiled methods of fwdoctor's dataclasses, kept between runs (issue 30).

Why: `@dataclass` writes each class's __init__, __repr__, __eq__ (and, frozen, __setattr__
and __delattr__) as source text and compiles it with exec() when the class is defined. A
plain `fwdoctor check` defines ~60 dataclasses: ~360 compiles, ~30 ms of its ~0.2 s, every
run, for text that is the same every run. This module gives the dataclasses module an
exec() that compiles each distinct text once and keeps the code object in the user's cache
folder (marshal, the format of Python's own .pyc files), so a later run only unmarshals it.

Exactly the same classes: a text is compiled as dataclasses itself compiles it (filename
"<string>", no inherited __future__ flags), and an entry is used only for the very text it
was compiled from (the whole text is its key), by the same interpreter (the file is named
by the implementation's cache tag and the exact version: bytecode and marshal's format
change only between versions). A Python whose dataclasses stops calling exec() simply gets
no cache.

Trust: the entries are code, so they get the trust Python gives its own __pycache__ and
PYTHONPYCACHEPREFIX folders, with a check Python does not make: the file is read only when it is a
regular file owned by this process's effective user and writable by no one else (checked
on the open file, so a renamed-in or swapped file is refused too). A root `fwdoctor` run
with another user's XDG_CACHE_HOME (`sudo -E`) therefore never runs that user's file.

Installed only by the `fwdoctor` command and `python -m fwdoctor` (fwdoctor.launch), never
on `import fwdoctor`: a program that imports fwdoctor as a library keeps its own exec().
Best-effort and never fatal: an unreadable, corrupt, foreign or oversized file is ignored
and the texts are compiled as if there were none. FWDOCTOR_NO_CACHE=1 or `--no-cache`
turns it off, like the other caches.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

# Bump when what an entry file holds changes.
FORMAT = b"fwdoctor-code-1\n"
MAX_FILE_BYTES = 8 * 1024 * 1024  # ~360 entries of a check are ~300 KB
MAX_ENTRIES = 4096  # more distinct texts than fwdoctor's classes make: start over


class CodeCache:
    """Source text -> its code object, read from and written to one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, CodeType] = _read(path)
        self.added = 0

    def compile(self, text: str) -> CodeType:
        code = self.entries.get(text)
        if code is None:
            # As exec(text) in dataclasses compiles it: that module has no __future__
            # imports, and this one's (annotations) must not leak into the classes.
            code = compile(text, "<string>", "exec", dont_inherit=True)
            if len(self.entries) >= MAX_ENTRIES:
                self.entries.clear()
            self.entries[text] = code
            self.added += 1
        return code

    def exec(self, source: Any, globals: dict | None = None, locals: Any = None, **kwargs: Any) -> None:
        """exec() with the compile of a str source taken from the cache."""
        code = self.compile(source) if isinstance(source, str) else source
        builtins.exec(code, globals, locals, **kwargs)

    def activate(self) -> None:
        """Give the dataclasses module this cache's exec() (it shadows the builtin there only)."""
        import dataclasses

        dataclasses.exec = self.exec  # type: ignore[attr-defined]

    def deactivate(self) -> None:
        """Give dataclasses back the builtin exec(), when this cache's is the one in place."""
        import dataclasses

        if vars(dataclasses).get("exec") == self.exec:
            del dataclasses.exec  # type: ignore[attr-defined]

    def save(self) -> None:
        """Write the entries when this run compiled new ones; any failure is silent."""
        if not self.added:
            return
        try:
            data = FORMAT + marshal.dumps(self.entries)
            if len(data) > MAX_FILE_BYTES:
                return
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = self.path.with_name(f".tmp-{os.getpid()}-{self.path.name}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(tmp, self.path)  # a concurrent reader sees a whole file or the old one
            except BaseException:
                os.unlink(tmp)
                raise
            self.added = 0
        except Exception:  # noqa: BLE001 (best-effort: the next run compiles again)
            return


def _read(path: Path) -> dict[str, CodeType]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if ((st.st_mode & 0o170000) != 0o100000 or st.st_uid != os.geteuid() or st.st_mode & 0o022
                or st.st_size > MAX_FILE_BYTES):
            return {}
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            data = handle.read(MAX_FILE_BYTES + 1)
        if not data.startswith(FORMAT) or len(data) > MAX_FILE_BYTES:
            return {}
        entries = marshal.loads(data[len(FORMAT):])
    except Exception:  # noqa: BLE001 (a corrupt or foreign file: no cache)
        return {}
    finally:
        if fd >= 0:
            os.close(fd)
    if not isinstance(entries, dict) or not all(isinstance(k, str) and isinstance(v, CodeType) for k, v in entries.items()):
        return {}
    return entries


def default_path() -> Path | None:
    """<cache home>/fwdoctor/code/dataclasses-<cache tag>-<hexversion>.marshal, or None when caching
    is off, there is no home, or this platform has no notion of a file's owner."""
    if os.environ.get("FWDOCTOR_NO_CACHE") or not hasattr(os, "geteuid"):
        return None
    from fwdoctor.kb.cache import cache_home

    base = cache_home()
    if base is None:
        return None
    tag = sys.implementation.cache_tag or sys.implementation.name
    return Path(base) / "fwdoctor" / "code" / f"dataclasses-{tag}-{sys.hexversion:x}.marshal"


def install(path: Path | None) -> CodeCache | None:
    """A cache backed by `path`, in place in the dataclasses module (None: do nothing)."""
    if path is None:
        return None
    cache = CodeCache(path)
    cache.activate()
    return cache
