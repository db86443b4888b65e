"""One escaping layer per output target (fwdoctor.render.escape, issue 24 item 2), each checked by
the target's own reader on arbitrary text, as tests/test_quoting.py does for the shell:

- terminal: no raw control character or stray byte survives, one line, plain text unchanged;
- GitHub markdown: rendered by markdown-it-py (CommonMark + GFM tables + linkify), a value
  is exactly one code span / code block holding its text, with no link, image or HTML;
- YAML: PyYAML (a YAML 1.1 reader) reads back the same string, and no string is written as
  a plain scalar that YAML 1.1 or the 1.2 core schema would type;
- Prometheus: prometheus_client's parser reads distinct series, one per escaped label set.
"""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fwdoctor.render.escape import md_block, md_cell, md_code, terminal, terminal_lines, yaml_dump

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Pieces an attacker would use against each target, mixed with arbitrary text.
PIECES = ["\x1b]52;c;cm0gLXJmIC8K\x07", "\x1b[2J", "\x9b31m", "\x07", "\r", "\n", "\t", "\x7f", "\x00", "\udcff",
          "`", "``", "```", "\\", "|", "<img src=x>", "</details>", "<b>", "[a](https://evil.example)", "![i](x.png)",
          "https://evil.example", "www.evil.example", "@octocat", "owner/repo#1", "#12", "*", "_", "~", " ", "  ",
          "&amp;", "&#64;", "y", "on", "1e3", "0o17", "~", "null", ":", "- ", "# ", "\"", "'", "\u2028", "\x85", "é"]
hostile = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.text(max_size=40),
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=5)), max_size=8).map("".join),
)
no_surrogates = hostile.filter(lambda s: not re.search(r"[\ud800-\udfff]", s))
RAW = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


# ----------------------------------------------------------------------------- terminal
@SETTINGS
@given(hostile)
def test_terminal_text_has_no_raw_control_character_and_stays_one_line(value):
    shown = terminal(value)
    assert not RAW.search(shown), repr(shown)
    shown.encode("utf-8")  # printable on a UTF-8 terminal (no lone surrogate)
    if not RAW.search(value):
        assert shown == value  # text without control characters is shown as it is


def test_terminal_names_the_characters_it_escapes():
    assert terminal("a\x1b]0;t\x07\r\n\t\x7f\x9b\udcff") == "a\\x1b]0;t\\x07\\r\\n\\t\\x7f\\x9b\\xff"
    assert terminal_lines(["a\x1b", "b\nc"]) == "a\\x1b\nb\\nc"


# ----------------------------------------------------------------------------- markdown
def _gfm():
    from markdown_it import MarkdownIt

    return MarkdownIt("gfm-like")  # CommonMark + tables + strikethrough + linkify (linkify-it-py)


def _inline(tokens):
    return [child for token in tokens if token.type == "inline" for child in token.children or []]


def _no_markup(tokens) -> None:
    for token in tokens:
        assert token.type not in ("html_block", "html_inline", "image", "link_open"), token
        for child in token.children or []:
            assert child.type not in ("html_inline", "image", "link_open"), child


def _shown(value: str) -> str:
    return terminal(value) or " "


@SETTINGS
@given(hostile)
def test_a_markdown_code_span_is_exactly_the_value_and_nothing_else(value):
    for text in (f"x {md_code(value)} y", f"- **error** id: {md_code(value)} ({md_code(value)})"):
        tokens = _gfm().parse(text)
        _no_markup(tokens)
        codes = [c for c in _inline(tokens) if c.type == "code_inline"]
        assert [c.content for c in codes] == [_shown(value)] * len(codes) and codes, (text, tokens)
        for child in _inline(tokens):
            if child.type == "text":
                assert "@" not in child.content and "#" not in child.content, child.content


@SETTINGS
@given(hostile, hostile)
def test_a_markdown_table_cell_is_one_code_span_and_the_row_keeps_its_cells(a, b):
    text = f"| layer | value | other |\n|---|---|---|\n| driver | {md_cell(a)} | {md_cell(b)} |\n"
    tokens = _gfm().parse(text)
    _no_markup(tokens)
    cells = [t for t in tokens if t.type == "inline"]
    assert len(cells) == 6, text
    assert [c.type for c in cells[4].children] == ["code_inline"] and cells[4].children[0].content == _shown(a)
    assert [c.type for c in cells[5].children] == ["code_inline"] and cells[5].children[0].content == _shown(b)


@SETTINGS
@given(st.lists(hostile, max_size=5))
def test_a_markdown_code_block_holds_every_line_and_ends_where_it_should(lines):
    text = "\n".join(["<details><summary>evidence</summary>", "", *md_block(lines), "</details>", "", "after"]) + "\n"
    tokens = _gfm().parse(text)
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and fences[0].content == "".join(f"{terminal(line)}\n" for line in lines)
    html = [t.content.strip() for t in tokens if t.type == "html_block"]
    assert html == ["<details><summary>evidence</summary>", "</details>"]  # only ours, the report's stays in the block
    assert tokens[-2].type == "inline" and tokens[-2].content == "after"


# ----------------------------------------------------------------------------- YAML
# The YAML 1.1 types of a plain scalar (https://yaml.org/type/: bool, int, float, null), and
# the YAML 1.2 core schema's numbers: a reader of either turns these into non-strings.
YAML_TYPED = re.compile(r"""(?x)
    y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
  | ~|null|Null|NULL|
  | [-+]?0b[0-1_]+ | [-+]?0[0-7_]+ | [-+]?(0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+ | [-+]?[1-9][0-9_]*(:[0-5]?[0-9])+
  | [-+]?([0-9][0-9_]*)?\.[0-9.]*([eE][-+][0-9]+)? | [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*
  | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)
  | 0o[0-7]+ | [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
""")


def plain_scalars(text: str) -> list[str]:
    return [e.value for e in yaml.parse(text) if isinstance(e, yaml.ScalarEvent) and e.style is None]


@SETTINGS
@given(no_surrogates, st.lists(no_surrogates, max_size=3))
def test_yaml_reads_back_every_string_and_writes_none_plain_that_yaml_1_1_would_type(value, items):
    data = {"key": value, value or "k": items, "nested": {"labels": {"a": value}}}
    text = yaml_dump(data)
    assert yaml.safe_load(text) == data
    typed = [v for v in plain_scalars(text) if YAML_TYPED.fullmatch(v)]
    assert typed == [], (typed, text)


@pytest.mark.parametrize("value", ["y", "Y", "n", "N", "yes", "on", "Off", "null", "~", "", "1e3", "0o17", "0x1F", "017", "1_000",
                                   "190:20:30", "1.5", ".5", ".inf", "-.Inf", ".NaN", "+12", "2001-12-14", "=", "<<"])
def test_yaml_quotes_the_scalars_yaml_1_1_types(value):
    text = yaml_dump({"v": value})
    assert text != f"v: {value}\n" and yaml.safe_load(text) == {"v": value}


# ----------------------------------------------------------------------------- Prometheus
@SETTINGS
@given(st.lists(hostile, min_size=1, max_size=6))
def test_prometheus_series_are_distinct_after_escaping_and_parse(values):
    from prometheus_client.parser import text_string_to_metric_families

    from fwdoctor.render.prometheus import _Writer, escape_label_value

    out = _Writer()
    out.family("version_info", "test", (({"component": "x", "version": v}, 1) for v in values))
    text = "\n".join(out.lines) + "\n"
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", text)
    (family,) = text_string_to_metric_families(text)
    sets = [frozenset(s.labels.items()) for s in family.samples]
    assert len(sets) == len(set(sets)) == len({escape_label_value(v) for v in values})
    assert sum(s.value for s in family.samples) == len(values)  # merged, nothing lost
