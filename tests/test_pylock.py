"""pylock.toml (PEP 751) beside each lock: valid by packaging's own PEP 751 reader, and the
same resolution as requirements.lock (names, versions, sha256), for the stack's one target.

The validator is `packaging.pylock` (packaging >= 25.1, the PyPA reference code for the
format; in the dev extras); an older packaging skips naming the install command."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from conftest import TEST_KB_DIR
from fwdoctor.kb import KB
from fwdoctor.recipes import lockfile
from fwdoctor.recipes import stack as stack_mod

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden" / "docker"
STACKS = sorted(p.stem for p in (REPO / "stacks").glob("*.yaml"))


def _validate(data: dict) -> None:
    """packaging's own PEP 751 reader (packaging >= 25.1, in the dev extras) validates: an older
    packaging skips saying so (strict CI fails the skip) instead of passing unvalidated. The
    TOML and field checks beside it run in every case."""
    try:
        from packaging.pylock import Pylock
    except ImportError as exc:
        pytest.skip(f"needs packaging >= 25.1 for packaging.pylock ({exc}): pip install 'packaging>=25.1'")
    Pylock.from_dict(data)  # raises PylockValidationError naming the bad key


def _lock_hashes(text: str) -> dict[str, tuple[str, str]]:
    """name -> (version, sha256) from a requirements.lock."""
    out: dict[str, tuple[str, str]] = {}
    name = version = None
    for line in text.splitlines():
        line = line.strip()
        if "==" in line and not line.startswith(("#", "--")):
            name, version = line.rstrip("\\").strip().split("==")
        elif line.startswith("--hash=sha256:") and name:
            out[name] = (version, line.split(":", 1)[1])
    return out


@pytest.mark.parametrize("name", STACKS)
def test_each_committed_pylock_is_valid_pep_751_and_holds_the_same_files_as_the_lock(name):
    folder = REPO / "lockfiles" / name
    data = tomllib.loads((folder / lockfile.PYLOCK_NAME).read_text())
    _validate(data)
    assert data["lock-version"] == "1.0" and data["created-by"] == "fwdoctor"
    from_pylock = {}
    for package in data["packages"]:
        (wheel,) = package["wheels"]
        wheel_name, wheel_version, _, _ = parse_wheel_filename(wheel["name"])
        assert (wheel_name, wheel_version) == (package["name"], Version(package["version"]))
        assert ("url" in wheel) != ("path" in wheel)
        from_pylock[package["name"]] = (package["version"], wheel["hashes"]["sha256"])
    assert from_pylock == _lock_hashes((folder / lockfile.LOCK_NAME).read_text())
    resolved = stack_mod.load_and_resolve(REPO / "stacks" / f"{name}.yaml", KB(REPO / "doctor" / "kb"))
    assert data["tool"]["fwdoctor"]["stack-digest"] == f"sha256:{resolved.digest}"
    assert data["tool"]["fwdoctor"]["index-url"] == resolved.index_url


def test_the_pylock_environment_marker_selects_the_stacks_interpreter_only():
    data = tomllib.loads((REPO / "lockfiles" / "cpu-py311" / lockfile.PYLOCK_NAME).read_text())
    (marker,) = data["environments"]
    linux_311 = {"sys_platform": "linux", "platform_machine": "x86_64", "implementation_name": "cpython", "python_version": "3.11"}
    assert Marker(marker).evaluate(linux_311)
    assert not Marker(marker).evaluate({**linux_311, "python_version": "3.12"})
    assert not Marker(marker).evaluate({**linux_311, "sys_platform": "darwin"})
    assert data["requires-python"] == "==3.11.*"


def test_a_pylock_from_a_real_pip_report_keeps_each_files_url_and_a_local_file_as_a_path():
    """The recorded report (tests/golden/docker/README.md): torch from a local folder,
    everything else from pypi.org's file host."""
    resolved = stack_mod.load_and_resolve(REPO / "stacks" / "cpu-py311.yaml", KB(TEST_KB_DIR))
    report = json.loads((GOLDEN / "pip-report-cpu-py311.json").read_text())
    pins = lockfile.pins_from_report(report)
    sources = lockfile.Sources.of("http://127.0.0.1:8080/simple", ["http://127.0.0.1:8080/simple"], ["../wheels"])
    text = lockfile.render_pylock(resolved, pins, "stacks/cpu-py311.yaml", sources)
    data = tomllib.loads(text)
    _validate(data)
    by_name = {p["name"]: p for p in data["packages"]}
    urls = {item["download_info"]["url"].split("#")[0] for item in report["install"]}
    torch_wheel = by_name["torch"]["wheels"][0]
    assert "path" in torch_wheel and torch_wheel["path"].endswith("/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert torch_wheel["hashes"] == {"sha256": "6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b"}
    assert all(p["wheels"][0].get("url") in urls for n, p in by_name.items() if n != "torch")
    # A repeated index is one source; the folder is kept as given.
    assert data["tool"]["fwdoctor"]["extra-index-urls"] == [] and data["tool"]["fwdoctor"]["find-links"] == ["../wheels"]
    assert text == lockfile.render_pylock(resolved, list(reversed(pins)), "stacks/cpu-py311.yaml", sources)  # sorted, stable
