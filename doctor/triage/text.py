"""The report's text as numbered lines a parser can read: one job, no judgement.

People paste environment dumps into issues through markdown, e-mail and chat, so a line
may carry a quote marker ("> "), a fence ("```shell"), a shell prompt ("(venv) user@box:~$ "),
full-width punctuation from a Chinese or Japanese input method ("：", "（"), a non-breaking
space, or a Windows line end. `Lines` keeps every line at its own number (1-based, as a
reader counts them) and offers a normalised copy; parsers never see a shifted number.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# The longest line a parser reads. A line longer than this is kept (quoted as written,
# counted at its number) but not matched: no environment dump holds one (the longest
# line of the 52 real reports in tests/data/triage is 509 characters, 8x under it),
# while a 65 KB line (GitHub's largest issue body) is only ever noise or an attack, and
# an error message inside one is not read. Every pattern is linear in its line
# (tests/test_hostile_round2_parsing.py); this bound also keeps each line's cost at a
# few dozen patterns over at most 4 KiB, whatever a future pattern does.
MAX_PARSED_LINE = 4096

_FENCE = re.compile(r"^\s*(```|~~~)")
_QUOTE = re.compile(r"^\s*(?:>(?!>)\s?)+")  # "> " quote markers, but not Python's ">>> "
# A terminal's colours in a log copied from a CI job or `script`: ECMA-48 control sequences
# (ESC [ parameters intermediates final, "\x1b[32m+ pytorch\x1b[0m" in mamba's plan).
_ANSI = re.compile(r"\x1b\[[0-?]{0,32}[ -/]{0,8}[@-~]")
# GitHub Actions' (and Azure Pipelines') raw log stamps every line "2024-09-03T12:34:56.1234567Z ";
# only that form (seven digits, Z): dmesg's --time-format iso stamp is the kernel log reader's.
_CI_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z ")
# A shell prompt in front of a command: "$ ", "# ", "(venv) $ ", "user@host:~/x$ ",
# "PS C:\\> ", "C:\\Users\\me> ", ">>> " (Python). Group 1 is the command.
_PROMPT = re.compile(
    r"^\s*(?:\([^)]{1,60}\)\s*)?"
    r"(?:(?:[\w.-]+@[\w.-]+(?::[^$#\s]*)?\s*[$#%])|(?:PS\s+)?[A-Za-z]:\\[^>]*>|[$#%]|>>>)\s+(.*)$"
)


# Typographic quotes ASCII programs never print: a blog, a word processor, GitHub's own
# rendering copied back, or a glibc in a UTF-8 locale ("version ‘GLIBCXX_3.4.30’ not found")
# turn "can't" into "can’t" and 'x' into ‘x’. NFKC keeps them; every reader expects ASCII.
_TYPOGRAPHIC = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                              "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"'})


def normalize(line: str) -> str:
    """NFKC (full-width "：（）１" -> ":()1", NBSP -> space), typographic quotes -> ASCII
    (’ -> ', “ -> "), tabs -> spaces, no terminal colours, no CI log stamp, no quote marker,
    no trailing blanks."""
    text = unicodedata.normalize("NFKC", line).translate(_TYPOGRAPHIC).replace("\t", "    ").replace("\r", "")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = _CI_STAMP.sub("", text, count=1)
    text = _QUOTE.sub("", text, count=1)
    return text.rstrip()


@dataclass(frozen=True)
class Lines:
    """`raw[i]` is line i+1 as written; `norm[i]` its normalised form ("" for a fence, and
    for a line longer than MAX_PARSED_LINE: no parser reads it)."""

    raw: tuple[str, ...]
    norm: tuple[str, ...]

    @classmethod
    def of(cls, text: str) -> "Lines":
        raw = tuple(text.splitlines())
        norm = tuple("" if len(line) > MAX_PARSED_LINE else _fenced(line) for line in raw)
        return cls(raw, norm)

    def __len__(self) -> int:
        return len(self.norm)

    def quote(self, start: int, end: int, limit: int = 12) -> list[str]:
        """Lines start..end (1-based, inclusive) as written, at most `limit` of them."""
        picked = [self.raw[i - 1].rstrip() for i in range(start, min(end, len(self.raw)) + 1)]
        return picked if len(picked) <= limit else [*picked[: limit - 1], f"... ({len(picked) - limit + 1} more lines)"]


def _fenced(line: str) -> str:
    """A line's normalised form; a fence's is "" unless text follows the fence on its line:
    a paste that runs the first line of an error into the fence ("```E   ImportError: ...",
    pytest's "E" column; issue 26) keeps that text. A fence's own info string ("```shell",
    "``` python") is one word and stays unread."""
    fence = _FENCE.match(line)
    if not fence:
        return normalize(line)
    rest = line[fence.end():].strip()
    return normalize(rest) if " " in rest else ""


def unquoted(line: str) -> str:
    """The line as written without its leading markdown quote markers ("> ", "> > ")."""
    return _QUOTE.sub("", line, count=1)


def command(line: str) -> str | None:
    """The command after a shell or Python prompt, or None when the line has no prompt."""
    match = _PROMPT.match(line)
    return match.group(1).strip() if match else None
