"""A Plan is what a recipe proposes: data, not actions.

Steps are argv lists (never shell strings), environment changes are a mapping, files to
write are (path, content) pairs, and `verify` says how to prove the fix worked. A plan is
pure and printable: `to_shell()` renders it as a commented POSIX shell script in which
every value is quoted, so a user can read it, keep it, or run it by hand. Only
recipes/apply.py executes a plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from fwdoctor.quoting import QuotingError, comment, comment_lines, env_name, script_line, script_word


@dataclass(frozen=True)
class Step:
    """One command. `why` is a comment for humans; `undo` says how to revert it."""

    argv: tuple[str, ...]
    why: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout_s: float = 3600.0
    undo: str = ""
    # Skip the step when this argv exits 0 (makes a second apply a no-op).
    skip_if: tuple[str, ...] | None = None
    needs_root: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.argv, str) or not all(isinstance(a, str) for a in self.argv):
            raise TypeError(f"Step.argv must be a sequence of str, got {self.argv!r}")
        object.__setattr__(self, "argv", tuple(self.argv))
        if self.skip_if is not None:
            object.__setattr__(self, "skip_if", tuple(self.skip_if))


@dataclass(frozen=True)
class FileWrite:
    """A file the plan writes (atomically, via a temporary file and rename)."""

    path: str
    content: str
    mode: int = 0o644
    why: str = ""


@dataclass(frozen=True)
class Plan:
    recipe: str
    title: str
    steps: tuple[Step, ...] = ()
    files: tuple[FileWrite, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    verify: tuple[Step, ...] = ()
    notes: tuple[str, ...] = ()
    # Finding ids this plan should clear; apply re-runs `check` and fails if any remain.
    clears: tuple[str, ...] = ()
    refused: str = ""  # non-empty: the recipe will not do this, and why
    # The interpreter whose environment the plan changes when it is not the inspected one
    # (a new venv beside an externally managed Python): the re-check after apply looks there.
    target_python: str = ""

    @property
    def is_empty(self) -> bool:
        return not (self.steps or self.files or self.env)

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "title": self.title,
            "steps": [_step_json(s) for s in self.steps],
            "files": [{"path": f.path, "mode": oct(f.mode), "why": f.why, "content": f.content} for f in self.files],
            "env": dict(self.env),
            "verify": [_step_json(s) for s in self.verify],
            "notes": list(self.notes),
            "clears": list(self.clears),
            "refused": self.refused,
            "target_python": self.target_python or None,
        }

    def to_shell(self) -> str:
        """A commented, fully quoted POSIX sh script equivalent to applying the plan.

        Every value goes through fwdoctor.quoting: words are quoted for sh, comments stay one
        line each (a newline in a folder name must not start a command); QuotingError for a
        value no script can hold (a NUL; a file body that is not UTF-8 text)."""
        q = script_word
        lines = ["#!/bin/sh", f"# fwdoctor plan: {comment(self.recipe)}: {comment(self.title)}", "set -eu", ""]
        if self.refused:
            lines += [f"# REFUSED: {comment(line)}" for line in self.refused.splitlines()] + ["exit 1"]
            return "\n".join(lines) + "\n"
        for note in self.notes:
            lines += comment_lines(note)
        if self.notes:
            lines.append("")
        for key, value in self.env.items():
            lines.append(f"export {env_name(key)}={q(value, f'the value of {key}')}")
        if self.env:
            lines.append("")
        for f in self.files:
            if f.why:
                lines += comment_lines(f.why)
            _text_body(f)
            marker = _heredoc_marker(f.content)
            lines.append(f"mkdir -p {q(_dirname(f.path))}")
            lines.append(f"cat > {q(f.path)} <<'{marker}'")
            lines.append(f.content.rstrip("\n"))
            lines.append(marker)
            lines.append(f"chmod {f.mode:o} {q(f.path)}")
            lines.append("")
        for step in self.steps:
            lines += _step_lines(step)
        if self.verify:
            lines.append("# verify")
            for step in self.verify:
                lines += _step_lines(step)
        return "\n".join(lines).rstrip("\n") + "\n"


def _text_body(f: FileWrite) -> None:
    """A heredoc body is written as it is: it must be text a UTF-8 script can hold."""
    if "\x00" in f.content or any(0xD800 <= ord(ch) <= 0xDFFF for ch in f.content):
        raise QuotingError(f"the content of {comment(f.path)} holds a NUL or bytes that are not UTF-8: no script can write it")


def _step_lines(step: Step) -> list[str]:
    q = script_word
    out = comment_lines(step.why) if step.why else []
    prefix = " ".join(f"{env_name(k)}={q(v, f'the value of {k}')}" for k, v in step.env.items())
    cmd = script_line(step.argv, "a command word")
    if prefix:
        cmd = f"env {prefix} {cmd}"
    if step.cwd:
        cmd = f"(cd {q(step.cwd)} && {cmd})"
    if step.skip_if:
        cmd = f"{script_line(step.skip_if, 'a command word')} >/dev/null 2>&1 || {cmd}"
    out.append(cmd)
    out.append("")
    return out


def _step_json(step: Step) -> dict[str, Any]:
    return {
        "argv": list(step.argv),
        "why": step.why,
        "env": dict(step.env),
        "cwd": step.cwd,
        "timeout_s": step.timeout_s,
        "undo": step.undo,
        "skip_if": list(step.skip_if) if step.skip_if else None,
        "needs_root": step.needs_root,
    }


def _heredoc_marker(content: str) -> str:
    marker = "FWDOCTOR_EOF"
    while marker in content:
        marker += "_"
    return marker


def _dirname(path: str) -> str:
    import posixpath

    return posixpath.dirname(path) or "."
