"""The documents `fleet report` reads, one at a time: never the whole fleet in memory.

PATH arguments are files or folders. A folder is walked recursively for `*.json` (one
document) and `*.jsonl` (one document per line, as some collectors append them), in
sorted order so two runs over the same folder report the same thing. Each document is
classified by its `kind` stamp (fwdoctor.schema):

    facts        `fwdoctor facts`               facts
    check        `fwdoctor check --json`         facts (+ the findings it had, re-judged here)
    smoke-suite  `fwdoctor smoke all --report`   facts (its "check") + kernel + allreduce
    smoke        `fwdoctor smoke kernel|allreduce --json`   results only

A file that cannot be used (not JSON, another kind, too big, a FIFO, unreadable) becomes
a `BadInput` naming it, never an exception: one broken file must not cost the report of
the other 999 nodes.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping  # not typing's: its isinstance is ~10x slower
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import PurePath
from typing import Any, Callable, Iterable, Iterator

# read_regular_file reads a whole file; a .jsonl is read line by line through the same
# regular-file-only open (a FIFO or device refused unopened) that it uses.
from fwdoctor.fleet.facttext import Entry, FactTexts
from fwdoctor.host import UnreadableError, _open_regular, read_regular_file

# The cap `check --facts` puts on a facts file (fwdoctor.sources.MAX_FACTS_FILE_BYTES):
# a real one is ~20 KB, a smoke report ~30 KB. A .jsonl is streamed line by line, each
# line under the same cap, so a collector's one-file-per-fleet stays flat in memory.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
KINDS = ("facts", "check", "smoke-suite", "smoke")
SMOKE_SCHEMA = "fwdoctor-smoke/1"


@dataclass(frozen=True)
class Document:
    """One parsed document and where it came from (`where`: the file, or file:line)."""

    where: str
    kind: str
    data: Mapping[str, Any]
    stem: str  # the file name without its suffix: the node name of last resort
    # The document this one is a copy of but for host.name (Twins): every twin of one
    # shares its data but the name, and so one judging (fwdoctor.fleet.report.JudgeCache).
    twin: Template | None = field(default=None, compare=False, repr=False)
    # Each fact's remembered text (fwdoctor.fleet.facttext) when the document was read fact
    # by fact: its Facts are then built from Facts already checked, and fingerprinted.
    entries: dict[str, Entry] | None = field(default=None, compare=False, repr=False)

    @property
    def host_name(self) -> str | None:
        for holder in (self.data, self.data.get("check") if self.kind == "smoke-suite" else None):
            host = holder.get("host") if isinstance(holder, Mapping) else None
            name = host.get("name") if isinstance(host, Mapping) else None
            if isinstance(name, str) and name.strip():
                return name.strip()
        return None

    @property
    def collected_at(self) -> str | None:
        """The document's stamp as UTC "YYYY-MM-DDTHH:MM:SS.ffffffZ" (so stamps order as
        text whatever offset they were written with), or None when it has none. A stamp
        that is not an ISO 8601 date raises StampError: "last week" must not order."""
        for key in ("collected_at", "created"):  # smoke-suite reports wrote "created" first
            value = self.data.get(key)
            if value is None or value == "":
                continue
            return utc_stamp(value, key)
        return None


class StampError(ValueError):
    """A `collected_at` that is not a date: the message names the field and the value."""


def utc_stamp(value: object, field: str = "collected_at") -> str:
    """An ISO 8601 date-time (fwdoctor writes "2026-12-01T10:00:00Z") as one UTC form that
    orders as text; no offset means UTC. Anything else: StampError naming `field`."""
    if type(value) is str:
        # A fleet's documents share a few stamps (`fleet collect` stamps them in one pass):
        # parsed once each. Only good stamps are kept, so a bad one still raises, naming `field`.
        known = _UTC.get(value)
        if known is not None:
            return known
        if len(_UTC) >= _UTC_MAX:
            _UTC.clear()
        _UTC[value] = found = _utc_stamp(value, field)
        return found
    return _utc_stamp(value, field)


_UTC: dict[str, str] = {}
_UTC_MAX = 100_000


def _utc_stamp(value: object, field: str) -> str:
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    if not isinstance(value, str) or len(value) > 40:
        raise StampError(f'"{field}" {shown} is not an ISO 8601 date (e.g. 2026-12-01T10:00:00Z)')
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value  # 3.10's fromisoformat has no "Z"
    try:
        when = datetime.fromisoformat(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    except (ValueError, OverflowError):  # not a date; or year 1 less an offset
        raise StampError(f'"{field}" {shown} is not an ISO 8601 date (e.g. 2026-12-01T10:00:00Z)') from None


@dataclass(frozen=True)
class BadInput:
    """A file (or a line of a .jsonl) that could not be used, and why, in one line."""

    where: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"file": self.where, "reason": self.reason}


def paths_in(paths: list[str]) -> Iterator[str | BadInput]:
    """Every file to read: named files as given, folders walked for *.json / *.jsonl."""
    for path in paths:
        if os.path.isdir(path):
            found = False
            for folder, dirs, files in os.walk(path, onerror=None):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith((".json", ".jsonl")):
                        found = True
                        yield os.path.join(folder, name)
            if not found:
                yield BadInput(path, "a folder with no *.json or *.jsonl file in it")
        elif os.path.lexists(path):
            yield path
        else:
            yield BadInput(path, "no such file or folder")


def documents(paths: list[str], digest: Callable[[Document], Any] | None = None) -> Iterator[Any]:
    """Each document of every path, one at a time, or a BadInput for what cannot be used.

    `digest`: a function of one document alone (fwdoctor.fleet.report.parts_of); given
    one, and at least `workers_min()` .json files, the .json files are read in WORKERS
    worker processes (issue 30: reading and judging are the cost of a fleet report), and
    each arrives as its digest, not as a Document. See `_read_in_workers`."""
    twins = Twins()
    texts = FactTexts()
    items: Iterable[str | BadInput] = paths_in(paths)
    if digest is not None:
        items = list(items)  # paths only: ~100 bytes a file
        if sum(1 for item in items if type(item) is str and not item.endswith(".jsonl")) >= workers_min():
            yield from _read_in_workers(items, digest, twins, texts)
            return
    for item in items:
        if isinstance(item, BadInput):
            yield item
        elif item.endswith(".jsonl"):
            yield from _jsonl(item, texts)
        else:
            yield _json_file(item, twins, texts)


# ----------------------------------------------------------------------------- workers
# Reading in worker processes (issue 30 item 4): each worker reads chunks of .json files
# (its own Twins and FactTexts: they change how much is parsed, never what) and returns
# each document's digest: what that document alone gives its node (fleet.report.Parts, a
# few hundred bytes, so pickling costs little). Everything that depends on the order of
# the documents (which one a node shows, so whether a judgement and its rule error are
# used) is decided in this process, in the files' order: the report is the one read
# here, byte for byte (tests/test_fleet_workers.py).
WORKERS = 2
WORKERS_MIN = 500  # .json files; below it, starting the workers costs more than they save
CHUNK = 64  # files a task
IN_FLIGHT = 2 * WORKERS  # chunks handed out and not yet taken back: memory stays flat
WORKERS_MIN_ENV = "FWDOCTOR_FLEET_WORKERS_MIN"  # the tests set it to 1 to read a small fleet in workers


def workers_min() -> float:
    """How many .json files make reading them in workers pay: WORKERS_MIN, or the env
    knob FWDOCTOR_FLEET_WORKERS_MIN (an integer; it applies whatever the CPU count).
    Never where the 'fork' start method is missing (a worker must start as this process
    is, with no re-import), nor, by default, on one CPU, nor in a process running other
    threads (the MCP server calls build() beside its own): a fork copies only the calling
    thread, and a lock another thread held at that moment stays held in the child for ever."""
    import multiprocessing
    import threading

    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return math.inf
    forced = os.environ.get(WORKERS_MIN_ENV, "").strip()
    if forced:
        try:
            return max(1, int(forced))
        except ValueError:
            pass
    return WORKERS_MIN if _usable_cpus() >= 2 else math.inf


def _usable_cpus() -> int:
    """The CPUs this process may run on (a container's or taskset's cpuset), not the host's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no sched_getaffinity outside Linux
        return os.cpu_count() or 1


def _read_in_workers(items: list[str | BadInput], digest: Callable[[Document], Any], twins: Twins,
                     texts: FactTexts) -> Iterator[Any]:
    import multiprocessing
    import sys
    from collections import deque

    # A forked worker flushes the standard streams it inherited when it ends: nothing of
    # this process's may be waiting in them then, or it would be written twice.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    pending: deque[tuple[Any, Any]] = deque()  # (chunk of .json paths, its AsyncResult) | (an item, None)
    in_flight = 0
    with multiprocessing.get_context("fork").Pool(WORKERS, initializer=_worker_started) as pool:
        def taken() -> Iterator[Any]:
            nonlocal in_flight
            held, task = pending.popleft()
            if task is None:
                if isinstance(held, BadInput):
                    yield held
                else:
                    yield from _jsonl(held, texts)
                return
            in_flight -= 1
            for path, found in zip(held, task.get()):
                # None: the worker met something unexpected: read here, as always.
                yield _json_file(path, twins, texts) if found is None else found

        chunk: list[str] = []
        for index, item in enumerate(items):
            if type(item) is str and not item.endswith(".jsonl"):
                chunk.append(item)
                if len(chunk) < CHUNK and index + 1 < len(items):
                    continue
            if chunk:
                pending.append((chunk, pool.apply_async(_read_chunk, (chunk, digest))))
                in_flight += 1
                chunk = []
            if not (type(item) is str and not item.endswith(".jsonl")):
                pending.append((item, None))
            while in_flight >= IN_FLIGHT:
                yield from taken()
        while pending:
            yield from taken()


def _worker_started() -> None:
    """A worker forked from the CLI holds its handlers (fwdoctor.children.ending_tree_on_signals),
    under which SIGTERM would not end it, and Pool.terminate would wait on it for ever.
    Ctrl-C is the main process's (it ends the pool); SIGTERM and SIGHUP end a worker."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


# A worker's own Twins and FactTexts (each worker process reads its files in their order).
_WORKER_READING: tuple[Twins, FactTexts] | None = None


def _read_chunk(paths: list[str], digest: Callable[[Document], Any]) -> list[Any]:
    """In a worker: each file's BadInput or its document's digest, in order; None where
    something unexpected was raised (the main process reads that file itself, and meets
    it as it always would)."""
    global _WORKER_READING
    if _WORKER_READING is None:
        _WORKER_READING = (Twins(), FactTexts())
    twins, texts = _WORKER_READING
    found: list[Any] = []
    for path in paths:
        try:
            doc = _json_file(path, twins, texts)
            found.append(doc if isinstance(doc, BadInput) else digest(doc))
        except Exception:
            found.append(None)
    return found


class Template:
    """A facts document with its host.name cut out: `prefix` + a JSON string + `suffix`.

    Made from a document read in full, whose name's JSON text occurs once in it; before the
    first twin is taken from it, the text with a placeholder in the name's place is parsed
    and must give the document with only host.name changed (so the cut is the name's
    string and nothing else: not a key, not a value of the same text elsewhere)."""

    __slots__ = ("prefix", "suffix", "kind", "data", "entries", "checked", "judged")

    def __init__(self, prefix: bytes, suffix: bytes, kind: str, data: dict[str, Any],
                 entries: dict[str, Entry] | None = None) -> None:
        self.prefix, self.suffix, self.kind, self.data, self.entries = prefix, suffix, kind, data, entries
        self.checked: bool | None = None  # None: not yet parsed with the placeholder
        # (the JudgeCache that judged it, what judging the document gave) for every twin
        # kept here, so it is dropped with the template.
        self.judged: Any = None


class Twins:
    """Documents that are another one but for host.name, read without parsing them again.

    Parsing is most of what `fleet report` costs once identical facts are judged once
    (issue 30): 10,000 facts files of ~20 KB. Nodes built alike write the same bytes but
    their names, so a file whose bytes are a template's prefix, one JSON string and the
    template's suffix IS that document with that string as its host.name: replacing one
    string token of valid JSON by another leaves every other value where it was. Only
    facts and check documents are kept (a smoke document's figures differ on every node),
    at most MAX of them, the most recently matched first."""

    MAX = 16
    # No document holds this (checked on each): NULs are escaped in JSON, never literal.
    PLACEHOLDER = b'"\\u0000fwdoctor: host.name\\u0000"'

    def __init__(self) -> None:
        self._templates: list[Template] = []

    def match(self, raw: bytes, where: str, stem: str) -> Document | None:
        for index, template in enumerate(self._templates):
            prefix, suffix = template.prefix, template.suffix
            if len(raw) < len(prefix) + len(suffix) + 2 or not raw.startswith(prefix) or not raw.endswith(suffix):
                continue
            middle = raw[len(prefix):len(raw) - len(suffix)]
            if middle[:1] != b'"' or middle[-1:] != b'"':
                return None
            try:
                name = json.loads(middle.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                return None  # not one JSON string: this file is read in full
            if not isinstance(name, str) or not self._checked(template):
                return None
            if index:
                self._templates.insert(0, self._templates.pop(index))
            host = template.data["host"]
            data = {**template.data, "host": {**host, "name": name}}
            return Document(where, template.kind, data, stem, template, template.entries)
        return None

    def learn(self, raw: bytes, doc: Document) -> Document:
        """Keep `doc` (just parsed from `raw`) as a template if it can be one: then `doc`
        is returned as the first of the template's twins, else as it is."""
        data = doc.data
        host = data.get("host")
        if doc.kind not in ("facts", "check") or type(data) is not dict or type(host) is not dict:
            return doc
        name = host.get("name")
        if not isinstance(name, str) or self.PLACEHOLDER in raw:
            return doc
        for ascii_only in (False, True):
            needle = json.dumps(name, ensure_ascii=ascii_only).encode("utf-8")
            if raw.count(needle) == 1:
                at = raw.index(needle)
                template = Template(raw[:at], raw[at + len(needle):], doc.kind, data, doc.entries)
                self._templates.insert(0, template)
                del self._templates[self.MAX:]
                return replace(doc, twin=template)
        return doc

    def _checked(self, template: Template) -> bool:
        if template.checked is None:
            text = template.prefix + self.PLACEHOLDER + template.suffix
            host = template.data["host"]
            expected = {**template.data, "host": {**host, "name": json.loads(self.PLACEHOLDER)}}
            try:
                template.checked = json.loads(text.decode("utf-8")) == expected
            except (UnicodeDecodeError, ValueError, RecursionError):
                template.checked = False
        return bool(template.checked)


def _json_file(path: str, twins: Twins | None = None, texts: FactTexts | None = None) -> Document | BadInput:
    raw = read_json(path)
    return raw if isinstance(raw, BadInput) else from_raw(raw, path, twins, texts)


def read_json(path: str) -> bytes | BadInput:
    """A .json file's bytes, or why it cannot be read (pure: fwdoctor.fleet.report's
    workers read files with it)."""
    # read_regular_file asks for limit + 1 bytes in one read, and Python allocates a buffer
    # that size before shrinking it: 64 MiB per 20 KB file is a fifth of the reading time
    # of a thousand files. The file's size (plus slack for one still being written) bounds
    # the request instead; the cap still refuses anything larger.
    try:
        size = os.stat(path).st_size
    except OSError:
        size = MAX_DOCUMENT_BYTES
    try:
        raw = read_regular_file(path, min(MAX_DOCUMENT_BYTES, size + 1024 * 1024), "")
    except ValueError as exc:
        return BadInput(path, _strip_flag(str(exc), path))
    return raw


def from_raw(raw: bytes, path: str, twins: Twins | None = None, texts: FactTexts | None = None) -> Document | BadInput:
    """The document of a .json file read by read_json: a twin of one before, else parsed."""
    if twins is None:
        return parse(raw, path, _stem(path), texts)
    stem = _stem(path)
    twin = twins.match(raw, path, stem)
    if twin is not None:
        return twin
    doc = parse(raw, path, stem, texts)
    return twins.learn(raw, doc) if isinstance(doc, Document) else doc


def _jsonl(path: str, texts: FactTexts | None = None) -> Iterator[Document | BadInput]:
    try:
        handle = _open_regular(path, path)
    except UnreadableError as exc:
        yield BadInput(path, exc.reason)
        return
    except OSError as exc:
        yield BadInput(path, exc.strerror or str(exc))
        return
    stem = _stem(path)
    with handle:
        number = 0
        while True:
            try:
                line = handle.readline(MAX_DOCUMENT_BYTES + 1)
            except OSError as exc:
                yield BadInput(path, exc.strerror or str(exc))
                return
            if not line:
                return
            number += 1
            where = f"{path}:{number}"
            if len(line) > MAX_DOCUMENT_BYTES:
                yield BadInput(where, f"line too big (over {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB); the rest of the file is skipped")
                return
            if not line.strip():
                continue
            yield parse(line, where, f"{stem}-{number}", texts)


def parse(raw: bytes, where: str, stem: str, texts: FactTexts | None = None) -> Document | BadInput:
    """One document from its bytes: JSON, an object, a kind fleet report reads. With
    `texts`, a facts document is read fact by fact (FactTexts.split): the same data."""
    entries: dict[str, Entry] | None = None
    try:
        text = raw.decode("utf-8")
        split = texts.split(text) if texts is not None else None
        if split is not None:
            data, entries = split
        else:
            data = json.loads(text)
    except UnicodeDecodeError:
        return BadInput(where, "not UTF-8 text")
    except json.JSONDecodeError as exc:
        return BadInput(where, f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
    except RecursionError:
        return BadInput(where, "nested too deeply to be an fwdoctor document")
    if not isinstance(data, dict):
        return BadInput(where, f"a JSON {type(data).__name__}, not an fwdoctor document (an object)")
    kind = data.get("kind")
    if kind is None:  # files from before the stamp: recognise them by their layout
        kind = "smoke-suite" if data.get("schema") == SMOKE_SCHEMA else ("facts" if isinstance(data.get("facts"), dict) else None)
    if kind not in KINDS:
        shown = f"kind {str(kind)[:40]!r}" if kind is not None else "no \"kind\""
        return BadInput(where, f"{shown}: fleet report reads facts, check, smoke-suite and smoke documents")
    return Document(where, str(kind), data, stem, entries=entries)


def _stem(path: str) -> str:
    name = os.path.basename(path)  # PurePath(path).name at a tenth of the cost per file,
    if name in ("", ".", ".."):  # but for "DIR/" and "DIR/.", where PurePath tells the folder
        name = PurePath(path).name
    for suffix in (".jsonl", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)] or name
    return name


def _strip_flag(message: str, path: str) -> str:
    """read_regular_file's "FLAG PATH: reason" as just the reason (the caller names the file)."""
    marker = f"{path}: "
    index = message.find(marker)
    return message[index + len(marker):] if index >= 0 else message
