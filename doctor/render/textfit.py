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


def fit(line: str, width: int = WIDTH, hang: int | None = None, break_words: bool = True) -> list[str]:
    """`line` as lines of at most `width` characters. `hang`: the indent of continuation
    lines (default: the line's own indent plus four). `break_words=False` keeps a word longer
    than the room whole on a line of its own (a path someone will copy from the terminal)."""
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
                         break_long_words=break_words, break_on_hyphens=False,
                         drop_whitespace=True) or [line]


def fit_text(text: str, width: int = WIDTH, break_words: bool = True) -> str:
    """Every line of `text` through fit(); a final newline kept."""
    end = "\n" if text.endswith("\n") else ""
    lines = text[:-1].split("\n") if end else text.split("\n")
    return "\n".join(part for line in lines for part in fit(line, width, break_words=break_words)) + end


# In the rules' docstrings, sections are indented by four and code examples by eight.
CODE_INDENT = 8


def fit_paragraphs(text: str, width: int = WIDTH) -> str:
    """Documentation text (a docstring's sections) in `width` columns: a paragraph (lines
    of one indent, up to a blank line or an indent change) that has a line too long is
    re-filled as one paragraph, so the result reads as prose, not as a ragged fold of each
    line; a command line goes through fit() and stays runnable; the rest is untouched."""
    out: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph and any(len(line) > width for line in paragraph):
            indent = len(paragraph[0]) - len(paragraph[0].lstrip(" "))
            out.extend(textwrap.wrap(" ".join(line.strip() for line in paragraph), width=width,
                                     initial_indent=" " * indent, subsequent_indent=" " * indent,
                                     break_long_words=True, break_on_hyphens=False))
        else:
            out.extend(paragraph)
        paragraph.clear()

    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or COMMAND.match(line[indent:]):
            flush()
            out.extend(fit(line, width))
            continue
        if indent >= CODE_INDENT:  # a docstring's code block: a command, never re-filled
            flush()
            lines = _command(line[:indent], line[indent:], width, " " * (indent + 4)) if len(line) > width else [line]
            if len(lines) == 1 and len(line) > width and len(line.split()) > 1:
                lines = fit(line, width)  # not a line a shell could split (example output): as prose
            out.extend(lines)
            continue
        if paragraph and indent != len(paragraph[0]) - len(paragraph[0].lstrip(" ")):
            flush()
        paragraph.append(line)
    flush()
    return "\n".join(out)


HEREDOC = re.compile(r"<<-?\s*'?([A-Za-z_][A-Za-z0-9_]*)'?")


def fit_script(script: str, width: int = WIDTH) -> str:
    """A POSIX sh script (a plan that `fix --dry-run` prints) in `width` columns where the
    shell allows it, and still the same script: a long command continues with a
    backslash-newline at a space outside quotes, a long comment goes on as further
    comment lines. What a shell reads verbatim is left whole: heredoc bodies, and the lines
    of a quoted word that spans lines (a `python -c '...'` program)."""
    out: list[str] = []
    heredoc = ""  # the delimiter that ends the heredoc body we are in
    pending = ""  # the text of a command whose quote is still open
    for line in script.split("\n"):
        if heredoc:
            out.append(line)
            if line == heredoc:
                heredoc = ""
            continue
        if pending:
            pending += "\n" + line
            bare, still_open = _bare(pending)
            if still_open:
                out.append(line)
                continue
            pending = ""
            # The quoted word closes on this line: what follows it may be folded.
            tail = bare[len(bare) - len(line):]
            close = tail.index(True) if True in tail else len(line)
            words = _words(line[close:])
            if len(line) > width and words and not line[close:].startswith(" "):
                words = [line[:close] + words[0], *words[1:]]
            elif words:
                words = [line[:close], *words]
            out.extend(_continued("", "    ", words, width) if len(line) > width and len(words) > 1 else [line])
            continue
        if not line.lstrip(" ").startswith("#") and quote_open(line):
            # A quoted word goes on over the next lines: the words before it may fold, the
            # word itself is read verbatim from its quote on.
            words = _words(line)
            out.extend(_continued("", "    ", words, width) if len(line) > width and len(words) > 1 else [line])
            pending = line
            continue
        stripped = line.lstrip(" ")
        indent = line[: len(line) - len(stripped)]
        if len(line) <= width:
            out.append(line)
        elif stripped.startswith("#"):
            lead = indent + "#" + ("" if stripped.startswith("#!") else " ")
            out.extend(textwrap.wrap(stripped.lstrip("#").strip(), width=width, initial_indent=lead,
                                     subsequent_indent=lead, break_long_words=False, break_on_hyphens=False) or [line])
        else:
            code, comment = _comment(stripped)
            words = _words(code)
            out.extend(_continued(indent, indent + "    ", words, width) if len(words) > 1 and not comment else [line])
        bare, _ = _bare(line)
        marker = next((m for m in HEREDOC.finditer(line) if bare[m.start()]), None)
        if marker:
            heredoc = marker.group(1)
    return "\n".join(out)


def _bare(text: str) -> tuple[list[bool], bool]:
    """For each character of a shell line: is it bare (outside single/double quotes and not
    escaped by a backslash), where a word may end or a comment begin? And is a quote left
    open at the end? One scanner for every question this module asks of a command line."""
    bare: list[bool] = []
    quote = ""
    escaped = False
    for char in text:
        if escaped:
            bare.append(False)
            escaped = False
        elif quote:
            bare.append(False)
            if char == "\\" and quote != "'":
                escaped = True
            elif char == quote:
                quote = ""
        else:
            bare.append(True)
            if char == "\\":
                escaped = True
            elif char in "'\"":
                quote = char
    return bare, bool(quote)


def _words(command: str) -> list[str]:
    """Split at spaces outside single/double quotes and not escaped: where a shell line may
    continue with a backslash-newline."""
    bare, _ = _bare(command)
    words: list[str] = []
    current: list[str] = []
    for char, free in zip(command, bare):
        if char == " " and free:
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
    bare, _ = _bare(body)
    for index, char in enumerate(body):
        if char == "#" and bare[index] and index > 0 and body[index - 1] == " ":
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
    return _bare(text)[1]


def unwrap(text: str) -> str:
    """Text that fit() wrapped, one line per line again: a line indented by four spaces or
    more continues the one before (joined with one space). For readers of the text, such
    as tests; --json is the form for programs."""
    return re.sub(r"\n {4,}(?=\S)", " ", text)
