"""The frozen test KB (tests/kb, see its README.md): it loads and validates like the shipped
one, and a correct update of the shipped KB (one more torch release, one more CUDA minor)
loads too and moves no logic test, because the logic tests read tests/kb."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.version import Version

import fwdoctor.kb
from conftest import TEST_KB_DIR
from fwdoctor.kb import KB, KB_DIR, KB_ENV
from fwdoctor import selection as sel

REPO = Path(__file__).resolve().parents[1]
# Logic tests whose answers come from KB rows (select, rules, plans, stack resolution,
# golden Dockerfiles and locks, whole `check` runs). Their freshness checks of the committed
# lockfiles/ and dockerfiles/ read the shipped KB on purpose and are left out (-k).
LOGIC_TESTS = (
    "tests/test_select_torch.py",
    "tests/test_rules_torch.py",
    "tests/test_rules_toolkit.py",
    "tests/test_rules_libs.py",
    "tests/test_rules_driver.py",
    "tests/test_recipe_plans.py",
    "tests/test_stack_resolve.py",
    "tests/test_dockerfile_golden.py",
    "tests/test_lock_render.py",
    "tests/test_lock_check.py",
    "tests/test_check_torch_roots.py",
    "tests/test_check_toolkit_roots.py",
    "tests/test_check_libs_roots.py",
    "tests/test_check_driver_roots.py",
    "tests/test_cli_core.py",
    "tests/test_probe_gpus.py",
)
SHIPPED_ONLY = "not committed"
EXTRA_SOURCE = "S-TEST-NEXT"


def _next_minor(version: str) -> str:
    v = Version(version)
    return f"{v.major}.{v.minor + 1}"


def extend_shipped_kb(folder: Path) -> tuple[str, str]:
    """Copy the shipped KB into `folder` and add, in its own format, the next torch release
    after its newest and the next CUDA minor after its horizon, as a real update would.
    Computed from the shipped files, so this still adds something new after they grow.
    Returns (torch release, CUDA minor) added, e.g. ("2.16.0", "13.6")."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in KB_DIR.glob("*.yaml"):
        shutil.copy(path, folder / path.name)

    cuda: dict[str, Any] = yaml.safe_load((folder / "cuda.yaml").read_text(encoding="utf-8"))
    new_cuda = _next_minor(str(cuda["horizon"]["cuda"]))
    major = Version(new_cuda).major
    newest_driver = max((Version(str(r["driver"])) for r in cuda["toolkit_drivers"]))
    cuda.setdefault("sources", {})[EXTRA_SOURCE] = "invented by tests/test_test_kb.py: the next release's notes"
    cuda["horizon"] = {"cuda": new_cuda, "confidence": "C", "source": EXTRA_SOURCE}
    for row in cuda["minor_compat"]:
        if row["cuda_major"] == major:
            row["latest_minor"] = new_cuda
    cuda["toolkit_drivers"].append(
        {"cuda": f"{new_cuda}.0", "release": "GA", "driver": f"{newest_driver.major + 10}.20.01", "confidence": "C", "source": EXTRA_SOURCE}
    )
    (folder / "cuda.yaml").write_text(yaml.safe_dump(cuda, sort_keys=False), encoding="utf-8")

    torch: dict[str, Any] = yaml.safe_load((folder / "torch.yaml").read_text(encoding="utf-8"))
    newest = max(torch["releases"], key=lambda r: Version(str(r["torch"])))
    new_minor = _next_minor(str(newest["torch"]))
    new_variant = "cu" + new_cuda.replace(".", "")
    sass = "7.5;8.0;8.6;9.0;10.0;12.0"
    torch["sources"][EXTRA_SOURCE] = "invented by tests/test_test_kb.py: the next release's RELEASE.md"
    torch["releases"].append({
        "torch": new_minor,
        "pythons": list(newest["pythons"]),
        "pypi_default": new_variant,
        "source": [EXTRA_SOURCE],
        "patches": [{"version": f"{new_minor}.0", "torchvision": None, "torchaudio": None, "source": EXTRA_SOURCE}],
        "variants": [
            {"variant": "cu126", "cuda": "12.6", "arch_list": "5.0;6.0;7.0;7.5;8.0;8.6;9.0", "cudnn": "9.10.2.21", "nccl": "2.29.3", "source": [EXTRA_SOURCE]},
            {"variant": "cu130", "cuda": "13.0", "arch_list": sass, "cudnn": "9.26.0.51", "nccl": "2.30.7", "source": [EXTRA_SOURCE]},
            {"variant": new_variant, "cuda": new_cuda, "arch_list": sass, "cudnn": "9.26.0.51", "nccl": "2.30.7", "source": [EXTRA_SOURCE]},
            {"variant": "cpu", "source": [EXTRA_SOURCE]},
        ],
    })
    (folder / "torch.yaml").write_text(yaml.safe_dump(torch, sort_keys=False), encoding="utf-8")
    return f"{new_minor}.0", new_cuda


@pytest.fixture(scope="module")
def extended(tmp_path_factory) -> tuple[Path, str, str]:
    folder = tmp_path_factory.mktemp("shipped-kb-plus-one")
    torch_release, cuda_minor = extend_shipped_kb(folder)
    return folder, torch_release, cuda_minor


def test_the_test_kb_copies_every_shipped_kb_file_and_passes_the_same_validation(test_kb):
    assert sorted(p.name for p in TEST_KB_DIR.glob("*.yaml")) == sorted(p.name for p in KB_DIR.glob("*.yaml"))
    KB.load(TEST_KB_DIR, validate_all=True)  # raises KBError naming the file and row otherwise
    assert test_kb.directory == TEST_KB_DIR and test_kb.torch.versions()


def test_the_test_kb_readme_names_the_commit_it_was_copied_from():
    text = (TEST_KB_DIR / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\b[0-9a-f]{40}\b", text) and re.search(r"\b\d{4}-\d{2}-\d{2}\b", text)
    assert "not** updated when the shipped KB is" in text


def test_the_shipped_kb_plus_one_torch_release_and_one_cuda_minor_loads_and_validates(extended):
    folder, torch_release, cuda_minor = extended
    kb = KB.load(folder, validate_all=True)
    assert torch_release in kb.torch.versions() and Version(torch_release) > Version(KB.load(KB_DIR).torch.versions()[-1])
    row = kb.torch.variant_for(f"{torch_release}+cu{cuda_minor.replace('.', '')}")
    assert row is not None and row.cuda == cuda_minor and row.arch_list is not None
    assert kb.torch.pypi_default(torch_release) == row
    assert kb.cuda.toolkit_driver(cuda_minor) is not None
    assert kb.cuda.driver_floor(cuda_minor) == kb.cuda.driver_floor(f"{Version(cuda_minor).major}.0")


def test_a_shipped_kb_update_moves_the_shipped_kbs_answer_but_not_the_test_kbs(extended, test_kb, cli, monkeypatch):
    folder, torch_release, _ = extended
    monkeypatch.setattr(fwdoctor.kb, "KB_DIR", folder)  # as if doctor/kb had been updated

    def choice(kb: KB) -> str:
        target = sel.target_from_facts(None, kb, driver="535.104.05", gpus=["9.0"], python="3.11", torch_spec="", cuda=None)
        return sel.select_torch(kb, target).choice.local_version

    # The answer test_select_torch.py asserts moves with the update (KB() is what logic tests
    # used to read) ...
    assert choice(KB()) == f"{torch_release}+cu126"
    # ... but not where the logic tests read now: the test_kb fixture and, for commands,
    # FWDOCTOR_KB (the use_test_kb fixture).
    assert choice(test_kb) == "2.14.1+cu126"
    monkeypatch.setenv(KB_ENV, str(TEST_KB_DIR))
    assert choice(KB()) == "2.14.1+cu126"
    result = cli("select", "torch", "--driver", "535.104.05", "--gpu", "9.0", "--python", "3.11")
    assert result.exit_code == 0 and "torch 2.14.1+cu126  (CUDA 12.6, from the PyTorch index)" in result.output


def test_the_logic_tests_pass_unchanged_when_the_shipped_kb_gains_a_release(extended, tmp_path):
    folder, torch_release, _ = extended
    # A plugin loaded before any test module points the shipped-KB path at the extended copy
    # in a child pytest, and records what a plain KB() then sees. Before tests/kb existed,
    # 9 of these tests failed this way (select, rules, golden plans, check roots).
    seen = tmp_path / "seen.txt"
    (tmp_path / "fwd_extended_kb.py").write_text(
        "from pathlib import Path\n"
        "import fwdoctor.kb\n"
        f"fwdoctor.kb.KB_DIR = Path({str(folder)!r})\n"
        "def pytest_sessionstart(session):\n"
        f"    Path({str(seen)!r}).write_text(fwdoctor.kb.KB().torch.versions()[-1])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != KB_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "fwd_extended_kb",
            "-m", "not docker and not gpu and not slow", "-k", SHIPPED_ONLY, *LOGIC_TESTS]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert seen.read_text() == torch_release, "the child run did not see the extended shipped KB"
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", done.stdout) and " failed" not in done.stdout
