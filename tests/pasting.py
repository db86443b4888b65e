"""What pasting does to a report's text, for tests of the readers: each function gives the
text as it arrives in an issue, a chat or a CI log. `forms` is the usual set; tests add what
their text needs beside it (a terminal's wrap at a given column, another log prefix)."""

from __future__ import annotations


def quoted(text: str) -> str:
    """A markdown quote (GitHub's "Quote reply")."""
    return "".join(f"> {line}\n" for line in text.splitlines())


def fenced(text: str) -> str:
    return f"```\n{text}```\n"


def crlf(text: str) -> str:
    """Windows line ends."""
    return text.replace("\n", "\r\n")


def coloured(text: str) -> str:
    """A terminal's ANSI colour around every line."""
    return "".join(f"\x1b[31m{line}\x1b[0m\n" for line in text.splitlines())


def stamped(text: str) -> str:
    """A CI log's timestamps (GitHub Actions, Azure Pipelines)."""
    return "".join(f"2024-09-03T12:34:56.1234567Z {line}\n" for line in text.splitlines())


def forms(text: str) -> list[str]:
    """The text quoted, fenced, with CRLF, coloured and timestamped (not as is)."""
    return [quoted(text), fenced(text), crlf(text), coloured(text), stamped(text)]


def as_pasted(*texts: str) -> list[str]:
    """Each text as is and in every one of `forms`."""
    return [form for text in texts for form in (text, *forms(text))]
