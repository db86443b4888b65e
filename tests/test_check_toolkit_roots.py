"""Whole `fwdoctor check --root DIR --env-file ENV --json` runs on the toolkit fixture roots
(tests/roots/toolkit-*/README.fixture says what each holds and where its files came
from): every toolkit finding fires where it should, and its near miss stays quiet."""

from __future__ import annotations

import pytest

from conftest import ROOTS

pytestmark = pytest.mark.usefixtures("use_test_kb")  # every command and probe reads the frozen tests/kb

OURS = (
    "toolkit-missing",
    "multiple-toolkits",
    "cuda-path-inconsistent",
    "torch-toolkit-mismatch",
    "host-compiler-unsupported",
    "driver-too-old-for-toolkit",
    "gpu-arch-unsupported-by-toolkit",
)

CASES = [
    # root, env file, the toolkit findings expected (id, severity), exactly
    ("toolkit-clean", "fixture.env", set()),
    ("toolkit-runtime-only", "fixture.env", {("toolkit-missing", "info")}),
    ("toolkit-pip-nvcc", "fixture.env", set()),
    ("toolkit-two", "fixture.env", {("multiple-toolkits", "info")}),
    ("toolkit-two", "consistent.env", {("multiple-toolkits", "info")}),
    # CUDA_HOME on 11.5 (no host_config.h there: the KB says gcc <= 11, and gcc is 12)
    ("toolkit-two", "inconsistent.env", {("multiple-toolkits", "info"), ("cuda-path-inconsistent", "warning"), ("host-compiler-unsupported", "error")}),
    ("toolkit-torch-mismatch", "fixture.env", {("multiple-toolkits", "info"), ("cuda-path-inconsistent", "warning"), ("torch-toolkit-mismatch", "error")}),
    ("toolkit-torch-mismatch", "minor.env", {("multiple-toolkits", "info"), ("cuda-path-inconsistent", "warning"), ("torch-toolkit-mismatch", "warning")}),
    ("toolkit-torch-mismatch", "match.env", {("multiple-toolkits", "info")}),
    ("toolkit-gcc", "fixture.env", {("host-compiler-unsupported", "error")}),
    ("toolkit-driver-old", "fixture.env", {("multiple-toolkits", "info"), ("driver-too-old-for-toolkit", "error")}),
    ("toolkit-driver-old", "cuda-11.5.env", {("multiple-toolkits", "info"), ("cuda-path-inconsistent", "warning")}),
    ("toolkit-driver", "fixture.env", {("multiple-toolkits", "info"), ("cuda-path-inconsistent", "warning"), ("driver-too-old-for-toolkit", "warning")}),
    ("toolkit-driver", "cuda-11.5.env", {("multiple-toolkits", "info"), ("cuda-path-inconsistent", "warning"), ("gpu-arch-unsupported-by-toolkit", "error")}),
    ("toolkit-driver", "cuda-13.0.env", {("multiple-toolkits", "info")}),
    ("toolkit-pascal", "fixture.env", {("gpu-arch-unsupported-by-toolkit", "error")}),
]


def toolkit_findings(report: dict) -> set[tuple[str, str]]:
    return {(f["id"], f["severity"]) for f in report["findings"] if f["id"] in OURS}


@pytest.mark.parametrize("root, env, expected", CASES, ids=[f"{r}/{e}" for r, e, _ in CASES])
def test_each_fixture_root_gives_exactly_its_toolkit_findings(check_json, root, env, expected):
    code, report = check_json("--root", str(ROOTS / root), "--env-file", str(ROOTS / root / env))
    assert toolkit_findings(report) == expected
    assert not [f for f in report["findings"] if f["id"] == "probe-failed"]
    assert code == (1 if any(f["severity"] == "error" for f in report["findings"]) else 0)


def test_every_toolkit_id_fires_somewhere_and_is_quiet_somewhere():
    fired = {i for _, _, expected in CASES for i, _ in expected}
    quiet = {i for i in OURS for _, _, expected in CASES if i not in {x for x, _ in expected}}
    assert fired == set(OURS) and quiet == set(OURS)


def test_the_gcc_finding_names_the_header_and_the_installed_fallback(check_json):
    _, report = check_json("--root", str(ROOTS / "toolkit-gcc"), "--env-file", str(ROOTS / "toolkit-gcc" / "fixture.env"))
    (finding,) = [f for f in report["findings"] if f["id"] == "host-compiler-unsupported"]
    assert finding["message"] == "gcc 16 (/usr/bin/gcc) is newer than CUDA 13.0's nvcc accepts (gcc <= 15, per /usr/local/cuda-13.0's crt/host_config.h)"
    assert finding["fix"]["commands"] == ["export CC=/usr/bin/gcc-12 CXX=/usr/bin/g++-12 CUDAHOSTCXX=/usr/bin/g++-12"]


def test_the_major_mismatch_fix_points_cuda_home_at_the_installed_13_0(check_json):
    root = ROOTS / "toolkit-torch-mismatch"
    _, report = check_json("--root", str(root), "--env-file", str(root / "fixture.env"))
    (finding,) = [f for f in report["findings"] if f["id"] == "torch-toolkit-mismatch"]
    assert finding["message"].startswith("torch 2.14.1+cu130 is built for CUDA 13.0 but the active toolkit /usr/local/cuda-11.5 (CUDA_HOME) is CUDA 11.5")
    assert finding["fix"]["recipe"] == "env" and finding["fix"]["options"] == {"cuda_home": "/usr/local/cuda-13.0"}


def test_pascal_and_maxwell_gpus_each_get_a_finding_pointing_at_cuda_12_9(check_json):
    root = ROOTS / "toolkit-pascal"
    _, report = check_json("--root", str(root), "--env-file", str(root / "fixture.env"))
    found = [f for f in report["findings"] if f["id"] == "gpu-arch-unsupported-by-toolkit"]
    assert sorted(f["evidence"]["gpus"][0]["name"] for f in found) == ["GeForce GTX 1080 Ti", "GeForce GTX TITAN X"]
    assert {f["fix"]["options"]["version"] for f in found} == {"12.9"}


def test_a_root_without_driver_facts_lists_the_driver_rule_as_not_checked(check_json):
    root = ROOTS / "toolkit-clean"
    _, report = check_json("--root", str(root), "--env-file", str(root / "fixture.env"))
    skipped = {n["rule"]: n["reason"] for n in report["not_checked"]}
    assert "driver.version unknown" in skipped["driver-too-old-for-toolkit"]


def test_the_toolkit_facts_of_a_root_round_trip_through_a_facts_file(cli, check_json, tmp_path):
    root = ROOTS / "toolkit-torch-mismatch"
    saved = cli("facts", "--root", str(root), "--env-file", str(root / "fixture.env"))
    (tmp_path / "host.json").write_text(saved.output)
    _, from_root = check_json("--root", str(root), "--env-file", str(root / "fixture.env"))
    _, from_file = check_json("--facts", str(tmp_path / "host.json"))
    assert toolkit_findings(from_file) == toolkit_findings(from_root)
