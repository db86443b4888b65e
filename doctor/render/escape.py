"""One way to write a value for each place fwdoctor's output goes, beside fwdoctor.quoting
(shell, scripts, Dockerfiles, locks).

Facts and Findings keep values raw (a GPU name, a folder name, a line of a bug report, as
read); a renderer escapes for its target at the edge, so no caller has to remember to:

- `terminal(text)`: text printed to a terminal (check, triage, fleet report, smoke, notes).
  Control characters (C0 including newline, CR and ESC, DEL, C1) and bytes that are not
  UTF-8 (surrogateescape's lone surrogates) are shown visibly as `\\n`, `\\r`, `\\t`,
  `\\x1b`, `\\x9b` ...: an OSC 52 clipboard write or a window-title change in a GPU name
  prints as text, and a newline in a path cannot start a line of its own (a forged
  "No problems found."). `terminal_lines(lines)` escapes each line and joins them.
- `md_code(text)` / `md_cell(text)` / `md_block(lines)`: report text in GitHub markdown
  (triage's bot comment, check and fleet markdown) goes only inside code, where GitHub
  renders no link, autolink, image, HTML, @mention or `owner/repo#1` cross-reference. A
  code span is delimited by a backtick run longer than any inside it (CommonMark 6.1); in
  a table cell `|` is written `\\|` (GFM tables split cells before inline parsing, even
  inside code spans); a fenced block's fence is longer than any backtick run in its lines.
  Control characters are shown as `terminal` shows them (a newline would end a table row).
- `yaml_dumper()`: a PyYAML SafeDumper whose strings are quoted whenever a YAML 1.1 reader
  (or a YAML 1.2 one) could read the plain scalar as something other than that string:
  `y`, `n`, `on`, `null`, `~`, `1e3`, `0o17`, `0x1F`, `1_000`, `190:20:30`, `.inf` ...
  PyYAML alone quotes only what its own resolver types (not `y`, `1e3`, `0o17`).
- Prometheus label values: fwdoctor.render.prometheus.escape_label_value, and samples are merged
  on the escaped labels (two raw values that escape alike are one series, not two).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

__all__ = ["terminal", "terminal_lines", "md_code", "md_cell", "md_block", "yaml_dumper", "yaml_dump"]

# C0 (newline included), DEL, C1, and lone surrogates (bytes that were not UTF-8).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte it stands for
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: Any) -> str:
    """`text` safe to print on a terminal: one line, no control character, valid UTF-8."""
    text = str(text)
    return _CONTROL.sub(_visible, text) if _CONTROL.search(text) else text


def terminal_lines(lines: Iterable[Any]) -> str:
    """Each line escaped by `terminal`, joined by newlines (no trailing newline added)."""
    return "\n".join(terminal(line) for line in lines)


# ----------------------------------------------------------------------------- markdown
_BACKTICKS = re.compile(r"`+")


def _longest_run(text: str) -> int:
    return max((len(m.group()) for m in _BACKTICKS.finditer(text)), default=0)


def md_code(text: Any) -> str:
    """`text` as one inline code span (see the module docstring). Empty text is shown as
    a code span holding one space, so the surrounding markdown never changes shape."""
    value = terminal(text) or " "
    fence = "`" * (_longest_run(value) + 1)
    # CommonMark strips one space from each side when both are spaces, and a backtick at
    # either edge would join the fence: pad with a space on each side in those cases.
    if value[0] == "`" or value[-1] == "`" or (value[0] == " " and value[-1] == " " and value.strip(" ")):
        value = f" {value} "
    return f"{fence}{value}{fence}"


def md_cell(text: Any) -> str:
    """`text` as a code span inside a GFM table cell: every `|` written `\\|`, which the
    table parser turns back into `|` before the code span is read."""
    return md_code(text).replace("|", "\\|")


def md_block(lines: Iterable[Any], info: str = "text") -> list[str]:
    """Lines of report text as one fenced code block (a list of markdown lines)."""
    body = [terminal(line) for line in lines]
    fence = "`" * max(3, max((_longest_run(line) for line in body), default=0) + 1)
    return [f"{fence}{info}", *body, fence]


# ----------------------------------------------------------------------------- YAML
# Plain scalars a YAML 1.1 reader (https://yaml.org/type/bool.html, int.html, float.html,
# null.html, timestamp.html, merge.html, value.html) or a YAML 1.2 core-schema reader types.
# Quoting more than needed is harmless (a quoted scalar is always a string); quoting less
# turns `y` into true and `1e3` into 1000.0 in Go's yaml.v2 (kubectl) or PyYAML.
_YAML_WORDS = frozenset("""y yes n no true false on off null ~ = <<""".split())
_YAML_NUMBERISH = re.compile(r"[-+]?(?:\.?[0-9]|\.(?:inf|nan)\Z)[0-9A-Za-z_.:+-]*\Z", re.IGNORECASE)


def yaml_typed(value: str) -> bool:
    """Could a YAML 1.1 or 1.2 reader read `value`, written plain, as anything but it?"""
    return not value or value.lower() in _YAML_WORDS or bool(_YAML_NUMBERISH.match(value)) \
        or value.lower() in (".inf", "-.inf", "+.inf", ".nan")


_DUMPER: Any = None


def yaml_dumper() -> Any:
    """A yaml.SafeDumper subclass that quotes every typable string. PyYAML is imported
    here, not with the module: a plain `check` escapes terminal text and never writes
    YAML, and importing PyYAML cost it ~15 ms (issue 30, `python -X importtime`)."""
    global _DUMPER
    if _DUMPER is None:
        import yaml

        class _Dumper(yaml.SafeDumper):
            pass

        def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
            if yaml_typed(value):
                return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
            return dumper.represent_str(value)

        _Dumper.add_representer(str, _represent_str)
        _DUMPER = _Dumper
    return _DUMPER


def yaml_dump(data: Any) -> str:
    """yaml.safe_dump with every typable string quoted (block style, keys in order)."""
    import yaml

    return yaml.dump(data, Dumper=yaml_dumper(), sort_keys=False, default_flow_style=False, allow_unicode=False)
