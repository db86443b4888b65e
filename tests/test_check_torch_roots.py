"""Whole `fwdoctor check --root ... --env-file ... --json` runs on the torch/python fixture
roots: each finding fires on its root and stays quiet on its near miss."""

from __future__ import annotations

import json

import pytest

from conftest import ROOTS, finding_ids

pytestmark = pytest.mark.usefixtures("use_test_kb")  # every command and probe reads the frozen tests/kb

CASES = [
    # root, env file, must fire, must not fire
    ("torch-driver-too-old", "fixture.env", {"driver-too-old-for-torch"}, {"gpu-arch-unsupported-by-torch", "torch-not-installed"}),
    ("torch-driver-ok", "fixture.env", set(), {"driver-too-old-for-torch", "gpu-arch-unsupported-by-torch", "torch-cpu-build-on-gpu-host", "torch-not-installed", "probe-failed"}),
    ("torch-arch-unsupported", "fixture.env", {"gpu-arch-unsupported-by-torch"}, {"driver-too-old-for-torch"}),
    ("torch-cpu-on-gpu-host", "fixture.env", {"torch-cpu-build-on-gpu-host"}, {"driver-too-old-for-torch", "gpu-arch-unsupported-by-torch"}),
    ("torch-cpu-no-gpu", "fixture.env", set(), {"torch-cpu-build-on-gpu-host"}),
    ("torch-not-installed", "fixture.env", {"torch-not-installed"}, {"probe-failed"}),
    ("torch-half-installed", "fixture.env", {"probe-failed"}, {"torch-not-installed"}),
    ("python-env-mismatch", "fixture.env", {"python-env-mismatch"}, {"user-site-shadowing"}),
    ("python-env-ok", "fixture.env", set(), {"python-env-mismatch"}),
    ("python-user-site-shadow", "fixture.env", {"user-site-shadowing"}, {"python-env-mismatch"}),
    ("python-user-site-shadow", "nousersite.env", set(), {"user-site-shadowing"}),
]


def check(cli, root: str, env: str):
    result = cli("check", "--root", str(ROOTS / root), "--env-file", str(ROOTS / root / env), "--json")
    return result.exit_code, json.loads(result.output)


@pytest.mark.parametrize("root, env, fires, quiet", CASES, ids=[f"{c[0]}/{c[1]}" for c in CASES])
def test_each_root_fires_its_finding_and_nothing_it_should_not(cli, root, env, fires, quiet):
    code, report = check(cli, root, env)
    ids = finding_ids(report)
    assert fires <= ids, ids
    assert not (quiet & ids), ids
    errors = {f["id"] for f in report["findings"] if f["severity"] == "error"}
    assert code == (1 if errors else 0)


def test_the_driver_finding_names_versions_floor_and_a_wheel_to_install(cli):
    _, report = check(cli, "torch-driver-too-old", "fixture.env")
    (finding,) = [f for f in report["findings"] if f["id"] == "driver-too-old-for-torch"]
    assert finding["message"] == (
        "torch 2.14.1+cu130 is built for CUDA 13.0, which needs NVIDIA driver >= 580.65.06 "
        "(CUDA 13.x minor-version compatibility); this host has 515.76"
    )
    assert finding["fix"]["recipe"] == "torch-wheel"
    assert finding["fix"]["options"]["variant"] == "cu118"  # 515 runs CUDA 11.x only
    # The wheel `select torch` picks for this H100 on 515: the frozen tests/kb has no arch list
    # for the 2.6/2.7 cu118 wheels, so the newest with confirmed H100 (sm_90) kernels is 2.5.1.
    assert finding["fix"]["commands"][0].startswith("/opt/venv/bin/python -m pip install --force-reinstall torch==2.5.1 ")


def test_the_arch_finding_names_the_gpu_and_a_wheel_that_covers_it(cli):
    _, report = check(cli, "torch-arch-unsupported", "fixture.env")
    (finding,) = [f for f in report["findings"] if f["id"] == "gpu-arch-unsupported-by-torch"]
    assert "GeForce GTX 1080 Ti (compute capability 6.1, sm_61)" in finding["message"]
    assert finding["fix"]["options"]["torch"] == "2.14.1" and finding["fix"]["options"]["variant"] == "cu126"


def test_the_half_installed_torch_is_one_clear_line(cli):
    _, report = check(cli, "torch-half-installed", "fixture.env")
    (finding,) = [f for f in report["findings"] if f["id"] == "probe-failed"]
    assert "torch-2.14.1.dist-info exists but /opt/venv/lib/python3.11/site-packages/torch/ does not" in finding["message"]
    assert "Traceback" not in json.dumps(report)


def test_deep_is_ignored_for_a_root_folder(cli):
    result = cli("check", "--root", str(ROOTS / "torch-driver-ok"), "--env-file", str(ROOTS / "torch-driver-ok" / "fixture.env"), "--json", "--deep")
    report = json.loads(result.stdout if hasattr(result, "stdout") else result.output)
    assert report["facts"]["torch.arch_list"]["source"].startswith("KB torch.yaml")
