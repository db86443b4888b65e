"""`check --root` on a root unpacked from Debian 12's real packages (nvidia-cuda-toolkit
11.8, nvidia-cuda-dev headers, libcuda1/libnvidia-ml1/nvidia-smi 535.261.03, gcc 12 and
g++-11; see tests/debian_cuda.py), with a torch cu130 venv on top. Slow: a cold cache
downloads ~1 GB from deb.debian.org (about 35 s here); skipped without network to Debian."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import ROOTS

from debian_cuda import Unavailable, build_root

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("use_test_kb")]


@pytest.fixture(scope="module")
def debian_root(tmp_path_factory):
    try:
        root = build_root()
    except (Unavailable, subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"Debian packages not available: {exc}")
    # the torch 2.14.1+cu130 venv of the fixture roots (copied once into the cache root)
    if not (root / "opt/venv").exists():
        shutil.copytree(ROOTS / "toolkit-debian-11.8/opt", root / "opt", symlinks=True)
    if not (root / "usr/bin/python3.11").exists():
        shutil.copy2(ROOTS / "toolkit-debian-11.8/usr/bin/python3.11", root / "usr/bin/python3.11", follow_symlinks=False)
    env = tmp_path_factory.mktemp("env") / "fixture.env"
    env.write_text("VIRTUAL_ENV=/opt/venv\nPATH=/opt/venv/bin:/usr/bin:/bin\n")
    return root, env


def test_the_real_packages_give_version_compiler_and_driver_libraries(cli, debian_root):
    root, env = debian_root
    data = json.loads(cli("facts", "--root", str(root), "--env-file", str(env)).output)
    facts = {k: v.get("value") for k, v in data.get("facts", data).items()}
    (tk,) = facts["cuda.toolkits"]
    assert tk["root"] == "/usr/lib/nvidia-cuda-toolkit" and tk["nvcc"] == "/usr/lib/nvidia-cuda-toolkit/bin/nvcc"
    assert tk["versions"] == {"dpkg nvidia-cuda-toolkit": "11.8.89", "cuda.h": "11.8"} and not tk["versions_disagree"]
    assert tk["host_gcc_max"] == "11"
    assert facts["compilers.gcc_default"]["version"] == "12"
    host = facts["compilers.nvcc_host"]
    assert (host["path"], host["version"]) == ("/usr/bin/gcc-11", "11")
    libs = {(lib["name"], lib["version"]) for lib in facts["driver.userspace_libs"]}
    assert libs == {("libcuda", "535.261.03"), ("libnvidia-ml", "535.261.03")}


def test_check_on_the_real_packages_finds_the_torch_mismatch_and_no_compiler_problem(check_json, debian_root):
    root, env = debian_root
    _, report = check_json("--root", str(root), "--env-file", str(env))
    ids = {(f["id"], f["severity"]) for f in report["findings"]}
    assert ("torch-toolkit-mismatch", "error") in ids
    assert not {i for i, _ in ids} & {"host-compiler-unsupported", "probe-failed"}
    skipped = {n["rule"] for n in report["not_checked"]}
    assert not skipped & {"torch-toolkit-mismatch", "host-compiler-unsupported"}


def test_the_committed_fixture_matches_the_real_packages(debian_root):
    root, _ = debian_root
    fixture = ROOTS / "toolkit-debian-11.8"
    for rel in ("usr/bin/nvcc", "etc/nvcc.profile", "usr/include/crt/host_config.h", "usr/lib/nvidia-cuda-toolkit/bin/gcc", "usr/lib/nvidia-cuda-toolkit/bin/g++"):
        assert (fixture / rel).read_bytes() == (root / rel).read_bytes(), rel
    head = (fixture / "usr/include/cuda.h").read_bytes()
    assert (root / "usr/include/cuda.h").read_bytes().startswith(head)


@pytest.mark.parametrize(
    "env, expected",
    [
        # 11.8 ignores NVCC_CCBIN: it runs `gcc` from PATH (nvcc.profile's wrapper folder first)
        ({"NVCC_CCBIN": "/usr/bin/gcc-12"}, "gcc"),
        ({"NVCC_PREPEND_FLAGS": "-ccbin /usr/bin/gcc-12"}, "/usr/bin/gcc-12"),
        ({"NVCC_PREPEND_FLAGS": "-ccbin /usr/bin/x86_64-linux-gnu-gcc-12", "NVCC_APPEND_FLAGS": "-ccbin /usr/bin/gcc-12"}, "/usr/bin/gcc-12"),
    ],
)
def test_the_real_debian_nvcc_picks_its_host_compiler_as_the_probe_assumes(debian_root, env, expected, tmp_path):
    from fwdoctor.probes.compilers import nvcc_reads_ccbin_env
    from test_toolkit_layouts import dryrun_compiler

    root, _ = debian_root
    nvcc = root / "usr/lib/nvidia-cuda-toolkit/bin/nvcc"
    assert dryrun_compiler(str(nvcc), env, tmp_path) == expected
    assert nvcc_reads_ccbin_env("11.8.89") is False
