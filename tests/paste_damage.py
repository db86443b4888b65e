"""Paste damage: the forms a real error line takes on its way into a bug report (issue 26).

Each function takes an example's text (its first line is the one the row reads) and returns
the damaged text, or None where the damage does not apply. `matrix()` runs every row of
doctor/kb/errors.yaml on every damaged form of each of its verbatim examples and says, per
(row, example, damage), whether the row still reads it with the values the text still holds.
Run as a script it prints the counts and the failing pairs:

    .venv/bin/python tests/paste_damage.py
"""

from __future__ import annotations

import re
try:
    from re import _parser as sre_parse  # the stdlib parser (sre_parse is deprecated from 3.11)
except ImportError:  # Python 3.10
    import sre_parse  # type: ignore[no-redef]
from typing import Any, Callable

Damage = Callable[[str, Any], "str | None"]


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _join(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _prefix(text: str, sig: Any, head: str) -> str | None:
    # On the first line only: a logger prefixes a record, not the lines a message wraps onto.
    # A row anchored at the line's start reads a file's line or a listing's row as written
    # (compose YAML, `ls -l`): no logger writes those.
    if sig.pattern.pattern.startswith("^"):
        return None
    lines = _lines(text)
    return _join([head + lines[0], *lines[1:]])


def stamp(text: str, sig: Any) -> str | None:
    """A logger's date and time in front of the line (Python logging's default form)."""
    return _prefix(text, sig, "2024-09-03 12:34:56,789 - ")


def stamp_bracket(text: str, sig: Any) -> str | None:
    """A bracketed date and time with a level, as many services log: "[2024-09-03 12:34:56] ERROR "."""
    return _prefix(text, sig, "[2024-09-03 12:34:56] ERROR ")


def host_pid(text: str, sig: Any) -> str | None:
    """NCCL's and MPI's "host:pid:tid [rank]" prefix in front of the line."""
    return _prefix(text, sig, "gpu-node-07:81234:81234 [3] ")


def quoted(text: str, sig: Any) -> str:
    """A markdown quote of the reply: "> " on every line."""
    return _join([f"> {line}" for line in _lines(text)])


def table_cell(text: str, sig: Any) -> str:
    """The line pasted into a markdown table's cell: "| error | <line> |" (where the message
    is on that line: one that goes on below is no table's cell)."""
    entry = read(sig, text)
    if entry is None or entry["end"] > 1 and not sig.hook:
        return None
    lines = _lines(text)
    return _join([f"| error | {lines[0]} |", *lines[1:]])


def crlf(text: str, sig: Any) -> str:
    """A Windows paste: CRLF line ends."""
    return "\r\n".join(_lines(text)) + "\r\n"


_WORD = re.compile(r"[A-Za-z][\w.-]{2,}")


def ansi(text: str, sig: Any) -> str:
    """A terminal's colours around each of the first line's first four words."""
    lines = _lines(text)
    count = [0]

    def paint(m: re.Match[str]) -> str:
        count[0] += 1
        return f"\x1b[1;31m{m.group(0)}\x1b[0m" if count[0] <= 4 else m.group(0)

    return _join([_WORD.sub(paint, lines[0]), *lines[1:]])


def curly(text: str, sig: Any) -> str | None:
    """A word processor's or a blog's typography: ‘…’, “…”, don’t (also for a glibc `X')."""
    if not re.search("['\"]", text):
        return None
    out = re.sub(r"`([^`'\s]{1,80})'", "\u2018\\1\u2019", text)  # glibc's `X' in a UTF-8 locale: ‘X’
    out = re.sub(r"(?<![\w.])'", "\u2018", out)   # an opening quote
    out = out.replace("'", "\u2019")  # closing quotes and apostrophes (markdown's `code` stays)
    out = re.sub(r'(?<![\w.)\]])"', "\u201c", out)
    return out.replace('"', "\u201d")


def fullwidth(text: str, sig: Any) -> str | None:
    """A Chinese input method's punctuation: "：" "（" "）" "，"."""
    table = str.maketrans({":": "\uff1a", "(": "\uff08", ")": "\uff09", ",": "\uff0c"})
    out = text.translate(table)
    return out if out != text else None


def _wrap_at(text: str, soft: bool) -> str | None:
    lines = _lines(text)
    first = lines[0]
    if len(first) <= 80:
        return None
    if soft:  # a browser or an e-mail client: at the last blank before the 80th column
        cut = first.rfind(" ", 0, 80)
        if cut <= 0:
            return None
        head, tail = first[:cut], first[cut + 1:]
    else:  # a terminal: at the 80th column, mid-word
        head, tail = first[:80], first[80:]
    return _join([head, tail, *lines[1:]])


def wrap_soft(text: str, sig: Any) -> str | None:
    return _wrap_at(text, soft=True)


def wrap_hard(text: str, sig: Any) -> str | None:
    return _wrap_at(text, soft=False)


def distinctive_phrase(pattern: re.Pattern[str]) -> str | None:
    """The longest run of literal characters at the pattern's top level (at least 12)."""
    best, run = "", []
    for op, arg in sre_parse.parse(pattern.pattern, pattern.flags):
        if op is sre_parse.LITERAL:
            run.append(chr(arg))
            continue
        best = max(best, "".join(run), key=len)
        run = []
    best = max(best, "".join(run), key=len).strip()
    return best if len(best) >= 12 else None


def cut(text: str, sig: Any) -> str | None:
    """The first line cut right after the row's distinctive phrase (a log copied to mid-line,
    a search excerpt): what follows the phrase on that line is lost."""
    phrase = distinctive_phrase(sig.pattern)
    lines = _lines(text)
    if phrase is None:
        return None
    at = lines[0].lower().find(phrase.lower())
    if at < 0:
        return None
    end = at + len(phrase)
    if end >= len(lines[0].rstrip()):
        return None  # nothing after the phrase: no cut to make
    return _join([lines[0][:end], *lines[1:]])


def cut_mid_word(text: str, sig: Any) -> str | None:
    """The first line cut two letters into the word after the row's distinctive phrase, as a
    log copied to mid-line is ("... is too ol")."""
    damaged = cut(text, sig)
    if damaged is None:
        return None
    first, rest = _lines(text)[0], _lines(damaged)
    end = len(rest[0])
    word = re.match(r"\s?([A-Za-z]{3,})", first[end:])
    if word is None:
        return None
    return _join([first[: end + word.start(1) + 2], *rest[1:]])


def cut_tail(text: str, sig: Any) -> str | None:
    """The first line cut two characters after the message's last value (and after its
    distinctive phrase): the values are whole, the rest of the message is lost."""
    phrase = distinctive_phrase(sig.pattern)
    lines = _lines(text)
    match = sig.pattern.search(lines[0])
    if phrase is None or match is None:
        return None
    at = lines[0].lower().find(phrase.lower())
    ends = [match.end(k) for k, v in match.groupdict().items() if v is not None]
    cut_at = max([at + len(phrase), *ends]) + 2
    if at < 0 or cut_at >= match.end() or not lines[0][cut_at - 1].strip():
        return None  # nothing of the message after the values, or the cut on a blank (a line loses those)
    return _join([lines[0][:cut_at], *lines[1:]])


def cut_ellipsis(text: str, sig: Any) -> str | None:
    """The same cut, marked "..." as a search excerpt or a shortened title marks it."""
    damaged = cut(text, sig)
    if damaged is None:
        return None
    lines = _lines(damaged)
    return _join([lines[0] + "...", *lines[1:]])


DAMAGES: dict[str, Damage] = {
    "stamp": stamp,
    "stamp-bracket": stamp_bracket,
    "host-pid": host_pid,
    "quote": quoted,
    "table": table_cell,
    "crlf": crlf,
    "ansi": ansi,
    "curly": curly,
    "fullwidth": fullwidth,
    "wrap-soft": wrap_soft,
    "wrap-hard": wrap_hard,
    "cut": cut,
    "cut-mid-word": cut_mid_word,
    "cut-ellipsis": cut_ellipsis,
    "cut-tail": cut_tail,
}
# Damages that may take captured values away: a value then is absent, never different.
LOSSY = {"cut", "cut-mid-word", "cut-ellipsis", "cut-tail"}


def read(sig: Any, text: str) -> dict[str, Any] | None:
    """The entry `sig`'s row writes for `text`, or None."""
    from fwdoctor.triage.errors import find
    from fwdoctor.triage.text import Lines

    for frag in find(Lines.of(text)):
        for fact in frag.facts:
            if fact.key == "report.errors":
                for entry in fact.value:
                    if entry["kind"] == sig.id:
                        return entry
    return None


def verdict(sig: Any, example: Any, damage: str, text: str) -> str | None:
    """None when the row reads the damaged text right, else why not."""
    entry = read(sig, text)
    if entry is None:
        return "no match"
    for key, want in example.expect.items():
        got = entry.get(key)
        if got == want or (damage in LOSSY and got is None):
            continue
        return f"{key}={got!r}, not {want!r}"
    return None


def matrix() -> list[tuple[str, int, str, str | None]]:
    """(row id, example index, damage, failure or None) for every applicable pair."""
    from fwdoctor.triage.errors import signatures

    out = []
    for sig in signatures().signatures:
        for j, example in enumerate(sig.examples):
            if read(sig, example.text) is None:
                continue  # the row does not read its clean example alone (tested elsewhere)
            for name, damage in DAMAGES.items():
                text = damage(example.text, sig)
                if text is not None:
                    out.append((sig.id, j, name, verdict(sig, example, name, text)))
    return out


if __name__ == "__main__":
    import collections
    import sys

    rows = matrix()
    total: collections.Counter[str] = collections.Counter()
    ok: collections.Counter[str] = collections.Counter()
    for _, _, name, why in rows:
        total[name] += 1
        ok[name] += why is None
    for name in DAMAGES:
        print(f"{name:13} {ok[name]:4}/{total[name]:4}")
    print(f"{'all':13} {sum(ok.values()):4}/{sum(total.values()):4}")
    if "-v" in sys.argv:
        for sig_id, j, name, why in rows:
            if why is not None:
                print(f"  {name:13} {sig_id}[{j}]: {why}")
