"""Lock files from pip reports: hashes for everything, sorted, deterministic; and the
target-platform arguments pip gets. Stacks resolve against the frozen tests/kb, except for
the freshness check of the committed lockfiles/cpu-py311 (the shipped KB)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import TEST_KB_DIR
from fwdoctor.kb import KB, KB_DIR
from fwdoctor.recipes import lockfile
from fwdoctor.recipes import stack as stack_mod

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden" / "docker"


@pytest.fixture(scope="module")
def cpu_stack():
    return stack_mod.load_and_resolve(REPO / "stacks" / "cpu-py311.yaml", KB(TEST_KB_DIR))


@pytest.fixture
def report():
    return json.loads((GOLDEN / "pip-report-cpu-py311.json").read_text())


def test_every_distribution_in_a_real_report_becomes_a_pin_with_its_sha256(report):
    pins = lockfile.pins_from_report(report)
    assert [p.name for p in pins] == sorted(p.name for p in pins)
    assert len(pins) == len(report["install"]) == 14
    torch = next(p for p in pins if p.name == "torch")
    assert (torch.version, torch.sha256) == ("2.13.0+cpu", "6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b")
    assert all(len(p.sha256) == 64 for p in pins)


def test_the_rendered_lock_is_the_same_bytes_every_time(report, cpu_stack):
    pins = lockfile.pins_from_report(report)
    first = lockfile.render_lock(cpu_stack, pins, "stacks/cpu-py311.yaml")
    second = lockfile.render_lock(cpu_stack, list(reversed(lockfile.pins_from_report(report))), "stacks/cpu-py311.yaml")
    assert first == second


def test_the_committed_cpu_lock_is_what_the_recorded_report_renders_to(report):
    shipped = stack_mod.load_and_resolve(REPO / "stacks" / "cpu-py311.yaml", KB(KB_DIR))
    text = lockfile.render_lock(shipped, lockfile.pins_from_report(report), "stacks/cpu-py311.yaml")
    assert (REPO / "lockfiles" / "cpu-py311" / "requirements.lock").read_text() == text


def test_a_lock_line_pins_the_version_and_the_hash_for_require_hashes(report, cpu_stack):
    text = lockfile.render_lock(cpu_stack, lockfile.pins_from_report(report), "stacks/cpu-py311.yaml")
    assert "torch==2.13.0+cpu \\\n    --hash=sha256:6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b\n" in text
    assert f"# stack-digest: sha256:{cpu_stack.digest}" in text


def test_a_file_without_a_hash_from_a_remote_index_is_an_error(report):
    item = next(i for i in report["install"] if i["download_info"]["url"].startswith("https://"))
    item["download_info"]["archive_info"] = {}
    with pytest.raises(lockfile.LockError, match="gave no sha256"):
        lockfile.pins_from_report(report)


def test_a_local_file_without_a_hash_is_hashed_here(report, tmp_path):
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel, only bytes to hash")
    report["install"] = [{"metadata": {"name": "demo", "version": "1.0"}, "download_info": {"url": wheel.as_uri(), "archive_info": {}}}]
    pin = lockfile.pins_from_report(report)[0]
    import hashlib

    assert pin.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()


@pytest.mark.parametrize("bad", [{}, {"version": "2", "install": []}, {"version": "1", "install": "x"}, []])
def test_an_unexpected_report_is_a_clear_error(bad):
    with pytest.raises(lockfile.LockError, match="unexpected pip report"):
        lockfile.pins_from_report(bad)


def test_platform_tags_cover_every_manylinux_the_os_glibc_loads():
    tags = lockfile.platform_tags("2.35")
    assert tags[0] == "manylinux_2_35_x86_64" and "manylinux_2_5_x86_64" in tags
    assert {"manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"} <= set(tags)
    assert "manylinux_2_36_x86_64" not in tags


def test_pip_gets_the_stacks_python_abi_and_platform_and_ignores_this_machines_config(cpu_stack):
    argv = lockfile.pip_argv(cpu_stack, "req.in", "report.json")
    assert "--isolated" in argv
    joined = " ".join(argv)
    assert "--python-version 3.11" in joined and "--abi cp311" in joined and "--only-binary=:all:" in joined
    assert "--platform manylinux_2_36_x86_64" in joined
    assert "--index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple" in joined


def test_index_overrides_replace_the_stacks_indexes(cpu_stack):
    argv = lockfile.pip_argv(cpu_stack, "r", "o", index_url="http://127.0.0.1:1/simple", extra_index_urls=[], find_links=["/w"])
    joined = " ".join(argv)
    assert "--index-url http://127.0.0.1:1/simple" in joined and "pypi.org" not in joined and "--find-links /w" in joined


def test_markers_are_evaluated_for_the_target_python():
    markers = lockfile.target_markers("3.10")
    assert markers["python_version"] == "3.10" and markers["sys_platform"] == "linux"


def test_a_cuda_lock_from_pypi_must_carry_the_stacks_cuda_runtime(cpu_stack):
    cu128 = stack_mod.load_and_resolve(REPO / "stacks" / "cu128-py310.yaml", KB(TEST_KB_DIR))
    pins = [lockfile.Pin("torch", "2.10.0", "0" * 64, "t.whl"), lockfile.Pin("nvidia-cuda-runtime-cu12", "12.6.77", "0" * 64, "r.whl")]
    with pytest.raises(lockfile.LockError, match="pulls CUDA runtime 12.6.77, not CUDA 12.8"):
        lockfile._check_pins(cu128, pins)
    lockfile._check_pins(cu128, [pins[0], lockfile.Pin("nvidia-cuda-runtime-cu12", "12.8.90", "0" * 64, "r.whl")])


def test_the_lock_names_its_sources_as_pip_option_lines_before_the_pins(report, cpu_stack):
    sources = lockfile.Sources.of("http://127.0.0.1:9/simple", ["http://127.0.0.1:9/simple", "https://pypi.org/simple"], ["../wheels"])
    text = lockfile.render_lock(cpu_stack, lockfile.pins_from_report(report), "stacks/cpu-py311.yaml", sources)
    options = [line for line in text.splitlines() if line.startswith("--")]
    assert options == ["--index-url http://127.0.0.1:9/simple", "--extra-index-url https://pypi.org/simple",
                       "--find-links ../wheels", "--only-binary=:all:", "--require-hashes"]
    assert text.index("--require-hashes\n") < text.index("click==")
    assert lockfile.Sources.read(text) == sources
    # Without sources given, the stack's own indexes (what the committed CPU lock names).
    default = lockfile.render_lock(cpu_stack, lockfile.pins_from_report(report), "stacks/cpu-py311.yaml")
    assert lockfile.Sources.read(default) == lockfile.Sources(cpu_stack.index_url, cpu_stack.extra_index_urls)


def test_a_local_find_links_folder_is_recorded_relative_to_the_lock_folder(report, cpu_stack, tmp_path, monkeypatch):
    monkeypatch.setattr(lockfile, "resolve_pins", lambda *a, **k: lockfile.pins_from_report(report))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wheels").mkdir()
    result = lockfile.lock(cpu_stack, "stacks/cpu-py311.yaml", tmp_path / "lockfiles" / "cpu-py311",
                           index_url="http://127.0.0.1:9/simple", extra_index_urls=[], find_links=["wheels"], pip="26.3")
    assert result.sources == lockfile.Sources("http://127.0.0.1:9/simple", (), ("../../wheels",))
    mirrored = lockfile.lock(cpu_stack, "stacks/cpu-py311.yaml", tmp_path / "m", index_url="http://127.0.0.1:9/simple",
                             find_links=["wheels"], record_stack_indexes=True, pip="26.3")
    assert mirrored.sources == lockfile.Sources(cpu_stack.index_url, cpu_stack.extra_index_urls)


@pytest.mark.parametrize("have, ok", [("23.2.1", False), ("23.3", True), ("26.3", True), (None, False)])
def test_lock_needs_pip_23_3_and_says_how_to_upgrade(have, ok):
    if ok:
        assert lockfile.check_pip("/venv/bin/python", version=have) == have
        return
    # None stands for "no pip module": check_pip asks a Python that has none.
    with pytest.raises(lockfile.LockError) as err:
        if have is None:
            lockfile.check_pip("/nonexistent/bin/python")
        else:
            lockfile.check_pip("/venv/bin/python", version=have)
    message = str(err.value)
    if have is None:
        assert "/nonexistent/bin/python has no pip module" in message and "ensurepip" in message
    else:
        assert f"needs pip >= 23.3" in message and f"/venv/bin/python has pip {have}" in message
        assert "`/venv/bin/python -m pip install --upgrade 'pip>=23.3'`" in message and "pipx runpip fwdoctor" in message


def test_the_pip_that_runs_fwdoctor_here_is_found_and_new_enough():
    import sys

    import pip

    assert lockfile.pip_version(sys.executable) == pip.__version__
