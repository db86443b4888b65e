"""A cache of the KB's parsed YAML, as JSON, keyed by each file's content.

Why: turning the KB's YAML into Python objects costs a plain `fwdoctor check` about 35 ms
of its ~200 ms even with libyaml (the object construction is Python), plus ~15 ms to
import PyYAML; json.loads of the same data takes ~2 ms. The cache holds only plain data
(JSON, never pickle: nothing in it can run), lives in the user's cache folder, is named by
the sha256 of the file's bytes (an edited or different KB never hits an old entry), and
is written atomically. Any problem with it (read-only home, a corrupt entry, data JSON
cannot hold exactly) means the YAML is parsed as if there were no cache.

On top of it, the compiled cache (`compiled`): each area's validated, built objects (what
`from_yaml` returns), keyed by the identity of the YAML files they came from and of the code
that built them, so a warm `check` neither parses nor validates (json.loads plus
validation was ~15 ms of a plain check, unpickling the built areas ~2 ms; issue 30).

FWDOCTOR_NO_CACHE=1, or `fwdoctor --no-cache` (`bypass`), turns both off.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import sys
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")

# Bump when what load_yaml returns for the same bytes changes (a loader change).
FORMAT = "1"


def cache_home() -> str | None:
    """The user's cache folder: $XDG_CACHE_HOME when it is an absolute path (the XDG Base
    Directory spec ignores a relative one), else ~/.cache; None when neither is absolute
    (no HOME). Every fwdoctor cache lives in its fwdoctor/ folder."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(base):
        return base
    home = os.path.expanduser("~")
    return os.path.join(home, ".cache") if os.path.isabs(home) else None


_BYPASS = False


def bypass(on: bool) -> None:
    """`fwdoctor --no-cache` (and check's own --no-cache): read and write no KB cache entry
    in this process. Set on every CLI invocation, so one run's choice never outlives it."""
    global _BYPASS
    _BYPASS = on


def cache_dir() -> Path | None:
    if os.environ.get("FWDOCTOR_NO_CACHE") or _BYPASS:
        return None
    base = cache_home()
    if base is None:
        return None
    return Path(base) / "fwdoctor" / "kb"


def entry(raw: bytes, name: str) -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
    import hashlib  # here: only a compiled-cache miss reads the parsed-YAML layer (~3 ms to import)

    digest = hashlib.sha256(FORMAT.encode() + b"\0" + raw).hexdigest()
    return folder / f"{Path(name).stem}-{digest[:32]}.json"


def read(path: Path | None) -> Any | None:
    """The cached data, or None (no entry, or one that cannot be read as JSON)."""
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read())
    except (OSError, ValueError):
        return None


def write(path: Path | None, data: Any) -> None:
    """Store `data` when JSON gives it back exactly (no dates, no non-string keys)."""
    if path is None:
        return
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
        if json.loads(text) != data:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # only to write an entry; a warm cache never loads it (~3 ms, shutil, bz2, lzma)

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(path)
    except (OSError, TypeError, ValueError):
        return


# ----------------------------------------------------------------------------- compiled
# Bump when what an entry holds, or how its key is made, changes.
COMPILED_FORMAT = "1"
# The code that builds an area, besides fwdoctor/kb/*.py (all of which are keyed): every
# module a kb/*.py file imports from fwdoctor, so an edited helper (an arch parser, the
# finding ids errors.yaml is checked against) never meets objects the old code built.
# tests/test_kb_compiled_cache.py reads the imports of doctor/kb/*.py and keeps this whole.
BUILD_CODE = ("__init__.py", "arch.py", "versions.py", "libraries.py", "findings.py", "model.py", "host.py", "yamlload.py",
              "triage/errors.py")


def identity(path: str | os.PathLike[str]) -> list[int] | None:
    """(device, inode, size, mtime_ns, ctime_ns) of a regular file; None when it is not one.
    A rewritten (new inode), edited or touched (mtime, ctime) or resized file changes it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if (st.st_mode & 0o170000) != 0o100000:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _code_identity() -> list[Any] | None:
    """The identity of the code that builds areas: fwdoctor's version and every file of
    fwdoctor/kb/ and BUILD_CODE (a reinstall rewrites them all; an edit changes one)."""
    here = Path(__file__).resolve().parent
    package = here.parent
    try:
        names = sorted(n for n in os.listdir(here) if n.endswith(".py"))
    except OSError:
        return None
    files = [here / n for n in names] + [package / n for n in BUILD_CODE]
    idents = [[str(f), identity(f)] for f in files]
    from fwdoctor import __version__

    return [__version__, sys.version, pickle.HIGHEST_PROTOCOL, idents]


_CODE: list[Any] | None = None
_CODE_TAKEN = False


def _code() -> list[Any] | None:
    """The building code's identity as this process found it when fwdoctor.kb was first
    imported (see the end of this module), before the area modules load: a process whose
    code was replaced under it (a pip upgrade beside a long-running fleet server, an edit
    during a test run) keys its entries by the code it runs, not the code now on disk."""
    global _CODE, _CODE_TAKEN
    if not _CODE_TAKEN:
        _CODE, _CODE_TAKEN = _code_identity(), True
    return _CODE


def compiled(name: str, files: Sequence[Path], build: Callable[[], T]) -> T:
    """`build()`'s value (an area's validated objects), from the compiled cache when `files`
    and the building code are the very files an entry was made from, else built now and
    stored (when no file changed while it was built). A build that raises (a KBError) is
    never stored: the next run raises it again. Best-effort: any cache problem builds."""
    folder = cache_dir()
    if folder is None:
        return build()
    code = _code()
    before = [[str(f), identity(f)] for f in files]
    if code is None or any(ident is None for _, ident in before):
        return build()  # an absent file: build() says what is wrong with it
    material = [COMPILED_FORMAT, code, before]
    blob = json.dumps(material).encode()
    path = folder / f"{Path(name).stem}-{key_digest(blob)}.pickle"
    found = _read_compiled(path, material)
    if found is not _MISSING:
        return found  # type: ignore[return-value]
    value = build()
    # Stored only when neither the YAML nor the code changed since this process began: an
    # entry built by code that is no longer on disk would reach the next, newer process.
    if [[str(f), identity(f)] for f in files] == before and _code_identity() == code:
        _write_compiled(path, material, value)
    return value


def key_digest(blob: bytes) -> str:
    """A file name for a key: 64 bits of CRC-32 and Adler-32 (zlib, already loaded where
    hashlib is not). Not a security boundary: every entry holds its whole key and is
    used only when that key equals the one asked for, so a collision is a miss."""
    import zlib

    return f"{zlib.crc32(blob):08x}{zlib.adler32(blob):08x}"


_MISSING = object()
MAX_COMPILED_BYTES = 16 * 1024 * 1024  # the shipped areas are ~40 KB each


class _KBUnpickler(pickle.Unpickler):
    """Builds only the KB's own data classes and the few library types they hold; any
    other global in an entry (a foreign or crafted file) refuses the whole entry, so
    reading the cache can construct data but never call arbitrary code."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_CALLS:
            return super().find_class(module, name)
        if module.startswith("fwdoctor.kb.") or module in ("fwdoctor.libraries", "packaging.specifiers", "packaging.version"):
            import dataclasses  # noqa: I001 (here: a warm cache of plain views needs neither)
            import enum

            found = super().find_class(module, name)
            # The KB's views (kb/*.py: dataclasses, and query classes whose __init__ only
            # indexes rows), the dataclasses they hold, packaging's Version/SpecifierSet.
            if isinstance(found, type) and (module.startswith(("fwdoctor.kb.", "packaging.")) or dataclasses.is_dataclass(found)
                                            or issubclass(found, enum.Enum)):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not KB data")


# re.Pattern pickles as a call of re._compile(pattern, flags): the error signatures' patterns.
_ALLOWED_CALLS = frozenset({("re", "_compile")})


def _read_compiled(path: Path, material: list[Any]) -> Any:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_COMPILED_BYTES + 1)
        if len(data) > MAX_COMPILED_BYTES:
            return _MISSING
        key, value = _KBUnpickler(io.BytesIO(data)).load()
        if key != material:
            return _MISSING  # a hash collision, or a foreign entry: never trusted
        return value
    except Exception:  # noqa: BLE001 (any unreadable entry is a miss: the area is built)
        return _MISSING


def _write_compiled(path: Path, material: list[Any], value: Any) -> None:
    try:
        data = pickle.dumps((material, value), protocol=pickle.HIGHEST_PROTOCOL)
        # Only what reads back through the restricted unpickler, whole, is worth writing.
        if not same(_KBUnpickler(io.BytesIO(data)).load()[1], value):
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # only to write an entry; a warm cache never loads it

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pickle")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)  # atomic: a concurrent reader sees a whole entry or none
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(path)
    except Exception:  # noqa: BLE001 (best-effort: an unwritable folder, an unpicklable value)
        return


KEEP_PER_NAME = 8  # a few KB folders (bundled, --kb, $FWDOCTOR_KB) and versions side by side


def _prune(written: Path) -> None:
    """Remove all but the KEEP_PER_NAME newest entries of the name just written, of its
    kind (the compiled .pickle layer, the parsed-YAML .json layer): each edit of a KB file
    or reinstall of fwdoctor makes a new entry, and nothing else would ever remove the old
    ones. Only on a write, so a warm run never lists the folder."""
    stem, _, tail = written.name.rpartition("-")
    suffix = tail[tail.index("."):] if "." in tail else ""
    entries = []
    for other in written.parent.iterdir():
        name = other.name
        if name.startswith(stem + "-") and name.endswith(suffix) and len(name) == len(written.name):
            try:
                entries.append((other.stat().st_mtime_ns, other))
            except OSError:
                continue
    for _, old in sorted(entries, reverse=True)[KEEP_PER_NAME:]:
        try:
            old.unlink()
        except OSError:
            continue


def same(a: Any, b: Any, depth: int = 0) -> bool:
    """Whether two built areas hold the same data: `==` where a type defines it, else their
    attributes compared the same way (the query views, TorchKB and friends, define no __eq__;
    their pickles may differ only in a set's order)."""
    if type(a) is not type(b) or depth > 64:
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, depth + 1) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], depth + 1) for k in a)
    if type(a).__eq__ is not object.__eq__:
        return bool(a == b)
    return hasattr(a, "__dict__") and same(vars(a), vars(b), depth + 1)


# Taken now, when fwdoctor.kb is imported and before any area module is (issue 30): ~30
# stat calls, well under a millisecond.
_code()
