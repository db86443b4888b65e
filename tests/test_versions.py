"""fwdoctor.versions: the version helpers every probe, rule and recipe reads facts with."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st
from packaging.version import Version

from fwdoctor import versions


def test_fact_values_parse_or_give_none():
    assert versions.parse_version("12.4.131") == Version("12.4.131")
    assert versions.parse_version(None) is None and versions.parse_version("garbage") is None
    assert versions.release("9.24.0.43") == (9, 24, 0, 43) and versions.release("nine") is None


def test_major_is_the_leading_number_of_any_version_like_text():
    assert [versions.major(v) for v in ("9.1.0", "2", "12.9", "2.21.5-1+cuda12.4")] == [9, 2, 12, 2]
    assert versions.major("libnccl") is None and versions.major(None) is None and versions.major(13) is None


def test_major_minor_pads_a_bare_major_unless_told_not_to():
    assert versions.major_minor("12.4.131") == "12.4" and versions.major_minor("3.11.7") == "3.11"
    assert versions.major_minor("13") == "13.0" and versions.major_minor("13", pad=False) is None
    assert versions.major_minor("garbage") is None


def test_two_versions_agree_to_three_parts_or_cannot_be_told():
    assert versions.same_release("9.24.0", "9.24.0.43") is True
    assert versions.same_release("9.24.0", "9.1.0") is False
    assert versions.same_release("9", "9.1.0") is None and versions.same_release(None, "9.1.0") is None
    assert versions.short("9.24.0.43") == "9.24.0" and versions.short("weird") == "weird" and versions.short(None) == "unknown"


def test_equal_compares_as_versions_else_as_text():
    assert versions.equal("580.95", "580.95.0") and not versions.equal("580.95.05", "580.95.06")
    assert versions.equal("abc", "abc") and not versions.equal("abc", "580")


def test_cuda_parts_reads_the_leading_numbers_and_names_garbage():
    assert versions.cuda_parts("12.4.131") == (12, 4, 131)
    assert versions.cuda_parts("13") == (13, None, None) and versions.cuda_parts("11.8.20220929") == (11, 8, 20220929)
    with pytest.raises(ValueError, match="not a CUDA version: 'x'"):
        versions.cuda_parts("x")


def test_debian_versions_give_their_upstream_part():
    assert versions.deb_upstream_version("8.9.7.29-1+cuda12.2") == "8.9.7.29"
    assert versions.deb_upstream_version("1:2.21.5-1") == "2.21.5" and versions.deb_upstream_version("~rc") is None


def test_best_match_prefers_the_same_minor_then_the_same_major():
    toolkits = [{"root": "/a", "version": "12.8"}, {"root": "/b", "version": "13.1.0"}, {"root": "/c", "version": "13.0.88"}]
    pick = lambda want: versions.best_match(want, toolkits, lambda tk: tk["version"])  # noqa: E731
    assert pick("13.0")["root"] == "/c" and pick("13.2")["root"] == "/b" and pick("12")["root"] == "/a"
    assert pick("11.8") is None and pick(None) is None and pick("cpu") is None


@given(st.text(max_size=30))
def test_no_helper_raises_on_garbage(text):
    versions.parse_version(text), versions.release(text), versions.major(text), versions.major_minor(text)
    versions.short(text), versions.same_release(text, text), versions.equal(text, "1"), versions.deb_upstream_version(text)
    try:
        versions.cuda_parts(text)
    except ValueError as exc:
        assert repr(text) in str(exc)
