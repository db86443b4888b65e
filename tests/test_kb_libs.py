"""libs.yaml: loads, every row cited, ranges sane, queries answer from rows, and a broken
row is reported with its file and location."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from fwdoctor.kb import KB, KB_DIR, KBError
from fwdoctor.kb.libs import NoData

DATA = Path(__file__).resolve().parent / "data" / "libs"


@pytest.fixture(scope="module")
def libs():
    return KB().libs


def test_every_row_cites_a_known_source():
    kb = KB()
    data = yaml.safe_load((KB_DIR / "libs.yaml").read_text())
    known = {**kb.sources, **data["sources"]}
    rows = [*data["cudnn_cuda"], *data["pip_packages"], *data["version_codes"].values(), *data["nccl_bugs"]]
    for row in rows:
        keys = [row["source"]] if isinstance(row["source"], str) else row["source"]
        assert keys and all(k in known for k in keys), row


def test_cudnn_9_24_serves_cuda_12_and_13_and_8_9_serves_11_and_12(libs):
    assert libs.cudnn_cuda_majors("9.24.0.43") == (12, 13)
    assert libs.cudnn_cuda_majors("8.9.7") == (11, 12)
    assert libs.cudnn_cuda_majors("9.10.2") == (11, 12)


def test_a_cudnn_newer_than_the_kb_is_no_data_not_a_guess(libs):
    with pytest.raises(NoData, match="9.40.0"):
        libs.cudnn_cuda_majors("9.40.0")
    with pytest.raises(NoData, match="not a version"):
        libs.cudnn_cuda_majors("nine")


def test_pip_names_map_to_cuda_majors_in_any_spelling(libs):
    assert libs.cuda_major_of_pip_package("nvidia-cudnn-cu11") == 11
    assert libs.cuda_major_of_pip_package("nvidia_nccl_cu13") == 13
    assert libs.cuda_major_of_pip_package("nvidia-cudnn") is None
    assert libs.pip_package_for("nccl", 12) == "nvidia-nccl-cu12"
    assert libs.pip_package_for("cudnn", 10) is None


def test_the_installed_cu13_wheels_fall_inside_the_recorded_pypi_ranges(libs):
    for name, version in (("nvidia-cudnn-cu13", "9.24.0.43"), ("nvidia-nccl-cu13", "2.30.7")):
        row = libs.pip_package(name)
        assert row.first <= Version(version) <= row.last


def test_version_codes_match_the_real_headers(libs):
    nccl_h = (DATA / "nccl-2.30.7.h").read_text()
    assert libs.version_code("nccl", "2.30.7") == int(re.search(r"NCCL_VERSION_CODE (\d+)", nccl_h).group(1))
    assert libs.version_code("nccl", "2.8.4") == 2804  # the old formula below 2.9
    assert libs.version_code("cudnn", "9.24.0") == 92400  # torch.backends.cudnn.version() of torch 2.14.1
    assert libs.version_code("cudnn", "8.9.3") == 8903
    assert [libs.version_from_code(lib, code) for lib, code in (("nccl", 23007), ("nccl", 2804), ("cudnn", 92400), ("cudnn", 8903))] == [
        "2.30.7", "2.8.4", "9.24.0", "8.9.3"]


def test_nccl_bugs_are_selected_by_version(libs):
    assert [b.id for b in libs.nccl_known_bugs("2.25.1")] == ["comm-abort-hang", "commsplit-memory-corruption"]
    assert [b.id for b in libs.nccl_known_bugs("2.29.2")] == ["hang-regression-2-29-2"]
    assert libs.nccl_known_bugs("2.30.7") == []
    assert libs.nccl_known_bugs("garbage") == []


def broken_kb(tmp_path: Path, edit) -> Path:
    shutil.copytree(KB_DIR, tmp_path / "kb", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    path = tmp_path / "kb" / "libs.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data))
    return tmp_path / "kb"


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["cudnn_cuda"][1].update(versions=">=7.5,<8.8"), r"cudnn_cuda: rows 0 and 1 overlap"),
        (lambda d: d["cudnn_cuda"][0].update(versions="~~7"), r"cudnn_cuda\[0\]\.versions: not a version specifier"),
        (lambda d: d["cudnn_cuda"][0].update(cuda_majors=[]), r"cudnn_cuda\[0\]\.cuda_majors"),
        (lambda d: d["cudnn_cuda"][0].update(source="S-NOPE"), r"unknown source key 'S-NOPE'"),
        (lambda d: d["pip_packages"][0].update(cuda_major=12), r"pip_packages\[0\]: package 'nvidia-cudnn-cu11' does not end in -cu12"),
        (lambda d: d["pip_packages"][1].update(package="nvidia-cudnn-cu11"), r"duplicate package"),
        (lambda d: d["nccl_bugs"][0].update(fixed="2.15.4"), r"nccl_bugs\[0\]: fixed version 2.15.4 is inside affected"),
        (lambda d: d["nccl_bugs"][0].pop("source"), r"nccl_bugs\[0\]: missing field 'source'"),
    ],
)
def test_a_broken_row_is_reported_with_its_location(tmp_path, edit, message):
    kb = KB(broken_kb(tmp_path, edit))
    with pytest.raises(KBError, match=r"libs\.yaml: .*" + message):
        kb.libs
