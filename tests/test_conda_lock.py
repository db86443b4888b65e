"""`fwdoctor lock` for stacks with conda packages: conda-lock.yml in conda-lock's unified format,
solved by py-rattler where no conda solver executable exists (here: always) and by conda-lock
itself driving a solver executable where one does, and `lock --check` catching every kind of
tampering record by record.

Solver paths: every test runs the py-rattler path for real, except
test_conda_lock_library_path_*, which runs conda-lock's own make_lock_files with
tests/conda_solver_standin.py as `micromamba` (no conda, mamba or micromamba can be installed
here: no conda channel is reachable; the stand-in answers micromamba's `create --dry-run
--json` with py-rattler's solve, everything else is conda-lock's code). The channel is the
local one of tests/condachannel.py (real package files and index, stand-in payloads)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_module
import yaml

from fwdoctor.recipes import conda_lock as cl
from fwdoctor.recipes import lockfile
from fwdoctor.recipes.stack import ResolvedStack
from tests import condachannel as cc

require_module("rattler", "pip install 'fwdoctor[conda]'")
require_module("conda_lock", "pip install 'fwdoctor[conda]'")

REPO = Path(__file__).resolve().parent.parent
COMMITTED = "conda-cu126-local"
COMMITTED_PORT = 38417  # the port stacks/conda-cu126-local.yaml names
SPECS = ("python=3.11", "pytorch=2.5.1=cuda126*", "cuda-version=12.6", "cudnn", "nccl")


def make_stack(channel_url: str, specs: tuple[str, ...] = SPECS, cuda: str | None = "12.6") -> ResolvedStack:
    """The resolved form of a conda stack (what `stack resolve` gives for the YAML in
    test_cli_lock_then_check_a_conda_stack), built directly to test the lock on its own."""
    return ResolvedStack(name="conda-test", python="3.11", torch="2.5.1", variant="cu126" if cuda else "cpu", cuda=cuda,
                         os="ubuntu24.04", base_image="nvidia/cuda:12.6.3-base-ubuntu24.04", python_from_base=False,
                         os_family="ubuntu", glibc="2.39", index_url="https://pypi.org/simple", extra_index_urls=(),
                         requirements=(), arch_list=None, conda=specs, conda_channels=(channel_url,), conda_platforms=("linux-64",))


@pytest.fixture(autouse=True)
def no_solver_executable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """This machine has no conda/mamba/micromamba; make sure no test finds one by accident."""
    for var in cl.SOLVER_ENV:
        monkeypatch.delenv(var, raising=False)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin")
    assert cl.find_solver_executable() is None


@pytest.fixture(scope="module")
def channel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cc.build_gpu_channel(tmp_path_factory.mktemp("channel"))


@pytest.fixture
def served(channel: Path):
    with cc.serve(channel) as url:
        yield url + "/"


def lock_into(stack: ResolvedStack, out: Path, solver: cl.Solver | None = None) -> cl.Solver:
    _written, used = cl.lock(stack, "stacks/conda-test.yaml", out, solver=solver)
    return used


# --------------------------------------------------------------------------- the format
def test_rattler_path_writes_conda_lock_unified_format(channel: Path, tmp_path: Path) -> None:
    from conda_lock.lockfile import parse_conda_lock_file
    from conda_lock.lockfile.v1.models import Lockfile as LockfileV1

    stack = make_stack(cc.file_url(channel))
    solver = lock_into(stack, tmp_path)
    assert solver.kind == "py-rattler" and solver.version == "0.28.0"
    text = (tmp_path / cl.CONDA_LOCK_NAME).read_text()
    assert text.splitlines()[1].startswith("# solver: py-rattler 0.28.0 (no conda, mamba or micromamba executable found)")
    data = yaml.safe_load(text)
    assert data["version"] == 1
    LockfileV1.model_validate({k: v for k, v in data.items() if k != "version"})  # conda-lock's own model
    meta = data["metadata"]
    assert list(meta["content_hash"]) == ["linux-64"] and re.fullmatch(r"[0-9a-f]{64}", meta["content_hash"]["linux-64"])
    assert [c["url"] for c in meta["channels"]] == [cc.file_url(channel)]
    assert meta["platforms"] == ["linux-64"] and meta["sources"] == ["environment.yml"]
    assert meta["custom_metadata"]["fwdoctor_solver"].startswith("py-rattler 0.28.0")
    names = {p["name"] for p in data["package"]}
    assert names == {"_libgcc_mutex", "cuda-cudart", "cuda-version", "cudnn", "libgcc-ng", "libstdcxx-ng", "nccl", "python",
                     "python_abi", "pytorch"}  # no __cuda/__glibc: virtual packages are not locked
    repodata = {**json.loads((channel / "linux-64" / "repodata.json").read_text())["packages"],
                **json.loads((channel / "noarch" / "repodata.json").read_text())["packages"]}
    for package in data["package"]:
        assert set(package) == {"name", "version", "manager", "platform", "dependencies", "url", "hash", "build", "category", "optional"}
        assert (package["manager"], package["platform"], package["category"], package["optional"]) == ("conda", "linux-64", "main", False)
        filename = package["url"].rsplit("/", 1)[1]
        data_bytes = Path(package["url"].removeprefix("file://")).read_bytes()
        assert package["hash"] == {"md5": hashlib.md5(data_bytes).hexdigest(), "sha256": hashlib.sha256(data_bytes).hexdigest()}
        assert repodata[filename]["sha256"] == package["hash"]["sha256"]
    torch = next(p for p in data["package"] if p["name"] == "pytorch")
    assert torch["build"].startswith("cuda126_py311_") and torch["version"] == "2.5.1"
    assert torch["dependencies"]["cuda-version"] == ">=12.6,<13.0a0" and torch["dependencies"]["python_abi"] == "3.11.*"
    # conda-lock reads it back (and sorts it topologically) as its own.
    parsed = parse_conda_lock_file(tmp_path / cl.CONDA_LOCK_NAME)
    assert {p.name for p in parsed.package} == names
    assert (tmp_path / "environment.yml").read_text() == cl.environment_yml(stack)
    assert yaml.safe_load((tmp_path / "virtual-packages.yml").read_text()) == {
        "subdirs": {"linux-64": {"packages": {"__unix": "0", "__linux": "5.10", "__glibc": "2.39", "__archspec": "1 x86_64", "__cuda": "12.6"}}}}


def test_read_conda_lock_gives_every_record(channel: Path, tmp_path: Path) -> None:
    lock_into(make_stack(cc.file_url(channel)), tmp_path)
    records = cl.read_conda_lock(tmp_path / cl.CONDA_LOCK_NAME)
    torch = next(r for r in records if r.name == "pytorch")
    assert torch.platform == "linux-64" and torch.build.startswith("cuda126_py311_") and torch.filename.endswith(".tar.bz2")
    assert "cudnn >=9.3.0.75,<10.0a0" in torch.depends and "__cuda" in torch.depends
    assert all(len(r.md5) == 32 and len(r.sha256) == 64 and r.url.startswith("file://") for r in records)
    with pytest.raises(ValueError, match="not a conda-lock lockfile version 1"):
        (tmp_path / "bad.yml").write_text("version: 2\n")
        cl.read_conda_lock(tmp_path / "bad.yml")


def test_the_same_stack_and_channel_give_the_same_bytes(channel: Path, tmp_path: Path) -> None:
    stack = make_stack(cc.file_url(channel))
    lock_into(stack, tmp_path / "a")
    lock_into(stack, tmp_path / "b")
    for name in (cl.CONDA_LOCK_NAME, cl.ENV_NAME, cl.VIRTUAL_NAME):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_conda_lock_cli_renders_our_lock(channel: Path, tmp_path: Path) -> None:
    """conda-lock's own command line takes the file (render needs no solver)."""
    lock_into(make_stack(cc.file_url(channel)), tmp_path)
    done = subprocess.run([sys.executable, "-m", "conda_lock", "render", "--kind", "explicit", "--platform", "linux-64", cl.CONDA_LOCK_NAME],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    explicit = (tmp_path / "conda-linux-64.lock").read_text().splitlines()
    assert "@EXPLICIT" in explicit
    urls = [l for l in explicit if l.startswith("file://")]
    records = cl.read_conda_lock(tmp_path / cl.CONDA_LOCK_NAME)
    assert sorted(urls) == sorted(f"{r.url}#{r.md5}" for r in records)


def test_cpu_target_gets_the_cpu_build_and_a_cuda_build_needs_cuda(channel: Path, tmp_path: Path) -> None:
    cpu = make_stack(cc.file_url(channel), ("python=3.11", "pytorch=2.5.1"), cuda=None)
    lock_into(cpu, tmp_path / "cpu")
    torch = next(r for r in cl.read_conda_lock(tmp_path / "cpu" / cl.CONDA_LOCK_NAME) if r.name == "pytorch")
    assert torch.build.startswith("cpu_py311_")
    assert "__cuda" not in (tmp_path / "cpu" / cl.VIRTUAL_NAME).read_text()
    with pytest.raises(cl.CondaLockError, match=r"py-rattler could not solve linux-64 .*__cuda"):
        lock_into(make_stack(cc.file_url(channel), SPECS, cuda=None), tmp_path / "nocuda")


# --------------------------------------------------------------------------- the solvers
def _executable(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_solver_executable_lookup(tmp_path: Path) -> None:
    conda_exe = _executable(tmp_path / "opt" / "conda" / "bin" / "conda")
    mamba_exe = _executable(tmp_path / "mm" / "micromamba")
    on_path = _executable(tmp_path / "bin" / "mamba")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "conda").write_text("not executable")
    assert cl.find_solver_executable({"PATH": str(tmp_path / "plain")}) is None
    assert cl.find_solver_executable({"PATH": str(tmp_path / "bin")}) == str(on_path)
    assert cl.find_solver_executable({"PATH": str(tmp_path / "bin"), "MAMBA_EXE": str(mamba_exe)}) == str(mamba_exe)
    assert cl.find_solver_executable({"PATH": "", "CONDA_EXE": str(conda_exe), "MAMBA_EXE": str(tmp_path / "gone")}) == str(conda_exe)
    assert cl.choose_solver({"PATH": str(tmp_path / "plain")}).kind == "py-rattler"
    chosen = cl.choose_solver({"PATH": str(tmp_path / "bin")})
    assert (chosen.kind, chosen.exe) == ("conda-lock", str(on_path)) and chosen.describe() == f"conda-lock 4.0.3 with {on_path}"


def test_the_old_conda_lock_path_lookup_is_gone() -> None:
    source = Path(lockfile.__file__).read_text()
    assert 'which("conda-lock")' not in source and "conda-lock is not installed here" not in source


@pytest.fixture
def standin_micromamba(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    exe = _executable(tmp_path / "solver-bin" / "micromamba",
                      f'#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m tests.conda_solver_standin "$@"\n')
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    return exe


def test_conda_lock_library_path_with_a_solver_executable(channel: Path, tmp_path: Path, standin_micromamba: Path) -> None:
    stack = make_stack(cc.file_url(channel))
    solver = cl.choose_solver()
    assert (solver.kind, solver.exe) == ("conda-lock", str(standin_micromamba))
    lock_into(stack, tmp_path / "conda-lock", solver)
    lock_into(stack, tmp_path / "rattler", cl.Solver("py-rattler", "0.28.0"))
    text = (tmp_path / "conda-lock" / cl.CONDA_LOCK_NAME).read_text()
    assert cl.stated_solver(text) == f"conda-lock 4.0.3 with {standin_micromamba}"
    by_conda_lock = {r.name: r for r in cl.read_conda_lock(tmp_path / "conda-lock" / cl.CONDA_LOCK_NAME)}
    by_rattler = {r.name: r for r in cl.read_conda_lock(tmp_path / "rattler" / cl.CONDA_LOCK_NAME)}
    assert by_conda_lock == by_rattler  # the same records (conda-lock's conda path writes no `build`: read from the URL)
    content_hash = [yaml.safe_load((tmp_path / d / cl.CONDA_LOCK_NAME).read_text())["metadata"]["content_hash"] for d in ("conda-lock", "rattler")]
    assert content_hash[0] == content_hash[1]
    assert cl.check(stack, tmp_path / "conda-lock", solver=solver) == ([], [])
    # A lock made by one solver re-solved by the other: the records agree.
    assert cl.check(stack, tmp_path / "conda-lock", solver=cl.Solver("py-rattler", "0.28.0")) == ([], [])


# --------------------------------------------------------------------------- lock --check
def test_a_fresh_lock_checks_clean_over_http_with_every_file_hashed(channel: Path, served: str, tmp_path: Path) -> None:
    stack = make_stack(served)
    lock_into(stack, tmp_path)
    assert all(r.url.startswith(served) for r in cl.read_conda_lock(tmp_path / cl.CONDA_LOCK_NAME))
    assert cl.check(stack, tmp_path, verify_all=True) == ([], [])
    # The lock names this loopback channel, so --verify may read it over plain http.
    policy = cl.FetchPolicy.for_lock(tmp_path, [served])
    assert cl.verify_files(cl.read_conda_lock(tmp_path / cl.CONDA_LOCK_NAME), policy=policy) == ([], [])


def _restamp(text: str) -> str:
    """The lock with its body digest recomputed: a careful editor, so the record checks must
    catch the change on their own."""
    lines = [l for l in text.splitlines(keepends=True) if not l.startswith(cl.BODY_DIGEST_PREFIX)]
    digest = hashlib.sha256("".join(lines).encode()).hexdigest()
    return "".join(lines[:3]) + f"{cl.BODY_DIGEST_PREFIX}{digest}\n" + "".join(lines[3:])


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    header = "".join(l for l in path.read_text().splitlines(keepends=True) if l.startswith("#"))
    path.write_text(header + yaml.safe_dump(data, sort_keys=False))


def _package(data: dict, name: str) -> dict:
    return next(p for p in data["package"] if p["name"] == name)


TAMPERING = {
    "edited sha256": (lambda d: _package(d, "pytorch")["hash"].update(sha256="0" * 64), r"linux-64/pytorch: sha256 is '0{64}' in the lock"),
    "edited md5": (lambda d: _package(d, "cudnn")["hash"].update(md5="f" * 32), r"linux-64/cudnn: md5 is 'f{32}' in the lock"),
    "removed package": (lambda d: d["package"].remove(_package(d, "nccl")), r"linux-64/nccl: the solve has nccl 2\.23\.4\.1 cuda12_\w+, the lock does not"),
    "added package": (lambda d: d["package"].append({**_package(d, "cudnn"), "name": "cuda-nvcc", "version": "12.6.85", "build": "h0_0",
                                                      "url": _package(d, "cudnn")["url"].replace("cudnn-9.3.0.75-cuda12", "cuda-nvcc-12.6.85-h0_0").rsplit("_", 1)[0] + "_0.tar.bz2"}),
                      r"linux-64/cuda-nvcc: the lock has cuda-nvcc 12\.6\.85 h0_0, the solve does not"),
    "changed url": (lambda d: _package(d, "pytorch").update(url=_package(d, "pytorch")["url"].replace("/linux-64/", "/mirror/linux-64/")),
                    r"linux-64/pytorch: url is '.*/mirror/linux-64/pytorch-2\.5\.1-cuda126_py311_\w+\.tar\.bz2' in the lock"),
    "changed channel": (lambda d: d["metadata"]["channels"][0].update(url="https://conda.anaconda.org/conda-forge"),
                        r"metadata\.channels is \['https://conda\.anaconda\.org/conda-forge'\], the stack's conda channels are"),
    "changed version": (lambda d: _package(d, "python").update(version="3.11.9"),
                        r"linux-64/python: url .* is not the file of python-3\.11\.9-"),
}


@pytest.mark.parametrize("restamp", [False, True], ids=["digest-left", "digest-restamped"])
@pytest.mark.parametrize("kind", list(TAMPERING))
def test_check_names_the_tampered_record(channel: Path, served: str, tmp_path: Path, kind: str, restamp: bool) -> None:
    stack = make_stack(served)
    lock_into(stack, tmp_path)
    path = tmp_path / cl.CONDA_LOCK_NAME
    change, named = TAMPERING[kind]
    _edit(path, change)
    if restamp:
        path.write_text(_restamp(path.read_text()))
    problems, unverified = cl.check(stack, tmp_path)
    assert unverified == []
    assert any(re.search(named, p) for p in problems), problems
    digest_problem = any("edited after fwdoctor lock wrote it" in p for p in problems)
    assert digest_problem != restamp


def test_a_package_file_changed_on_the_channel_is_named(channel: Path, tmp_path: Path) -> None:
    # Inside the lock's folder: --verify reads file: URLs nowhere else (issue 24).
    copy = tmp_path / "lock" / "channel"
    shutil.copytree(channel, copy)
    stack = make_stack(cc.file_url(copy))
    lock_into(stack, tmp_path / "lock")
    target = next((copy / "linux-64").glob("nccl-*.tar.bz2"))
    # Same name, other bytes, index untouched: only hashing the file finds it.
    data = bytearray(target.read_bytes())
    data[-1] ^= 0xFF
    target.write_bytes(bytes(data))
    assert cl.check(stack, tmp_path / "lock") == ([], [])  # without --verify no file is read
    problems, _ = cl.check(stack, tmp_path / "lock", verify_all=True)
    assert problems == [f"{tmp_path / 'lock' / cl.CONDA_LOCK_NAME}: linux-64/nccl: {target.name} has sha256 "
                        f"{hashlib.sha256(bytes(data)).hexdigest()}, the lock states {next(r.sha256 for r in cl.read_conda_lock(tmp_path / 'lock' / cl.CONDA_LOCK_NAME) if r.name == 'nccl')}"]
    # Re-indexed: the re-solve names it first.
    cc.index_channel(copy)
    problems, _ = cl.check(stack, tmp_path / "lock", verify_all=True)
    assert re.search(r"linux-64/nccl: md5 is '\w+' in the lock, '\w+' in the solve \(re-solved with py-rattler 0\.28\.0", problems[0]), problems


def test_a_new_package_on_the_channel_makes_the_lock_stale(channel: Path, tmp_path: Path) -> None:
    copy = tmp_path / "channel"
    shutil.copytree(channel, copy)
    stack = make_stack(cc.file_url(copy))
    lock_into(stack, tmp_path / "lock")
    cc.make_package(cc.Pkg("nccl", "2.23.4.1", "cuda12_h0000000_4", 4, depends=("cuda-version >=12,<13.0a0",)), copy / "linux-64")
    cc.index_channel(copy)
    problems, _ = cl.check(stack, tmp_path / "lock")
    assert any("linux-64/nccl: version" in p or "linux-64/nccl: build is" in p for p in problems), problems


def test_an_unreachable_channel_leaves_the_lock_not_verified_not_stale(channel: Path, tmp_path: Path) -> None:
    with cc.serve(channel) as url:
        stack = make_stack(url + "/")
        lock_into(stack, tmp_path)
    problems, unverified = cl.check(stack, tmp_path)
    assert problems == []
    assert len(unverified) == 1 and "not re-solved and no package file hashed: a channel cannot be read" in unverified[0]


def test_a_changed_stack_is_stale_offline(channel: Path, tmp_path: Path) -> None:
    stack = make_stack(cc.file_url(channel))
    lock_into(stack, tmp_path)
    changed = make_stack(cc.file_url(channel), SPECS + ("cuda-nvcc",))
    problems, _ = cl.check(changed, tmp_path, resolve=False)
    assert any("made from another version of stack conda-test" in p for p in problems)
    assert any("environment.yml: differs from what fwdoctor lock writes" in p for p in problems)


# --------------------------------------------------------------------------- the command
STACK_YAML = """name: conda-test
python: "3.11"
cuda: "12.6"
conda:
  channels: [{url}]
  platforms: [linux-64]
  packages: ["python=3.11", "pytorch=2.5.1=cuda126*", "cuda-version=12.6", "cudnn", "nccl"]
"""


def _committed_pip_pins(*_args, **_kwargs) -> list[lockfile.Pin]:
    """The pip part's pins (fwdoctor's tools) as the committed conda lock has them: pip's
    resolution against pypi.org is tested by the pip lock tests, not here."""
    import tomllib

    pylock = tomllib.loads((REPO / "lockfiles" / COMMITTED / lockfile.PYLOCK_NAME).read_text())
    return [lockfile.Pin(p["name"], p["version"], p["wheels"][0]["hashes"]["sha256"], p["wheels"][0]["name"], p["wheels"][0]["url"])
            for p in pylock["packages"]]


def test_cli_lock_then_check_a_conda_stack(cli, channel: Path, served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lockfile, "resolve_pins", _committed_pip_pins)
    monkeypatch.setattr(lockfile, "check_pip", lambda version=None: "26.3")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "conda-test.yaml").write_text(STACK_YAML.format(url=served))
    result = cli("lock", "stacks/conda-test.yaml", "--out", "out", "--json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["conda_solver"] == "py-rattler 0.28.0 (no conda, mamba or micromamba executable found)"
    assert sorted(Path(p).name for p in body["written"]) == sorted(
        ["requirements.lock", "pylock.toml", "stack.resolved.yaml", "environment.yml", "virtual-packages.yml", "conda-lock.yml"])
    assert "torch" not in {p["name"] for p in body["pins"]}  # conda's pytorch; pip does not reinstall it
    result = cli("lock", "--check", "stacks/conda-test.yaml", "--out", "out")
    assert result.exit_code == 0, result.output
    assert "out/conda-lock.yml: matches stacks/conda-test.yaml\n" in result.stdout
    _edit(tmp_path / "out" / cl.CONDA_LOCK_NAME, TAMPERING["edited sha256"][0])
    result = cli("lock", "--check", "stacks/conda-test.yaml", "--out", "out", "--json")
    assert result.exit_code == 1
    problems = json.loads(result.stdout)["problems"]
    assert any(re.search(TAMPERING["edited sha256"][1], p) for p in problems), problems


def test_committed_conda_lock_is_fresh_against_its_channel(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """lockfiles/conda-cu126-local: re-solved against the committed channel served where the
    stack says, record by record (`lock --check` hashes no package file: --verify does)."""
    import time

    monkeypatch.chdir(REPO)
    deadline = time.monotonic() + 60  # another test run (or `make lockfiles`) may hold the port for a moment
    while True:
        server = cc.serve(REPO / "lockfiles" / COMMITTED / "channel", COMMITTED_PORT)
        try:
            server.__enter__()
            break
        except OSError as exc:
            if time.monotonic() > deadline:
                pytest.fail(f"cannot serve the committed channel on 127.0.0.1:{COMMITTED_PORT}: {exc}")
            time.sleep(0.5)
    try:
        result = cli("lock", "--check", f"stacks/{COMMITTED}.yaml")
    finally:
        server.__exit__(None, None, None)
    assert result.exit_code == 0, result.output
    assert f"lockfiles/{COMMITTED}/conda-lock.yml: matches stacks/{COMMITTED}.yaml\n" in result.stdout
    assert "not verified" not in result.output
    records = cl.read_conda_lock(REPO / "lockfiles" / COMMITTED / cl.CONDA_LOCK_NAME)
    assert {r.name for r in records} >= {"python", "pytorch", "cuda-version", "cudnn", "nccl"}
    assert all(r.url.startswith(f"http://127.0.0.1:{COMMITTED_PORT}/") for r in records)


# --------------------------------------------------------------------------- lock -> install -> check
def test_a_locked_stack_installs_and_check_reads_the_environment_from_its_records(channel: Path, tmp_path: Path) -> None:
    """Issue 15 item 5 end to end, offline: lock against the file:// channel, install the lock
    with the image's installer (recipes/scripts/conda_install.py: every file's hashes checked,
    rattler links), then `fwdoctor check` reads that prefix's conda-meta records."""
    installer = REPO / "recipes" / "scripts" / "conda_install.py"
    if not installer.is_file():
        pytest.skip(f"{installer} (the image's conda installer) is not here")
    if not os.path.exists(cc.HOST_PYTHON):
        pytest.skip(f"the python stand-in links to {cc.HOST_PYTHON}, absent here")
    stack = make_stack(cc.file_url(channel))
    lock_into(stack, tmp_path / "lock")
    prefix = tmp_path / "env"
    done = subprocess.run([sys.executable, str(installer), str(tmp_path / "lock" / cl.CONDA_LOCK_NAME), str(prefix)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    records = {r.name: r for r in cl.read_conda_lock(tmp_path / "lock" / cl.CONDA_LOCK_NAME)}
    env = {**os.environ, "CONDA_PREFIX": str(prefix), "PYTHONNOUSERSITE": "1"}
    checked = subprocess.run([sys.executable, "-m", "fwdoctor", "check", "--python", str(prefix / "bin" / "python"), "--json"],
                             capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    facts = json.loads(checked.stdout)["facts"]
    assert facts["conda.prefix"]["value"] == str(prefix)
    packages = facts["conda.packages"]["value"]
    assert set(packages) == set(records)
    assert all(packages[n]["fn"] == r.filename and packages[n]["build"] == r.build for n, r in records.items())
    torch = facts["conda.torch_build"]["value"]
    assert (torch["version"], torch["build"], torch["kind"], torch["cuda"]) == ("2.5.1", records["pytorch"].build, "cuda", "12.6")


def test_a_pip_part_that_pulls_torch_over_conda_s_pytorch_is_refused(channel: Path) -> None:
    """conda brings pytorch; a pip requirement whose dependencies pull torch in would put a
    second torch into the env (pip's over conda's): the lock refuses it, naming the version."""
    stack = make_stack(cc.file_url(channel))
    pins = [lockfile.Pin("torch", "2.5.1", "0" * 64, "torch-2.5.1-cp311-cp311-manylinux_2_28_x86_64.whl"),
            lockfile.Pin("filelock", "3.20.0", "1" * 64, "filelock-3.20.0-py3-none-any.whl")]
    with pytest.raises(lockfile.LockError, match=r"the pip part resolves torch 2\.5\.1 .* over the conda part's pytorch"):
        lockfile._check_pins(stack, pins)
    lockfile._check_pins(stack, pins[1:])  # no pip torch: the conda pytorch is the one
