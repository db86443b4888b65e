"""Every error-text row of doctor/kb/errors.yaml, on every verbatim example it carries, after
the damage a paste does to a line (tests/paste_damage.py): a logger's or NCCL's prefix, a
markdown quote or table cell, CRLF, terminal colours, typographic quotes, full-width
punctuation, a line wrapped by a terminal or a mail client (issue 26). The row must still read
the message, with the values the text still holds, and never with a value it does not."""

from __future__ import annotations

import pytest

import paste_damage as pd
from fwdoctor.triage.text import Lines, normalize

# Damages that keep every character of the message: every row reads every example exactly.
LOSSLESS = ("stamp", "stamp-bracket", "host-pid", "quote", "table", "crlf", "ansi", "curly", "fullwidth")
WRAPS = ("wrap-soft", "wrap-hard")
# (damage, row, example): messages a wrap still hides from their row. NCCL's "Message truncated"
# has its numbers on both sides of column 80 and a pattern that also reads the first line alone.
KNOWN_WRAP_MISSES = {("wrap-hard", "nccl-message-truncated", 0)}
# (damage, row, example): a free-text value at the end of a line a mail client broke before the
# 80th column ("Connection" / "refused"): nothing in the line says it goes on.
KNOWN_SHORT_VALUES = {("wrap-soft", "nccl-ibv-modify-qp-failed", 0), ("wrap-soft", "nccl-socket-connect-failed", 4),
                      ("wrap-soft", "nccl-call-to-connect-failed", 1), ("wrap-soft", "container-run-without-gpus", 0),
                      ("wrap-hard", "container-run-without-gpus", 0)}


@pytest.fixture(scope="module")
def matrix():
    return pd.matrix()


@pytest.mark.parametrize("damage", LOSSLESS)
def test_every_row_reads_each_example_through_paste_damage_that_keeps_the_message(matrix, damage):
    pairs = [(sig_id, j, why) for sig_id, j, name, why in matrix if name == damage]
    assert len(pairs) > 100
    assert [p for p in pairs if p[2] is not None] == []


@pytest.mark.parametrize("damage", WRAPS)
def test_a_message_wrapped_onto_the_next_line_is_read_and_no_value_is_made_up(matrix, damage):
    pairs = [(sig_id, j, why) for sig_id, j, name, why in matrix if name == damage]
    missed = {(damage, sig_id, j) for sig_id, j, why in pairs if why == "no match"}
    assert missed <= KNOWN_WRAP_MISSES, sorted(missed - KNOWN_WRAP_MISSES)
    # a value either read whole or left out ("=None"): never a different one
    wrong = {(damage, sig_id, j) for sig_id, j, why in pairs if why not in (None, "no match") and "=None," not in why}
    assert wrong <= KNOWN_SHORT_VALUES, sorted(wrong - KNOWN_SHORT_VALUES)
    exact = sum(1 for _, _, why in pairs if why is None)
    assert exact >= 0.9 * len(pairs), (exact, len(pairs))


def _entry(text: str, kind: str) -> dict:
    (entry,) = [e for e in _all(text) if e["kind"] == kind]
    return entry


def test_typographic_quotes_read_as_the_ascii_ones_programs_print():
    assert normalize("Can\u2019t find libdevice directory \u201c${CUDA_DIR}\u201d \u2018x\u2019") == "Can't find libdevice directory \"${CUDA_DIR}\" 'x'"
    # glibc quotes the version ‘GLIBCXX_3.4.20’ in a UTF-8 locale, `GLIBCXX_3.4.20' in the C
    # locale (dmtcp/dmtcp#790, the row's own example)
    (example, *_) = _row("libstdcxx-version-not-found").examples
    text = example.text.replace("`", "\u2018").replace("'", "\u2019")
    assert "\u2018GLIBCXX_3.4.20\u2019" in text
    assert _entry(text, "libstdcxx-version-not-found")["needed"] == "GLIBCXX_3.4.20"


def test_a_gpu_name_after_a_log_prefix_or_in_a_table_cell_is_the_name_alone():
    # lmoe/wyoming-xtts#1, with what a logger or a markdown table puts before the message
    message = "NVIDIA GeForce RTX 5060 Ti with CUDA capability sm_120 is not compatible with the current PyTorch installation."
    for text in (f"[2024-09-03 12:34:56] ERROR {message}", f"2024-09-03 12:34:56,789 - {message}",
                 f"gpu-node-07:81234:81234 [3] {message}", f"| error | {message} |"):
        assert _entry(text + "\n", "sm-incompatible")["gpu"] == "NVIDIA GeForce RTX 5060 Ti", text


def test_a_value_at_the_end_of_a_table_cell_ends_at_the_cell():
    # tensorflow/tensorflow#26289's dlopen line in a markdown table
    text = "| 1.14 | Could not dlopen library 'libcurand.so.10.0'; dlerror: libcurand.so.10.0 | CUDA 10.1 |\n"
    assert _entry(text, "dlopen-failed")["dlerror"] == "libcurand.so.10.0"


def test_a_line_broken_at_80_columns_mid_number_is_joined_without_a_blank():
    # fireice-uk/xmr-stak#973: MSBuild's line, broken by an 80-column terminal inside "2015"
    message = "-- unsupported Microsoft Visual Studio version! Only the versions 2012, 2013, 2015 and 2017 are supported!"
    line = " " * (80 - message.index("2015") - 3) + message  # indented by the build log, "201|5" at column 80
    assert _entry(f"{line[:80]}\n{line[80:]}\n", "unsupported-msvc")["msvc_supported"] == "2012, 2013, 2015 and 2017"


def test_a_line_of_another_width_joined_two_ways_leaves_out_a_value_the_two_read_differently():
    line = "host_config.h(135): fatal error C1189: #error:  -- unsupported Microsoft Visual Studio version! Only the versions 2012, 2013, 2015 and 2017 are supported!"
    at = line.index("2015") + 3
    entry = _entry(f"{line[:at]}\n{line[at:]}\n", "unsupported-msvc")  # 2015 or 201 5: the text does not say
    assert entry.get("msvc_supported") is None


def test_a_library_path_starting_a_line_after_an_80_column_one_is_not_cut_short():
    # the row's own example of torchvision's undefined symbol, broken at column 80 inside the path
    (line,) = [ex.text.splitlines()[0] for ex in _row("torch-extension-undefined-symbol").examples if "torchvision/_C" in ex.text]
    path = line[line.index("/usr/"):line.index(": undefined symbol")]
    assert line.index("/usr/") < 80 < line.index(": undefined symbol")
    libraries = {e.get("library") for e in _all(f"{line[:80]}\n{line[80:]}\n") if e["kind"] == "torch-extension-undefined-symbol"}
    assert libraries and libraries <= {path, None}, libraries


def _row(kind: str):
    from fwdoctor.triage.errors import signatures

    return signatures().by_id(kind)


def _all(text: str) -> list[dict]:
    from fwdoctor.triage.errors import find

    return [e for frag in find(Lines.of(text)) for fact in frag.facts if fact.key == "report.errors" for e in fact.value]
