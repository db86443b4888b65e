"""Memory exhausted while a CUDA extension compiled, read from a report (issue 26, the
build-ext group).

ninja runs MAX_JOBS compile jobs at once (torch.utils.cpp_extension: the CPU count + 2 when
MAX_JOBS is unset), each an nvcc whose cicc and ptxas take GBs (flash-attn passes --threads 4
to each). Too many, and the kernel's OOM killer ends one; the build log often says only
"error: command ... failed" (Dao-AILab/flash-attention#389: "The error log does not provide
messages about running out of RAM"). What a report shows instead is the memory itself, sampled
during the build:

    top:      MiB Mem : 128686.2 total,    571.3 free, 128028.8 used,     86.1 buff/cache
              MiB Swap:      0.0 total,      0.0 free,      0.0 used.    524.7 avail Mem
    free -h:  Mem:   125Gi   124Gi   558Mi ...   (the header names the columns)
    /proc/meminfo: MemTotal / MemAvailable / SwapTotal / SwapFree

`system.memory` is the snapshot with the least memory left; `report.ext_build` the build
commands the report shows (MAX_JOBS=N, `pip install ... --no-build-isolation`, `setup.py
install|build_ext|develop|bdist_wheel`, a pip install of a project doctor/kb/extensions.yaml
knows). The rule judges the two together; the killed compilers' own words (cicc/cudafe++
"died due to signal 9", cc1plus "Killed signal") are errors.yaml rows of the same id.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, Rule, rule
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines

if TYPE_CHECKING:
    from fwdoctor.kb import KB

# Left at or below this share of the total (and no free swap to fall back on), memory is
# exhausted: the kernel is reclaiming page cache and the OOM killer is next. top's and free's
# "available" already counts reclaimable cache, so 5% is well past "busy".
EXHAUSTED_SHARE = 0.05
_UNITS = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "b": 1}
_NUMBER = r"\d{1,15}(?:\.\d{1,3})?"

# top (procps-ng >= 3.3.10): "MiB Mem :  15731.9 total, ...", "KiB Swap: ... used.  524.7 avail Mem"
_TOP = re.compile(r"^\s*(?P<unit>[KMGT]iB|KB|MB|GB) (?P<what>Mem|Swap)\s{0,4}:(?P<rest>.{1,300})$")
_TOP_FIELD = re.compile(r"(" + _NUMBER + r")\+?\s{1,4}(total|free|used|buff/cache|avail Mem)\b")
# top (procps 3.2): "Mem:  16331572k total, 16082652k used,   248920k free,   178528k buffers"
_TOP_OLD = re.compile(r"^\s*(?P<what>Mem|Swap):\s{1,20}(?P<rest>\d{1,15}k total,.{1,300})$")
_TOP_OLD_FIELD = re.compile(r"(\d{1,15})k\s{1,4}(total|free|used|buffers|cached)\b")
# free: a header naming the columns, then "Mem:" and "Swap:" rows; -h adds units ("125Gi", "558Mi")
_FREE_HEADER = re.compile(r"^\s*total\s{1,20}used\s{1,20}free\b")
_FREE_ROW = re.compile(r"^\s*(?P<what>Mem|Swap):(?P<rest>(?:\s{1,20}" + _NUMBER + r"[KMGTB]?i?){1,7})\s*$")
_MEMINFO = re.compile(r"^\s*(?P<key>MemTotal|MemAvailable|MemFree|SwapTotal|SwapFree):\s{1,30}(?P<kb>\d{1,15}) kB\s*$")

# The build the report shows: MAX_JOBS as set for it, and the commands that compile.
_MAX_JOBS = re.compile(r"\bMAX_JOBS\s{0,2}=\s{0,2}[\"']?(?P<jobs>\d{1,4})\b")
_NO_ISOLATION = re.compile(r"\bpip3?\s{1,4}install\b.{0,300}--no-build-isolation")
# options between setup.py and its command are words without dots ("setup.py -q build_ext"), so
# a line of "setup.py setup.py ..." cannot restart a match inside the last one
_SETUP = re.compile(r"\bsetup\.py\s{1,4}(?:[\w-]{1,40}\s{1,4}){0,2}(?:install|build_ext|build|develop|bdist_wheel)\b")
_PIP_INSTALL = re.compile(r"\bpip3?\s{1,4}install\s{1,4}(?P<args>.{1,300})$")


def _bytes(number: str, unit: str) -> int:
    return int(float(number) * _UNITS[unit[0].lower()])


def _top(lines: Lines, i: int, text: str) -> dict[str, Any] | None:
    match = _TOP.match(text)
    if match and match.group("what") == "Mem":
        unit = match.group("unit")
        fields = {k: _bytes(v, unit) for v, k in _TOP_FIELD.findall(match.group("rest"))}
        swap = _TOP.match(lines.norm[i + 1]) if i + 1 < len(lines.norm) else None
        if swap and swap.group("what") == "Swap":
            more = {k: _bytes(v, swap.group("unit")) for v, k in _TOP_FIELD.findall(swap.group("rest"))}
            fields.update({f"swap {k}": v for k, v in more.items() if k != "avail Mem"})
            if "avail Mem" in more:
                fields["avail Mem"] = more["avail Mem"]
        if "total" not in fields or "free" not in fields:
            return None
        available = fields.get("avail Mem", fields["free"] + fields.get("buff/cache", 0))
        return _snapshot("top", i, fields["total"], available, fields.get("swap total"), fields.get("swap free"), swap is not None)
    old = _TOP_OLD.match(text)
    if old and old.group("what") == "Mem":
        fields = {k: int(v) * 1024 for v, k in _TOP_OLD_FIELD.findall(old.group("rest"))}
        swap = _TOP_OLD.match(lines.norm[i + 1]) if i + 1 < len(lines.norm) else None
        more = {k: int(v) * 1024 for v, k in _TOP_OLD_FIELD.findall(swap.group("rest"))} if swap and swap.group("what") == "Swap" else {}
        if "total" not in fields or "free" not in fields:
            return None
        available = fields["free"] + fields.get("buffers", 0) + more.get("cached", 0)
        return _snapshot("top", i, fields["total"], available, more.get("total"), more.get("free"), bool(more))
    return None


def _free(lines: Lines, i: int) -> dict[str, Any] | None:
    """`free` from its header line at i: the Mem row's total and available (else free + cache)."""
    columns = lines.norm[i].split()
    rows: dict[str, list[str]] = {}
    for j in range(i + 1, min(len(lines.norm), i + 4)):
        row = _FREE_ROW.match(lines.norm[j])
        if row:
            rows[row.group("what")] = row.group("rest").split()
    mem = rows.get("Mem")
    if not mem or len(mem) != len(columns):
        return None

    def value(cells: list[str], name: str) -> int | None:
        if name not in columns:
            return None
        cell = cells[columns.index(name)]
        found = re.fullmatch(r"(" + _NUMBER + r")([KMGTB]?)i?", cell)
        if not found:
            return None
        return _bytes(found.group(1), found.group(2) or "k")  # free's default unit is KiB

    total, available = value(mem, "total"), value(mem, "available")
    if available is None:
        free, cache = value(mem, "free"), value(mem, "buff/cache") or value(mem, "cache") or 0
        available = free + cache if free is not None else None
    if total is None or available is None:
        return None
    swap = rows.get("Swap")
    swap_total = value(swap + [""] * (len(columns) - len(swap)), "total") if swap else None
    swap_free = value(swap + [""] * (len(columns) - len(swap)), "free") if swap else None
    return _snapshot("free", i, total, available, swap_total, swap_free, swap is not None)


def _meminfo(lines: Lines, i: int) -> dict[str, Any] | None:
    fields: dict[str, int] = {}
    for j in range(i, min(len(lines.norm), i + 30)):
        found = _MEMINFO.match(lines.norm[j])
        if found:
            fields.setdefault(found.group("key"), int(found.group("kb")) * 1024)
    if "MemTotal" not in fields or ("MemAvailable" not in fields and "MemFree" not in fields):
        return None
    available = fields.get("MemAvailable", fields.get("MemFree", 0))
    return _snapshot("/proc/meminfo", i, fields["MemTotal"], available, fields.get("SwapTotal"), fields.get("SwapFree"), "SwapTotal" in fields)


def _snapshot(tool: str, i: int, total: int, available: int, swap_total: int | None, swap_free: int | None, swap_shown: bool) -> dict[str, Any] | None:
    if total <= 0 or available < 0 or available > total:
        return None
    return {"tool": tool, "line": i + 1, "total_bytes": total, "available_bytes": available,
            "swap_total_bytes": swap_total if swap_shown else None, "swap_free_bytes": swap_free if swap_shown else None}


def _build_commands(lines: Lines) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for i, text in enumerate(lines.norm):
        jobs = _MAX_JOBS.search(text)
        pip = _PIP_INSTALL.search(text) if "install" in text else None
        if not (jobs or _SETUP.search(text) or pip):
            continue
        entry: dict[str, Any] = {"line": i + 1, "text": text.strip()[:300]}
        if jobs:
            entry["max_jobs"] = int(jobs.group("jobs"))
        if _NO_ISOLATION.search(text) or _SETUP.search(text):
            entry["compiles"] = True
        if pip:
            # the names pip was asked for; the rule keeps the ones doctor/kb/extensions.yaml knows
            entry["packages"] = [re.split(r"[=<>~!\[;@]", word, maxsplit=1)[0].lower() for word in pip.group("args").split()
                                 if not word.startswith(("-", ".", "/", "'", '"', "`")) and re.match(r"[A-Za-z]", word)][:10]
        found.append(entry)
    return found


def find(lines: Lines) -> list[Fragment]:
    """system.memory (the snapshot with the least memory left) and report.ext_build."""
    snapshots = []
    for i, text in enumerate(lines.norm):
        if "Mem" in text:
            shot = _top(lines, i, text)
            if shot:
                snapshots.append(shot)
        if _FREE_HEADER.match(text):
            shot = _free(lines, i)
            if shot:
                snapshots.append(shot)
        if text.lstrip().startswith("MemTotal:"):
            shot = _meminfo(lines, i)
            if shot:
                snapshots.append(shot)
    out = []
    if snapshots:
        lowest = min(snapshots, key=lambda s: s["available_bytes"] / s["total_bytes"])
        frag = Fragment(lowest["tool"], lowest["line"], lowest["line"] + 1)
        frag.add("system.memory", lowest)
        out.append(frag)
    builds = _build_commands(lines)
    if builds:
        frag = Fragment("prose", builds[0]["line"], builds[-1]["line"])
        frag.add("report.ext_build", builds)
        out.append(frag)
    return out


def _gib(value: int) -> str:
    return f"{value / 1024**3:.1f} GiB"


def _exhausted(memory: dict[str, Any]) -> bool:
    total, available = memory.get("total_bytes"), memory.get("available_bytes")
    if not isinstance(total, int) or not isinstance(available, int) or total <= 0:
        return False
    if available > EXHAUSTED_SHARE * total:
        return False
    swap_total, swap_free = memory.get("swap_total_bytes"), memory.get("swap_free_bytes")
    if swap_total is None:
        return False  # the snapshot does not say whether swap was there to take the overflow
    return not swap_total or (isinstance(swap_free, int) and swap_free <= EXHAUSTED_SHARE * swap_total)


@rule("ext-jobs-exceed-memory", needs=("system.memory", "report.ext_build"))
def memory_exhausted_during_build(facts: Facts, kb: KB) -> Hit | None:
    """A memory snapshot (top, free, /proc/meminfo) with almost nothing available and no free
    swap, in a report that shows an extension being compiled (MAX_JOBS, --no-build-isolation,
    setup.py install, pip install of a project the KB knows) (see ext-jobs-exceed-memory)."""
    memory = facts["system.memory"]
    builds = [b for b in facts["report.ext_build"] or [] if isinstance(b, dict)]
    if not isinstance(memory, dict) or not _exhausted(memory):
        return None
    known = {p.name for p in kb.extensions.projects}
    compiling = [b for b in builds if b.get("compiles") or "max_jobs" in b
                 or any(p.replace("_", "-") in known for p in b.get("packages") or [])]
    if not compiling:
        return None
    named = next((p.replace("_", "-") for b in compiling for p in b.get("packages") or [] if p.replace("_", "-") in known), None)
    row = next((p for p in kb.extensions.projects if p.name == named), None) if named else None
    jobs = sorted({b["max_jobs"] for b in compiling if "max_jobs" in b})
    swap = "no swap" if not memory.get("swap_total_bytes") else f"swap {_gib(memory['swap_free_bytes'])} free of {_gib(memory['swap_total_bytes'])}"
    per_job = f"; {row.name} takes ~{row.gib_per_job:g} GiB per compile job (doctor/kb/extensions.yaml)" if row is not None and row.gib_per_job else ""
    asked = f" (MAX_JOBS {', '.join(str(j) for j in jobs)} in the report)" if jobs else " (MAX_JOBS unset: ninja runs the CPU count + 2 jobs)"
    return Hit(
        f"memory ran out while the extension compiled{asked}: {_gib(memory['available_bytes'])} available of {_gib(memory['total_bytes'])}, {swap} "
        f"(report line {memory.get('line')}: {memory.get('tool')}){per_job}; the OOM killer ends a compile job when the jobs outgrow memory",
        evidence={"system.memory": memory, "report.ext_build": compiling},
        fix=FixRef(commands=("MAX_JOBS=4 pip install --no-build-isolation PACKAGE   # fewer parallel nvcc jobs; lower still if it is killed again",
                             "free -g; nproc   # memory and cores: MAX_JOBS <= available GiB / GiB per job"),
                   # no count is promised: the KB's GiB per job is a peak measured on one release and arch list
                   note="set MAX_JOBS so that the jobs fit in memory (the jobs' peaks add up), or add swap, or install a prebuilt wheel"),
    )


RULES: tuple[Rule, ...] = (memory_exhausted_during_build,)
