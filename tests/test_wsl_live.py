"""WSL judged on a live host or a --root (fwdoctor.rules.windows RULES): the WSL version and
the Windows build a kernel release says (probes/driver.py wsl_version), whole `check` runs on
the WSL fixture roots (tests/roots/driver-wsl*), and both WSL rules and cpu-lacks-avx
following their KB rows (cuda.yaml `wsl`, frameworks.yaml `cpu_features`) in a copied KB."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from conftest import ROOTS
from fwdoctor.kb import KB
from fwdoctor.model import Fact, Facts
from fwdoctor.probes.driver import wsl_version
from fwdoctor.rules.platform import cpu_lacks_avx
from fwdoctor.rules.windows import wsl_gpu_unsupported, wsl_gpu_unsupported_here, wsl_linux_driver_installed_here

TESTS = Path(__file__).resolve().parent
pytestmark = pytest.mark.usefixtures("use_test_kb")
MINE = {"wsl-gpu-unsupported", "wsl-linux-driver-installed"}


@pytest.mark.parametrize("text, expected", [
    ("4.4.0-19041-Microsoft", (1, 19041)),
    ("Linux version 4.4.0-17763-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0 (GCC) ) #1237-Microsoft", (1, 17763)),
    ("5.15.153.1-microsoft-standard-WSL2", (2, None)),
    ("4.19.128-microsoft-standard", (2, None)),
    ("6.8.0-45-generic", (None, None)),
    (None, (None, None)),
])
def test_a_kernel_release_says_the_wsl_version_and_only_wsl_1_says_the_windows_build(text, expected):
    assert wsl_version(text) == expected


@pytest.fixture
def env_file(tmp_path):
    path = tmp_path / "root.env"
    path.write_text("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n")
    return str(path)


@pytest.mark.parametrize("root, fired, not_checked", [
    ("driver-wsl1", {"wsl-gpu-unsupported"}, set()),
    ("driver-wsl2-linux-driver", {"wsl-linux-driver-installed"}, {"wsl-gpu-unsupported"}),
    ("driver-wsl2", set(), {"wsl-gpu-unsupported"}),
    ("driver-ok", set(), set()),
])
def test_each_wsl_root_gives_its_wsl_findings_and_the_windows_build_is_never_guessed(check_json, env_file, root, fired, not_checked):
    _, report = check_json("--root", str(ROOTS / root), "--env-file", env_file)
    assert {f["id"] for f in report["findings"]} & MINE == fired
    assert {n["rule"] for n in report["not_checked"]} & MINE == not_checked


def test_the_wsl_roots_report_what_they_saw(check_json, env_file):
    _, report = check_json("--root", str(ROOTS / "driver-wsl1"), "--env-file", env_file)
    (hit,) = [f for f in report["findings"] if f["id"] == "wsl-gpu-unsupported"]
    assert "WSL 1 on Windows build 19041" in hit["message"]
    _, report = check_json("--root", str(ROOTS / "driver-wsl2-linux-driver"), "--env-file", env_file)
    (hit,) = [f for f in report["findings"] if f["id"] == "wsl-linux-driver-installed"]
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05 (535.104.05)" in hit["message"] and "/usr/bin/nvidia-smi" in hit["message"]
    assert "/usr/lib/wsl/lib/libcuda" not in hit["message"].split("beside")[0]


def _wsl(**over):
    base = {"lib_dir": "/usr/lib/wsl/lib", "libcuda": "/usr/lib/wsl/lib/libcuda.so.1", "nvidia_smi": None, "dxg": True,
            "kernel": "5.15.153.1-microsoft-standard-WSL2", "version": 2, "windows_build": None, "linux_nvidia_smi": None}
    return Fact("driver.wsl", {**base, **over}, source="t")


def test_a_gpu_that_answers_inside_wsl_2_settles_the_windows_build(test_kb):
    gpus = Fact("gpus.list", [{"index": 0, "name": "NVIDIA GeForce RTX 4090", "source": "nvml"}], source="t")
    assert wsl_gpu_unsupported_here.evaluate(Facts([_wsl(), gpus]), test_kb) == ([], None)
    found, skipped = wsl_gpu_unsupported_here.evaluate(Facts([_wsl()]), test_kb)
    assert found == [] and "cmd.exe /c ver" in skipped.reason and "19044" in skipped.reason


def test_the_windows_drivers_own_libraries_are_no_linux_driver(test_kb):
    own = Fact("driver.userspace_libs", [{"path": "/usr/lib/wsl/lib/libcuda.so.1.1", "name": "libcuda", "version": "1.1"}], source="t")
    assert wsl_linux_driver_installed_here.evaluate(Facts([_wsl(), own]), test_kb) == ([], None)
    none = Fact("driver.userspace_libs", [], source="t")
    assert wsl_linux_driver_installed_here.evaluate(Facts([_wsl(version=1), Fact("driver.userspace_libs", [{"path": "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", "name": "libcuda", "version": "535.104.05"}], source="t")]), test_kb) == ([], None)
    assert wsl_linux_driver_installed_here.evaluate(Facts([Fact("driver.wsl", None, source="t"), none]), test_kb) == ([], None)


# ----------------------------------------------------------------------------- the rules follow the KB rows
def _copied_kb(tmp_path: Path, name: str, edit) -> KB:
    folder = tmp_path / "kb"
    shutil.copytree(TESTS / "kb", folder)
    data = yaml.safe_load((folder / name).read_text(encoding="utf-8"))
    edit(data)
    (folder / name).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return KB(folder)


def test_wsl_gpu_unsupported_follows_the_kbs_windows_build_floor(tmp_path, test_kb):
    facts = Facts([Fact("platform.wsl", {"version": 2, "text": "microsoft-standard-WSL2"}, source="t"),
                   Fact("platform.windows_build", {"version": "10.0.19045.3803", "build": 19045}, source="t")])
    assert wsl_gpu_unsupported.evaluate(facts, test_kb)[0] == []
    raised = _copied_kb(tmp_path, "cuda.yaml", lambda d: d["wsl"].update(windows_build_min=22000))
    (hit,) = wsl_gpu_unsupported.evaluate(facts, raised)[0]
    assert "build 22000" in hit.message
    gone = _copied_kb(tmp_path / "gone", "cuda.yaml", lambda d: d.pop("wsl"))
    found, skipped = wsl_gpu_unsupported.evaluate(facts, gone)
    assert found == [] and "no data" in skipped.reason


def test_cpu_lacks_avx_follows_the_kbs_cpu_features_rows(tmp_path, test_kb):
    facts = Facts([Fact("platform.cpu", {"model": "Intel(R) Xeon(R) CPU X5690 @ 3.47GHz", "flags": []}, source="t"),
                   Fact("frameworks.installed", [{"framework": "tensorflow", "version": "1.5.0"}], source="t")])
    assert cpu_lacks_avx.evaluate(facts, test_kb)[0] == []  # AVX from 1.6 on

    def since_1_4(d):
        d["tensorflow"]["cpu_features"][0]["since"] = "1.4"
    assert [f.id for f in cpu_lacks_avx.evaluate(facts, _copied_kb(tmp_path, "frameworks.yaml", since_1_4))[0]] == ["cpu-lacks-avx"]
    paddle = Facts([facts["platform.cpu"] and Fact("platform.cpu", {"model": None, "flags": []}, source="t"),
                    Fact("frameworks.installed", [{"framework": "paddle", "version": "3.3.1"}], source="t")])
    assert [f.id for f in cpu_lacks_avx.evaluate(paddle, test_kb)[0]] == ["cpu-lacks-avx"]
    no_row = _copied_kb(tmp_path / "b", "frameworks.yaml", lambda d: d["paddle"].pop("cpu_features"))
    assert cpu_lacks_avx.evaluate(paddle, no_row)[0] == []
