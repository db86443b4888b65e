"""The local conda channel (tests/condachannel.py) is a real channel: real package files that
conda_package_handling reads back, an index py-rattler's solver uses over file:// and http, and
packages py-rattler's installer installs into a working prefix."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

import pytest

from conftest import require_module

from tests import condachannel as cc

rattler = require_module("rattler", "pip install 'fwdoctor[conda]'")

SPECS = ["python=3.11", "pytorch=2.5.1", "cuda-version=12.6", "cudnn", "nccl", "cuda-nvcc"]


@pytest.fixture(scope="module")
def channel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cc.build_gpu_channel(tmp_path_factory.mktemp("channel"))


def _virtual(cuda: str | None) -> list:
    pairs = [("__glibc", "2.36"), ("__linux", "6.1"), ("__unix", "0")] + ([("__cuda", cuda)] if cuda else [])
    return [rattler.GenericVirtualPackage(rattler.PackageName(n), rattler.Version(v), rattler.BuildString("0")) for n, v in pairs]


def _solve(url: str, specs: list[str], cuda: str | None, cache: Path) -> dict[str, object]:
    records = asyncio.run(rattler.solve([url], [rattler.MatchSpec(s) for s in specs], gateway=rattler.Gateway(cache_dir=cache),
                                        platforms=["linux-64", "noarch"], virtual_packages=_virtual(cuda)))
    return {r.name.normalized: r for r in records}


def test_same_inputs_give_byte_identical_packages_and_index(channel: Path, tmp_path: Path) -> None:
    again = cc.build_gpu_channel(tmp_path / "again")
    first = {p.relative_to(channel): hashlib.sha256(p.read_bytes()).hexdigest() for p in channel.rglob("*") if p.is_file()}
    second = {p.relative_to(again): hashlib.sha256(p.read_bytes()).hexdigest() for p in again.rglob("*") if p.is_file()}
    assert first == second
    assert Path("linux-64/repodata.json") in first and Path("noarch/repodata.json") in first


def test_repodata_records_describe_the_files(channel: Path) -> None:
    repodata = json.loads((channel / "linux-64" / "repodata.json").read_text())
    assert repodata["info"]["subdir"] == "linux-64"
    records = repodata["packages"]
    files = sorted(p.name for p in (channel / "linux-64").glob("*.tar.bz2"))
    assert sorted(records) == files
    for filename, record in records.items():
        data = (channel / "linux-64" / filename).read_bytes()
        assert record["sha256"] == hashlib.sha256(data).hexdigest()
        assert record["md5"] == hashlib.md5(data).hexdigest()
        assert record["size"] == len(data)
        assert filename == f"{record['name']}-{record['version']}-{record['build']}.tar.bz2"
        assert record["timestamp"] == cc.TIMESTAMP_MS
    cuda_torch = [r for r in records.values() if r["name"] == "pytorch" and r["build"].startswith("cuda126_py311_")]
    assert len(cuda_torch) == 1 and cuda_torch[0]["build"].endswith("_300") and cuda_torch[0]["build_number"] == 300
    assert {"__cuda", "cuda-version >=12.6,<13.0a0", "python_abi 3.11.* *_cp311"} <= set(cuda_torch[0]["depends"])
    assert any(r["name"] == "pytorch" and r["build"].startswith("cpu_py311_") and r["build_number"] == 100 for r in records.values())
    noarch = json.loads((channel / "noarch" / "repodata.json").read_text())["packages"]
    assert [r["name"] for r in noarch.values()] == ["cuda-version"]


def test_package_files_read_back_with_conda_package_handling(channel: Path, tmp_path: Path) -> None:
    from conda_package_handling import api

    package = next((channel / "linux-64").glob("cudnn-9.3.0.75-cuda12_*.tar.bz2"))
    with tarfile.open(package) as tar:
        names = tar.getnames()
        assert names[:4] == ["info/about.json", "info/files", "info/index.json", "info/paths.json"]
        assert {m.uid for m in tar.getmembers()} == {0} and {m.mtime for m in tar.getmembers()} == {cc.EPOCH_S}
    api.extract(str(package), str(tmp_path / "x"))
    index = json.loads((tmp_path / "x" / "info" / "index.json").read_text())
    assert (index["name"], index["version"], index["subdir"]) == ("cudnn", "9.3.0.75", "linux-64")
    paths = json.loads((tmp_path / "x" / "info" / "paths.json").read_text())["paths"]
    hardlinks = {p["_path"]: p for p in paths if p["path_type"] == "hardlink"}
    data = (tmp_path / "x" / "lib" / "libcudnn.so.9.3.0").read_bytes()
    assert data[:4] == b"\x7fELF" and hardlinks["lib/libcudnn.so.9.3.0"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert os.readlink(tmp_path / "x" / "lib" / "libcudnn.so.9") == "libcudnn.so.9.3.0"


def test_dot_conda_format_made_by_conda_package_handling(tmp_path: Path) -> None:
    from conda_package_handling import api

    pkg = cc.Pkg("demo", "1.0", "h0000000_0", 0, files={"share/demo.txt": "hello\n"})
    channel = cc.build_channel(tmp_path / "ch", [pkg], fmt=".conda")
    records = json.loads((channel / "linux-64" / "repodata.json").read_text())
    assert list(records["packages.conda"]) == ["demo-1.0-h0000000_0.conda"] and records["packages"] == {}
    api.extract(str(channel / "linux-64" / "demo-1.0-h0000000_0.conda"), str(tmp_path / "x"))
    assert (tmp_path / "x" / "share" / "demo.txt").read_text() == "hello\n"


def test_rattler_solves_the_cuda_build_over_file_and_http(channel: Path, tmp_path: Path) -> None:
    over_file = _solve(cc.file_url(channel), SPECS, "12.6", tmp_path / "c1")
    assert str(over_file["pytorch"].build).startswith("cuda126_py311_")
    assert over_file["pytorch"].url.startswith("file://")
    with cc.serve(channel) as url:
        with urllib.request.urlopen(f"{url}/linux-64/repodata.json", timeout=10) as answer:
            assert json.load(answer)["info"]["subdir"] == "linux-64"
        over_http = _solve(url, SPECS, "12.6", tmp_path / "c2")
    assert over_http["pytorch"].url.startswith(url + "/linux-64/pytorch-2.5.1-cuda126_py311_")
    assert {n: r.sha256 for n, r in over_file.items()} == {n: r.sha256 for n, r in over_http.items()}
    assert set(over_file) >= {"python", "python_abi", "pytorch", "cuda-version", "cudnn", "nccl", "cuda-nvcc", "cuda-cudart", "libstdcxx-ng"}


def test_without_cuda_virtual_package_the_cpu_build_is_chosen(channel: Path, tmp_path: Path) -> None:
    solved = _solve(cc.file_url(channel), ["python=3.11", "pytorch=2.5.1"], None, tmp_path / "c")
    assert str(solved["pytorch"].build).startswith("cpu_py311_")
    with pytest.raises(Exception, match="__cuda"):
        _solve(cc.file_url(channel), ["python=3.11", "pytorch=2.5.1=cuda126*"], None, tmp_path / "c")


def test_rattler_installs_a_working_prefix(channel: Path, tmp_path: Path) -> None:
    if not os.path.exists(cc.HOST_PYTHON):
        pytest.skip(f"the python stand-in links to {cc.HOST_PYTHON}, absent here")
    records = asyncio.run(rattler.solve([cc.file_url(channel)], [rattler.MatchSpec(s) for s in SPECS + ["libstdcxx-ng=11.2"]],
                                        gateway=rattler.Gateway(cache_dir=tmp_path / "c"), platforms=["linux-64", "noarch"],
                                        virtual_packages=_virtual("12.6")))
    prefix = tmp_path / "env"
    asyncio.run(rattler.install(records, target_prefix=prefix, cache_dir=tmp_path / "pkgs"))
    meta = {p.name for p in (prefix / "conda-meta").glob("*.json")}
    torch_meta = next(m for m in meta if m.startswith("pytorch-2.5.1-cuda126_py311_"))
    assert json.loads((prefix / "conda-meta" / torch_meta).read_text())["build"].startswith("cuda126_py311_")
    done = subprocess.run([str(prefix / "bin" / "python"), "-c", "import sys, torch; print(sys.prefix, torch.__version__, torch.version.cuda)"],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == [str(prefix), "2.5.1", "12.6"], done.stderr
    nvcc = subprocess.run([str(prefix / "bin" / "nvcc"), "--version"], capture_output=True, text=True, timeout=60)
    assert "Cuda compilation tools, release 12.6, V12.6.85" in nvcc.stdout
    assert (prefix / "targets" / "x86_64-linux" / "include" / "cuda_runtime_api.h").is_file()
    assert os.path.realpath(prefix / "lib" / "libstdc++.so.6").endswith("libstdc++.so.6.0.29")


def test_old_libstdcxx_gives_the_real_loader_error(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "libstdc++.so.6").write_bytes(cc.libstdcxx_so(cc.GLIBCXX_OF_GCC["11.2.0"]))
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "libstdc++.so.6").write_bytes(cc.libstdcxx_so(cc.GLIBCXX_OF_GCC["12.2.0"]))
    (tmp_path / "needs.so").write_bytes(cc.needs_glibcxx_so(30))
    load = f"import ctypes; ctypes.CDLL({str(tmp_path / 'needs.so')!r})"
    old = subprocess.run([sys.executable, "-c", load], env={"LD_LIBRARY_PATH": str(tmp_path / "old")}, capture_output=True, text=True, timeout=60)
    assert old.returncode != 0 and "version `GLIBCXX_3.4.30' not found" in old.stderr
    new = subprocess.run([sys.executable, "-c", load], env={"LD_LIBRARY_PATH": str(tmp_path / "new")}, capture_output=True, text=True, timeout=60)
    assert new.returncode == 0, new.stderr


def test_the_committed_channel_is_what_the_builder_makes(tmp_path: Path) -> None:
    """lockfiles/conda-cu126-local/channel was made by `python -m tests.condachannel build DEST
    --with-pip-standin` on Debian 12 (cc 12.2.0): rebuilding gives the same bytes, so its lock's
    hashes are reproducible. The .so stand-ins are compiled, so another compiler may differ."""
    version = subprocess.run([cc._cc(), "--version"], capture_output=True, text=True, timeout=60).stdout.splitlines()[0]
    if not version.endswith(" 12.2.0"):
        pytest.skip(f"the committed channel's ELF files were compiled with cc 12.2.0; this one is {version!r}")
    committed = Path(__file__).resolve().parent.parent / "lockfiles" / "conda-cu126-local" / "channel"
    assert cc.main(["build", str(tmp_path / "ch"), "--with-pip-standin"]) == 0
    rebuilt = {p.relative_to(tmp_path / "ch"): p.read_bytes() for p in (tmp_path / "ch").rglob("*") if p.is_file()}
    assert rebuilt == {p.relative_to(committed): p.read_bytes() for p in committed.rglob("*") if p.is_file()}
    pip = json.loads((committed / "noarch" / "repodata.json").read_text())["packages"]
    assert [(r["name"], r["version"], r["noarch"]) for r in pip.values() if r["name"] == "pip"] == [("pip", "24.2", "python")]
