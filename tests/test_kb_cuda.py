"""The CUDA knowledge base (doctor/kb/cuda.yaml): an audit of the bundled file, its
queries against the published tables (S-RN132 Table 3, S-COMPAT, S-LLVM), and clear KBErrors
for a malformed file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from fwdoctor.kb import KB, KB_DIR, KBError

RAW = yaml.safe_load((KB_DIR / "cuda.yaml").read_text(encoding="utf-8"))
ROW_SECTIONS = ("minor_compat", "toolkit_drivers", "architectures", "host_gcc", "runfiles")


@pytest.fixture(scope="module")
def cuda():
    return KB().cuda


# ----------------------------------------------------------------------------- audit
def test_the_bundled_file_loads_with_every_section_populated(cuda):
    assert len(cuda.minor_compat) == 3
    assert len(cuda.toolkit_drivers) >= 50
    assert len(cuda.architectures) >= 20
    assert len(cuda.host_gcc) >= 20


def test_every_row_cites_a_source_key_that_exists():
    sources = {**KB().sources, **RAW.get("sources", {})}
    for section in ROW_SECTIONS:
        for i, row in enumerate(RAW[section]):
            keys = [row["source"]] if isinstance(row["source"], str) else row["source"]
            missing = [k for k in keys if k not in sources]
            assert not missing, f"{section}[{i}] cites unknown {missing}"


def test_every_row_states_its_confidence():
    for section in ROW_SECTIONS:
        for i, row in enumerate(RAW[section]):
            assert row.get("confidence") in ("C", "S", "I"), f"{section}[{i}]"


@pytest.mark.parametrize(
    "section, key",
    [("minor_compat", "cuda_major"), ("toolkit_drivers", "cuda"), ("architectures", "cc"), ("host_gcc", "cuda")],
)
def test_row_keys_are_unique(section, key):
    keys = [Version(str(row[key])) for row in RAW[section]]
    assert len(keys) == len(set(keys))


def test_every_version_field_parses():
    for row in RAW["toolkit_drivers"]:
        Version(row["cuda"]), Version(row["driver"])
    for row in RAW["minor_compat"]:
        Version(row["min_driver"]), Version(row["latest_minor"])
    for row in RAW["architectures"]:
        Version(row["first_cuda"])
        if row["last_cuda"] is not None:
            assert Version(row["last_cuda"]) >= Version(row["first_cuda"])


def test_each_cuda_minor_has_exactly_one_ga_row(cuda):
    minors = [f"{Version(r.cuda).major}.{Version(r.cuda).minor}" for r in cuda.toolkit_drivers if r.release == "GA"]
    assert len(minors) == len(set(minors))


# ----------------------------------------------------------------------------- drivers
@pytest.mark.parametrize("cuda_version, floor", [("11.8", "450.80.02"), ("12.4.131", "525.60.13"), ("13.0", "580.65.06"), ("13.5", "580.65.06")])
def test_driver_floor_is_the_majors_minor_version_compatibility_minimum(cuda, cuda_version, floor):
    assert cuda.driver_floor(cuda_version) == floor


@pytest.mark.parametrize("cuda_version", ["10.2", "9.0", "14.0"])
def test_driver_floor_is_none_for_majors_without_minor_version_compatibility_data(cuda, cuda_version):
    assert cuda.driver_floor(cuda_version) is None


@pytest.mark.parametrize(
    "cuda_version, driver",
    [
        ("12.4", "550.54.14"),  # a minor means its GA release
        ("12.4.1", "550.54.15"),  # an update number picks that update
        ("12.4.131", "550.54.14"),  # an nvcc component build says only the minor
        ("11.8.20220929", "520.61.05"),  # the 11.8 version.json date stamp
        ("11.0", "450.51.05"),  # 11.0 GA is 11.0.2 (11.0.1 was the RC)
        ("10.2.89", "440.33"),
        ("13.0.2", "580.95.05"),
        ("13.3", "610.43.02"),
    ],
)
def test_toolkit_driver_follows_table_3(cuda, cuda_version, driver):
    assert cuda.toolkit_driver(cuda_version) == driver


# 9.2 was here until issue 26 added Table 3's rows back to 7.5; 7.0 and 6.5 have none.
@pytest.mark.parametrize("cuda_version", ["13.4", "13.5", "7.0", "6.5", "12.7"])
def test_toolkit_driver_is_none_where_table_3_has_no_row(cuda, cuda_version):
    assert cuda.toolkit_driver(cuda_version) is None


@pytest.mark.parametrize(
    "driver, newest",
    [
        ("580.95.05", "13.5"),  # R580 runs every 13.x by minor-version compatibility
        ("575.57.08", "12.9"),
        ("535.104.05", "12.9"),  # R535 runs 12.x apps (data-center LTSB)
        ("525.60.13", "12.9"),
        ("520.61.05", "11.8"),
        ("455.23", "11.8"),  # above the 11.x floor 450.80.02
        ("450.51.05", "11.0"),  # below the floor: only Table 3 helps
        ("440.33", "10.2"),
        ("418.39", "10.1"),
    ],
)
def test_newest_cuda_for_driver_uses_table_3_and_minor_version_compatibility(cuda, driver, newest):
    assert cuda.newest_cuda_for_driver(driver) == newest


def test_newest_cuda_for_a_driver_older_than_every_row_is_none(cuda):
    # 390.157 ran CUDA 9.1 (390.46) once issue 26 added the rows before 10.0; 7.5's 352.31
    # is now the oldest row.
    assert cuda.newest_cuda_for_driver("340.108") is None
    assert cuda.newest_cuda_for_driver("390.157") == "9.1"


# ----------------------------------------------------------------------------- before CUDA 11
# Release notes Table 3 rows back to 7.5, Linux and Windows columns (issue 26): S-COMPAT's
# Table 2 for 10.x, copies of the release notes' table (S-RNWIN110, S-RNWIN116) for the rest.
TABLE_3_OLD = [
    # (release as Table 3 names it, the KB's key, Linux, Windows)
    ("CUDA 7.5 (7.5.16)", "7.5", "352.31", "353.66"),
    ("CUDA 8.0 (8.0.44)", "8.0", "367.48", "369.30"),
    ("CUDA 8.0 (8.0.61 GA2)", "8.0.61", "375.26", "376.51"),
    ("CUDA 9.0 (9.0.76)", "9.0", "384.81", "385.54"),
    ("CUDA 9.1 (9.1.85)", "9.1", "390.46", "391.29"),
    ("CUDA 9.2 (9.2.88)", "9.2", "396.26", "397.44"),
    ("CUDA 9.2 (9.2.148 Update 1)", "9.2.148", "396.37", "398.26"),
    ("CUDA 10.0.130", "10.0", "410.48", "411.31"),
    ("CUDA 10.1 (10.1.105 general release, and updates)", "10.1", "418.39", "418.96"),
    ("CUDA 10.2.89", "10.2", "440.33", "441.22"),
]


@pytest.mark.parametrize("name, key, linux, windows", TABLE_3_OLD)
def test_rows_before_cuda_11_have_table_3_s_linux_and_windows_drivers(cuda, name, key, linux, windows):
    assert cuda.toolkit_driver(key) == linux, name
    assert cuda.toolkit_driver(key, windows=True) == windows, name


@pytest.mark.parametrize("name, key, linux, windows", TABLE_3_OLD)
def test_every_old_row_cites_the_pages_its_numbers_were_read_in(name, key, linux, windows):
    """10.x: NVIDIA's own S-COMPAT Table 2 (both columns); 7.5-9.2: the two copies of the
    release notes' table (secondary, so confidence S)."""
    row = next(r for r in RAW["toolkit_drivers"] if r["cuda"] == key)
    cited = {row["source"]} if isinstance(row["source"], str) else set(row["source"])
    if Version(key) >= Version("10.0"):
        assert "S-COMPAT" in cited and row["confidence"] == "C", name
    else:
        assert {"S-RNWIN110", "S-RNWIN116"} <= cited and row["confidence"] == "S", name
    assert (row["driver"], row["windows_driver"]) == (linux, windows), name


@pytest.mark.parametrize(
    "cuda_version, floor",
    [
        ("10.2", "440.33"), ("10.2.89", "440.33"), ("10.1.243", "418.39"), ("10.0.130", "410.48"),
        ("9.2", "396.26"), ("9.2.148", "396.37"), ("9.0.176", "384.81"), ("8.0.61", "375.26"), ("8.0.44", "367.48"), ("7.5", "352.31"),
        # 11.x on: unchanged, the major's minor-version-compatibility floor
        ("11.8", "450.80.02"), ("11.0.2", "450.80.02"), ("12.4.131", "525.60.13"), ("13.0", "580.65.06"),
    ],
)
def test_run_floor_is_the_toolkit_driver_before_cuda_11_and_the_minor_compat_floor_after(cuda, cuda_version, floor):
    assert cuda.run_floor(cuda_version) == floor
    if Version(cuda_version) >= Version("11"):
        assert cuda.run_floor(cuda_version) == cuda.driver_floor(cuda_version)


@pytest.mark.parametrize("cuda_version, floor", [("10.2", "441.22"), ("9.2.148", "398.26"), ("8.0", "369.30"), ("11.8", None), ("12.4", None)])
def test_run_floor_on_windows_reads_the_windows_column_and_has_no_11_plus_floor(cuda, cuda_version, floor):
    assert cuda.run_floor(cuda_version, windows=True) == floor


@pytest.mark.parametrize("cuda_version", ["7.0", "6.5", "14.0"])
def test_run_floor_is_none_without_a_row(cuda, cuda_version):
    assert cuda.run_floor(cuda_version) is None


def test_windows_column_is_null_where_no_source_was_found(cuda):
    # 11.6 Update 1 on: no copy of Table 3's Windows column was found (issue 26).
    assert cuda.toolkit_driver("11.6.1", windows=True) is None
    assert cuda.toolkit_driver("13.0", windows=True) is None
    assert cuda.toolkit_driver("11.6.0", windows=True) == "511.23"
    assert cuda.toolkit_driver("11.0", windows=True) == "451.48"


# ----------------------------------------------------------------------------- architectures
@pytest.mark.parametrize(
    "cuda_version, cc, supported",
    [
        ("11.0", "8.6", False), ("11.1", "8.6", True),  # sm_86 needs CUDA 11.1
        ("11.8", "3.5", True), ("12.0", "3.5", False), ("12.0", "3.7", False),  # Kepler removed in 12.0
        ("12.9", "5.0", True), ("13.0", "5.2", False), ("13.0", "6.1", False), ("13.0", "7.0", False), ("13.0", "7.2", False),
        ("13.0", "7.5", True), ("13.0.88", "9.0", True), ("11.7", "9.0", False), ("11.8", "8.9", True),
        ("12.9", "10.1", True), ("13.0", "10.1", False), ("13.0", "11.0", True), ("12.8", "12.0", True), ("12.6", "12.0", False),
    ],
)
def test_nvcc_supports_matches_the_architecture_timeline(cuda, cuda_version, cc, supported):
    assert cuda.nvcc_supports(cuda_version, cc) is supported


@pytest.mark.parametrize(
    "cuda_version, cc",
    [("13.0", "9.9"), ("14.0", "9.0"), ("6.5", "5.0")],  # unknown CC; past the horizon; before "7.0 or earlier"
)
def test_nvcc_supports_is_none_when_the_kb_cannot_say(cuda, cuda_version, cc):
    assert cuda.nvcc_supports(cuda_version, cc) is None


def test_arch_first_last_gives_the_first_and_last_toolkit(cuda):
    assert cuda.arch_first_last("8.6") == ("11.1", None)
    assert cuda.arch_first_last("7.0") == ("9.0", "12.9")
    assert cuda.arch_first_last("4.0") is None


# ----------------------------------------------------------------------------- host gcc
@pytest.mark.parametrize("cuda_version, gcc", [("11.8", "11"), ("12.0.1", "12"), ("12.4", "13"), ("12.8", "14"), ("12.9", "14"), ("13.0.88", "15"), ("13.4.1", "16"), ("13.5", "16")])
def test_host_gcc_max_follows_host_config_h(cuda, cuda_version, gcc):
    assert cuda.host_gcc_max(cuda_version) == gcc


def test_host_gcc_max_is_none_for_a_release_the_kb_lacks(cuda):
    assert cuda.host_gcc_max("12.7") is None
    assert cuda.host_gcc_max("14.0") is None


# ----------------------------------------------------------------------------- runfiles
def test_runfile_by_release_or_by_minor(cuda):
    assert cuda.runfile("12.8.0").filename == "cuda_12.8.0_570.86.10_linux.run"
    assert cuda.runfile("12.8") == cuda.runfile("12.8.0")
    assert cuda.runfile("12.8.1") is None and cuda.runfile("13.0") is None


def test_runfile_digest_is_the_hex_of_the_nixpkgs_sri_digest(cuda):
    # releases.nix @113ef7df: 11.8 sha256 = "sha256-kiPErzrr5Ke77Zq9mxY7A6GzS4VfvCtKDRtwasCaWhY="
    import base64

    assert cuda.runfile("11.8").sha256 == base64.b64decode("kiPErzrr5Ke77Zq9mxY7A6GzS4VfvCtKDRtwasCaWhY=").hex()


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("call", ["driver_floor", "run_floor", "toolkit_driver", "host_gcc_max"])
def test_a_query_with_garbage_names_the_input(cuda, call):
    with pytest.raises(ValueError, match="'garbage'"):
        getattr(cuda, call)("garbage")


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=20))
def test_queries_answer_or_raise_valueerror_for_any_text(cuda, text):
    for query, answers in (
        (lambda: cuda.driver_floor(text), (str, type(None))),
        (lambda: cuda.run_floor(text), (str, type(None))),
        (lambda: cuda.run_floor(text, windows=True), (str, type(None))),
        (lambda: cuda.toolkit_driver(text), (str, type(None))),
        (lambda: cuda.newest_cuda_for_driver(text), (str, type(None))),
        (lambda: cuda.nvcc_supports(text, "8.6"), (bool, type(None))),
        (lambda: cuda.nvcc_supports("12.4", text), (bool, type(None))),
        (lambda: cuda.host_gcc_max(text), (str, type(None))),
    ):
        try:
            answer = query()
        except ValueError as exc:
            assert repr(text) in str(exc) or repr(text.strip()) in str(exc)  # the error names the input
        else:
            assert isinstance(answer, answers)


# ----------------------------------------------------------------------------- malformed KB
def _kb_with(tmp_path: Path, text: str):
    shutil.copy(KB_DIR / "sources.yaml", tmp_path / "sources.yaml")
    (tmp_path / "cuda.yaml").write_text(text, encoding="utf-8")
    return KB(tmp_path)


def _mutated(tmp_path: Path, edit):
    data = yaml.safe_load((KB_DIR / "cuda.yaml").read_text(encoding="utf-8"))
    edit(data)
    return _kb_with(tmp_path, yaml.safe_dump(data))


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    kb = _kb_with(tmp_path, "minor_compat:\n  - {cuda_major: 11\n")
    with pytest.raises(KBError, match=r"cuda\.yaml: line \d+"):
        kb.cuda


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["toolkit_drivers"].append(dict(d["toolkit_drivers"][5])), r"toolkit_drivers\[\d+\]: duplicate toolkit release"),
        (lambda d: d["toolkit_drivers"][3].update(driver="not-a-driver"), r"toolkit_drivers\[3\]\.driver: not a version"),
        (lambda d: d["architectures"][0].update(source="S-NOPE"), r"architectures\[0\]\.source: unknown source key 'S-NOPE'"),
        (lambda d: d["host_gcc"][2].pop("source"), r"host_gcc\[2\]: missing field 'source'"),
        (lambda d: d["host_gcc"][2].update(confidence="maybe"), r"host_gcc\[2\]\.confidence"),
        (lambda d: d["architectures"][1].update(cc="sm_32"), r"architectures\[1\]\.cc: not a compute capability"),
        (lambda d: d["architectures"].append(dict(d["architectures"][4])), r"duplicate compute capability 5\.0"),
        (lambda d: d["architectures"][4].update(last_cuda="6.5"), r"architectures\[4\]: last_cuda 6\.5 is before first_cuda"),
        (lambda d: d["minor_compat"][1].update(min_driver="400.1"), r"minor_compat: CUDA 12\.x floor 400\.1 is not above"),
        (lambda d: d["toolkit_drivers"][10].update(driver="300.1"), r"toolkit_drivers: CUDA .* needs driver 300\.1, lower than"),
        (lambda d: d["toolkit_drivers"][1].update(release="Beta"), r"toolkit_drivers\[1\]\.release"),
        (lambda d: d["toolkit_drivers"][12].update(windows_driver="400.1"), r"toolkit_drivers: CUDA .* needs Windows driver 400\.1, lower than"),
        (lambda d: d["toolkit_drivers"][12].update(windows_driver="win"), r"toolkit_drivers\[12\]\.windows_driver: not a version"),
        (lambda d: d["host_gcc"][5].update(gcc_max=3), r"host_gcc: CUDA .* gcc_max 3 is below"),
        (lambda d: d.update(extras=[]), r"unknown section\(s\) extras"),
        (lambda d: d["minor_compat"][0].update(latest_minor="12.0"), r"minor_compat\[0\]\.latest_minor: 12\.0 is not a CUDA 11\.x"),
        (lambda d: d["runfiles"][0].update(sha256="ABC"), r"runfiles\[0\]\.sha256: expected 64 lowercase hex"),
        (lambda d: d["runfiles"][1].update(url="http://example.com/cuda.run"), r"runfiles\[1\]\.url: not NVIDIA's runfile URL"),
        (lambda d: d["runfiles"].append({**d["runfiles"][2], "cuda": "11.5.1", "url": d["runfiles"][2]["url"].replace("11.5.0", "11.5.1")}), r"duplicate runfile for CUDA 11\.5"),
    ],
)
def test_a_malformed_row_raises_kberror_naming_file_and_row(tmp_path, edit, message):
    kb = _mutated(tmp_path, edit)
    with pytest.raises(KBError, match=r"^cuda\.yaml: (.*: )?" + message):
        kb.cuda
