"""conda envs installed by a real installer, then judged by `fwdoctor check` (issue 15, item 4).

py-rattler (rattler.solve + rattler.install: the solver and installer pixi uses) installs the
"GPU stack" of tests/condachannel.py's local channel into a prefix, so the conda-meta records
are the ones a real installer writes; real pip (`pip --python PREFIX/bin/python install`)
then installs wheels into it; the real dynamic loader confirms the GLIBCXX error the rule
predicts. What the channel's packages hold (stand-ins for conda-forge's payloads, real ELF
files with the real version nodes) is described in tests/condachannel.py.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOTS, require_module
from tests import condachannel as cc

rattler = require_module("rattler", "pip install 'fwdoctor[conda]'")
pytestmark = [pytest.mark.usefixtures("use_test_kb"), pytest.mark.slow]  # conda installs end to end: not in `make test-fast`

OURS = ("conda-cpu-pytorch-on-gpu-host", "conda-pip-torch-over-conda", "conda-libstdcxx-too-old", "conda-user-site-leak", "conda-cuda-libs-mismatch")
SPECS = ["python=3.11", "pytorch=2.5.1", "cuda-version=12.6", "cudnn", "nccl", "cuda-nvcc"]
GPU_HOST = ROOTS / "torch-cpu-on-gpu-host"  # proc/ and sys/ of an H100 host with driver 580.95.05


@pytest.fixture(scope="module")
def channel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cc.build_gpu_channel(tmp_path_factory.mktemp("channel"))


def install(channel: Path, prefix: Path, cache: Path, extra: list[str], cuda: str | None) -> None:
    """Solve SPECS + extra over the channel as a host with (cuda) or without a GPU would, and install."""
    pairs = [("__glibc", "2.36"), ("__linux", "6.1"), ("__unix", "0")] + ([("__cuda", cuda)] if cuda else [])
    virtual = [rattler.GenericVirtualPackage(rattler.PackageName(n), rattler.Version(v), rattler.BuildString("0")) for n, v in pairs]
    specs = [s for s in SPECS if cuda or s not in ("cuda-version=12.6", "cudnn", "nccl", "cuda-nvcc")] + extra
    records = asyncio.run(rattler.solve([cc.file_url(channel)], [rattler.MatchSpec(s) for s in specs], gateway=rattler.Gateway(cache_dir=cache / "repodata"),
                                        platforms=["linux-64", "noarch"], virtual_packages=virtual))
    asyncio.run(rattler.install(records, target_prefix=prefix, cache_dir=cache / "pkgs"))


def wheel(dest: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A wheel file (PEP 427: the files, dist-info METADATA, WHEEL and a RECORD with hashes)."""
    tag = "cp311-cp311-linux_x86_64"
    dist = f"{name}-{version}.dist-info"
    members = dict(files)
    members[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    members[f"{dist}/WHEEL"] = f"Wheel-Version: 1.0\nGenerator: fwdoctor-tests\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
    lines = [f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()},{len(b)}" for p, b in members.items()]
    members[f"{dist}/RECORD"] = ("\n".join(lines + [f"{dist}/RECORD,,"]) + "\n").encode()
    path = dest / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


def pip_install(prefix: Path, wheel_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(prefix / "bin" / "python"), "install", "--no-deps", "--no-index",
                           "--disable-pip-version-check", str(wheel_path)], capture_output=True, text=True, timeout=300)


def conda_findings(report: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for finding in report["findings"]:
        if finding["id"] in OURS:
            out.setdefault(finding["id"], []).append(finding)
    return out


@pytest.fixture(scope="module")
def live_env(channel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not Path(cc.HOST_PYTHON).exists():
        pytest.skip(f"the channel's python stand-in links to {cc.HOST_PYTHON}, absent here")
    base = tmp_path_factory.mktemp("live")
    prefix = base / "env"
    install(channel, prefix, base, ["libstdcxx-ng=11.2"], cuda="12.6")
    return prefix


def test_a_pip_wheel_needing_a_newer_glibcxx_than_conda_s_libstdcxx(cli, live_env, tmp_path):
    """libstdcxx-ng 11.2.0 (GLIBCXX up to 3.4.29) and a pip-installed extension module built
    against GLIBCXX_3.4.30: the rule fires, and the real loader fails the same way."""
    done = pip_install(live_env, wheel(tmp_path, "ccwait", "1.0", {"ccwait/__init__.py": b"", "ccwait/_ext.cpython-311-x86_64-linux-gnu.so": cc.needs_glibcxx_so(30)}))
    assert done.returncode == 0, done.stderr
    site = live_env / "lib" / "python3.11" / "site-packages"
    assert (site / "ccwait-1.0.dist-info" / "INSTALLER").read_text() == "pip\n"
    report = json.loads(cli("check", "--json", "--python", str(live_env / "bin" / "python")).output)
    (finding,) = conda_findings(report)["conda-libstdcxx-too-old"]
    ext = site / "ccwait" / "_ext.cpython-311-x86_64-linux-gnu.so"
    assert finding["message"] == (
        f"{ext} from pip's ccwait 1.0 needs GLIBCXX_3.4.30, but {live_env}/lib/libstdc++.so.6 (libstdcxx-ng 11.2.0) defines up to GLIBCXX_3.4.29: "
        "importing it fails with \"version `GLIBCXX_3.4.30' not found\""
    )
    assert report["facts"]["conda.prefix"]["value"] == str(live_env)
    # conda's python finds PREFIX/lib first (RPATH $ORIGIN/../lib); LD_LIBRARY_PATH does that for the stand-in python
    load = subprocess.run([str(live_env / "bin" / "python"), "-c", f"import ctypes; ctypes.CDLL({str(ext)!r})"],
                          env={"LD_LIBRARY_PATH": str(live_env / "lib")}, capture_output=True, text=True, timeout=60)
    assert load.returncode != 0 and "version `GLIBCXX_3.4.30' not found" in load.stderr


def test_pip_torch_over_conda_pytorch_installed_by_real_pip(cli, live_env, tmp_path):
    """pip cannot remove conda's torch (its RECORD lists nothing), says so, and installs its own
    beside it: the record still claims pytorch, `import torch` loads pip's files."""
    torch_files = {"torch/__init__.py": b"from . import version\n__version__ = version.__version__\n",
                   "torch/version.py": b"__version__ = '2.14.1'\ncuda = '13.0'\n"}
    done = pip_install(live_env, wheel(tmp_path, "torch", "2.14.1", torch_files))
    assert done.returncode == 0 and "No files were found to uninstall" in done.stdout + done.stderr
    report = json.loads(cli("check", "--json", "--python", str(live_env / "bin" / "python")).output)
    (finding,) = conda_findings(report)["conda-pip-torch-over-conda"]
    assert finding["severity"] == "error"
    assert f"pip installed torch 2.14.1 ({live_env}/lib/python3.11/site-packages/torch-2.14.1.dist-info) over conda's pytorch 2.5.1 cuda126_py311_" in finding["message"]
    assert "`import torch` loads torch 2.14.1 (CUDA 13.0) from the files pip wrote" in finding["message"]
    assert finding["evidence"]["over"]["conda_dist_info_left"] == [f"{live_env}/lib/python3.11/site-packages/torch-2.5.1.dist-info"]


def gpu_root(channel: Path, tmp_path: Path, cuda: str | None) -> Path:
    """A root folder holding an H100 host's /proc and /sys and a conda env at /opt/conda/envs/x."""
    root = tmp_path / "root"
    for sub in ("proc", "sys"):
        shutil.copytree(GPU_HOST / sub, root / sub, symlinks=True)
    install(channel, root / "opt" / "conda" / "envs" / "x", tmp_path, [], cuda=cuda)
    # the env's bin/python3.11 links to the host's /usr/bin/python3.11: an empty stand-in in the root
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "python3.11").write_bytes(b"")
    (root / "usr" / "bin" / "python3.11").chmod(0o755)
    return root


def test_solved_without_a_gpu_conda_picks_the_cpu_build_and_the_gpu_host_flags_it(check_json, channel, tmp_path):
    root = gpu_root(channel, tmp_path, cuda=None)
    meta = sorted(p.name for p in (root / "opt/conda/envs/x/conda-meta").glob("pytorch-*.json"))
    assert len(meta) == 1 and meta[0].startswith("pytorch-2.5.1-cpu_py311_")
    env = tmp_path / "x.env"
    env.write_text("CONDA_PREFIX=/opt/conda/envs/x\nPATH=/opt/conda/envs/x/bin:/usr/bin:/bin\n")
    code, report = check_json("--root", str(root), "--env-file", str(env))
    found = conda_findings(report)
    assert set(found) == {"conda-cpu-pytorch-on-gpu-host"} and code == 1
    assert found["conda-cpu-pytorch-on-gpu-host"][0]["message"].startswith(
        f"conda's pytorch 2.5.1 in /opt/conda/envs/x is the CPU build {meta[0][len('pytorch-2.5.1-'):-len('.json')]} ")


def test_solved_with_cuda_the_cuda_build_its_libs_and_its_nvcc_are_judged_right(check_json, channel, tmp_path):
    """The CUDA build with cudnn/nccl for CUDA 12: no conda finding. Nothing activated (no
    CONDA_PREFIX), `--python` names the env: its cuda-nvcc is still a toolkit, and its cuDNN
    and NCCL are conda's."""
    root = gpu_root(channel, tmp_path, cuda="12.6")
    env = tmp_path / "plain.env"
    env.write_text("PATH=/usr/bin:/bin\n")
    code, report = check_json("--root", str(root), "--env-file", str(env), "--python", "/opt/conda/envs/x/bin/python")
    facts = {k: v["value"] for k, v in report["facts"].items() if isinstance(v, dict) and "value" in v}
    assert conda_findings(report) == {}
    assert facts["conda.torch_build"]["kind"] == "cuda" and facts["conda.torch_build"]["cuda"] == "12.6"
    assert facts["torch.cuda"] == "12.6"
    (toolkit,) = [t for t in facts["cuda.toolkits"] if t["root"] == "/opt/conda/envs/x"]
    assert toolkit["found_via"] == ["conda env of the interpreter"]
    assert toolkit["versions"]["conda-meta cuda-nvcc"] == "12.6.85" and toolkit["nvcc"] == "/opt/conda/envs/x/bin/nvcc"
    assert [(i["kind"], i["package"], i["cuda_major"]) for i in facts["cudnn.installs"]] == [("conda", "cudnn 9.3.0.75", 12)]
    assert [(i["kind"], i["package"], i["cuda_major"]) for i in facts["nccl.installs"]] == [("conda", "nccl 2.23.4.1", 12)]
    assert not [f for f in report["findings"] if f["id"] == "probe-failed"]
