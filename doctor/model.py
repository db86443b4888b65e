"""The data that flows through fwdoctor: facts about a host, and findings about those facts.

Everything here is plain, frozen, JSON-serialisable data. Probes produce `Fact`s, the
engine collects them into `Facts`, rules turn `Facts` + the KB into `Finding`s, renderers
print them. Nothing in this module touches the machine.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping


class Severity(str, enum.Enum):
    """How bad a finding is. The order matters: `error` sorts first."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


# A sentinel for "this fact could not be established"; never confused with None,
# which is a legitimate value ("no torch CUDA version: a CPU build").
class _Unknown:
    _instance: "_Unknown | None" = None

    def __new__(cls) -> "_Unknown":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()


@dataclass(frozen=True)
class Fact:
    """One observation: `key` is `area.attribute` (see doctor/FACTS.md for every key).

    `source` says where the value came from (a path, a command, "NVML") so a reader can
    check it by hand. An unknown fact carries `why` instead of a value.
    """

    key: str
    value: Any
    source: str = ""
    why: str = ""

    @classmethod
    def unknown(cls, key: str, why: str) -> "Fact":
        return cls(key, UNKNOWN, source="", why=why)

    @property
    def is_known(self) -> bool:
        return self.value is not UNKNOWN


@dataclass(frozen=True)
class ProbeFailure:
    """A probe that could not finish: reported as the `probe-failed` finding."""

    probe: str
    reason: str


# No fact `fwdoctor facts` writes is nested more than a handful of levels; a deeper one
# would only exercise the recursion of every renderer and rule that walks it.
MAX_FACTS_DEPTH = 32


_LEAVES = (str, int, float, bool, type(None))


def _nests(value: Any) -> bool:
    """A container to descend into. Exact types first: a parsed JSON document holds only
    dict, list and leaves, and an isinstance test against the Mapping ABC for every leaf
    was most of the cost of reading a facts file (fleet report reads thousands)."""
    kind = type(value)
    return kind is dict or kind is list or (kind not in _LEAVES and isinstance(value, (Mapping, list)))


def _deeper_than(data: Any, limit: int) -> str:
    """The path to the first value nested deeper than `limit` (iteratively: no recursion
    limit), or "" when none is."""
    stack: list[tuple[Any, int, str]] = [(data, 0, "")]
    while stack:
        value, depth, where = stack.pop()
        if depth > limit:
            return where or "the top level"
        if type(value) is dict or (type(value) not in _LEAVES and isinstance(value, Mapping)):
            stack.extend((v, depth + 1, f"{where}.{k}" if where else str(k)) for k, v in value.items() if depth + 1 > limit or _nests(v))
        elif isinstance(value, list):
            stack.extend((v, depth + 1, f"{where}[{i}]") for i, v in enumerate(value) if _nests(v))
    return ""


# "2026-12-01T17:50:23Z": UTC to the second, the form every document's collected_at takes.
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


@dataclass(frozen=True)
class Provenance:
    """Whose facts these are and when they were collected: what lets facts files from many
    nodes be told apart (`fleet report` names a node by `host_name`).

    `host_source` says where the name came from: "gethostname()" on the live host,
    "/etc/hostname" of a root folder or image ("no /etc/hostname" when it has none, with
    `host_name` None), or the facts file an old document without a host was read from.
    `collected_at` is UTC ("2026-12-01T17:50:23Z"), None only for an old facts file that
    did not record it: never guessed from a file's mtime."""

    host_name: str | None
    host_source: str
    collected_at: str | None

    def to_json(self) -> dict[str, Any]:
        return {"host": {"name": self.host_name, "source": self.host_source}, "collected_at": self.collected_at}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Provenance | None":
        """The provenance a document carries (its top-level "host" and "collected_at"), None
        when it has neither (written before they existed). Raises ValueError for a wrong
        shape, naming the key."""
        if "host" not in data and "collected_at" not in data:
            return None
        host = data.get("host")
        if host is None:
            host = {"name": None, "source": "not recorded"}
        if not isinstance(host, Mapping):
            raise ValueError(f'"host": expected an object {{"name", "source"}}, got {type(host).__name__}')
        name, source = host.get("name"), host.get("source", "")
        if name is not None and not isinstance(name, str):
            raise ValueError(f'"host.name": expected a string or null, got {type(name).__name__}')
        if not isinstance(source, str):
            raise ValueError(f'"host.source": expected a string, got {type(source).__name__}')
        when = data.get("collected_at")
        if when is not None and not (isinstance(when, str) and _TIMESTAMP.match(when)):
            raise ValueError(f'"collected_at": expected UTC time as YYYY-MM-DDTHH:MM:SSZ or null, got {str(when)[:40]!r}')
        return cls(name, source, when)


class Facts(Mapping[str, Any]):
    """Every fact about one host, by key. Missing and unknown keys both read as UNKNOWN.

    `facts["driver.version"]` returns the value; `facts.known("driver.version")` says if
    it was established; `facts.why("driver.version")` says why not.
    """

    def __init__(
        self,
        facts: Iterable[Fact] = (),
        failures: Iterable[ProbeFailure] = (),
        provenance: Provenance | None = None,
    ) -> None:
        self._facts: dict[str, Fact] = {}
        for fact in facts:
            self._facts[fact.key] = fact
        self.failures: list[ProbeFailure] = list(failures)
        # Set by fwdoctor.sources.gather once the facts are complete (whose, and when);
        # None for facts assembled in memory (a test, triage's facts from a bug report).
        self.provenance: Provenance | None = provenance

    def __getitem__(self, key: str) -> Any:
        fact = self._facts.get(key)
        return UNKNOWN if fact is None else fact.value

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        fact = self._facts.get(key)
        if fact is None or not fact.is_known:
            return default
        return fact.value

    def __iter__(self) -> Iterator[str]:
        return iter(self._facts)

    def __len__(self) -> int:
        return len(self._facts)

    def __contains__(self, key: object) -> bool:
        return key in self._facts

    def known(self, key: str) -> bool:
        fact = self._facts.get(key)
        return fact is not None and fact.is_known

    def why(self, key: str) -> str:
        fact = self._facts.get(key)
        if fact is None:
            return "not probed"
        return fact.why or ("known" if fact.is_known else "unknown")

    def source(self, key: str) -> str:
        fact = self._facts.get(key)
        return "" if fact is None else fact.source

    def fact(self, key: str) -> Fact | None:
        return self._facts.get(key)

    # --- serialisation: `fwdoctor facts > host.json` and `check --facts host.json` ---
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in sorted(self._facts):
            fact = self._facts[key]
            if fact.is_known:
                out[key] = {"value": fact.value, "source": fact.source}
            else:
                out[key] = {"unknown": True, "why": fact.why}
        return {
            **(self.provenance.to_json() if self.provenance is not None else {}),
            "facts": out,
            "probe_failures": [{"probe": f.probe, "reason": f.reason} for f in self.failures],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Facts":
        """Inverse of to_json. Raises ValueError naming the first malformed entry."""
        if not isinstance(data, Mapping) or not isinstance(data.get("facts"), Mapping):
            raise ValueError('expected an object with a "facts" object (the output of `fwdoctor facts`)')
        too_deep = _deeper_than(data, MAX_FACTS_DEPTH)
        if too_deep:
            raise ValueError(f"nested too deeply (at {too_deep[:60]}{'...' if len(too_deep) > 60 else ''}: over {MAX_FACTS_DEPTH} levels) to be facts from `fwdoctor facts`")
        facts: list[Fact] = []
        for key, entry in data["facts"].items():
            # type() first: isinstance against typing.Mapping costs ~1 us per fact, and a
            # fleet report reads hundreds of facts per node (issue 30, item 4).
            if type(entry) is not dict and not isinstance(entry, Mapping):
                raise ValueError(f"fact {key!r}: expected an object, got {type(entry).__name__}")
            if entry.get("unknown"):
                facts.append(Fact.unknown(key, str(entry.get("why", "unknown"))))
            elif "value" in entry:
                facts.append(Fact(key, entry["value"], source=str(entry.get("source", ""))))
            else:
                raise ValueError(f'fact {key!r}: needs "value" or "unknown"')
        failures = []
        for item in data.get("probe_failures", []) or []:
            if not isinstance(item, Mapping) or "probe" not in item:
                raise ValueError(f"probe_failures: malformed entry {item!r}")
            failures.append(ProbeFailure(str(item["probe"]), str(item.get("reason", ""))))
        return cls(facts, failures, Provenance.from_json(data))


@dataclass(frozen=True)
class FixRef:
    """How to fix a finding: a recipe id with its options, and/or literal commands.

    `commands` are argv lists or plain shell lines meant for a human to read and run; the
    recipe (if any) is what `fwdoctor fix` plans from.
    """

    recipe: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    commands: tuple[str, ...] = ()
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "options": dict(self.options),
            "commands": list(self.commands),
            "note": self.note,
        }


@dataclass(frozen=True)
class Finding:
    """One problem (or notable fact) about the host.

    `id` is from docs/findings.md and never changes meaning. `message` is one line with
    the observed values and the requirement. `evidence` holds the facts used, by key.
    """

    id: str
    severity: Severity
    message: str
    area: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    fix: FixRef | None = None
    code: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "code": self.code,
            "severity": self.severity.value,
            "area": self.area,
            "message": self.message,
            "evidence": dict(self.evidence),
            "fix": self.fix.to_json() if self.fix else None,
        }


@dataclass(frozen=True)
class NotChecked:
    """A rule that could not be evaluated, and why (never a silent pass)."""

    rule: str
    area: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule, "area": self.area, "reason": self.reason}
