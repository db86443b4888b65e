"""A cache of the KB's parsed YAML, as JSON, keyed by each file's content.

Why: turning the KB's YAML into Python objects costs a plain `fwdoctor check` about 35 ms
of its ~200 ms even with libyaml (the object construction is Python), plus ~15 ms to
import PyYAML; json.loads of the same data takes ~2 ms. The cache holds only plain data
(JSON, never pickle: nothing in it can run), lives in the user's cache folder, is named by
the sha256 of the file's bytes (an edited or different KB never hits an old entry), and
is written atomically. Any problem with it (read-only home, a corrupt entry, data JSON
cannot hold exactly) means the YAML is parsed as if there were no cache.

FWDOCTOR_NO_CACHE=1 turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

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


def cache_dir() -> Path | None:
    if os.environ.get("FWDOCTOR_NO_CACHE"):
        return None
    base = cache_home()
    if base is None:
        return None
    return Path(base) / "fwdoctor" / "kb"


def entry(raw: bytes, name: str) -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
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
    except (OSError, TypeError, ValueError):
        return
