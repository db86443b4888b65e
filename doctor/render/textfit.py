"""Text reports fit a terminal of 80 columns (issue 29): long lines are wrapped, never cut,
so every value is still there (and whole in --json).

Prose wraps at spaces with a hanging indent (a long path or URL breaks where it must); a
command line ("$ ...") wraps only at spaces outside quotes, with a trailing backslash, so
it still runs when pasted; a table row hangs under its last column.
"""

from __future__ import annotations

import re
import textwrap

WIDTH = 80

# A line that is a command to paste: "$ cmd", or "install:     pip install ..." (a label,
# then pip): wrapped with backslashes, never as prose.
COMMAND = re.compile(r"^([a-z][a-z ]*:\s+)?(?=\$ |pip3? install |uv pip install |python3? -m pip )")


def fit(line: str, width: int = WIDTH, hang: int | None = None) -> list[str]:
    """`line` as lines of at most `width` characters. `hang`: the indent of continuation
    lines (default: the line's own indent plus four)."""
    if len(line) <= width:
        return [line]
    indent = len(line) - len(line.lstrip(" "))
    body = line[indent:]
    command = COMMAND.match(body)
    if command:
        label = command.group(1) or ""
        return _command(line[:indent] + label, body[len(label):], width, " " * (indent + len(label) + 4))
    lead = " " * (indent + 4 if hang is None else hang)
    if len(lead) > width - 24:  # too little room left beside the hang: under the indent instead
        lead = " " * (indent + 4)
    return textwrap.wrap(body, width=width, initial_indent=" " * indent, subsequent_indent=lead,
                         break_long_words=True, break_on_hyphens=False, drop_whitespace=True) or [line]


def fit_text(text: str, width: int = WIDTH) -> str:
    """Every line of `text` through fit(); a final newline kept."""
    end = "\n" if text.endswith("\n") else ""
    lines = text[:-1].split("\n") if end else text.split("\n")
    return "\n".join(part for line in lines for part in fit(line, width)) + end


def _words(command: str) -> list[str]:
    """Split at spaces outside single/double quotes and not escaped: where a shell line may
    continue with a backslash-newline."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    escaped = False
    for char in command:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\" and quote != "'":
            current.append(char)
            escaped = True
        elif quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif char in "'\"":
            current.append(char)
            quote = char
        elif char == " ":
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


def _command(lead: str, body: str, width: int, follow: str) -> list[str]:
    indent = " " * (len(follow) - 4)
    code, comment = _comment(body)
    words = _words(code)
    if quote_open(code) or len(words) < 2:
        return [lead + body]  # not a line we can split safely: whole, runnable
    lines = _continued(lead, follow, words, width)
    if comment:
        # A backslash never ends a comment line (it would continue the comment, not the
        # command): the comment goes after the last line, or below it as comment lines.
        if len(lines[-1]) + 3 + len(comment) <= width:
            lines[-1] += "   " + comment
        else:
            lines += textwrap.wrap(comment.lstrip("# "), width=width, initial_indent=indent + "    # ", subsequent_indent=indent + "    # ",
                                   break_long_words=True, break_on_hyphens=False)
    return lines


def _comment(body: str) -> tuple[str, str]:
    """(the command, its trailing "# comment" or ""): a # at a word's start, outside quotes."""
    quote = ""
    escaped = False
    for index, char in enumerate(body):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and index > 0 and body[index - 1] == " ":
            return body[:index].rstrip(), body[index:]
    return body, ""


def _continued(lead: str, follow: str, words: list[str], width: int) -> list[str]:
    """`words` packed into lines of at most `width` (a word longer than that stays whole),
    each but the last ending in a backslash; "$" keeps its first word beside it."""
    lines: list[str] = []
    current, placed = lead + words[0], words[0] != "$"
    for word in words[1:]:
        if not placed or len(current) + 1 + len(word) + 2 <= width:
            current += " " + word
            placed = True
        else:
            lines.append(current + " \\")
            current = follow + word
    lines.append(current)
    return lines


def quote_open(text: str) -> bool:
    """True when a quote is left open (a command we do not understand: left whole)."""
    quote = ""
    escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
    return bool(quote)


def unwrap(text: str) -> str:
    """Text that fit() wrapped, one line per line again: a line indented by four spaces or
    more continues the one before (joined with one space). For readers of the text, such
    as tests; --json is the form for programs."""
    return re.sub(r"\n {4,}(?=\S)", " ", text)
