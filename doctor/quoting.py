"""One way to write a value into a shell command, a shell script, a Dockerfile or a lock.

fwdoctor prints commands people paste into a root shell and writes scripts, Dockerfiles and
lockfiles from values it read (folder names under --root, facts files, stack files, options).
Every such value goes through one function here, per target:

- `shell_word(v)`: one word of a one-line command shown in a report or JSON (`$ export ...`).
  Plain text is single-quoted (shlex.quote). A word holding a newline, another control
  character or a byte that is not UTF-8 (a lone surrogate from surrogateescape) cannot be
  shown on one line inside '...', so it is written as $'...' with octal escapes (POSIX.1-2024
  "dollar-single-quotes"; bash, ksh, zsh): still one line, still one word, never expanded.
- `script_word(v)`: one word of a script fwdoctor writes (plan, job script, build script):
  POSIX sh, so a newline stays inside '...' (valid there) and a non-UTF-8 byte becomes
  "$(printf '\\NNN')" (printf's octal escape is POSIX; the byte is never a newline, so the
  command substitution loses nothing).
- `comment(text)`: text after `#` in a script or Dockerfile: one line, control characters
  and non-UTF-8 bytes shown escaped (a newline in a folder name must not end the comment).
- `dockerfile_value(v)` / `dockerfile_string(v)` / `dockerfile_json(items)`: a Dockerfile
  instruction ends at a newline, so newline, carriage return, NUL and non-UTF-8 are refused;
  a bare value also refuses whitespace, a string is double-quoted with \\, " and $ escaped,
  and exec forms are JSON arrays (json.dumps).
- `lock_line(v)`: a value in a requirements.lock line (refuses newline, CR, NUL, non-UTF-8).

A NUL is refused everywhere: no shell word, argv element, path or Dockerfile can hold one.
Refusals raise QuotingError (a ValueError) whose message names the input; CLI commands turn
it into exit 2.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Iterable

__all__ = ["QuotingError", "cmd_text", "cmd_word", "shell_word", "shell_line", "script_word", "script_line", "comment",
           "dockerfile_value", "dockerfile_string", "dockerfile_json", "lock_line", "env_name"]


class QuotingError(ValueError):
    """A value that cannot be written safely in the target language; says which input."""


# Control characters (C0, DEL, C1) and the lone surrogates surrogateescape makes of bytes that
# are not UTF-8: none can be shown on one line or written to a UTF-8 file as they are.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _byte(ch: str) -> int:
    """The byte a surrogateescape'd character stands for; the code point otherwise."""
    code = ord(ch)
    return code - 0xDC00 if 0xDC80 <= code <= 0xDCFF else code


def _refuse_nul(value: str, what: str) -> None:
    if not isinstance(value, str):
        raise QuotingError(f"{what}: expected text, got {type(value).__name__}")
    if "\x00" in value:
        raise QuotingError(f"{what} {_show(value)} holds a NUL character, which no command or file name can hold")


def _show(value: str) -> str:
    """The value as it appears in an error message: escaped, one line, at most 120 characters."""
    text = value.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace") if _SURROGATE.search(value) else value
    shown = repr(text)
    return shown if len(shown) <= 120 else shown[:117] + "..."


def shell_word(value: str, what: str = "value") -> str:
    """`value` as one word of a one-line shell command (see the module docstring)."""
    _refuse_nul(value, what)
    if not _UNSAFE.search(value):
        return shlex.quote(value)
    out = []
    for ch in value:
        code = _byte(ch)
        if ch in "\\'":
            out.append("\\" + ch)
        elif _UNSAFE.match(ch):
            if 0xD800 <= code <= 0xDFFF:  # a surrogate that is not an escaped byte
                raise QuotingError(f"{what} {_show(value)} holds a lone surrogate that is no byte")
            raw = bytes([code]) if 0xDC80 <= ord(ch) <= 0xDCFF else ch.encode("utf-8")
            out.append("".join(f"\\{b:03o}" for b in raw))
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


# cmd.exe has no escape that holds inside double quotes for '"' or '%' (nor '!' under delayed
# expansion), and '^ & | < >' end or redirect a command outside them: a Windows folder or file
# name is written only when it holds none of these, else refused (the caller then prints a
# fix without the value).
_CMD_SAFE = re.compile(r"[A-Za-z0-9 _.,:;\\/()+~#@'\[\]{}=$-]*\Z")


def cmd_text(value: str, what: str = "value") -> str:
    """`value` unchanged, to stand inside a cmd.exe double-quoted string (`set "NAME=value"`);
    QuotingError for a value that holds a character cmd would interpret (" % ! ^ & | < > `)
    or a control character."""
    _refuse_nul(value, what)
    if not _CMD_SAFE.match(value):
        raise QuotingError(f"{what} {_show(value)} holds a character cmd.exe would interpret")
    return value


# No blank and none of cmd's other separators (; , = and the parentheses of a block).
_CMD_BARE = re.compile(r"[A-Za-z0-9_.:\\/+~#@'\[\]{}$-]+\Z")


def cmd_word(value: str, what: str = "value") -> str:
    """`value` as one word of a cmd.exe line: as is when it holds no separator, else in double
    quotes; refused as cmd_text refuses."""
    cmd_text(value, what)
    return value if _CMD_BARE.match(value) else f'"{value}"'


def shell_line(words: Iterable[str], what: str = "value") -> str:
    return " ".join(shell_word(w, what) for w in words)


def script_word(value: str, what: str = "value") -> str:
    """`value` as one word of a POSIX sh script fwdoctor writes (see the module docstring)."""
    _refuse_nul(value, what)
    if not _SURROGATE.search(value):
        return shlex.quote(value)
    parts: list[str] = []
    for piece in re.split(r"([\ud800-\udfff])", value):
        if not piece:
            continue
        if _SURROGATE.fullmatch(piece):
            code = _byte(piece)
            if code > 0xFF:
                raise QuotingError(f"{what} {_show(value)} holds a lone surrogate that is no byte")
            parts.append(f"\"$(printf '\\{code:03o}')\"")
        else:
            parts.append(shlex.quote(piece))
    return "".join(parts)


def script_line(words: Iterable[str], what: str = "value") -> str:
    return " ".join(script_word(w, what) for w in words)


def comment(text: str) -> str:
    """`text` made safe after a `#`: one line, control characters and stray bytes escaped."""
    text = str(text)
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: f"\\x{_byte(m.group()):02x}" if _byte(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def comment_lines(text: str) -> list[str]:
    """`# `-prefixed lines for multi-line text (each line made safe by `comment`)."""
    return [f"# {comment(line)}".rstrip() for line in str(text).split("\n")]


def _refuse_line_breaks(value: str, what: str, target: str) -> None:
    _refuse_nul(value, what)
    bad = _UNSAFE.search(value)
    if bad:
        kind = "a non-UTF-8 byte" if _SURROGATE.match(bad.group()) else f"the control character {bad.group()!r}"
        raise QuotingError(f"{what} {_show(value)} holds {kind}, which {target} cannot hold")


def dockerfile_value(value: str, what: str = "value") -> str:
    """A bare Dockerfile value (an image reference, a path in a comment): one line, no space."""
    _refuse_line_breaks(value, what, "a Dockerfile line")
    if not value or any(ch.isspace() for ch in value):
        raise QuotingError(f"{what} {_show(value)} is empty or holds white space, which a Dockerfile value cannot")
    if "\\" in value:
        # Dockerfile's escape character: at a line's end it joins the next line into this
        # instruction; no image reference or build-context path needs one
        raise QuotingError(f"{what} {_show(value)} holds a backslash, Dockerfile's escape character")
    return value


def dockerfile_text(value: str, what: str = "value") -> str:
    """Free text inside a Dockerfile comment: one line (newline, CR, NUL refused)."""
    _refuse_line_breaks(value, what, "a Dockerfile line")
    return value


def dockerfile_string(value: str, what: str = "value") -> str:
    """A double-quoted Dockerfile string (LABEL/ENV values): \\, " and $ escaped."""
    _refuse_line_breaks(value, what, "a Dockerfile line")
    return '"' + re.sub(r'([\\"$])', r"\\\1", value) + '"'


def dockerfile_json(items: Iterable[str], what: str = "value") -> str:
    """A Dockerfile exec form / JSON-form COPY: a JSON array of strings on one line."""
    items = list(items)
    for item in items:
        _refuse_line_breaks(item, what, "a Dockerfile line")
    return json.dumps(items)


def lock_line(value: str, what: str = "value") -> str:
    """A value written into a line of a requirements lock (pip reads it line by line)."""
    _refuse_line_breaks(value, what, "a requirements.lock line")
    return value


def env_name(name: str, what: str = "environment variable name") -> str:
    """A variable name for `export NAME=...`: letters, digits, underscore, not a digit first."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise QuotingError(f"{what} {_show(str(name))} is not a shell variable name")
    return name
